"""The agent's root directory: one agent process at a time, and each node removes only its own
pod directories."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubecore._errors import RootDirInUse
from kubecore._volumes import VolumeManager

HOLD = """
import sys
from kubecore._volumes import VolumeManager
manager = VolumeManager(sys.argv[1], "other-node")
manager.acquire()
print("locked", flush=True)
sys.stdin.readline()
"""


def test_another_process_holding_the_root_dir_is_named(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        manager = VolumeManager(str(tmp_path), "mine")
        with pytest.raises(RootDirInUse, match=rf"pid {holder.pid}, node other-node"):
            manager.acquire()
        with pytest.raises(RootDirInUse):
            manager.prepare_termination_log("uid-1", "app", 0)  # nothing is written either
        assert not (tmp_path / "pods").exists()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    manager.acquire()  # free again once the holder exited
    manager.release()


def test_agents_of_one_process_share_the_root_dir(tmp_path: Path) -> None:
    first = VolumeManager(str(tmp_path), "node")
    second = VolumeManager(str(tmp_path), "node")
    first.prepare_termination_log("uid-1", "app", 0)
    second.prepare_termination_log("uid-2", "app", 0)  # a restarted agent in a harness
    first.release()
    second.release()


def test_orphan_cleanup_removes_only_this_nodes_directories(tmp_path: Path) -> None:
    mine = VolumeManager(str(tmp_path), "node-a")
    theirs = VolumeManager(str(tmp_path), "node-b")
    mine.prepare_termination_log("uid-mine", "app", 0)
    theirs.prepare_termination_log("uid-theirs", "app", 0)
    legacy = tmp_path / "pods" / "uid-legacy"  # made before directories were marked
    legacy.mkdir(parents=True)
    assert mine.cleanup_orphans(()) == ["uid-legacy", "uid-mine"]
    assert sorted(os.listdir(tmp_path / "pods")) == ["uid-theirs"]
    assert theirs.cleanup_orphans(()) == ["uid-theirs"]
    mine.release()
    theirs.release()


def test_termination_message_dirs_of_gone_instances_are_pruned(tmp_path: Path) -> None:
    manager = VolumeManager(str(tmp_path), "node")
    for restart in range(3):
        manager.prepare_termination_log("uid-1", "app", restart)
    manager.prepare_termination_log("uid-1", "old", 0)
    assert manager.prune_container_dirs("uid-1", {("app", 2)}) == 3
    containers = tmp_path / "pods" / "uid-1" / "containers"
    assert sorted(str(p.relative_to(containers)) for p in containers.iterdir()) == ["app"]
    assert os.listdir(containers / "app") == ["2"]
    assert manager.prune_container_dirs("uid-2", ()) == 0  # no such pod: nothing to do
    manager.release()
