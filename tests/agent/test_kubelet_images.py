"""Images: pull policies, the sandbox image, ImagePullBackOff, the pull rate limit."""

from __future__ import annotations

import itertools
from pathlib import Path

from kubecore._util.clock import ManualClock
from kubecore._util.ratelimit import TokenBucket
from tests.agent.support import make_node
from tests.builders import ctr, make_pod


def pulls(node: object, image: str) -> int:
    runtime = node.runtime  # type: ignore[attr-defined]
    return sum(1 for op, args in runtime.calls if op == "pull" and image in str(args[0]))


def test_if_not_present_does_not_pull_a_present_image(tmp_path: Path) -> None:
    node = make_node(tmp_path, pulled=["busybox:1.36"])
    node.kubelet.set_pods([make_pod("web", ctr("app", image="busybox:1.36"))])
    node.converge()
    assert node.running_names() == [("web", "app")]
    assert pulls(node, "busybox") == 0
    assert "Pulling" not in node.reasons("web")


def test_always_pulls_at_every_start(tmp_path: Path) -> None:
    node = make_node(tmp_path, pulled=["busybox:1.36"])
    pod = make_pod("web", ctr("app", image="busybox:1.36", image_pull_policy="Always"))
    node.kubelet.set_pods([pod])
    node.converge()
    assert pulls(node, "busybox") == 1
    node.runtime.crash(node.running("web", "app")[0].id)
    node.converge()
    assert pulls(node, "busybox") == 2


def test_never_refuses_an_absent_image(tmp_path: Path) -> None:
    node = make_node(tmp_path, pulled=["present:1"])
    pods = [
        make_pod("absent", ctr("app", image="absent:1", image_pull_policy="Never")),
        make_pod("present", ctr("app", image="present:1", image_pull_policy="Never")),
    ]
    node.kubelet.set_pods(pods)
    node.kubelet.sync_until_converged(max_syncs=5)
    assert node.running_names() == [("present", "app")]
    assert pulls(node, "absent") == 0
    assert "ErrImageNeverPull" in node.reasons("absent")


def test_the_sandbox_image_is_pulled_when_missing(tmp_path: Path) -> None:
    node = make_node(tmp_path, sandbox_image="registry.k8s.io/pause:3.9")
    node.kubelet.set_pods([make_pod("a")])
    node.converge()
    assert pulls(node, "pause") == 1
    node.kubelet.set_pods([make_pod("a"), make_pod("b")])
    node.converge()
    assert pulls(node, "pause") == 1
    assert len(node.runtime.list_sandboxes()) == 2


def test_image_pull_backoff_doubles_and_recovers(tmp_path: Path) -> None:
    node = make_node(tmp_path, images=["busybox:1.36"])
    node.kubelet.set_pods([make_pod("web", ctr("app", image="nowhere/missing:1"))])
    attempts: list[float] = []
    for _ in range(80):
        before = pulls(node, "missing")
        node.kubelet.sync()
        if pulls(node, "missing") > before:
            attempts.append(node.clock.monotonic())
        node.clock.advance(1)
    # 10 s, then 20 s, then 40 s between attempts
    gaps = [round(b - a) for a, b in itertools.pairwise(attempts)]
    assert gaps[:3] == [10, 20, 40]
    assert node.running() == []
    reasons = node.reasons("web")
    assert "Failed" in reasons and "BackOff" in reasons
    (cs,) = node.status("web").container_statuses
    assert cs.state.waiting is not None
    assert cs.state.waiting.reason in ("ImagePullBackOff", "ErrImagePull")

    node.runtime.add_image("nowhere/missing:1")
    node.run_until(lambda: bool(node.running("web", "app")), max_syncs=200)


def test_pulls_are_rate_limited(tmp_path: Path) -> None:
    node = make_node(tmp_path, pull_qps=1.0, pull_burst=1)
    pods = [make_pod(f"p{i}", ctr("app", image=f"img{i}:1")) for i in range(4)]
    node.kubelet.set_pods(pods)
    start = node.clock.monotonic()
    node.kubelet.sync()
    assert len(node.running()) == 4
    # one token at once, then one per second: four pulls need three seconds of waiting
    assert node.clock.monotonic() - start >= 3


def test_token_bucket() -> None:
    clock = ManualClock()
    bucket = TokenBucket(qps=5, burst=10, clock=clock)
    waited = [bucket.acquire() for _ in range(10)]
    assert waited == [0.0] * 10
    assert bucket.acquire() == 0.2  # the 11th waits for a refill
    clock.advance(10)
    assert [bucket.acquire() for _ in range(10)] == [0.0] * 10


def test_a_failed_pull_shows_err_image_pull_then_image_pull_backoff(tmp_path: Path) -> None:
    node = make_node(tmp_path, images=["busybox:1.36"])
    node.kubelet.set_pods([make_pod("web", ctr("app", image="nowhere/missing:1"))])

    def reason() -> str:
        (cs,) = node.status("web").container_statuses
        assert cs.state.waiting is not None
        return str(cs.state.waiting.reason)

    node.kubelet.sync()
    assert reason() == "ErrImagePull"
    node.clock.advance(1)
    node.kubelet.sync()
    assert reason() == "ImagePullBackOff"


def test_a_never_pull_policy_on_an_absent_image_shows_err_image_never_pull(
    tmp_path: Path,
) -> None:
    node = make_node(tmp_path)
    node.kubelet.set_pods(
        [make_pod("web", ctr("app", image="absent:1", image_pull_policy="Never"))]
    )
    node.kubelet.sync()
    (cs,) = node.status("web").container_statuses
    assert cs.state.waiting is not None and cs.state.waiting.reason == "ErrImageNeverPull"
