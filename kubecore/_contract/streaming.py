"""The streaming part of the runtime contract (CRI ``Exec``, ``Attach``, ``PortForward``): two
optional capabilities a runtime may implement, found by type as every other
(``kubecore._contract.capabilities``).

CRI answers these calls with the URL of a streaming server of the runtime's own; a kubecore
runtime is in the agent's process, so it hands back the stream itself and the agent's API serves
it to clients (``kubectl exec``, ``attach``, ``cp``, ``port-forward``) over WebSocket or SPDY.

* ``StreamingRuntime.exec_stream`` starts a command in a running container and
  ``StreamingRuntime.attach`` attaches to a running container's main process; both answer a
  ``StreamSession``: the process's stdin, its output in the order it was written, a terminal
  resize, and its end.
* ``PortForwarder.port_forward`` answers a connected stream socket to a port on the loopback
  of a sandbox's network namespace (what ``kubectl port-forward`` reaches), as dockershim did.

Every call raises ``ContainerNotFound`` (``SandboxNotFound``) for an id the runtime does not
know; a container that is not running, and engine failures, are ``ContainerRuntimeError``.
"""

from __future__ import annotations

import enum
import socket
from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import attrs


@attrs.frozen
class TerminalSize:
    """A terminal's size in characters (kubectl's resize message: ``Width``, ``Height``)."""

    width: int
    height: int


class OutputStream(enum.IntEnum):
    """Where a chunk of a streamed process's output was written (the numbers are the
    ``channel.k8s.io`` stream ids)."""

    STDOUT = 1
    STDERR = 2


class StreamSession(Protocol):
    """One exec'd (or attached) process, live. Methods may be called from different threads:
    one thread reads ``output`` while another writes stdin and resizes. ``close`` may be
    called at any time, more than once; it ends ``output`` and releases the engine's
    connection (an exec'd process the client left is not waited for)."""

    tty: bool
    """Whether the process has a terminal: its output then all arrives as ``STDOUT``."""

    def write_stdin(self, data: bytes) -> None:
        """Send ``data`` to the process's stdin (ignored when it was started without one, or
        once stdin is closed)."""
        ...

    def close_stdin(self) -> None:
        """End the process's stdin (it reads end of file); idempotent."""
        ...

    def output(self) -> Iterator[tuple[OutputStream, bytes]]:
        """The process's output as it is written, until the process (or the session) ends."""
        ...

    def resize(self, size: TerminalSize) -> None:
        """Resize the process's terminal (ignored without a TTY)."""
        ...

    def wait(self, timeout: float | None = None) -> int | None:
        """The process's exit code once it has exited, waiting up to ``timeout`` seconds (None:
        as long as it takes); None when it has not exited by then, or when the runtime cannot
        tell (an attach whose container is still running when the session closed)."""
        ...

    def close(self) -> None:
        """End the session: its output ends, and its engine connection is released."""
        ...


@runtime_checkable
class StreamingRuntime(Protocol):
    """A runtime that can run interactive processes in its containers (CRI ``Exec``,
    ``Attach``)."""

    def exec_stream(
        self,
        container_id: str,
        command: list[str],
        *,
        stdin: bool,
        tty: bool,
        size: TerminalSize | None = None,
    ) -> StreamSession:
        """Start ``command`` in the running container; the session starts with the process. A
        command that cannot be started is a process that exits 126 (not executable) or 127
        (not found), with the engine's message on its output, as a shell reports it."""
        ...

    def attach(self, container_id: str, *, stdin: bool, tty: bool) -> StreamSession:
        """Attach to the running container's main process: its output from now on, and its
        stdin when the container was created with one open (``stdin: true``)."""
        ...


@runtime_checkable
class PortForwarder(Protocol):
    """A runtime that can connect to a port inside a sandbox's network namespace (CRI
    ``PortForward``)."""

    def port_forward(self, sandbox_id: str, port: int, timeout: float) -> socket.socket:
        """A connected, blocking stream socket to ``port`` on the sandbox's loopback (which
        also reaches servers listening on every address), connected within ``timeout``
        seconds; the caller owns and closes it. Raises ``SandboxNotFound``, and a
        ``ContainerRuntimeError`` that names the port when nothing listens there."""
        ...
