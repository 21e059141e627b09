"""tests.unit.plugins."""
