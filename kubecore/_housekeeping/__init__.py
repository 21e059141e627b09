"""kubecore._housekeeping.timers."""
