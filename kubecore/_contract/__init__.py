"""kubecore._contract."""
