"""DockerRuntime on a real engine: sandboxes, containers, names, labels, exec, logs, stats."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kubecore._contract.errors import (
    Conflict,
    ContainerNotFound,
    ContainerRuntimeError,
    RuntimeTimeout,
    RuntimeUnavailable,
    SandboxNotFound,
    SandboxUnusable,
)
from kubecore._contract.labels import (
    CONTAINER_NAME_LABEL,
    HASH_ANNOTATION,
    MANAGED_LABEL,
    NODE_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
)
from kubecore._contract.protocols import ContainerRuntime
from kubecore._contract.values import (
    DNSConfig,
    Mount,
    PortMapping,
    RuntimeContainer,
    RuntimeState,
    SandboxState,
)
from kubecore_docker import DockerOptions, DockerRuntime, container_name, sandbox_name
from kubecore_docker import _runtime as docker_runtime
from kubecore_docker._specs import sandbox_create_args
from tests.engines.docker.conftest import ContainerFactory, SandboxFactory, TestEngine
from tests.engines.docker.helpers import OOM_HOG, TEST_LABEL, free_port, in_pod, run_pod, wait_for

pytestmark = pytest.mark.docker


def logs_text(runtime: DockerRuntime, cid: str, **kwargs: Any) -> str:
    return b"".join(runtime.logs(cid, **kwargs)).decode()


def wait_exited(runtime: DockerRuntime, cid: str, timeout: float = 10.0) -> Any:
    return wait_for(
        lambda: (s := runtime.container_status(cid)).state is RuntimeState.EXITED and s,
        timeout,
        what=f"{cid[:12]} to exit",
    )


def test_implements_the_protocol(runtime: DockerRuntime) -> None:
    assert isinstance(runtime, ContainerRuntime)


def test_importing_the_package_does_not_import_docker() -> None:
    code = "import sys, kubecore_docker; sys.exit(1 if 'docker' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_version(runtime: DockerRuntime) -> None:
    version = runtime.version()
    assert version.runtime_name == "docker"
    assert re.match(r"^\d+\.\d+", version.runtime_version)
    assert re.match(r"^1\.\d+$", version.api_version)


def test_engine_down_is_runtime_unavailable(tmp_path: Path) -> None:
    runtime = DockerRuntime(DockerOptions(base_url=f"unix://{tmp_path}/none.sock", timeout=2))
    with pytest.raises(RuntimeUnavailable):
        runtime.version()
    with pytest.raises(RuntimeUnavailable):
        runtime.snapshot()
    runtime.close()


# -- sandboxes ---------------------------------------------------------------------------------


def test_sandbox_carries_name_labels_hostname_dns_and_ports(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, raw: Any, engine: TestEngine
) -> None:
    port = free_port()
    config = make_sandbox(
        hostname="web-host",
        attempt=2,
        ports=(
            PortMapping(container_port=80, host_port=port, host_ip="127.0.0.1"),
            PortMapping(container_port=53, host_port=0, protocol="UDP"),
        ),
        dns=DNSConfig(servers=("10.0.0.10",), searches=("ns.svc.local",), options=("ndots:5",)),
        annotations={"kubernetes.io/config.source": "file"},
    )
    sandbox_id = runtime.run_sandbox(config)
    data = raw.inspect_container(sandbox_id)
    assert data["Name"] == f"/k8s_POD_{config.name}_kubecore-test_{config.uid}_2"
    assert data["Name"] == "/" + sandbox_name(config)
    assert data["Config"]["Image"] == engine.pause_image
    assert data["Config"]["Hostname"] == "web-host"
    labels = data["Config"]["Labels"]
    assert labels["io.kubernetes.docker.type"] == "podsandbox"
    assert labels[CONTAINER_NAME_LABEL] == "POD"
    assert labels[POD_NAME_LABEL] == config.name
    assert labels[POD_NAMESPACE_LABEL] == "kubecore-test"
    assert labels[POD_UID_LABEL] == config.uid
    assert labels[MANAGED_LABEL] == "true"
    assert labels["annotation.kubernetes.io/config.source"] == "file"
    host = data["HostConfig"]
    assert host["IpcMode"] == "shareable"
    assert host["RestartPolicy"]["Name"] == "no"
    assert host["Dns"] == ["10.0.0.10"]
    assert host["DnsSearch"] == ["ns.svc.local"]
    assert host["DnsOptions"] == ["ndots:5"]
    assert host["PortBindings"] == {"80/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(port)}]}

    status = runtime.sandbox_status(sandbox_id)
    assert status.state is SandboxState.READY
    assert (status.name, status.namespace, status.uid, status.attempt) == (
        config.name,
        "kubecore-test",
        config.uid,
        2,
    )
    assert re.match(r"^\d+\.\d+\.\d+\.\d+$", status.ip)
    assert status.annotations == {"kubernetes.io/config.source": "file"}
    assert status.labels[TEST_LABEL] == config.labels[TEST_LABEL]
    assert not any(key.startswith("annotation.") for key in status.labels)
    listed = {s.id: s for s in runtime.list_sandboxes()}
    assert listed[sandbox_id].ip == status.ip
    assert listed[sandbox_id].annotations == status.annotations


def test_host_network_sandbox(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, raw: Any
) -> None:
    sandbox_id = runtime.run_sandbox(
        make_sandbox(host_network=True, ports=(PortMapping(80, free_port()),))
    )
    host = raw.inspect_container(sandbox_id)["HostConfig"]
    assert host["NetworkMode"] == "host"
    assert not host["PortBindings"]
    assert runtime.sandbox_status(sandbox_id).state is SandboxState.READY


def test_stop_and_remove_sandbox_are_idempotent(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory, raw: Any
) -> None:
    sandbox_id, (cid,) = run_pod(runtime, make_sandbox, make_container())
    runtime.stop_container(cid, 2)
    started = time.monotonic()
    runtime.stop_sandbox(sandbox_id)
    assert time.monotonic() - started < 6, "the pause command must exit on TERM (not in 10 s)"
    runtime.stop_sandbox(sandbox_id)
    stopped = runtime.sandbox_status(sandbox_id)
    assert stopped.state is SandboxState.NOTREADY
    assert stopped.ip == ""
    runtime.remove_sandbox(sandbox_id)
    runtime.remove_sandbox(sandbox_id)
    assert not raw.containers(all=True, filters={"id": sandbox_id})
    assert not raw.containers(all=True, filters={"id": cid}), "its containers go with it"
    with pytest.raises(SandboxNotFound):
        runtime.sandbox_status(sandbox_id)


def test_sandbox_name_conflict_is_resolved(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, raw: Any, engine: TestEngine
) -> None:
    config = make_sandbox()
    stale = raw.create_container(
        engine.image, name=sandbox_name(config), labels={TEST_LABEL: config.labels[TEST_LABEL]}
    )["Id"]
    sandbox_id = runtime.run_sandbox(config)
    assert sandbox_id != stale
    assert not raw.containers(all=True, filters={"id": stale})


def test_a_sandbox_whose_start_was_interrupted_is_hidden_then_removed(
    runtime: DockerRuntime,
    make_sandbox: SandboxFactory,
    raw: Any,
    engine: TestEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent killed between run_sandbox's create and start leaves a sandbox that never
    started: it is not a sandbox of the pod (RunPodSandbox is one step), and it goes, removed
    by a runtime of its node only."""
    config = make_sandbox(labels={NODE_LABEL: "interrupted-node"})
    args = sandbox_create_args(config, engine.pause_image)
    call = {**args, "host_config": raw.create_host_config(**args["host_config"])}
    interrupted = raw.create_container(**call)["Id"]
    assert interrupted not in {s.id for s in runtime.snapshot().sandboxes}
    assert raw.containers(all=True, filters={"id": interrupted})  # young: only hidden
    monkeypatch.setattr(docker_runtime, "INTERRUPTED_AFTER", 0.0)
    runtime.snapshot()  # this runtime made nothing for that node yet: another node's, left
    assert raw.containers(all=True, filters={"id": interrupted})
    runtime.run_sandbox(make_sandbox(labels={NODE_LABEL: "interrupted-node"}))
    runtime.snapshot()
    assert not raw.containers(all=True, filters={"id": interrupted})


# -- containers --------------------------------------------------------------------------------


def test_container_names_labels_and_namespaces(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory, raw: Any
) -> None:
    config = make_sandbox()
    sandbox_id = runtime.run_sandbox(config)
    container = make_container(
        "web",
        attempt=3,
        annotations={HASH_ANNOTATION: "abc123", "io.kubernetes.container.restartCount": "3"},
        labels={"app": "web"},
    )
    cid = runtime.create_container(sandbox_id, in_pod(container, config), config)
    data = raw.inspect_container(cid)
    assert data["Name"] == f"/k8s_web_{config.name}_kubecore-test_{config.uid}_3"
    assert data["Name"] == "/" + container_name(container, config)
    labels = data["Config"]["Labels"]
    assert labels["io.kubernetes.docker.type"] == "container"
    assert labels["io.kubernetes.sandbox.id"] == sandbox_id
    assert labels[CONTAINER_NAME_LABEL] == "web"
    assert labels[POD_UID_LABEL] == config.uid
    assert labels["annotation." + HASH_ANNOTATION] == "abc123"
    host = data["HostConfig"]
    assert host["NetworkMode"] == f"container:{sandbox_id}"
    assert host["IpcMode"] == f"container:{sandbox_id}"
    assert host["RestartPolicy"]["Name"] == "no"
    assert not host["PortBindings"]
    assert not host["Dns"]

    created = runtime.container_status(cid)
    assert created.state is RuntimeState.CREATED
    assert (created.name, created.sandbox_id, created.attempt) == ("web", sandbox_id, 3)
    assert created.labels["app"] == "web"
    assert created.annotations == {
        HASH_ANNOTATION: "abc123",
        "io.kubernetes.container.restartCount": "3",
    }
    runtime.start_container(cid)
    running = runtime.container_status(cid)
    assert running.state is RuntimeState.RUNNING
    assert running.started_at is not None and running.finished_at is None
    assert running.exit_code is None and running.reason == ""
    assert running.image_id.startswith("sha256:")
    snap = runtime.snapshot()
    (listed,) = [c for c in snap.containers if c.id == cid]
    assert listed.state is RuntimeState.RUNNING
    assert listed.annotations == running.annotations
    assert listed.labels == running.labels
    assert listed.started_at == running.started_at
    assert [s.id for s in snap.sandboxes if s.id == sandbox_id] == [sandbox_id]


def test_two_containers_share_the_sandbox_network(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    server = make_container(
        "server",
        command=(
            "sh",
            "-c",
            "trap 'exit 0' TERM; mkdir -p /tmp/www; echo hello-from-server > /tmp/www/index.html;"
            " httpd -f -p 8081 -h /tmp/www & wait $!",
        ),
    )
    _, (_, client) = run_pod(runtime, make_sandbox, server, make_container("client"))

    def fetch() -> bytes:
        result = runtime.exec_sync(client, ["wget", "-q", "-O", "-", "http://127.0.0.1:8081/"], 5)
        return result.stdout if result.exit_code == 0 else b""

    assert wait_for(fetch, 10, 0.1, "the server over localhost") == b"hello-from-server\n"


def test_host_port_reachable_from_the_test_process(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    port = free_port()
    server = make_container(
        "server",
        command=(
            "sh",
            "-c",
            "trap 'exit 0' TERM; mkdir -p /tmp/www; echo via-host-port > /tmp/www/index.html;"
            " httpd -f -p 8080 -h /tmp/www & wait $!",
        ),
    )
    run_pod(
        runtime,
        make_sandbox,
        server,
        ports=(PortMapping(container_port=8080, host_port=port, host_ip="127.0.0.1"),),
    )

    def fetch() -> bytes:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                return bytes(response.read())
        except OSError:
            return b""

    assert wait_for(fetch, 10, 0.1, f"127.0.0.1:{port}") == b"via-host-port\n"


def test_env_working_dir_and_binds(
    runtime: DockerRuntime,
    make_sandbox: SandboxFactory,
    make_container: ContainerFactory,
    tmp_path: Path,
) -> None:
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "data").write_text("read-only-data\n")
    (tmp_path / "rw").mkdir()
    container = make_container(
        command=(
            "sh",
            "-c",
            "echo FOO=$FOO; echo BAR=$BAR; pwd; cat /in/data;"
            " (echo x > /in/new) 2>/dev/null && echo ro-broken || echo ro-ok;"
            " echo written > /out/result",
        ),
        env=(("FOO", "foo value"), ("BAR", "b=c")),
        working_dir="/tmp",
        mounts=(
            Mount(str(tmp_path / "ro"), "/in", read_only=True),
            Mount(str(tmp_path / "rw"), "/out"),
        ),
    )
    _, (cid,) = run_pod(runtime, make_sandbox, container)
    exited = wait_exited(runtime, cid)
    assert exited.exit_code == 0, logs_text(runtime, cid)
    assert logs_text(runtime, cid).splitlines() == [
        "FOO=foo value",
        "BAR=b=c",
        "/tmp",
        "read-only-data",
        "ro-ok",
    ]
    assert (tmp_path / "rw" / "result").read_text() == "written\n"


def test_resources_privileged_and_restart_policy(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory, raw: Any
) -> None:
    config = make_sandbox()
    sandbox_id = runtime.run_sandbox(config)
    container = make_container(
        cpu_shares=512,
        cpu_quota=50_000,
        cpu_period=100_000,
        memory_limit=64 * 1024 * 1024,
        privileged=True,
    )
    host = raw.inspect_container(runtime.create_container(sandbox_id, container, config))[
        "HostConfig"
    ]
    assert host["CpuShares"] == 512
    assert host["CpuQuota"] == 50_000
    assert host["CpuPeriod"] == 100_000
    assert host["Memory"] == 64 * 1024 * 1024
    assert host["MemorySwap"] == 64 * 1024 * 1024
    assert host["Privileged"] is True
    plain = raw.inspect_container(
        runtime.create_container(sandbox_id, make_container("plain"), config)
    )["HostConfig"]
    assert plain["Privileged"] is False
    assert plain["Memory"] == 0


@pytest.fixture
def entrypoint_image(raw: Any, engine: TestEngine, test_uid: str) -> Any:
    """An image with an ENTRYPOINT and a CMD, built locally from the test image."""
    tag = f"kubecore-test/entrypoint:{test_uid}"
    dockerfile = f'FROM {engine.image}\nENTRYPOINT ["echo", "ep"]\nCMD ["default-cmd"]\n'
    for _ in raw.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, decode=True):
        pass
    yield tag
    raw.remove_image(tag, force=True)


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [
        ((), (), "ep default-cmd"),
        ((), ("a1", "a2"), "ep a1 a2"),
        (("echo", "cmd"), (), "cmd"),
        (("echo",), ("x", "y"), "x y"),
    ],
    ids=["image-defaults", "args-keep-entrypoint", "command-drops-cmd", "command-and-args"],
)
def test_command_overrides_entrypoint_and_args_override_cmd(
    runtime: DockerRuntime,
    make_sandbox: SandboxFactory,
    make_container: ContainerFactory,
    entrypoint_image: str,
    command: tuple[str, ...],
    args: tuple[str, ...],
    expected: str,
) -> None:
    container = make_container(image=entrypoint_image, command=command, args=args)
    _, (cid,) = run_pod(runtime, make_sandbox, container)
    wait_exited(runtime, cid)
    assert logs_text(runtime, cid) == expected + "\n"


def test_exit_codes_and_reasons(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    ok = make_container("ok", command=("true",))
    bad = make_container("bad", command=("sh", "-c", "exit 7"))
    _, (ok_id, bad_id) = run_pod(runtime, make_sandbox, ok, bad)
    done = wait_exited(runtime, ok_id)
    assert (done.exit_code, done.reason) == (0, "Completed")
    assert done.started_at is not None and done.finished_at is not None
    assert done.finished_at >= done.started_at
    failed = wait_exited(runtime, bad_id)
    assert (failed.exit_code, failed.reason) == (7, "Error")
    listed = {c.id: c for c in runtime.snapshot().containers}
    assert (listed[ok_id].exit_code, listed[ok_id].reason) == (0, "Completed")
    assert (listed[bad_id].exit_code, listed[bad_id].reason) == (7, "Error")
    assert listed[bad_id].finished_at == failed.finished_at


def test_failed_start_is_container_cannot_run(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    config = make_sandbox()
    sandbox_id = runtime.run_sandbox(config)
    cid = runtime.create_container(sandbox_id, make_container(command=("/no/such/binary",)), config)

    def listed() -> RuntimeContainer:
        (found,) = [c for c in runtime.snapshot().containers if c.id == cid]
        return found

    assert listed().state is RuntimeState.CREATED  # and cached so
    with pytest.raises(ContainerRuntimeError):
        runtime.start_container(cid)
    for status in (runtime.container_status(cid), listed()):
        assert status.id == cid
        assert status.state is RuntimeState.EXITED
        assert status.reason == "ContainerCannotRun"
        assert status.exit_code in (126, 127, 128)
        assert "no/such/binary" in status.message
        assert status.finished_at is None, "the engine's zero time means unset"


def test_container_name_conflict_is_resolved(
    runtime: DockerRuntime,
    make_sandbox: SandboxFactory,
    make_container: ContainerFactory,
    raw: Any,
    engine: TestEngine,
) -> None:
    config = make_sandbox()
    sandbox_id = runtime.run_sandbox(config)
    container = make_container("web")
    stale = raw.create_container(
        engine.image,
        name=container_name(container, config),
        labels={TEST_LABEL: config.labels[TEST_LABEL]},
    )["Id"]
    raw.start(stale)
    cid = runtime.create_container(sandbox_id, container, config)
    assert cid != stale
    assert not raw.containers(all=True, filters={"id": stale})
    runtime.start_container(cid)
    assert runtime.container_status(cid).state is RuntimeState.RUNNING


def test_start_stop_remove_are_idempotent(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory, raw: Any
) -> None:
    _, (cid,) = run_pod(runtime, make_sandbox, make_container())
    runtime.start_container(cid)  # 304: already started
    started = time.monotonic()
    runtime.stop_container(cid, 10)
    assert time.monotonic() - started < 5, "TERM is honoured, no waiting out the grace period"
    runtime.stop_container(cid, 10)  # 304: already stopped
    stopped = runtime.container_status(cid)
    assert (stopped.state, stopped.exit_code) == (RuntimeState.EXITED, 0)
    runtime.remove_container(cid)
    runtime.remove_container(cid)
    runtime.stop_container(cid, 1)
    with pytest.raises(ContainerNotFound):
        runtime.container_status(cid)
    with pytest.raises(ContainerNotFound):
        runtime.start_container(cid)


def test_stop_kills_after_the_grace_period(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    stubborn = make_container(command=("sh", "-c", "trap '' TERM; while :; do sleep 1; done"))
    _, (cid,) = run_pod(runtime, make_sandbox, stubborn)
    started = time.monotonic()
    runtime.stop_container(cid, 1)
    assert time.monotonic() - started < 8
    assert runtime.container_status(cid).exit_code == 137


def test_remove_running_container_kills_it(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory, raw: Any
) -> None:
    _, (cid,) = run_pod(runtime, make_sandbox, make_container())
    runtime.remove_container(cid)
    assert not raw.containers(all=True, filters={"id": cid})


def test_create_in_missing_sandbox_and_with_missing_image(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    from kubecore._contract.errors import ImageNotFound

    config = make_sandbox()
    with pytest.raises(SandboxNotFound):
        runtime.create_container("f" * 64, make_container(), config)
    sandbox_id = runtime.run_sandbox(config)
    with pytest.raises(ImageNotFound):
        runtime.create_container(
            sandbox_id, make_container(image="kubecore-test/missing:0"), config
        )


def test_status_of_missing_and_foreign_objects(
    runtime: DockerRuntime,
    make_sandbox: SandboxFactory,
    make_container: ContainerFactory,
    raw: Any,
    engine: TestEngine,
    cleanup: str,
) -> None:
    with pytest.raises(ContainerNotFound):
        runtime.container_status("0" * 64)
    with pytest.raises(SandboxNotFound):
        runtime.sandbox_status("0" * 64)
    foreign = raw.create_container(engine.image, labels={TEST_LABEL: cleanup.split("=")[1]})["Id"]
    with pytest.raises(ContainerNotFound):
        runtime.container_status(foreign)
    assert foreign not in {c.id for c in runtime.snapshot().containers}
    sandbox_id, (cid,) = run_pod(runtime, make_sandbox, make_container())
    with pytest.raises(SandboxNotFound):
        runtime.sandbox_status(cid)
    with pytest.raises(ContainerNotFound):
        runtime.container_status(sandbox_id)


def test_starting_a_container_of_a_stopped_sandbox_says_the_sandbox_is_unusable(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    config = make_sandbox()
    sandbox_id = runtime.run_sandbox(config)
    cid = runtime.create_container(sandbox_id, make_container(), config)
    runtime.stop_sandbox(sandbox_id)
    with pytest.raises(SandboxUnusable, match="non running container"):
        runtime.start_container(cid)


def test_a_running_sandbox_whose_ipc_mount_is_lost_is_unusable(
    runtime: DockerRuntime,
    make_sandbox: SandboxFactory,
    make_container: ContainerFactory,
    raw: Any,
) -> None:
    """What a SIGKILLed and restarted engine can leave: the sandbox listed as running, its
    /dev/shm mount gone, and every join refused as "non-shareable IPC"."""
    config = make_sandbox()
    sandbox_id = runtime.run_sandbox(config)
    cid = runtime.create_container(sandbox_id, make_container(), config)
    shm = Path(raw.info()["DockerRootDir"], "containers", sandbox_id, "mounts", "shm")
    if not shm.is_dir():
        pytest.skip(f"the engine keeps the sandbox's IPC mount elsewhere than {shm}")
    subprocess.run(["umount", "-l", str(shm)], check=True, capture_output=True)
    shm.rmdir()
    with pytest.raises(SandboxUnusable, match="non-shareable IPC"):
        runtime.start_container(cid)


# -- exec, logs, stats -------------------------------------------------------------------------


def test_exec_sync_output_and_exit_code(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    _, (cid,) = run_pod(runtime, make_sandbox, make_container(env=(("GREETING", "hi"),)))
    result = runtime.exec_sync(cid, ["sh", "-c", "echo out $GREETING; echo err >&2; exit 4"], 5)
    assert (result.exit_code, result.stdout, result.stderr) == (4, b"out hi\n", b"err\n")
    assert runtime.exec_sync(cid, ["true"], 5).exit_code == 0


def test_exec_sync_timeout(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    _, (cid,) = run_pod(runtime, make_sandbox, make_container())
    started = time.monotonic()
    with pytest.raises(RuntimeTimeout):
        runtime.exec_sync(cid, ["sleep", "5"], 0.5)
    assert time.monotonic() - started < 3


def test_exec_in_stopped_or_missing_container(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    _, (cid,) = run_pod(runtime, make_sandbox, make_container(command=("true",)))
    wait_exited(runtime, cid)
    with pytest.raises(Conflict):
        runtime.exec_sync(cid, ["true"], 2)
    with pytest.raises(ContainerNotFound):
        runtime.exec_sync("0" * 64, ["true"], 2)


def test_logs_tail_since_timestamps_and_stderr(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    container = make_container(
        command=("sh", "-c", "echo one; echo two >&2; printf 'three\\nfour'; exit 0")
    )
    _, (cid,) = run_pod(runtime, make_sandbox, container)
    wait_exited(runtime, cid)
    lines = list(runtime.logs(cid))
    assert sorted(lines) == sorted([b"one\n", b"two\n", b"three\n", b"four\n"])
    assert list(runtime.logs(cid, tail=1)) == [b"four\n"]
    assert list(runtime.logs(cid, tail=0)) == []
    stamped = list(runtime.logs(cid, timestamps=True))
    assert len(stamped) == 4
    for line in stamped:
        assert re.match(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z \S+\n$", line), line
    assert list(runtime.logs(cid, since=time.time() + 60)) == []
    assert len(list(runtime.logs(cid, since=time.time() - 600))) == 4
    with pytest.raises(ContainerNotFound):
        list(runtime.logs("0" * 64))


def test_logs_follow(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    container = make_container(
        command=("sh", "-c", "for i in 1 2 3; do echo line$i; sleep 0.2; done")
    )
    _, (cid,) = run_pod(runtime, make_sandbox, container)
    started = time.monotonic()
    assert list(runtime.logs(cid, follow=True)) == [b"line1\n", b"line2\n", b"line3\n"]
    assert time.monotonic() - started < 10

    _, (endless,) = run_pod(
        runtime,
        make_sandbox,
        make_container(
            "endless",
            command=("sh", "-c", "trap 'exit 0' TERM; while :; do echo tick; sleep 0.1; done"),
        ),
    )
    stream = runtime.logs(endless, follow=True, tail=0)
    assert next(stream) == b"tick\n"
    started = time.monotonic()
    stream.close()  # type: ignore[attr-defined]
    assert time.monotonic() - started < 5


def test_container_stats_of_a_running_container(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    # How long a read takes is for benchmarks, not for a test (the one-shot read skips the
    # engine's second sample; under CI's load a wall-clock bound failed at random).
    _, (cid,) = run_pod(runtime, make_sandbox, make_container())
    stats = {s.container_id: s for s in runtime.container_stats()}
    assert cid in stats
    mine = stats[cid]
    assert mine.memory_usage_bytes is not None and mine.memory_usage_bytes > 0
    assert mine.memory_working_set_bytes is not None
    assert mine.cpu_usage_nanos is not None and mine.cpu_usage_nanos > 0
    assert abs(mine.timestamp - time.time()) < 60


def test_oom_killed(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory, raw: Any
) -> None:
    if not raw.info().get("MemoryLimit", False):
        pytest.skip("this engine cannot enforce memory limits")
    hog = make_container(command=OOM_HOG, memory_limit=16 * 1024 * 1024)
    _, (cid,) = run_pod(runtime, make_sandbox, hog)
    exited = wait_exited(runtime, cid)
    assert (exited.reason, exited.exit_code) == ("OOMKilled", 137)
    (listed,) = [c for c in runtime.snapshot().containers if c.id == cid]
    assert listed.reason == "OOMKilled"
