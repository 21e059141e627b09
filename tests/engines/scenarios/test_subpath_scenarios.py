"""subPath on every engine (Docker, then the CRI on containerd): the CVE-2017-1002101 attack, a
container turning a directory of its shared emptyDir into a symbolic link to a host directory
while the other containers mount a subPath through it again and again, never shows them the
host's files nor makes anything on the host (the agent binds the inode it verified, under the
pod's directory, and unmounts it before the directory goes); the plain subPath cases work."""

from __future__ import annotations

import time
from pathlib import Path

from kubecore._housekeeping.timers import POD_DIR_RECLAIM_GRACE
from kubecore._model.v1 import Pod
from kubecore._volumes.pod_dirs import EMPTY_DIR_PLUGIN
from kubecore._volumes.subpath import SUB_PATHS_DIR
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    exec_until,
    forever,
    get_pod,
    make_pod,
    wait_pod,
)
from tests.engines.docker.helpers import wait_for
from tests.engines.engine_support import EngineUnderTest, host_mounts_under

VICTIMS = ("v1", "v2", "v3")
RUNS = 12
"""Runs of the victim containers to see (each mounts its subPaths anew)."""
ATTACK_SECONDS = 120.0
SWAPS = 100_000
"""The racer's directory -> symbolic link swaps at most (it stops sooner with its pod)."""
FAST_BACKOFF = {"backoff_initial": 0.05, "backoff_max": 0.2}
_PAUSE = "usleep 10000 2>/dev/null || sleep 0.01"


def _attack_pod(namespace: str, engine: EngineUnderTest, host_dir: Path) -> Pod:
    # The directory is renamed away, not deleted, so that a mount of it can succeed as often
    # as the swap allows: x is a directory, then a symbolic link to the host's directory.
    racer = (
        f"mkdir -p /shared/keep; i=0; while [ $i -lt {SWAPS} ]; do"
        f" rm -rf /shared/x; mv /shared/keep /shared/x; {_PAUSE};"
        f" mv /shared/x /shared/keep; rm -rf /shared/x; ln -s {host_dir} /shared/x; {_PAUSE};"
        " i=$((i+1)); done"
    )

    def victim(name: str) -> str:
        return (
            f"touch /report/ran-{name}-$$-$RANDOM;"
            f" if [ -e /mnt/marker ]; then touch /report/leaked-{name}-$$-$RANDOM; fi;"
            " touch /mnt/victim-was-here /made/victim-was-here 2>/dev/null; exit 0"
        )

    mounts = [
        {"name": "shared", "mountPath": "/mnt", "subPath": "x"},
        {"name": "shared", "mountPath": "/made", "subPath": "x/made-by-the-agent"},
        {"name": "report", "mountPath": "/report"},
    ]
    shared = [{"name": "shared", "mountPath": "/shared"}]
    return make_pod(
        "p",
        namespace,
        [
            container("racer", engine.image, forever(racer), volumeMounts=shared),
            *(
                container(name, engine.image, ["sh", "-c", victim(name)], volumeMounts=mounts)
                for name in VICTIMS
            ),
        ],
        volumes=[{"name": "shared", "emptyDir": {}}, {"name": "report", "emptyDir": {}}],
    )


def _host_entries(host_dir: Path) -> list[str]:
    return sorted(p.name for p in host_dir.iterdir())


def test_a_symlink_swapped_into_a_sub_path_never_reaches_the_host(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str, tmp_path: Path
) -> None:
    host_dir = tmp_path / "host-only"
    host_dir.mkdir()
    (host_dir / "marker").write_text("host secret\n")
    kubelet = make_agent([_attack_pod(namespace, engine, host_dir)], **FAST_BACKOFF)
    wait_pod(kubelet, namespace, "p", lambda p: p.metadata.uid != "", timeout=30)
    uid = get_pod(kubelet, namespace, "p").metadata.uid
    pod_dir = tmp_path / "root" / "pods" / uid
    report = pod_dir / "volumes" / EMPTY_DIR_PLUGIN / "report"
    deadline = time.monotonic() + ATTACK_SECONDS
    runs: list[str] = []
    while time.monotonic() < deadline and len(runs) < RUNS:
        assert _host_entries(host_dir) == ["marker"], "the agent or a victim wrote on the host"
        found = sorted(p.name for p in report.iterdir()) if report.is_dir() else []
        assert [name for name in found if name.startswith("leaked-")] == []
        runs = [name for name in found if name.startswith("ran-")]
        time.sleep(0.2)
    assert len(runs) >= RUNS, f"too few victim runs in {ATTACK_SECONDS} s: {runs}"
    assert [p.name for p in report.iterdir() if p.name.startswith("leaked-")] == []
    assert _host_entries(host_dir) == ["marker"]
    assert (host_dir / "marker").read_text() == "host secret\n"

    kubelet.set_pods([])
    wait_for(
        lambda: not pod_dir.exists(),
        timeout=POD_DIR_RECLAIM_GRACE + 60,  # a departed pod's directory is kept that long first
        interval=0.2,
        what="the pod's directory removed",
    )
    assert host_mounts_under(tmp_path / "root") == []
    assert _host_entries(host_dir) == ["marker"]


def test_sub_paths_of_an_empty_dir_share_files_between_containers(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str, tmp_path: Path
) -> None:
    pod = make_pod(
        "p",
        namespace,
        [
            container(
                "writer",
                engine.image,
                forever("echo one > /out/file"),
                volumeMounts=[{"name": "v", "mountPath": "/out", "subPath": "a/b"}],
            ),
            container(
                "reader",
                engine.image,
                volumeMounts=[
                    {"name": "v", "mountPath": "/in", "subPath": "a", "readOnly": True},
                    {"name": "v", "mountPath": "/whole"},
                ],
            ),
        ],
        volumes=[{"name": "v", "emptyDir": {}}],
    )
    kubelet = make_agent([pod])
    wait_pod(kubelet, namespace, "p", all_running)
    read = exec_until(
        kubelet, namespace, "p", "reader", ["cat", "/in/b/file"], ok=lambda r: r.stdout == b"one\n"
    )
    assert read.stdout == b"one\n"
    denied = kubelet.streams.exec(namespace, "p", "reader", ["touch", "/in/new"])
    assert denied.exit_code != 0  # the subPath's readOnly holds on the bind
    whole = kubelet.streams.exec(namespace, "p", "reader", ["cat", "/whole/a/b/file"])
    assert whole.stdout == b"one\n"
    uid = get_pod(kubelet, namespace, "p").metadata.uid
    subpaths = tmp_path / "root" / "pods" / uid / SUB_PATHS_DIR
    assert sorted(str(Path(p).relative_to(subpaths)) for p in host_mounts_under(subpaths)) == [
        "v/reader/0",
        "v/writer/0",
    ]
