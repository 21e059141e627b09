"""The prober: runs the probes that are due, inline or on its own threads off the sync path.

The schedule (per container and probe type) and the results cache live in ``ProbeManager``. Each
pass asks the prober to start what is due. Inline (``Kubelet.sync``) the probes run in the
caller's thread and the pass plans with their results: deterministic in virtual time. In the
background loop they run on the prober's own pool; the pass does not wait for them, a probe still
running is not started again, and a result that changes a container's state is posted to the
pod (``on_change``) so that its worker plans again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from kubecore._contract.observed import PodEntry, newest_sandbox
from kubecore._contract.values import ProbeResult, RuntimeState, SandboxState
from kubecore._model.v1 import Pod
from kubecore._observability.metrics import Metrics
from kubecore._prober.manager import ProbeJob, ProbeManager

logger = logging.getLogger(__name__)


def probe_ip(pod: Pod, sandbox_ip: str, host_ip: Callable[[], str]) -> str:
    """Where a probe that names no host goes: the pod's IP. A host-network pod's IP is the
    node's (its sandbox has no address of its own on Docker)."""
    if pod.spec.host_network:
        return host_ip() or sandbox_ip
    return sandbox_ip


def _due(
    manager: ProbeManager, pod: Pod, entry: PodEntry, now: float, host_ip: Callable[[], str]
) -> list[ProbeJob]:
    running = [c for c in entry.containers if c.state is RuntimeState.RUNNING]
    ready = tuple(s for s in entry.sandboxes if s.state is SandboxState.READY)
    sandbox = newest_sandbox(ready)
    sandbox_ip = sandbox.ip if sandbox is not None else ""
    return manager.due(pod, running, probe_ip(pod, sandbox_ip, host_ip), now)


class Prober:
    def __init__(
        self,
        manager: ProbeManager,
        metrics: Metrics,
        *,
        now: Callable[[], float],
        max_workers: int,
        on_change: Callable[[str], None],
        monotonic: Callable[[], float] = time.monotonic,
        host_ip: str = "",
    ) -> None:
        """``host_ip``: the node's IP (``kubecore._util.host.node_ip``), where host-network
        pods are probed."""
        self.manager = manager
        self._metrics = metrics
        self._now = now
        self._monotonic = monotonic
        self._max_workers = max_workers
        self._on_change = on_change
        self._lock = threading.Lock()
        self._record_lock = threading.Lock()
        """A result is recorded, or a pod forgotten, one at a time: a probe answering as its pod
        leaves records nothing."""
        self._in_flight: set[tuple[str, str]] = set()
        """(container id, probe kind) of the probes running on the pool."""
        self._pool: ThreadPoolExecutor | None = None
        self._host_ip = host_ip

    def host_ip(self) -> str:
        """The node's IP, where host-network pods are probed."""
        return self._host_ip

    def run_due(
        self, pods: Iterable[tuple[Pod, PodEntry | None]], now: float, *, inline: bool
    ) -> set[str]:
        """Start the probes of ``pods`` that are due. Inline: run them now and return the UIDs
        whose probe states changed. Otherwise: hand them to the pool and return nothing (a
        change is posted through ``on_change`` when the result comes)."""
        jobs: list[tuple[Pod, ProbeJob]] = []
        for pod, entry in pods:
            if entry is None:
                self.manager.forget(pod.uid)
                continue
            jobs.extend((pod, job) for job in _due(self.manager, pod, entry, now, self.host_ip))
        if not jobs:
            return set()
        if inline:
            changed: set[str] = set()
            for pod, job in jobs:
                if self._record(pod, job, self._run(job), now):
                    changed.add(pod.uid)
            return changed
        for pod, job in jobs:
            self._submit(pod, job)
        return set()

    def _submit(self, pod: Pod, job: ProbeJob) -> None:
        key = (job.container_id, job.kind)
        with self._lock:
            if key in self._in_flight:
                return  # the last one has not answered yet: its schedule waits for it
            self._in_flight.add(key)
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix="kubecore-probe"
                )
            pool = self._pool
        try:
            future = pool.submit(self._run, job)
        except RuntimeError:  # shut down meanwhile
            with self._lock:
                self._in_flight.discard(key)
            return
        future.add_done_callback(lambda done: self._finish(pod, job, key, done))

    def _finish(
        self,
        pod: Pod,
        job: ProbeJob,
        key: tuple[str, str],
        done: Future[tuple[ProbeResult, float]],
    ) -> None:
        with self._lock:
            self._in_flight.discard(key)
        if done.cancelled():
            return
        try:
            if self._record(pod, job, done.result(), self._now()):
                self._on_change(pod.uid)
        except Exception:
            logger.exception("recording the %s probe of %s failed", job.kind, job.container_id)

    def _run(self, job: ProbeJob) -> tuple[ProbeResult, float]:
        """The probe's result and the seconds it took."""
        started = self._monotonic()
        result = self.manager.run(job)
        return result, self._monotonic() - started

    def _record(
        self, pod: Pod, job: ProbeJob, timed: tuple[ProbeResult, float], now: float
    ) -> bool:
        result, took = timed
        meta = pod.metadata
        with self._record_lock:
            if not self.manager.knows(job):
                return False  # the pod or container left while the probe ran
            self._metrics.record_probe(
                kind=job.kind,
                outcome=result.outcome.value,
                container=job.container_name,
                pod=meta.name,
                namespace=meta.namespace,
                pod_uid=pod.uid,
                duration=took,
            )
            return self.manager.record(pod, job, result, now)

    def forget(self, uid: str) -> None:
        """A pod left: its probes, their results and their metric series go."""
        with self._record_lock:
            self.manager.forget(uid)
            self._metrics.forget_pod(uid)

    def shutdown(self) -> None:
        """Stop the pool without waiting for probes still running (they time out on their own)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
