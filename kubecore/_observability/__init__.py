"""kubecore._observability."""
