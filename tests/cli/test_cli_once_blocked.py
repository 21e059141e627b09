"""``kubecore run --once`` ends before its deadline when waiting cannot help: every pod blocked
on an engine error a retry will not fix, or an engine that does not answer at the start; and
its summary names the cause. Faults come from the in-memory runtime's fault injection, and once
from a Docker socket that is not there."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubecore._cli import commands
from kubecore._cli.blocked import SANDBOX_FAILED, PermanentErrors, blocked_reason
from kubecore._contract.errors import (
    ContainerRuntimeError,
    InvalidConfig,
    RuntimeTimeout,
    RuntimeUnavailable,
)
from kubecore._contract.values import Event, EventType
from kubecore._observability.events import pod_reference
from kubecore._plugins.registry import RuntimeBundle
from kubecore_fake import FakeRuntime
from tests.cli.support import run_args, run_cli

POD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: main
    image: busybox:1.35
    command: ["sleep", "3600"]
"""


@pytest.fixture
def pods(tmp_path: Path) -> Path:
    directory = tmp_path / "pods"
    directory.mkdir()
    for name in ("one", "two"):
        (directory / f"{name}.yaml").write_text(POD.format(name=name))
    return directory


Fault = Callable[[FakeRuntime], None]


@pytest.fixture
def inject(monkeypatch: pytest.MonkeyPatch) -> Callable[[Fault], list[RuntimeBundle]]:
    """Makes the CLI's fake runtime go through ``fault`` before the agent uses it; gives the
    bundles it built (their clock tells how long the run took in virtual time)."""

    def install(fault: Fault) -> list[RuntimeBundle]:
        built: list[RuntimeBundle] = []
        real = commands.load_runtime_bundle

        def load(*args: Any, **kwargs: Any) -> RuntimeBundle:
            bundle = real(*args, **kwargs)
            assert isinstance(bundle.runtime, FakeRuntime)
            fault(bundle.runtime)
            built.append(bundle)
            return bundle

        monkeypatch.setattr(commands, "load_runtime_bundle", load)
        return built

    return install


def test_every_pod_blocked_on_a_refused_sandbox_ends_the_run_early_and_names_the_error(
    tmp_path: Path, pods: Path, inject: Callable[[Fault], list[RuntimeBundle]]
) -> None:
    refused = InvalidConfig("invalid sandbox option: no such network mode")
    started: list[float] = []

    def fault(runtime: FakeRuntime) -> None:
        started.append(runtime.clock.monotonic())
        runtime.fail_next("run_sandbox", 1000, refused)

    built = inject(fault)
    code, out, err = run_cli(*run_args(tmp_path, str(pods), "--once", "--deadline", "300"))
    assert code == 1, out + err
    for name in ("one", "two"):
        assert (
            f"pod default/{name} failed: FailedCreatePodSandBox: Failed to create pod sandbox: "
            "invalid sandbox option: no such network mode"
        ) in out
    assert "did not converge" not in out
    clock = built[0].clock
    assert clock is not None
    assert clock.monotonic() - started[0] < 10  # virtual seconds: not the 300 s deadline


@pytest.mark.parametrize(
    "error",
    [RuntimeUnavailable("engine restarting"), RuntimeTimeout("slow"), ContainerRuntimeError("500")],
    ids=["unavailable", "timeout", "other"],
)
def test_an_error_a_retry_may_fix_does_not_end_the_run(
    tmp_path: Path,
    pods: Path,
    inject: Callable[[Fault], list[RuntimeBundle]],
    error: ContainerRuntimeError,
) -> None:
    inject(lambda runtime: runtime.fail_next("run_sandbox", 3, error))
    code, out, err = run_cli(*run_args(tmp_path, str(pods), "--once", "--deadline", "300"))
    assert code == 0, out + err


def test_a_pod_that_did_not_converge_is_reported_with_its_newest_warning(
    tmp_path: Path, pods: Path, inject: Callable[[Fault], list[RuntimeBundle]]
) -> None:
    slow = RuntimeTimeout("the engine did not answer in time")
    inject(lambda runtime: runtime.fail_next("run_sandbox", 1000, slow))
    code, out, _ = run_cli(*run_args(tmp_path, str(pods), "--once", "--deadline", "20"))
    assert code == 1
    assert (
        "pod default/one did not converge in 20s: ContainerCreating (FailedCreatePodSandBox: "
        "Failed to create pod sandbox: the engine did not answer in time)"
    ) in out


def test_an_engine_that_does_not_answer_at_the_start_ends_the_run_at_once(
    tmp_path: Path, pods: Path, inject: Callable[[Fault], list[RuntimeBundle]]
) -> None:
    down = RuntimeUnavailable("cannot reach the engine at unix:///run/fake.sock")
    inject(lambda runtime: runtime.fail_next("version", 1, down))
    code, out, _ = run_cli(*run_args(tmp_path, str(pods), "--once", "--deadline", "300"))
    assert code == 1
    assert out == (
        "kubecore: the runtime does not answer: cannot reach the engine at unix:///run/fake.sock\n"
    )


def test_a_docker_socket_that_is_not_there_fails_fast_and_is_named(
    tmp_path: Path, pods: Path
) -> None:
    pytest.importorskip("docker")
    socket_path = tmp_path / "absent" / "docker.sock"
    command = [
        sys.executable, "-m", "kubecore", "run", str(pods), "--runtime", "docker",
        "--runtime-option", f"base_url=unix://{socket_path}", "--once", "--deadline", "120",
        "--root-dir", str(tmp_path / "root"), "--log-level", "error",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    took = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == (
        f"kubecore: the runtime does not answer: cannot reach the Docker engine at "
        f"unix://{socket_path}: No such file or directory\n"
    )
    assert took < 30  # not the 120 s deadline


def _event(kind: EventType, reason: str, message: str) -> Event:
    return Event(pod_reference("default", "one", "uid-1"), kind, reason, message, 0.0)


def test_a_pod_is_blocked_only_while_its_newest_event_is_a_sandbox_error_a_retry_cannot_fix() -> (
    None
):
    errors = PermanentErrors()
    refused = InvalidConfig("invalid sandbox option")
    errors.saw(refused)
    errors.saw(RuntimeTimeout("slow"))  # not kept: a retry may pass
    failed = _event(EventType.WARNING, SANDBOX_FAILED, f"Failed to create pod sandbox: {refused}")
    slow = _event(EventType.WARNING, SANDBOX_FAILED, "Failed to create pod sandbox: slow")
    pulling = _event(EventType.NORMAL, "Pulling", 'Pulling image "pause"')
    started = _event(EventType.NORMAL, "Started", "Started container main")
    assert blocked_reason([pulling, failed], errors) == (
        "FailedCreatePodSandBox: Failed to create pod sandbox: invalid sandbox option"
    )
    assert blocked_reason([failed, started], errors) == ""  # the sandbox came up since
    assert blocked_reason([slow], errors) == ""
    assert blocked_reason([], errors) == ""
