"""What the tests against the project's test containerd share: its settings, ``ctr``, and a raw
CRI client that knows nothing of the ``cri`` plugin.

The raw client speaks ``runtime.v1`` over gRPC with the few messages the fixtures need, encoded
by hand on the protobuf wire (a field number, a wire type, a value): the fixtures clean up and
check what the plugin did without using the plugin's own client. Field numbers are CRI's
(``k8s.io/cri-api/pkg/apis/runtime/v1/api.proto``); a wrong one shows as an empty answer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.engines.availability import engine_unavailable

DEFAULT_STATE = Path("/var/tmp/kubecore-test-containerd")
NAMESPACE = "k8s.io"
"""The containerd namespace the CRI plugin keeps its images, sandboxes and containers in."""

RUNTIME = "/runtime.v1.RuntimeService/"
IMAGES = "/runtime.v1.ImageService/"
SANDBOX_READY = 0
"""``PodSandboxState.SANDBOX_READY``."""
TEST_LABEL = "io.kubecore.test"
"""The label each test puts on the sandboxes and containers it makes (its value: the test's)."""


@attrs.frozen
class TestContainerd:
    endpoint: str
    """``unix://...``: the CRI (and containerd's own API) of the test containerd."""
    image: str
    pause_image: str
    bridge: str
    subnet: str
    state: Path

    __test__ = False  # not a test class


@attrs.frozen
class TestRegistries:
    """The test Docker engine's registries (scripts/test-engine.sh), plain HTTP for containerd."""

    image: str
    """An image in the open registry with the same id as the test image: never remove it by
    id (CRI's RemoveImage removes every name of an id, the test image's too)."""
    pullable_image: str
    """An image of its own id, kept only in the registry: the one to pull, use and remove."""
    auth_image: str
    auth_user: str
    auth_password: str

    __test__ = False


@attrs.frozen
class CriScope:
    """What one test owns: pods of ``namespace``, sandboxes and containers with ``labels``."""

    namespace: str
    uid: str
    labels: dict[str, str]


def state_dir() -> Path:
    """Where scripts/test-containerd.sh keeps this containerd (the same rule as the script)."""
    if explicit := os.environ.get("KUBECORE_TEST_CONTAINERD_STATE"):
        return Path(explicit)
    engine = os.environ.get("KUBECORE_TEST_ENGINE_STATE", "/var/tmp/kubecore-test-engine")
    if engine != "/var/tmp/kubecore-test-engine":
        return Path(f"{engine}-containerd")
    return DEFAULT_STATE


def read_env_file(path: Path) -> dict[str, str]:
    """``export KEY=VALUE`` lines (as the script writes them) into a dict."""
    values: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            key, sep, value = line.strip().removeprefix("export ").partition("=")
            if sep and not key.startswith("#"):
                values[key.strip()] = value.strip().strip("'\"")
    return values


def setting(key: str) -> str:
    """A setting from the environment, else from the env file `up` wrote; empty when neither."""
    return os.environ.get(key) or read_env_file(state_dir() / "env").get(key, "")


def ctr(endpoint: str, *args: str, timeout: float = 30) -> str:
    """``ctr -a SOCKET -n k8s.io ARGS...``; its output, or an AssertionError with its stderr."""
    socket = endpoint.removeprefix("unix://")
    done = subprocess.run(
        ["ctr", "--address", socket, "--namespace", NAMESPACE, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"ctr {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def find_containerd() -> TestContainerd:
    """The test containerd's settings once it answers (a skip saying why it cannot be used;
    a failure when it lacks the test images)."""
    if os.environ.get("KUBECORE_TEST_CRI_ENDPOINT") == "":
        engine_unavailable(
            "KUBECORE_TEST_CRI_ENDPOINT is empty: the test containerd could not start "
            "(scripts/test says why)"
        )
    endpoint = setting("KUBECORE_TEST_CRI_ENDPOINT")
    if not endpoint:
        engine_unavailable(
            "no test containerd: KUBECORE_TEST_CRI_ENDPOINT is not set and "
            f"{state_dir() / 'env'} does not exist (run `bash scripts/test-containerd.sh up` "
            "as root, or `bash scripts/test`)"
        )
    if shutil.which("ctr") is None:
        engine_unavailable("`ctr` is not installed (package containerd)")
    try:
        ctr(endpoint, "version", timeout=10)
    except (AssertionError, subprocess.TimeoutExpired) as error:
        engine_unavailable(f"the test containerd at {endpoint} does not answer: {error}")
    found = TestContainerd(
        endpoint=endpoint,
        image=setting("KUBECORE_TEST_CRI_IMAGE") or "docker.io/kubecore-test/busybox:1.35",
        pause_image=setting("KUBECORE_TEST_CRI_PAUSE_IMAGE") or "docker.io/kubecore-test/pause:3.9",
        bridge=setting("KUBECORE_TEST_CRI_BRIDGE"),
        subnet=setting("KUBECORE_TEST_CRI_SUBNET"),
        state=state_dir(),
    )
    present = ctr(endpoint, "images", "ls", "-q").split()
    for image in (found.image, found.pause_image):
        if image not in present:
            pytest.fail(f"the test containerd has no {image}: run `scripts/test-containerd.sh up`")
    return found


def find_registries() -> TestRegistries:
    """The test engine's registries, from the environment or the env file its `up` wrote (a
    skip when there are none)."""
    engine_state = os.environ.get("KUBECORE_TEST_ENGINE_STATE", "/var/tmp/kubecore-test-engine")
    values = read_env_file(Path(engine_state) / "env")

    def get(key: str) -> str:
        return os.environ.get(key) or values.get(key, "")

    found = TestRegistries(
        image=get("KUBECORE_TEST_REGISTRY_IMAGE"),
        pullable_image=get("KUBECORE_TEST_PULLABLE_IMAGE"),
        auth_image=get("KUBECORE_TEST_AUTH_REGISTRY_IMAGE"),
        auth_user=get("KUBECORE_TEST_AUTH_USER"),
        auth_password=get("KUBECORE_TEST_AUTH_PASSWORD"),
    )
    if not found.pullable_image:
        engine_unavailable("no test engine settings (run `bash scripts/test-engine.sh up`)")
    return found


# The protobuf wire: just what these messages use.


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, value: bytes | str | int | bool) -> bytes:
    """One field: a string or message (length-delimited) or an integer or bool (varint)."""
    if isinstance(value, bool | int):
        return _varint(number << 3) + _varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def map_field(number: int, values: Mapping[str, str]) -> bytes:
    """A ``map<string, string>``: one entry message (key 1, value 2) per item."""
    return b"".join(field(number, field(1, k) + field(2, v)) for k, v in values.items())


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def decode(data: bytes) -> dict[int, list[Any]]:
    """Every field of one message by number: ints for varints, bytes for the rest."""
    fields: dict[int, list[Any]] = {}
    at = 0
    while at < len(data):
        key, at = _read_varint(data, at)
        number, kind = key >> 3, key & 7
        value: Any
        if kind == 0:
            value, at = _read_varint(data, at)
        elif kind == 2:
            size, at = _read_varint(data, at)
            value, at = data[at : at + size], at + size
        elif kind in (1, 5):
            width = 8 if kind == 1 else 4
            value, at = data[at : at + width], at + width
        else:
            raise ValueError(f"wire type {kind} at byte {at} is not one a CRI message uses")
        fields.setdefault(number, []).append(value)
    return fields


def first(fields: dict[int, list[Any]], number: int, default: Any = b"") -> Any:
    return fields.get(number, [default])[0]


def text(fields: dict[int, list[Any]], number: int) -> str:
    return bytes(first(fields, number)).decode()


@attrs.frozen
class SandboxInfo:
    id: str
    state: int
    ip: str
    labels: dict[str, str]


CONTAINER_CREATED, CONTAINER_RUNNING, CONTAINER_EXITED = 0, 1, 2
"""``ContainerState`` values."""


@attrs.frozen
class ContainerInfo:
    id: str
    sandbox_id: str
    name: str
    attempt: int
    state: int
    labels: dict[str, str]


def _labels(entries: Iterable[bytes]) -> dict[str, str]:
    return {text(decode(e), 1): text(decode(e), 2) for e in entries}


def sandbox_config(
    name: str,
    uid: str,
    namespace: str,
    log_directory: str,
    labels: Mapping[str, str],
    host_ports: Mapping[int, int],
) -> bytes:
    """A ``PodSandboxConfig``: metadata, hostname, log directory, TCP port mappings (on
    127.0.0.1), labels, and the Linux defaults (the pod's own network namespace)."""
    metadata = field(1, name) + field(2, uid) + field(3, namespace)
    ports = b"".join(
        field(5, field(2, container) + field(3, host) + field(4, "127.0.0.1"))
        for container, host in host_ports.items()
    )
    return (
        field(1, metadata)
        + field(2, name)
        + field(3, log_directory)
        + ports
        + map_field(6, labels)
        + field(8, b"")
    )


class RawCri:
    """The CRI calls the fixtures make, on a channel of their own (``close`` it)."""

    def __init__(self, endpoint: str, timeout: float = 30) -> None:
        import grpc

        self._channel = grpc.insecure_channel(endpoint)
        self._timeout = timeout
        self._sandboxes: dict[str, bytes] = {}  # the configs of the sandboxes it ran, by id

    def close(self) -> None:
        self._channel.close()

    def call(self, method: str, request: bytes = b"") -> dict[int, list[Any]]:
        stub = self._channel.unary_unary(method)  # raw bytes in, raw bytes out
        return decode(stub(request, timeout=self._timeout))

    def version(self) -> dict[str, str]:
        answer = self.call(RUNTIME + "Version", field(1, "v1"))
        keys = ("version", "runtime_name", "runtime_version", "runtime_api_version")
        return {key: text(answer, n) for n, key in enumerate(keys, 1)}

    def conditions(self) -> dict[str, bool]:
        """The runtime's conditions (``RuntimeReady``, ``NetworkReady``) from Status."""
        status = decode(first(self.call(RUNTIME + "Status"), 1))
        found = {}
        for raw in status.get(1, []):
            condition = decode(raw)
            found[text(condition, 1)] = bool(first(condition, 2, 0))
        return found

    def run_pod_sandbox(
        self,
        name: str,
        uid: str,
        namespace: str,
        log_directory: str,
        labels: Mapping[str, str],
        host_ports: Mapping[int, int] | None = None,
    ) -> str:
        """A pod sandbox (``host_ports``: container port to a TCP port on 127.0.0.1); its id."""
        config = sandbox_config(name, uid, namespace, log_directory, labels, host_ports or {})
        sandbox_id = text(self.call(RUNTIME + "RunPodSandbox", field(1, config)), 1)
        self._sandboxes[sandbox_id] = config
        return sandbox_id

    def start_container(
        self, sandbox_id: str, name: str, image: str, command: Sequence[str]
    ) -> str:
        """Create and start a container running ``command`` in a sandbox this client made,
        with the sandbox's labels (its log: ``NAME.log`` in the sandbox's log directory); its
        id."""
        sandbox = self._sandboxes[sandbox_id]
        config = (
            field(1, field(1, name))
            + field(2, field(1, image))
            + b"".join(field(3, part) for part in command[:1])
            + b"".join(field(4, part) for part in command[1:])
            + map_field(9, _labels(decode(sandbox).get(6, [])))
            + field(11, f"{name}.log")
        )
        request = field(1, sandbox_id) + field(2, config) + field(3, sandbox)
        container_id = text(self.call(RUNTIME + "CreateContainer", request), 1)
        self.call(RUNTIME + "StartContainer", field(1, container_id))
        return container_id

    def pod_sandbox(self, sandbox_id: str) -> SandboxInfo:
        status = decode(first(self.call(RUNTIME + "PodSandboxStatus", field(1, sandbox_id)), 1))
        network = decode(first(status, 5))
        return SandboxInfo(
            id=text(status, 1),
            state=first(status, 3, 0),
            ip=text(network, 1),
            labels=_labels(status.get(7, [])),
        )

    def list_pod_sandboxes(self, labels: Mapping[str, str]) -> list[str]:
        answer = self.call(RUNTIME + "ListPodSandbox", field(1, map_field(3, labels)))
        return [text(decode(item), 1) for item in answer.get(1, [])]

    def sandboxes_in(self, namespace: str) -> list[str]:
        """The pod sandboxes whose metadata names ``namespace`` (a pod's namespace)."""
        found = []
        for raw in self.call(RUNTIME + "ListPodSandbox").get(1, []):
            item = decode(raw)
            if text(decode(first(item, 2)), 3) == namespace:
                found.append(text(item, 1))
        return found

    def sandboxes_named(self, namespace: str, prefix: str) -> list[str]:
        """The pod sandboxes of a pod of ``namespace`` whose name starts with ``prefix``."""
        found = []
        for raw in self.call(RUNTIME + "ListPodSandbox").get(1, []):
            item = decode(raw)
            metadata = decode(first(item, 2))
            if text(metadata, 3) == namespace and text(metadata, 1).startswith(prefix):
                found.append(text(item, 1))
        return found

    def list_containers(self, labels: Mapping[str, str]) -> list[str]:
        answer = self.call(RUNTIME + "ListContainers", field(1, map_field(4, labels)))
        return [text(decode(item), 1) for item in answer.get(1, [])]

    def containers(self, labels: Mapping[str, str]) -> list[ContainerInfo]:
        """The containers carrying all of ``labels``, in every state."""
        answer = self.call(RUNTIME + "ListContainers", field(1, map_field(4, labels)))
        found = []
        for raw in answer.get(1, []):
            item = decode(raw)
            metadata = decode(first(item, 3))
            found.append(
                ContainerInfo(
                    id=text(item, 1),
                    sandbox_id=text(item, 2),
                    name=text(metadata, 1),
                    attempt=first(metadata, 2, 0),
                    state=first(item, 6, 0),
                    labels=_labels(item.get(8, [])),
                )
            )
        return found

    def sandboxes(self, labels: Mapping[str, str]) -> list[SandboxInfo]:
        """The pod sandboxes carrying all of ``labels`` (no IP: the list does not say it)."""
        answer = self.call(RUNTIME + "ListPodSandbox", field(1, map_field(3, labels)))
        found = []
        for raw in answer.get(1, []):
            item = decode(raw)
            found.append(
                SandboxInfo(
                    id=text(item, 1),
                    state=first(item, 3, 0),
                    ip="",
                    labels=_labels(item.get(5, [])),
                )
            )
        return found

    def exec_sync(
        self, container_id: str, command: Sequence[str], timeout: int = 10
    ) -> tuple[int, bytes, bytes]:
        """ExecSync: the exit code, stdout and stderr of ``command`` run in the container."""
        request = field(1, container_id) + b"".join(field(2, part) for part in command)
        answer = self.call(RUNTIME + "ExecSync", request + field(3, timeout))
        return int(first(answer, 3, 0)), bytes(first(answer, 1)), bytes(first(answer, 2))

    def stop_pod_sandbox(self, sandbox_id: str) -> None:
        self.call(RUNTIME + "StopPodSandbox", field(1, sandbox_id))

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        self.call(RUNTIME + "RemovePodSandbox", field(1, sandbox_id))

    def remove_container(self, container_id: str) -> None:
        self.call(RUNTIME + "RemoveContainer", field(1, container_id))

    def pull_image(self, image: str, username: str = "", password: str = "") -> str:
        """PullImage (with a user and password when given); the image's id (``sha256:...``)."""
        request = field(1, field(1, image))
        if username:
            request += field(2, field(1, username) + field(2, password))
        return text(self.call(IMAGES + "PullImage", request), 1)

    def image_id(self, image: str) -> str:
        """The image's id, empty when the runtime has no such image."""
        answer = self.call(IMAGES + "ImageStatus", field(1, field(1, image)))
        return text(decode(first(answer, 1)), 1)

    def remove_image(self, image: str) -> None:
        self.call(IMAGES + "RemoveImage", field(1, field(1, image)))

    def remove_owned(self, labels: Mapping[str, str], namespace: str) -> list[str]:
        """Remove the containers carrying all of ``labels``, and the pod sandboxes carrying
        them or made for a pod of ``namespace`` (with their containers): only those. The ids
        removed."""
        removed = []
        import grpc

        for container_id in self.list_containers(labels):
            try:
                self.call(RUNTIME + "StopContainer", field(1, container_id) + field(2, 0))
                self.remove_container(container_id)
            except grpc.RpcError:
                continue  # started again meanwhile: removed with its sandbox below
            removed.append(container_id)
        sandboxes = dict.fromkeys(self.list_pod_sandboxes(labels) + self.sandboxes_in(namespace))
        for sandbox_id in sandboxes:
            self.stop_pod_sandbox(sandbox_id)
            self.remove_pod_sandbox(sandbox_id)
            removed.append(sandbox_id)
        return removed
