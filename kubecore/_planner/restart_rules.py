"""Whether an exited container is started again: its own restart rules and policy (KEP-5307),
else the pod's restart policy, as the kubelet's ``ContainerShouldRestart`` decides.

Pure functions of the spec and an exit code, shared by the planner (what to start) and the
status (the pod's phase counts a container that will restart as restarting).

"Is the pod finished" is written here once (``pod_finished``), for the planner (a terminal pod's
sandbox goes), the status (Succeeded / Failed) and the CLI's verdict: every app container has
ended and none is started again, as the kubelet's pod is terminal (``podIsTerminal``: all
containers terminated and none to restart). Sidecars (restartable init containers) never hold a
pod back and never fail it: they are stopped once the app containers finished.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubecore._model.v1 import Container, ContainerRestartRule

RESTART = "Restart"


def rule_matches(rule: ContainerRestartRule, exit_code: int) -> bool:
    """Whether ``exit_code`` meets the rule's condition (``In`` / ``NotIn`` its values)."""
    codes = rule.exit_codes
    if codes is None:
        return False
    listed = exit_code in codes.values
    if codes.operator == "In":
        return listed
    if codes.operator == "NotIn":
        return not listed
    return False


def policy_of(container: Container, pod_policy: str) -> str:
    """The restart policy that applies to the container: its own, else the pod's."""
    return container.restart_policy or pod_policy


def container_should_restart(container: Container, pod_policy: str, exit_code: int | None) -> bool:
    """Whether a container that exited with ``exit_code`` is started again.

    With a policy of its own, the first of its rules that matches the exit code decides
    (``Restart``), else its policy; without one, the pod's policy. An unknown exit code (None)
    matches no rule and counts as a failure.
    """
    if container.restart_policy is not None and exit_code is not None:
        for rule in container.restart_policy_rules:
            if rule_matches(rule, exit_code):
                if rule.action == RESTART:
                    return True
                break  # an action kubecore does not take: the policy decides
    policy = policy_of(container, pod_policy)
    if policy == "Never":
        return False
    if policy == "OnFailure":
        return exit_code != 0
    return True


def is_container_restartable(container: Container, pod_policy: str) -> bool:
    """Whether the container may ever be started again after it exits (the kubelet's
    ``IsContainerRestartable``): a Restart rule, or a policy other than Never."""
    if container.restart_policy is not None:
        if any(rule.action == RESTART for rule in container.restart_policy_rules):
            return True
        return container.restart_policy != "Never"
    return pod_policy != "Never"


def container_finished(
    container: Container, pod_policy: str, ended: bool, exit_code: int | None
) -> bool:
    """A container that ``ended`` (with ``exit_code``; None: unknown, a failure) and is not
    started again."""
    return ended and not container_should_restart(container, pod_policy, exit_code)


def pod_finished(
    pod_policy: str, runs: Iterable[tuple[Container, bool, int | None]]
) -> tuple[bool, bool]:
    """(finished, failed) of a pod from the last run of each app container, ``(spec, ended,
    exit code)`` in spec order: finished when every one ended and none is started again
    (``container_finished``), failed when one of them did not exit 0."""
    failed = False
    for container, ended, exit_code in runs:
        if not container_finished(container, pod_policy, ended, exit_code):
            return False, False
        failed = failed or exit_code != 0
    return True, failed
