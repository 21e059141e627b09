"""kubecore._model.v1."""
