"""The commands that need little import little: ``kubecore version`` and ``kubecore validate``
start fast (python -m benchmarks --only startup measures it; this guards what they import)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = (
    "kubecore._agent.kubelet",
    "kubecore._http.server",
    "kubecore_etcd",
    "prometheus_client",
    "docker",
)


def imported_by(argv: list[str]) -> set[str]:
    code = (
        "import io, sys\n"
        "from kubecore._cli import main\n"
        f"code = main({argv!r}, io.StringIO())\n"
        "assert code == 0, code\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return set(done.stdout.split())


def test_version_imports_no_heavy_module() -> None:
    assert imported_by(["version"]) == set()


def test_validate_imports_no_heavy_module(tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n"
        "spec:\n  containers:\n  - name: main\n    image: busybox:1.35\n"
    )
    assert imported_by(["validate", str(manifest)]) == set()


def test_run_does_not_build_the_plugins_commands() -> None:
    code = (
        "import sys\n"
        "from kubecore._cli.parser import build_parser\n"
        "build_parser(only='run')\n"
        "assert 'kubecore_etcd._plugin' not in sys.modules\n"
        "assert 'kubecore_etcd._cli' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], timeout=60, check=True)
