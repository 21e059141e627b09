"""The engine under test, as the scenarios that hold on every runtime see it (Docker, and the CRI
on containerd): the runtime plugin and its options (for an agent in the test's process or for
``kubecore run``), what the engine itself lists for a pod namespace, a command run in a container
behind the agent's back, and the clean-up of a namespace.

Each engine is read from the engine itself (docker-py for Docker, the raw CRI client of
``tests.engines.cri.support`` for containerd), never through the plugin under test. An engine
that is not up makes its scenarios skip, saying which engine and how to bring it up.
"""

from __future__ import annotations

import abc
import contextlib
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kubecore._contract.labels import (
    CONTAINER_NAME_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    RESTART_COUNT_ANNOTATION,
)
from kubecore._plugins.registry import RuntimeBundle

if TYPE_CHECKING:
    from tests.engines.cri.support import TestContainerd

DOCKER = "docker"
CRI = "cri"
ENGINES = (DOCKER, CRI)
SANDBOX_CONTAINER = "POD"
"""The container name Docker's sandbox (pause) container carries."""


@attrs.frozen
class EngineContainer:
    """One app container as the engine lists it (sandboxes are not in this list)."""

    id: str
    pod: str
    name: str
    attempt: int
    """The restart count the agent made it for."""
    running: bool
    created: bool
    """Made and never started: what an agent killed between create and start leaves."""


@attrs.frozen
class EngineSandbox:
    id: str
    pod: str
    ready: bool


@attrs.frozen
class Registries:
    """The test engine's registries (scripts/test-engine.sh): one open, one behind a password."""

    image: str
    """In the open registry, with the same id as the test image (never remove it by id)."""
    pullable_image: str
    """In the open registry only, of an id of its own: the one to pull and remove."""
    auth_image: str
    auth_user: str
    auth_password: str


class EngineUnderTest(abc.ABC):
    """What a scenario asks of the engine it runs on."""

    name: str
    image: str
    """The test busybox, present on the engine."""
    registries: Registries
    binds_host_paths_only: bool
    """The runtime's mounts are binds of host paths (CRI): the agent mounts a memory-backed
    emptyDir's tmpfs on the host."""

    @abc.abstractmethod
    def runtime_options(self, root: Path) -> dict[str, str]:
        """The plugin's options (``--runtime-option`` ``KEY=VALUE``) for an agent whose files
        are under ``root``."""

    def open(self, root: Path) -> RuntimeBundle:
        """A runtime and puller of the plugin under test, loaded as an agent loads it."""
        from kubecore._plugins.registry import plugin_manager

        return plugin_manager().load_runtime(self.name, **self.runtime_options(root))

    def run_arguments(self, root: Path) -> list[str]:
        """``kubecore run`` arguments choosing the engine."""
        arguments = ["--runtime", self.name]
        for key, value in self.runtime_options(root).items():
            arguments += ["--runtime-option", f"{key}={value}"]
        return arguments

    @abc.abstractmethod
    def containers(self, namespace: str, name: str | None = None) -> list[EngineContainer]:
        """The app containers of a pod namespace (every state), optionally of one name."""

    @abc.abstractmethod
    def sandboxes(self, namespace: str) -> list[EngineSandbox]:
        """The pod sandboxes of a pod namespace (every state)."""

    def pod_volumes(self, namespace: str) -> list[str]:
        """The volumes the engine itself holds for pods of the namespace (none but Docker's)."""
        return []

    @abc.abstractmethod
    def exec(self, container_id: str, command: Sequence[str]) -> tuple[int, bytes]:
        """Run ``command`` in the container through the engine: exit code and stdout."""

    @abc.abstractmethod
    def has_image(self, reference: str) -> bool: ...

    @abc.abstractmethod
    def remove_image(self, reference: str) -> None:
        """Remove that name of an image, if there: the image stays while other names have it
        (the test image has several: never remove it by id)."""

    @abc.abstractmethod
    def remove_namespace(self, namespace: str) -> None:
        """Remove every sandbox and container of the pod namespace."""

    @abc.abstractmethod
    def close(self) -> None: ...


class DockerEngine(EngineUnderTest):
    name = DOCKER
    binds_host_paths_only = False

    def __init__(self) -> None:
        import docker

        from tests.engines.docker.helpers import find_docker_engine

        self.settings = find_docker_engine()
        self.image = self.settings.image
        self.registries = Registries(
            image=self.settings.registry_image,
            pullable_image=self.settings.pullable_image,
            auth_image=self.settings.auth_registry_image,
            auth_user=self.settings.auth_user,
            auth_password=self.settings.auth_password,
        )
        self.raw = docker.APIClient(base_url=self.settings.base_url, version="auto", timeout=30)

    def runtime_options(self, root: Path) -> dict[str, str]:
        return {
            "base_url": self.settings.base_url,
            "timeout": "30",
            "sandbox_image": self.settings.pause_image,
            "sandbox_stop_timeout": "2",
        }

    def _listed(self, namespace: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.raw.containers(
            all=True, filters={"label": f"{POD_NAMESPACE_LABEL}={namespace}"}
        )
        return found

    def containers(self, namespace: str, name: str | None = None) -> list[EngineContainer]:
        from kubecore_docker import ANNOTATION_PREFIX

        found = []
        for c in self._listed(namespace):
            labels = c["Labels"]
            container = labels.get(CONTAINER_NAME_LABEL, SANDBOX_CONTAINER)
            if container == SANDBOX_CONTAINER or (name is not None and container != name):
                continue
            attempt = labels.get(ANNOTATION_PREFIX + RESTART_COUNT_ANNOTATION, "0")
            found.append(
                EngineContainer(
                    id=c["Id"],
                    pod=labels.get(POD_NAME_LABEL, ""),
                    name=container,
                    attempt=int(attempt),
                    running=c["State"] == "running",
                    created=c["State"] == "created",
                )
            )
        return found

    def sandboxes(self, namespace: str) -> list[EngineSandbox]:
        return [
            EngineSandbox(
                id=c["Id"], pod=c["Labels"].get(POD_NAME_LABEL, ""), ready=c["State"] == "running"
            )
            for c in self._listed(namespace)
            if c["Labels"].get(CONTAINER_NAME_LABEL, SANDBOX_CONTAINER) == SANDBOX_CONTAINER
        ]

    def pod_volumes(self, namespace: str) -> list[str]:
        found = self.raw.volumes(filters={"label": f"{POD_NAMESPACE_LABEL}={namespace}"})
        return [v["Name"] for v in found.get("Volumes") or ()]

    def exec(self, container_id: str, command: Sequence[str]) -> tuple[int, bytes]:
        run = self.raw.exec_create(container_id, list(command))
        output: bytes = self.raw.exec_start(run, demux=True)[0] or b""
        return int(self.raw.exec_inspect(run)["ExitCode"]), output

    def has_image(self, reference: str) -> bool:
        return bool(self.raw.images(name=reference))

    def remove_image(self, reference: str) -> None:
        with contextlib.suppress(Exception):
            self.raw.remove_image(reference)

    def remove_namespace(self, namespace: str) -> None:
        for c in self._listed(namespace):
            with contextlib.suppress(Exception):
                self.raw.remove_container(c["Id"], force=True, v=True)
        for volume in self.pod_volumes(namespace):
            with contextlib.suppress(Exception):
                self.raw.remove_volume(volume)

    def close(self) -> None:
        self.raw.close()


class CriEngine(EngineUnderTest):
    name = CRI
    binds_host_paths_only = True

    def __init__(self, settings: TestContainerd | None = None) -> None:
        """The shared test containerd, or the one ``settings`` describe (a test's own)."""
        from tests.engines.cri.support import RawCri, find_containerd, find_registries

        self.settings = settings or find_containerd()
        found = find_registries()
        self.image = self.settings.image
        self.registries = Registries(
            image=found.image,
            pullable_image=found.pullable_image,
            auth_image=found.auth_image,
            auth_user=found.auth_user,
            auth_password=found.auth_password,
        )
        self.raw = RawCri(self.settings.endpoint)

    def runtime_options(self, root: Path) -> dict[str, str]:
        return {
            "endpoint": self.settings.endpoint,
            "timeout": "30",
            "log_root": str(root / "pod-logs"),
        }

    def containers(self, namespace: str, name: str | None = None) -> list[EngineContainer]:
        from tests.engines.cri.support import CONTAINER_CREATED, CONTAINER_RUNNING

        wanted = {POD_NAMESPACE_LABEL: namespace}
        if name is not None:
            wanted[CONTAINER_NAME_LABEL] = name
        return [
            EngineContainer(
                id=c.id,
                pod=c.labels.get(POD_NAME_LABEL, ""),
                name=c.name,
                attempt=c.attempt,
                running=c.state == CONTAINER_RUNNING,
                created=c.state == CONTAINER_CREATED,
            )
            for c in self.raw.containers(wanted)
        ]

    def sandboxes(self, namespace: str) -> list[EngineSandbox]:
        from tests.engines.cri.support import SANDBOX_READY

        return [
            EngineSandbox(
                id=s.id, pod=s.labels.get(POD_NAME_LABEL, ""), ready=s.state == SANDBOX_READY
            )
            for s in self.raw.sandboxes({POD_NAMESPACE_LABEL: namespace})
        ]

    def exec(self, container_id: str, command: Sequence[str]) -> tuple[int, bytes]:
        code, out, _ = self.raw.exec_sync(container_id, command)
        return code, out

    def has_image(self, reference: str) -> bool:
        return bool(self.raw.image_id(reference))

    def remove_image(self, reference: str) -> None:
        # Not CRI's RemoveImage: it removes every name of the image's id.
        from tests.engines.cri.support import ctr

        if self.has_image(reference):
            ctr(self.settings.endpoint, "images", "rm", reference)

    def remove_namespace(self, namespace: str) -> None:
        self.raw.remove_owned({POD_NAMESPACE_LABEL: namespace}, namespace)

    def close(self) -> None:
        self.raw.close()


def host_mounts_under(root: Path) -> list[str]:
    """The mount points on the host below ``root`` (from this process's mount table), deepest
    first."""
    prefix = str(root.resolve()) + "/"
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix):
            found.append(point)
    return sorted(found, reverse=True)


def unmount_under(root: Path) -> list[str]:
    """Unmount what is mounted below ``root`` (the tmpfs of a pod the test left running when its
    agent stopped, as a stopped kubelet leaves it); what was unmounted."""
    found = host_mounts_under(root)
    for point in found:
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
    return found


_KINDS: Mapping[str, type[EngineUnderTest]] = {DOCKER: DockerEngine, CRI: CriEngine}


@contextlib.contextmanager
def engine_under_test(name: str) -> Iterator[EngineUnderTest]:
    """The engine by plugin name (skips when it is not up), closed afterwards."""
    engine = _KINDS[name]()
    try:
        yield engine
    finally:
        engine.close()
