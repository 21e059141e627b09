"""``exec_sync`` on the engine: a command run in a container, bounded by a timeout, and its exit
code once the engine has recorded it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kubecore import ContainerRuntimeError
from kubecore.runtime import Clock, ExecResult, RuntimeTimeout
from kubecore_docker._errors import Subject, engine_errors, raise_translated

_EXEC_EXIT_POLLS = 50


def exec_sync(
    api_of: Callable[[], Any],
    clock: Clock,
    container_id: str,
    command: list[str],
    timeout: float,
) -> ExecResult:
    """Run ``command`` in the container (``api_of`` gives the engine's client, or raises once
    the runtime is closed)."""
    api = api_of()
    with engine_errors(Subject.CONTAINER):
        exec_id = api.exec_create(container_id, command, stdout=True, stderr=True)["Id"]
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["output"] = api.exec_start(exec_id, demux=True)
        except BaseException as error:
            outcome["error"] = error

    worker = threading.Thread(target=run, name=f"kubecore-exec-{exec_id[:12]}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise RuntimeTimeout(f"exec {command!r} in {container_id} took longer than {timeout}s")
    if "error" in outcome:
        raise_translated(outcome["error"], Subject.CONTAINER)
    stdout, stderr = outcome.get("output") or (None, None)
    return ExecResult(
        exit_code=_exit_code(api_of, clock, exec_id), stdout=stdout or b"", stderr=stderr or b""
    )


def _exit_code(api_of: Callable[[], Any], clock: Clock, exec_id: str) -> int:
    # The output closes as the process ends; the engine may record the exit code a moment later.
    for _ in range(_EXEC_EXIT_POLLS):
        with engine_errors(Subject.CONTAINER):
            info = api_of().exec_inspect(exec_id)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        clock.sleep(0.01)
    raise ContainerRuntimeError(f"exec {exec_id} has no exit code")
