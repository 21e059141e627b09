"""The ``cri`` plugin against the test containerd, beyond the conformance suite: how a pod's
sandbox looks from inside (hostname, DNS, published ports, sysctls), the log files where the
kubelet keeps them, a resize seen in the cgroup, pulls with registry auth, the image filesystem,
and the event stream containerd 1.6 does not have."""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from kubecore._plugins.registry import RuntimeBundle, plugin_manager
from kubecore.runtime import (
    ContainerConfig,
    ContainerResources,
    DNSConfig,
    ImagePullError,
    PortMapping,
    RegistryAuth,
    RuntimeState,
    SandboxConfig,
    container_labels,
    sandbox_labels,
)
from kubecore_cri import _plugin
from kubecore_cri._runtime import CriRuntime
from tests.engines.cri.support import CriScope, TestContainerd, TestRegistries

pytestmark = pytest.mark.cri


@pytest.fixture
def bundle(containerd: TestContainerd, tmp_path: Path) -> Iterator[RuntimeBundle]:
    # The plugin as the agent finds it (its module registered as the entry point registers it).
    bundle = plugin_manager([_plugin], entry_points=False).load_runtime(
        "cri",
        endpoint=containerd.endpoint,
        log_root=str(tmp_path / "pods"),
    )
    yield bundle
    bundle.runtime.close()


def a_pod(scope: CriScope, **changes: object) -> SandboxConfig:
    uid = uuid.uuid4().hex
    labels = {**sandbox_labels("pod", scope.namespace, uid, "node-a"), **scope.labels}
    config = SandboxConfig(
        name="pod", namespace=scope.namespace, uid=uid, hostname="pod-host", labels=labels
    )
    return attrs.evolve(config, **changes)  # type: ignore[arg-type]


def a_container(
    scope: CriScope, sandbox: SandboxConfig, image: str, *command: str
) -> ContainerConfig:
    labels = {
        **container_labels(sandbox.name, sandbox.namespace, sandbox.uid, "app", "node-a"),
        **scope.labels,
    }
    return ContainerConfig(name="app", image=image, command=command, labels=labels)


def wait_running(runtime: CriRuntime, container_id: str) -> None:
    deadline = time.monotonic() + 20
    while runtime.container_status(container_id).state is not RuntimeState.RUNNING:
        assert time.monotonic() < deadline, "the container did not start"
        time.sleep(0.05)


def test_a_pods_sandbox_as_seen_from_inside(
    bundle: RuntimeBundle, containerd: TestContainerd, cri_scope: CriScope
) -> None:
    runtime = bundle.runtime
    assert isinstance(runtime, CriRuntime)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        host_port = probe.getsockname()[1]
    sandbox = a_pod(
        cri_scope,
        dns=DNSConfig(servers=("10.96.0.10",), searches=("ns.svc.cluster.local",)),
        ports=(PortMapping(8080, host_port, "127.0.0.1"),),
        sysctls={"net.ipv4.ip_unprivileged_port_start": "80"},
    )
    sandbox_id = runtime.run_sandbox(sandbox)
    config = a_container(
        cri_scope, sandbox, containerd.image, "sh", "-c", "echo started; exec sleep 600"
    )
    container_id = runtime.create_container(sandbox_id, config, sandbox)
    runtime.start_container(container_id)
    wait_running(runtime, container_id)

    def run(*command: str) -> str:
        result = runtime.exec_sync(container_id, list(command), 10)
        assert result.exit_code == 0, result
        return result.stdout.decode()

    assert run("hostname").strip() == "pod-host"
    resolv = run("cat", "/etc/resolv.conf")
    assert "nameserver 10.96.0.10" in resolv and "search ns.svc.cluster.local" in resolv
    assert run("cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start").strip() == "80"
    # The log file is where the kubelet keeps it, in the CRI format, and logs() reads it.
    status = runtime.container_status(container_id)
    assert status.log_path.endswith(f"{sandbox.namespace}_pod_{sandbox.uid}/app/0.log")
    assert b"started\n" in b"".join(runtime.logs(container_id))
    # A resize in place reaches the container's memory cgroup.
    runtime.update_container_resources(container_id, ContainerResources(memory_limit=96 << 20))
    cgroup = "cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes"
    limits = run("sh", "-c", cgroup + " 2>/dev/null; true")
    assert str(96 << 20) in limits.split()
    stats = {s.container_id: s for s in runtime.container_stats()}
    assert stats[container_id].memory_working_set_bytes


def test_the_event_stream_falls_back_to_relisting_saying_so_once(
    bundle: RuntimeBundle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kubecore_cri")
    assert bundle.runtime.watch_events(lambda event: None) is None
    assert bundle.runtime.watch_events(lambda event: None) is None
    said = [r for r in caplog.records if "relisting" in r.getMessage()]
    assert len(said) == 1


def test_version_and_the_image_filesystem(bundle: RuntimeBundle) -> None:
    version = bundle.runtime.version()
    assert version.runtime_name == "containerd" and version.api_version == "v1"
    usage = bundle.puller.image_fs_usage()
    assert usage is not None and 0 < usage.used_bytes <= usage.capacity_bytes


def test_a_pull_with_registry_auth(bundle: RuntimeBundle, registries: TestRegistries) -> None:
    if not registries.auth_image:
        pytest.skip("the test engine has no auth registry")
    puller = bundle.puller
    with pytest.raises(ImagePullError):
        puller.pull(registries.auth_image, RegistryAuth(registries.auth_user, "wrong-password"))
    image_id = puller.pull(
        registries.auth_image, RegistryAuth(registries.auth_user, registries.auth_password)
    )
    assert image_id.startswith("sha256:")
    found = puller.image_status(registries.auth_image)
    assert found is not None and found.id == image_id
