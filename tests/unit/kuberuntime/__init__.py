"""tests.unit.kuberuntime."""
