"""The test containerd for the benchmarks: reach it (or skip), count its CRI calls, run the bare
client that is the floor on this engine, clean up after.

Only the project's own test containerd is used (``scripts/test-containerd.sh up``): its endpoint
comes from ``KUBECORE_TEST_CRI_ENDPOINT`` or the env file ``up`` wrote, never the machine's
``/run/containerd``. Agents here register a second pod source that never reports (as on Docker),
so they never remove pods they did not create: the containerd is shared with the CRI tests.
Everything a benchmark creates is found again (the benchmark's pod namespace, or a label of the
run) and removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from benchmarks import _bare_cri
from benchmarks._bare_cri import BareCri, channel_to
from benchmarks._common import BENCH_LABEL, TERM_LOOP, Skip
from benchmarks._docker import HOLD_SOURCE
from benchmarks._timing import WatchedRuntime
from kubecore import Kubelet, KubeletConfig, Pod
from kubecore.runtime import MANAGED_LABEL, POD_NAMESPACE_LABEL, SystemClock

NAMESPACE = "kubecore-bench-cri"
"""The namespace of every pod a CRI benchmark gives kubecore (cleanup finds them by it)."""
DEFAULT_STATE = "/var/tmp/kubecore-test-containerd"
WORKERS = _bare_cri.THREADS
"""kubecore's pod workers: the bare client's threads (the same parallelism)."""


@attrs.frozen
class Containerd:
    endpoint: str
    """``unix://...`` of the test containerd's CRI."""
    image: str
    """The test image as the CRI names it (``docker.io/kubecore-test/busybox:1.35``)."""
    version: str


def _state_dir() -> Path:
    """Where scripts/test-containerd.sh keeps its containerd (the script's rule)."""
    if explicit := os.environ.get("KUBECORE_TEST_CONTAINERD_STATE"):
        return Path(explicit)
    engine = os.environ.get("KUBECORE_TEST_ENGINE_STATE", "/var/tmp/kubecore-test-engine")
    if engine != "/var/tmp/kubecore-test-engine":
        return Path(f"{engine}-containerd")
    return Path(DEFAULT_STATE)


def _env_file() -> dict[str, str]:
    path = _state_dir() / "env"
    values: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text(encoding="utf-8").splitlines():
            key, _, value = line.removeprefix("export ").partition("=")
            if value:
                values[key.strip()] = value.strip().strip("'\"")
    return values


def _setting(key: str, values: Mapping[str, str]) -> str:
    return os.environ.get(key) or values.get(key, "")


def find_containerd() -> Containerd:
    """The test containerd, or ``Skip`` saying why it cannot be used (fast: nothing waits)."""
    if os.environ.get("KUBECORE_TEST_CRI_ENDPOINT") == "":
        raise Skip("KUBECORE_TEST_CRI_ENDPOINT is empty: no test containerd")
    try:
        import grpc

        from kubecore_cri._pb import api_pb2 as pb
        from kubecore_cri._stubs import IMAGE_SERVICE, RUNTIME_SERVICE, service_stub
    except ImportError as error:
        raise Skip(f"grpcio is not installed: pip install 'kubecore[cri]' ({error})") from error
    values = _env_file()
    endpoint = _setting("KUBECORE_TEST_CRI_ENDPOINT", values)
    if not endpoint:
        raise Skip(
            "no test containerd: KUBECORE_TEST_CRI_ENDPOINT is not set and "
            f"{_state_dir() / 'env'} does not exist (bash scripts/test-containerd.sh up)"
        )
    socket = endpoint.removeprefix("unix://")
    if endpoint.startswith("unix://") and not os.path.exists(socket):
        raise Skip(f"no test containerd: {socket} does not exist")
    image = _setting("KUBECORE_TEST_CRI_IMAGE", values) or "docker.io/kubecore-test/busybox:1.35"
    channel = grpc.insecure_channel(endpoint)
    try:
        stub = service_stub(channel, RUNTIME_SERVICE)
        answer = stub.Version(pb.VersionRequest(version="v1"), timeout=3)
        found = service_stub(channel, IMAGE_SERVICE).ImageStatus(
            pb.ImageStatusRequest(image=pb.ImageSpec(image=image)), timeout=3
        )
    except grpc.RpcError as error:
        raise Skip(f"the test containerd at {endpoint} does not answer ({error.code()})") from None
    finally:
        channel.close()
    if not found.image.id:
        raise Skip(f"the test containerd has no {image} (bash scripts/test-containerd.sh up)")
    return Containerd(
        endpoint=endpoint,
        image=image,
        version=f"{answer.runtime_name} {answer.runtime_version}",
    )


# --- counting ------------------------------------------------------------------------------


class CallCounter:
    """CRI calls by method (``RunPodSandbox``, ``ImageStatus``...), counted by a gRPC client
    interceptor where they leave the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()
        self.total = 0

    def add(self, method: str) -> None:
        name = method.rpartition("/")[2]
        with self._lock:
            self._seen[name] += 1
            self.total += 1

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self._seen)

    def interceptors(self) -> list[Any]:
        import grpc

        counter = self

        class Unary(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
            def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
                counter.add(details.method)
                return continuation(details, request)

        class Stream(grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
            def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
                counter.add(details.method)
                return continuation(details, request)

        return [Unary(), Stream()]


# --- kubecore on the cri plugin ---------------------------------------------------------------


@attrs.frozen
class CriNode:
    kubelet: Kubelet
    counter: CallCounter
    watch: WatchedRuntime


@contextmanager
def cri_node(
    containerd: Containerd, *, workers: int = WORKERS, **config: object
) -> Iterator[CriNode]:
    """An agent on the ``cri`` runtime with a call counter on its channel and a watch on its
    container starts. The runtime is the plugin's (``CriRuntime``, ``CriPuller`` over one
    ``CriConnection``, as ``load_runtime("cri")`` builds them), on a channel of ours so that
    its calls are counted. Stopped (not cleaned) on exit."""
    from kubecore_cri._client import CriConnection, CriOptions
    from kubecore_cri._images import CriPuller
    from kubecore_cri._runtime import CriRuntime
    from kubecore_cri._stubs import IMAGE_SERVICE, RUNTIME_SERVICE, service_stub

    counter = CallCounter()
    channel = channel_to(containerd.endpoint, counter.interceptors())
    root = tempfile.mkdtemp(prefix="kubecore-bench-cri-")
    stubs = {
        "runtime": service_stub(channel, RUNTIME_SERVICE),
        "image": service_stub(channel, IMAGE_SERVICE),
    }
    options = CriOptions(endpoint=containerd.endpoint, log_root=os.path.join(root, "pods"))
    connection = CriConnection(options, stubs=stubs)
    runtime = CriRuntime(connection)
    watch = WatchedRuntime(runtime)
    kubelet = Kubelet(
        watch.proxy(),
        CriPuller(connection),
        config=KubeletConfig(root_dir=root, workers=workers, **config),  # type: ignore[arg-type]
        clock=SystemClock(),
        sources=("bench", HOLD_SOURCE),
    )
    try:
        yield CriNode(kubelet, counter, watch)
    finally:
        kubelet.stop()
        kubelet.close()
        runtime.close()
        channel.close()
        shutil.rmtree(root, ignore_errors=True)


# --- the bare client: the floor ---------------------------------------------------------------


def start_bare(containerd: Containerd, pods: Sequence[Pod], run_label: str) -> float:
    """Seconds for the bare client (``_bare_cri``) to start ``pods`` and see them running."""
    client = BareCri(containerd.endpoint)
    labels = {BENCH_LABEL: run_label}
    try:
        client.running(labels)  # the channel is connected before the clock starts
        t0 = time.perf_counter()
        seen = client.start_pods(
            [p.metadata.name for p in pods], containerd.image, TERM_LOOP, labels
        )
        seconds = time.perf_counter() - t0
    finally:
        client.close()
    if seen < len(pods):
        raise RuntimeError(f"the bare CRI client sees {seen}/{len(pods)} containers running")
    return seconds


def bare_command(containerd: Containerd, run_label: str, prefix: str, count: int) -> list[str]:
    """The bare client as a process of its own: the floor of ``kubecore run --once``."""
    return [
        sys.executable,
        _bare_cri.__file__,
        containerd.endpoint,
        containerd.image,
        f"{BENCH_LABEL}={run_label}",
        prefix,
        str(count),
        *TERM_LOOP,
    ]


# --- cleanup -----------------------------------------------------------------------------------


def remove_sandboxes(endpoint: str, wanted: Callable[[Mapping[str, str]], bool]) -> int:
    """Stop and remove every pod sandbox (with its containers) whose labels are ``wanted``; how
    many."""
    from kubecore_cri._pb import api_pb2 as pb

    client = BareCri(endpoint)
    try:
        listed = client.runtime.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=30).items
        ids = [item.id for item in listed if wanted(item.labels)]

        def remove(sandbox_id: str) -> None:
            # Gone already, or being removed by its agent: either way it goes.
            with contextlib.suppress(Exception):
                request = pb.StopPodSandboxRequest(pod_sandbox_id=sandbox_id)
                client.runtime.StopPodSandbox(request, timeout=60)
            with contextlib.suppress(Exception):
                request = pb.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id)
                client.runtime.RemovePodSandbox(request, timeout=60)

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            list(pool.map(remove, ids))
        return len(ids)
    finally:
        client.close()


def cleanup(containerd: Containerd, run_label: str | None = None) -> int:
    """Remove kubecore's pods of the benchmark namespace and the bare client's of ``run_label``
    (of every run when None)."""

    def ours(labels: Mapping[str, str]) -> bool:
        if labels.get(MANAGED_LABEL) == "true" and labels.get(POD_NAMESPACE_LABEL) == NAMESPACE:
            return True
        return BENCH_LABEL in labels and run_label in (None, labels[BENCH_LABEL])

    return remove_sandboxes(containerd.endpoint, ours)


def foreign_agents_note(containerd: Containerd) -> str | None:
    """A warning when kubecore sandboxes of other namespaces run on this containerd: another
    agent (the CRI tests) shares it, and its load disturbs the figures."""
    from kubecore_cri._pb import api_pb2 as pb

    client = BareCri(containerd.endpoint)
    try:
        listed = client.runtime.ListPodSandbox(
            pb.ListPodSandboxRequest(
                filter=pb.PodSandboxFilter(label_selector={MANAGED_LABEL: "true"})
            ),
            timeout=30,
        ).items
    finally:
        client.close()
    foreign = [s for s in listed if s.labels.get(POD_NAMESPACE_LABEL) != NAMESPACE]
    if not foreign:
        return None
    return (
        f"{len(foreign)} sandboxes of another kubecore agent share this containerd: the CRI"
        " figures may be disturbed"
    )
