"""Memory-backed emptyDirs: the size of their tmpfs (the volume's sizeLimit or the pod's memory
limit, as the kubelet reckons it), and, for a runtime that binds host paths only, the tmpfs the
agent mounts on the host and unmounts when the pod's directory goes (needs root)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from kubecore._model.v1 import Pod
from kubecore._volumes.pod_dirs import VolumeManager
from kubecore._volumes.tmpfs import pod_memory_limit, tmpfs_size
from kubecore.manifest import load_pods_from_dict

MiB = 2**20


def a_pod(
    containers: list[str | None],
    *,
    init: Sequence[tuple[str | None, str | None]] = (),
    pod_limit: str | None = None,
    size_limit: str | None = None,
) -> Pod:
    """A pod whose containers have these memory limits (None: no limit), init containers
    (limit, restartPolicy) and one Memory emptyDir ``cache``."""

    def one(name: str, limit: str | None, **extra: str) -> dict[str, object]:
        limits = {"limits": {"memory": limit}} if limit else {}
        return {"name": name, "image": "busybox", "resources": limits, **extra}

    empty: dict[str, str] = {"medium": "Memory"}
    if size_limit:
        empty["sizeLimit"] = size_limit
    spec: dict[str, object] = {
        "containers": [one(f"c{i}", limit) for i, limit in enumerate(containers)],
        "initContainers": [
            one(f"i{i}", limit, **({"restartPolicy": policy} if policy else {}))
            for i, (limit, policy) in enumerate(init)
        ],
        "volumes": [{"name": "cache", "emptyDir": empty}],
    }
    if pod_limit:
        spec["resources"] = {"limits": {"memory": pod_limit}}
    data = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u-1"}}
    (pod,) = load_pods_from_dict({**data, "spec": spec}, source_name="test")
    return pod


@pytest.mark.parametrize(
    ("pod", "limit"),
    [
        (a_pod(["32Mi", "16Mi"]), 48 * MiB),
        (a_pod(["32Mi", None]), None),
        (a_pod([None], pod_limit="64Mi"), 64 * MiB),
        (a_pod(["8Mi"], init=[("100Mi", None)]), 100 * MiB),
        (a_pod(["8Mi"], init=[("8Mi", "Always"), ("4Mi", None)]), 16 * MiB),
        (a_pod(["8Mi"], init=[(None, None)]), None),
    ],
    ids=["sum", "one-unlimited", "pod-level", "init-larger", "sidecar-counts", "init-unlimited"],
)
def test_the_pods_memory_limit(pod: Pod, limit: int | None) -> None:
    assert pod_memory_limit(pod) == limit


@pytest.mark.parametrize(
    ("pod", "size"),
    [
        (a_pod([None]), None),
        (a_pod([None], size_limit="8Mi"), 8 * MiB),
        (a_pod(["32Mi"]), 32 * MiB),
        (a_pod(["32Mi"], size_limit="8Mi"), 8 * MiB),
        (a_pod(["32Mi"], size_limit="64Mi"), 32 * MiB),
    ],
    ids=["neither", "size-limit", "pod-limit", "size-under-limit", "size-over-limit"],
)
def test_the_tmpfs_size(pod: Pod, size: int | None) -> None:
    (volume,) = pod.spec.volumes
    assert tmpfs_size(pod, volume) == size


def mounts() -> dict[str, str]:
    """Mount point -> its type and options."""
    found = {}
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, point, kind, options, *_ = line.split()
        found[point] = f"{kind} {options}"
    return found


def mounted(path: Path) -> str | None:
    """The type and options of the mount at ``path`` (None: nothing mounted there)."""
    return mounts().get(str(path))


def test_a_host_tmpfs_is_mounted_sized_kept_and_unmounted_with_the_pod(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    manager = VolumeManager(str(tmp_path / "root"), "node-a", host_tmpfs=True)
    pod = a_pod(["16Mi"], size_limit="8Mi")
    try:
        volume = manager.setup(pod)["cache"]
        assert not volume.memory_backed  # the runtime binds it as any directory
        options = mounted(Path(volume.host_path))
        assert options is not None and options.startswith("tmpfs "), options
        assert "size=8192k" in options.split()[1].split(","), options
        Path(volume.host_path, "kept").write_text("x")
        assert manager.setup(pod)["cache"] == volume  # set up again: the same tmpfs
        assert Path(volume.host_path, "kept").read_text() == "x"
        assert manager.cleanup_orphans([]) == [pod.uid]
        assert mounted(Path(volume.host_path)) is None
        assert not Path(volume.host_path).exists()
    finally:
        for point in mounts():  # a failed check leaves nothing mounted
            if point.startswith(f"{tmp_path}/"):
                subprocess.run(["umount", "-l", point], check=False)
        manager.release()
