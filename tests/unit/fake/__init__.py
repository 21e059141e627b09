"""tests.unit.fake."""
