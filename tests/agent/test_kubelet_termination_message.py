"""``terminationMessagePolicy: FallbackToLogsOnError``: the tail of a failed container's log is
its termination message when it wrote none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubecore._status.manager import log_tail_message
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path)


def terminated(node: Node, name: str) -> Any:
    status = next(s for s in node.status().container_statuses if s.name == name)
    return status.state.terminated


def run_to_exit(node: Node, policy: str, code: int, message: str = "") -> Any:
    pod = make_pod(
        "web",
        ctr("app", termination_message_policy=policy),
        restart_policy="Never",
    )
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.running("web", "app")
    if message:
        mounts = {m.container_path: m for m in node.runtime.container_config(app.id).mounts}
        Path(mounts["/dev/termination-log"].host_path).write_text(message)
    node.runtime.write_log(app.id, "".join(f"line {i}\n" for i in range(100)) + "boom\n")
    node.runtime.exit(app.id, code)
    node.run_until(lambda: terminated(node, "app") is not None)
    return terminated(node, "app")


def test_a_failed_container_without_a_message_gets_its_log_tail(node: Node) -> None:
    state = run_to_exit(node, "FallbackToLogsOnError", 3)
    lines = state.message.splitlines()
    assert lines[-1] == "boom"
    assert len(lines) == 80 and lines[0] == "line 21"


def test_the_message_file_wins(node: Node) -> None:
    assert run_to_exit(node, "FallbackToLogsOnError", 3, "written").message == "written"


@pytest.mark.parametrize(("policy", "code"), [("FallbackToLogsOnError", 0), ("File", 3)])
def test_no_fallback_on_success_or_under_file(node: Node, policy: str, code: int) -> None:
    assert run_to_exit(node, policy, code).message == ""


def test_the_tail_is_cut_to_its_last_2048_bytes() -> None:
    lines = [b"x" * 100 + b"\n" for _ in range(80)]
    message = log_tail_message([b"first\n", *lines])
    assert len(message.encode()) == 2048 and "first" not in message
    assert log_tail_message([b"a\n", b"b\n"]) == "a\nb\n"
