"""Kubernetes resource quantities (``250m``, ``64Mi``, ``1.5``) and what the engine is given."""

from kubecore._exports import publish as _publish
from kubecore._quantity import cpu_millis, memory_bytes, parse_quantity
from kubecore._translate import milli_cpu_to_shares

__all__ = ["cpu_millis", "memory_bytes", "milli_cpu_to_shares", "parse_quantity"]

_publish(__all__, globals(), __name__)
