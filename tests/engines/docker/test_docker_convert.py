"""The adapter's pure conversions (engine JSON <-> kubecore values); no engine needed."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubecore._contract.values import ContainerConfig, RuntimeEventType, RuntimeState, SandboxConfig
from kubecore_docker._convert import (
    Summary,
    container_from,
    detail_from_inspect,
    event_from,
    image_from,
    image_matches,
    normalize_reference,
    parse_time,
    pull_error,
    stats_from,
)
from kubecore_docker._events import since_argument
from kubecore_docker._names import (
    attempt_from_name,
    container_labels,
    container_name,
    sandbox_labels,
    sandbox_name,
    split_labels,
)
from kubecore_docker._specs import container_create_args, sandbox_create_args

pytestmark = pytest.mark.docker

ZERO_TIME = "0001-01-01T00:00:00Z"


def test_parse_time() -> None:
    assert parse_time(ZERO_TIME) is None
    assert parse_time("") is None
    assert parse_time(None) is None
    assert parse_time("not a time") is None
    assert parse_time("2024-01-02T03:04:05Z") == 1704164645.0
    assert parse_time("2024-01-02T03:04:05.123456789Z") == pytest.approx(1704164645.123456789)
    assert parse_time("2024-01-02T04:04:05+01:00") == 1704164645.0


@settings(max_examples=50)
@given(
    st.datetimes(min_value=datetime.datetime(1970, 1, 2), max_value=datetime.datetime(2200, 1, 1)),
    st.integers(min_value=0, max_value=999_999_999),
)
def test_parse_time_round_trips_nanoseconds(moment: datetime.datetime, nanos: int) -> None:
    text = moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"
    expected = moment.replace(microsecond=0, tzinfo=datetime.UTC).timestamp() + nanos / 1e9
    assert parse_time(text) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("reference", "normal"),
    [
        ("busybox", "busybox:latest"),
        ("busybox:1.35", "busybox:1.35"),
        ("docker.io/library/busybox:1.35", "busybox:1.35"),
        ("index.docker.io/library/busybox", "busybox:latest"),
        ("docker.io/someone/tool:2", "someone/tool:2"),
        ("localhost:5000/kubecore/busybox", "localhost:5000/kubecore/busybox:latest"),
        ("localhost:5000/kubecore/busybox:1.35", "localhost:5000/kubecore/busybox:1.35"),
        ("registry.k8s.io/pause@sha256:abc", "registry.k8s.io/pause@sha256:abc"),
    ],
)
def test_normalize_reference(reference: str, normal: str) -> None:
    assert normalize_reference(reference) == normal


@settings(max_examples=50)
@given(
    st.from_regex(r"[a-z0-9]+(/[a-z0-9]+){0,2}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True),
    st.sampled_from(["", "localhost:5000/", "docker.io/"]),
)
def test_normalize_keeps_the_tag_and_is_idempotent(path: str, tag: str, registry: str) -> None:
    reference = f"{registry}{path}:{tag}"
    normal = normalize_reference(reference)
    assert normal.endswith(":" + tag)
    assert normalize_reference(normal) == normal


def test_image_matches_exactly() -> None:
    image = image_from(
        {
            "Id": "sha256:" + "ab" * 32,
            "RepoTags": ["busybox:1.35", "<none>:<none>"],
            "RepoDigests": ["busybox@sha256:" + "cd" * 32],
            "Size": 10,
            "Created": 5,
        }
    )
    assert image.tags == ("busybox:1.35",)
    assert image_matches("busybox:1.35", image)
    assert image_matches("docker.io/library/busybox:1.35", image)
    assert image_matches("busybox@sha256:" + "cd" * 32, image)
    assert image_matches("ababababab" * 2, image)
    assert image_matches("sha256:" + "ab" * 32, image)
    assert not image_matches("busybox", image)
    assert not image_matches("busybox:1.36", image)
    assert not image_matches("cdcdcdcdcdcd", image)


def test_pull_errors_inside_the_stream() -> None:
    assert pull_error({"status": "Downloading", "progressDetail": {}}) is None
    assert pull_error({"error": "manifest unknown"}) == "manifest unknown"
    assert pull_error({"errorDetail": {"message": "denied"}}) == "denied"


def summary(**overrides: object) -> Summary:
    values: dict[str, object] = {
        "id": "c1",
        "name": "k8s_web_pod_ns_uid_4",
        "labels": {"io.kubernetes.container.name": "web", "annotation.a": "b"},
        "image": "busybox:1.35",
        "image_id": "sha256:x",
        "created_at": 1.0,
        "status": "exited",
    }
    values.update(overrides)
    return Summary(**values)  # type: ignore[arg-type]


def state(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "Status": "exited",
        "Running": False,
        "ExitCode": 0,
        "Error": "",
        "OOMKilled": False,
        "StartedAt": "2024-01-02T03:04:05Z",
        "FinishedAt": "2024-01-02T03:04:06Z",
    }
    base.update(fields)
    return {"State": base}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"Status": "running", "Running": True, "FinishedAt": ZERO_TIME},
            (RuntimeState.RUNNING, None, ""),
        ),
        ({}, (RuntimeState.EXITED, 0, "Completed")),
        ({"ExitCode": 2}, (RuntimeState.EXITED, 2, "Error")),
        ({"ExitCode": 137, "OOMKilled": True}, (RuntimeState.EXITED, 137, "OOMKilled")),
        (
            {"Status": "created", "StartedAt": ZERO_TIME, "FinishedAt": ZERO_TIME},
            (RuntimeState.CREATED, None, ""),
        ),
        (
            {
                "Status": "created",
                "ExitCode": 127,
                "Error": "exec: not found",
                "StartedAt": ZERO_TIME,
                "FinishedAt": ZERO_TIME,
            },
            (RuntimeState.EXITED, 127, "ContainerCannotRun"),
        ),
    ],
    ids=["running", "completed", "error", "oom", "created", "cannot-run"],
)
def test_container_state_mapping(
    fields: dict[str, object], expected: tuple[RuntimeState, int | None, str]
) -> None:
    container = container_from(summary(), detail_from_inspect(state(**fields)))
    assert (container.state, container.exit_code, container.reason) == expected
    assert container.attempt == 4
    assert container.annotations == {"a": "b"}
    assert "annotation.a" not in container.labels
    if expected[2] == "ContainerCannotRun":
        assert container.message == "exec: not found"
        assert container.finished_at is None


def test_a_quick_exit_never_finishes_before_it_started() -> None:
    detail = detail_from_inspect(
        state(StartedAt="2024-01-02T03:04:05.5Z", FinishedAt="2024-01-02T03:04:05.25Z")
    )
    container = container_from(summary(), detail)
    assert container.started_at == container.finished_at == parse_time("2024-01-02T03:04:05.25Z")


def test_event_mapping() -> None:
    die = {
        "Type": "container",
        "Action": "die",
        "Actor": {
            "ID": "abc",
            "Attributes": {
                "exitCode": "137",
                "io.kubernetes.pod.uid": "u1",
                "io.kubernetes.container.name": "web",
            },
        },
        "timeNano": 1_700_000_000_500_000_000,
    }
    event = event_from(die)
    assert event is not None
    assert (event.type, event.container_id, event.exit_code) == (RuntimeEventType.DIED, "abc", 137)
    assert (event.pod_uid, event.container_name) == ("u1", "web")
    assert event.timestamp == pytest.approx(1_700_000_000.5)
    for action, kind in [
        ("create", RuntimeEventType.CREATED),
        ("start", RuntimeEventType.STARTED),
        ("oom", RuntimeEventType.OOM),
        ("destroy", RuntimeEventType.DELETED),
    ]:
        mapped = event_from({**die, "Action": action})
        assert mapped is not None and mapped.type is kind and mapped.exit_code is None
    assert event_from({**die, "Action": "exec_start: sh -c true"}) is None
    assert event_from({**die, "Type": "network"}) is None
    assert since_argument(1_700_000_000_000_000_007) == "1700000000.000000007"


def test_stats_mapping() -> None:
    stats = stats_from(
        "c1",
        {
            "read": "2024-01-02T03:04:05Z",
            "cpu_stats": {"cpu_usage": {"total_usage": 42}},
            "memory_stats": {"usage": 1000, "stats": {"total_inactive_file": 300}},
        },
        0.0,
    )
    assert (stats.cpu_usage_nanos, stats.memory_usage_bytes) == (42, 1000)
    assert stats.memory_working_set_bytes == 700
    assert stats.timestamp == 1704164645.0
    empty = stats_from("c2", {"read": ZERO_TIME}, 9.0)
    assert (empty.timestamp, empty.memory_usage_bytes, empty.cpu_usage_nanos) == (9.0, None, None)
    assert empty.memory_rss_bytes is None and empty.writable_layer_used_bytes is None


def test_stats_mapping_of_rss_and_page_faults_on_cgroup_v1_and_v2() -> None:
    v1 = {"usage": 900, "stats": {"total_rss": 500, "total_pgfault": 7, "total_pgmajfault": 1}}
    v2 = {"usage": 900, "stats": {"anon": 400, "pgfault": 8, "pgmajfault": 2}}
    one = stats_from("c1", {"memory_stats": v1}, 0.0, size_rw=4096)
    two = stats_from("c2", {"memory_stats": v2}, 0.0)
    assert (one.memory_rss_bytes, one.memory_page_faults, one.memory_major_page_faults) == (
        500,
        7,
        1,
    )
    assert one.writable_layer_used_bytes == 4096
    assert (two.memory_rss_bytes, two.memory_page_faults, two.memory_major_page_faults) == (
        400,
        8,
        2,
    )


def test_names_and_labels() -> None:
    sandbox = SandboxConfig(
        name="web", namespace="prod", uid="u-1", attempt=1, annotations={"k": "v"}
    )
    container = ContainerConfig(name="nginx", image="nginx", attempt=5, labels={"x": "y"})
    assert sandbox_name(sandbox) == "k8s_POD_web_prod_u-1_1"
    assert container_name(container, sandbox) == "k8s_nginx_web_prod_u-1_5"
    assert attempt_from_name("/k8s_nginx_web_prod_u-1_5") == 5
    assert attempt_from_name("something-else") == 0
    labels = sandbox_labels(sandbox)
    assert labels["io.kubernetes.docker.type"] == "podsandbox"
    assert labels["annotation.k"] == "v"
    assert split_labels(labels)[1] == {"k": "v"}
    clabels = container_labels(container, "sb1", sandbox)
    assert clabels["io.kubernetes.sandbox.id"] == "sb1"
    assert clabels["x"] == "y"


def test_the_adapter_adds_only_dockers_names_to_the_labels_the_core_wrote() -> None:
    """The pod's identity is written once, by the core (``kubecore.runtime``): the adapter stores
    the config's labels and adds dockershim's type and sandbox id, nothing else. (A config
    without ``MANAGED_LABEL`` is not made kubecore's by the adapter, as by every runtime.)"""
    from kubecore.runtime import MANAGED_LABEL
    from kubecore.runtime import container_labels as identity_of_container
    from kubecore.runtime import sandbox_labels as identity_of_sandbox

    sandbox = SandboxConfig(
        name="web", namespace="prod", uid="u-1", labels=identity_of_sandbox("web", "prod", "u-1")
    )
    container = ContainerConfig(
        name="nginx", image="nginx", labels=identity_of_container("web", "prod", "u-1", "nginx")
    )
    assert sandbox_labels(sandbox) == {
        **sandbox.labels,
        "io.kubernetes.docker.type": "podsandbox",
    }
    assert container_labels(container, "sb1", sandbox) == {
        **container.labels,
        "io.kubernetes.docker.type": "container",
        "io.kubernetes.sandbox.id": "sb1",
    }
    foreign = SandboxConfig(name="foreign", namespace="other", uid="foreign-1")
    assert MANAGED_LABEL not in sandbox_labels(foreign)
    assert MANAGED_LABEL not in container_labels(
        ContainerConfig(name="c", image="i"), "sb1", foreign
    )


def test_create_arguments() -> None:
    sandbox = SandboxConfig(name="web", namespace="prod", uid="u-1", host_network=True)
    args = sandbox_create_args(sandbox, "pause:1")
    assert args["host_config"]["network_mode"] == "host"
    assert args["host_config"]["ipc_mode"] == "shareable"
    assert "ports" not in args
    only_args = container_create_args(
        "sb1", ContainerConfig(name="c", image="i", args=("a",)), sandbox
    )
    assert only_args["entrypoint"] is None and only_args["command"] == ["a"]
    host = only_args["host_config"]
    assert host["network_mode"] == host["ipc_mode"] == "container:sb1"
    assert "dns" not in host and "port_bindings" not in host


def test_mounts_become_binds_with_propagation_and_pod_shared_tmpfs_volumes() -> None:
    from kubecore._contract.labels import POD_UID_LABEL
    from kubecore._contract.values import ContainerConfig, Mount, MountPropagation, SandboxConfig
    from kubecore_docker._specs import container_create_args, sandbox_create_args

    memory = Mount(
        "/root/pods/u/volumes/e/cache", "/cache", memory_backed=True, size_limit_bytes=2**20
    )
    config = ContainerConfig(
        name="app",
        image="busybox",
        labels={POD_UID_LABEL: "u"},
        mounts=(
            Mount("/h", "/in", propagation=MountPropagation.HOST_TO_CONTAINER),
            Mount("/b", "/both", True, propagation=MountPropagation.BIDIRECTIONAL),
            memory,
        ),
    )
    sandbox = SandboxConfig("p", "ns", "u", labels={POD_UID_LABEL: "u"}, mounts=(memory,))
    host = container_create_args("sid", config, sandbox)["host_config"]
    assert host["binds"] == ["/h:/in:rw,rslave", "/b:/both:ro,rshared"]
    (tmpfs,) = host["mounts"]
    assert tmpfs["Type"] == "volume" and tmpfs["Target"] == "/cache"
    assert tmpfs["VolumeOptions"]["DriverConfig"]["Options"] == {
        "type": "tmpfs",
        "device": "tmpfs",
        "o": "size=1048576",
    }
    assert tmpfs["VolumeOptions"]["Labels"][POD_UID_LABEL] == "u"
    (held,) = sandbox_create_args(sandbox, "pause")["host_config"]["mounts"]
    assert held["Source"] == tmpfs["Source"]  # the sandbox keeps the same tmpfs alive


def test_a_pid_target_joins_that_containers_pid_namespace() -> None:
    import attrs

    from kubecore._contract.values import NamespaceMode, NamespaceOption

    shared = SandboxConfig("p", "ns", "u", namespace_options=NamespaceOption(pid=NamespaceMode.POD))
    target = NamespaceOption(pid=NamespaceMode.TARGET, target_id="app-id")
    config = ContainerConfig(name="debugger", image="busybox")
    for sandbox in (SandboxConfig("p", "ns", "u"), shared):
        host = container_create_args(
            "sb1", attrs.evolve(config, namespace_options=target), sandbox
        )["host_config"]
        assert host["pid_mode"] == "container:app-id"
        assert host["network_mode"] == host["ipc_mode"] == "container:sb1"
    assert (
        "pid_mode"
        not in container_create_args("sb1", config, SandboxConfig("p", "ns", "u"))["host_config"]
    )
