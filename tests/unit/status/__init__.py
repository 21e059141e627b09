"""tests.unit.status."""
