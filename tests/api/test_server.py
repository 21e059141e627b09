"""The kubelet HTTP API, with real HTTP requests to 127.0.0.1 on an ephemeral port."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from kubecore._http.server import KubeletServer, ServerConfig, serve
from kubecore._model.v1 import Pod
from kubecore._observability.logs import MAX_TAIL_LINES
from tests.api.support import END, TOKEN, StubKubelet, assert_status, get, mid_body_clients


@pytest.fixture
def kubelet() -> StubKubelet:
    return StubKubelet()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "kubelet.log").write_text("started\n")
    (logs / "pods").mkdir()
    (logs / "pods" / "web.log").write_text("web log\n")
    (tmp_path / "secret.txt").write_text("top secret\n")
    (logs / "escape").symlink_to(tmp_path / "secret.txt")
    (logs / "escape-dir").symlink_to(tmp_path)
    (logs / "inside").symlink_to(logs / "kubelet.log")
    return logs


ServerFactory = Callable[..., KubeletServer]


@pytest.fixture
def start_server(kubelet: StubKubelet) -> Iterator[ServerFactory]:
    servers: list[KubeletServer] = []

    def start(target: Any = None, **config: Any) -> KubeletServer:
        config.setdefault("port", 0)
        config.setdefault("request_timeout", 5.0)
        server = KubeletServer(target or kubelet, ServerConfig(**config)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def url(start_server: ServerFactory, log_dir: Path) -> str:
    return start_server(log_dir=str(log_dir)).url


@pytest.fixture
def exec_url(start_server: ServerFactory) -> str:
    return start_server(enable_exec=True, exec_token=TOKEN).url


def raw_request(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(data)
        chunks = []
        for _ in range(1000):
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


# --- basics -------------------------------------------------------------------------------------


def test_binds_loopback_by_default() -> None:
    assert ServerConfig().address == "127.0.0.1"
    assert ServerConfig().port == 10250
    assert ServerConfig().enable_exec is False


def test_exec_needs_a_token_to_be_enabled() -> None:
    with pytest.raises(ValueError, match="token"):
        ServerConfig(enable_exec=True)


def test_healthz(url: str, kubelet: StubKubelet) -> None:
    response = get(url + "/healthz")
    assert response.status_code == 200 and response.text == "ok\n"
    verbose = get(url + "/healthz?verbose")
    assert verbose.text == "[+]ping ok\n[+]syncloop ok\nhealthz check passed\n"
    kubelet.checks.append(("runtime", "failed: runtime\nunreachable"))
    response = get(url + "/healthz")
    assert response.status_code == 500
    assert response.text.splitlines() == [
        "[+]ping ok",
        "[+]syncloop ok",
        "[-]runtime failed: runtime unreachable",
        "healthz check failed",
    ]


def test_healthz_of_one_check(url: str, kubelet: StubKubelet) -> None:
    assert get(url + "/healthz/ping").text == "ok\n"
    kubelet.checks.append(("source etcd", "not ready: etcd is unreachable: refused"))
    response = get(url + "/healthz/source%20etcd")
    assert response.status_code == 500
    assert response.text == (
        "internal server error: source etcd not ready: etcd is unreachable: refused\n"
    )
    assert get(url + "/healthz/syncloop").status_code == 200
    assert_status(get(url + "/healthz/log"), 404)


def test_pods_is_a_v1_pod_list_with_status(url: str) -> None:
    response = get(url + "/pods")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert [item["metadata"]["name"] for item in body["items"]] == ["web", "db"]
    web = body["items"][0]
    assert web["status"]["phase"] == "Running"
    assert web["status"]["containerStatuses"][0]["ready"] is True
    assert get(url + "/pods/").json()["kind"] == "PodList"


def test_one_pod_and_unknown_pods(url: str) -> None:
    pod = get(url + "/pods/default/db").json()
    assert pod["kind"] == "Pod" and pod["metadata"]["uid"] == "uid-db"
    assert_status(get(url + "/pods/default/nope"), 404, "default/nope")
    assert_status(get(url + "/pods/other/db"), 404)
    assert_status(get(url + "/pods/default"), 404)
    assert_status(get(url + "/pods/default/db/extra"), 404)


def test_unknown_path_and_wrong_method(url: str) -> None:
    assert_status(get(url + "/nope"), 404, "/nope")
    assert_status(get(url + "/"), 404)
    response = requests.post(url + "/pods", timeout=10)
    assert_status(response, 405)
    assert response.headers["Allow"] == "GET, HEAD"
    assert_status(requests.delete(url + "/healthz", timeout=10), 405)
    assert_status(requests.put(url + "/metrics", data=b"x", timeout=10), 405)


def test_head_gives_headers_only(url: str) -> None:
    response = requests.head(url + "/pods", timeout=10)
    assert response.status_code == 200 and response.content == b""
    assert int(response.headers["Content-Length"]) > 0


def test_keep_alive_serves_several_requests_on_one_connection(url: str) -> None:
    with requests.Session() as session:
        for _ in range(3):
            assert session.get(url + "/healthz", timeout=10).status_code == 200


def test_metrics_in_prometheus_text(url: str) -> None:
    response = get(url + "/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    assert "kubecore_test_syncs_total 3.0" in response.text
    assert get(url + "/metrics/probes").text == "# probes\n"
    assert get(url + "/metrics/resource").text == "# resource\n"
    assert_status(get(url + "/metrics/cadvisor"), 404)


def test_stats_summary(url: str) -> None:
    response = get(url + "/stats/summary")
    assert response.status_code == 200
    assert response.json()["node"]["nodeName"] == "test-node"
    assert_status(get(url + "/stats"), 404)
    assert_status(get(url + "/stats/other"), 404)


# --- container logs ---------------------------------------------------------------------------


def test_container_logs(url: str) -> None:
    response = get(url + "/containerLogs/default/web/httpd")
    assert response.status_code == 200
    assert response.text == "line one\nline two\nline three\n"
    assert get(url + "/containerLogs/default/web/httpd?tailLines=1").text == "line three\n"
    assert get(url + "/containerLogs/default/web/httpd?tailLines=0").text == ""
    stamped = get(url + "/containerLogs/default/web/httpd?timestamps=true&tailLines=1").text
    assert stamped == "2024-01-01T00:00:00Z line three\n"


@pytest.mark.parametrize(
    "query, field",
    [
        ("tailLines=abc", "tailLines"),
        ("tailLines=-1", "tailLines"),
        ("tailLines=1.5", "tailLines"),
        ("follow=maybe", "follow"),
        ("timestamps=2", "timestamps"),
    ],
)
def test_container_logs_bad_query_values(url: str, query: str, field: str) -> None:
    assert_status(get(f"{url}/containerLogs/default/web/httpd?{query}"), 400, field)


def test_container_logs_unknown_pod_or_container(url: str) -> None:
    assert_status(get(url + "/containerLogs/default/nope/httpd"), 404, "default/nope")
    assert_status(get(url + "/containerLogs/default/web/nope"), 404, "nope")
    assert_status(get(url + "/containerLogs/default/web"), 404)
    # in the spec but not started: the runtime's not-found becomes a 404 before any body
    assert_status(get(url + "/containerLogs/default/web/sidecar"), 404, "not started")


def test_follow_streams_until_the_container_stops(url: str, kubelet: StubKubelet) -> None:
    with requests.get(
        url + "/containerLogs/default/web/httpd?follow=true&tailLines=1", stream=True, timeout=10
    ) as response:
        assert response.status_code == 200
        assert response.headers["Transfer-Encoding"] == "chunked"
        lines = response.iter_lines()
        assert next(lines) == b"line three"
        kubelet.follow_queue.put(b"new line\n")
        assert next(lines) == b"new line"
        kubelet.follow_queue.put(END)  # the container stopped
        assert list(lines) == []
    assert kubelet.follow_closed.wait(5)


def test_follow_ends_when_the_client_goes_away(url: str, kubelet: StubKubelet) -> None:
    response = requests.get(
        url + "/containerLogs/default/web/httpd?follow=1", stream=True, timeout=10
    )
    assert next(response.iter_lines()) == b"line one"
    response.close()
    # the next write fails: the server stops reading the container's logs
    for _ in range(20):
        kubelet.follow_queue.put(b"more\n" * 1000)
        if kubelet.follow_closed.wait(0.25):
            break
    assert kubelet.follow_closed.is_set()


# --- exec ---------------------------------------------------------------------------------------


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_exec_is_off_by_default(url: str, kubelet: StubKubelet) -> None:
    response = requests.post(url + "/run/default/web/httpd?cmd=ls", headers=bearer(), timeout=10)
    assert_status(response, 403, "disabled")
    assert kubelet.execs == []


def test_exec_refuses_get(exec_url: str) -> None:
    response = get(exec_url + "/run/default/web/httpd?cmd=ls", headers=bearer())
    assert_status(response, 405)
    assert response.headers["Allow"] == "POST"


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": "Bearer "}, bearer("wrong")],
    ids=["missing", "basic", "empty", "wrong"],
)
def test_exec_needs_the_right_token(
    exec_url: str, kubelet: StubKubelet, headers: dict[str, str]
) -> None:
    response = requests.post(
        exec_url + "/run/default/web/httpd?cmd=ls", headers=headers, timeout=10
    )
    assert_status(response, 401)
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert kubelet.execs == []


def test_exec_with_query_command(exec_url: str, kubelet: StubKubelet) -> None:
    response = requests.post(
        exec_url + "/run/default/web/httpd",
        params={"cmd": "echo 'hello world'", "timeout": "3"},
        headers=bearer(),
        timeout=10,
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"exitCode": 0, "stdout": "echo hello world\n", "stderr": ""}
    assert kubelet.execs == [("default", "web", "httpd", ["echo", "hello world"], 3.0)]


def test_exec_with_repeated_cmd_and_json_body(exec_url: str, kubelet: StubKubelet) -> None:
    requests.post(
        exec_url + "/run/default/web/httpd?cmd=ls&cmd=-l", headers=bearer(), timeout=10
    ).raise_for_status()
    requests.post(
        exec_url + "/run/default/db/main",
        json={"command": ["cat", "/etc/hosts"]},
        headers=bearer(),
        timeout=10,
    ).raise_for_status()
    assert [e[3] for e in kubelet.execs] == [["ls", "-l"], ["cat", "/etc/hosts"]]


@pytest.mark.parametrize(
    "path, kwargs, code, text",
    [
        ("/run/default/web/httpd", {}, 400, "cmd"),
        (
            "/run/default/web/httpd",
            {"data": b"{not json", "headers": {"Content-Type": "application/json"}},
            400,
            "JSON",
        ),
        ("/run/default/web/httpd", {"json": {"command": [1, 2]}}, 400, "command"),
        ("/run/default/web/httpd", {"json": ["ls"]}, 400, "object"),
        ("/run/default/web/httpd?cmd=ls&timeout=0", {}, 400, "timeout"),
        ("/run/default/web/httpd?cmd=ls&timeout=abc", {}, 400, "timeout"),
        ("/run/default/web/httpd?cmd='unclosed", {}, 400, "cmd"),
        ("/run/default/nope/httpd?cmd=ls", {}, 404, "default/nope"),
        ("/run/default/web/nope?cmd=ls", {}, 404, "nope"),
        ("/run/default/web?cmd=ls", {}, 404, "/run/"),
    ],
)
def test_exec_bad_requests(
    exec_url: str, kubelet: StubKubelet, path: str, kwargs: dict[str, Any], code: int, text: str
) -> None:
    headers = {**bearer(), **kwargs.pop("headers", {})}
    response = requests.post(exec_url + path, headers=headers, timeout=10, **kwargs)
    assert_status(response, code, text)
    assert kubelet.execs == []


def test_oversized_body_is_refused(exec_url: str, kubelet: StubKubelet) -> None:
    body = b"x" * (1024 * 1024 + 1)
    response = requests.post(
        exec_url + "/run/default/web/httpd?cmd=ls", data=body, headers=bearer(), timeout=30
    )
    assert_status(response, 413)
    assert kubelet.execs == []


def test_oversized_body_refused_before_reading_it(exec_url: str) -> None:
    port = int(exec_url.rsplit(":", 1)[1])
    answer = raw_request(
        port,
        b"POST /run/default/web/httpd?cmd=ls HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 999999999\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 413")


# --- node logs ----------------------------------------------------------------------------------


def test_logs_listing_and_files(url: str) -> None:
    listing = get(url + "/logs/")
    assert listing.status_code == 200
    assert listing.text.splitlines() == ["escape", "escape-dir/", "inside", "kubelet.log", "pods/"]
    assert get(url + "/logs/kubelet.log").text == "started\n"
    assert get(url + "/logs/pods/web.log").text == "web log\n"
    assert get(url + "/logs/pods/").text == "web.log\n"
    # A symbolic link is never followed, even one that stays inside (issue 27).
    assert_status(get(url + "/logs/inside"), 403, "symbolic link")
    redirect = get(url + "/logs", allow_redirects=False)
    assert redirect.status_code == 301 and redirect.headers["Location"] == "/logs/"


@pytest.mark.parametrize(
    "path",
    [
        "/logs/../secret.txt",
        "/logs/%2e%2e/secret.txt",
        "/logs/pods/../../secret.txt",
        "/logs/pods/%2E%2E/%2E%2E/secret.txt",
        "/logs//etc/passwd",
        "/logs/%2fetc%2fpasswd",
        "/logs/escape",
        "/logs/escape-dir/secret.txt",
        "/logs/escape-dir/",
    ],
)
def test_logs_cannot_leave_the_directory(url: str, path: str) -> None:
    # send the path as is: requests would otherwise normalise the dots away
    port = int(url.rsplit(":", 1)[1])
    answer = raw_request(
        port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
    )
    status_line = answer.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 403"), answer
    assert b"top secret" not in answer and b"root:" not in answer


def test_logs_missing_file_and_nul(url: str) -> None:
    assert_status(get(url + "/logs/nope.log"), 404)
    assert_status(get(url + "/logs/a%00b"), 400)


def test_logs_not_configured(start_server: ServerFactory) -> None:
    server = start_server()
    assert_status(get(server.url + "/logs/"), 404, "not served")


# --- malformed requests ---------------------------------------------------------------------------


def test_malformed_request_line_gets_a_4xx_reason(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    answer = raw_request(port, b"GARBAGE\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400") or answer.startswith(b"HTTP/1.0 400")
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body["code"] == 400 and body["message"]
    assert b"Traceback" not in answer


def test_unsupported_http_version(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    answer = raw_request(port, b"GET /healthz HTTP/3.0\r\n\r\n")
    assert answer.split(b" ", 2)[1] == b"505"


def test_bad_content_length(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    answer = raw_request(
        port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 400")
    assert b"Content-Length" in answer


def test_chunked_body_is_refused(exec_url: str) -> None:
    port = int(exec_url.rsplit(":", 1)[1])
    answer = raw_request(
        port,
        b"POST /run/default/web/httpd?cmd=ls HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + TOKEN.encode()
        + b"\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 411")


def test_header_line_too_long(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    answer = raw_request(port, b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
    assert answer.split(b" ", 2)[1] in (b"431", b"400")


def test_idle_client_is_disconnected(start_server: ServerFactory) -> None:
    server = start_server(request_timeout=0.3)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(b"GET /hea")  # never finishes the request line
        assert conn.recv(1024) == b""  # the server gave up and closed
    assert get(server.url + "/healthz").status_code == 200


def test_serve_helper_and_context_manager(kubelet: StubKubelet) -> None:
    server = serve(kubelet, port=0)
    try:
        assert server.address == "127.0.0.1"
        assert get(server.url + "/healthz").status_code == 200
    finally:
        server.stop()
    with KubeletServer(kubelet, ServerConfig(port=0)) as other:
        assert get(other.url + "/healthz").status_code == 200
    with pytest.raises(requests.ConnectionError):
        get(other.url + "/healthz")


def test_internal_errors_are_500_without_traceback(start_server: ServerFactory) -> None:
    class Broken(StubKubelet):
        def pods(self) -> list[Pod]:
            raise RuntimeError("secret internals")

    server = start_server(Broken())
    response = get(server.url + "/pods")
    body = assert_status(response, 500)
    # apimachinery's reason for a 500 (StatusReasonInternalError), as the Kubernetes API answers
    assert "secret internals" not in response.text and body["reason"] == "InternalError"


# --- against a real Kubelet on the fake runtime, in virtual time ----------------------------------


def test_live_pods_and_status(live: tuple[Any, Any, KubeletServer]) -> None:
    _, _, server = live
    body = get(server.url + "/pods").json()
    (item,) = body["items"]
    assert item["metadata"]["name"] == "talker"
    assert item["metadata"]["annotations"]["kubernetes.io/config.source"] == "api"
    assert item["status"]["phase"] == "Running"
    assert item["status"]["containerStatuses"][0]["state"]["running"]
    assert get(server.url + "/pods/default/talker").json()["status"]["phase"] == "Running"
    assert_status(get(server.url + "/pods/default/nobody"), 404)


def test_live_logs_tail_timestamps_and_follow(live: tuple[Any, Any, KubeletServer]) -> None:
    _, runtime, server = live
    base = server.url + "/containerLogs/default/talker/main"
    assert get(base).text == "hello\nworld\n"
    assert get(base + "?tailLines=1").text == "world\n"
    stamped = get(base + "?timestamps=true").text.splitlines()
    assert len(stamped) == 2 and stamped[0].endswith(" hello") and stamped[0][:4].isdigit()
    assert_status(get(server.url + "/containerLogs/default/talker/nope"), 404)
    assert_status(get(base + "?tailLines=x"), 400)

    (container,) = runtime.list_containers()
    with requests.get(base + "?follow=true&tailLines=1", stream=True, timeout=10) as response:
        lines = response.iter_lines()
        assert next(lines) == b"world"
        runtime.write_log(container.id, "third\n")
        assert next(lines) == b"third"
        runtime.crash(container.id, 1)  # the container stops: the stream ends
        assert list(lines) == []


def test_live_exec(live: tuple[Any, Any, KubeletServer]) -> None:
    _, _, server = live
    response = requests.post(
        server.url + "/run/default/talker/main?cmd=echo+hi+there", headers=bearer(), timeout=10
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"exitCode": 0, "stdout": "hi there\n", "stderr": ""}
    assert_status(requests.post(server.url + "/run/default/talker/main?cmd=ls", timeout=10), 401)


def test_live_metrics_stats_and_health(live: tuple[Any, Any, KubeletServer]) -> None:
    _, _, server = live
    assert get(server.url + "/healthz").text == "ok\n"
    metrics = get(server.url + "/metrics").text
    assert "kubecore_sync_duration_seconds" in metrics
    summary = get(server.url + "/stats/summary").json()
    assert summary["node"]["nodeName"] == "test-node"
    assert [p["podRef"]["name"] for p in summary["pods"]] == ["talker"]


# --- under hostile use: bursts, slow clients, FIFOs, endless streams --------------------------


def test_a_burst_of_200_concurrent_requests_is_all_answered(url: str) -> None:
    def fetch(_: int) -> int:
        with requests.get(url + "/pods", timeout=30) as response:
            return response.status_code

    with ThreadPoolExecutor(200) as clients:
        codes = list(clients.map(fetch, range(200)))
    assert codes == [200] * 200


def _slow_clients(address: tuple[str, int], count: int) -> list[socket.socket]:
    clients = []
    for i in range(count):
        sock = socket.create_connection(address, timeout=10)
        if i % 2:
            sock.sendall(b"GET /pods HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head that never ends
        clients.append(sock)
    return clients


def test_slow_clients_hold_no_worker_and_healthz_still_answers(
    start_server: ServerFactory,
) -> None:
    server = start_server(request_timeout=30.0)
    threads_before = threading.active_count()
    clients = _slow_clients((server.address, server.port), 500)
    try:
        response = requests.get(server.url + "/healthz", timeout=10)
        assert response.status_code == 200 and response.text == "ok\n"
        # one worker at most per request answered, none per waiting client
        assert threading.active_count() <= threads_before + server.config.workers
    finally:
        for sock in clients:
            sock.close()


def test_connections_past_the_cap_get_a_503_at_once(start_server: ServerFactory) -> None:
    server = start_server(max_connections=20, health_connections=0)
    clients = mid_body_clients((server.address, server.port), 20)
    try:
        extra = socket.create_connection((server.address, server.port), timeout=10)
        with extra:
            answer = extra.recv(4096)
        assert answer.startswith(b"HTTP/1.1 503 ")
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["reason"] == "ServiceUnavailable"
    finally:
        for sock in clients:
            sock.close()


def test_a_silent_client_is_dropped_after_the_head_timeout(start_server: ServerFactory) -> None:
    server = start_server(request_timeout=0.5)
    with socket.create_connection((server.address, server.port), timeout=10) as sock:
        assert sock.recv(1) == b""  # closed by the server, well before this 10 s timeout


def test_keep_alive_connections_serve_several_requests(url: str) -> None:
    with requests.Session() as session:
        for _ in range(5):
            assert session.get(url + "/healthz", timeout=10).status_code == 200


def test_pipelined_requests_are_both_answered(start_server: ServerFactory) -> None:
    server = start_server()
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection((server.address, server.port), timeout=10) as sock:
        sock.sendall(request * 2)
        received = b""
        while received.count(b"ok\n") < 2:
            chunk = sock.recv(4096)
            assert chunk, received
            received += chunk
    assert received.count(b"HTTP/1.1 200 OK") == 2


def test_a_fifo_under_the_log_dir_is_refused_at_once(url: str, log_dir: Path) -> None:
    os.mkfifo(log_dir / "pipe")
    response = requests.get(url + "/logs/pipe", timeout=10)
    assert response.status_code == 403 and "not a regular file" in response.json()["message"]


def test_tail_lines_are_capped(url: str) -> None:
    response = requests.get(
        url + f"/containerLogs/default/web/httpd?tailLines={MAX_TAIL_LINES + 1}", timeout=10
    )
    assert response.status_code == 400 and str(MAX_TAIL_LINES) in response.json()["message"]


@pytest.fixture
def following(url: str, kubelet: StubKubelet) -> Iterator[list[requests.Response]]:
    streams: list[requests.Response] = []
    yield streams
    for _ in streams:
        kubelet.follow_queue.put(END)
    for stream in streams:
        stream.close()


def test_follow_streams_are_capped_per_container(
    url: str, following: list[requests.Response]
) -> None:
    path = url + "/containerLogs/default/web/httpd?follow=true"
    readers = []  # kept: a dropped line iterator closes its connection, ending that stream
    for _ in range(2):
        stream = requests.get(path, stream=True, timeout=10)
        following.append(stream)
        assert stream.status_code == 200
        readers.append(stream.iter_lines())
        assert next(readers[-1]) == b"line one"
    third = requests.get(path, timeout=10)
    assert third.status_code == 429 and "on one container" in third.json()["message"]
    assert requests.get(url + "/healthz", timeout=10).status_code == 200
