"""kubecore._status.compute."""
