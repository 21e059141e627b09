"""Stable digests of pod and container specs: what a container was made from
(``container_hash``), what a pod's sandbox was made from (``sandbox_hash``), and the canonical
record of a container's resources (``resources_record``). The planner compares them with the
annotations the runtime keeps to tell a changed spec from an unchanged one.

Containers are frozen but hold dicts, so they are unhashable and cannot key an lru_cache. Digests
are memoised on the object itself (``derived``): the steady state hashes nothing, and no module
keeps a cache."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs

from kubecore._model.v1 import Container, Pod, ResourceRequirements

_NO_DEFAULT = object()


_FieldPlan = tuple[tuple[str, Any], ...]


_field_plans: dict[type, _FieldPlan] = {}


def _field_plan(cls: type) -> _FieldPlan:
    """(name, default value or ``_NO_DEFAULT``) of each field of an attrs class, made once."""
    plan = _field_plans.get(cls)
    if plan is None:
        fields = []
        for field in attrs.fields(cls):
            default = field.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                value = _NO_DEFAULT if default.takes_self else default.factory()
            elif default is attrs.NOTHING:
                value = _NO_DEFAULT
            else:
                value = default
            fields.append((field.name, value))
        plan = _field_plans[cls] = tuple(fields)
    return plan


def _canonical(value: Any) -> Any:
    """JSON-able form of a spec value. Fields still at their default are left out, so adding an
    optional field to the model does not change existing hashes (and restart every container)."""
    cls = type(value)
    if cls in (str, int, float, bool) or value is None:
        return value
    if attrs.has(cls):
        out: dict[str, Any] = {}
        for name, default in _field_plan(cls):
            item = getattr(value, name)
            if default is not _NO_DEFAULT and item == default:
                continue
            out[name] = _canonical(item)
        return out
    if isinstance(value, (tuple, list)):
        return [_canonical(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    return value


def _digest(value: Any) -> str:
    text = json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def container_hash(container: Container) -> str:
    """A stable digest of the container's spec (16 hex chars of sha256 over canonical JSON).

    Equal specs give equal hashes in every process; any spec change changes it. Memoised on the
    ``Container`` object, so repeated calls in the steady state cost a dict lookup.
    """
    derived = container.derived
    digest: str | None = derived.get("hash")
    if digest is None:
        if container.resize_policy:  # its resources are resized, not a change of spec
            digest = _digest(attrs.evolve(container, resources=ResourceRequirements()))
        else:
            digest = _digest(container)
        derived["hash"] = digest
    return digest


def resources_record(container: Container) -> str:
    """The canonical JSON of a container's resources, as ``RESOURCES_ANNOTATION`` keeps it."""
    derived = container.derived
    text: str | None = derived.get("resources")
    if text is None:
        value = _canonical(container.resources)
        text = derived["resources"] = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text


def _sandbox_digest(pod: Pod) -> str:
    spec = pod.spec
    built_from: dict[str, Any] = {
        "hostname": pod.metadata.name,
        "host_network": spec.host_network,
        "dns_policy": spec.dns_policy,
        "ports": [_canonical(p) for c in spec.containers for p in c.ports],
    }
    # Pod-level options, only when set: a pod without them keeps the hash it always had.
    options = {
        "pod_hostname": spec.hostname,
        "subdomain": spec.subdomain,
        "set_hostname_as_fqdn": spec.set_hostname_as_fqdn,
        "share_process_namespace": spec.share_process_namespace,
        "host_pid": spec.host_pid,
        "host_ipc": spec.host_ipc,
        "dns_config": spec.dns_config,
        # A changed pod-level securityContext reaches every container (and the sysctls the
        # sandbox holds) only through a new sandbox.
        "security_context": spec.security_context,
    }
    built_from.update((k, _canonical(v)) for k, v in options.items() if v not in (None, "", False))
    return _digest(built_from)


def sandbox_hash(pod: Pod) -> str:
    """A stable digest of what the pod's sandbox is built from; a change means a new sandbox."""
    derived = pod.derived
    digest: str | None = derived.get("sandbox_hash")
    if digest is None:
        digest = derived["sandbox_hash"] = _sandbox_digest(pod)
    return digest
