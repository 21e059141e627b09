"""The agent's Prometheus metrics."""

from kubecore._observability.metrics import Metrics
from kubecore._util.exports import publish as _publish

__all__ = ["Metrics"]

_publish(__all__, globals(), __name__)
