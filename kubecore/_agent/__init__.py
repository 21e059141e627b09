"""kubecore._agent."""
