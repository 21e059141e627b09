"""tests.api."""
