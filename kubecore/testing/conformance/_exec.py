"""Checks of ``exec_sync``: output, exit codes, timeouts, stopped containers."""

from __future__ import annotations

import pytest

from kubecore._contract.errors import (
    ContainerRuntimeError,
    RuntimeTimeout,
)
from kubecore._contract.values import RuntimeState
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import Harness


class ExecChecks(PluginFixtures):
    """Commands run in a container."""

    # -- exec ----------------------------------------------------------------------------------

    def test_exec_sync(self, harness: Harness) -> None:
        rt = harness.runtime
        w = harness.workloads
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, w.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        result = rt.exec_sync(container_id, list(w.echo("hello-exec")), 10)
        assert result.exit_code == 0
        assert b"hello-exec" in result.stdout
        assert rt.exec_sync(container_id, list(w.exit_with(0)), 10).exit_code == 0
        assert rt.exec_sync(container_id, list(w.exit_with(3)), 10).exit_code == 3

    def test_exec_sync_timeout(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        started = harness.clock.monotonic()
        with pytest.raises(RuntimeTimeout):
            harness.runtime.exec_sync(container_id, list(harness.workloads.sleep(30)), 1)
        assert harness.clock.monotonic() - started < 20

    def test_exec_in_a_stopped_container_fails(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        harness.runtime.stop_container(container_id, self.STOP_TIMEOUT)
        with pytest.raises(ContainerRuntimeError):
            harness.runtime.exec_sync(container_id, list(harness.workloads.exit_with(0)), 5)
