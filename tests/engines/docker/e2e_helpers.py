"""Helpers for the agent's end-to-end tests on the real engine (those using the ``make_agent``
fixture of conftest.py): pods as documents, waiting for their states, the engine's view of them."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from kubecore._agent.kubelet import Kubelet
from kubecore._contract.errors import ContainerRuntimeError
from kubecore._contract.labels import CONTAINER_NAME_LABEL, POD_NAMESPACE_LABEL
from kubecore._contract.protocols import Puller
from kubecore._contract.values import ExecResult, Image, ImageFsUsage, PullProgress, RegistryAuth
from kubecore._manifest import assign_uid, load_pods_from_dict
from kubecore._model.v1 import ContainerStatus, Pod
from tests.engines.docker.helpers import SLEEPER, wait_for

SOURCE = "e2e"
# Runs until TERM, and says so: a stop never waits out the grace period.
SERVER = list(SLEEPER)

AgentFactory = Callable[..., Kubelet]
"""The ``make_agent`` fixture: builds a started agent on the engine from pods and config."""


def forever(script: str) -> list[str]:
    """``script``, then run until TERM."""
    return ["sh", "-c", f"trap 'exit 0' TERM; {script}; while :; do sleep 1 & wait $!; done"]


def container(
    name: str, image: str, command: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    return {"name": name, "image": image, "command": command or SERVER, **extra}


def make_pod(
    name: str,
    namespace: str,
    containers: list[dict[str, Any]],
    **spec: Any,
) -> Pod:
    """A v1 Pod (from a manifest mapping) with a stable uid; grace period 1 s unless given."""
    spec.setdefault("terminationGracePeriodSeconds", 1)
    data = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": containers, **spec},
    }
    (pod,) = load_pods_from_dict(data, source_name=f"{namespace}/{name}")
    return assign_uid(pod, SOURCE, node_name="e2e-node")


def get_pod(kubelet: Kubelet, namespace: str, name: str) -> Pod:
    pod = kubelet.get_pod(namespace, name)
    assert pod is not None, f"pod {namespace}/{name} is not on the node"
    return pod


def status_of(pod: Pod, name: str) -> ContainerStatus | None:
    statuses = pod.status.container_statuses if pod.status is not None else ()
    return next((s for s in statuses if s.name == name), None)


def wait_pod(
    kubelet: Kubelet,
    namespace: str,
    name: str,
    predicate: Callable[[Pod], bool],
    *,
    timeout: float = 20.0,
    what: str = "",
) -> Pod:
    """Poll the agent's view of the pod until ``predicate`` holds (bounded)."""

    def check() -> Pod | None:
        pod = kubelet.get_pod(namespace, name)
        return pod if pod is not None and predicate(pod) else None

    found: Pod = wait_for(check, timeout=timeout, interval=0.1, what=what or f"{namespace}/{name}")
    return found


def all_running(pod: Pod) -> bool:
    status = pod.status
    return (
        status is not None
        and status.phase == "Running"
        and bool(status.container_statuses)
        and all(s.state.running is not None for s in status.container_statuses)
    )


def running_ids(pod: Pod) -> dict[str, str]:
    """Container name -> engine container id (without the ``docker://`` prefix)."""
    statuses = pod.status.container_statuses if pod.status is not None else ()
    return {s.name: s.container_id.split("://")[-1] for s in statuses}


def engine_containers(raw: Any, namespace: str, name: str | None = None) -> list[dict[str, Any]]:
    """What the engine itself lists for the namespace (every state), optionally one container."""
    labels = [f"{POD_NAMESPACE_LABEL}={namespace}"]
    if name is not None:
        labels.append(f"{CONTAINER_NAME_LABEL}={name}")
    found: list[dict[str, Any]] = raw.containers(all=True, filters={"label": labels})
    return found


def exec_until(
    kubelet: Kubelet,
    namespace: str,
    pod: str,
    container: str,
    command: list[str],
    *,
    timeout: float = 10.0,
    ok: Callable[[ExecResult], bool] = lambda r: r.exit_code == 0,
) -> ExecResult:
    """Exec through the agent until the result is ``ok`` (bounded); the last result otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = kubelet.streams.exec(namespace, pod, container, command, timeout=5)
        except ContainerRuntimeError as exc:
            result = ExecResult(exit_code=-1, stderr=str(exc).encode())
        if ok(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


class ScopedPuller:
    """Shows image GC only the images whose tags start with one of ``prefixes`` (mutable).

    The engine is shared with the other Docker tests: image GC with thresholds of 0 % would
    otherwise remove every unused image on it. Removal and usage go to the real puller.
    """

    def __init__(self, inner: Puller, prefixes: set[str] | None = None) -> None:
        self.inner = inner
        self.prefixes: set[str] = set() if prefixes is None else prefixes
        self.removed: list[str] = []

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        return self.inner.pull(image, auth, progress)

    def image_status(self, image: str) -> Image | None:
        return self.inner.image_status(image)

    def list_images(self) -> list[Image]:
        prefixes = tuple(self.prefixes)
        return [
            i
            for i in self.inner.list_images()
            if prefixes and any(t.startswith(prefixes) for t in i.tags)
        ]

    def remove_image(self, image: str) -> None:
        self.removed.append(image)
        self.inner.remove_image(image)

    def image_fs_usage(self) -> ImageFsUsage | None:
        return self.inner.image_fs_usage()


def docker_config(auths: Mapping[str, tuple[str, str]]) -> dict[str, Any]:
    """A Docker client config with ``auth`` entries (as ``docker login`` writes them)."""
    import base64

    return {
        "auths": {
            server: {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}
            for server, (user, password) in auths.items()
        }
    }
