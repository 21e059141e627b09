"""kubecore._util."""
