"""subPath resolved once, safely (the CVE-2017-1002101 class): opened one component at a time
from the volume's directory with ``O_NOFOLLOW``, ``..`` and absolute parts refused, a symbolic
link followed by the agent only while it stays inside the volume, nothing ever made outside it;
on a runtime whose mounts are kernel binds the engine is given a bind of the verified inode under
the pod's directory (needs root), unmounted before the pod's directory goes; without the ability
to bind, the subPath is refused in the pod's status and events."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import kubecore._volumes.subpath as subpath_module
from kubecore._model.v1 import Pod
from kubecore._volumes.host_mounts import mount_points_under
from kubecore._volumes.pod_dirs import EMPTY_DIR_PLUGIN, VolumeManager
from kubecore._volumes.subpath import (
    SUB_PATHS_DIR,
    bind_sub_path,
    open_sub_path,
    sub_path_parts,
)
from kubecore.manifest import load_pods_from_string
from tests.agent.support import Node, make_node

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    path = tmp_path / "volume"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host directory no subPath may reach, with a marker file."""
    path = tmp_path / "host-only"
    path.mkdir()
    (path / "marker").write_text("host secret")
    return path


@pytest.fixture
def mounts_left(tmp_path: Path) -> Iterator[None]:
    """After the test: nothing it bound stays mounted (a failed check leaves nothing behind)."""
    yield
    for point in mount_points_under(str(tmp_path)):
        os.system(f"umount -l '{point}'")


def resolve(volume: Path, sub_path: str) -> str:
    fd, resolved = open_sub_path(str(volume), sub_path, make_mode=0o755)
    os.close(fd)
    return resolved


@pytest.mark.parametrize(
    ("sub_path", "problem"),
    [
        ("/etc", "must not be an absolute path"),
        ("..", "must not contain '..'"),
        ("a/../../b", "must not contain '..'"),
    ],
)
def test_dot_dot_and_absolute_sub_paths_are_refused(
    volume: Path, sub_path: str, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        resolve(volume, sub_path)
    assert list(volume.iterdir()) == []


def test_sub_path_parts_skip_empty_and_dot_components() -> None:
    assert sub_path_parts("a//./b/") == ["a", "b"]


@pytest.mark.parametrize("where", ["l", "l/new", "a/l/new/deeper", "a/l"])
def test_a_symlink_leading_out_anywhere_is_refused_and_nothing_is_made_outside(
    volume: Path, outside: Path, where: str
) -> None:
    (volume / "a").mkdir()
    (volume / "l").symlink_to(outside)
    (volume / "a" / "l").symlink_to("../../host-only")  # relative, out through '..'
    with pytest.raises(ValueError, match="leaves the volume"):
        resolve(volume, where)
    assert sorted(p.name for p in outside.iterdir()) == ["marker"]


def test_a_symlink_to_the_volume_root_through_its_absolute_path_stays_inside(
    volume: Path,
) -> None:
    (volume / "d").mkdir()
    (volume / "d" / "up").symlink_to(volume)
    assert resolve(volume, "d/up/d") == str(volume.resolve() / "d")


def test_links_inside_the_volume_are_followed_as_a_config_map_lays_them_out(volume: Path) -> None:
    (volume / "..2026_12_02").mkdir()
    (volume / "..2026_12_02" / "app.conf").write_text("one")
    (volume / "..data").symlink_to("..2026_12_02")
    (volume / "app.conf").symlink_to("..data/app.conf")
    assert resolve(volume, "app.conf") == str(volume.resolve() / "..2026_12_02" / "app.conf")


def test_a_link_loop_is_refused(volume: Path) -> None:
    (volume / "a").symlink_to("b")
    (volume / "b").symlink_to("a")
    with pytest.raises(OSError) as refused:
        resolve(volume, "a")
    assert refused.value.errno == errno.ELOOP


def test_missing_directories_are_made_inside_with_the_mode(volume: Path) -> None:
    fd, resolved = open_sub_path(str(volume), "a/b/c", make_mode=0o750)
    os.close(fd)
    assert resolved == str(volume.resolve() / "a" / "b" / "c")
    assert (volume / "a" / "b" / "c").is_dir()
    assert (volume / "a").stat().st_mode & 0o777 == 0o750 & ~_umask()


def test_a_file_in_the_middle_is_not_a_directory(volume: Path) -> None:
    (volume / "f").write_text("x")
    with pytest.raises(NotADirectoryError):
        resolve(volume, "f/g")


def _waiting(node: Node) -> str:
    (status,) = node.status().container_statuses
    return status.state.waiting.reason if status.state.waiting else ""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@needs_root
def test_a_symlink_swapped_in_after_the_open_is_not_what_gets_bound(
    tmp_path: Path, volume: Path, outside: Path, mounts_left: None
) -> None:
    (volume / "x").mkdir()
    (volume / "x" / "mine").write_text("volume file")
    fd, _ = open_sub_path(str(volume), "x", make_mode=0o755)
    try:
        (volume / "x").rename(volume / "x.away")  # the swap, between the check and the use
        (volume / "x").symlink_to(outside)
        target = tmp_path / "target"
        bind_sub_path(fd, str(target))
    finally:
        os.close(fd)
    assert sorted(p.name for p in target.iterdir()) == ["mine"]
    assert mount_points_under(str(target)) == [str(target.resolve())]


_RACER = """
import os, shutil, sys
volume, outside, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
link, keep = os.path.join(volume, "x"), os.path.join(volume, "keep")
os.mkdir(keep)

def clear():  # what the agent made while the name was free
    if os.path.islink(link):
        os.unlink(link)
    elif os.path.exists(link):
        shutil.rmtree(link)

for _ in range(count):  # directory -> symbolic link to the host directory, as fast as it goes
    try:
        clear()
        os.rename(keep, link)
        os.rename(link, keep)
        clear()
        os.symlink(outside, link)
        os.unlink(link)
    except OSError:  # the agent made the name meanwhile: the next round clears it
        pass
"""


def _pod(volumes: str = "{name: v, emptyDir: {}}") -> Pod:
    (pod,) = load_pods_from_string(
        f"""
apiVersion: v1
kind: Pod
metadata: {{name: web, uid: uid-sub}}
spec:
  containers: [{{name: app, image: busybox, volumeMounts: [{{name: v, mountPath: /v}}]}}]
  volumes: [{volumes}]
"""
    )
    return pod


@needs_root
def test_racing_swaps_never_bind_the_host_and_teardown_unmounts(
    tmp_path: Path, outside: Path, mounts_left: None
) -> None:
    manager = VolumeManager(str(tmp_path / "root"), "node")
    pod = _pod()
    try:
        volume = manager.setup(pod)["v"]
        racer = subprocess.Popen(  # another process: it swaps while the agent resolves
            [sys.executable, "-c", _RACER, volume.host_path, str(outside), "200000"]
        )
        keep = Path(volume.host_path, "keep")
        deadline = time.monotonic() + 20
        while not keep.exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # the racer's start, then it swaps until told to stop
        bound = refused = 0
        try:
            while bound + refused < 300 and time.monotonic() < deadline:
                try:
                    target = manager.sub_path_source(
                        pod.uid, "v", volume, "x/made", container="app", index=bound % 3
                    )
                except (ValueError, OSError):
                    refused += 1
                    continue
                bound += 1
                assert "marker" not in os.listdir(target)
                assert sorted(p.name for p in outside.iterdir()) == ["marker"]
        finally:
            racer.terminate()
            racer.wait(10)
        assert bound > 0 and refused > 0, (bound, refused)  # both states were met
        assert sorted(p.name for p in outside.iterdir()) == ["marker"]
        subpaths = Path(manager.pod_dir(pod.uid), SUB_PATHS_DIR)
        assert len(mount_points_under(str(subpaths))) >= 1
        assert manager.cleanup_orphans([]) == [pod.uid]
        assert mount_points_under(str(tmp_path / "root")) == []
        assert not subpaths.exists()
    finally:
        manager.release()


@needs_root
def test_a_host_path_sub_path_is_unmounted_not_emptied_by_a_restarted_agent(
    tmp_path: Path, mounts_left: None
) -> None:
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "keep").write_text("kept")
    manager = VolumeManager(str(tmp_path / "root"), "node")
    pod = _pod(f"{{name: v, hostPath: {{path: {data}}}}}")
    try:
        volume = manager.setup(pod)["v"]
        target = manager.sub_path_source(pod.uid, "v", volume, "sub", container="app", index=0)
        assert target == str(Path(manager.pod_dir(pod.uid), SUB_PATHS_DIR, "v", "app", "0"))
        assert os.listdir(target) == ["keep"]
        again = manager.sub_path_source(pod.uid, "v", volume, "sub", container="app", index=0)
        assert again == target and len(mount_points_under(target)) == 1  # a restart reuses it
    finally:
        manager.release()
    restarted = VolumeManager(str(tmp_path / "root"), "node")  # an agent restart: no memory
    try:
        assert restarted.cleanup_orphans([]) == [pod.uid]
        assert (data / "sub" / "keep").read_text() == "kept"
        assert mount_points_under(str(tmp_path / "root")) == []
        assert not Path(restarted.pod_dir(pod.uid)).exists()
    finally:
        restarted.release()


def test_without_the_right_to_bind_the_sub_path_is_refused_in_status_and_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_mount(source: str, target: str) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted", target)

    monkeypatch.setattr(subpath_module, "bind_mount", no_mount)
    node = make_node(tmp_path)
    node.kubelet._rooms.volumes.bind_sub_paths = True  # as on a runtime with kernel binds
    (pod,) = load_pods_from_string(
        """
apiVersion: v1
kind: Pod
metadata: {name: web, uid: uid-web}
spec:
  containers:
  - name: app
    image: busybox
    command: [server]
    volumeMounts: [{name: v, mountPath: /d, subPath: a}]
  volumes: [{name: v, emptyDir: {}}]
"""
    )
    node.kubelet.set_pods([pod])
    node.run_until(lambda: _waiting(node) == "CreateContainerConfigError")
    (status,) = node.status().container_statuses
    assert status.state.waiting is not None
    assert "needs the agent to run as root" in status.state.waiting.message
    events = [e.message for e in node.kubelet.views.recent_events(reason="Failed")]
    assert any("needs the agent to run as root" in message for message in events), events
    assert node.running(None, "app") == []


def test_the_in_memory_runtime_gets_the_verified_path_and_no_bind(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    (pod,) = load_pods_from_string(
        """
apiVersion: v1
kind: Pod
metadata: {name: web, uid: uid-web}
spec:
  containers:
  - name: app
    image: busybox
    command: [server]
    volumeMounts: [{name: v, mountPath: /d, subPath: a/b}]
  volumes: [{name: v, emptyDir: {}}]
"""
    )
    node.kubelet.set_pods([pod])
    node.converge()
    (found,) = node.running(None, "app")
    (mount,) = [
        m for m in node.runtime.container_config(found.id).mounts if m.container_path == "/d"
    ]
    pod_dir = tmp_path / "root" / "pods" / "uid-web"
    volume_dir = pod_dir / "volumes" / EMPTY_DIR_PLUGIN / "v"
    assert mount.host_path == str(volume_dir.resolve() / "a" / "b")
    assert not (pod_dir / SUB_PATHS_DIR).exists()
