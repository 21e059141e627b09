"""tests.unit.model."""
