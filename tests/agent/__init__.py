"""tests.agent."""
