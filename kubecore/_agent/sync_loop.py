"""The sync loop in its background thread: a pass at every relist interval, at once on a wake-up
(a runtime event, a source's update, a sync that acted), sooner when a back-off ends; a growing
hold after passes that failed; the waits for a pass that tests and ``--once`` use; and ``syncloop``
health (the loop keeps passing)."""

from __future__ import annotations

import functools
import logging
import math
import threading
import time

from kubecore._agent.event_stream import EventStream
from kubecore._agent.outage import Outage
from kubecore._agent.signals import Signals
from kubecore._agent.sync_pass import SyncPass, SyncReport
from kubecore._agent.termination import PodLifecycle
from kubecore._agent.wiring import Rooms
from kubecore._contract.errors import ContainerRuntimeError
from kubecore._contract.values import RuntimeState
from kubecore._kuberuntime.kill import run_at_once, stop_within

logger = logging.getLogger(__name__)

_DEATH_RECHECK = 0.05
_SYNC_LOOP_MIN_THRESHOLD = 300.0
"""The kubelet's ``syncloop`` health check allows twice the resync interval, at least 5 min."""
ENGINE_PROBE_EVERY = 1.0
"""While relists back off: seconds between the cheap calls (``version``) that ask whether the
engine answers again. Once one has gone unanswered, the first answer ends the back-off (a
relist at once, not at the end of a hold of up to ``RELIST_BACKOFF_MAX``)."""


class SyncLoop:
    """Passes, one at a time, inline (``sync``) or in the background thread (``start``)."""

    def __init__(
        self, rooms: Rooms, signals: Signals, sync_pass: SyncPass, stream: EventStream
    ) -> None:
        self._rooms = rooms
        self._signals = signals
        self._pass = sync_pass
        self._stream = stream
        self._thread: threading.Thread | None = None
        self._pass_lock = threading.Lock()
        self._pass_cond = threading.Condition()
        self._passes = 0
        self._quiet = False
        self._pass_failures = Outage()
        """Background passes failing in a row on an unexpected error."""
        self._holding_until: float | None = None
        """While the loop backs off: the monotonic time of its next pass."""
        self._engine_went_silent = False
        """A probe of this relist outage went unanswered: the next answer ends the back-off."""

    def sync(self) -> SyncReport:
        """One full pass in the caller's thread."""
        with self._pass_lock:
            return self._pass.run(inline=True)

    def start(self) -> None:
        """Run the loop in a background thread (``NodeNameInUse`` when another live agent holds
        this node name on the engine)."""
        if self._thread is not None and self._thread.is_alive():
            return
        rooms = self._rooms
        rooms.node_guard.acquire()  # NodeNameInUse: another live agent has this node name
        self._signals.stop.clear()
        rooms.workers.reopen()
        self._stream.subscribe()
        self._thread = threading.Thread(target=self._run, name="kubecore-sync-loop", daemon=True)
        self._signals.looping = True
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Stop the loop and drain the workers; the node name and root directory are let go."""
        self._signals.halt()
        self._stream.unsubscribe()
        thread, self._thread = self._thread, None
        self._signals.looping = False
        if thread is not None:
            thread.join(timeout)
        self._stream.unsubscribe()  # one the loop opened while stopping
        rooms = self._rooms
        rooms.workers.shutdown(timeout)
        rooms.prober.shutdown()
        rooms.volumes.release()
        rooms.node_guard.release()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        rooms, signals = self._rooms, self._signals
        clock = rooms.clock
        named = False
        while not signals.stop.is_set():
            signals.wake.clear()
            quiet = False
            try:
                with self._pass_lock:
                    report = self._pass.run(inline=False)
                quiet = report.synced == 0 and not report.removed_dispatched
                ended = self._pass_failures.answer(clock.monotonic())
                if ended is not None:
                    logger.warning("the sync loop passes again %s", ended.describe())
                if not self._pass.outage.failures:
                    self._engine_went_silent = False
                    if not named:
                        # Statuses name the runtime (one engine call, then cached): asked here,
                        # while the first syncs run, rather than on a pod worker's path.
                        rooms.status_manager.runtime_name()
                        named = True
                    self._stream.keep_subscribed()
            except Exception:
                if self._pass_failures.fail(clock.monotonic()):
                    logger.exception(
                        "sync loop pass failed (%d in a row; fewer of these are logged)",
                        self._pass_failures.failures,
                    )
            with self._pass_cond:
                self._passes += 1
                self._quiet = quiet and rooms.workers.busy_count == 0
                self._pass_cond.notify_all()
            if signals.stop.is_set():
                break
            delay = max(self._pass.outage.delay, self._pass_failures.delay)
            if delay > 0:
                self._hold(delay, probe=bool(self._pass.outage.failures))
            elif clock.virtual:
                # Virtual time moves only when a test advances it: wait for a wake-up in real time.
                signals.wake.wait(rooms.config.relist_interval)
            else:
                clock.wait(signals.wake, self.next_pass_in())

    def _hold(self, seconds: float, *, probe: bool = False) -> None:
        """No pass for ``seconds`` of the clock (a back-off after failed passes): wake-ups wait
        for its end, ``stop`` does not. ``probe`` (relists fail): the engine is asked every
        ``ENGINE_PROBE_EVERY`` whether it answers, and the hold ends at its first answer after
        it went silent. On a virtual clock the waits end when the clock is advanced that far."""
        clock = self._rooms.clock
        until = clock.monotonic() + seconds
        self._holding_until = until
        try:
            while not self._wait_until(
                min(until, clock.monotonic() + ENGINE_PROBE_EVERY) if probe else until
            ):
                if clock.monotonic() >= until:
                    return
                if not probe:
                    continue
                if not self._engine_answers():
                    self._engine_went_silent = True
                elif self._engine_went_silent:
                    logger.info("the container runtime answers again: relisting now")
                    return
        finally:
            self._holding_until = None

    def _wait_until(self, deadline: float) -> bool:
        """Wait on the clock until ``deadline``; True if the loop is stopping."""
        clock, resume = self._rooms.clock, self._signals.resume
        resume.clear()
        if self._signals.stop.is_set():
            return True
        if clock.virtual:
            handle = clock.call_at(deadline, resume.set)
            try:
                resume.wait()
            finally:
                handle.cancel()
        else:
            clock.wait(resume, deadline - clock.monotonic())
        return self._signals.stop.is_set()

    def _engine_answers(self) -> bool:
        try:
            self._rooms.runtime.version()
        except Exception:  # whatever the engine's failure is, it did not answer
            return False
        return True

    def next_pass_in(self) -> float:
        """Seconds until the next pass: the relist interval, or sooner when a back-off ends
        (a container waiting in CrashLoopBackOff restarts on time even with long relists) or
        a reported death is not yet visible in the snapshot."""
        if self._stream.deaths_pending():
            return _DEATH_RECHECK
        rooms = self._rooms
        states = rooms.desired.states.values()
        replan_at = min((st.replan_at for st in states), default=math.inf)
        return max(0.0, min(rooms.config.relist_interval, replan_at - rooms.clock.now()))

    def _passed(self, target: int) -> bool:
        return self._passes >= target

    def wait_idle(self, timeout: float) -> bool:
        """Wait (real time, at most ``timeout``) for a pass that found nothing to do with no
        pod worker busy. True if that happened in time."""
        if not self.running:
            raise RuntimeError("the sync loop is not running (call start() first)")
        workers, wake = self._rooms.workers, self._signals.wake
        deadline = time.monotonic() + timeout
        with self._pass_cond:
            while True:
                target = self._passes + 1
                wake.set()
                left = deadline - time.monotonic()
                if left <= 0 or not self._pass_cond.wait_for(
                    functools.partial(self._passed, target), timeout=left
                ):
                    return False
                if self._quiet and workers.busy_count == 0:
                    return True
                self._pass_cond.release()
                try:
                    workers.wait_idle(max(0.0, deadline - time.monotonic()))
                finally:
                    self._pass_cond.acquire()

    def wait_pass(self, timeout: float, *, ask: bool) -> bool:
        """Wait (real time, at most ``timeout``) until a pass has ended and the pod syncs it
        dispatched are done; ``ask``: ask for that pass now. True if that happened in time."""
        if not self.running:
            raise RuntimeError("the sync loop is not running (call start() first)")
        deadline = time.monotonic() + timeout
        with self._pass_cond:
            target = self._passes + 1
            if ask:
                self._signals.wake.set()
            if not self._pass_cond.wait_for(
                functools.partial(self._passed, target), timeout=max(0.0, timeout)
            ):
                return False
        return self._rooms.workers.wait_idle(max(0.0, deadline - time.monotonic()))

    def problem(self) -> str:
        """Why the loop is not healthy ('' when it is, or was never started): it ended, or its
        last pass is older than twice the resync interval (at least 5 min)."""
        if self._thread is None:
            return ""
        if not self._thread.is_alive():
            return "the sync loop is not running"
        rooms = self._rooms
        limit = max(2 * rooms.config.resync_interval, _SYNC_LOOP_MIN_THRESHOLD)
        age = rooms.clock.monotonic() - self._pass.last_pass
        if age > limit:
            return f"the sync loop last passed {age:.0f}s ago (more than {limit:.0f}s)"
        return ""

    def cut_short(self, uid: str) -> None:
        """A terminating pod's grace period was shortened while its worker may be blocked in a
        preStop hook: in the background loop, stop its running containers now with the time
        left (the worker reads the new deadline itself after the hook)."""
        rooms = self._rooms
        termination = rooms.terminations.get(uid)
        entry = self._pass.grouped.get(uid)
        if not self.running or termination is None or entry is None:
            return
        if termination.lifecycle is not PodLifecycle.TERMINATING:
            return
        running = [c.id for c in entry.containers if c.state is RuntimeState.RUNNING]
        left = termination.remaining(rooms.clock.monotonic())
        runtime = rooms.runtime

        def stop_one(container_id: str) -> None:
            try:
                stop_within(runtime, container_id, left)
            except ContainerRuntimeError as exc:
                logger.warning("stopping %s early failed: %s", container_id, exc)

        def stop() -> None:
            run_at_once([functools.partial(stop_one, container_id) for container_id in running])

        threading.Thread(target=stop, name="kubecore-grace", daemon=True).start()
