"""kubecore._kuberuntime."""
