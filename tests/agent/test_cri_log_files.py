"""The agent on a runtime that writes its containers' logs to CRI log files, as CRI runtimes
do: ``kubectl logs`` options answered from the files, the previous instance's file, and the
housekeeping rotating a log past ``container_log_max_size`` (the runtime told to reopen it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import attrs

from kubecore._contract.labels import POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL
from kubecore._contract.observed import container_name, restart_count
from kubecore._contract.values import RuntimeContainer, RuntimeSnapshot, RuntimeState
from kubecore._util.clock import ManualClock
from kubecore.runtime import ContainerLogReopener, encode_output, read_cri_log
from kubecore_fake import FakeHealthChecker, FakeRuntime
from tests.agent.support import new_kubelet
from tests.builders import make_pod


class FileLoggingRuntime(FakeRuntime):
    """The in-memory runtime, its containers' output in CRI log files under ``log_root``
    (``<ns>_<pod>_<uid>/<container>/<restartCount>.log``, as the kubelet lays them out)."""

    def __init__(self, log_root: Path, clock: ManualClock) -> None:
        super().__init__(clock)
        self.log_root = log_root
        self.reopened: list[str] = []

    def _with_path(self, c: RuntimeContainer) -> RuntimeContainer:
        labels = c.labels
        pod = "_".join(
            labels.get(key, "") for key in (POD_NAMESPACE_LABEL, POD_NAME_LABEL, POD_UID_LABEL)
        )
        path = self.log_root / pod / container_name(c) / f"{restart_count(c)}.log"
        return attrs.evolve(c, log_path=str(path))

    def container_status(self, container_id: str) -> RuntimeContainer:
        return self._with_path(super().container_status(container_id))

    def snapshot(self) -> RuntimeSnapshot:
        found = super().snapshot()
        return attrs.evolve(found, containers=tuple(map(self._with_path, found.containers)))

    def write_log(self, container_id: str, text: str) -> None:
        path = Path(self.container_status(container_id).log_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        nanos = int(self._clock.now() * 1e9)
        with open(path, "ab") as handle:
            handle.write(encode_output(nanos, "stdout", text.encode() + b"\n"))

    def reopen_container_log(self, container_id: str) -> None:
        self.reopened.append(container_id)  # write_log opens the file at each write

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        status = self.container_status(container_id)
        return read_cri_log(
            status.log_path,
            tail=tail,
            follow=follow,
            since=since,
            timestamps=timestamps,
            running=lambda: self.container_status(container_id).state is RuntimeState.RUNNING,
        )


def test_logs_rotation_and_previous_from_cri_log_files(tmp_path: Path) -> None:
    clock = ManualClock()
    runtime = FileLoggingRuntime(tmp_path / "pods", clock)
    assert isinstance(runtime, ContainerLogReopener)
    kubelet = new_kubelet(
        runtime,
        clock,
        FakeHealthChecker(runtime),
        tmp_path,
        container_log_max_size="200",
        container_log_max_files=3,
        housekeeping_interval=1.0,
    )
    kubelet.set_pods([make_pod("web")])
    assert kubelet.sync_until_converged(max_syncs=50, step=1.0)

    def logs(**options: object) -> bytes:
        return b"".join(kubelet.streams.logs("default", "web", "app", **options))  # type: ignore[arg-type]

    (app,) = runtime.find_containers("app", state=RuntimeState.RUNNING)
    for n in range(10):
        runtime.write_log(app.id, f"line {n}")
        clock.advance(1.0)
    assert logs(tail=2) == b"line 8\nline 9\n"
    assert logs(limit_bytes=9) == b"line 0\nli"
    assert logs(timestamps=True, tail=1).split(b" ", 1)[1] == b"line 9\n"
    clock.advance(20.0)  # the rotation pass is due
    kubelet.sync()
    assert runtime.reopened == [app.id]
    log_path = runtime.container_status(app.id).log_path
    (rotated,) = os.listdir(os.path.dirname(log_path))  # the runtime writes a new one next
    assert rotated.startswith("0.log.")
    runtime.write_log(app.id, "after rotation")
    assert logs() == b"".join(f"line {n}\n".encode() for n in range(10)) + b"after rotation\n"
    assert logs(tail=2) == b"line 9\nafter rotation\n"

    runtime.crash(app.id)
    clock.advance(1.0)
    kubelet.sync()
    assert kubelet.sync_until_converged(max_syncs=50, step=1.0)
    (second,) = runtime.find_containers("app", state=RuntimeState.RUNNING)
    runtime.write_log(second.id, "second instance")
    assert logs() == b"second instance\n"
    assert logs(previous=True).endswith(b"after rotation\n")
