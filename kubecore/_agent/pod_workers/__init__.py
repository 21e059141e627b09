"""kubecore._agent.pod_workers."""
