"""The rules of a pod's ephemeral containers over the API, as the API server has them: a pod
written whole (PUT, patch, apply) keeps them when it says nothing of them, may not change them
and may not be created with any; the ``ephemeralcontainers`` subresource may add some but never
change nor remove one. Each refusal is a 422 naming the field."""

from __future__ import annotations

from typing import Any

from kubecore._apimachinery.rules import HTTPError, error_for
from kubecore._contract.errors import FieldError, ValidationError
from kubecore._manifest import pod_to_dict
from kubecore._model.v1 import Pod

FIELD = "spec.ephemeralContainers"


def invalid_field(name: str, message: str) -> HTTPError:
    return error_for(ValidationError([FieldError(FIELD, message)]), kind="Pod", name=name)


def listed(pod: Pod) -> list[Any]:
    """The pod's ephemeral containers in their JSON shape."""
    return list(pod_to_dict(pod)["spec"].get("ephemeralContainers") or [])


def keep_ephemeral_containers(data: dict[str, Any], owned: Pod | None) -> None:
    """A pod written whole (PUT, patch, apply) that says nothing of its ephemeral containers
    keeps them (``data``: the cleaned body, changed in place)."""
    spec = data.get("spec")
    if owned is None or not owned.spec.ephemeral_containers or not isinstance(spec, dict):
        return
    if spec.get("ephemeralContainers") is None:
        spec["ephemeralContainers"] = listed(owned)


def refuse_ephemeral_change(pod: Pod, owned: Pod | None) -> None:
    """422 when a write of the pod itself would create it with, or change, its ephemeral
    containers: only the ``ephemeralcontainers`` subresource adds them."""
    name = pod.metadata.name
    if owned is None:
        if pod.spec.ephemeral_containers:
            raise invalid_field(name, "Forbidden: cannot be set on create")
        return
    if pod.spec.ephemeral_containers != owned.spec.ephemeral_containers:
        raise invalid_field(
            name,
            "Forbidden: ephemeral containers are added only through the pods/ephemeralcontainers"
            " subresource (kubectl debug), and never changed or removed",
        )


def unchanged_problems(new: Pod, old: Pod) -> list[FieldError]:
    """The existing ephemeral containers that ``new`` removes or changes."""
    found = {c.name: c for c in new.spec.ephemeral_containers}
    problems = []
    for i, before in enumerate(old.spec.ephemeral_containers):
        after = found.get(before.name)
        if after is None:
            problems.append(
                FieldError(
                    FIELD,
                    f'Forbidden: existing ephemeral container "{before.name}" may not be removed',
                )
            )
        elif after != before:
            problems.append(
                FieldError(
                    f"{FIELD}[{i}]",
                    f'Forbidden: existing ephemeral container "{before.name}" may not be changed',
                )
            )
    return problems
