"""The manifest file source watches its paths (inotify through watchfiles, or watchfiles'
polling): an edit is picked up at once, never before it has settled."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kubecore._config.file import FileSource
from kubecore._config.listing import watched_directories
from kubecore._config.poller import SourcePoller
from kubecore._config.updates import Operation, PodUpdate
from kubecore._util.clock import SystemClock
from tests.unit.config.support import pod_yaml, write


def names(update: PodUpdate) -> list[str]:
    return sorted(pod.metadata.name for pod in update.pods)


def two_pods(*pods: str) -> str:
    return "---\n".join(pod_yaml(name) for name in pods)


def test_a_half_written_file_is_not_read_until_it_has_settled(tmp_path: Path) -> None:
    manifest = tmp_path / "pods.yaml"
    manifest.write_text(two_pods("alpha"))
    source = FileSource(tmp_path, interval=3600.0, settle=0.5)
    first = source.poll(0.0)
    assert first is not None and names(first) == ["alpha"]
    woken = threading.Event()
    source.notify_changes(woken.set)
    source.start()
    try:
        assert source.wait_watching(10.0)
        whole = two_pods("alpha", "beta", "gamma")
        write(manifest, whole[: len(whole) // 2])  # the writer is half-way
        assert woken.wait(10.0), "the watch did not report the write"
        woken.clear()
        assert source.poll(0.1) is None  # changed 0 s ago: not read (the interval is an hour)
        assert source.changing == (manifest,)
        write(manifest, whole)  # the writer is done
        updates = []
        for step in range(1, 40):  # virtual time: a poll every 0.25 s until the file settled
            woken.wait(0.05)
            update = source.poll(0.1 + 0.25 * step)
            if update is not None:
                updates.append(update)
                break
        assert [names(u) for u in updates] == [["alpha", "beta", "gamma"]]
        assert source.changing == ()
    finally:
        source.close()


def test_an_edit_reaches_the_sink_well_before_the_interval(tmp_path: Path) -> None:
    manifest = tmp_path / "pods.yaml"
    manifest.write_text(two_pods("alpha"))
    received: list[PodUpdate] = []
    arrived = threading.Condition()

    def sink(update: PodUpdate) -> None:
        with arrived:
            received.append(update)
            arrived.notify_all()

    source = FileSource(tmp_path, interval=3600.0, settle=0.2)
    poller = SourcePoller([source], sink, clock=SystemClock(), tick=3600.0)
    poller.start()
    try:
        assert source.wait_watching(10.0)
        with arrived:
            assert arrived.wait_for(lambda: len(received) == 1, timeout=10.0)
        edited = time.monotonic()
        write(manifest, two_pods("alpha", "beta"))
        with arrived:
            assert arrived.wait_for(lambda: len(received) == 2, timeout=10.0)
        latency = time.monotonic() - edited
    finally:
        poller.stop()
    assert received[1].op is Operation.SET and names(received[1]) == ["alpha", "beta"]
    assert latency < 3600.0 / 2  # neither the interval nor the poller's tick: the watch


def test_a_file_replaced_by_a_rename_is_seen(tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(two_pods("alpha"))
    woken = threading.Event()
    source = FileSource(manifest, interval=3600.0, settle=0.0)
    assert source.poll(0.0) is not None
    source.notify_changes(woken.set)
    source.start()
    try:
        assert source.wait_watching(10.0)
        staged = tmp_path / ".web.yaml.tmp"
        staged.write_text(two_pods("beta"))
        staged.rename(manifest)  # how editors and kubectl-like tools save
        assert woken.wait(10.0)
        update = source.poll(1.0)
        assert update is not None and names(update) == ["beta"]
    finally:
        source.close()


def test_a_relative_path_is_watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "a.yaml").write_text(two_pods("alpha"))
    monkeypatch.chdir(tmp_path)
    woken = threading.Event()
    source = FileSource("manifests", interval=3600.0, settle=0.0)
    assert source.poll(0.0) is not None
    source.notify_changes(woken.set)
    source.start()
    try:
        assert source.wait_watching(10.0)
        (tmp_path / "manifests" / "b.yaml").write_text(two_pods("beta"))
        assert woken.wait(10.0), "a change under a relative root was not recognised"
        update = source.poll(1.0)
        assert update is not None and names(update) == ["alpha", "beta"]
    finally:
        source.close()


def test_polling_is_the_fallback_without_inotify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WATCHFILES_FORCE_POLLING", "1")  # as where inotify cannot be used
    (tmp_path / "a.yaml").write_text(two_pods("alpha"))
    woken = threading.Event()
    source = FileSource(tmp_path, interval=3600.0, settle=0.0)
    assert source.poll(0.0) is not None
    source.notify_changes(woken.set)
    source.start()
    try:
        assert source.wait_watching(10.0)
        # the poller takes its first inventory in a thread of its own: a write before it is done
        # is part of the inventory, so write until a change is reported (bounded)
        for _ in range(10):
            write(tmp_path / "a.yaml", two_pods("beta"))
            if woken.wait(1.0):
                break
            write(tmp_path / "a.yaml", two_pods("alpha"))
        assert woken.is_set()
        update = source.poll(1.0)
        assert update is not None and names(update) == ["beta"]
    finally:
        source.close()


def test_watched_directories(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file.yaml").write_text("")
    roots = [tmp_path / "dir", tmp_path / "file.yaml", tmp_path / "later" / "deeper" / "x.yaml"]
    assert watched_directories(roots) == [tmp_path / "dir", tmp_path]
