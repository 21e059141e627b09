"""Validation: the rules about values (not JSON types) on a built ``Pod`` or object, one module
a part of the pod (metadata, containers, environment, probes, resources, volumes, scheduling, the
pod as a whole), and the decoding of plain data into checked objects (``decode``)."""

from kubecore._manifest.validation.decode import decode_object, decode_pod, pod_from_dict
from kubecore._manifest.validation.env import FIELD_REF_SUBSCRIPT_RE
from kubecore._manifest.validation.names import dns_subdomain_problem, label_problem
from kubecore._manifest.validation.pod import validate_pod
from kubecore._manifest.validation.resources import is_extended_resource

__all__ = [
    "FIELD_REF_SUBSCRIPT_RE",
    "decode_object",
    "decode_pod",
    "dns_subdomain_problem",
    "is_extended_resource",
    "label_problem",
    "pod_from_dict",
    "validate_pod",
]
