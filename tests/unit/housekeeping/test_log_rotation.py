"""Container log rotation as the kubelet's log manager does it: naming, pruning, compression,
the runtime's reopen (and undoing a rotation it refuses), the housekeeping pass; and, fuzzed,
that rotating while writing never loses or duplicates a record a reader should see."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubecore import ContainerRuntimeError, KubeletConfig
from kubecore._contract.errors import InvalidKubeletConfig
from kubecore._housekeeping.log_rotation import (
    ContainerLogRotation,
    LogRotationPolicy,
    rotate_log,
    rotated_name,
)
from kubecore.runtime import RuntimeContainer, RuntimeState, encode_output, read_cri_log

NOW = 1_796_000_000.0  # 2026-11-30T00:53:20Z


def _write(path: Path, text: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(encode_output(0, "stdout", text, max_content=4))


def _names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def test_rotated_name_is_the_kubelets() -> None:
    assert rotated_name("/logs/0.log", NOW) == "/logs/0.log.20261130-005320"


def test_a_small_log_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    _write(path, b"small\n")
    reopened: list[str] = []
    assert not rotate_log(str(path), LogRotationPolicy(1024, 5), NOW, lambda: reopened.append("x"))
    assert _names(tmp_path) == ["0.log"] and reopened == []


def test_rotation_renames_prunes_and_compresses(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    policy = LogRotationPolicy(max_size=10, max_files=3)
    reopens = []
    for second in range(4):
        _write(path, f"line {second}\n".encode())
        assert rotate_log(str(path), policy, NOW + second, lambda: reopens.append(1))
    assert len(reopens) == 4
    # At most max_files - 1 rotated files; the newest stays uncompressed, older ones are .gz.
    assert _names(tmp_path) == ["0.log.20261130-005322.gz", "0.log.20261130-005323"]
    _write(path, b"live\n")
    assert b"".join(read_cri_log(str(path))) == b"line 2\nline 3\nlive\n"
    with gzip.open(tmp_path / "0.log.20261130-005322.gz") as handle:
        assert handle.read().endswith(b"stdout F  2\n")


def test_leftovers_of_an_interrupted_compression_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    old = tmp_path / "0.log.20261130-005300"
    _write(old, b"old\n")
    with gzip.open(str(old) + ".gz", "wb") as handle:
        handle.write(old.read_bytes())
    (tmp_path / "0.log.20261130-005310.tmp").write_bytes(b"partial gzip")
    _write(path, b"a line long enough\n")
    assert rotate_log(str(path), LogRotationPolicy(10, 5), NOW, lambda: None)
    assert _names(tmp_path) == ["0.log.20261130-005300.gz", "0.log.20261130-005320"]


def test_a_refused_reopen_renames_the_log_back(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    _write(path, b"a line long enough\n")

    def refuse() -> None:
        raise ContainerRuntimeError("reopen refused")

    with pytest.raises(ContainerRuntimeError):
        rotate_log(str(path), LogRotationPolicy(10, 5), NOW, refuse)
    assert _names(tmp_path) == ["0.log"]


def test_a_lost_live_log_is_reopened(tmp_path: Path) -> None:
    reopened: list[int] = []
    assert not rotate_log(
        str(tmp_path / "0.log"), LogRotationPolicy(10, 5), NOW, lambda: reopened.append(1)
    )
    assert reopened == [1]


def test_two_rotations_in_one_second_wait_for_the_next(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    policy = LogRotationPolicy(10, 5)
    _write(path, b"a line long enough\n")
    assert rotate_log(str(path), policy, NOW, lambda: None)
    _write(path, b"another long line\n")
    assert not rotate_log(str(path), policy, NOW + 0.5, lambda: None)
    assert b"".join(read_cri_log(str(path))) == b"a line long enough\nanother long line\n"


def test_policy_bounds() -> None:
    with pytest.raises(ValueError, match="max_files"):
        LogRotationPolicy(10, 1)
    with pytest.raises(ValueError, match="max_size"):
        LogRotationPolicy(0, 5)


class _Reopener:
    """A runtime's part that the rotation pass uses."""

    def __init__(self) -> None:
        self.reopened: list[str] = []

    def reopen_container_log(self, container_id: str) -> None:
        self.reopened.append(container_id)


def _container(cid: str, state: RuntimeState, log_path: str) -> RuntimeContainer:
    return RuntimeContainer(
        id=cid, sandbox_id="s", name=cid, image="i", state=state, created_at=0, log_path=log_path
    )


def test_the_pass_rotates_running_containers_with_log_files_when_due(tmp_path: Path) -> None:
    runtime = _Reopener()
    rotation = ContainerLogRotation(runtime, LogRotationPolicy(10, 5), interval=10)
    for name in ("running", "exited"):
        _write(tmp_path / f"{name}.log", b"a line long enough\n")
    containers = [
        _container("running", RuntimeState.RUNNING, str(tmp_path / "running.log")),
        _container("exited", RuntimeState.EXITED, str(tmp_path / "exited.log")),
        _container("no-file", RuntimeState.RUNNING, ""),
    ]
    assert rotation.run(containers, now=NOW, mono=100) == 1
    assert runtime.reopened == ["running"]
    _write(tmp_path / "running.log", b"a line long enough\n")
    assert rotation.run(containers, now=NOW + 5, mono=105) == 0  # not due yet
    assert rotation.run(containers, now=NOW + 10, mono=110) == 1


def test_a_runtime_that_cannot_reopen_logs_is_not_rotated(tmp_path: Path) -> None:
    _write(tmp_path / "0.log", b"a line long enough\n")
    rotation = ContainerLogRotation(object(), LogRotationPolicy(10, 5))
    containers = [_container("c", RuntimeState.RUNNING, str(tmp_path / "0.log"))]
    assert rotation.run(containers, now=NOW, mono=100) == 0
    assert _names(tmp_path) == ["0.log"]


def test_the_flags_bounds() -> None:
    assert KubeletConfig(container_log_max_size="1Ki", container_log_max_files=2)
    with pytest.raises(InvalidKubeletConfig, match="container_log_max_files"):
        KubeletConfig(container_log_max_files=1)
    for size in ("0", "ten", "2Ti", "-1Mi"):
        with pytest.raises(InvalidKubeletConfig, match="container_log_max_size"):
            KubeletConfig(container_log_max_size=size)


_steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(min_value=1, max_value=3)),
        st.tuples(st.just("rotate"), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@example(steps=[("write", 1), ("rotate", 0)] * 3, max_files=5, size=1)
@given(_steps, st.integers(min_value=2, max_value=5), st.integers(min_value=1, max_value=60))
def test_rotating_while_writing_never_loses_or_duplicates_a_kept_record(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[str, int]],
    max_files: int,
    size: int,
) -> None:
    """Against a model (the lines of each file kept): reading the log gives exactly the lines
    of the files kept, in order; there are never more than ``max_files`` files."""
    directory = tmp_path_factory.mktemp("log")
    path = directory / "0.log"
    policy = LogRotationPolicy(size, max_files)
    kept: list[list[bytes]] = []  # rotated files' lines, oldest first
    live: list[bytes] = []
    live_bytes = 0
    counter = 0
    for second, (step, count) in enumerate(steps):
        if step == "write":
            for _ in range(count):
                line = f"record {counter} {'x' * (counter % 7)}\n".encode()
                data = encode_output(counter, "stdout", line, max_content=5)
                with open(path, "ab") as handle:
                    handle.write(data)
                live.append(line)
                live_bytes += len(data)
                counter += 1
        else:
            rotated = rotate_log(str(path), policy, NOW + second, lambda: None)
            assert rotated == (live_bytes >= size)
            if rotated:
                kept = [*kept[max(0, len(kept) - (max_files - 2)) :], live]
                live, live_bytes = [], 0
        assert len(os.listdir(directory)) <= max_files
        expected = b"".join(line for lines in [*kept, live] for line in lines)
        if os.path.exists(path) or os.listdir(directory):
            assert b"".join(read_cri_log(str(path))) == expected
