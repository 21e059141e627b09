"""Probing containers: the checker the agent uses when a runtime brings none of its own."""

from kubecore._health import DefaultHealthChecker

__all__ = ["DefaultHealthChecker"]
