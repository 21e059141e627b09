"""``kubecore.aio``: the agent awaited from asyncio (through anyio, as trio would), on the
in-memory runtime with its real background loop: start and stop, apply pods, ``async for``
over the changes, ``await wait_for``, a timeout."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import kubecore
from kubecore.aio import AsyncKubelet
from kubecore.v1 import Pod

WEB = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: app, image: nginx:1.25}]}
"""


def _agent(tmp_path: Path) -> AsyncKubelet:
    bundle = kubecore.load_runtime("fake")
    config = kubecore.KubeletConfig(root_dir=str(tmp_path / "root"), relist_interval=0.2)
    return AsyncKubelet.from_bundle(bundle, config=config)


def _running(pods: list[Pod]) -> bool:
    return any(p.status is not None and p.status.phase == "Running" for p in pods)


def test_apply_and_wait_for_a_running_pod(tmp_path: Path) -> None:
    async def main() -> list[Pod]:
        async with _agent(tmp_path) as node:
            node.set_pods(kubecore.load_pods_from_string(WEB), source="mine")
            return await node.wait_for(_running, timeout=30)

    pods = asyncio.run(main())
    assert [p.metadata.name for p in pods] == ["web"]
    assert pods[0].status is not None and pods[0].status.phase == "Running"


def test_async_iteration_sees_the_pod_come_and_go(tmp_path: Path) -> None:
    async def main() -> list[tuple[str, str]]:
        seen: list[tuple[str, str]] = []
        async with _agent(tmp_path) as node:
            node.set_pods(kubecore.load_pods_from_string(WEB), source="mine")
            async for change in node.changes(events=False):
                assert isinstance(change, kubecore.PodChange)
                seen.append((change.type, change.pod.metadata.name))
                if change.type == "MODIFIED" and _running([change.pod]):
                    node.set_pods([], source="mine")
                if change.type == "DELETED":
                    break
        return seen

    seen = asyncio.run(asyncio.wait_for(main(), 60))
    assert seen[0] == ("ADDED", "web")
    assert seen[-1] == ("DELETED", "web")


def test_wait_for_times_out(tmp_path: Path) -> None:
    async def main() -> None:
        async with _agent(tmp_path) as node:
            await node.wait_for(lambda pods: bool(pods), timeout=0.5)

    with pytest.raises(TimeoutError):
        asyncio.run(main())


def test_the_same_rules_as_the_kubelet(tmp_path: Path) -> None:
    # One agent, two faces: what the async face shows is the Kubelet's own.
    node = _agent(tmp_path)
    node.set_pods(kubecore.load_pods_from_string(WEB), source="mine")
    report = asyncio.run(node.sync())
    assert report is not None
    assert [p.metadata.name for p in node.pods()] == [p.metadata.name for p in node.kubelet.pods()]
    node.kubelet.close()
