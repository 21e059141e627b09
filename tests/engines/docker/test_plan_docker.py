"""``kubecore plan`` on Docker: what ``run --once`` would do, exit 2; nothing after it, exit 0;
a changed command is a restart that says why; and the sync of an agent after its plan does
exactly what the plan said."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kubecore
from kubecore._config.file import FileSource
from kubecore._contract.labels import POD_NAMESPACE_LABEL
from tests.engines.docker.conftest import TestEngine, remove_labelled

pytestmark = pytest.mark.docker

POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {{name: main, image: {image}, imagePullPolicy: IfNotPresent, command: [sleep, "{sleep}"]}}
"""


@pytest.fixture
def namespace(raw: Any, test_uid: str) -> Iterator[str]:
    ns = f"plan-{test_uid}"
    yield ns
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={ns}")


def kubecore_command(engine: TestEngine, tmp_path: Path, namespace: str, *words: str) -> list[str]:
    return [
        sys.executable, "-m", "kubecore", *words, "--runtime", "docker",
        "--runtime-option", f"base_url={engine.base_url}",
        "--runtime-option", f"sandbox_image={engine.pause_image}",
        "--root-dir", str(tmp_path / "root"), "--node-name", f"node-{namespace}",
    ]  # fmt: skip


def plan(engine: TestEngine, tmp_path: Path, namespace: str) -> tuple[int, dict[str, Any]]:
    command = kubecore_command(engine, tmp_path, namespace, "plan", str(tmp_path / "pods"))
    done = subprocess.run(
        [*command, "-o", "json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode in (0, 2), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def steps(document: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    return {
        p["name"]: [(s["action"], s.get("reason", "")) for s in p["steps"]]
        for p in document["pods"]
    }


def write_pods(tmp_path: Path, engine: TestEngine, namespace: str, sleep: str = "3600") -> None:
    pods = tmp_path / "pods"
    pods.mkdir(exist_ok=True)
    for name in ("one", "two"):
        text = POD.format(name=name, namespace=namespace, image=engine.image, sleep=sleep)
        (pods / f"{name}.yaml").write_text(text)


def test_plan_then_run_on_docker(engine: TestEngine, namespace: str, tmp_path: Path) -> None:
    write_pods(tmp_path, engine, namespace)
    code, document = plan(engine, tmp_path, namespace)
    assert code == 2
    assert [a for a, _ in steps(document)["one"]] == ["create-sandbox", "start"]
    run = kubecore_command(engine, tmp_path, namespace, "run", str(tmp_path / "pods"))
    done = subprocess.run(
        [*run, "--once", "--deadline", "120", "--log-level", "error"],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    code, document = plan(engine, tmp_path, namespace)
    assert code == 0, document
    assert steps(document) == {"one": [("nothing", "")], "two": [("nothing", "")]}

    write_pods(tmp_path, engine, namespace, sleep="3601")
    code, document = plan(engine, tmp_path, namespace)
    assert code == 2
    (restart,) = steps(document)["one"]
    assert restart[0] == "restart"
    assert restart[1].startswith("the container spec changed: spec hash")

    # an agent's own plan says the same, and its sync does exactly that
    bundle = kubecore.load_runtime(
        "docker", base_url=engine.base_url, sandbox_image=engine.pause_image
    )
    config = kubecore.KubeletConfig(node_name=f"node-{namespace}", root_dir=str(tmp_path / "root"))
    with kubecore.Kubelet.from_bundle(bundle, config=config) as kubelet:
        update = FileSource(tmp_path / "pods", settle=0, watch=False).refresh()
        assert update is not None
        kubelet.update(update)
        own = kubelet.plan()
        assert steps(own.as_dict()) == steps(document)
        report = kubelet.sync()
        assert report.actions == {f"{p.namespace}/{p.name}": p.summary for p in own.pods}
    code, document = plan(engine, tmp_path, namespace)
    assert code == 0, document
