"""Probing containers: the checker the agent uses when a runtime brings none of its own."""

from kubecore._prober.health import DefaultHealthChecker
from kubecore._util.exports import publish as _publish

__all__ = ["DefaultHealthChecker"]

_publish(__all__, globals(), __name__)
