"""The agent's root directory: one agent process at a time, and each node removes only its own
pod directories."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubecore import Kubelet, KubeletConfig
from kubecore._contract.errors import RootDirInUse
from kubecore._volumes.pod_dirs import VolumeManager
from kubecore_fake import FakeRuntime

HOLD = """
import sys
from kubecore._volumes.pod_dirs import VolumeManager
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


def test_a_second_agent_of_one_process_is_refused_until_the_first_stops(tmp_path: Path) -> None:
    first = VolumeManager(str(tmp_path), "node-a")
    second = VolumeManager(str(tmp_path), "node-b")
    first.prepare_termination_log("uid-1", "app", 0)
    with pytest.raises(RootDirInUse, match=rf"another agent of this process, pid {os.getpid()}"):
        second.prepare_termination_log("uid-2", "app", 0)
    first.acquire()  # the holder itself may ask again
    first.release()
    second.prepare_termination_log("uid-2", "app", 0)  # a restarted agent, the old one stopped
    second.release()


def test_two_kubelets_on_one_root_dir_in_one_process(tmp_path: Path) -> None:
    runtime = FakeRuntime()
    config = KubeletConfig(root_dir=str(tmp_path), resolv_conf=str(tmp_path / "none"))
    first = Kubelet(runtime, runtime, config=config)
    with pytest.raises(RootDirInUse, match="node kubecore-node"):
        Kubelet(runtime, runtime, config=config)
    first.close()
    with Kubelet(runtime, runtime, config=config) as second:
        assert second.root_dir == str(tmp_path)


def test_an_agent_dropped_without_closing_does_not_hold_the_root_dir(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)  # a kept log record must not keep the agent either
    runtime = FakeRuntime()
    config = KubeletConfig(root_dir=str(tmp_path), resolv_conf=str(tmp_path / "none"))
    Kubelet(runtime, runtime, config=config)  # never closed, no reference kept
    Kubelet(runtime, runtime, config=config).close()


def test_orphan_cleanup_removes_only_this_nodes_directories(tmp_path: Path) -> None:
    theirs = VolumeManager(str(tmp_path), "node-b")  # an agent of another node used it before
    theirs.prepare_termination_log("uid-theirs", "app", 0)
    theirs.release()
    mine = VolumeManager(str(tmp_path), "node-a")
    mine.prepare_termination_log("uid-mine", "app", 0)
    legacy = tmp_path / "pods" / "uid-legacy"  # made before directories were marked
    legacy.mkdir(parents=True)
    assert mine.cleanup_orphans(()) == ["uid-legacy", "uid-mine"]
    assert sorted(os.listdir(tmp_path / "pods")) == ["uid-theirs"]
    mine.release()
    assert theirs.cleanup_orphans(()) == ["uid-theirs"]
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
