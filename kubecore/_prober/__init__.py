"""kubecore._prober.runner."""
