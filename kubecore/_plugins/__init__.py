"""kubecore._plugins.registry."""
