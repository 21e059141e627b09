"""tests.unit.manifest."""
