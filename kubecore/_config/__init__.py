"""kubecore._config."""
