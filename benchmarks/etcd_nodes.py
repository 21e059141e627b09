"""8. Many nodes fed from etcd: agents on the in-memory runtime, each with its ``EtcdSource`` (a
watch on its own node's prefix) and ``EtcdStatusSink`` (status keys, node key on a lease), in one
process against the real 3-member test cluster (``scripts/test-etcd.sh up``), sharing one etcd
client the way a cluster simulator would. Skipped when ``KUBECORE_TEST_ETCD_ENDPOINTS`` is unset.

The agents are driven round-robin in one thread (drain the source, one pass, advance the node's
virtual clock 1 s; then one status round per node), as in ``many_nodes``.

* **Convergence**: from every pod written to etcd (a plain client, 64 puts in flight) until every
  agent's status keys say Running. Baselines: the raw write time of the same number of keys by
  a plain client (the floor of writing that many statuses), and the same agents fed the same pods
  in-process with no etcd (what etcd costs).
* **Steady state**: etcd requests and writes per node per minute with nothing changing (target:
  only the node lease's keep-alives, one per 10 s).
* **Reaction**: a pod key written to its containers running on that node (median; p99 in notes).
* **Memory**: RSS growth per node while the etcd-fed agents are built and converge.
* **Events**: each agent's events go to etcd through its ``EtcdEventRecorder`` (flushed once a
  round); events dropped (target 0).

Like a simulator of a thousand nodes, the process sets its garbage collector for their heaps
while they converge (``simulator_gc``), for the in-process baseline too, and notes the time it
still takes.

The full mode runs 100 nodes x 110 pods; ``KUBECORE_BENCH_ETCD_NODES=1000x100`` runs another
count (the time budget grows with it). The agents' root directories (pod directories, hosts and
termination-message files) are on tmpfs (``/dev/shm``) when the machine has one, as a many-node
simulator would put them: on this machine's disk a ``mkdir`` costs 0.1-0.3 ms, and those files,
not the agent's logic, then decide the convergence time.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Any

import attrs

from benchmarks._common import Context, Row, Skip, fmt_value
from benchmarks._fake import SOURCE, FakeNode, fake_node, fake_pods
from benchmarks.many_nodes import rss_bytes
from kubecore import Pod
from kubecore.manifest import pod_to_dict
from kubecore.testing import ManualClock

NAME = "etcd_nodes"
PODS_PER_SECOND_TARGET = 800.0
"""The issue's target: 100,000 pods Running within 120 s."""
IN_FLIGHT = 64
MAX_ROUNDS = 200
WRITER_THREADS = 16
"""Threads the agents' status sinks and event recorders write from (see ``round_robin``)."""
SCALE_ENV = "KUBECORE_BENCH_ETCD_NODES"
"""``<nodes>x<pods per node>``: the count of a full-mode run (default ``100x110``)."""
SECONDS_PER_POD = 0.01
"""Budget of a run of another count: 10 ms per pod (1,000 x 100: 1,000 s), at least the default."""
HOST_FILES_TMPFS = "/dev/shm"
CALL_LOG = 100
"""Calls each fake runtime keeps in its log (a test's record; the default keeps 100,000)."""
GC_THRESHOLDS = (10_000, 50, 100)
"""The cyclic collector's thresholds while the agents converge (CPython's: 700, 10, 10)."""


@attrs.define
class GcTime:
    """Seconds spent in the cyclic garbage collector, and full collections, while counted."""

    seconds: float = 0.0
    full: int = 0
    _started: float = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self.seconds += time.perf_counter() - self._started
        self.full += info["generation"] == 2


@contextmanager
def simulator_gc() -> Iterator[GcTime]:
    """The garbage collector set for a process that holds a thousand agents (gigabytes of
    objects, where one agent's process holds megabytes): what exists is frozen out of the
    collections (the benchmark's inputs, the idle agents) and the thresholds raised, so that
    a full collection does not scan every agent's objects each time the heap grows by a
    quarter (with CPython's thresholds they took 9 of the 43 s the rounds of a 300-node
    convergence lasted). Objects made meanwhile are collected as usual. Yields the time
    spent collecting."""
    timer = GcTime()
    thresholds = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.callbacks.append(timer)
    try:
        yield timer
    finally:
        gc.callbacks.remove(timer)
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def scale(quick: bool) -> tuple[int, int]:
    """(nodes, pods per node): ``KUBECORE_BENCH_ETCD_NODES`` when set, else the mode's count."""
    text = os.environ.get(SCALE_ENV, "").strip()
    if not text:
        return (4, 20) if quick else (100, 110)
    nodes, sep, per_node = text.lower().partition("x")
    if not sep or not nodes.isdigit() or not per_node.isdigit() or "0" in (nodes, per_node):
        raise ValueError(f"{SCALE_ENV}={text!r}: expected <nodes>x<pods per node>, e.g. 1000x100")
    return int(nodes), int(per_node)


def root_parent() -> str | None:
    """Where the agents' root directories go: tmpfs when there is one (see the module doc)."""
    tmpfs = HOST_FILES_TMPFS
    return tmpfs if os.path.isdir(tmpfs) and os.access(tmpfs, os.W_OK) else None


def endpoints() -> str:
    text = os.environ.get("KUBECORE_TEST_ETCD_ENDPOINTS", "")
    if not text:
        raise Skip("no etcd cluster: KUBECORE_TEST_ETCD_ENDPOINTS is unset (scripts/test-etcd.sh)")
    try:
        import aetcd  # noqa: F401
    except ImportError:
        raise Skip("the etcd extra is not installed (pip install .[etcd])") from None
    return text


def put_all(client: Any, items: Sequence[tuple[str, bytes]], timeout: float) -> float:
    """Write every key (``IN_FLIGHT`` puts at a time) with the plain aetcd client; seconds."""

    async def write() -> None:
        etcd = await client.current()
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def put(key: str, value: bytes) -> None:
            async with gate:
                await etcd.put(key.encode(), value)

        await asyncio.gather(*(put(key, value) for key, value in items))

    t0 = time.perf_counter()
    client.spawn(write()).result(timeout)
    return time.perf_counter() - t0


@attrs.define
class EtcdAgent:
    node: FakeNode
    name: str
    source: Any
    sink: Any
    events: Any

    def step(self) -> None:
        while (update := self.source.poll(0.0)) is not None:
            self.node.kubelet.update(update)
        self.node.kubelet.sync()
        assert isinstance(self.node.clock, ManualClock)
        self.node.clock.advance(1.0)

    def all_running(self, expected: int) -> bool:
        pods = self.node.kubelet.pods()
        return len(pods) == expected and all(
            p.status is not None and p.status.phase == "Running" for p in pods
        )


def build_agents(
    stack: ExitStack, client: Any, prefix: str, count: int, per_node: int
) -> list[EtcdAgent]:
    from kubecore_etcd import EtcdEventRecorder, EtcdSource, EtcdStatusSink

    agents = []
    parent = root_parent()
    for i in range(count):
        name = f"node-{i:04d}"
        events = EtcdEventRecorder(client, name, prefix=prefix)
        node = stack.enter_context(
            fake_node(
                node_name=name,
                max_pods=per_node + 10,
                root_parent=parent,
                recorder=events,
                max_calls=CALL_LOG,
            )
        )
        source = EtcdSource(client, name, prefix=prefix)
        node.kubelet.register_source(source.name)
        sink = EtcdStatusSink(node.kubelet, client, name, prefix=prefix, revoke_on_close=False)
        source.start()
        stack.callback(source.close)
        agents.append(EtcdAgent(node, name, source, sink, events))
    return agents


def write_back(agent: EtcdAgent) -> None:
    agent.sink.sync_once()
    agent.events.flush()


def round_robin(agents: Sequence[EtcdAgent], pool: Executor) -> None:
    """One step of every agent, then every agent's status and event writes on ``pool``, so
    that the agents' etcd round trips overlap (each real agent writes from threads of its own
    while it syncs)."""
    for agent in agents:
        agent.step()
    for _ in pool.map(write_back, agents):
        pass


def converge(
    agents: Sequence[EtcdAgent], pool: Executor, per_node: int, deadline: float
) -> tuple[bool, int]:
    """Rounds until every agent runs its pods and has written every status; (ok, rounds)."""
    end = time.monotonic() + deadline
    for rounds in range(1, MAX_ROUNDS + 1):
        round_robin(agents, pool)
        if all(a.sink.pending == 0 and a.all_running(per_node) for a in agents):
            return True, rounds
        if time.monotonic() > end:
            break
    return False, MAX_ROUNDS


def running_statuses(client: Any, prefix: str, nodes: Sequence[str]) -> int:
    """Status keys saying Running, read node by node (one read of all of them would pass
    gRPC's 64 MB message limit at 100,000 pods)."""
    from kubecore_etcd import status_prefix

    running = 0
    for node in nodes:
        values, _ = client.get_prefix(status_prefix(prefix, node))
        running += sum(1 for v in values.values() if json.loads(v)["status"]["phase"] == "Running")
    return running


def converge_in_process(count: int, per_node: int, deadline: float) -> tuple[float, GcTime]:
    """The same agents fed the same pods with ``set_pods`` (no etcd): seconds to converge,
    and the time the garbage collector took meanwhile."""
    with ExitStack() as stack:
        parent = root_parent()
        nodes = [
            stack.enter_context(
                fake_node(
                    node_name=f"plain-{i:04d}",
                    max_pods=per_node + 10,
                    root_parent=parent,
                    max_calls=CALL_LOG,
                )
            )
            for i in range(count)
        ]
        for i, node in enumerate(nodes):
            node.kubelet.set_pods(fake_pods(per_node, prefix=f"n{i:04d}"), source=SOURCE)
        with simulator_gc() as gc_time:
            t0 = time.perf_counter()
            end = time.monotonic() + deadline
            pending = list(nodes)
            while pending and time.monotonic() < end:
                pending = [n for n in pending if not n.kubelet.sync().converged]
                for node in nodes:
                    assert isinstance(node.clock, ManualClock)
                    node.clock.advance(1.0)
            return time.perf_counter() - t0, gc_time


def pod_items(prefix: str, name: str, pods: Sequence[Pod]) -> list[tuple[str, bytes]]:
    from kubecore_etcd import encode_json, pod_key

    return [
        (pod_key(prefix, name, p.metadata.namespace, p.metadata.name), encode_json(pod_to_dict(p)))
        for p in pods
    ]


def measure_reaction(
    client: Any,
    prefix: str,
    agents: Sequence[EtcdAgent],
    pool: Executor,
    samples: int,
    deadline: float,
) -> list[float]:
    from kubecore_etcd import encode_json, pod_key

    times: list[float] = []
    end = time.monotonic() + deadline
    for i in range(samples):
        agent = agents[i % len(agents)]
        (pod,) = fake_pods(1, prefix=f"react-{i}")
        key = pod_key(prefix, agent.name, pod.metadata.namespace, pod.metadata.name)
        t0 = time.perf_counter()
        client.put(key, encode_json(pod_to_dict(pod)))
        while not agent.node.runtime.find_containers(pod_name=pod.metadata.name):
            round_robin(agents, pool)
            if time.monotonic() > end:
                return times
        times.append(time.perf_counter() - t0)
    return times


def run(ctx: Context) -> list[Row]:
    from kubecore_etcd import (
        DEFAULT_LEASE_REFRESH,
        EtcdClient,
        EtcdConfig,
        EtcdUnavailable,
        parse_endpoints,
    )

    count, per_node = scale(ctx.quick)
    if os.environ.get(SCALE_ENV, "").strip():
        ctx.command = f"{SCALE_ENV}={count}x{per_node} {ctx.command}"
        ctx.budget = max(ctx.budget, count * per_node * SECONDS_PER_POD)
    ctx.note(f"agents' root directories on {root_parent() or 'the temporary directory (no tmpfs)'}")
    steady_seconds = 3.0 if ctx.quick else 25.0
    samples = 3 if ctx.quick else 20
    total = count * per_node
    prefix = f"/kubecore-bench/{os.getpid()}-{int(time.time())}"
    client = EtcdClient(EtcdConfig(parse_endpoints(endpoints()), timeout=10.0))
    try:
        try:
            client.revision()
        except EtcdUnavailable as error:
            raise Skip(f"no etcd cluster answers: {error}") from None
        pods = {f"node-{i:04d}": fake_pods(per_node, prefix=f"n{i:04d}") for i in range(count)}
        items = [item for name, own in pods.items() for item in pod_items(prefix, name, own)]

        # Baseline: a plain client writes as many keys as there will be statuses.
        raw = put_all(client, [(f"{prefix}/raw/{i}", v) for i, (_, v) in enumerate(items)], 300)
        client.delete_prefix(f"{prefix}/raw/")
        ctx.log(f"plain client: {total} keys in {raw:.2f}s")
        plain, plain_gc = converge_in_process(count, per_node, max(10.0, ctx.time_left() * 0.2))
        ctx.note(
            f"in-process (no etcd): {count} x {per_node} converged in {plain:.2f} s"
            f" ({plain_gc.seconds:.2f} s in the garbage collector, {plain_gc.full} full"
            " collections)"
        )

        gc.collect()
        rss_before = rss_bytes()
        with ExitStack() as stack:
            agents = build_agents(stack, client, prefix, count, per_node)
            pool = stack.enter_context(ThreadPoolExecutor(WRITER_THREADS))
            round_robin(agents, pool)  # every source listed (empty), every node key on its lease
            with simulator_gc() as gc_time:
                written = put_all(client, items, 300)
                t0 = time.perf_counter()
                ok, rounds = converge(agents, pool, per_node, max(10.0, ctx.time_left() * 0.4))
                seconds = written + time.perf_counter() - t0
            rss_growth = rss_bytes() - rss_before
            ctx.log(
                f"converged={ok} after {seconds:.2f} s ({rounds} rounds);"
                f" RSS grew {rss_growth / count / 1e6:.2f} MB per node"
            )
            running = running_statuses(client, prefix, [a.name for a in agents])
            ctx.note(
                f"{count} nodes x {per_node} pods: written in {written:.2f} s, every status key"
                f" Running after {seconds:.2f} s ({rounds} rounds, {total / seconds:.0f} pods/s);"
                f" {running}/{total} status keys Running; {gc_time.seconds:.2f} s in the"
                f" garbage collector ({gc_time.full} full collections)"
            )

            # Steady state: nothing changes; only the lease keep-alives should reach etcd.
            requests = client.requests
            writes = sum(a.sink.stats.puts + a.sink.stats.deletes for a in agents)
            keepalives = sum(a.sink.stats.keepalives for a in agents)
            t_steady = time.monotonic()
            while time.monotonic() - t_steady < steady_seconds:
                round_robin(agents, pool)
            minutes = (time.monotonic() - t_steady) / 60
            per_minute = (client.requests - requests) / count / minutes
            keepalives_per_minute = (sum(a.sink.stats.keepalives for a in agents) - keepalives) / (
                count * minutes
            )
            steady_writes = (
                sum(a.sink.stats.puts + a.sink.stats.deletes for a in agents) - writes
            ) / (count * minutes)
            ctx.note(
                f"steady state over {minutes * 60:.0f} s: {per_minute:.1f} etcd requests and"
                f" {steady_writes:.1f} writes per node per minute, of which"
                f" {keepalives_per_minute:.1f} lease keep-alives (one per"
                f" {DEFAULT_LEASE_REFRESH:g} s per node)"
            )
            reaction = measure_reaction(
                client, prefix, agents, pool, samples, max(5.0, ctx.time_left())
            )
            events_written = sum(a.events.written for a in agents)
            events_dropped = sum(a.events.dropped for a in agents)
            ctx.note(f"events: {events_written} written to etcd, {events_dropped} dropped")
            if reaction:
                ordered = sorted(reaction)
                p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
                ctx.note(
                    f"reaction over {len(reaction)} pods: median"
                    f" {fmt_value(statistics.median(reaction), 's')}, p99 {fmt_value(p99, 's')}"
                    f" (one round over all {count} agents per step)"
                )
    finally:
        # Also after a crash: a 1,000-node run leaves about 1 GB of keys and history behind.
        try:
            client.delete_prefix(prefix + "/")
            client.compact(client.revision())
        except EtcdUnavailable as error:  # a long history: etcd finishes by itself
            ctx.note(f"cleaning the run's keys up did not answer in time: {error}")
        except Exception as error:  # a compaction retried after a slow first try: done already
            ctx.note(f"compacting the store after the run: {error}")
        client.close()
    rows = [
        Row(
            NAME,
            f"{count} nodes x {per_node} pods ({total:,}) via etcd: written -> all status Running",
            seconds,
            "s",
            baseline=raw,
            baseline_label=f"a plain client putting {total:,} keys",
            target=f"< {total / PODS_PER_SECOND_TARGET:.1f} s ({PODS_PER_SECOND_TARGET:g} pods/s)",
            met=ok and running == total and seconds < total / PODS_PER_SECOND_TARGET,
        ),
        Row(
            NAME,
            f"{count} nodes x {per_node} pods: what etcd costs (vs fed in-process)",
            seconds,
            "s",
            baseline=plain,
            baseline_label="the same agents fed the same pods with set_pods",
        ),
        Row(
            NAME,
            "steady state: etcd requests per node per minute",
            per_minute,
            "req",
            baseline=keepalives_per_minute,
            baseline_label="the node lease's keep-alives made in the same window",
            target="keep-alives only",
            met=abs(per_minute - keepalives_per_minute) < 1e-9 and steady_writes == 0,
        ),
        Row(
            NAME,
            f"{count} nodes x {per_node} pods: events dropped",
            events_dropped,
            "",
            baseline=events_written,
            baseline_label="events written to etcd",
            target="0",
            met=events_dropped == 0,
        ),
        Row(
            NAME,
            f"{count} nodes: RSS growth per etcd-fed node",
            rss_growth / count,
            "B",
            target="< 2 MB",
            met=rss_growth / count < 2_000_000,
        ),
    ]
    if reaction:
        rows.append(
            Row(
                NAME,
                "reaction: pod key written -> containers started (median)",
                statistics.median(reaction),
                "s",
            )
        )
    return rows
