"""A Docker engine for the benchmarks: reach it (or skip), count its requests, clean up after.

Agents here register a second pod source that never reports, so "sources ready" never holds and
they never delete pods they did not create: the engine may be shared with tests running at the
same moment. Everything a benchmark creates is found again by a label and removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, cast

import attrs
import requests
import requests.adapters

from benchmarks._common import BENCH_LABEL, TEST_IMAGE, Skip
from benchmarks._timing import WatchedRuntime
from kubecore import Kubelet, KubeletConfig, load_runtime
from kubecore.runtime import MANAGED_LABEL, POD_NAMESPACE_LABEL, SystemClock
from kubecore_docker import DockerRuntime

PAUSE_IMAGE = os.environ.get("KUBECORE_TEST_PAUSE_IMAGE") or "kubecore-test/pause:3.9"
NAMESPACE = "kubecore-bench"
"""The namespace of every pod a Docker benchmark gives kubecore (cleanup filters on it)."""
HOLD_SOURCE = "bench-hold"


def base_url() -> str:
    return (
        os.environ.get("KUBECORE_DOCKER_HOST")
        or os.environ.get("DOCKER_HOST")
        or "unix:///var/tmp/kubecore-test-engine/docker.sock"
    )


def engine_client(timeout: float = 60.0, pool: int = 16) -> Any:
    """A docker-py APIClient, or ``Skip`` when no engine answers or the test image is missing."""
    try:
        import docker
    except ImportError as error:
        raise Skip(f"docker-py is not installed ({error})") from error
    try:
        client = docker.APIClient(
            base_url=base_url(), version="auto", timeout=timeout, max_pool_size=pool
        )
        client.ping()
    except Exception as error:
        raise Skip(f"no Docker engine answers at {base_url()} ({type(error).__name__})") from error
    for image in (TEST_IMAGE, PAUSE_IMAGE):
        try:
            client.inspect_image(image)
        except Exception as error:
            client.close()
            raise Skip(
                f"image {image} is missing from the engine (run scripts/test-engine.sh up)"
            ) from error
    return client


class CountingAdapter(requests.adapters.BaseAdapter):
    """Wraps a transport adapter and counts every request sent through it."""

    def __init__(self, inner: requests.adapters.BaseAdapter, counter: RequestCounter) -> None:
        super().__init__()
        self._inner = inner
        self._counter = counter

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        self._counter.add(request)
        return self._inner.send(request, *args, **kwargs)

    def close(self) -> None:
        self._inner.close()


class RequestCounter:
    """Requests seen at a docker-py client's transport, by ``METHOD /path`` (version stripped)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()
        self.total = 0

    def add(self, request: requests.PreparedRequest) -> None:
        path = (request.path_url or "").split("?", 1)[0]
        parts = path.split("/")
        # /v1.41/containers/<id>/json -> /containers/{id}/json
        if len(parts) > 1 and parts[1].startswith("v1."):
            parts = ["", *parts[2:]]
        if len(parts) > 2 and parts[1] == "containers" and parts[2] not in ("json", "create"):
            parts[2] = "{id}"
        key = f"{request.method} {'/'.join(parts)}"
        with self._lock:
            self._seen[key] += 1
            self.total += 1

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self._seen)

    def mount_on(self, client: Any) -> None:
        for prefix, adapter in list(client.adapters.items()):
            if not isinstance(adapter, CountingAdapter):
                client.mount(prefix, CountingAdapter(adapter, self))


@attrs.frozen
class DockerNode:
    kubelet: Kubelet
    runtime: DockerRuntime
    counter: RequestCounter
    watch: WatchedRuntime


@contextmanager
def docker_node(*, workers: int = 8, **config: object) -> Iterator[DockerNode]:
    """An agent on the docker runtime plugin with a request counter on its client's transport and
    a watch on its container starts. Stopped (not cleaned) on exit."""
    bundle = load_runtime(
        "docker",
        base_url=base_url(),
        max_pool_size=max(16, 2 * workers),
        sandbox_image=PAUSE_IMAGE,
    )
    runtime = cast(DockerRuntime, bundle.runtime)
    counter = RequestCounter()
    counter.mount_on(runtime.connection.api())
    watch = WatchedRuntime(runtime)
    root = tempfile.mkdtemp(prefix="kubecore-bench-docker-")
    kubelet = Kubelet(
        watch.proxy(),
        bundle.puller,
        config=KubeletConfig(root_dir=root, workers=workers, **config),  # type: ignore[arg-type]
        clock=SystemClock(),
        sources=("bench", HOLD_SOURCE),
    )
    try:
        yield DockerNode(kubelet, runtime, counter, watch)
    finally:
        kubelet.stop()
        kubelet.close()
        runtime.close()
        shutil.rmtree(root, ignore_errors=True)


def converge(kubelet: Kubelet, deadline: float, *, pause: float = 0.2) -> bool:
    """Sync in the caller's thread until a pass does nothing (bounded by ``deadline`` seconds)."""
    end = time.monotonic() + deadline
    for _ in range(1000):
        if kubelet.sync().converged:
            return True
        if time.monotonic() > end:
            return False
        time.sleep(pause)
    return False


def running_app_containers(client: Any, namespace: str = NAMESPACE) -> int:
    listed = client.containers(
        filters={"label": [MANAGED_LABEL, f"{POD_NAMESPACE_LABEL}={namespace}"]}
    )
    return sum(
        1
        for c in listed
        if c.get("Labels", {}).get("io.kubernetes.container.name") not in (None, "POD")
    )


def remove_labelled(client: Any, labels: Sequence[str], workers: int = 8) -> int:
    """Force-remove every container (running or not) carrying all ``labels``; how many."""
    ids = [c["Id"] for c in client.containers(all=True, filters={"label": list(labels)})]

    def remove(container_id: str) -> None:
        # Already gone, or its removal already in progress: either way it goes.
        with contextlib.suppress(Exception):
            client.remove_container(container_id, force=True, v=True)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(remove, ids))
    return len(ids)


def cleanup(client: Any, run_label: str | None = None) -> int:
    """Remove the kubecore pods of the benchmark namespace and our own labelled containers."""
    removed = remove_labelled(client, [MANAGED_LABEL, f"{POD_NAMESPACE_LABEL}={NAMESPACE}"])
    removed += remove_labelled(client, [f"{BENCH_LABEL}={run_label}" if run_label else BENCH_LABEL])
    return removed


def foreign_agents_note(client: Any) -> str | None:
    """A warning when kubecore-managed containers of other namespaces run on this engine: another
    agent (tests?) shares it and may remove our pods (an agent removes every managed pod it does
    not want once its sources are ready), which disturbs the figures."""
    listed = client.containers(all=True, filters={"label": [MANAGED_LABEL]})
    foreign = [c for c in listed if c.get("Labels", {}).get(POD_NAMESPACE_LABEL) != NAMESPACE]
    if not foreign:
        return None
    return (
        f"{len(foreign)} containers of another kubecore agent share this engine: it may remove"
        " this benchmark's pods, so the Docker figures may be disturbed"
    )
