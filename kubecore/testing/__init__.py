"""Tools for testing with kubecore: hypothesis strategies, the runtime conformance suite."""
