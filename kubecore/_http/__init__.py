"""kubecore._http.rules."""
