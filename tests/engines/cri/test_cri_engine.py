"""The test containerd itself: it answers CRI v1, holds the test images, gives a pod sandbox an
address on its own bridge, pulls from the local registries over plain HTTP, and the fixtures'
cleanup removes what a test made and nothing else."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import time
from pathlib import Path

import grpc
import pytest

from tests.engines.cri.support import (
    SANDBOX_READY,
    CriScope,
    RawCri,
    TestContainerd,
    TestRegistries,
    ctr,
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def http_status_line(host: str, port: int, timeout: float = 10.0) -> bytes:
    """The first line of the answer to ``GET /``, waiting (bounded) for the server to listen."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=2) as conn:
                conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
                return conn.recv(200).split(b"\r\n", 1)[0]
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_it_answers_cri_v1_and_is_ready(containerd: TestContainerd, raw_cri: RawCri) -> None:
    version = raw_cri.version()
    assert version["runtime_name"] == "containerd"
    assert version["runtime_api_version"] == "v1"
    # NetworkReady is false when containerd found no CNI config (its "cni plugin not initialized").
    assert raw_cri.conditions() == {"RuntimeReady": True, "NetworkReady": True}


def test_it_is_not_the_machines_containerd(containerd: TestContainerd) -> None:
    assert containerd.endpoint == f"unix://{containerd.state / 'containerd.sock'}"
    assert not containerd.endpoint.startswith("unix:///run/containerd")


def test_the_test_images_are_in_the_cri_namespace(
    containerd: TestContainerd, raw_cri: RawCri
) -> None:
    present = ctr(containerd.endpoint, "images", "ls", "-q").split()
    assert {containerd.image, containerd.pause_image} <= set(present)
    # The CRI sees them too: the pause image is its sandbox image, never pulled.
    image_id = raw_cri.image_id(containerd.image)
    assert image_id.startswith("sha256:")
    assert raw_cri.image_id(containerd.pause_image) == image_id


def test_a_pod_sandbox_gets_an_address_on_the_bridge(
    containerd: TestContainerd, raw_cri: RawCri, cri_scope: CriScope, tmp_path: Path
) -> None:
    sandbox_id = raw_cri.run_pod_sandbox(
        "smoke", cri_scope.uid, cri_scope.namespace, str(tmp_path), cri_scope.labels
    )
    sandbox = raw_cri.pod_sandbox(sandbox_id)
    assert sandbox.state == SANDBOX_READY
    assert sandbox.labels == cri_scope.labels
    assert ipaddress.ip_address(sandbox.ip) in ipaddress.ip_network(containerd.subnet)
    # Its veth is on the containerd's own bridge (the host side of the pod's interface).
    links = subprocess.run(
        ["ip", "-o", "link", "show", "master", containerd.bridge],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "veth" in links

    # The cleanup removes what this test made, found by its label or its namespace.
    assert raw_cri.remove_owned(cri_scope.labels, cri_scope.namespace) == [sandbox_id]
    assert raw_cri.list_pod_sandboxes(cri_scope.labels) == []
    assert raw_cri.sandboxes_in(cri_scope.namespace) == []


def test_a_container_serves_on_its_pod_address_and_a_host_port(
    containerd: TestContainerd, raw_cri: RawCri, cri_scope: CriScope, tmp_path: Path
) -> None:
    host_port = free_port()
    sandbox_id = raw_cri.run_pod_sandbox(
        "web",
        cri_scope.uid,
        cri_scope.namespace,
        str(tmp_path),
        cri_scope.labels,
        {8080: host_port},
    )
    raw_cri.start_container(
        sandbox_id, "httpd", containerd.image, ["httpd", "-f", "-p", "8080", "-h", "/www"]
    )
    pod_ip = raw_cri.pod_sandbox(sandbox_id).ip
    # busybox httpd answers 404 for the empty /www: an HTTP answer is the point.
    assert http_status_line(pod_ip, 8080).startswith(b"HTTP/1.")
    assert http_status_line("127.0.0.1", host_port).startswith(b"HTTP/1.")  # through portmap
    assert (tmp_path / "httpd.log").is_file()  # the CRI writes the container's log there


def test_the_cleanup_leaves_other_tests_pods(
    raw_cri: RawCri, cri_scope: CriScope, tmp_path: Path
) -> None:
    other = {"io.kubecore.test": cri_scope.uid + "-other"}
    sandbox_id = raw_cri.run_pod_sandbox("other", "other-uid", "kc-other", str(tmp_path), other)
    try:
        assert raw_cri.remove_owned(cri_scope.labels, cri_scope.namespace) == []
        assert raw_cri.list_pod_sandboxes(other) == [sandbox_id]
    finally:
        assert raw_cri.remove_owned(other, "kc-other") == [sandbox_id]


def test_it_pulls_from_the_local_registry_over_plain_http(
    raw_cri: RawCri, registries: TestRegistries
) -> None:
    image = registries.pullable_image  # its own id: removing it removes no other image
    present_before = raw_cri.image_id(image)
    try:
        assert raw_cri.pull_image(image).startswith("sha256:")
        assert raw_cri.image_id(image)
    finally:
        if not present_before:
            raw_cri.remove_image(image)
    if not present_before:
        assert raw_cri.image_id(image) == ""


def test_the_auth_registry_is_plain_http_and_asks_for_credentials(
    raw_cri: RawCri, registries: TestRegistries
) -> None:
    # Without credentials the registry itself refuses (so containerd reached it over HTTP);
    # with them the resolve gets past it. The image shares the test image's id: it is not
    # pulled, only resolved by a pull that fails.
    with pytest.raises(grpc.RpcError) as refused:
        raw_cri.pull_image(registries.auth_image.replace(":1.35", ":no-such-tag"))
    details = refused.value.details()
    assert "401" in details or "unauthorized" in details.lower(), details
    assert "https" not in details.lower(), details
    with pytest.raises(grpc.RpcError) as missing:
        raw_cri.pull_image(
            registries.auth_image.replace(":1.35", ":no-such-tag"),
            registries.auth_user,
            registries.auth_password,
        )
    assert "not found" in missing.value.details(), missing.value.details()
