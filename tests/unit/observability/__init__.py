"""tests.unit.observability."""
