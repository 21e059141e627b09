"""Event reasons have one home, ``kubecore.events.EventReason``, named as the kubelet names them;
no producer writes a reason as a string literal."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubecore.events import EventReason
from tests.paths import REPO

ROOT = REPO
PACKAGES = sorted(p for p in ROOT.glob("kubecore*") if (p / "__init__.py").exists())

KUBELET_REASONS = {
    # pkg/kubelet/events/event.go
    "CREATED_CONTAINER": "Created",
    "STARTED_CONTAINER": "Started",
    "FAILED_TO_CREATE_CONTAINER": "Failed",
    "FAILED_TO_START_CONTAINER": "Failed",
    "KILLING_CONTAINER": "Killing",
    "BACK_OFF_START_CONTAINER": "BackOff",
    "PULLING_IMAGE": "Pulling",
    "PULLED_IMAGE": "Pulled",
    "FAILED_TO_PULL_IMAGE": "Failed",
    "ERR_IMAGE_NEVER_PULL_POLICY": "ErrImageNeverPull",
    "BACK_OFF_PULL_IMAGE": "BackOff",
    "FAILED_MOUNT_VOLUME": "FailedMount",
    "SANDBOX_CHANGED": "SandboxChanged",
    "FAILED_CREATE_POD_SANDBOX": "FailedCreatePodSandBox",
    "CONTAINER_UNHEALTHY": "Unhealthy",
    "FAILED_POST_START_HOOK": "FailedPostStartHook",
    "FAILED_PRE_STOP_HOOK": "FailedPreStopHook",
    # kubelet_pods.go, active_deadline.go, eviction/helpers.go
    "INVALID_ENVIRONMENT_VARIABLE_NAMES": "InvalidEnvironmentVariableNames",
    "DEADLINE_EXCEEDED": "DeadlineExceeded",
    "EVICTED": "Evicted",
}


def test_the_reasons_are_the_kubelets_names() -> None:
    assert {name: member.value for name, member in EventReason.__members__.items()} == (
        KUBELET_REASONS
    )


def test_a_reason_is_its_string() -> None:
    reason: str = EventReason.FAILED_TO_PULL_IMAGE
    assert reason == "Failed" and isinstance(reason, str)
    assert EventReason["FAILED_TO_PULL_IMAGE"] is EventReason["FAILED_TO_START_CONTAINER"]
    assert f"{EventReason.BACK_OFF_PULL_IMAGE}: x" == "BackOff: x"
    assert hash(EventReason.PULLED_IMAGE) == hash("Pulled")


def reason_argument(call: ast.Call) -> ast.expr | None:
    """The reason of ``Event(ref, type, reason, ...)`` or ``<recorder>.event(pod, type,
    reason, ...)``; None for any other call."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    if name not in ("Event", "event"):
        return None
    for keyword in call.keywords:
        if keyword.arg == "reason":
            return keyword.value
    return call.args[2] if len(call.args) > 2 else None


def literal_reasons(source: str) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            reason = reason_argument(node)
            if isinstance(reason, ast.Constant) and isinstance(reason.value, str):
                yield node.lineno, reason.value


def test_the_check_finds_a_literal_reason() -> None:
    source = 'self.event(pod, EventType.NORMAL, "Pulled", "m")\nEvent(r, t, reason="Killing")\n'
    assert list(literal_reasons(source)) == [(1, "Pulled"), (2, "Killing")]
    assert list(literal_reasons("self.event(pod, t, EventReason.PULLED_IMAGE, 'm')")) == []


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_no_producer_writes_a_literal_reason(package: Path) -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {reason!r}"
        for path in sorted(package.rglob("*.py"))
        for line, reason in literal_reasons(path.read_text())
    ]
    assert found == [], "use kubecore.events.EventReason:\n" + "\n".join(found)
