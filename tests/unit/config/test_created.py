"""The creation time a pod received without one gets, kept across restarts by uid."""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs

from kubecore._config.created import CreationTimes
from kubecore._config.podconfig import PodConfig
from kubecore._config.updates import Operation, PodUpdate
from kubecore._manifest import load_pods_from_string
from kubecore._model.v1 import Pod

NODE = "node-a"

POD = """
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  containers: [{name: main, image: busybox:1.35}]
"""


def pod(name: str) -> Pod:
    (found,) = load_pods_from_string(POD.replace("NAME", name))
    return found


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def created(config: PodConfig) -> dict[str, str]:
    return {p.metadata.name: p.metadata.creation_timestamp for p in config.pods()}


def test_a_pod_keeps_the_time_it_was_first_received(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "times.json"
    config = PodConfig(["file"], node_name=NODE, created=CreationTimes(path, clock))
    config.apply(PodUpdate(Operation.SET, (pod("a"),), "file"))
    first = created(config)
    assert first == {"a": "2023-11-14T22:13:20Z"}
    clock.now += 100
    config.apply(PodUpdate(Operation.SET, (pod("a"), pod("b")), "file"))
    assert created(config) == {"a": "2023-11-14T22:13:20Z", "b": "2023-11-14T22:15:00Z"}
    assert os.stat(path).st_mode & 0o777 == 0o600

    # A restart: a new PodConfig reads the times back.
    clock.now += 100
    again = PodConfig(["file"], node_name=NODE, created=CreationTimes(path, clock))
    again.apply(PodUpdate(Operation.SET, (pod("b"), pod("a")), "file"))
    assert created(again) == {"a": "2023-11-14T22:13:20Z", "b": "2023-11-14T22:15:00Z"}

    # Removed by its source, then added again: a new pod, a new time.
    again.apply(PodUpdate(Operation.REMOVE, (pod("a"),), "file"))
    again.apply(PodUpdate(Operation.ADD, (pod("a"),), "file"))
    assert created(again)["a"] == "2023-11-14T22:16:40Z"


def test_a_time_the_source_gives_is_kept_and_a_bad_file_is_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "times.json"
    path.write_text("{not json")
    config = PodConfig(["api"], node_name=NODE, created=CreationTimes(path, Clock()))
    given = pod("a")
    stamped = attrs.evolve(
        given, metadata=attrs.evolve(given.metadata, creation_timestamp="2020-01-01T00:00:00Z")
    )
    config.apply(PodUpdate(Operation.SET, (stamped, pod("b")), "api"))
    assert created(config) == {"a": "2020-01-01T00:00:00Z", "b": "2023-11-14T22:13:20Z"}
    # The unreadable file was replaced by a good one.
    uid = next(p.uid for p in config.pods() if p.metadata.name == "b")
    assert json.loads(path.read_text()) == {uid: "2023-11-14T22:13:20Z"}
