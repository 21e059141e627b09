"""kubecore's configs as CRI messages, and CRI's answers as kubecore's values (real generated
messages, no runtime)."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubecore.runtime import (
    Capability,
    ContainerConfig,
    ContainerResources,
    DNSConfig,
    InvalidConfig,
    LinuxContainerSecurityContext,
    Mount,
    MountPropagation,
    NamespaceMode,
    NamespaceOption,
    PortMapping,
    ProfileType,
    RegistryAuth,
    RuntimeEventType,
    RuntimeState,
    SandboxConfig,
    SandboxState,
    SecurityProfile,
    SELinuxOption,
    container_labels,
    sandbox_labels,
)
from kubecore_cri._convert import (
    auth_config,
    container_config,
    container_from,
    event_from,
    image_from,
    linux_resources,
    sandbox_config,
    sandbox_from,
    seconds,
    server_address,
    stats_from,
    stop_signal,
)
from kubecore_cri._pb import api_pb2 as pb

UID = "0f3e6c1a-5d8e-4a47-9d1b-3c1a2b4d5e6f"


def a_sandbox(**changes: object) -> SandboxConfig:
    base = SandboxConfig(
        name="web",
        namespace="shop",
        uid=UID,
        attempt=2,
        hostname="web-host",
        ports=(PortMapping(80, 8080, "127.0.0.1", "udp"), PortMapping(443)),
        dns=DNSConfig(servers=("10.0.0.10",), searches=("shop.svc",), options=("ndots:5",)),
        labels=sandbox_labels("web", "shop", UID, "node-a"),
        annotations={"note": "spaces, = and / survive"},
        sysctls={"net.ipv4.ip_forward": "1"},
        namespace_options=NamespaceOption(pid=NamespaceMode.POD),
    )
    return attrs.evolve(base, **changes)  # type: ignore[arg-type]


def test_a_sandbox_config_carries_identity_network_and_namespaces() -> None:
    message = sandbox_config(a_sandbox(), log_root="/var/log/pods", cgroup_parent="/kubepods")
    assert (message.metadata.name, message.metadata.namespace) == ("web", "shop")
    assert (message.metadata.uid, message.metadata.attempt) == (UID, 2)
    assert message.hostname == "web-host"
    assert message.log_directory == f"/var/log/pods/shop_web_{UID}"
    # hostPort 0 publishes nothing; the protocol is CRI's enum, case-insensitive.
    (port,) = message.port_mappings
    assert (port.protocol, port.container_port, port.host_port, port.host_ip) == (
        pb.UDP,
        80,
        8080,
        "127.0.0.1",
    )
    assert list(message.dns_config.servers) == ["10.0.0.10"]
    assert list(message.dns_config.options) == ["ndots:5"]
    assert dict(message.labels) == sandbox_labels("web", "shop", UID, "node-a")
    assert dict(message.annotations) == {"note": "spaces, = and / survive"}
    assert message.linux.cgroup_parent == "/kubepods"
    assert dict(message.linux.sysctls) == {"net.ipv4.ip_forward": "1"}
    namespaces = message.linux.security_context.namespace_options
    assert (namespaces.network, namespaces.pid, namespaces.ipc) == (pb.POD, pb.POD, pb.POD)


def test_a_host_network_sandbox_has_the_nodes_network_and_no_hostname() -> None:
    message = sandbox_config(a_sandbox(host_network=True), log_root="/l")
    assert message.linux.security_context.namespace_options.network == pb.NODE
    assert message.hostname == ""


def test_a_sandbox_without_dns_leaves_it_to_the_runtime() -> None:
    assert not sandbox_config(a_sandbox(dns=None), log_root="/l").HasField("dns_config")


def test_a_memory_backed_mount_is_refused_not_dropped() -> None:
    tmpfs = Mount("/var/lib/x", "/cache", memory_backed=True)
    with pytest.raises(InvalidConfig, match="not supported by the cri runtime yet"):
        sandbox_config(a_sandbox(mounts=(tmpfs,)), log_root="/l")
    config = ContainerConfig(name="app", image="busybox:1.35", mounts=(tmpfs,))
    with pytest.raises(InvalidConfig, match="/cache"):
        container_config(config, a_sandbox())


def a_container(**changes: object) -> ContainerConfig:
    return ContainerConfig(
        name="app",
        image="busybox:1.35",
        command=("sh", "-c"),
        args=("echo hi",),
        working_dir="/work",
        env=(("A", "1"), ("B", "two words")),
        mounts=(
            Mount("/host/data", "/data", read_only=True),
            Mount("/host/shared", "/shared", propagation=MountPropagation.BIDIRECTIONAL),
        ),
        labels=container_labels("web", "shop", UID, "app", "node-a"),
        annotations={"io.kubernetes.container.hash": "abc"},
        attempt=3,
        cpu_shares=102,
        cpu_quota=50000,
        cpu_period=100000,
        memory_limit=64 * 1024 * 1024,
        tty=True,
        stdin=True,
        stdin_once=True,
        stop_signal="SIGUSR1",
        **changes,  # type: ignore[arg-type]
    )


def test_a_container_config_carries_the_spec() -> None:
    message = container_config(a_container(), a_sandbox())
    assert (message.metadata.name, message.metadata.attempt) == ("app", 3)
    assert message.image.image == "busybox:1.35"
    assert list(message.command) == ["sh", "-c"] and list(message.args) == ["echo hi"]
    assert message.working_dir == "/work"
    assert [(e.key, e.value) for e in message.envs] == [("A", b"1"), ("B", b"two words")]
    data, shared = message.mounts
    assert (data.host_path, data.container_path, data.readonly) == ("/host/data", "/data", True)
    assert shared.propagation == pb.PROPAGATION_BIDIRECTIONAL
    assert dict(message.labels) == container_labels("web", "shop", UID, "app", "node-a")
    assert dict(message.annotations) == {"io.kubernetes.container.hash": "abc"}
    assert message.log_path == "app/3.log"
    assert (message.tty, message.stdin, message.stdin_once) == (True, True, True)
    assert message.stop_signal == pb.SIGNAL_SIGUSR1
    resources = message.linux.resources
    assert (resources.cpu_shares, resources.cpu_quota, resources.cpu_period) == (
        102,
        50000,
        100000,
    )
    assert resources.memory_limit_in_bytes == resources.memory_swap_limit_in_bytes == 64 << 20
    namespaces = message.linux.security_context.namespace_options
    assert namespaces.pid == pb.POD  # the sandbox's shareProcessNamespace


def test_a_targeted_ephemeral_container_joins_its_targets_pid_namespace() -> None:
    own = NamespaceOption(pid=NamespaceMode.TARGET, target_id="c0ffee")
    message = container_config(a_container(namespace_options=own), a_sandbox())
    namespaces = message.linux.security_context.namespace_options
    assert (namespaces.pid, namespaces.target_id) == (pb.TARGET, "c0ffee")


def test_capabilities_reach_the_cri_without_their_cap_prefix() -> None:
    """containerd puts ``CAP_`` before each name itself."""
    sc = LinuxContainerSecurityContext(
        capabilities=Capability(("CAP_NET_ADMIN", "cap_sys_time", "CHOWN"), ("CAP_ALL",))
    )
    message = container_config(a_container(security_context=sc), a_sandbox())
    capabilities = message.linux.security_context.capabilities
    assert list(capabilities.add_capabilities) == ["NET_ADMIN", "sys_time", "CHOWN"]
    assert list(capabilities.drop_capabilities) == ["ALL"]


def test_the_security_context_is_carried_field_by_field() -> None:
    sc = LinuxContainerSecurityContext(
        capabilities=Capability(("NET_ADMIN",), ("ALL",)),
        run_as_user=1000,
        run_as_group=0,
        readonly_rootfs=True,
        supplemental_groups=(5, 6),
        supplemental_groups_policy="Strict",
        no_new_privs=True,
        seccomp=SecurityProfile(ProfileType.LOCALHOST, "/profiles/a.json"),
        apparmor=SecurityProfile(ProfileType.UNCONFINED),
        selinux_options=SELinuxOption(type="spc_t", level="s0"),
    )
    message = container_config(
        a_container(security_context=sc, privileged=True), a_sandbox()
    ).linux.security_context
    assert list(message.capabilities.add_capabilities) == ["NET_ADMIN"]
    assert list(message.capabilities.drop_capabilities) == ["ALL"]
    assert message.privileged
    assert message.run_as_user.value == 1000
    assert message.HasField("run_as_group") and message.run_as_group.value == 0
    assert message.readonly_rootfs and message.no_new_privs
    assert list(message.supplemental_groups) == [5, 6]
    assert message.supplemental_groups_policy == pb.Strict
    assert message.seccomp.profile_type == pb.SecurityProfile.Localhost
    assert message.seccomp.localhost_ref == "/profiles/a.json"
    assert message.apparmor.profile_type == pb.SecurityProfile.Unconfined
    assert (message.selinux_options.type, message.selinux_options.level) == ("spc_t", "s0")


def test_a_user_by_name_and_no_profiles_leave_the_rest_unset() -> None:
    sc = LinuxContainerSecurityContext(run_as_username="nobody")
    message = container_config(a_container(security_context=sc), a_sandbox())
    context = message.linux.security_context
    assert context.run_as_username == "nobody"
    assert not context.HasField("run_as_user")
    assert not context.HasField("seccomp") and not context.HasField("apparmor")


def test_unset_resources_are_zero_for_the_runtimes_default() -> None:
    message = linux_resources(ContainerResources(cpu_shares=2))
    assert (message.cpu_shares, message.cpu_quota, message.memory_limit_in_bytes) == (2, 0, 0)
    assert message.memory_swap_limit_in_bytes == 0


@pytest.mark.parametrize(
    ("name", "number"),
    [("", pb.SIGNAL_RUNTIME_DEFAULT), ("SIGTERM", pb.SIGNAL_SIGTERM), ("usr2", pb.SIGNAL_SIGUSR2)],
)
def test_stop_signals(name: str, number: int) -> None:
    assert stop_signal(name) == number


def test_an_unknown_stop_signal_is_refused() -> None:
    with pytest.raises(InvalidConfig, match="SIGNOPE"):
        stop_signal("SIGNOPE")


def test_registry_auth() -> None:
    message = auth_config(RegistryAuth("u", "p", "localhost:5001", "tok"))
    assert (message.username, message.password) == ("u", "p")
    assert (message.server_address, message.identity_token) == ("https://localhost:5001", "tok")


@pytest.mark.parametrize(
    ("server", "sent"),
    [
        ("", ""),
        ("localhost:5001", "https://localhost:5001"),
        ("registry.example:443/", "https://registry.example:443"),
        ("https://index.docker.io/v1/", "https://index.docker.io/v1/"),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
    ],
)
def test_the_server_address_is_a_url_naming_the_registry_host(server: str, sent: str) -> None:
    """containerd sends the credentials only to the host of the URL; ``host:port`` alone has
    none."""
    assert server_address(server) == sent


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_times_are_nanoseconds_and_zero_is_unset(nanos: int) -> None:
    value = seconds(nanos)
    if nanos <= 0:
        assert value is None
    else:
        assert value is not None and abs(value - nanos / 1e9) < 1e-3


def a_status(**fields: object) -> object:
    base: dict[str, object] = {
        "id": "c1",
        "metadata": pb.ContainerMetadata(name="app", attempt=1),
        "state": pb.CONTAINER_EXITED,
        "created_at": 1_700_000_000_000_000_000,
        "started_at": 1_700_000_001_000_000_000,
        "finished_at": 1_700_000_002_500_000_000,
        "exit_code": 0,
        "image": pb.ImageSpec(image="docker.io/library/busybox:1.35"),
        "image_ref": "sha256:abc",
        "labels": {"io.kubecore.managed": "true"},
        "annotations": {"io.kubernetes.container.hash": "abc"},
        "log_path": "/var/log/pods/x/app/1.log",
    }
    base.update(fields)
    return pb.ContainerStatus(**base)


def test_an_exited_container() -> None:
    container = container_from(a_status(exit_code=3, reason="Error", message="bad"), "s1")
    assert (container.id, container.sandbox_id, container.name) == ("c1", "s1", "app")
    assert container.state is RuntimeState.EXITED
    assert (container.exit_code, container.reason, container.message) == (3, "Error", "bad")
    assert container.started_at == 1_700_000_001.0
    assert container.finished_at == 1_700_000_002.5
    assert container.image_id == "sha256:abc" and container.attempt == 1
    assert container.labels == {"io.kubecore.managed": "true"}
    assert container.annotations == {"io.kubernetes.container.hash": "abc"}
    assert container.log_path == "/var/log/pods/x/app/1.log"


@pytest.mark.parametrize(
    ("reason", "code", "expected"),
    [("", 0, "Completed"), ("", 1, "Error"), ("OOMKilled", 137, "OOMKilled")],
)
def test_an_exit_without_a_reason_gets_the_kubelets(reason: str, code: int, expected: str) -> None:
    assert container_from(a_status(reason=reason, exit_code=code), "s").reason == expected


def test_a_start_that_failed_cannot_run() -> None:
    failed = container_from(a_status(started_at=0, exit_code=128, reason="StartError"), "s")
    assert failed.reason == "ContainerCannotRun" and failed.started_at is None


def test_a_running_container_has_no_exit() -> None:
    running = container_from(a_status(state=pb.CONTAINER_RUNNING, reason="x"), "s")
    assert running.state is RuntimeState.RUNNING
    assert running.exit_code is None and running.finished_at is None and running.reason == ""


def test_a_sandbox_is_ready_with_its_ip() -> None:
    item = pb.PodSandbox(
        id="s1",
        metadata=pb.PodSandboxMetadata(name="web", uid=UID, namespace="shop", attempt=2),
        state=pb.SANDBOX_READY,
        created_at=1_700_000_000_000_000_000,
        labels={"a": "b"},
        annotations={"c": "d"},
    )
    sandbox = sandbox_from(item, "10.1.2.3")
    assert (sandbox.name, sandbox.namespace, sandbox.uid, sandbox.attempt) == (
        "web",
        "shop",
        UID,
        2,
    )
    assert sandbox.state is SandboxState.READY and sandbox.ip == "10.1.2.3"
    assert sandbox.created_at == 1_700_000_000.0
    assert (sandbox.labels, sandbox.annotations) == ({"a": "b"}, {"c": "d"})
    item.state = pb.SANDBOX_NOTREADY
    assert sandbox_from(item, "10.1.2.3").ip == ""


def test_an_image() -> None:
    image = image_from(
        pb.Image(
            id="sha256:1",
            repo_tags=["docker.io/library/busybox:1.35"],
            repo_digests=["docker.io/library/busybox@sha256:2"],
            size=1234,
            uid=pb.Int64Value(value=0),
        )
    )
    assert image.tags == ("docker.io/library/busybox:1.35",) and image.size == 1234
    assert image.uid == 0 and image.username == ""
    assert image_from(pb.Image(id="x", username="nobody")).uid is None


def test_stats() -> None:
    message = pb.ContainerStats(
        attributes=pb.ContainerAttributes(id="c1"),
        cpu=pb.CpuUsage(
            timestamp=1_700_000_000_000_000_000, usage_core_nano_seconds=pb.UInt64Value(value=7)
        ),
        memory=pb.MemoryUsage(working_set_bytes=pb.UInt64Value(value=100)),
        writable_layer=pb.FilesystemUsage(used_bytes=pb.UInt64Value(value=4096)),
    )
    stats = stats_from(message, fallback_time=5.0)
    assert (stats.container_id, stats.timestamp, stats.cpu_usage_nanos) == ("c1", 1.7e9, 7)
    assert stats.memory_working_set_bytes == 100 and stats.memory_usage_bytes is None
    assert stats.writable_layer_used_bytes == 4096
    bare = stats_from(pb.ContainerStats(attributes=pb.ContainerAttributes(id="c2")), 5.0)
    assert bare.timestamp == 5.0 and bare.cpu_usage_nanos is None


def test_events() -> None:
    response = pb.ContainerEventResponse(
        container_id="c1",
        container_event_type=pb.CONTAINER_STOPPED_EVENT,
        created_at=2_000_000_000,
        pod_sandbox_status=pb.PodSandboxStatus(metadata=pb.PodSandboxMetadata(uid=UID)),
        containers_statuses=[a_status(id="c1", exit_code=2)],
    )
    event = event_from(response)
    assert event is not None
    assert (event.type, event.container_id, event.timestamp) == (RuntimeEventType.DIED, "c1", 2.0)
    assert (event.pod_uid, event.container_name, event.exit_code) == (UID, "app", 2)
    assert event_from(pb.ContainerEventResponse()) is None
