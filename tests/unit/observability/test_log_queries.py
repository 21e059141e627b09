"""Log queries as the kubelet answers them, on the agent's /containerLogs (a real Kubelet on the
in-memory runtime, in virtual time) and in the pure choice of the instance to read."""

from __future__ import annotations

from typing import Any

import pytest

from kubecore import Pod
from kubecore._http.server import KubeletServer
from kubecore._observability.logs import (
    LogOptions,
    LogRequestError,
    limited,
    log_container_id,
    parse_log_options,
)
from kubecore._util.timefmt import rfc3339
from kubecore.v1 import (
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    ObjectMeta,
    PodSpec,
    PodStatus,
)
from tests.api.support import assert_status, get

Live = tuple[Any, Any, KubeletServer]


def restart_after_crash(kubelet: Any, runtime: Any) -> None:
    (first,) = runtime.list_containers()
    runtime.write_log(first.id, "last words\n")
    runtime.crash(first.id, 1)
    clock = kubelet.clock
    for _ in range(60):
        kubelet.sync_until_converged(max_syncs=20)
        running = [c for c in runtime.list_containers() if c.id != first.id]
        if (
            running
            and kubelet.get_pod("default", "talker").status.container_statuses[0].state.running
        ):
            return
        clock.advance(1)
    raise AssertionError("the container was not restarted")


def test_previous_without_a_terminated_instance_is_a_400_that_says_so(live: Live) -> None:
    _, _, server = live
    response = get(server.url + "/containerLogs/default/talker/main?previous=true")
    assert_status(response, 400, 'previous terminated container "main" in pod "talker" not found')


def test_previous_reads_the_last_terminated_instance(live: Live) -> None:
    kubelet, runtime, server = live
    restart_after_crash(kubelet, runtime)
    base = server.url + "/containerLogs/default/talker/main"
    assert get(base + "?previous=true").text == "hello\nworld\nlast words\n"
    assert get(base).text == "hello\nworld\n"
    assert get(base + "?previous=true&tailLines=1").text == "last words\n"


def test_limit_bytes_and_since(live: Live) -> None:
    kubelet, runtime, server = live
    base = server.url + "/containerLogs/default/talker/main"
    assert get(base + "?limitBytes=3").text == "hel"
    assert get(base + "?limitBytes=100").text == "hello\nworld\n"
    kubelet.clock.advance(100)
    (container,) = runtime.list_containers()
    runtime.write_log(container.id, "late")
    assert get(base + "?sinceSeconds=10").text == "late\n"
    since = rfc3339(kubelet.clock.now() - 10)
    assert get(base + f"?sinceTime={since}").text == "late\n"
    assert get(base + "?sinceSeconds=1000").text == "hello\nworld\nlate\n"
    assert get(base + "?sinceSeconds=10&timestamps=true").text.endswith(" late\n")


@pytest.mark.parametrize(
    "query, says",
    [
        ("sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z", "at most one of"),
        ("sinceSeconds=0", "sinceSeconds"),
        ("sinceTime=yesterday", "sinceTime"),
        ("limitBytes=0", "limitBytes"),
        ("previous=perhaps", "previous"),
    ],
)
def test_bad_queries_are_400s(live: Live, query: str, says: str) -> None:
    _, _, server = live
    assert_status(get(f"{server.url}/containerLogs/default/talker/main?{query}"), 400, says)


def test_the_kubelet_and_the_api_read_the_same_options() -> None:
    options = parse_log_options(
        {"previous": ["true"], "sinceSeconds": ["5"], "limitBytes": ["10"], "tailLines": ["2"]}
    )
    assert options == LogOptions(previous=True, since_seconds=5, limit_bytes=10, tail_lines=2)
    assert options.since(100.0) == 95.0
    with pytest.raises(LogRequestError, match="tailLines"):
        parse_log_options({"tailLines": ["-1"]})


# -- which instance a query reads ------------------------------------------------------------


def pod_with(status: ContainerStatus) -> Pod:
    return Pod(
        ObjectMeta(name="p"),
        PodSpec(containers=(Container(name="c", image="busybox"),)),
        PodStatus(container_statuses=(status,)),
    )


def cs(state: ContainerState, last: ContainerState | None = None, cid: str = "") -> ContainerStatus:
    return ContainerStatus(
        name="c",
        image="busybox",
        state=state,
        last_state=last or ContainerState(),
        container_id=cid,
    )


RUNNING = ContainerState(running=ContainerStateRunning("2024-01-01T00:00:00Z"))
DEAD = ContainerState(terminated=ContainerStateTerminated(1, container_id="fake://old"))


@pytest.mark.parametrize(
    "status, previous, expected",
    [
        (cs(RUNNING, cid="docker://new"), False, "new"),
        (cs(RUNNING, DEAD, cid="docker://new"), True, "old"),
        (cs(DEAD, cid="fake://old"), False, "old"),
        # a container in back-off shows its last instance's log
        (cs(ContainerState(waiting=ContainerStateWaiting("CrashLoopBackOff")), DEAD), False, "old"),
    ],
)
def test_the_instance_read(status: ContainerStatus, previous: bool, expected: str) -> None:
    assert log_container_id(pod_with(status), "c", previous=previous) == expected


@pytest.mark.parametrize(
    "status, previous, says",
    [
        (cs(RUNNING, cid="fake://new"), True, 'previous terminated container "c" in pod "p"'),
        (
            cs(ContainerState(waiting=ContainerStateWaiting("ImagePullBackOff"))),
            False,
            "is waiting to start: trying and failing to pull image",
        ),
        (
            cs(ContainerState(waiting=ContainerStateWaiting("ContainerCreating"))),
            False,
            "is waiting to start: ContainerCreating",
        ),
        (cs(ContainerState()), False, "waiting to start - no logs yet"),
    ],
)
def test_no_instance_to_read_says_why(status: ContainerStatus, previous: bool, says: str) -> None:
    with pytest.raises(LogRequestError, match=says):
        log_container_id(pod_with(status), "c", previous=previous)


def test_limited_cuts_and_closes() -> None:
    closed = []

    def stream() -> Any:
        try:
            yield b"abc\n"
            yield b"def\n"
        finally:
            closed.append(True)

    assert b"".join(limited(stream(), 5)) == b"abc\nd"
    assert closed == [True]
