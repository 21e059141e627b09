"""Checks of the runtime's version and of sandboxes: lifecycle, attempts, missing ones."""

from __future__ import annotations

import pytest

from kubecore._contract.errors import (
    SandboxNotFound,
)
from kubecore._contract.values import SandboxState
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import MISSING_ID, Harness, assert_sandbox_matches


class SandboxChecks(PluginFixtures):
    """The version, and sandboxes from run to removal."""

    # -- version --------------------------------------------------------------------------------

    def test_version(self, harness: Harness) -> None:
        version = harness.runtime.version()
        assert version.runtime_name and version.runtime_version

    # -- sandboxes -----------------------------------------------------------------------------

    def test_sandbox_lifecycle(self, harness: Harness) -> None:
        rt = harness.runtime
        sandbox_id, config = harness.run_sandbox()
        status = rt.sandbox_status(sandbox_id)
        assert status.id == sandbox_id
        assert status.state is SandboxState.READY
        assert status.ip, "a sandbox without host networking has an IP"
        assert status.created_at > 0
        assert_sandbox_matches(status, config)
        listed = {s.id: s for s in rt.list_sandboxes()}
        assert sandbox_id in listed
        assert_sandbox_matches(listed[sandbox_id], config)

        rt.stop_sandbox(sandbox_id)
        assert rt.sandbox_status(sandbox_id).state is SandboxState.NOTREADY
        rt.stop_sandbox(sandbox_id)
        assert_sandbox_matches(rt.sandbox_status(sandbox_id), config)

        rt.remove_sandbox(sandbox_id)
        assert sandbox_id not in {s.id for s in rt.list_sandboxes()}
        with pytest.raises(SandboxNotFound):
            rt.sandbox_status(sandbox_id)
        rt.remove_sandbox(sandbox_id)
        rt.stop_sandbox(sandbox_id)

    def test_remove_a_ready_sandbox(self, harness: Harness) -> None:
        sandbox_id, _ = harness.run_sandbox()
        harness.runtime.remove_sandbox(sandbox_id)
        with pytest.raises(SandboxNotFound):
            harness.runtime.sandbox_status(sandbox_id)

    def test_sandbox_attempts_are_kept(self, harness: Harness) -> None:
        config = harness.sandbox_config(attempt=3)
        sandbox_id, _ = harness.run_sandbox(config)
        assert harness.runtime.sandbox_status(sandbox_id).attempt == 3

    def test_missing_sandbox(self, harness: Harness) -> None:
        rt = harness.runtime
        rt.stop_sandbox(MISSING_ID)
        rt.remove_sandbox(MISSING_ID)
        with pytest.raises(SandboxNotFound):
            rt.sandbox_status(MISSING_ID)
        config = harness.sandbox_config()
        with pytest.raises(SandboxNotFound):
            rt.create_container(
                MISSING_ID,
                harness.container_config(config, harness.workloads.run_forever),
                config,
            )
