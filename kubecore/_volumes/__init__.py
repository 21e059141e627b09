"""kubecore._volumes.pod_dirs."""
