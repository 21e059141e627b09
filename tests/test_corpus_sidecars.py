"""The sidecars corpus files (tests/corpus/sidecars-*.yaml) on the in-memory runtime: each pod
reaches the phase and container states its ``# expect:`` line gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubecore._model import ContainerStatus
from kubecore.testing import FakeNode

CORPUS = sorted((Path(__file__).parent / "corpus").glob("sidecars-*.yaml"))


def expectations(text: str) -> list[tuple[str, str, dict[str, str]]]:
    found = []
    for line in text.splitlines():
        if line.startswith("# expect:"):
            name, phase, *states = line.removeprefix("# expect:").split()
            found.append((name, phase, dict(s.split("=", 1) for s in states)))
    return found


def state_of(status: ContainerStatus) -> str:
    state = status.state
    if state.running is not None:
        return "running"
    if state.waiting is not None:
        return f"waiting:{state.waiting.reason}"
    if state.terminated is not None:
        return f"terminated:{state.terminated.reason}"
    return "unknown"


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_corpus_file(tmp_path: Path, path: Path) -> None:
    text = path.read_text()
    expected = expectations(text)
    assert expected, f"{path.name} has no '# expect:' line"
    with FakeNode(tmp_path) as node:
        node.apply(text)

        def reached() -> bool:
            for name, phase, states in expected:
                status = node.status(name)
                every = (*status.init_container_statuses, *status.container_statuses)
                seen = {cs.name: state_of(cs) for cs in every}
                if status.phase != phase or any(seen.get(c) != s for c, s in states.items()):
                    return False
            return True

        node.run_until(reached, timeout=120)


def test_the_deadline_pod_fails_with_its_reason(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        node.apply((Path(__file__).parent / "corpus" / "sidecars-job.yaml").read_text())
        node.run_until(lambda: node.status("slowjob").phase == "Failed", timeout=60)
        status = node.status("slowjob")
        assert status.reason == "DeadlineExceeded"
        assert not node.containers("slowjob", running=True)
        assert node.events(reason="DeadlineExceeded", pod="slowjob")
        myjob = node.status("myjob")
        (shipper,) = myjob.init_container_statuses
        assert shipper.state.running is None  # stopped once the job's container finished


def test_the_log_is_the_termination_message(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        node.apply((Path(__file__).parent / "corpus" / "sidecars-fields.yaml").read_text())
        node.run_until(lambda: node.status("termination-demo").phase == "Failed")
        (status,) = node.status("termination-demo").container_statuses
        assert status.state.terminated is not None
        assert status.state.terminated.message == "Sleep expired\n"
