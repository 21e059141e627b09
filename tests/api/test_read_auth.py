"""Reads that told too much (issue 27): with a token configured, every endpoint but the health
checks needs it, the kubelet's own read endpoints too and on loopback too (they answered 200 to
anyone, off loopback on a TLS agent as well); ``anonymous_reads`` opens the reads only, and says
so off loopback; ``/logs/`` serves only what every user of the node may read; a plain-HTTP agent
answers only a ``Host`` that names it (DNS rebinding)."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from kubecore._api.server import ApiServerConfig, attach_api
from kubecore._cli import resolve_settings
from kubecore._cli.commands import kube_api
from kubecore._http.server import KubeletServer, ServerConfig
from tests.api.kubectl_support import (
    AUTH,
    TOKEN,
    Certs,
    Node,
    kubectl_for,
    make_certs,
    needs_kubectl,
    running_node,
)
from tests.cli.support import parsed_flags

READS = (
    "/pods",
    "/pods/default/talker",
    "/containerLogs/default/talker/main",
    "/logs/",
    "/stats/summary",
    "/why/default/talker",
    "/metrics",
    "/metrics/resource",
    "/api/v1/pods",
    "/api/v1/namespaces/default/pods/talker/log",
)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as running:
        yield running


@pytest.fixture
def certs(tmp_path: Path) -> Certs:
    return make_certs(tmp_path / "certs")


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "kubelet.log").write_text("started\n")
    (logs / "kubelet.log").chmod(0o644)
    return logs


def serve(node: Node, **config: object) -> KubeletServer:
    server = KubeletServer(
        node.kubelet,
        ServerConfig(port=0, request_timeout=10.0, **config),
        api=node.api,  # type: ignore[arg-type]
    ).start()
    node.servers.append(server)
    return server


def test_every_read_needs_the_token_on_loopback(node: Node, log_dir: Path) -> None:
    server = serve(node, log_dir=str(log_dir))
    for path in READS:
        anonymous = requests.get(server.url + path, timeout=10)
        assert anonymous.status_code == 401, (path, anonymous.text)
        assert anonymous.json()["reason"] == "Unauthorized"
        assert "talker" not in anonymous.text and "started" not in anonymous.text
        wrong = requests.get(server.url + path, headers={"Authorization": "Bearer x"}, timeout=10)
        assert wrong.status_code == 401, path
        assert requests.get(server.url + path, headers=AUTH, timeout=10).status_code == 200, path


def test_the_health_checks_stay_open(node: Node) -> None:
    assert requests.get(node.http.url + "/healthz", timeout=10).text == "ok\n"
    for path in ("/livez", "/readyz"):  # not served, but never a 401
        assert requests.get(node.http.url + path, timeout=10).status_code == 404


def test_every_read_needs_the_token_on_a_tls_agent(node: Node, certs: Certs) -> None:
    # The attack: on an agent with TLS and a token, /pods (with literal env values),
    # /containerLogs, /stats/summary and /metrics answered 200 with no token.
    server = node.https(certs)
    for path in READS:
        if path == "/logs/":
            continue  # not configured here: the 404 comes after the 401 below
        anonymous = requests.get(server.url + path, verify=str(certs.ca), timeout=10)
        assert anonymous.status_code == 401, (path, anonymous.text)
        served = requests.get(server.url + path, headers=AUTH, verify=str(certs.ca), timeout=10)
        assert served.status_code == 200, path
    assert requests.get(server.url + "/logs/", verify=str(certs.ca), timeout=10).status_code == 401


def test_anonymous_reads_open_the_reads_only(node: Node, tmp_path: Path, log_dir: Path) -> None:
    token_file = tmp_path / "token"
    api = attach_api(
        node.kubelet,
        ApiServerConfig(token_file=str(token_file), anonymous_reads=True),
        address="127.0.0.1",
    )
    server = KubeletServer(
        node.kubelet, ServerConfig(port=0, log_dir=str(log_dir)), api=api
    ).start()
    node.servers.append(server)
    for path in READS:
        assert requests.get(server.url + path, timeout=10).status_code == 200, path
    pod = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    url = server.url + "/api/v1/namespaces/default/configmaps"
    assert requests.post(url, json=pod, timeout=10).status_code == 401
    secrets = requests.get(server.url + "/api/v1/namespaces/default/secrets", timeout=10)
    assert secrets.status_code == 401  # Secrets need the token whatever reads allow
    assert requests.post(url, json=pod, headers=AUTH, timeout=10).status_code == 201


def test_anonymous_reads_off_loopback_are_announced(
    node: Node, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = ApiServerConfig(token_file=str(tmp_path / "token"), anonymous_reads=True)
    with caplog.at_level(logging.WARNING, logger="kubecore._api.server"):
        attach_api(node.kubelet, config, address="0.0.0.0", tls=True)
        attach_api(node.kubelet, config, address="127.0.0.1")
    warned = [r.getMessage() for r in caplog.records if "anonymous reads" in r.getMessage()]
    assert len(warned) == 1 and "0.0.0.0" in warned[0] and "without a token" in warned[0]


def test_without_a_token_reads_on_loopback_stay_anonymous(node: Node) -> None:
    api = attach_api(node.kubelet, ApiServerConfig(), address="127.0.0.1")
    server = KubeletServer(node.kubelet, ServerConfig(port=0), api=api).start()
    node.servers.append(server)
    assert requests.get(server.url + "/api/v1/pods", timeout=10).status_code == 200
    assert requests.get(server.url + "/pods", timeout=10).status_code == 200


@needs_kubectl
def test_kubectl_reads_with_the_token_over_tls_and_not_without(node: Node, certs: Certs) -> None:
    server = node.https(certs)
    reader = kubectl_for(node.tmp / "tls-reader", server.url, token=TOKEN, ca=certs.ca)
    assert "talker" in reader.out("get", "pods", "-l", "app=talker")
    assert "talker" in reader.out("get", "pods", "-l", "app in (talker, web),!absent")
    nobody = kubectl_for(node.tmp / "tls-nobody", server.url, ca=certs.ca)
    refused = nobody.run("get", "pods", check=False)
    assert refused.returncode == 1 and "talker" not in refused.stdout


# --- /logs/ -----------------------------------------------------------------------------------


def test_logs_serve_only_what_every_user_may_read(node: Node, log_dir: Path) -> None:
    (log_dir / "root-only.log").write_text("root secret\n")
    (log_dir / "root-only.log").chmod(0o600)
    private = log_dir / "private"
    private.mkdir()
    (private / "open.log").write_text("behind a closed door\n")
    (private / "open.log").chmod(0o644)
    private.chmod(0o700)
    (log_dir / "inside").symlink_to(log_dir / "kubelet.log")
    server = serve(node, log_dir=str(log_dir))

    def read(path: str) -> requests.Response:
        return requests.get(server.url + "/logs/" + path, headers=AUTH, timeout=10)

    assert read("kubelet.log").text == "started\n"
    for path in ("root-only.log", "private/open.log", "private/", "inside"):
        refused = read(path)
        assert refused.status_code == 403, (path, refused.text)
        assert "secret" not in refused.text and "closed door" not in refused.text
    assert "is not readable by all users" in read("root-only.log").json()["message"]
    assert "symbolic link" in read("inside").json()["message"]
    private.chmod(0o755)
    os.chmod(log_dir, 0o700)
    assert read("").status_code == 403  # the listing of a directory others may not read
    os.chmod(log_dir, 0o755)


# --- Host (DNS rebinding) ------------------------------------------------------------------


def raw_get(port: int, host: bytes, path: bytes = b"/api/v1/pods") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(
            b"GET " + path + b" HTTP/1.1\r\nHost: " + host + b"\r\nAuthorization: Bearer "
            + TOKEN.encode() + b"\r\nConnection: close\r\n\r\n"
        )  # fmt: skip
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("host", [b"rebound.example", b"rebound.example:10250", b"10.1.2.3"])
def test_a_host_that_does_not_name_the_node_is_refused(node: Node, host: bytes) -> None:
    for path in (b"/api/v1/pods", b"/pods", b"/healthz"):
        answer = raw_get(node.http.port, host, path)
        assert answer.startswith(b"HTTP/1.1 421 "), answer[:200]
        assert b"talker" not in answer and b"does not name this node" in answer


@pytest.mark.parametrize(
    "host", [b"127.0.0.1", b"127.0.0.1:%d", b"localhost:%d", b"LOCALHOST", b"[::1]:%d", b"node-1"]
)
def test_a_host_that_names_the_node_is_answered(node: Node, host: bytes) -> None:
    named = host.replace(b"%d", str(node.http.port).encode())
    answer = raw_get(node.http.port, named)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


def test_a_tls_agent_does_not_check_the_host(node: Node, certs: Certs) -> None:
    server = node.https(certs)
    answer = requests.get(
        server.url + "/api/v1/pods",
        headers={**AUTH, "Host": "rebound.example"},
        verify=str(certs.ca),
        timeout=10,
    )
    assert answer.status_code == 200


@pytest.mark.parametrize(("argv", "anonymous"), [((), False), (("--anonymous-reads",), True)])
def test_the_anonymous_reads_flag_reaches_the_gate(
    node: Node, tmp_path: Path, argv: tuple[str, ...], anonymous: bool
) -> None:
    flags = parsed_flags("--api-token-file", str(tmp_path / "token"), *argv)
    settings = resolve_settings(flags, {}, None)
    assert kube_api(node.kubelet, settings).gate.anonymous_reads is anonymous
