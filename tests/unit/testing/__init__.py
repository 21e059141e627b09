"""tests.unit.testing."""
