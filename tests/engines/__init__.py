"""tests.engines."""
