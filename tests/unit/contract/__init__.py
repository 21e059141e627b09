"""tests.unit.contract."""
