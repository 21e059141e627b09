"""Port forwarding into a sandbox's network namespace (``PortForwarder``), in the agent's own
process and without a helper program (dockershim ran ``nsenter`` and ``socat``; containerd
does this): a short-lived thread joins the network namespace of the sandbox's process
(``setns`` on ``/proc/<pid>/ns/net``), makes and connects the socket there, and ends; the
socket stays in the namespace it was made in.

It needs the engine on this host, in the agent's pid namespace (the pid is the engine's), and
the right to join a namespace (``CAP_SYS_ADMIN``: root)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import socket
import threading
from typing import Any

import attrs

from kubecore import ContainerRuntimeError
from kubecore.runtime import RuntimeTimeout, SandboxNotFound
from kubecore_docker._errors import Subject, engine_errors
from kubecore_docker._names import DOCKER_TYPE_LABEL, SANDBOX_TYPE

CLONE_NEWNET = 0x40000000
_JOIN_MARGIN = 5.0
"""Seconds beyond the connect timeout that joining the namespace may take."""


def port_forward(api: Any, sandbox_id: str, port: int, timeout: float) -> socket.socket:
    """A connected, blocking socket to ``port`` on the sandbox's loopback (IPv4, then IPv6)."""
    if not 0 < port < 65536:
        raise ContainerRuntimeError(f"port-forward to sandbox {sandbox_id}: bad port {port}")
    pid = _sandbox_pid(api, sandbox_id)
    netns = _open_netns(pid, sandbox_id)
    try:
        # Opened, the namespace stays; still the sandbox's if its process is still the same.
        if _sandbox_pid(api, sandbox_id) != pid:
            raise ContainerRuntimeError(f"sandbox {sandbox_id} stopped during port-forward")
        dial = _Dial(netns, port, timeout)
        worker = threading.Thread(
            target=dial.run, name=f"kubecore-portforward-{sandbox_id[:12]}-{port}", daemon=True
        )
        worker.start()  # from here on the worker closes the namespace's descriptor
    except BaseException:
        os.close(netns)
        raise
    worker.join(timeout + _JOIN_MARGIN)
    return dial.outcome(sandbox_id)


def _sandbox_pid(api: Any, sandbox_id: str) -> int:
    with engine_errors(Subject.SANDBOX):
        data = api.inspect_container(sandbox_id)
    labels = (data.get("Config") or {}).get("Labels") or {}
    if labels.get(DOCKER_TYPE_LABEL) != SANDBOX_TYPE:
        raise SandboxNotFound(f"{sandbox_id} is not a kubecore sandbox")
    state = data.get("State") or {}
    pid = int(state.get("Pid") or 0)
    if not state.get("Running") or pid <= 0:
        raise ContainerRuntimeError(
            f"port-forward to sandbox {sandbox_id}: it is not running "
            f"(state {state.get('Status', 'unknown')})"
        )
    return pid


def _open_netns(pid: int, sandbox_id: str) -> int:
    path = f"/proc/{pid}/ns/net"
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except PermissionError as error:
        raise _not_permitted(sandbox_id, error) from error
    except OSError as error:
        raise ContainerRuntimeError(
            f"port-forward to sandbox {sandbox_id}: its network namespace {path} cannot be "
            f"opened ({error.strerror}); port forwarding needs the engine on this host, in the "
            "agent's pid namespace"
        ) from error


def _not_permitted(sandbox_id: str, error: OSError) -> ContainerRuntimeError:
    return ContainerRuntimeError(
        f"port-forward to sandbox {sandbox_id}: joining its network namespace is not permitted "
        f"({error.strerror}); it needs CAP_SYS_ADMIN (run the agent as root)"
    )


def join_netns(fd: int) -> None:
    """Move the calling thread into the network namespace ``fd`` refers to."""
    setns = getattr(os, "setns", None)  # Python 3.12 and later
    if setns is not None:
        setns(fd, CLONE_NEWNET)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


@attrs.define
class _Dial:
    """One connection made on a thread of its own, which joins the namespace and ends. If the
    caller stopped waiting, the thread closes what it made."""

    netns: int
    port: int
    timeout: float
    connected: socket.socket | None = None
    error: BaseException | None = None
    abandoned: bool = False
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def run(self) -> None:
        try:
            join_netns(self.netns)
            made: socket.socket | BaseException = _connect_loopback(self.port, self.timeout)
        except BaseException as error:
            made = error
        finally:
            os.close(self.netns)
        with self.lock:
            if self.abandoned:
                if isinstance(made, socket.socket):
                    made.close()
                return
            if isinstance(made, socket.socket):
                self.connected = made
            else:
                self.error = made

    def outcome(self, sandbox_id: str) -> socket.socket:
        with self.lock:
            connected, error = self.connected, self.error
            if connected is None and error is None:
                self.abandoned = True
        where = f"port {self.port} in sandbox {sandbox_id}"
        if connected is not None:
            return connected
        if error is None or isinstance(error, TimeoutError):
            raise RuntimeTimeout(f"{where} did not accept a connection within {self.timeout}s")
        if isinstance(error, ConnectionRefusedError):
            raise ContainerRuntimeError(f"nothing listens on {where}") from error
        if isinstance(error, PermissionError):
            raise _not_permitted(sandbox_id, error) from error
        raise ContainerRuntimeError(f"cannot connect to {where}: {error}") from error


def _connect_loopback(port: int, timeout: float) -> socket.socket:
    """127.0.0.1, then ::1 when nothing listens there (as containerd does)."""
    try:
        return _connect(socket.AF_INET, ("127.0.0.1", port), timeout)
    except ConnectionRefusedError as refused:
        try:
            return _connect(socket.AF_INET6, ("::1", port), timeout)
        except OSError as error:
            if error.errno in (errno.ECONNREFUSED, errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                raise refused from None
            raise


def _connect(family: int, address: tuple[str, int], timeout: float) -> socket.socket:
    made = socket.socket(family, socket.SOCK_STREAM)
    try:
        made.settimeout(timeout)
        made.connect(address)
        made.settimeout(None)
    except BaseException:
        with contextlib.suppress(OSError):
            made.close()
        raise
    return made
