"""The pod's quality-of-service class, as the kubelet computes it (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

from kubecore._model.quantity import parse_quantity
from kubecore._model.v1 import Container, Pod, QOSClass

_QOS_RESOURCES = ("cpu", "memory")


def _positive(quantities: Mapping[str, str]) -> dict[str, Decimal]:
    """The CPU and memory quantities above zero (unreadable ones count as none)."""
    found: dict[str, Decimal] = {}
    for name in _QOS_RESOURCES:
        try:
            value = parse_quantity(quantities[name]) if name in quantities else Decimal(0)
        except ValueError:
            continue
        if value > 0:
            found[name] = value
    return found


def _add(total: dict[str, Decimal], more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Decimal(0)) + value


def qos_class(pod: Pod) -> QOSClass:
    """``Guaranteed`` when every container (init ones too) limits CPU and memory and the pod's
    requests equal its limits, ``BestEffort`` when no container requests or limits either,
    else ``Burstable``. A limit without a request counts as that request, as the API server's
    defaulting makes it."""
    containers: Iterable[Container] = pod.spec.containers + pod.spec.init_containers
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for container in containers:
        resources = container.resources
        limited = _positive(resources.limits)
        asked = _positive({**resources.limits, **resources.requests})
        _add(requests, asked)
        _add(limits, limited)
        if not all(name in limited for name in _QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests == limits:
        return "Guaranteed"
    return "Burstable"
