"""tests.cli."""
