"""What the sidecars corpus files (tests/corpus/sidecars-*.yaml) show beyond their ``# expect:``
lines (tests/corpus/test_corpus.py checks those): a deadline's reason, a log as termination
message."""

from __future__ import annotations

from pathlib import Path

from kubecore.testing import FakeNode
from tests.paths import CORPUS


def test_the_deadline_pod_fails_with_its_reason(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        node.apply((CORPUS / "sidecars-job.yaml").read_text())
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
        node.apply((CORPUS / "sidecars-fields.yaml").read_text())
        node.run_until(lambda: node.status("termination-demo").phase == "Failed")
        (status,) = node.status("termination-demo").container_statuses
        assert status.state.terminated is not None
        assert status.state.terminated.message == "Sleep expired\n"
