"""Checks of an instance's end and of its successor: calls after ``close()`` fail cleanly, a
new instance adopts what an earlier one started."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kubecore._contract.errors import (
    ContainerRuntimeError,
)
from kubecore._contract.values import RuntimeSnapshot, RuntimeState, SandboxState
from kubecore._plugins.registry import RuntimeBundle
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import Harness, assert_kept


def _assert_adopted(
    before: RuntimeSnapshot, after: RuntimeSnapshot, sandboxes: set[str], containers: set[str]
) -> None:
    """The objects a new instance shows are the earlier instance's: same ids, names, states,
    labels and annotations."""
    seen_sandboxes = {s.id: s for s in after.sandboxes}
    for old in (s for s in before.sandboxes if s.id in sandboxes):
        new = seen_sandboxes.get(old.id)
        assert new is not None, f"sandbox {old.id} ({old.name}) is not seen by the new instance"
        assert (new.name, new.namespace, new.uid, new.attempt, new.state) == (
            old.name,
            old.namespace,
            old.uid,
            old.attempt,
            old.state,
        )
        assert_kept(old.labels, new.labels, "adopted sandbox labels")
        assert_kept(old.annotations, new.annotations, "adopted sandbox annotations")
    seen_containers = {c.id: c for c in after.containers}
    for old_c in (c for c in before.containers if c.id in containers):
        new_c = seen_containers.get(old_c.id)
        assert new_c is not None, f"container {old_c.id} ({old_c.name}) is not seen anew"
        assert (new_c.name, new_c.sandbox_id, new_c.attempt, new_c.state, new_c.exit_code) == (
            old_c.name,
            old_c.sandbox_id,
            old_c.attempt,
            old_c.state,
            old_c.exit_code,
        )
        assert_kept(old_c.labels, new_c.labels, "adopted container labels")
        assert_kept(old_c.annotations, new_c.annotations, "adopted container annotations")


def _call_within(call: Callable[[], object], timeout: float, what: str) -> object:
    """What ``call`` returns or raises, run in a daemon thread: fail if it takes longer than
    ``timeout`` real seconds."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=run, name="conformance-call", daemon=True)
    worker.start()
    worker.join(timeout)
    assert outcome, f"{what} still runs after {timeout} s"
    return outcome[0]


class InstanceChecks(PluginFixtures):
    """Closing an instance, and adopting with a new one."""

    def test_calls_after_close_fail_cleanly(
        self, harness: Harness, reopen: Callable[[], RuntimeBundle] | None
    ) -> None:
        """Every call on a closed runtime raises a kubecore error, promptly."""
        rt = harness.runtime
        w = harness.workloads
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, w.print_and_run("before-close"))
        harness.wait_logs(container_id, "before-close")
        fresh = harness.sandbox_config()
        container = harness.container_config(sandbox[1], w.run_forever)
        rt.close()
        calls: dict[str, Callable[[], object]] = {
            "version": rt.version,
            "snapshot": rt.snapshot,
            "list_sandboxes": rt.list_sandboxes,
            "list_containers": rt.list_containers,
            "sandbox_status": lambda: rt.sandbox_status(sandbox[0]),
            "container_status": lambda: rt.container_status(container_id),
            "run_sandbox": lambda: rt.run_sandbox(fresh),
            "create_container": lambda: rt.create_container(sandbox[0], container, sandbox[1]),
            "start_container": lambda: rt.start_container(container_id),
            "exec_sync": lambda: rt.exec_sync(container_id, list(w.exit_with(0)), 5),
            "logs": lambda: list(rt.logs(container_id)),
            "logs(follow=True)": lambda: next(iter(rt.logs(container_id, follow=True))),
            "stop_container": lambda: rt.stop_container(container_id, 1),
            "remove_container": lambda: rt.remove_container(container_id),
            "stop_sandbox": lambda: rt.stop_sandbox(sandbox[0]),
            "remove_sandbox": lambda: rt.remove_sandbox(sandbox[0]),
        }
        for name, call in calls.items():
            outcome = _call_within(call, w.timeout, f"{name} after close()")
            assert isinstance(outcome, ContainerRuntimeError), (
                f"{name} after close() gave {outcome!r}, not a kubecore ContainerRuntimeError"
            )
        rt.close()  # closing twice is harmless
        replacement = reopen() if reopen is not None else None
        if replacement is not None and replacement.runtime is not rt:
            harness.use(replacement)
        else:
            harness.abandon()

    # -- adoption: a restarted agent finds what it started --------------------------------------

    def test_a_new_instance_adopts_what_an_earlier_one_started(
        self, harness: Harness, reopen: Callable[[], RuntimeBundle] | None
    ) -> None:
        if reopen is None:
            if not harness.bundle.adopts:
                harness.not_checked(
                    "adoption by a new instance",
                    f"the {harness.bundle.name or 'runtime'} runtime cannot adopt"
                    " (RuntimeBundle.adopts=False)",
                )
            harness.unseen("no `reopen` fixture: adoption is not checked")
        w = harness.workloads
        first = harness.bundle
        ready = harness.run_sandbox()
        stopped = harness.run_sandbox()
        running = harness.start(ready, w.print_and_run("adopt-me"), name="running")
        created = harness.create(ready, w.run_forever, name="created")
        exited = harness.start(ready, w.exit_with(3), name="exited")
        harness.wait_state(exited, RuntimeState.EXITED)
        harness.wait_logs(running, "adopt-me")
        first.runtime.stop_sandbox(stopped[0])
        before = first.runtime.snapshot()

        second = reopen()
        if second.runtime is not first.runtime:
            first.runtime.close()  # as a stopping agent does: its containers keep running
        harness.use(second)
        rt = second.runtime
        after = rt.snapshot()
        _assert_adopted(before, after, {ready[0], stopped[0]}, {running, created, exited})
        assert rt.container_status(running).state is RuntimeState.RUNNING
        assert rt.sandbox_status(ready[0]).state is SandboxState.READY
        assert any(b"adopt-me" in line for line in rt.logs(running))
        rt.start_container(created)
        harness.wait_state(created, RuntimeState.RUNNING)
        rt.stop_container(running, self.STOP_TIMEOUT)
        stopped_now = rt.container_status(running)
        assert stopped_now.state is RuntimeState.EXITED
        assert stopped_now.exit_code == 0, "run_forever exits 0 on TERM, adopted or not"
