"""The Docker adapter's event stream never gives up: a real docker-py client against a socket with
nothing behind it, then a small engine stand-in on that unix socket (``/version`` and a chunked
``/events`` stream the test feeds and ends). No Docker engine needed."""

from __future__ import annotations

import http.server
import json
import logging
import os
import queue
import socketserver
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("docker")

from kubecore._contract.values import RuntimeEvent, RuntimeEventType
from kubecore.runtime import CONTAINER_NAME_LABEL, MANAGED_LABEL, POD_UID_LABEL, backoff_delay
from kubecore_docker import DockerConnection, DockerOptions, EventWatcher
from kubecore_docker._events import logs_failure

END = None
"""Fed to the stream: the engine ends the response (as when it restarts)."""


class EngineStandIn(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str) -> None:
        self.feed: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.subscriptions: list[dict[str, list[str]]] = []
        self.stopping = threading.Event()
        super().__init__(path, _Handler)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.02})
        self.thread.daemon = True
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: EngineStandIn

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        if url.path.endswith("/version"):
            body = json.dumps({"ApiVersion": "1.41", "MinAPIVersion": "1.12", "Version": "x"})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())
            return
        if not url.path.endswith("/events"):
            self.send_error(404)
            return
        self.server.subscriptions.append(urllib.parse.parse_qs(url.query))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        while not self.server.stopping.is_set():
            try:
                message = self.server.feed.get(timeout=0.02)
            except queue.Empty:
                continue
            if message is END:
                break
            data = json.dumps(message).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True


def died(container_id: str, nano: int) -> dict[str, Any]:
    return {
        "Type": "container",
        "Action": "die",
        "Actor": {
            "ID": container_id,
            "Attributes": {
                MANAGED_LABEL.partition("=")[0]: "true",
                POD_UID_LABEL: "uid-1",
                CONTAINER_NAME_LABEL: "app",
                "exitCode": "3",
            },
        },
        "time": nano // 1_000_000_000,
        "timeNano": nano,
    }


def until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


@pytest.fixture
def socket_path(tmp_path: Path) -> Iterator[str]:
    # a short directory: a unix socket path is limited to about 100 bytes
    directory = Path("/tmp") / f"kc-ev-{os.getpid()}-{threading.get_ident() % 10_000}"
    directory.mkdir(exist_ok=True)
    path = directory / "engine.sock"
    try:
        yield str(path)
    finally:
        path.unlink(missing_ok=True)
        directory.rmdir()


def test_the_delay_doubles_to_its_cap() -> None:
    assert [backoff_delay(n, 0.2, 30.0) for n in (1, 2, 3, 4, 8, 9, 100, 10_000)] == [
        0.2,
        0.4,
        0.8,
        1.6,
        25.6,
        30.0,
        30.0,
        30.0,
    ]
    assert [n for n in range(1, 40) if logs_failure(n, 0.0, 60.0)] == [1, 2, 4, 8, 16, 32]
    with pytest.raises(ValueError, match="initial_backoff=0"):
        EventWatcher(DockerConnection(DockerOptions()), print, initial_backoff=0)


def test_the_stream_is_subscribed_again_for_ever_and_resumes_where_it_stopped(
    socket_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kubecore_docker")
    connection = DockerConnection(DockerOptions(base_url=f"unix://{socket_path}", timeout=5))
    seen: queue.Queue[RuntimeEvent] = queue.Queue()
    watcher = EventWatcher(connection, seen.put, initial_backoff=0.002, max_backoff=0.01)
    watcher.start()
    engine: EngineStandIn | None = None
    try:
        # Nothing listens at the socket: every try fails, and the watcher keeps trying (it
        # used to give up after 9).
        until(lambda: watcher.failures >= 40, what="40 failures in a row")
        assert watcher.alive
        failed = [r.getMessage() for r in caplog.records]
        assert 5 <= len(failed) <= 8, failed  # 1, 2, 4, 8, 16, 32 (and maybe 64)
        assert "failed" in failed[0] and "subscribing again in" in failed[0]

        engine = EngineStandIn(socket_path)
        assert watcher.wait_connected(10)
        base = time.time_ns()
        engine.feed.put(died("c1", base))
        event = seen.get(timeout=10)
        assert (event.type, event.container_id, event.exit_code) == (
            RuntimeEventType.DIED,
            "c1",
            3,
        )
        again = [r.getMessage() for r in caplog.records if "subscribed again" in r.getMessage()]
        assert len(again) == 1 and "after" in again[0]
        assert watcher.failures >= 40  # it counts on until the stream has stayed up a while

        # The engine ends the stream (a restart): subscribed again from the last event's time,
        # the repeat of the last event dropped.
        subscribed = watcher.subscriptions
        engine.feed.put(END)
        until(lambda: watcher.subscriptions > subscribed, what="a new subscription")
        assert engine.subscriptions[-1]["since"] == [f"{base // 10**9}.{base % 10**9:09d}"]
        engine.feed.put(died("c1", base))
        engine.feed.put(died("c2", base + 1))
        event = seen.get(timeout=10)
        assert event.container_id == "c2"
        assert watcher.alive
    finally:
        watcher.close()
        if engine is not None:
            engine.stop()
    assert not watcher.alive


def test_a_stream_that_stayed_up_starts_the_count_over(socket_path: str) -> None:
    clock = [0.0]
    engine = EngineStandIn(socket_path)
    connection = DockerConnection(DockerOptions(base_url=f"unix://{socket_path}", timeout=5))
    watcher = EventWatcher(
        connection,
        lambda _event: None,
        initial_backoff=0.002,
        max_backoff=0.01,
        healthy_after=30.0,
        monotonic=lambda: clock[0],
    )
    watcher.start()
    try:
        assert watcher.wait_connected(10)

        def end_the_stream() -> None:
            subscribed = watcher.subscriptions
            engine.feed.put(END)
            until(lambda: watcher.subscriptions > subscribed, what="a new subscription")

        for n in range(1, 4):  # ends at once, three times: counted in a row
            end_the_stream()
            assert watcher.failures == n
        clock[0] += 31.0  # this one stays up 31 s
        end_the_stream()
        assert watcher.failures == 1
    finally:
        watcher.close()
        engine.stop()
