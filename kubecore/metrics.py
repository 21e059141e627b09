"""The agent's Prometheus metrics."""

from kubecore._exports import publish as _publish
from kubecore._metrics import Metrics

__all__ = ["Metrics"]

_publish(__all__, globals(), __name__)
