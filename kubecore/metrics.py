"""The agent's Prometheus metrics."""

from kubecore._metrics import Metrics

__all__ = ["Metrics"]
