"""``kubectl debug`` with ephemeral containers, by the real kubectl (Debian's 1.32 and PyPI's
1.37, each where installed) against a node on the in-memory runtime: the debug container is
added, runs in the target's process namespace (``ps`` there sees the app), shows running under
``ephemeralContainerStatuses`` and in ``describe``, and no other container restarts."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import attrs
import pytest

from tests.api.kubectl_support import (
    KUBECTL_BINARIES,
    KUBECTL_TIMEOUT,
    WEB_POD,
    Certs,
    Kubectl,
    Node,
    is_ready,
    make_certs,
    running_node,
    wait_for,
)

BINARIES = KUBECTL_BINARIES


@attrs.define
class Versioned(Kubectl):
    """``Kubectl`` running one given binary."""

    binary: str = ""
    label: str = ""

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.binary, *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=KUBECTL_TIMEOUT,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}"
            )
        return done


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[Node]:
    tmp = tmp_path_factory.mktemp("node")
    with running_node(tmp) as found:
        manifest = tmp / "web.yaml"
        manifest.write_text(WEB_POD)
        writer = found.writer(certs)
        subprocess.run(
            [_any_binary(), "apply", "-f", str(manifest)],
            env=writer.env(),
            check=True,
            capture_output=True,
            timeout=KUBECTL_TIMEOUT,
        )
        wait_for(lambda: is_ready(found.kubelet, "web"), what="web to be ready")
        yield found


def _any_binary() -> str:
    for path in BINARIES.values():
        if os.path.exists(path):
            return path
    pytest.skip("no kubectl binary is installed")


@pytest.fixture(params=sorted(BINARIES))
def kubectl(request: pytest.FixtureRequest, node: Node, certs: Certs) -> Versioned:
    binary = BINARIES[request.param]
    if not os.path.exists(binary):
        pytest.skip(f"{binary} is not installed")
    writer = node.writer(certs)
    return Versioned(writer.home, writer.kubeconfig, binary, request.param)


def jsonpath(kubectl: Versioned, expression: str) -> str:
    return kubectl.out("get", "pod", "web", "-o", f"jsonpath={expression}")


def test_kubectl_debug_adds_a_container_in_the_targets_pid_namespace(
    node: Node, kubectl: Versioned
) -> None:
    name = f"dbg-{kubectl.label}"
    app = node.running("web")
    done = kubectl.run(
        "debug",
        "web",
        "--image=busybox:1.35",
        "--target=main",
        "--profile=baseline",  # kubectl's general profile adds SYS_PTRACE: refused
        f"--container={name}",
        "--",
        "sleep",
        "1000",
    )
    assert 'Targeting container "main"' in done.stdout + done.stderr
    where = f'{{.status.ephemeralContainerStatuses[?(@.name=="{name}")].state.running.startedAt}}'
    wait_for(lambda: jsonpath(kubectl, where), what=f"{name} to show running")
    assert jsonpath(kubectl, "{.status.containerStatuses[*].restartCount}") == "0"
    assert node.running("web").id == app.id
    spec = f'{{.spec.ephemeralContainers[?(@.name=="{name}")].targetContainerName}}'
    assert jsonpath(kubectl, spec) == "main"

    (debug,) = [c for c in node.containers("web", name) if c.state.value == "running"]
    seen = node.runtime.exec_sync(debug.id, ["ps"], 5).stdout.decode()
    assert "echo serving" in seen, seen  # the app's process, seen from the debug container
    described = kubectl.out("describe", "pod", "web")
    assert "Ephemeral Containers:" in described and name in described
