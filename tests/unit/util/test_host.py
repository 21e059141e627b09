"""One reading of the host: its memory from /proc/meminfo, and the disk a directory uses."""

from __future__ import annotations

import os
from pathlib import Path

from kubecore._util.host import directory_usage, memory_total_bytes, parse_key_values

MEMINFO = "MemTotal:        8048124 kB\nMemFree:         1000000 kB\nHugePages_Total:       0\n"


def test_memory_is_read_from_meminfo_in_bytes(tmp_path: Path) -> None:
    (tmp_path / "meminfo").write_text(MEMINFO)
    assert memory_total_bytes(str(tmp_path)) == 8048124 * 1024
    assert parse_key_values(MEMINFO)["HugePages_Total"] == 0  # no kB: no scaling


def test_no_meminfo_reads_as_no_memory(tmp_path: Path) -> None:
    assert memory_total_bytes(str(tmp_path / "absent")) == 0
    (tmp_path / "meminfo").write_text("MemFree: 5 kB\n")
    assert memory_total_bytes(str(tmp_path)) == 0


def test_the_node_capacity_and_the_etcd_node_document_read_the_same_memory() -> None:
    from kubecore._kuberuntime.env import host_capacity

    memory = memory_total_bytes()
    capacity = host_capacity("/")
    assert (capacity.get("memory") or 0) == memory


def test_directory_usage_counts_each_inode_once_and_follows_no_link(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    (volume / "sub").mkdir(parents=True)
    data = volume / "sub" / "data"
    data.write_bytes(b"x" * 64 * 1024)
    os.link(data, volume / "hard")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"y" * 1024 * 1024)
    os.symlink(outside, volume / "link")
    used, inodes = directory_usage(str(volume))
    assert inodes == 3  # sub, data (its hard link counted once), the link itself
    blocks = os.lstat(data).st_blocks + os.lstat(volume / "sub").st_blocks
    blocks += os.lstat(volume / "link").st_blocks
    assert used == blocks * 512
    assert directory_usage(str(tmp_path / "absent")) == (0, 0)


def test_the_emptydir_limit_and_the_stats_summary_share_the_reading() -> None:
    from kubecore._observability import stats as _stats
    from kubecore._volumes import pod_dirs as _volumes

    assert _stats.directory_usage is _volumes.directory_usage is directory_usage


def test_pid_max_and_meminfo_have_one_reader_each(tmp_path: Path) -> None:
    from kubecore._util.host import read_meminfo, read_pid_max, read_statvfs

    assert read_pid_max(str(tmp_path)) is None
    (tmp_path / "sys" / "kernel").mkdir(parents=True)
    (tmp_path / "sys" / "kernel" / "pid_max").write_text("4194304\n")
    assert read_pid_max(str(tmp_path)) == 4194304
    (tmp_path / "meminfo").write_text(MEMINFO)
    assert read_meminfo(str(tmp_path))["MemFree"] == 1000000 * 1024
    assert read_meminfo(str(tmp_path / "absent")) == {}
    assert read_statvfs(str(tmp_path / "absent")) is None
    found = read_statvfs(str(tmp_path))
    assert found is not None and found.f_blocks > 0


def test_the_eviction_signals_and_the_summary_read_the_host_the_same_way() -> None:
    from kubecore._agent import node_pressure
    from kubecore._observability import stats
    from kubecore._util import host

    for module in (node_pressure, stats):
        for name in ("read_meminfo", "read_pid_max", "read_statvfs"):
            if name in vars(module):
                assert vars(module)[name] is getattr(host, name)
    assert "meminfo" not in vars(node_pressure)
