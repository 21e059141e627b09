"""One agent a node name on one engine, on every engine: a second ``kubecore run`` with the name
exits naming the first, and a clean stop gives the name up."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.engines.docker.helpers import free_port, wait_for
from tests.engines.engine_support import EngineUnderTest


def test_a_second_kubecore_run_with_the_node_name_exits_naming_the_first(
    engine: EngineUnderTest, test_uid: str, tmp_path: Path
) -> None:
    node_name = f"claimed-{test_uid}"
    (tmp_path / "pods").mkdir()

    def command(root: str, port: int = 0) -> list[str]:
        return [
            sys.executable, "-m", "kubecore", "run", str(tmp_path / "pods"),
            *engine.run_arguments(tmp_path / root),
            "--root-dir", str(tmp_path / root), "--port", str(port or free_port()),
            "--node-name", node_name, "--log-level", "warning",
        ]  # fmt: skip

    def serving(port: int) -> bool:
        """The agent answers on its port: it has claimed its node name (a claim comes first)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    def second_run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command("second"), capture_output=True, text=True, timeout=60, check=False
        )

    port = free_port()
    first = subprocess.Popen(
        command("first", port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: serving(port), timeout=60, what="the first agent serving")
        refused = second_run()
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"node name '{node_name}' is in use" in refused.stderr
        assert f"process {first.pid} on host" in refused.stderr
        assert "--node-name" in refused.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(30)
    # A clean stop gives the name up: an agent started now takes it.
    port = free_port()
    taker = subprocess.Popen(
        command("third", port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: serving(port), timeout=60, what="the third agent serving")
        attempt = second_run()
        assert attempt.returncode == 1 and f"process {taker.pid} on host" in attempt.stderr, (
            attempt.stderr
        )
    finally:
        taker.send_signal(signal.SIGTERM)
        taker.wait(30)
