"""``pods/{name}/resize`` (``kubectl patch --subresource resize``), the one way to change a
running pod's container resources, as the API server serves it: it takes only the ``resources``
and ``resizePolicy`` of the app containers and sidecars the client wrote (every other change is
dropped); only cpu and memory may change, and a non-restartable init container's resources not
at all (422). The agent then resizes each container in place where its ``resizePolicy`` lets it,
else restarts it (``kubecore._planner.resize``)."""

from __future__ import annotations

from typing import Any

from kubecore._api.pod_subresource import PodSubresource, decoded
from kubecore._apimachinery.rules import error_for
from kubecore._contract.errors import FieldError, ValidationError
from kubecore._manifest import pod_to_dict
from kubecore._model.v1 import Container, Pod

SUBRESOURCE = "resize"
RESIZED_FIELDS = ("resources", "resizePolicy")
RESIZABLE = frozenset({"cpu", "memory"})


def _by_name(containers: object) -> dict[str, dict[str, Any]]:
    if not isinstance(containers, list):
        return {}
    return {c["name"]: c for c in containers if isinstance(c, dict) and "name" in c}


def _non_resizable(before: Container, after: Container) -> set[str]:
    """The resources other than cpu and memory whose request or limit changed."""
    names: set[str] = set()
    for old, new in (
        (before.resources.requests, after.resources.requests),
        (before.resources.limits, after.resources.limits),
    ):
        names |= {n for n in old.keys() | new.keys() if old.get(n) != new.get(n)}
    return names - RESIZABLE


def resize_problems(new: Pod, old: Pod) -> list[FieldError]:
    """Why ``new``'s resources may not replace ``old``'s (empty: they may)."""
    problems = []
    groups = (
        ("containers", new.spec.containers, old.spec.containers),
        ("initContainers", new.spec.init_containers, old.spec.init_containers),
    )
    for group, now, then in groups:
        for i, (after, before) in enumerate(zip(now, then, strict=True)):
            path = f"spec.{group}[{i}].resources"
            if after.resources == before.resources:
                continue
            if group == "initContainers" and not before.is_sidecar:
                message = "Forbidden: resources for non-restartable init containers are immutable"
                problems.append(FieldError(path, message))
            elif extra := _non_resizable(before, after):
                message = (
                    "Forbidden: only cpu and memory resources are mutable (changed:"
                    f" {', '.join(sorted(extra))})"
                )
                problems.append(FieldError(path, message))
    return problems


class PodResize(PodSubresource):
    name = SUBRESOURCE

    def changed(self, owned: Pod, wanted: dict[str, Any]) -> Pod:
        data = pod_to_dict(owned)
        for group in ("containers", "initContainers"):
            written = _by_name(wanted.get(group))
            for container in data["spec"].get(group) or []:
                asked = written.get(container["name"])
                if asked is None:
                    continue
                for field in RESIZED_FIELDS:
                    if asked.get(field) is None:
                        container.pop(field, None)
                    else:
                        container[field] = asked[field]
        item = decoded(owned, data)
        problems = resize_problems(item, owned)
        if problems:
            raise error_for(ValidationError(problems), kind="Pod", name=owned.metadata.name)
        return item
