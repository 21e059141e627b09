"""``kubectl explain`` at any depth, and ``--validate=strict``, with every kubectl at hand: both
read the node's OpenAPI v3 document (``/openapi/v3/api/v1``)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.kubectl_support import (
    KUBECTL_TIMEOUT,
    Certs,
    Node,
    kubectl_binaries,
    make_certs,
    running_node,
)

KUBECTLS = kubectl_binaries()
pytestmark = pytest.mark.skipif(not KUBECTLS, reason="no kubectl binary is installed")


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with running_node(tmp_path_factory.mktemp("explain")) as found:
        yield found


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def _run(binary: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary, *args], env=env, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT
    )


def explain(node: Node, binary: str, *args: str) -> str:
    reader = node.reader()
    done = _run(binary, reader.env(), "explain", *args)
    assert done.returncode == 0, f"kubectl explain {' '.join(args)}: {done.stderr}"
    return done.stdout


CASES = {
    "pod.spec.containers": [
        "FIELD: containers <[]Container>",
        "image\t<string> -required-",
        "livenessProbe\t<Probe>",
        "resources\t<ResourceRequirements>",
        "The pod's containers; at least one.",
    ],
    "pod.spec.containers.livenessProbe.httpGet": [
        "FIELD: httpGet <HTTPGetAction>",
        "port\t<IntOrString> -required-",
        "httpHeaders\t<[]HTTPHeader>",
    ],
    "pod.status.containerStatuses.state": [
        "FIELD: state <ContainerState>",
        "running\t<ContainerStateRunning>",
        "terminated\t<ContainerStateTerminated>",
    ],
    "pods.spec.containers.resources": ["limits\t<map[string]Quantity>"],
    "configmap.data": ["KIND:       ConfigMap", "FIELD: data <map[string]string>"],
    "secret": ["KIND:       Secret", "stringData\t<map[string]string>"],
    "pod.metadata": ["labels\t<map[string]string>", "resourceVersion\t<string>"],
    "nodes": ["KIND:       Node", "metadata\t<ObjectMeta>", "Only the fields every object"],
}


@pytest.mark.parametrize("binary", KUBECTLS)
@pytest.mark.parametrize("path", sorted(CASES))
def test_explain_prints_types_and_descriptions_at_any_depth(
    node: Node, binary: str, path: str
) -> None:
    out = explain(node, binary, path)
    for wanted in CASES[path]:
        assert wanted in out, f"{wanted!r} not in:\n{out}"


@pytest.mark.parametrize("binary", KUBECTLS)
def test_explain_recursive_walks_every_level(node: Node, binary: str) -> None:
    out = explain(node, binary, "pod", "--recursive")
    lines = out.splitlines()
    assert "      livenessProbe\t<Probe>" in lines
    assert "          path\t<string>" in lines  # spec.containers.livenessProbe.httpGet.path
    assert "        waiting\t<ContainerStateWaiting>" in lines  # status.containerStatuses.state


@pytest.mark.parametrize("binary", KUBECTLS)
def test_explain_names_a_field_that_does_not_exist(node: Node, binary: str) -> None:
    done = _run(binary, node.reader().env(), "explain", "pod.spec.containers.nope")
    assert done.returncode != 0
    assert 'field "nope" does not exist' in done.stderr


@pytest.mark.parametrize("binary", KUBECTLS)
def test_strict_validation_is_left_to_the_node_which_refuses_an_unknown_field(
    node: Node, certs: Certs, binary: str, tmp_path: Path
) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n"
        "  containers:\n  - {name: main, image: busybox:1.35, bogus: 1}\n"
    )
    writer = node.writer(certs)
    env = {**writer.env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    done = _run(binary, env, "create", "--validate=strict", "-f", str(manifest), "-v=6")
    assert done.returncode != 0
    assert "spec.containers[0].bogus: unknown field" in done.stderr
    assert "fieldValidation=Strict" in done.stderr  # kubectl saw the node validates
    assert node.kubelet.get_pod("default", "bad") is None
