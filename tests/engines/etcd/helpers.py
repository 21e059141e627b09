"""Helpers shared by the etcd tests (plain functions; the fixtures live in conftest.py): an
``Agent`` fed by an etcd source, the status documents it wrote, polling."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubecore import Kubelet, KubeletConfig, SourcePoller
from kubecore.manifest import LAST_GOOD_DIR
from kubecore.runtime import POD_NAME_LABEL
from kubecore_fake import FakeRuntime

IMAGE = "busybox:1.36"
"""The image of the etcd tests' pods (the in-memory runtime pulls it)."""


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    """Poll ``predicate()`` until it is truthy (bounded); return its value or fail the test."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(0.05)


class Agent:
    """One node: a Kubelet on the in-memory runtime, fed by an EtcdSource, its status written
    back by an EtcdStatusSink, in real time."""

    def __init__(
        self,
        client: Any,
        prefix: str,
        node: str,
        tmp: Path,
        runtime: FakeRuntime | None = None,
        max_pods: int = 110,
        **sink: Any,
    ) -> None:
        from kubecore_etcd import EtcdSource, EtcdStatusSink

        self.node = node
        self.runtime = runtime or FakeRuntime(images=[IMAGE])
        (tmp / node).mkdir(parents=True, exist_ok=True)
        self.kubelet = Kubelet(
            self.runtime,
            self.runtime,
            config=KubeletConfig(
                node_name=node,
                root_dir=str(tmp / node / "root"),
                relist_interval=0.2,
                max_pods=max_pods,
            ),
            sources=["etcd"],
        )
        memory = tmp / node / "root" / LAST_GOOD_DIR  # where the command line keeps it
        self.source = EtcdSource(client, node, prefix=prefix, state_dir=memory)
        self.poller = SourcePoller([self.source], self.kubelet.update, tick=0.05)
        sink.setdefault("interval", 0.1)
        sink.setdefault("qps", 0)
        self.sink = EtcdStatusSink(self.kubelet, client, node, prefix=prefix, **sink)
        self.kubelet.start()
        self.poller.start()
        self.sink.start()

    def stop(self) -> None:
        self.sink.close()
        self.poller.stop()
        self.kubelet.stop()

    def running(self) -> dict[tuple[str, str], str]:
        """(pod, container) -> container id of every running container."""
        return {
            (c.labels.get(POD_NAME_LABEL, ""), c.name): c.id
            for c in self.runtime.find_containers()
            if c.state.value == "running"
        }

    def running_pods(self) -> set[str]:
        return {pod for pod, _ in self.running()}


def statuses(client: Any, prefix: str, node: str) -> dict[str, dict[str, Any]]:
    """``namespace/name`` -> the status document the agent wrote."""
    from kubecore_etcd import status_prefix

    values, _ = client.get_prefix(status_prefix(prefix, node))
    start = len(status_prefix(prefix, node))
    return {key[start:]: json.loads(value) for key, value in values.items()}
