"""Engine requests per sync, counted at the HTTP transport: a steady-state snapshot costs one
request however many pods run (the benchmark of requests per sync relies on it)."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import pytest

from kubecore._contract.values import RuntimeState
from kubecore_docker import DockerConnection, DockerOptions, DockerRuntime
from tests.engines.docker.conftest import ContainerFactory, SandboxFactory
from tests.engines.docker.helpers import run_pod, wait_for

# Serial: a snapshot lists every managed container on the engine, and the counts hold only
# while no other test changes one.
pytestmark = [pytest.mark.docker, pytest.mark.serial]


class CountingClient:
    """A docker-py client whose every HTTP response is counted by a requests session hook."""

    def __init__(self, options: DockerOptions) -> None:
        import docker

        self.client = docker.APIClient(
            base_url=options.base_url, version="auto", timeout=options.timeout
        )
        self.paths: collections.Counter[str] = collections.Counter()
        self.client.hooks["response"].append(self._count)

    def _count(self, response: Any, *args: Any, **kwargs: Any) -> None:
        method = response.request.method
        path = response.request.path_url.split("?")[0]
        # /v1.41/containers/<id>/json -> GET /containers/{id}/json
        parts = path.split("/")[2:]
        if len(parts) >= 3 and parts[0] == "containers" and parts[1] != "json":
            parts[1] = "{id}"
        self.paths[f"{method} /{'/'.join(parts)}"] += 1

    def take(self) -> collections.Counter[str]:
        counted, self.paths = self.paths, collections.Counter()
        return counted


@pytest.fixture
def counting(options: DockerOptions) -> Iterator[CountingClient]:
    counter = CountingClient(options)
    yield counter
    counter.client.close()


@pytest.fixture
def counted_runtime(
    counting: CountingClient, options: DockerOptions, cleanup: str
) -> Iterator[DockerRuntime]:
    runtime = DockerRuntime(DockerConnection(options, client=counting.client))
    yield runtime
    runtime.close()


def steady_state_requests(runtime: DockerRuntime, counting: CountingClient) -> int:
    runtime.snapshot()  # warms the cache
    counting.take()
    runtime.snapshot()
    runtime.snapshot()
    counted = counting.take()
    assert set(counted) == {"GET /containers/json"}, counted
    return sum(counted.values()) // 2


def test_requests_per_snapshot_do_not_grow_with_pods(
    counted_runtime: DockerRuntime,
    counting: CountingClient,
    make_sandbox: SandboxFactory,
    make_container: ContainerFactory,
) -> None:
    runtime = counted_runtime
    run_pod(runtime, make_sandbox, make_container())
    counting.take()
    # The first look at a new container inspects it once (its start time is not in the list);
    # other managed containers on the engine (left by other tests) are inspected once too.
    runtime.snapshot()
    first = counting.take()
    assert first["GET /containers/json"] == 1
    assert first["GET /containers/{id}/json"] >= 1
    one_pod = steady_state_requests(runtime, counting)

    for _ in range(4):
        run_pod(runtime, make_sandbox, make_container(), make_container("second"))
    five_pods = steady_state_requests(runtime, counting)
    assert one_pod == five_pods == 1


def test_a_state_change_costs_one_inspect(
    counted_runtime: DockerRuntime,
    counting: CountingClient,
    make_sandbox: SandboxFactory,
    make_container: ContainerFactory,
) -> None:
    runtime = counted_runtime
    _, (quick, _) = run_pod(
        runtime,
        make_sandbox,
        make_container("quick", command=("sh", "-c", "sleep 0.3")),
        make_container("slow"),
    )
    steady_state_requests(runtime, counting)
    wait_for(lambda: runtime.container_status(quick).state is RuntimeState.EXITED, 10, what="exit")
    counting.take()
    snap = runtime.snapshot()
    assert counting.take() == {"GET /containers/json": 1, "GET /containers/{id}/json": 1}
    (exited,) = [c for c in snap.containers if c.id == quick]
    assert (exited.state, exited.exit_code, exited.reason) == (RuntimeState.EXITED, 0, "Completed")
    assert steady_state_requests(runtime, counting) == 1
