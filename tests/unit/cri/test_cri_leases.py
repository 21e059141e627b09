"""The cri runtime's node leases: lease files on the runtime's host, decided under a lock."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from kubecore.runtime import InvalidConfig, NodeHolder
from kubecore.testing import ManualClock
from kubecore_cri._lease import CriNodeLeases, endpoint_key

ENDPOINT = "unix:///run/containerd/containerd.sock"
A = NodeHolder("agent-a", "host-1", 11, "pid:[1]")
B = NodeHolder("agent-b", "host-1", 22, "pid:[1]")


def leases(tmp_path: Path, clock: ManualClock, endpoint: str = ENDPOINT) -> CriNodeLeases:
    return CriNodeLeases(str(tmp_path), endpoint, clock)


def test_one_holder_at_a_time_until_it_lapses_or_is_replaced(tmp_path: Path) -> None:
    clock = ManualClock()
    mine, theirs = leases(tmp_path, clock), leases(tmp_path, clock)
    took = mine.claim("node-1", A, 30.0, "")
    assert took.granted and took.replaced is None and took.lease.holder == A
    refused = theirs.claim("node-1", B, 30.0, "")
    assert not refused.granted and refused.lease.holder == A
    assert theirs.claim("node-2", B, 30.0, "").granted, "other node names are other leases"
    clock.advance(20)
    assert mine.claim("node-1", A, 30.0, "").granted, "a renewal"
    clock.advance(20)
    assert not theirs.claim("node-1", B, 30.0, "").granted, "renewed 20 s ago: still live"
    clock.advance(11)
    lapsed = theirs.claim("node-1", B, 30.0, "")
    assert lapsed.granted and lapsed.replaced is not None and lapsed.replaced.holder == A
    taken = mine.claim("node-1", A, 30.0, B.id)
    assert taken.granted and taken.replaced is not None and taken.replaced.holder == B


def test_release_is_the_holders_only_and_idempotent(tmp_path: Path) -> None:
    clock = ManualClock()
    store = leases(tmp_path, clock)
    store.claim("node-1", A, 30.0, "")
    store.release("node-1", B)
    assert not store.claim("node-1", B, 30.0, "").granted
    store.release("node-1", A)
    store.release("node-1", A)
    assert store.claim("node-1", B, 30.0, "").granted


def test_each_endpoint_keeps_its_own_leases(tmp_path: Path) -> None:
    clock = ManualClock()
    assert leases(tmp_path, clock).claim("node-1", A, 30.0, "").granted
    other = leases(tmp_path, clock, "unix:///var/tmp/other/containerd.sock")
    assert other.claim("node-1", B, 30.0, "").granted
    assert endpoint_key(ENDPOINT) != endpoint_key("unix:///var/tmp/other/containerd.sock")
    assert endpoint_key(ENDPOINT).startswith("containerd-sock-")


def test_a_file_that_is_not_a_lease_is_nobodys(tmp_path: Path) -> None:
    clock = ManualClock()
    store = leases(tmp_path, clock)
    store.directory.mkdir(parents=True)
    (store.directory / "node-1.json").write_text('{"node_name": "node-1", "hold')
    assert store.claim("node-1", A, 30.0, "").granted
    written = json.loads((store.directory / "node-1.json").read_text())
    assert written["holder"]["id"] == A.id and written["ttl"] == 30.0


def test_a_directory_it_may_not_write_says_which_and_how_to_choose_another(
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    store = CriNodeLeases(str(blocked), ENDPOINT, ManualClock())
    with pytest.raises(InvalidConfig, match="lease_dir") as refused:
        store.claim("node-1", A, 30.0, "")
    assert str(blocked) in str(refused.value)


def _race(directory: str, holder_id: str, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    store = CriNodeLeases(directory, ENDPOINT, ManualClock(start=1000.0))
    holder = NodeHolder(holder_id, "host-1", os.getpid())
    results.put((holder_id, store.claim("contended", holder, 60.0, "").granted))


def test_processes_racing_for_one_name_get_one_grant(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    results: multiprocessing.Queue = context.Queue()  # type: ignore[type-arg]
    racers = [
        context.Process(target=_race, args=(str(tmp_path), f"agent-{i}", results)) for i in range(6)
    ]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=60)
    grants = [results.get(timeout=10) for _ in racers]
    assert sum(granted for _, granted in grants) == 1, grants
