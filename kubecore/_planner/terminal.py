"""When a pod ends: it will never start anything again (Succeeded or Failed, from what its
containers did and their restart policies), or its ``activeDeadlineSeconds`` ran out."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kubecore._contract.observed import Record, View
from kubecore._model.v1 import Container, Pod
from kubecore._planner.actions import PodHistory
from kubecore._planner.pod_info import pod_info
from kubecore._planner.restart_rules import container_should_restart, pod_finished


def should_restart(record: Record, container: Container, pod_policy: str) -> bool:
    """Whether a dead container is started again: an interrupted start always is; one that ran
    as its restart rules and policy (else the pod's policy) say for its exit code."""
    if record.never_started:
        return True
    return container_should_restart(container, pod_policy, record.c.exit_code)


def terminal_state(pod: Pod, view: View) -> tuple[bool, bool]:
    """(terminal, failed): the pod will never start anything again (Succeeded or Failed).

    Never under ``Always`` (unless a container has a restart policy of its own). A failed init
    container that is not to be restarted (``Never``, the pod's or its own) fails the pod
    (unless app containers ran: init was done then). Otherwise the pod is terminal when every
    app container has run, none runs, and none is to be restarted.
    """
    spec = pod.spec
    policy = spec.restart_policy
    if policy == "Always" and not pod_info(pod).own_policies:
        return False, False
    app_started = any(not r.never_started for records in view.app.values() for r in records)
    if not app_started:  # app containers only ever start after init
        for c in spec.init_containers:
            if c.is_sidecar:  # restarted whatever the pod's policy: never fails the pod
                continue
            records = view.init.get(c.name)
            if records:
                newest = records[0]
                if (
                    not newest.live
                    and not newest.never_started
                    and newest.failed
                    and not should_restart(newest, c, policy)
                ):
                    return True, True
    return pod_finished(policy, _last_runs(spec.containers, view))


def _last_runs(
    containers: Iterable[Container], view: View
) -> Iterator[tuple[Container, bool, int | None]]:
    """Each app container's last run for ``pod_finished``: ended when none of its instances is
    live and the newest ran (an interrupted start is started again)."""
    for c in containers:
        records = view.app.get(c.name)
        if not records:
            yield c, False, None
            continue
        newest = records[0]
        ended = not newest.never_started and not any(r.live for r in records)
        yield c, ended, newest.c.exit_code


def deadline_at(pod: Pod, history: PodHistory) -> float | None:
    """When the pod's ``activeDeadlineSeconds`` runs out (None: no deadline, or not active)."""
    seconds = pod.spec.active_deadline_seconds
    if seconds is None or history.active_since is None:
        return None
    return history.active_since + seconds


def deadline_passed(pod: Pod, history: PodHistory, now: float) -> bool:
    at = deadline_at(pod, history)
    return at is not None and now >= at
