"""Changes pushed to an embedder (``Kubelet.subscribe``), on the in-memory runtime in virtual
time: a pod's coming, its status changes and its going, each once and in order; events; a
pass that changes nothing delivers nothing; a slow consumer falls behind without holding the
sync back and is told so; a callback subscription; closing."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest

from kubecore._agent.changes import (
    ChangeSubscription,
    EventChange,
    FellBehind,
    PodChange,
    SubscriptionClosed,
)
from kubecore.testing import FakeNode

WEB = (
    "{apiVersion: v1, kind: Pod, metadata: {name: web},"
    " spec: {containers: [{name: app, image: nginx:1.25}]}}"
)
JOB = (
    "{apiVersion: v1, kind: Pod, metadata: {name: job}, spec: {restartPolicy: Never,"
    " containers: [{name: app, image: nginx:1.25}]}}"
)


def _drain(subscription: ChangeSubscription) -> list[object]:
    out: list[object] = []
    while (change := subscription.get(0)) is not None:
        out.append(change)
    return out


def _pod_changes(changes: list[object]) -> list[tuple[str, str, str]]:
    return [
        (c.type, c.pod.metadata.name, (c.pod.status.phase if c.pod.status else "") or "")
        for c in changes
        if isinstance(c, PodChange)
    ]


def test_a_pod_is_added_changes_and_goes_each_change_once_in_order(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        subscription = node.kubelet.subscribe(events=False)
        node.apply(WEB)
        node.run_until(lambda: node.status("web").phase == "Running", timeout=30)
        node.advance(5)  # passes that change nothing
        seen = _drain(subscription)
        kinds = _pod_changes(seen)
        assert kinds[0][:2] == ("ADDED", "web")
        assert kinds[-1] == ("MODIFIED", "web", "Running")
        assert all(kind == "MODIFIED" for kind, _, _ in kinds[1:])
        revisions = [c.revision for c in seen if isinstance(c, PodChange)]
        assert revisions == sorted(set(revisions))
        # Each change is a real one: no two in a row show the same pod.
        pods = [c.pod for c in seen if isinstance(c, PodChange)]
        assert all(a != b for a, b in itertools.pairwise(pods))

        (app,) = node.containers("web", "app", running=True)
        node.runtime.crash(app.id, code=2)
        node.advance(1)
        after_crash = _drain(subscription)
        assert after_crash, "the crash was not pushed"
        statuses = [c.pod.status for c in after_crash if isinstance(c, PodChange)]
        assert any(s and s.container_statuses[0].restart_count == 1 for s in statuses)

        node.delete("web")
        node.run_until(lambda: not node.kubelet.pods(), timeout=60)
        gone = _pod_changes(_drain(subscription))
        assert gone[-1][:2] == ("DELETED", "web")
        node.advance(5)
        assert _drain(subscription) == []
        subscription.close()


def test_a_new_subscriber_starts_with_the_pods_there_are(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        node.apply(WEB)
        node.apply(JOB)
        node.run_until(lambda: node.status("job").phase == "Running", timeout=30)
        with node.kubelet.subscribe() as subscription:
            first = _pod_changes(_drain(subscription))
            assert sorted((kind, name) for kind, name, _ in first) == [
                ("ADDED", "job"),
                ("ADDED", "web"),
            ]
        with node.kubelet.subscribe(initial=False) as quiet:
            assert _drain(quiet) == []


def test_events_are_pushed(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        subscription = node.kubelet.subscribe(pods=False)
        node.apply(WEB)
        node.run_until(lambda: node.status("web").phase == "Running", timeout=30)
        changes = _drain(subscription)
        assert changes and all(isinstance(c, EventChange) for c in changes)
        reasons = [c.event.reason for c in changes if isinstance(c, EventChange)]
        assert "Started" in reasons
        assert (
            reasons
            == [e.reason for e in node.kubelet.views.recent_events(name="web")][-len(reasons) :]
        )


def test_a_slow_consumer_falls_behind_and_is_told(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        subscription = node.kubelet.subscribe(maxsize=2, events=False)
        for index in range(5):
            node.apply(WEB.replace("name: web", f"name: web{index}"))
        node.run_until(
            lambda: all(p.status and p.status.phase == "Running" for p in node.kubelet.pods()),
            timeout=30,
        )
        changes = _drain(subscription)
        behind = [c for c in changes if isinstance(c, FellBehind)]
        assert behind and behind[0].dropped > 0
        # After it re-lists, it follows from the present: a new change reaches it.
        (app,) = node.containers("web0", "app", running=True)
        node.runtime.crash(app.id, code=1)
        node.advance(1)
        later = _drain(subscription)
        assert any(isinstance(c, PodChange) and c.pod.metadata.name == "web0" for c in later)


def test_a_callback_subscription_and_closing(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        seen: list[object] = []
        arrived = threading.Event()

        def take(change: object) -> None:
            seen.append(change)
            status = change.pod.status if isinstance(change, PodChange) else None
            if status is not None and status.phase == "Running":
                arrived.set()

        subscription = node.kubelet.subscribe(callback=take, events=False)
        node.apply(WEB)
        node.run_until(lambda: node.status("web").phase == "Running", timeout=30)
        assert arrived.wait(10)
        subscription.close()
        subscription.close()  # twice is fine
        with pytest.raises(SubscriptionClosed):
            subscription.get(0)
        assert list(subscription) == []


def test_closing_the_agent_ends_a_waiting_reader(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    subscription = node.kubelet.subscribe()
    done = threading.Event()

    def read() -> None:
        for _ in subscription:
            pass
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    node.close()
    assert done.wait(10)
    assert subscription.closed


def test_a_queue_of_less_than_one_is_refused(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node, pytest.raises(ValueError, match="at least 1"):
        node.kubelet.subscribe(maxsize=0)
