"""Checks of containers: lifecycle, mounts, namespaces, stop signals, exits, OOM, siblings."""

from __future__ import annotations

import re
import uuid

import attrs
import pytest

from kubecore._contract.errors import (
    ContainerNotFound,
    ContainerRuntimeError,
    ImageNotFound,
    InvalidConfig,
    SandboxUnusable,
)
from kubecore._contract.values import Mount, NamespaceMode, NamespaceOption, RuntimeState
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import MISSING_ID, Harness, assert_container_matches
from kubecore.testing.conformance._workloads import MiB


class ContainerChecks(PluginFixtures):
    """Containers from creation to removal, in every state."""

    # -- containers ----------------------------------------------------------------------------

    def test_container_lifecycle(self, harness: Harness) -> None:
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        config = harness.container_config(sandbox[1], harness.workloads.run_forever)
        container_id = rt.create_container(sandbox[0], config, sandbox[1])
        harness.containers.append(container_id)

        created = rt.container_status(container_id)
        assert created.id == container_id
        assert created.state is RuntimeState.CREATED
        assert created.created_at > 0
        assert created.exit_code is None or created.exit_code == 0
        assert_container_matches(created, config, sandbox[0])

        rt.start_container(container_id)
        running = harness.wait_state(container_id, RuntimeState.RUNNING)
        assert running.started_at is not None
        listed = {c.id: c for c in rt.list_containers()}
        assert listed[container_id].state is RuntimeState.RUNNING
        assert_container_matches(listed[container_id], config, sandbox[0])

        rt.stop_container(container_id, self.STOP_TIMEOUT)
        stopped = rt.container_status(container_id)
        assert stopped.state is RuntimeState.EXITED
        assert stopped.exit_code == 0, "run_forever exits 0 on TERM"
        assert stopped.finished_at is not None
        assert_container_matches(stopped, config, sandbox[0])
        rt.stop_container(container_id, self.STOP_TIMEOUT)

        rt.remove_container(container_id)
        assert container_id not in {c.id for c in rt.list_containers()}
        with pytest.raises(ContainerNotFound):
            rt.container_status(container_id)
        rt.remove_container(container_id)
        rt.stop_container(container_id, self.STOP_TIMEOUT)

    def test_a_memory_backed_mount_is_a_sized_tmpfs_or_refused(
        self, harness: Harness, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        """An emptyDir of medium Memory: a tmpfs of the asked size and root mode, or
        ``InvalidConfig`` at creation; never a plain directory in its place."""
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        host = tmp_path_factory.mktemp("memory-volume")
        mount = Mount(
            str(host), "/kc-memory", memory_backed=True, size_limit_bytes=8 * MiB, mode=0o1770
        )
        config = attrs.evolve(
            harness.container_config(sandbox[1], harness.workloads.run_forever),
            mounts=(mount,),
        )
        try:
            container_id = rt.create_container(sandbox[0], config, sandbox[1])
        except InvalidConfig:
            harness.refused("memory-backed mounts (Mount.memory_backed)")
            return
        harness.containers.append(container_id)
        rt.start_container(container_id)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        show = harness.workloads.show_mounts
        if show is None:
            harness.unseen("the workloads have no show_mounts command")
        table = rt.exec_sync(container_id, list(show), 10).stdout.decode()
        lines = [line.split() for line in table.splitlines()]
        (fields,) = [f for f in lines if f[1:2] == ["/kc-memory"]] or [["missing"]]
        assert fields[2:3] == ["tmpfs"], table
        assert {"size=8192k", "mode=1770"} <= set(fields[3].split(",")), table

    @pytest.mark.parametrize("mode", [NamespaceMode.POD, NamespaceMode.CONTAINER])
    def test_pid_namespace_mode_is_applied_or_refused(
        self, harness: Harness, mode: NamespaceMode
    ) -> None:
        """``namespace_options.pid`` POD (shareProcessNamespace): a container sees its pod
        mates' processes; CONTAINER: it does not. A runtime that cannot share refuses the
        container (a ``ContainerRuntimeError``), never runs it unshared."""
        ps = harness.workloads.list_processes
        if ps is None:
            harness.unseen("the workloads name no command that lists processes (list_processes)")
        config = attrs.evolve(harness.sandbox_config(), namespace_options=NamespaceOption(pid=mode))
        sandbox = harness.run_sandbox(config)
        marker = f"pid-marker-{uuid.uuid4().hex[:8]}"
        harness.start(sandbox, harness.workloads.print_and_run(marker))
        try:
            looker = harness.start(sandbox, harness.workloads.run_forever)
        except ContainerRuntimeError:
            if mode is NamespaceMode.POD:
                harness.refused("a shared PID namespace (namespace_options.pid POD)")
                return
            raise
        harness.wait_state(looker, RuntimeState.RUNNING)
        result = harness.runtime.exec_sync(looker, list(ps), self.STOP_TIMEOUT * 5)
        assert result.exit_code == 0, result
        seen = marker.encode() in result.stdout
        assert seen is (mode is NamespaceMode.POD), result.stdout.decode(errors="replace")

    def test_a_pid_target_is_applied_or_refused(self, harness: Harness) -> None:
        """``ContainerConfig.namespace_options`` with ``pid`` TARGET (an ephemeral container
        with a ``targetContainerName``): the container sees the target's processes, though the
        pod shares none; a runtime that cannot join another container's process namespace
        refuses it (``InvalidConfig`` naming ``namespace_options``), never runs it apart."""
        rt = harness.runtime
        sandbox = harness.run_sandbox()  # pid CONTAINER: nothing shared but by the target
        marker = f"pid-target-{uuid.uuid4().hex[:8]}"
        target = harness.start(sandbox, harness.workloads.print_and_run(marker))
        harness.wait_state(target, RuntimeState.RUNNING)
        plain = harness.container_config(sandbox[1], harness.workloads.run_forever)
        joined = attrs.evolve(
            sandbox[1].namespace_options, pid=NamespaceMode.TARGET, target_id=target
        )
        config = attrs.evolve(plain, namespace_options=joined)
        try:
            looker = rt.create_container(sandbox[0], config, sandbox[1])
        except InvalidConfig as refusal:
            assert "namespace_options" in str(refusal), f"the refusal names no field: {refusal}"
            harness.refused("a target's PID namespace (namespace_options.pid TARGET)")
            return
        harness.containers.append(looker)
        rt.start_container(looker)
        harness.wait_state(looker, RuntimeState.RUNNING)
        ps = harness.workloads.list_processes
        if ps is None:
            harness.unseen("the workloads name no command that lists processes (list_processes)")
        result = rt.exec_sync(looker, list(ps), self.STOP_TIMEOUT * 5)
        assert result.exit_code == 0, result
        assert marker.encode() in result.stdout, result.stdout.decode(errors="replace")

    def test_stdin_and_tty_are_applied_or_refused(self, harness: Harness) -> None:
        """A runtime that cannot give a container stdin or a terminal refuses it, naming the
        field; one that can runs it (what it applied is checked per runtime)."""
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        plain = harness.container_config(sandbox[1], harness.workloads.run_forever)
        config = attrs.evolve(plain, stdin=True, stdin_once=True, tty=True)
        try:
            container_id = rt.create_container(sandbox[0], config, sandbox[1])
        except InvalidConfig as refusal:
            assert re.search(r"stdin|tty", str(refusal)), f"the refusal names no field: {refusal}"
            harness.refused("stdin and tty")
            return
        harness.containers.append(container_id)
        rt.start_container(container_id)
        harness.wait_state(container_id, RuntimeState.RUNNING)

    def test_a_stop_signal_is_applied_or_refused(self, harness: Harness) -> None:
        """A runtime that cannot stop a container with another signal than TERM refuses a
        ``stop_signal``, naming it; one that can stops the container (its own check proves the
        signal)."""
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        plain = harness.container_config(sandbox[1], harness.workloads.run_forever)
        config = attrs.evolve(plain, stop_signal="SIGINT")
        try:
            container_id = rt.create_container(sandbox[0], config, sandbox[1])
        except InvalidConfig as refusal:
            assert "stop_signal" in str(refusal), f"the refusal names no field: {refusal}"
            harness.refused("stop_signal")
            return
        harness.containers.append(container_id)
        rt.start_container(container_id)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        rt.stop_container(container_id, self.STOP_TIMEOUT)
        assert rt.container_status(container_id).state is RuntimeState.EXITED

    def test_stop_a_created_container(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        container_id = harness.create(sandbox, harness.workloads.run_forever)
        harness.runtime.stop_container(container_id, self.STOP_TIMEOUT)
        state = harness.runtime.container_status(container_id).state
        assert state in (RuntimeState.CREATED, RuntimeState.EXITED)

    @pytest.mark.parametrize("state", ["created", "running", "exited"])
    def test_remove_in_every_state(self, harness: Harness, state: str) -> None:
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        container_id = harness.create(sandbox, harness.workloads.run_forever)
        if state != "created":
            rt.start_container(container_id)
            harness.wait_state(container_id, RuntimeState.RUNNING)
        if state == "exited":
            rt.stop_container(container_id, self.STOP_TIMEOUT)
        rt.remove_container(container_id)
        with pytest.raises(ContainerNotFound):
            rt.container_status(container_id)
        assert container_id not in {c.id for c in rt.snapshot().containers}

    def test_missing_container(self, harness: Harness) -> None:
        rt = harness.runtime
        rt.stop_container(MISSING_ID, 1)
        rt.remove_container(MISSING_ID)
        with pytest.raises(ContainerNotFound):
            rt.container_status(MISSING_ID)
        with pytest.raises(ContainerNotFound):
            rt.start_container(MISSING_ID)
        with pytest.raises(ContainerNotFound):
            rt.exec_sync(MISSING_ID, list(harness.workloads.exit_with(0)), 5)
        with pytest.raises(ContainerNotFound):
            list(rt.logs(MISSING_ID))

    def test_create_with_a_missing_image(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        with pytest.raises(ImageNotFound):
            harness.create(
                sandbox, harness.workloads.run_forever, image=harness.workloads.absent_image
            )

    def test_start_in_a_stopped_sandbox_says_the_sandbox_is_unusable(
        self, harness: Harness
    ) -> None:
        """The agent re-creates a sandbox on ``SandboxUnusable`` (see ``start_container``)."""
        sandbox = harness.run_sandbox()
        container_id = harness.create(sandbox, harness.workloads.run_forever)
        harness.runtime.stop_sandbox(sandbox[0])
        with pytest.raises(SandboxUnusable):
            harness.runtime.start_container(container_id)

    @pytest.mark.parametrize("code", [0, 1, 3])
    def test_exit_codes(self, harness: Harness, code: int) -> None:
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.exit_with(code))
        exited = harness.wait_state(container_id, RuntimeState.EXITED)
        assert exited.exit_code == code
        assert exited.finished_at is not None and exited.started_at is not None
        # Docker may stamp a quick exit a fraction of a second before its start.
        assert exited.finished_at >= exited.started_at - 1.0

    def test_oom(self, harness: Harness) -> None:
        command = harness.workloads.consume_memory
        if command is None:
            harness.unseen("the workloads have no consume_memory command")
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, command, memory_limit=harness.workloads.memory_limit)
        exited = harness.wait_state(container_id, RuntimeState.EXITED)
        assert exited.reason == "OOMKilled"
        assert exited.exit_code == 137

    def test_several_containers_share_a_sandbox(self, harness: Harness) -> None:
        rt = harness.runtime
        w = harness.workloads
        sandbox = harness.run_sandbox()
        first = harness.start(sandbox, w.run_forever, name="first")
        second = harness.start(sandbox, w.run_forever, name="second")
        for container_id in (first, second):
            harness.wait_state(container_id, RuntimeState.RUNNING)
        mine = [c for c in rt.list_containers() if c.sandbox_id == sandbox[0]]
        assert sorted(c.name for c in mine) == ["first", "second"]
        if w.serve_tcp is None or w.check_tcp is None:
            harness.unseen("the workloads cannot serve and check TCP (serve_tcp, check_tcp)")
        check_tcp = w.check_tcp
        server = harness.start(sandbox, w.serve_tcp(w.tcp_port), name="server")
        harness.wait_state(server, RuntimeState.RUNNING)
        harness.wait(
            lambda: rt.exec_sync(first, list(check_tcp(w.tcp_port)), 5).exit_code == 0,
            f"a sibling container to reach 127.0.0.1:{w.tcp_port} inside the sandbox",
        )
        closed = rt.exec_sync(first, list(check_tcp(w.tcp_port + 1)), 5)
        assert closed.exit_code != 0
        rt.stop_container(server, self.STOP_TIMEOUT)
        assert rt.container_status(server).exit_code == 0
