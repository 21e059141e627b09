from __future__ import annotations

import threading

from kubecore._agent.pod_workers.queue import Inbox, PodWorkers
from kubecore._agent.termination import PodLifecycle, Termination, Terminations
from kubecore._model.v1 import ObjectMeta, Pod, PodSpec


def test_inline_runs_in_the_callers_thread() -> None:
    seen: list[tuple[str, int, str]] = []
    workers: PodWorkers[int] = PodWorkers(
        lambda uid, item: seen.append((uid, item, threading.current_thread().name))
    )
    assert workers.dispatch("a", 1, inline=True)
    assert seen == [("a", 1, threading.current_thread().name)]


def test_newest_pending_wins_and_runs_next() -> None:
    seen: list[int] = []
    workers: PodWorkers[int] = PodWorkers(lambda uid, item: None)

    def sync(uid: str, item: int) -> None:
        seen.append(item)
        if item == 1:
            # two updates arrive while the pod syncs: only the newest is kept, and it runs next
            assert not workers.dispatch(uid, 2, inline=True)
            assert not workers.dispatch(uid, 3, inline=True)

    workers._sync = sync
    workers.dispatch("a", 1, inline=True)
    assert seen == [1, 3]
    assert workers.replaced == 1
    assert not workers.is_busy("a")


def test_never_two_syncs_of_one_pod_at_once_on_the_pool() -> None:
    gate = threading.Event()
    running = threading.Event()
    active: dict[str, int] = {}
    overlaps: list[str] = []
    seen: list[tuple[str, int]] = []
    lock = threading.Lock()

    def sync(uid: str, item: int) -> None:
        with lock:
            active[uid] = active.get(uid, 0) + 1
            if active[uid] > 1:
                overlaps.append(uid)
            seen.append((uid, item))
        if item == 0:
            running.set()
            assert gate.wait(5)
        with lock:
            active[uid] -= 1

    workers: PodWorkers[int] = PodWorkers(sync, max_workers=4)
    workers.dispatch("a", 0)
    assert running.wait(5)
    for i in range(1, 6):
        workers.dispatch("a", i)  # queued behind the running sync: newest wins
    workers.dispatch("b", 1)  # another pod is not held up
    gate.set()
    assert workers.wait_idle(5)
    workers.shutdown(5)
    assert overlaps == []
    assert [i for uid, i in seen if uid == "a"] == [0, 5]
    assert ("b", 1) in seen
    assert workers.replaced == 4


def test_a_failing_sync_does_not_kill_the_worker() -> None:
    calls: list[int] = []

    def sync(uid: str, item: int) -> None:
        calls.append(item)
        raise RuntimeError("boom")

    workers: PodWorkers[int] = PodWorkers(sync)
    workers.dispatch("a", 1, inline=True)
    workers.dispatch("a", 2, inline=True)
    assert calls == [1, 2]
    assert not workers.is_busy("a")


def test_shutdown_refuses_new_work() -> None:
    calls: list[int] = []
    workers: PodWorkers[int] = PodWorkers(lambda uid, item: calls.append(item))
    assert workers.shutdown(1)
    assert not workers.dispatch("a", 1, inline=True)
    workers.reopen()
    assert workers.dispatch("a", 2, inline=True)
    assert calls == [2]


def test_the_inbox_hands_each_message_to_one_pass() -> None:
    inbox = Inbox()
    assert not inbox.take()
    inbox.post("a")
    inbox.post("b")
    inbox.post("a")
    assert inbox.take() == {"a", "b"}
    assert not inbox.take()  # taken: the next pass sees only what is posted after
    inbox.post("c")
    assert inbox.take() == {"c"}


def test_a_grace_period_only_shortens() -> None:
    pod = Pod(ObjectMeta(name="web", uid="u"), PodSpec((), termination_grace_period_seconds=30))
    termination = Termination(pod)
    assert not termination.shorten(45, now=0)  # longer than the spec's
    assert termination.shorten(10, now=0)  # before the kill begins: the grace itself
    termination.begin(100)
    assert termination.lifecycle is PodLifecycle.TERMINATING
    assert termination.remaining(100) == 10
    assert not termination.shorten(9, now=102)  # would end at 111, after 110
    assert termination.shorten(3, now=102)  # ends at 105
    assert termination.remaining(102) == 3
    termination.finish()
    assert termination.lifecycle is PodLifecycle.TERMINATED


def test_terminations_keep_a_grace_asked_before_the_pod_left() -> None:
    pod = Pod(ObjectMeta(name="web", uid="u"), PodSpec((), termination_grace_period_seconds=30))
    terminations = Terminations()
    assert terminations.request_grace("u", 5, now=0) is None  # not leaving yet
    terminations.leave(pod)
    termination = terminations.get("u")
    assert termination is not None and termination.pod is pod
    termination.begin(0)
    assert termination.remaining(0) == 5
    assert terminations.request_grace("u", 2, now=1) is termination
    terminations.cancel({"u"})  # desired again
    assert terminations.get("u") is None
