"""What a pod written again (PUT, a patch, server-side apply) may change, as the API server's
``ValidatePodUpdate``: its metadata (labels, annotations), its containers' and init containers'
images, ``activeDeadlineSeconds`` (set, or lowered) and ``tolerations`` (added to); its resources
change through ``pods/resize`` (``resize_problems``) and its ephemeral containers through
``pods/ephemeralcontainers``. Anything else is a 422 naming the fields it changed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from kubecore._contract.errors import FieldError
from kubecore._manifest import pod_to_dict
from kubecore._model.v1 import Container, Pod, PodSecurityContext, PodSpec, Toleration

NOT_UPDATABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only"
    " additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be"
    " set to 1 if it was previously negative)"
)
"""The API server's words."""
MAX_DEADLINE = 2**31 - 1


def deadline_problems(new: int | None, old: int | None) -> list[FieldError]:
    """``activeDeadlineSeconds`` may be set when unset, or lowered; never raised nor removed."""
    path = "spec.activeDeadlineSeconds"
    if new is None:
        if old is None:
            return []
        return [
            FieldError(
                path, "Invalid value: null: must not update from a positive integer to nil value"
            )
        ]
    if not 0 <= new <= MAX_DEADLINE:
        return [
            FieldError(
                path, f"Invalid value: {new}: must be between 0 and {MAX_DEADLINE}, inclusive"
            )
        ]
    if old is not None and new > old:
        return [
            FieldError(path, f"Invalid value: {new}: must be less than or equal to previous value")
        ]
    return []


def toleration_problems(new: Sequence[Toleration], old: Sequence[Toleration]) -> list[FieldError]:
    """Every toleration the pod had is still there (its ``tolerationSeconds`` may change)."""
    for before in old:
        if not any(attrs.evolve(before, toleration_seconds=t.toleration_seconds) == t for t in new):
            return [
                FieldError(
                    "spec.tolerations",
                    "Forbidden: existing toleration can not be modified except its"
                    " tolerationSeconds",
                )
            ]
    return []


def _with_images(new: Sequence[Container], old: Sequence[Container]) -> tuple[Container, ...]:
    return tuple(attrs.evolve(n, image=o.image) for n, o in zip(new, old, strict=True))


def changed_paths(new: Any, old: Any, path: str) -> list[str]:
    """The JSON paths where two documents differ, as deep as both are objects or lists of the
    same length."""
    if isinstance(new, dict) and isinstance(old, dict):
        keys = sorted(new.keys() | old.keys())
        return [p for k in keys for p in changed_paths(new.get(k), old.get(k), f"{path}.{k}")]
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        pairs = enumerate(zip(new, old, strict=True))
        return [p for i, (n, o) in pairs for p in changed_paths(n, o, f"{path}[{i}]")]
    return [] if new == old else [path]


def _spec_changes(new: Pod, munged: PodSpec, old: Pod) -> list[str]:
    after = pod_to_dict(attrs.evolve(new, spec=munged))["spec"]
    return changed_paths(after, pod_to_dict(old)["spec"], "spec")


def update_problems(new: Pod, old: Pod, node_name: str = "") -> list[FieldError]:
    """Why ``new`` may not replace ``old`` (empty: it may). What the API shows of a pod beyond
    what it stores (``nodeName``: this node, an empty ``securityContext``) is no change: a
    client writes back what it read."""
    spec, before = new.spec, old.spec
    problems = deadline_problems(spec.active_deadline_seconds, before.active_deadline_seconds)
    problems += toleration_problems(spec.tolerations, before.tolerations)
    for name, now, then in (
        ("containers", spec.containers, before.containers),
        ("initContainers", spec.init_containers, before.init_containers),
    ):
        if len(now) != len(then):
            message = "Forbidden: pod updates may not add or remove containers"
            problems.append(FieldError(f"spec.{name}", message))
    if problems:
        return problems
    munged = attrs.evolve(
        spec,
        containers=_with_images(spec.containers, before.containers),
        init_containers=_with_images(spec.init_containers, before.init_containers),
        active_deadline_seconds=before.active_deadline_seconds,
        tolerations=before.tolerations,
        ephemeral_containers=before.ephemeral_containers,
        node_name=before.node_name if spec.node_name in ("", node_name) else spec.node_name,
        security_context=spec.security_context or before.security_context,
    )
    if munged.security_context == PodSecurityContext() and before.security_context is None:
        munged = attrs.evolve(munged, security_context=None)
    if munged == before:
        return []
    changed = ", ".join(_spec_changes(new, munged, old)) or "spec"
    return [FieldError("spec", f"Forbidden: {NOT_UPDATABLE} (changed: {changed})")]
