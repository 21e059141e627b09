"""tests.corpus."""
