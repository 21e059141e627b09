"""The commands that need little import little: ``import kubecore``, ``kubecore version`` and
``kubecore validate`` start fast, and the run path leaves out what only other commands use
(python -m benchmarks --only startup measures it; this guards what they import)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = (
    "kubecore._agent.kubelet",
    "kubecore._http.server",
    "kubecore._cli.kubeconfig",
    "kubecore_etcd",
    "prometheus_client",
    "docker",
)
"""What neither ``version`` nor ``validate`` may import."""

MANIFEST = ("yaml", "kubecore._manifest", "kubecore._model.v1", "attrs")
"""What reading a manifest needs and ``version`` does not."""

ONLY_OTHER_COMMANDS = (
    "kubecore._http.server",
    "kubecore._api",
    "kubecore._streaming",
    "kubecore_etcd._cli",
    "kubecore._cli.kubeconfig",
    "kubecore._cli.certs",
    "kubecore_etcd",
    "cryptography",
)
"""What the run path (the agent and ``kubecore run``'s command) imports only when a flag asks:
the API server, the streaming sessions, the etcd and kubeconfig commands."""


def imported_by_code(code: str, names: tuple[str, ...]) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {names!r} if m in sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return set(done.stdout.split())


def imported_by(argv: list[str], names: tuple[str, ...] = HEAVY) -> set[str]:
    code = (
        "import io\n"
        "from kubecore._cli import main\n"
        f"code = main({argv!r}, io.StringIO())\n"
        "assert code == 0, code\n"
    )
    return imported_by_code(code, names)


def test_import_kubecore_loads_no_namespace() -> None:
    names = (*HEAVY, *MANIFEST, *ONLY_OTHER_COMMANDS, "kubecore._agent", "kubecore._kuberuntime")
    assert imported_by_code("import kubecore", names) == set()


def test_version_imports_no_heavy_module_and_no_manifest_reader() -> None:
    assert imported_by(["version"], (*HEAVY, *MANIFEST, "kubecore._kuberuntime")) == set()


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


def test_the_run_path_leaves_out_what_only_other_commands_use() -> None:
    code = "import kubecore._agent.kubelet, kubecore._cli.commands"
    assert imported_by_code(code, ONLY_OTHER_COMMANDS) == set()


def test_run_does_not_build_the_kubeconfig_command() -> None:
    code = "from kubecore._cli.parser import build_parser\nbuild_parser(only='run')"
    assert imported_by_code(code, ("kubecore._cli.kubeconfig",)) == set()
