"""tests.unit.planner."""
