"""tests.unit.util."""
