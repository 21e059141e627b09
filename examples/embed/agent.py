"""An agent that embeds kubecore in its own process.

The agent keeps its own inventory of workloads (here a dict; in real life whatever its control
plane says), turns it into v1 pods and hands the complete list to an in-process ``Kubelet`` after
every change. The kubelet's background loop does the rest: sandboxes, pulls, starts, restarts,
status. The agent waits (bounded) until its pods settle (``kubecore.pod_settled``, the rule
``kubecore run --once`` stops on), prints a pod table and any failure, drains its workloads and
stops cleanly.

    python examples/embed/agent.py                      # on the in-memory fake runtime
    python examples/embed/agent.py --runtime process --image host   # real local processes
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Literal

from kubecore import Kubelet, KubeletConfig, Pod, load_runtime, pod_settled, pod_verdict
from kubecore.runtime import RuntimeSnapshot, RuntimeState
from kubecore.v1 import Container, ContainerState, ObjectMeta, PodSpec

logger = logging.getLogger("agent")

SOURCE = "inventory"
RestartPolicy = Literal["Always", "OnFailure", "Never"]
RUN_FOREVER = ("sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done")


class Inventory:
    """The agent's own source of pods: every change is sent to the kubelet as a full SET."""

    def __init__(self, kubelet: Kubelet, image: str) -> None:
        self._kubelet = kubelet
        self._image = image
        self._pods: dict[str, Pod] = {}

    def put(self, name: str, command: Sequence[str], restart: RestartPolicy = "Always") -> None:
        container = Container(name=name, image=self._image, command=tuple(command))
        spec = PodSpec(containers=(container,), restart_policy=restart)
        self._pods[name] = Pod(ObjectMeta(name=name, namespace="agent"), spec)
        self._push()

    def delete(self, name: str) -> None:
        self._pods.pop(name, None)
        self._push()

    def _push(self) -> None:
        self._kubelet.set_pods(self._pods.values(), source=SOURCE)


def failures(pods: Sequence[Pod]) -> list[str]:
    """``name: reason`` of each pod that failed, as ``kubecore run --once`` judges it."""
    lines = []
    for pod in pods:
        verdict, reason = pod_verdict(pod)
        if verdict == "failed":
            lines.append(f"{pod.metadata.name}: {reason}")
    return lines


def wait_for(check: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return check()


def table(pods: Sequence[Pod]) -> str:
    rows = [("NAME", "PHASE", "READY", "RESTARTS", "STATE")]
    for pod in pods:
        statuses = pod.status.container_statuses if pod.status else ()
        ready = f"{sum(s.ready for s in statuses)}/{len(pod.spec.containers)}"
        restarts = str(sum(s.restart_count for s in statuses))
        states = [_state(s.state) for s in statuses]
        phase = pod.status.phase if pod.status else "Unknown"
        rows.append((pod.metadata.name, phase, ready, restarts, ",".join(states) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def _state(state: ContainerState) -> str:
    if state.running is not None:
        return "Running"
    if state.terminated is not None:
        return f"Terminated({state.terminated.reason})"
    return f"Waiting({state.waiting.reason})" if state.waiting is not None else "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runtime", default="fake", help="an installed kubecore runtime")
    parser.add_argument("--image", default="busybox:1.36", help="the image of every workload")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for pods")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    with tempfile.TemporaryDirectory(prefix="kubecore-agent-") as root:
        bundle = load_runtime(args.runtime)
        config = KubeletConfig(node_name="embedded", root_dir=root, relist_interval=0.2)
        kubelet = Kubelet.from_bundle(bundle, config=config)
        inventory = Inventory(kubelet, args.image)
        kubelet.start()
        try:
            inventory.put("web", RUN_FOREVER)
            inventory.put("report", ("sh", "-c", "echo report written"), "OnFailure")
            settled = wait_for(lambda: all(pod_settled(p) for p in kubelet.pods()), args.timeout)
            pods = kubelet.pods()
            print(table(pods))
            failed = failures(pods)
            ok = settled and not failed
            print("settled" if settled else f"not settled after {args.timeout:.0f}s")
            for line in failed:
                print(f"failed {line}")

            inventory.delete("web")  # drain: the kubelet stops what the inventory dropped
            drained = wait_for(lambda: not _running(bundle.runtime.snapshot()), args.timeout)
            print("drained" if drained else "still running after the drain timeout")
        finally:
            kubelet.stop()
            bundle.runtime.close()
    return 0 if ok and drained else 1


def _running(snapshot: RuntimeSnapshot) -> bool:
    return any(c.state is RuntimeState.RUNNING for c in snapshot.containers)


if __name__ == "__main__":
    sys.exit(main())
