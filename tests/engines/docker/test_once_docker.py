"""``kubecore run --once --runtime docker`` ends early, naming the error, when no pod can get a
sandbox: the sandbox image is missing and cannot be pulled (a retry will not fix it)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore._contract.labels import POD_NAMESPACE_LABEL
from tests.engines.docker.conftest import TestEngine, remove_labelled

pytestmark = pytest.mark.docker

POD = """apiVersion: v1
kind: Pod
metadata: {{name: lonely, namespace: {namespace}}}
spec:
  containers:
  - {{name: main, image: {image}, command: [sleep, "3600"]}}
"""


@pytest.fixture
def namespace(raw: Any, test_uid: str) -> Iterator[str]:
    ns = f"once-{test_uid}"
    yield ns
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={ns}")


def test_an_unpullable_sandbox_image_ends_the_run_early_with_the_error(
    engine: TestEngine, namespace: str, tmp_path: Path
) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    (pods / "pod.yaml").write_text(POD.format(namespace=namespace, image=engine.image))
    missing = "127.0.0.1:1/kubecore-test/no-such-pause:1"  # nothing listens on port 1
    command = [
        sys.executable, "-m", "kubecore", "run", str(pods), "--runtime", "docker",
        "--runtime-option", f"base_url={engine.base_url}",
        "--runtime-option", f"sandbox_image={missing}",
        "--root-dir", str(tmp_path / "root"), "--once", "--deadline", "120",
        "--log-level", "error", "--node-name", f"node-{namespace}",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    took = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("pod "))
    assert line.startswith(
        f"pod {namespace}/lonely failed: FailedCreatePodSandBox: Failed to create pod sandbox: "
    ), done.stdout
    assert missing.split("/")[0] in line, line
    assert took < 60, f"took {took:.1f}s: the 120 s deadline was waited out"
