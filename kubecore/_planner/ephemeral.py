"""Ephemeral containers (``kubectl debug``) in the plan: each one of the spec that has never run
is started once, in the pod's sandbox, even while the init containers run (as the kubelet does),
and never again, whatever the pod's restart policy; one that targets another container waits
until that one runs. They are never killed to converge: they have no spec hash to compare."""

from __future__ import annotations

from kubecore._contract.observed import View
from kubecore._contract.values import RuntimeState
from kubecore._planner.actions import ContainerToStart, Waiting
from kubecore._planner.draft import Draft

CREATE_CONTAINER_CONFIG_ERROR = "CreateContainerConfigError"
_RUNNING = RuntimeState.RUNNING


def target_id(view: View, name: str, sandbox_id: str) -> str:
    """The runtime id of the running app or init container ``name`` in the pod's sandbox ('':
    none runs)."""
    for group in (view.app, view.init):
        for record in group.get(name, ()):
            if record.c.state is _RUNNING and record.c.sandbox_id == sandbox_id:
                return record.c.id
    return ""


def plan_ephemeral(plan: Draft, sandbox_id: str) -> list[ContainerToStart]:
    """The ephemeral containers to start now (those that never ran); the others that may not
    start yet are added to ``plan.waiting`` with the reason."""
    view = plan.view
    starts: list[ContainerToStart] = []
    for index, container in enumerate(plan.pod.spec.ephemeral_containers):
        name = container.name
        if view.ephemeral.get(name):
            continue  # it ran (or runs): never again
        target = ""
        if container.target_container_name:
            target = target_id(view, container.target_container_name, sandbox_id)
            if not target:
                message = f"unable to find target container {container.target_container_name}"
                plan.waiting.append(Waiting(name, CREATE_CONTAINER_CONFIG_ERROR, message))
                continue
        waiting = plan.blocked(container, crash=False)
        if waiting is not None:
            plan.waiting.append(waiting)
            continue
        starts.append(ContainerToStart(index, target_id=target))
    return starts
