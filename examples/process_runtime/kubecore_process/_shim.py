"""A container's supervisor (run as a script, standard library only): it outlives the agent.

``python -I _shim.py CONTAINER_DIR`` forks into the background (its parent exits at once, so
nobody has to reap it), holds ``lock`` while it lives, starts the container's process (in its own
session and process group) from ``container.json``, writes ``started``, copies the output to
``log`` a line at a time, each line stamped, and writes ``exit`` when the process has ended. An
agent that dies, by SIGTERM or by ``kill -9``, takes neither the process nor its output with it:
a new runtime instance reads these files and carries on.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

SPEC = "container.json"
LOCK = "lock"
STARTED = "started"
EXIT = "exit"
LOG = "log"
DRAIN_AFTER_EXIT = 1.0
"""Seconds to keep reading output after the main process ended (a child may have escaped)."""


def rfc3339(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_json(path: Path, value: object) -> None:
    """Replace ``path`` atomically: a reader sees the old content or the new, never a part."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(value))
    os.replace(partial, path)


def kill_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def exit_code_of(info: os.waitid_result) -> int:
    """A death as a shell (and Docker) reports it: the status, or 128 + N after signal N."""
    return info.si_status if info.si_code == os.CLD_EXITED else 128 + info.si_status


def write_exit(directory: Path, code: int, reason: str, message: str = "") -> None:
    ended = {"exit_code": code, "reason": reason, "message": message, "finished_at": time.time()}
    write_json(directory / EXIT, ended)


def main(directory: Path) -> None:
    spec: dict[str, Any] = json.loads((directory / SPEC).read_text())
    if os.fork() > 0:
        os._exit(0)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with (directory / LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held until this process ends: "the shim lives"
        try:
            process = subprocess.Popen(
                spec["argv"], cwd=spec["workdir"], env=spec["env"], stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
        except OSError as error:
            code = 127 if isinstance(error, FileNotFoundError) else 126
            message = f"{type(error).__name__}: {error}"
            write_exit(directory, code, "ContainerCannotRun", message)
            return
        write_json(directory / STARTED, {"pid": process.pid, "started_at": time.time()})
        with (directory / LOG).open("ab") as log:
            code = exit_code_of(pump(process, log))
        write_exit(directory, code, "Completed" if code == 0 else "Error")
        process.wait()  # reaped only now: until ``exit`` is written, the group id stays its own


def pump(process: subprocess.Popen[bytes], log: IO[bytes]) -> os.waitid_result:
    """Copy output to the log until both pipes close (or a while after the main process ended,
    whatever it left in its group being killed); return how the main process ended."""
    assert process.stdout is not None and process.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ, b"stdout")
    selector.register(process.stderr, selectors.EVENT_READ, b"stderr")
    pending = {b"stdout": b"", b"stderr": b""}
    ended: os.waitid_result | None = None
    drain_until = float("inf")
    while selector.get_map() and time.monotonic() < drain_until:
        for key, _ in selector.select(timeout=0.1):
            stream: bytes = key.data
            chunk = os.read(key.fd, 65536)
            if not chunk:
                selector.unregister(key.fileobj)
                chunk = b"\n" if pending[stream] else b""
            *lines, pending[stream] = (pending[stream] + chunk).split(b"\n")
            stamp = rfc3339(time.time()).encode()
            log.write(b"".join(b"%s %s %s\n" % (stamp, stream, line) for line in lines))
            log.flush()
        if ended is None:
            # WNOWAIT: see the main process end without reaping it, so its group id stays ours.
            ended = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if ended is not None:
                kill_group(process.pid, signal.SIGKILL)
                drain_until = time.monotonic() + DRAIN_AFTER_EXIT
    selector.close()
    process.stdout.close()
    process.stderr.close()
    if ended is None:  # both pipes closed before the main process ended
        ended = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
    assert ended is not None
    kill_group(process.pid, signal.SIGKILL)
    return ended


if __name__ == "__main__":
    main(Path(sys.argv[1]))
