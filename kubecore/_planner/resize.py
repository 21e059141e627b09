"""How a running container takes a change of its resources: resized in place where every changed
resource's policy allows it and the runtime can, else restarted."""

from __future__ import annotations

import json

from kubecore._contract.labels import RESOURCES_ANNOTATION
from kubecore._contract.values import RuntimeContainer
from kubecore._model.spec_hash import resources_record
from kubecore._model.v1 import Container
from kubecore._planner.actions import PodHistory

IN_PLACE = "in place"
RESTART = "restart"


def applied_resources(c: RuntimeContainer, history: PodHistory) -> str | None:
    """The resources record a running container has now (None: not known)."""
    resized = history.resized.get(c.id) if history.resized else None
    return resized or c.annotations.get(RESOURCES_ANNOTATION)


def changed_resources(applied: str, wanted: str) -> set[str]:
    """The resource names whose request or limit differs between two resources records."""
    try:
        before, after = json.loads(applied), json.loads(wanted)
    except ValueError:
        return {"unreadable"}
    names: set[str] = set()
    for kind in ("requests", "limits"):
        old, new = before.get(kind) or {}, after.get(kind) or {}
        names.update(n for n in old.keys() | new.keys() if old.get(n) != new.get(n))
    return names


def resize_of(container: Container, c: RuntimeContainer, history: PodHistory) -> str | None:
    """How a running container takes a change of its resources: ``IN_PLACE`` where every
    changed resource's policy is NotRequired and the runtime can, else ``RESTART``; None when
    nothing changed (or the container has no resizePolicy)."""
    if not container.resize_policy:
        return None
    applied = applied_resources(c, history)
    wanted = resources_record(container)
    if applied is None or applied == wanted:
        return None
    policies = {p.resource_name: p.restart_policy for p in container.resize_policy}
    changed = changed_resources(applied, wanted)
    in_place = history.resize_in_place and all(
        name in ("cpu", "memory") and policies.get(name, "NotRequired") == "NotRequired"
        for name in changed
    )
    return IN_PLACE if in_place else RESTART
