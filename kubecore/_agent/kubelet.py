"""The agent: desired pods in, a converged node out. ``Kubelet`` is its façade over small rooms.

``Kubelet.sync`` is one full, level-triggered pass in the caller's thread
(``kubecore._agent.sync_pass``): the desired pods refreshed from the sources (``desired``), one
runtime snapshot (``snapshot``: this node's objects by pod), the probes that are due (``_prober``),
plan + execute every pod that needs it (``pod_workers``: one worker per pod owns its state),
termination of pods no longer desired (``termination``, once every source has reported),
housekeeping when due (``_housekeeping``). ``start`` runs the same pass in a background loop
(``sync_loop``: relist every ``relist_interval``, wake at once on runtime events) with pods synced
by the pod workers and probes run off the sync path. The rooms are built and joined in
``wiring``; what the agent answers (pods, events, logs, stats, health) is read in ``reads``.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kubecore._agent.changes import DEFAULT_QUEUE, Change, ChangeFeed, ChangeSubscription
from kubecore._agent.config import KubeletConfig
from kubecore._agent.event_stream import EventStream
from kubecore._agent.explain import explain_pod
from kubecore._agent.facets import MOVED, KubeletStreams, KubeletViews
from kubecore._agent.plan import NodePlan, plan_live
from kubecore._agent.reads import Reads
from kubecore._agent.signals import Signals
from kubecore._agent.sync_loop import SyncLoop
from kubecore._agent.sync_pass import SyncPass, SyncReport
from kubecore._agent.wiring import build_rooms
from kubecore._config.updates import Operation, PodUpdate
from kubecore._contract.protocols import ContainerRuntime, EventRecorder, HealthChecker, Puller
from kubecore._contract.values import Event
from kubecore._kuberuntime.credentials import Keyring
from kubecore._model.v1 import Pod
from kubecore._observability.metrics import Metrics
from kubecore._status.compute import pod_settled
from kubecore._util.clock import Clock

if TYPE_CHECKING:
    from kubecore._plugins.registry import RuntimeBundle

__all__ = ["Kubelet", "KubeletConfig", "SyncReport"]

logger = logging.getLogger(__name__)


class Kubelet:
    """The agent on one node: pods come in from sources (``update``, ``set_pods``, …), passes
    converge the runtime on them (``sync`` inline, or ``start`` a background loop), and the
    readers ask what is there (``pods``, ``streams.logs``, ``views.stats_summary``, …). Each method
    forwards to a room of ``kubecore._agent`` (built by ``wiring``)."""

    def __init__(
        self,
        runtime: ContainerRuntime,
        puller: Puller,
        *,
        config: KubeletConfig | None = None,
        health_checker: HealthChecker | None = None,
        recorder: EventRecorder | None = None,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        sources: Iterable[str] = (),
        pull_secrets: Mapping[tuple[str, str], Keyring] | None = None,
    ) -> None:
        self._signals = signals = Signals()
        self._rooms = rooms = build_rooms(
            runtime,
            puller,
            config or KubeletConfig(),
            signals,
            health_checker=health_checker,
            recorder=recorder,
            clock=clock,
            metrics=metrics,
            sources=sources,
            pull_secrets=pull_secrets,
        )
        stream = EventStream(rooms.runtime, rooms.clock, signals)
        self._pass = SyncPass(rooms, signals, stream)
        self._loop = SyncLoop(rooms, signals, self._pass, stream)
        self._reads = reads = Reads(rooms, self._loop.problem)
        self._streams = KubeletStreams(reads)
        self._views = KubeletViews(rooms, reads, self._pass.runs_containers_of)
        rooms.metrics.attach_resource_source(self._reads.resource_summary)
        self._changes = signals.changes = ChangeFeed(rooms.desired.report, rooms.desired.reports)
        self.add_recorder(self._changes)

    @classmethod
    def from_bundle(cls, bundle: RuntimeBundle, **kwargs: Any) -> Kubelet:
        """A Kubelet on a loaded runtime plugin (``kubecore.load_runtime``), on the bundle's
        clock (passing a different ``clock`` is a ``ValueError``)."""
        if bundle.health_checker is not None:
            kwargs.setdefault("health_checker", bundle.health_checker)
        kwargs["clock"] = bundle.agent_clock(kwargs.get("clock"))
        if not bundle.adopts:
            logger.warning("%s", bundle.restart_warning())
        return cls(bundle.runtime, bundle.puller, **kwargs)

    # --- what it runs on --------------------------------------------------------------------

    @property
    def config(self) -> KubeletConfig:
        """The agent's settings."""
        return self._rooms.config

    @property
    def clock(self) -> Clock:
        """The clock the agent runs on (a ``ManualClock`` in virtual time)."""
        return self._rooms.clock

    @property
    def metrics(self) -> Metrics:
        """The agent's metrics (``/metrics``); an extra's collectors join its ``registry``."""
        return self._rooms.metrics

    @property
    def root_dir(self) -> str:
        """The absolute root directory (pod directories, the API's store)."""
        return os.path.abspath(self._rooms.config.root_dir)

    @property
    def streams(self) -> KubeletStreams:
        """A container's live I/O: ``streams.logs``, ``exec``, ``exec_stream``, ``attach``,
        ``port_forwarder`` (what ``kubectl logs/exec/attach/port-forward`` reach)."""
        return self._streams

    @property
    def views(self) -> KubeletViews:
        """What the node reports, read-only: ``views.recent_events``, ``event_log``,
        ``stats_summary``, ``resource_summary``, ``health_checks``, ``healthz``, ``images``,
        ``image_fs_usage``, ``runtime_version``, ``objects``, ``pod_reports``."""
        return self._views

    def add_recorder(self, recorder: EventRecorder) -> None:
        """Send the agent's events to ``recorder`` too, from now on (an etcd event writer)."""
        fanout = self._rooms.recorder
        fanout.recorders = (*fanout.recorders, recorder)

    # --- desired state ----------------------------------------------------------------------

    def update(self, update: PodUpdate) -> None:
        """Apply a source's update (thread-safe). The source counts as registered from now on
        (unless the update only adds or removes ConfigMaps and Secrets)."""
        rooms = self._rooms
        objects_only = bool(update.objects) and not update.pods and update.op is not Operation.SET
        changed = False if objects_only else rooms.pod_config.apply(update)
        if rooms.objects.apply(update) or changed:
            self._signals.wake.set()

    def register_source(self, source: str) -> None:
        """Declare a source that must report before pods missing from the view are deleted."""
        self._rooms.pod_config.register_source(source)

    def set_pods(self, pods: Iterable[Pod], source: str = "api") -> None:
        """``source``'s whole state: these pods, and no others."""
        self.update(PodUpdate(Operation.SET, tuple(pods), source))

    def remove_pod(
        self, pod: Pod, source: str = "api", *, grace_period: float | None = None
    ) -> None:
        """Delete ``pod``. ``grace_period`` (seconds, as ``kubectl delete --grace-period``)
        overrides the spec's ``terminationGracePeriodSeconds`` when shorter; a grace period
        only ever shortens: a second delete of a pod already terminating brings its end closer
        (even during a preStop hook) and never pushes it back."""
        if grace_period is not None:
            self._ask_grace(pod.uid, grace_period)
        self.update(PodUpdate(Operation.REMOVE, (pod,), source))

    def terminate_pod(self, pod: Pod, grace_period: float) -> None:
        """Stop ``pod``'s containers within ``grace_period`` seconds once it is no longer
        desired, with its spec (preStop hooks): the grace its source's delete asked for, handed
        over before the source drops it, or for a pod its source deleted before a restart of the
        agent whose containers may still run. As with ``remove_pod``, a grace period only ever
        shortens, and a longer one than the spec's does not apply."""
        rooms = self._rooms
        self._ask_grace(pod.uid, grace_period)
        rooms.refresh_desired()
        if pod.uid not in rooms.desired.states:
            rooms.terminations.leave(pod)
            self._signals.wake.set()

    def _ask_grace(self, uid: str, grace_period: float) -> None:
        if not grace_period >= 0:
            raise ValueError(f"grace_period must be 0 or more, got {grace_period}")
        shortened = self._rooms.terminations.request_grace(
            uid, grace_period, self._rooms.clock.monotonic()
        )
        if shortened is not None:
            self._loop.cut_short(uid)
            self._signals.wake.set()  # a kill waiting for a retry uses the new deadline now

    def sources_ready(self) -> bool:
        """Every registered source has reported (pods missing from the view may be deleted)."""
        return self._rooms.pod_config.sources_ready()

    # --- syncing ----------------------------------------------------------------------------

    def sync(self) -> SyncReport:
        """One full pass in the caller's thread."""
        return self._loop.sync()

    def sync_until_converged(self, *, max_syncs: int = 50, step: float = 1.0) -> bool:
        """Sync until a pass does nothing and no pod is still starting (every pod has left
        phase Pending, or waits in a failure such as CrashLoopBackOff); between passes advance
        a ManualClock by ``step`` (or wait ``step`` seconds on a real clock). True if that
        happened within ``max_syncs``."""
        for _ in range(max_syncs):
            if self.sync().converged and all(_started(pod) for pod in self.pods()):
                return True
            self._rooms.clock.sleep(step)
        return False

    def start(self) -> None:
        """Run the sync loop in a background thread (relist, resync, runtime events). Raises
        ``NodeNameInUse`` when another live agent holds this node name on the engine."""
        self._loop.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and drain the workers. Containers keep running."""
        self._loop.stop(timeout)

    @property
    def running(self) -> bool:
        """The background loop is running."""
        return self._loop.running

    def wake(self) -> None:
        """Ask the background loop for a pass now."""
        self._signals.wake.set()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """With the loop started: wait (real time, at most ``timeout``) for a pass that found
        nothing to do with no pod worker busy. True if that happened in time."""
        return self._loop.wait_idle(timeout)

    def wait_pass(self, timeout: float, *, ask: bool = True) -> bool:
        """With the loop started: wait (real time, at most ``timeout``) until a pass has ended
        and the pod syncs it dispatched are done; ``ask``: ask for that pass now (otherwise the
        loop's own next one: a relist, or a wake-up after a sync acted). True if that happened
        in time."""
        return self._loop.wait_pass(timeout, ask=ask)

    def plan(self) -> NodePlan:
        """What a sync would do now, pod by pod, with the reasons, doing none of it: one
        snapshot of the runtime, the sources through admission, the planner the sync runs
        (``kubecore plan``). Nothing changes on the runtime, on disk or in the agent."""
        return plan_live(self._rooms)

    def explain(self, uid: str) -> dict[str, Any] | None:
        """Why the pod ``uid`` is where it is, as a JSON document (``/why``, ``kubecore why``):
        its conditions and, for each container not ready, the one reason holding it back now
        with the evidence (the planner's last decision, the back-off and its next try, the last
        probe result, the admission verdict, the events). None for a pod not on the node."""
        return explain_pod(self._rooms, uid)

    # --- reading ----------------------------------------------------------------------------

    def pods(self) -> list[Pod]:
        """Desired pods (in first-seen order) with their status filled in."""
        return self._reads.pods()

    def subscribe(
        self,
        *,
        pods: bool = True,
        events: bool = True,
        initial: bool = True,
        maxsize: int = DEFAULT_QUEUE,
        callback: Callable[[Change], object] | None = None,
    ) -> ChangeSubscription:
        """Changes pushed as they happen: a ``PodChange`` (ADDED, MODIFIED, DELETED, the pod
        as ``pods()`` shows it) when a pod comes, its spec or status changes, or it goes, and an
        ``EventChange`` for each event recorded; ``pods`` and ``events`` choose which. With
        ``initial`` the first changes are an ADDED for each pod the node has now.

        Iterate the subscription (or ``get(timeout)``) in a thread of yours, or pass
        ``callback`` to have each change handed to it on a thread of the subscription's own.
        Nothing waits for a consumer: past ``maxsize`` unread changes the rest are dropped and
        the consumer reads one ``FellBehind``, after which it re-lists ``pods()``. ``close`` the
        subscription when done (closing the agent closes them all). ``kubecore.aio`` gives
        the same as an async iterator."""
        return self._changes.subscribe(
            pods=pods, events=events, initial=initial, maxsize=maxsize, callback=callback
        )

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        """The desired pod ``namespace/name`` with its status (None: not on this node)."""
        return self._reads.get_pod(namespace, name)

    def record_event(self, event: Event) -> None:
        """Record ``event`` as the agent's own (one about the node: ``NodeReady``, ...)."""
        self._rooms.recorder.record(event)

    # --- closing ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the loop (if started) and close every subscription. Containers keep running."""
        self.stop()
        self._changes.close()

    if not TYPE_CHECKING:  # the type checker sees only the current names

        def __getattr__(self, name: str) -> Any:
            moved = MOVED.get(name)
            if moved is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            group, new = moved
            warnings.warn(
                f"Kubelet.{name} is Kubelet.{group}.{new} since 0.2", DeprecationWarning, 2
            )
            return getattr(getattr(self, group), new)

    def __enter__(self) -> Kubelet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _started(pod: Pod) -> bool:
    """No longer starting: the pod left phase Pending, or it settled there (``pod_settled``:
    it waits in a failure such as ``ImagePullBackOff``). A running pod whose readiness probe
    keeps failing has started, though it has not settled."""
    status = pod.status
    return status is not None and (status.phase != "Pending" or pod_settled(pod))
