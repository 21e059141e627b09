"""Kubernetes resource quantities (``250m``, ``64Mi``, ``1.5``), what the engine is given, and
the pod's quality-of-service class they make."""

from kubecore._kuberuntime.translate import milli_cpu_to_shares
from kubecore._model.qos import qos_class
from kubecore._model.quantity import cpu_millis, memory_bytes, parse_quantity
from kubecore._util.exports import publish as _publish

__all__ = ["cpu_millis", "memory_bytes", "milli_cpu_to_shares", "parse_quantity", "qos_class"]

_publish(__all__, globals(), __name__)
