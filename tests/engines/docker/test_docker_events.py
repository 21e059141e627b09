"""The engine's event stream through DockerRuntime.watch_events, on a real engine."""

from __future__ import annotations

import queue
import time
from typing import Any

import pytest

from kubecore._contract.values import RuntimeEvent, RuntimeEventType
from kubecore_docker import DockerRuntime, EventWatcher
from tests.engines.docker.conftest import ContainerFactory, SandboxFactory, TestEngine
from tests.engines.docker.helpers import OOM_HOG, run_pod, wait_for

pytestmark = pytest.mark.docker


class Collector:
    def __init__(self) -> None:
        self.events: queue.Queue[RuntimeEvent] = queue.Queue()
        self.seen: list[RuntimeEvent] = []

    def __call__(self, event: RuntimeEvent) -> None:
        self.events.put(event)

    def for_container(
        self, container_id: str, until: RuntimeEventType, timeout: float = 10.0
    ) -> list[RuntimeEvent]:
        """Collect events until ``until`` arrives for the container (bounded)."""
        deadline = time.monotonic() + timeout
        while not any(e.container_id == container_id and e.type is until for e in self.seen):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"no {until} event for {container_id[:12]}; got {self.seen}")
            try:
                self.seen.append(self.events.get(timeout=remaining))
            except queue.Empty:
                continue
        return [e for e in self.seen if e.container_id == container_id]


def watch(runtime: DockerRuntime) -> tuple[Collector, EventWatcher]:
    collector = Collector()
    watcher = runtime.watch_events(collector)
    assert isinstance(watcher, EventWatcher)
    assert watcher.wait_connected(10)
    return collector, watcher


def test_lifecycle_events(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    collector, watcher = watch(runtime)
    sandbox_id, (cid,) = run_pod(
        runtime, make_sandbox, make_container("quitter", command=("sh", "-c", "exit 3"))
    )
    events = collector.for_container(cid, RuntimeEventType.DIED)
    kinds = [e.type for e in events]
    assert kinds[:3] == [RuntimeEventType.CREATED, RuntimeEventType.STARTED, RuntimeEventType.DIED]
    died = events[2]
    assert died.exit_code == 3
    assert died.container_name == "quitter"
    assert died.pod_uid == runtime.container_status(cid).labels["io.kubernetes.pod.uid"]
    assert died.timestamp > time.time() - 60
    runtime.remove_container(cid)
    assert collector.for_container(cid, RuntimeEventType.DELETED)[-1].exit_code is None
    sandbox_events = collector.for_container(sandbox_id, RuntimeEventType.STARTED)
    assert sandbox_events[-1].container_name == "POD"
    watcher.close()


def test_oom_then_die(
    runtime: DockerRuntime,
    make_sandbox: SandboxFactory,
    make_container: ContainerFactory,
    raw: Any,
) -> None:
    if not raw.info().get("MemoryLimit", False):
        pytest.skip("this engine cannot enforce memory limits")
    collector, watcher = watch(runtime)
    _, (cid,) = run_pod(
        runtime, make_sandbox, make_container(command=OOM_HOG, memory_limit=16 * 1024 * 1024)
    )
    kinds = [e.type for e in collector.for_container(cid, RuntimeEventType.DIED)]
    assert RuntimeEventType.OOM in kinds
    assert kinds.index(RuntimeEventType.OOM) < kinds.index(RuntimeEventType.DIED)
    watcher.close()


def test_only_managed_containers_are_reported(
    runtime: DockerRuntime, raw: Any, cleanup: str, engine: TestEngine
) -> None:
    collector, watcher = watch(runtime)
    key, _, value = cleanup.partition("=")
    foreign = raw.create_container(engine.image, command=["true"], labels={key: value})["Id"]
    raw.start(foreign)
    wait_for(lambda: raw.inspect_container(foreign)["State"]["Status"] == "exited", 10)
    time.sleep(0.3)
    while not collector.events.empty():
        collector.seen.append(collector.events.get())
    assert all(e.container_id != foreign for e in collector.seen)
    watcher.close()


def test_resubscribes_after_a_disconnect_without_repeats(
    runtime: DockerRuntime, make_sandbox: SandboxFactory, make_container: ContainerFactory
) -> None:
    collector, watcher = watch(runtime)
    _, (first,) = run_pod(runtime, make_sandbox, make_container("a", command=("true",)))
    collector.for_container(first, RuntimeEventType.DIED)
    watcher.interrupt()
    wait_for(lambda: watcher.reconnects >= 1, 10, what="a resubscription")
    _, (second,) = run_pod(runtime, make_sandbox, make_container("b", command=("true",)))
    collector.for_container(second, RuntimeEventType.DIED)
    time.sleep(0.3)
    while not collector.events.empty():
        collector.seen.append(collector.events.get())
    firsts = [(e.type, e.timestamp) for e in collector.seen if e.container_id == first]
    assert len(firsts) == len(set(firsts)), "events before the disconnect are not delivered twice"
    assert watcher.alive
    watcher.close()


def test_close_ends_the_stream(runtime: DockerRuntime) -> None:
    _, watcher = watch(runtime)
    started = time.monotonic()
    watcher.close()
    assert not watcher.alive
    assert time.monotonic() - started < 5


def test_runtime_close_closes_its_watchers(connection: Any, cleanup: str) -> None:
    runtime = DockerRuntime(connection)
    _, watcher = watch(runtime)
    runtime.close()
    assert not watcher.alive
