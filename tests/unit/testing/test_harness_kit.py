"""The harness kit: ``kubecore.testing.FakeNode``, the pytest plugin and its fixtures,
``EventType`` equal to its string (the harness examples of the documentation run in
tests/test_docs.py)."""

from __future__ import annotations

import importlib.metadata
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubecore import KubeletConfig
from kubecore.events import EventType
from kubecore.runtime import RuntimeState
from kubecore.testing import FakeNode, ManualClock, NotReached
from kubecore.testing._node import steps
from kubecore_fake import Behaviour
from tests.paths import REPO

ROOT = REPO

WEB = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: app, image: nginx:1.25}
"""

CRASHING = """
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - {name: app, image: busybox:1.36, command: [sh, -c, "exit 1"]}
"""


def test_a_crash_loop_restarts_after_0_10_20_40_seconds_up_to_300(kubecore_node: FakeNode) -> None:
    node = kubecore_node
    node.apply(CRASHING)
    node.advance(1600)
    starts = [e.timestamp for e in node.events(reason="Started", pod="crash")]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps == [0, 10, 20, 40, 80, 160, 300, 300, 300, 300]
    backoffs = node.events(reason="BackOff", pod="crash")  # each death after the first restart
    assert [e.timestamp for e in backoffs] == starts[1:]
    assert {e.type for e in backoffs} == {"Warning"}
    waiting = node.status("crash").container_statuses[0].state.waiting
    assert waiting is not None and waiting.reason == "CrashLoopBackOff"


def test_the_clock_fixture_is_the_node_clock(
    kubecore_node: FakeNode, kubecore_clock: ManualClock
) -> None:
    assert kubecore_node.clock is kubecore_clock
    kubecore_node.advance(2.5)
    assert kubecore_clock.monotonic() == 2.5


def test_run_until_returns_the_virtual_seconds_it_took(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.apply(WEB)
    # pulling, the sandbox, the container: all at one instant, acting takes no virtual time
    assert node.run_until(lambda: node.status("web").phase == "Running") == 0
    node.delete("web")
    assert node.run_until(lambda: not node.containers(running=True), timeout=60) == 0


def test_run_until_gives_up_after_its_timeout_and_says_why(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.apply(CRASHING)
    with pytest.raises(NotReached, match=r"within 30 virtual seconds(.|\n)*CrashLoopBackOff"):
        node.run_until(lambda: node.status("crash").phase == "Succeeded", timeout=30)
    assert node.clock.monotonic() == 30


def test_time_passes_in_steps_with_a_last_shorter_one() -> None:
    assert steps(5, 2) == [2, 2, 1]
    assert steps(4, 2) == [2, 2]
    assert steps(0, 1) == []
    with pytest.raises(ValueError, match="cannot go back"):
        steps(-1, 1)


def test_advance_syncs_after_each_step(tmp_path: Path) -> None:
    node = FakeNode(tmp_path, step=2.0)
    node.apply(WEB)
    node.advance(5)
    assert node.clock.monotonic() == 5
    started = node.events(reason="Started")[0].timestamp
    assert started == node.clock.now() - 3  # the first sync came after the first step


def test_apply_adds_and_replaces_delete_kills(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.apply(WEB)
    node.apply(CRASHING)
    node.advance(3)
    assert {p.metadata.name for p in node.kubelet.pods()} == {"web", "crash"}
    node.apply(WEB.replace("nginx:1.25", "nginx:1.27"))
    node.run_until(lambda: node.containers("web", "app", running=True)[0].image == "nginx:1.27")
    node.delete("default/web")
    node.run_until(lambda: node.kubelet.get_pod("default", "web") is None, timeout=60)
    assert node.runtime.find_containers(pod_name="web", state=RuntimeState.RUNNING) == []
    with pytest.raises(KeyError, match="never applied"):
        node.delete("web")


def test_status_and_events_find_a_pod_by_object_name_or_namespace_and_name(
    tmp_path: Path,
) -> None:
    node = FakeNode(tmp_path)
    (pod,) = node.apply(WEB)
    node.run_until(lambda: node.status(pod).phase == "Running")
    assert node.status("web") == node.status("default/web") == node.status(pod)
    assert [e.reason for e in node.events(pod="web", reason="Started")] == ["Started"]
    assert node.events(pod="other/web") == []
    assert node.events(type="Warning") == []
    with pytest.raises(LookupError, match="default/nothing"):
        node.status("nothing")


def test_a_restarted_agent_adopts_what_runs(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.apply(WEB)
    node.run_until(lambda: node.status("web").phase == "Running")
    (before,) = node.containers("web", "app", running=True)
    old = node.kubelet
    agent = node.restart_agent()
    assert agent is node.kubelet is not old and agent.root_dir == old.root_dir
    node.advance(5)
    assert [c.id for c in node.containers("web", "app")] == [before.id]
    assert node.status("web").container_statuses[0].restart_count == 0
    assert node.events(reason="Started") == []  # the new agent started nothing


def test_a_restarted_agent_takes_a_new_config(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.restart_agent(KubeletConfig(node_name="second", backoff_initial=1.0))
    assert node.kubelet.config.node_name == "second"
    assert node.kubelet.root_dir == str(tmp_path)


def test_a_scripted_container_recovers_from_its_crash_loop(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.apply(CRASHING)
    node.run_until(lambda: node.status("crash").container_statuses[0].restart_count >= 2)
    node.runtime.script(command="exit 1", behaviour=Behaviour())  # from now on it stays up
    node.run_until(lambda: node.status("crash").container_statuses[0].ready, timeout=300)


READY_OVER_HTTP = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: nginx:1.25
    readinessProbe: {httpGet: {path: /healthz, port: 80}, periodSeconds: 1}
"""


def test_the_health_checker_answers_the_probes_as_scripted(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.health_checker.set_probe("app", "http", False)
    node.apply(READY_OVER_HTTP)
    node.run_until(lambda: node.status("web").phase == "Running")
    node.advance(5)
    assert not node.status("web").container_statuses[0].ready
    node.health_checker.set_probe("app", "http", True)
    node.run_until(lambda: node.status("web").container_statuses[0].ready, timeout=5)
    assert {kind for _, kind, _ in node.health_checker.checks} == {"http"}


def test_the_node_reads_a_fixed_host_dns_unless_told_otherwise(tmp_path: Path) -> None:
    node = FakeNode(tmp_path / "a")
    assert node.kubelet.config.resolv_conf == str(tmp_path / "a" / "host-resolv.conf")
    assert "192.0.2.53" in (tmp_path / "a" / "host-resolv.conf").read_text()
    own = FakeNode(tmp_path / "b", config=KubeletConfig(resolv_conf="/nowhere"))
    assert own.kubelet.config.resolv_conf == "/nowhere"


def test_closing_the_node_closes_the_runtime(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        node.apply(WEB)
        node.advance(1)
    with pytest.raises(Exception, match="closed"):
        node.runtime.snapshot()


# --- EventType ---------------------------------------------------------------------------------


def test_an_event_type_equals_its_kubernetes_string() -> None:
    assert EventType.WARNING == "Warning" and EventType.NORMAL == "Normal"
    assert EventType("Warning") is EventType.WARNING
    assert str(EventType.NORMAL) == f"{EventType.NORMAL}" == "Normal"
    assert json.dumps({"type": EventType.WARNING}) == '{"type": "Warning"}'
    assert EventType.WARNING != "Normal"


# --- the plugin, loaded by pytest as a user's project loads it -----------------------------------


def run_pytest(path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        cwd=path.parent, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def explain(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def test_the_plugin_is_registered_through_the_pytest11_entry_point() -> None:
    points = importlib.metadata.entry_points(group="pytest11")
    assert {p.name: p.value for p in points}["kubecore"] == "kubecore.testing.pytest_plugin"


def test_the_plugin_loads_in_a_project_that_does_not_use_it_and_imports_no_runtime(
    tmp_path: Path,
) -> None:
    test = tmp_path / "test_unrelated.py"
    test.write_text(
        "import sys\n\n"
        "def test_nothing_of_kubecore_runs():\n"
        "    assert 'kubecore.testing.pytest_plugin' in sys.modules\n"
        "    assert 'kubecore_fake' not in sys.modules\n"
        "    assert 'kubecore.testing._node' not in sys.modules\n"
    )
    result = run_pytest(test)
    assert result.returncode == 0 and "1 passed" in result.stdout, explain(result)
