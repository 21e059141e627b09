"""The agent's v1 Node document (``kubecore.server.node_document``) from a kubelet's own
reports, without a server."""

from __future__ import annotations

from pathlib import Path

import attrs

from kubecore._api.nodes import os_image
from kubecore._api.tables import node_cells
from kubecore._contract.values import RuntimeVersion
from kubecore._util.host import detect_host_ip
from kubecore.server import node_document


@attrs.frozen
class _Config:
    root_dir: str
    node_name: str = "node-a"
    max_pods: int = 17
    host_ip: str = "10.0.0.5"

    def labels(self) -> dict[str, str]:
        return {"kubernetes.io/hostname": self.node_name, "node-role.kubernetes.io/edge": ""}


@attrs.define
class _Kubelet:
    config: _Config
    healthy: tuple[bool, str] = (True, "")
    runtime_up: bool = True

    @property
    def views(self) -> _Kubelet:
        return self

    def runtime_version(self) -> RuntimeVersion:
        if not self.runtime_up:
            raise ConnectionError("runtime down")
        return RuntimeVersion(runtime_name="fake", runtime_version="1.2")

    def healthz(self) -> tuple[bool, str]:
        return self.healthy


def test_the_document_reads_the_kubelet(tmp_path: Path) -> None:
    kubelet = _Kubelet(_Config(str(tmp_path)))
    node = node_document(kubelet, created="2026-01-01T00:00:00Z")
    assert node["kind"] == "Node" and node["apiVersion"] == "v1"
    assert node["metadata"]["name"] == "node-a"
    assert node["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-a"
    status = node["status"]
    assert status["addresses"] == [
        {"type": "InternalIP", "address": "10.0.0.5"},
        {"type": "Hostname", "address": "node-a"},  # the node's name, not the host's
    ]
    assert status["capacity"]["pods"] == "17" and int(status["capacity"]["cpu"]) >= 1
    assert status["allocatable"] == status["capacity"]
    assert status["conditions"] == [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is ready",
        }
    ]
    info = status["nodeInfo"]
    assert info["containerRuntimeVersion"] == "fake://1.2"
    assert info["kubeletVersion"].startswith("kubecore/")
    assert info["osImage"] == os_image()


def test_an_unhealthy_kubelet_is_not_ready_and_a_down_runtime_has_no_version(
    tmp_path: Path,
) -> None:
    kubelet = _Kubelet(_Config(str(tmp_path)), healthy=(False, "PLEG stalled"), runtime_up=False)
    node = node_document(kubelet)
    assert "creationTimestamp" not in node["metadata"]
    (ready,) = node["status"]["conditions"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "KubeletNotReady",
        "PLEG stalled",
    )
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"] == ""
    forced = node_document(kubelet, "other", ready=True, reason="")
    assert forced["metadata"]["name"] == "other"
    assert forced["status"]["conditions"][0]["status"] == "True"


def test_without_a_host_ip_the_internal_ip_is_the_default_routes(tmp_path: Path) -> None:
    kubelet = _Kubelet(_Config(str(tmp_path), host_ip=""))
    node = node_document(kubelet, "named-otherwise")
    assert node["status"]["addresses"] == [
        {"type": "InternalIP", "address": detect_host_ip()},
        {"type": "Hostname", "address": "named-otherwise"},
    ]


def test_the_table_row_as_kubectl_prints_it(tmp_path: Path) -> None:
    kubelet = _Kubelet(_Config(str(tmp_path), host_ip="192.0.2.7"))
    node = node_document(kubelet, created="2026-01-01T00:00:00Z")
    cells = node_cells(node, now=1767225600.0 + 90)
    assert cells[:4] == ["node-a", "Ready", "edge", "90s"]
    assert cells[5:7] == ["192.0.2.7", "<none>"]
    assert cells[9] == "fake://1.2"


def test_os_image_reads_pretty_name(tmp_path: Path) -> None:
    release = tmp_path / "os-release"
    release.write_text('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 13 (trixie)"\n')
    assert os_image(str(release)) == "Debian GNU/Linux 13 (trixie)"
    assert os_image(str(tmp_path / "absent")) == "Unknown"
