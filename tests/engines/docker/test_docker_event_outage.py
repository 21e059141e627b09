"""The event stream through an engine that goes away and comes back, without touching the shared
engine: the watcher's docker-py client talks to a unix socket of the test's own, which at first
has nothing behind it, then forwards to the real engine, then is shut (every connection cut),
then forwards again."""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubecore._contract.values import RuntimeEvent, RuntimeEventType
from kubecore_docker import DockerConnection, DockerOptions, DockerRuntime, EventWatcher
from tests.engines.docker.conftest import ContainerFactory, SandboxFactory, TestEngine
from tests.engines.docker.helpers import run_pod, wait_for

pytestmark = pytest.mark.docker


class SocketForwarder:
    """Listens on ``path`` and forwards each connection to the engine's unix socket."""

    def __init__(self, path: str, engine_path: str) -> None:
        self._path = path
        self._engine_path = engine_path
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self._path)
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """The engine goes away: no more connections, and the open ones are cut."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        os.unlink(self._path)
        with self._lock:
            open_, self._open = self._open, []
        for sock in open_:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self._engine_path)
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def forwarder(engine: TestEngine) -> Iterator[tuple[SocketForwarder, str]]:
    if not engine.base_url.startswith("unix://"):
        pytest.skip("the test engine is not on a unix socket")
    directory = Path("/tmp") / f"kc-fwd-{os.getpid()}"
    directory.mkdir(exist_ok=True)
    path = str(directory / "engine.sock")
    fwd = SocketForwarder(path, engine.base_url.removeprefix("unix://"))
    try:
        yield fwd, path
    finally:
        if os.path.exists(path):
            fwd.stop()
        directory.rmdir()


def next_death(events: queue.Queue[RuntimeEvent], container_id: str) -> RuntimeEvent:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            event = events.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if event.container_id == container_id and event.type is RuntimeEventType.DIED:
            return event
    pytest.fail(f"no death event for {container_id[:12]}")


def test_the_stream_outlives_an_engine_that_goes_away_and_comes_back(
    runtime: DockerRuntime,
    make_sandbox: SandboxFactory,
    make_container: ContainerFactory,
    forwarder: tuple[SocketForwarder, str],
) -> None:
    fwd, path = forwarder
    events: queue.Queue[RuntimeEvent] = queue.Queue()
    connection = DockerConnection(DockerOptions(base_url=f"unix://{path}", timeout=10))
    watcher = EventWatcher(connection, events.put, initial_backoff=0.005, max_backoff=0.05)
    watcher.start()
    try:
        # no engine behind the socket: more than the 9 failures it used to give up after
        wait_for(lambda: watcher.failures >= 15, 20, what="15 failures in a row")
        assert watcher.alive
        fwd.start()
        assert watcher.wait_connected(20)
        _, (first,) = run_pod(runtime, make_sandbox, make_container("a", command=("true",)))
        assert next_death(events, first).exit_code == 0

        fwd.stop()  # the engine goes away under the open stream
        failures = watcher.failures
        wait_for(lambda: watcher.failures >= failures + 10, 20, what="10 more failures")
        assert watcher.alive
        subscribed = watcher.subscriptions
        fwd.start()
        wait_for(lambda: watcher.subscriptions > subscribed, 20, what="a new subscription")
        _, (second,) = run_pod(
            runtime, make_sandbox, make_container("b", command=("sh", "-c", "exit 4"))
        )
        assert next_death(events, second).exit_code == 4
    finally:
        watcher.close()
        connection.close()
    assert not watcher.alive
