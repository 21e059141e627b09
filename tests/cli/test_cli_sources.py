"""What `kubecore run` does with a manifest path that is not there, and with a root directory
another agent holds: a usage error (exit 2), and nothing of the node's data touched."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kubecore._cli import main


def run(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue() + capsys.readouterr().err


def test_a_mistyped_manifest_path_is_a_usage_error_and_deletes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    data = root / "pods" / "some-uid" / "volumes" / "kubernetes.io~empty-dir" / "cache"
    data.mkdir(parents=True)
    (data / "precious").write_text("keep me")
    typo = tmp_path / "manifets"
    code, output = run(
        "run", str(typo), "--once", "--root-dir", str(root), "--log-level", "error", capsys=capsys
    )
    assert code == 2
    assert str(typo) in output and "--manifest-may-be-missing" in output
    assert (data / "precious").read_text() == "keep me"


def test_a_path_that_may_be_missing_runs_with_no_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = run(
        "run",
        str(tmp_path / "later"),
        "--manifest-may-be-missing",
        "--once",
        "--root-dir",
        str(tmp_path / "root"),
        "--log-level",
        "error",
        capsys=capsys,
    )
    assert code == 0, output


HOLD = """
import sys
from kubecore._volumes.pod_dirs import VolumeManager
VolumeManager(sys.argv[1], "first").acquire()
print("locked", flush=True)
sys.stdin.readline()
"""


def test_a_second_agent_on_one_root_dir_exits_naming_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    manifests = tmp_path / "pods"
    manifests.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        code, output = run("run", str(manifests), "--once", "--root-dir", str(root), capsys=capsys)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert code == 2
    assert f"pid {holder.pid}" in output and str(root) in output


def test_the_kubernetes_api_off_loopback_needs_a_token_and_tls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifests = tmp_path / "pods"
    manifests.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    code, output = run(
        "run", str(manifests), "--address", "0.0.0.0", "--port", port,
        "--root-dir", str(tmp_path / "root"), capsys=capsys,
    )  # fmt: skip
    assert code == 2 and "--api-token-file" in output


POD = """apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: main
    image: busybox:1.35
    command: ["httpd", "-f", "-p", "8080"]
"""


def test_the_last_good_manifests_are_kept_under_the_root_dir_privately(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    manifests = tmp_path / "pods"
    manifests.mkdir()
    (manifests / "web.yaml").write_text(POD)
    args = ("run", str(manifests), "--once", "--root-dir", str(root), "--log-level", "error")
    code, output = run(*args, capsys=capsys)
    assert code == 0, output
    memory = root / "manifests-last-good"
    assert (memory.stat().st_mode & 0o777) == 0o700
    records = list(memory.iterdir())
    assert len(records) == 2  # the file and its directory
    assert all((r.stat().st_mode & 0o777) == 0o600 for r in records)
    assert any("web" in r.read_text() for r in records)


def test_an_empty_manifest_directory_on_a_used_node_says_so_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    manifests = tmp_path / "pods"
    manifests.mkdir()
    root = tmp_path / "root"
    (root / "pods" / "some-uid" / "volumes").mkdir(parents=True)  # pods ran on this node
    base = ("run", str(manifests), "--once", "--root-dir", str(root))
    code, output = run(*base, "--log-level", "warning", capsys=capsys)
    assert code == 0 and "no pods to run" in output
    said = [r.getMessage() for r in caplog.records if "--manifest-allow-empty" in r.getMessage()]
    assert len(said) == 1 and f"manifest path {manifests}" in said[0]
    caplog.clear()
    code, output = run(*base, "--manifest-allow-empty", "--log-level", "warning", capsys=capsys)
    assert code == 0 and not [r for r in caplog.records if "manifest path" in r.getMessage()]


def test_an_empty_manifest_directory_on_a_new_node_is_its_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    manifests = tmp_path / "pods"
    manifests.mkdir()
    root = tmp_path / "root"
    base = ("run", str(manifests), "--once", "--root-dir", str(root), "--log-level", "warning")
    code, _ = run(*base, capsys=capsys)
    assert code == 0 and not [r for r in caplog.records if "manifest path" in r.getMessage()]
    (root / "pods" / "some-uid").mkdir(parents=True)  # pods ran since (over the API, say)
    code, _ = run(*base, capsys=capsys)  # the directory was empty the last time: still fine
    assert code == 0 and not [r for r in caplog.records if "manifest path" in r.getMessage()]


def test_a_bad_manifest_run_again_reports_its_errors_again_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text(POD.replace("image:", "imagee:"))
    args = (
        "run",
        str(typo),
        "--once",
        "--root-dir",
        str(tmp_path / "root"),
        "--log-level",
        "error",
    )
    for _ in range(2):  # the second run finds the bad file's hash in the last-good memory
        code, output = run(*args, capsys=capsys)
        assert code == 1, output
        assert "imagee: unknown field" in output and "no pods to run" not in output
