"""Probing containers: the checker the agent uses when a runtime brings none of its own."""

from kubecore._exports import publish as _publish
from kubecore._health import DefaultHealthChecker

__all__ = ["DefaultHealthChecker"]

_publish(__all__, globals(), __name__)
