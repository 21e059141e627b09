"""tests.unit.volumes."""
