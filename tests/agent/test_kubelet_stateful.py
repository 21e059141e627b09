"""A stateful property: whatever happened (desired-state changes, crashes, OOM kills, runtime
errors and latency on any call), once faults stop the node converges within a bounded number of
syncs: every desired container runs exactly once, nothing of an undesired pod remains, and
nothing kubecore did not create was touched."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections import Counter

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.errors import ContainerRuntimeError, RuntimeUnavailable
from kubecore._contract.labels import POD_NAME_LABEL, POD_UID_LABEL
from kubecore._contract.values import RuntimeState
from kubecore._model.v1 import Pod
from kubecore._util.clock import ManualClock
from kubecore_fake import FakeHealthChecker, FakeRuntime
from tests.builders import ctr, make_pod

POD_NAMES = ("a", "b", "c")
CONTAINER_SETS = (("app",), ("app", "side"), ("side",))
FAULTY_OPS = (
    "snapshot",
    "run_sandbox",
    "stop_sandbox",
    "remove_sandbox",
    "create_container",
    "start_container",
    "stop_container",
    "remove_container",
    "pull",
    "image_status",
    "exec_sync",
    "version",
)
ERRORS = (
    ContainerRuntimeError("injected"),
    RuntimeUnavailable("engine down"),
    RuntimeError("an unexpected bug in an adapter"),
)
MAX_FINAL_SYNCS = 80
FINAL_STEP = 20.0
BACKOFF_MAX = KubeletConfig().backoff_max
"""Each injected failure may still be ahead when faults stop: each costs at most one back-off."""


def pod_of(name: str, containers: tuple[str, ...], version: int) -> Pod:
    return make_pod(name, *(ctr(c, image=f"busybox:1.{version}") for c in containers))


class KubeletMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="kubecore-stateful-")
        self.clock = ManualClock()
        self.runtime = FakeRuntime(clock=self.clock)
        self.outsider = self.runtime.add_unmanaged_container("outsider")
        self.kubelet = Kubelet(
            self.runtime,
            self.runtime,
            config=KubeletConfig(
                root_dir=self.tmp,
                resolv_conf=f"{self.tmp}/no-resolv.conf",
                container_gc_interval=30,
            ),
            health_checker=FakeHealthChecker(self.runtime),
            clock=self.clock,
        )
        self.desired: dict[str, Pod] = {}
        self.latency_ops: set[str] = set()
        self.injected = 0

    # --- desired state ----------------------------------------------------------------------

    @rule(
        name=st.sampled_from(POD_NAMES),
        containers=st.sampled_from(CONTAINER_SETS),
        version=st.integers(30, 31),
    )
    def set_pod(self, name: str, containers: tuple[str, ...], version: int) -> None:
        self.desired[name] = pod_of(name, containers, version)
        self.kubelet.set_pods(list(self.desired.values()))

    @rule(name=st.sampled_from(POD_NAMES))
    def remove_pod(self, name: str) -> None:
        self.desired.pop(name, None)
        self.kubelet.set_pods(list(self.desired.values()))

    @rule()
    def restart_agent(self) -> None:
        self.kubelet.close()
        self.kubelet = Kubelet(
            self.runtime,
            self.runtime,
            config=self.kubelet.config,
            health_checker=FakeHealthChecker(self.runtime),
            clock=self.clock,
        )
        self.kubelet.set_pods(list(self.desired.values()))

    # --- faults -----------------------------------------------------------------------------

    def _running(self) -> list[str]:
        return [c.id for c in self.runtime.find_containers(state=RuntimeState.RUNNING)]

    @precondition(lambda self: bool(self._running()))
    @rule(data=st.data(), oom=st.booleans())
    def kill_a_container(self, data: st.DataObject, oom: bool) -> None:
        victim = data.draw(st.sampled_from(sorted(self._running())))
        if oom:
            self.runtime.oom_kill(victim)
        else:
            self.runtime.crash(victim, code=data.draw(st.integers(0, 2)))

    @rule(op=st.sampled_from(FAULTY_OPS), n=st.integers(1, 3), error=st.sampled_from(ERRORS))
    def fail_next(self, op: str, n: int, error: Exception) -> None:
        self.runtime.fail_next(op, n, error)
        self.injected += n

    @rule(op=st.sampled_from((*FAULTY_OPS, "*")), seconds=st.sampled_from((0.0, 0.5, 3.0)))
    def latency(self, op: str, seconds: float) -> None:
        self.runtime.add_latency(op, seconds)
        self.latency_ops.add(op)

    # --- time -------------------------------------------------------------------------------

    @rule(step=st.sampled_from((0.0, 1.0, 15.0)))
    def sync(self, step: float) -> None:
        self.kubelet.sync()  # must never raise, whatever the runtime does
        self.clock.advance(step)

    # --- the final check --------------------------------------------------------------------

    def _converged(self) -> bool:
        running = Counter(
            (c.labels.get(POD_NAME_LABEL), c.name)
            for c in self.runtime.find_containers(state=RuntimeState.RUNNING)
        )
        wanted = Counter(
            (name, c.name) for name, pod in self.desired.items() for c in pod.spec.containers
        )
        if running != wanted:
            return False
        try:
            snapshot = self.runtime.snapshot()
        except Exception:
            return False  # an injected failure not consumed yet
        desired_uids = {p.uid for p in self.desired.values()}
        leftovers = [s for s in snapshot.sandboxes if s.uid not in desired_uids] + [
            c for c in snapshot.containers if c.labels.get(POD_UID_LABEL) not in desired_uids
        ]
        return not leftovers

    def teardown(self) -> None:
        try:
            for op in self.latency_ops:
                self.runtime.add_latency(op, 0)
            converged_at = None
            budget = MAX_FINAL_SYNCS + int(self.injected * BACKOFF_MAX / FINAL_STEP)
            for i in range(budget):
                self.kubelet.sync()
                if i >= 5 and self._converged():  # a few syncs drain pending injected failures
                    converged_at = i
                    break
                self.clock.advance(FINAL_STEP)
            running = [
                (c.labels.get(POD_NAME_LABEL), c.name)
                for c in self.runtime.find_containers(state=RuntimeState.RUNNING)
            ]
            assert converged_at is not None, (
                f"not converged after {budget} syncs: desired {sorted(self.desired)},"
                f" running {running}"
            )
            assert self.runtime.unmanaged_calls == []
            assert self.outsider not in {c.id for c in self.runtime.find_containers()}
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


def test_eleven_failed_creates_in_a_row_end_in_a_running_pod() -> None:
    """A counterexample the machine found: the back-offs of 11 failed creates (up to 300 s each)
    outlast a fixed budget of syncs; the budget grows with the failures injected."""
    machine = KubeletMachine()
    machine.set_pod(name="a", containers=("app",), version=30)
    machine.sync(step=0.0)
    for n in (2, 3, 3):
        machine.fail_next(op="create_container", n=n, error=ContainerRuntimeError("injected"))
    for _ in range(5):
        machine.sync(step=0.0)
    machine.fail_next(op="create_container", n=3, error=ContainerRuntimeError("injected"))
    machine.set_pod(name="a", containers=("app",), version=31)
    machine.teardown()


KubeletMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestKubeletStateful = KubeletMachine.TestCase


def setup_module() -> None:
    logging.getLogger("kubecore").setLevel(logging.CRITICAL)


def teardown_module() -> None:
    logging.getLogger("kubecore").setLevel(logging.NOTSET)
