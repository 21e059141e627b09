"""``kubecore run examples/pods --runtime docker --once`` on the real engine, as a user runs it.

The example manifests are copied into a namespace of this test's own (so cleanup can find every
container by label), with their ``busybox:1.35`` read as the test engine's image; everything else
about them is unchanged.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubecore._contract.labels import POD_NAMESPACE_LABEL
from tests.engines.docker.conftest import TestEngine, remove_labelled
from tests.paths import REPO

pytestmark = pytest.mark.docker

EXAMPLES = REPO / "examples" / "pods"


@pytest.fixture
def namespace(raw: Any, test_uid: str) -> Iterator[str]:
    ns = f"examples-{test_uid}"
    yield ns
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={ns}")


def test_the_example_pods_come_up_on_docker_with_dockershim_names(
    engine: TestEngine, raw: Any, namespace: str, tmp_path: Path
) -> None:
    manifests = tmp_path / "pods"
    manifests.mkdir()
    for source in sorted(EXAMPLES.glob("*.yaml")):
        documents = [d for d in yaml.safe_load_all(source.read_text()) if d]
        for document in documents:
            document["metadata"]["namespace"] = namespace
            spec = document["spec"]
            for entry in spec.get("initContainers", []) + spec.get("containers", []):
                if entry.get("image") == "busybox:1.35":
                    entry["image"] = engine.image
        (manifests / source.name).write_text(yaml.safe_dump_all(documents))

    command = [
        sys.executable, "-m", "kubecore", "run", str(manifests), "--runtime", "docker",
        "--runtime-option", f"base_url={engine.base_url}",
        "--runtime-option", f"sandbox_image={engine.pause_image}",
        "--root-dir", str(tmp_path / "root"), "--once", "--deadline", "60",
        "--log-level", "warning",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    table = {
        line.split()[0]: line.split()
        for line in done.stdout.splitlines()
        if line and not line.startswith(("NAME", "pod "))
    }
    # The crash-looping example is meant to fail, and is the only reason --once exits 1.
    assert done.returncode == 1, done.stdout + done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("pod ")] == [
        line for line in done.stdout.splitlines() if line.startswith(f"pod {namespace}/crashloop")
    ]
    assert table["web"][1:3] == ["1/1", "Running"]
    assert table["shared-volume"][1:3] == ["2/2", "Running"]
    assert table["init-demo"][2] == "Running"
    assert table["job"][2] == "Completed"
    assert table["crashloop"][2] in ("CrashLoopBackOff", "Error")

    names = [
        entry["Names"][0].lstrip("/")
        for entry in raw.containers(filters={"label": f"{POD_NAMESPACE_LABEL}={namespace}"})
    ]
    assert any(name.startswith(f"k8s_POD_web_{namespace}_") for name in names), names
    assert any(name.startswith(f"k8s_httpd_web_{namespace}_") for name in names), names
    with urllib.request.urlopen("http://127.0.0.1:18080/", timeout=10) as response:
        assert response.status == 200
