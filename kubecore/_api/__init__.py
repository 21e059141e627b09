"""kubecore._api."""
