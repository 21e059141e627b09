"""tests.unit.prober."""
