"""kubecore._planner.plan."""
