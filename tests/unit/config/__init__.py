"""tests.unit.config."""
