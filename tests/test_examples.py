"""The examples run as a user runs them: each in its own process, bounded in time.

* ``examples/embed/harness_test.py`` with pytest;
* ``examples/embed/agent.py`` on the fake runtime (and on the process runtime);
* ``examples/process_runtime``: installed into this interpreter's environment if it is not (with
  ``pip install --no-deps -e``), listed by ``kubecore.runtimes()``, and its conformance suite run.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest

import kubecore
from kubecore import Pod
from kubecore._cli.commands import all_settled, pod_verdicts
from kubecore.v1 import (
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStatus,
    ObjectMeta,
    PodSpec,
    PodStatus,
)
from tests.paths import REPO

ROOT = REPO
EMBED = ROOT / "examples" / "embed"
PLUGIN = ROOT / "examples" / "process_runtime"
PLUGIN_DIST = "kubecore-process"


def run(args: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``python ARGS`` from the project root, the checkout first on the import path, with a
    state directory of its own (the process runtime keeps its records there, not in ``~``)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "XDG_STATE_HOME": tempfile.mkdtemp(prefix="kubecore-examples-state-"),
    }
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def explain(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def pytest_args(path: Path) -> list[str]:
    return ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "240", str(path)]


def test_the_harness_example_passes() -> None:
    result = run(pytest_args(EMBED / "harness_test.py"), timeout=300)
    assert result.returncode == 0, explain(result)
    assert " passed" in result.stdout and "failed" not in result.stdout, explain(result)


def table_rows(output: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in output.splitlines() if line.strip()}


def test_the_embedding_agent_settles_prints_its_pods_and_drains() -> None:
    result = run([str(EMBED / "agent.py"), "--timeout", "30"], timeout=120)
    assert result.returncode == 0, explain(result)
    rows = table_rows(result.stdout)
    assert rows["NAME"] == ["NAME", "PHASE", "READY", "RESTARTS", "STATE"]
    assert rows["web"][1:4] == ["Running", "1/1", "0"], explain(result)
    assert rows["report"][1] == "Succeeded", explain(result)
    assert "settled" in rows and "drained" in rows, explain(result)


@pytest.fixture(scope="module")
def process_plugin() -> None:
    """The example plugin installed (editable) in this environment: installed here if needed."""
    try:
        dist = importlib.metadata.distribution(PLUGIN_DIST)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is None:
        install = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(PLUGIN)],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert install.returncode == 0, f"pip install -e {PLUGIN} failed\n{install.stderr}"


def test_the_process_plugin_is_found_through_its_entry_point(process_plugin: None) -> None:
    code = (
        "import kubecore, json; print(json.dumps("
        "{r.name: r.distribution for r in kubecore.runtimes()}))"
    )
    result = run(["-c", code], timeout=60)
    assert result.returncode == 0, explain(result)
    assert '"process": "kubecore-process 0.1.0"' in result.stdout, explain(result)


def test_the_process_plugin_passes_the_conformance_suite(process_plugin: None) -> None:
    result = run(pytest_args(PLUGIN / "tests"), timeout=300)
    assert result.returncode == 0, explain(result)
    assert " passed" in result.stdout and "failed" not in result.stdout, explain(result)


def test_the_embedding_agent_runs_on_the_process_plugin(process_plugin: None) -> None:
    args = [str(EMBED / "agent.py"), "--runtime", "process", "--image", "host", "--timeout", "30"]
    result = run(args, timeout=120)
    assert result.returncode == 0, explain(result)
    rows = table_rows(result.stdout)
    assert rows["web"][1:3] == ["Running", "1/1"] and rows["report"][1] == "Succeeded"


def test_the_embedding_agent_fails_when_its_pods_cannot_start(process_plugin: None) -> None:
    # busybox is not on the process runtime's allow-list: every pull fails, no pod starts. The
    # pods settle in ImagePullBackOff (as ``kubecore run --once`` judges them), and the agent
    # fails naming why.
    args = [str(EMBED / "agent.py"), "--runtime", "process", "--image", "busybox", "--timeout", "5"]
    result = run(args, timeout=120)
    assert result.returncode == 1, explain(result)
    assert table_rows(result.stdout)["web"][1] == "Pending", explain(result)
    assert "failed web: container web: ImagePullBackOff" in result.stdout, explain(result)


def load_agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("embed_agent", EMBED / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def never_pod_with_one_container_done() -> Pod:
    """``restartPolicy: Never``, one container exited 0, the other running and ready: nothing
    more happens to it, and the kubelet shows it NotReady."""
    done = ContainerStatus(
        name="job",
        image="busybox",
        ready=False,
        state=ContainerState(terminated=ContainerStateTerminated(0)),
    )
    serving = ContainerStatus(
        name="web",
        image="busybox",
        ready=True,
        state=ContainerState(running=ContainerStateRunning()),
    )
    spec = PodSpec(
        containers=(Container(name="job", image="busybox"), Container(name="web", image="busybox")),
        restart_policy="Never",
    )
    status = PodStatus(phase="Running", container_statuses=(done, serving))
    return Pod(ObjectMeta(name="mixed", namespace="default"), spec, status)


def test_the_embedding_agent_the_cli_and_the_helper_agree_on_a_settled_pod() -> None:
    pod = never_pod_with_one_container_done()
    agent = load_agent()
    assert agent.pod_settled is kubecore.pod_settled  # the example keeps no rule of its own
    assert kubecore.pod_settled(pod) is True
    verdicts = pod_verdicts([pod])
    assert verdicts == {"default/mixed": ("ok", "")}
    assert all_settled(verdicts)
