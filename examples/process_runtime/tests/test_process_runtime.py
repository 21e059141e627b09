"""What the process runtime does beyond the shared contract: real processes, honestly reported."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kubecore_process import ProcessRuntime

import kubecore
from kubecore.runtime import ContainerConfig, RuntimeState, SandboxConfig

MANAGED = {"io.kubecore.managed": "true", "io.kubernetes.pod.uid": "uid-1"}
SANDBOX = SandboxConfig(name="pod", namespace="default", uid="uid-1", labels=MANAGED)


@pytest.fixture
def runtime(open_runtime: Callable[[], kubecore.runtime.RuntimeBundle]) -> ProcessRuntime:
    bundle = open_runtime()
    assert isinstance(bundle.runtime, ProcessRuntime)
    bundle.puller.pull("host")
    return bundle.runtime


def start(rt: ProcessRuntime, script: str, **config: object) -> str:
    sandbox_id = next((s.id for s in rt.list_sandboxes()), None) or rt.run_sandbox(SANDBOX)
    name = f"c{len(rt.list_containers())}"
    spec = ContainerConfig(name, "host", ("sh", "-c", script), labels=MANAGED, **config)  # type: ignore[arg-type]
    container_id: str = rt.create_container(sandbox_id, spec, SANDBOX)
    rt.start_container(container_id)
    return container_id


def wait_exited(rt: ProcessRuntime, container_id: str) -> kubecore.runtime.RuntimeContainer:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        status: kubecore.runtime.RuntimeContainer = rt.container_status(container_id)
        if status.state is RuntimeState.EXITED:
            return status
        time.sleep(0.02)
    raise AssertionError(f"{container_id} still runs")


def test_env_working_dir_and_both_streams_reach_the_log(runtime: ProcessRuntime) -> None:
    container_id = start(
        runtime, 'echo "$GREETING from $(pwd)"; echo oops >&2', env=(("GREETING", "hi"),)
    )
    assert wait_exited(runtime, container_id).reason == "Completed"
    sandbox_dir = runtime.sandbox_status(runtime.list_sandboxes()[0].id)
    lines = list(runtime.logs(container_id))
    assert lines[0].startswith(b"hi from /") and lines[0].rstrip().endswith(sandbox_dir.id.encode())
    assert b"oops\n" in lines


def test_a_signal_death_reads_as_128_plus_the_signal(runtime: ProcessRuntime) -> None:
    container_id = start(runtime, "kill -KILL $$")
    status = wait_exited(runtime, container_id)
    assert (status.exit_code, status.reason) == (137, "Error")


def dead(pid: int) -> bool:
    """Gone, or a zombie waiting for init to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_what_the_main_process_leaves_behind_is_killed(runtime: ProcessRuntime) -> None:
    container_id = start(runtime, "sleep 30 & echo $!")
    wait_exited(runtime, container_id)
    orphan = int(next(iter(runtime.logs(container_id))).strip())
    deadline = time.monotonic() + 5
    while not dead(orphan) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert dead(orphan), "the background sleep survived its container"


def test_stop_escalates_to_sigkill_after_the_grace_period(runtime: ProcessRuntime) -> None:
    container_id = start(runtime, "trap '' TERM; while :; do sleep 0.1; done")
    started = time.monotonic()
    runtime.stop_container(container_id, 0.5)
    assert 0.4 < time.monotonic() - started < 5
    assert runtime.container_status(container_id).exit_code == 137


def test_a_missing_working_dir_cannot_run(runtime: ProcessRuntime, tmp_path: Path) -> None:
    with pytest.raises(kubecore.ContainerRuntimeError):
        start(runtime, "true", working_dir=str(tmp_path / "nowhere"))
    status = runtime.list_containers()[0]
    assert (status.state, status.reason, status.exit_code) == (
        RuntimeState.EXITED,
        "ContainerCannotRun",
        127,
    )


def test_only_allowed_images_pull_and_options_are_checked(tmp_path: Path) -> None:
    bundle = kubecore.load_runtime("process", state_dir=str(tmp_path), images="tools, host")
    try:
        assert bundle.puller.pull("tools:latest").startswith("sha256:")
        with pytest.raises(kubecore.runtime.ImagePullError, match="not a local image"):
            bundle.puller.pull("busybox")
    finally:
        bundle.runtime.close()
    with pytest.raises(kubecore.PluginError, match="unknown option"):
        kubecore.load_runtime("process", memory="1Gi")


RUN_FOREVER = "echo $$; trap 'exit 0' TERM; while :; do sleep 0.1; done"
"""Prints its pid, runs until TERM, then exits 0."""


def pid_of(rt: kubecore.ContainerRuntime, container_id: str) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = list(rt.logs(container_id))
        if lines:
            return int(lines[0])
        time.sleep(0.02)
    raise AssertionError(f"{container_id} printed no pid")


def alive(pid: int) -> bool:
    return not dead(pid)


def test_close_leaves_containers_running_for_the_next_instance(
    open_runtime: Callable[[], kubecore.runtime.RuntimeBundle],
) -> None:
    bundle = open_runtime()
    bundle.puller.pull("host")
    first = bundle.runtime
    assert isinstance(first, ProcessRuntime)
    container_id = start(first, RUN_FOREVER)
    pid = pid_of(first, container_id)
    first.close()
    assert alive(pid)
    with pytest.raises(kubecore.runtime.RuntimeUnavailable):
        first.snapshot()
    second = open_runtime().runtime
    assert second.container_status(container_id).state is RuntimeState.RUNNING
    second.stop_container(container_id, 5)
    assert second.container_status(container_id).exit_code == 0
    assert dead(pid)


AGENT_KILLED = """
import os, signal, sys
import kubecore
from kubecore.runtime import ContainerConfig, SandboxConfig
bundle = kubecore.load_runtime("process", state_dir=sys.argv[1])
bundle.puller.pull("host")
managed = {"io.kubecore.managed": "true", "io.kubernetes.pod.uid": "uid-1"}
sandbox = SandboxConfig(name="pod", namespace="default", uid="uid-1", labels=managed)
sandbox_id = bundle.runtime.run_sandbox(sandbox)
command = ("sh", "-c", sys.argv[2])
spec = ContainerConfig("c", "host", command, labels=managed)
container_id = bundle.runtime.create_container(sandbox_id, spec, sandbox)
bundle.runtime.start_container(container_id)
print(container_id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_what_an_agent_killed_with_sigkill_started_runs_on_and_is_adopted(
    state_dir: Path, open_runtime: Callable[[], kubecore.runtime.RuntimeBundle]
) -> None:
    agent = subprocess.run(
        [sys.executable, "-c", AGENT_KILLED, str(state_dir), RUN_FOREVER],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert agent.returncode == -signal.SIGKILL, agent.stderr
    container_id = agent.stdout.strip()
    rt = open_runtime().runtime
    pid = pid_of(rt, container_id)
    assert alive(pid), "the container died with the agent"
    (sandbox,) = rt.list_sandboxes()
    assert rt.container_status(container_id).state is RuntimeState.RUNNING
    with pytest.raises(kubecore.runtime.Conflict):  # the same pod again would be a duplicate
        rt.run_sandbox(SANDBOX)
    rt.stop_container(container_id, 5)
    assert rt.container_status(container_id).exit_code == 0
    assert dead(pid)
    rt.remove_sandbox(sandbox.id)
    assert rt.snapshot().containers == ()


def test_a_container_whose_supervisor_was_killed_reads_as_exited(runtime: ProcessRuntime) -> None:
    container_id = start(runtime, RUN_FOREVER)
    pid = pid_of(runtime, container_id)
    shim = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # ppid
    os.kill(shim, signal.SIGKILL)
    status = wait_exited(runtime, container_id)
    assert (status.exit_code, status.reason) == (137, "Error")
    assert "supervisor" in status.message
    os.killpg(pid, signal.SIGKILL)
