"""Checks that what a container is given reaches its process: the environment, the arguments
after the command, and the bind mounts (written through when writable, never when read-only).
A runtime that ignores them fails here."""

from __future__ import annotations

import uuid
from pathlib import Path

import attrs
import pytest

from kubecore._contract.values import ContainerConfig, Mount, RuntimeState, SandboxConfig
from kubecore._volumes.pod_dirs import EMPTY_DIR_PLUGIN
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import Harness
from kubecore.testing.conformance._workloads import Command

SPACED_VALUE = "spaces, = and / survive"


def _script(harness: Harness, script: str) -> Command:
    __tracebackhide__ = True
    run_script = harness.workloads.run_script
    if run_script is None:
        harness.unseen("the workloads have no run_script")
    return run_script(script)


def _run(harness: Harness, sandbox: tuple[str, SandboxConfig], config: ContainerConfig) -> str:
    container_id = harness.runtime.create_container(sandbox[0], config, sandbox[1])
    harness.containers.append(container_id)
    harness.runtime.start_container(container_id)
    return container_id


def _volume(root: Path, name: str, text: str) -> Path:
    """A directory the agent would prepare for an emptyDir volume, holding ``given.txt``."""
    directory = root / "volumes" / EMPTY_DIR_PLUGIN / name
    directory.mkdir(parents=True)
    (directory / "given.txt").write_text(text)
    return directory


class ConfigChecks(PluginFixtures):
    """The environment, the arguments and the bind mounts, as the container's process sees
    them."""

    def test_the_environment_reaches_the_process(self, harness: Harness) -> None:
        command = _script(
            harness,
            'echo "kcenv plain=$KC_CONF_PLAIN"; echo "kcenv spaced=$KC_CONF_SPACED"; '
            "echo kcconf-env-done",
        )
        sandbox = harness.run_sandbox()
        config = attrs.evolve(
            harness.container_config(sandbox[1], command),
            env=(("KC_CONF_PLAIN", "plain"), ("KC_CONF_SPACED", SPACED_VALUE)),
        )
        container_id = _run(harness, sandbox, config)
        lines = harness.wait_logs(container_id, "kcconf-env-done")
        assert b"kcenv plain=plain\n" in lines, f"KC_CONF_PLAIN did not reach the process: {lines}"
        spaced = f"kcenv spaced={SPACED_VALUE}\n".encode()
        assert spaced in lines, f"KC_CONF_SPACED did not reach the process unchanged: {lines}"

    def test_the_arguments_follow_the_command(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        config = attrs.evolve(
            harness.container_config(sandbox[1], harness.workloads.echo("kcconf-args")),
            args=("first", "second word"),
        )
        container_id = _run(harness, sandbox, config)
        exited = harness.wait_state(container_id, RuntimeState.EXITED)
        assert exited.exit_code == 0
        lines = harness.wait_logs(container_id, "kcconf-args")
        assert b"kcconf-args first second word\n" in lines, lines

    def test_bind_mounts_are_seen_written_through_and_read_only_when_asked(
        self, harness: Harness, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        command = _script(
            harness,
            "cat /kc-data/given.txt; cat /kc-ro/given.txt; "
            "echo kcconf-written > /kc-data/out.txt; echo kcconf-leaked > /kc-ro/out.txt; "
            "echo kcconf-mounts-done",
        )
        root = tmp_path_factory.mktemp("bind-mounts") / str(uuid.uuid4())
        data_dir = _volume(root, "data", "kcconf-given\n")
        ro_dir = _volume(root, "ro", "kcconf-read-only\n")
        sandbox = harness.run_sandbox()
        config = attrs.evolve(
            harness.container_config(sandbox[1], command),
            mounts=(
                Mount(str(data_dir), "/kc-data"),
                Mount(str(ro_dir), "/kc-ro", read_only=True),
            ),
        )
        container_id = _run(harness, sandbox, config)
        lines = harness.wait_logs(container_id, "kcconf-mounts-done")
        assert b"kcconf-given\n" in lines, f"the mounted file was not seen: {lines}"
        assert b"kcconf-read-only\n" in lines, f"the read-only mount was not seen: {lines}"
        written = data_dir / "out.txt"
        assert written.exists(), "a file written into a writable bind mount is not on the host"
        assert written.read_text() == "kcconf-written\n"
        assert not (ro_dir / "out.txt").exists(), "a read-only bind mount was written"
