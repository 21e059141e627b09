"""kubecore._agent.admission."""
