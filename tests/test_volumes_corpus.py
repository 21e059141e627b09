"""The volumes corpus (tests/corpus/volumes-*.yaml) on the in-memory runtime, checked against each
file's ``# expect:`` lines: ConfigMap and Secret documents beside the pods feed their volumes."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubecore._manifest import assign_uid, pod_from_dict
from kubecore._model import ContainerState, Pod
from kubecore._volume_sources import DictObjects
from tests.test_volumes import node_with

CORPUS = sorted((Path(__file__).parent / "corpus").glob("volumes-*.yaml"))


def expectations(text: str) -> dict[str, tuple[str, dict[str, str]]]:
    found: dict[str, tuple[str, dict[str, str]]] = {}
    for line in text.splitlines():
        if not line.startswith("# expect:"):
            continue
        name, phase, *states = line.removeprefix("# expect:").split()
        found[name] = (phase, dict(s.split("=", 1) for s in states))
    return found


def split_documents(text: str) -> tuple[list[Pod], DictObjects]:
    pods: list[Pod] = []
    objects = DictObjects()
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        meta: dict[str, Any] = doc.get("metadata", {})
        key = (meta.get("namespace", "default"), meta["name"])
        if doc["kind"] == "ConfigMap":
            data = {k: str(v).encode() for k, v in (doc.get("data") or {}).items()}
            objects.config_maps[key] = data
        elif doc["kind"] == "Secret":
            data = {k: base64.b64decode(v) for k, v in (doc.get("data") or {}).items()}
            data.update({k: str(v).encode() for k, v in (doc.get("stringData") or {}).items()})
            objects.secrets[key] = data
        else:
            pods.append(assign_uid(pod_from_dict(doc), "corpus"))
    return pods, objects


def shown(state: ContainerState) -> str:
    if state.running is not None:
        return "running"
    if state.waiting is not None:
        return f"waiting:{state.waiting.reason}"
    if state.terminated is not None:
        return f"terminated:{state.terminated.reason}"
    return "unknown"


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_file_runs_to_its_expectations(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    expected = expectations(text)
    pods, objects = split_documents(text)
    assert sorted(p.metadata.name for p in pods) == sorted(expected)
    node = node_with(tmp_path, objects)
    node.kubelet.set_pods(pods)
    for _ in range(8):
        node.kubelet.sync()
        node.clock.advance(1)
    for pod in pods:
        phase, states = expected[pod.metadata.name]
        status = node.status(pod.metadata.name)
        got = {cs.name: shown(cs.state) for cs in status.container_statuses}
        assert (status.phase, {k: got.get(k) for k in states}) == (phase, states), status


def test_the_corpus_covers_the_volume_sources() -> None:
    text = "\n".join(p.read_text() for p in CORPUS)
    for field in (
        "emptyDir",
        "medium: Memory",
        "sizeLimit",
        "hostPath",
        "type: Directory",
        "CharDevice",
        "configMap",
        "secret",
        "defaultMode",
        "optional",
        "downwardAPI",
        "resourceFieldRef",
        "projected",
        "subPath",
        "persistentVolumeClaim",
    ):
        assert field in text, field
