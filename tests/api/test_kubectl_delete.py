"""The real ``kubectl delete`` against a running agent (fake runtime, real time): the pod shows
``Terminating`` with its deletion fields while its containers stop within the grace period, and
leaves the API only once they are stopped; ``--grace-period``, ``--now`` and ``--force`` behave as
on a cluster (with the kubelet's floor of 2 s on a stop), and a deletion survives a restart of
the agent.

The fake runtime's shell answers ``TERM`` as PID 1 does in a real engine: a script that does not
``trap`` it ignores it, so its container runs until the KILL at the end of the grace period.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._api.server import ApiServerConfig, attach_api
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._plugins.registry import RuntimeBundle, load_runtime
from tests.api.kubectl_support import (
    AUTH,
    TOKEN,
    Certs,
    Kubectl,
    Node,
    kubectl_for,
    make_certs,
    needs_kubectl,
    running_node,
    wait_for,
)

pytestmark = needs_kubectl

GRACE = 8


def stubborn_pod(name: str, grace: int = GRACE) -> str:
    """A pod whose container ignores TERM (it is stopped by the KILL after ``grace``)."""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  terminationGracePeriodSeconds: {grace}
  containers:
  - {{name: main, image: busybox:1.35, command: [sh, -c, "echo up; sleep 3600"]}}
"""


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with running_node(tmp_path) as found:
        yield found


def create(node: Node, kubectl: Kubectl, name: str, grace: int = GRACE) -> Any:
    manifest = node.tmp / f"{name}.yaml"
    manifest.write_text(stubborn_pod(name, grace))
    kubectl.out("create", "-f", str(manifest))
    return wait_for(lambda: node.running(name), what=f"{name} to run")


def status_of(kubectl: Kubectl, name: str) -> str:
    """The STATUS column of ``kubectl get pod`` ("" once the pod is gone)."""
    done = kubectl.run("get", "pod", name, "--no-headers", check=False)
    return done.stdout.split()[2] if done.returncode == 0 else ""


def deletion_fields(kubectl: Kubectl, name: str) -> tuple[str, str]:
    out = kubectl.out(
        "get",
        "pod",
        name,
        "-o",
        "jsonpath={.metadata.deletionTimestamp} {.metadata.deletionGracePeriodSeconds}",
    )
    stamp, _, grace = out.partition(" ")
    return stamp, grace


def stops_of(node: Node, container_id: str) -> list[float]:
    return [
        float(args[1])
        for op, args in node.runtime.calls
        if op == "stop_container" and args[0] == container_id
    ]


def watch_events(url: str, name: str, events: list[dict[str, Any]]) -> threading.Thread:
    """Follow a watch of pod ``name`` in the background until it sees DELETED."""

    def follow() -> None:
        params = {"watch": "true", "fieldSelector": f"metadata.name={name}", "timeoutSeconds": "60"}
        with requests.get(
            f"{url}/api/v1/namespaces/default/pods",
            params=params,
            stream=True,
            timeout=70,
            headers=AUTH,
        ) as answer:
            for line in answer.iter_lines():
                if line:
                    events.append(json.loads(line))
                    if events[-1]["type"] == "DELETED":
                        return

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    return thread


def test_a_deleted_pod_terminates_within_its_grace_then_goes(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    container = create(node, kubectl, "stubborn")
    events: list[dict[str, Any]] = []
    watcher = watch_events(node.http.url, "stubborn", events)
    wait_for(lambda: events, what="the watch to start")

    started = time.monotonic()
    deleting = kubectl.popen("delete", "pod", "stubborn")  # waits until the pod is gone
    wait_for(lambda: status_of(kubectl, "stubborn") == "Terminating", what="Terminating")
    stamp, grace = deletion_fields(kubectl, "stubborn")
    assert grace == str(GRACE) and stamp.endswith("Z")
    # The container ignores TERM: it still runs, and kubectl still waits.
    assert node.running("stubborn") is not None and deleting.poll() is None
    listed = kubectl.out("get", "pods")
    assert any(
        line.split()[:3] == ["stubborn", "1/1", "Terminating"] for line in listed.splitlines()
    )

    # Near the end of the grace period the container still runs: only the KILL stops it.
    wait_for(
        lambda: time.monotonic() - started >= GRACE - 2, what="the grace period to near its end"
    )
    assert node.running("stubborn") is not None and deleting.poll() is None
    assert status_of(kubectl, "stubborn") == "Terminating"

    out, err = deleting.communicate(timeout=60)
    took = time.monotonic() - started
    assert deleting.returncode == 0, err
    assert out.startswith('pod "stubborn" deleted')
    assert GRACE - 1 <= took < GRACE + 10, took
    assert node.running("stubborn") is None  # KILLed at the end of the grace, not before
    assert [round(s) for s in stops_of(node, container.id)][:1] == [GRACE]
    assert status_of(kubectl, "stubborn") == ""

    watcher.join(timeout=10)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "ADDED" and kinds[-1] == "DELETED" and "MODIFIED" in kinds, kinds
    marked = [e for e in events if e["object"]["metadata"].get("deletionTimestamp")]
    assert marked and marked[0]["type"] == "MODIFIED"
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and len(set(versions)) == len(versions), versions


def test_grace_period_now_and_force(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    first = create(node, kubectl, "first", grace=30)
    second = create(node, kubectl, "second", grace=30)
    third = create(node, kubectl, "third", grace=30)

    started = time.monotonic()
    kubectl.out("delete", "pod", "first", "--grace-period=2")
    assert 1 <= time.monotonic() - started < 10
    assert [round(s) for s in stops_of(node, first.id)][:1] == [2]

    # --now asks for 1 s; the kubelet never stops a container with less than 2 s.
    kubectl.out("delete", "pod", "second", "--now")
    assert [round(s) for s in stops_of(node, second.id)][:1] == [2]

    started = time.monotonic()
    forced = kubectl.run("delete", "pod", "third", "--grace-period=0", "--force")
    assert forced.returncode == 0, forced.stderr
    assert 'pod "third" force deleted' in forced.stdout
    assert status_of(kubectl, "third") == ""  # out of the API at once
    wait_for(lambda: node.running("third") is None, what="third to be killed")
    assert time.monotonic() - started < 10  # the kill, with the 2 s floor
    assert [round(s) for s in stops_of(node, third.id)][:1] == [2]


def test_a_second_delete_shortens_the_grace_never_lengthens_it(node: Node, certs: Certs) -> None:
    kubectl = node.writer(certs)
    create(node, kubectl, "slow", grace=60)
    kubectl.out("delete", "pod", "slow", "--wait=false")
    assert deletion_fields(kubectl, "slow")[1] == "60"
    kubectl.out("delete", "pod", "slow", "--grace-period=100", "--wait=false")
    assert deletion_fields(kubectl, "slow")[1] == "60"  # never lengthened
    # A write to a terminating pod is refused; a create of its name too.
    label = kubectl.run("label", "pod", "slow", "team=a", check=False)
    assert label.returncode == 1 and "being deleted" in label.stderr
    started = time.monotonic()
    kubectl.out("delete", "pod", "slow", "--grace-period=2")  # waits until it is gone
    assert time.monotonic() - started < 10
    assert status_of(kubectl, "slow") == ""


@contextlib.contextmanager
def agent(
    bundle: RuntimeBundle, tmp: Path, certs: Certs, run: int
) -> Iterator[tuple[Kubelet, Kubectl]]:
    kubelet = Kubelet.from_bundle(
        bundle, config=KubeletConfig(node_name="node-1", root_dir=str(tmp / "root"))
    )
    token_file = tmp / "token"
    token_file.write_text(TOKEN + "\n")
    api = attach_api(kubelet, ApiServerConfig(token_file=str(token_file)), address="127.0.0.1")
    kubelet.start()
    config = ServerConfig(
        port=0, tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key)
    )
    server = KubeletServer(kubelet, config, api=api).start()
    try:
        yield kubelet, kubectl_for(tmp / f"kubectl-{run}", server.url, token=TOKEN, ca=certs.ca)
    finally:
        server.stop()
        kubelet.stop()


def test_a_restart_during_termination_finishes_it(tmp_path: Path, certs: Certs) -> None:
    bundle = load_runtime("fake")
    manifest = tmp_path / "stubborn.yaml"
    manifest.write_text(stubborn_pod("stubborn"))

    def containers() -> list[Any]:
        return [
            c
            for c in bundle.runtime.list_containers()
            if c.labels.get("io.kubernetes.pod.name") == "stubborn"
        ]

    with agent(bundle, tmp_path, certs, 1) as (kubelet, kubectl):
        kubectl.out("create", "-f", str(manifest))
        kubectl.out("wait", "--for=condition=Ready", "pod/stubborn", "--timeout=30s")
        kubelet.stop()  # the agent dies right after the delete: nothing stops the container
        kubectl.out("delete", "pod", "stubborn", "--wait=false")
        assert status_of(kubectl, "stubborn") == "Terminating"
    stored = json.loads((tmp_path / "root" / "api" / "pods" / "default_stubborn.json").read_text())
    assert stored["metadata"]["deletionGracePeriodSeconds"] == GRACE
    (container,) = containers()
    assert container.state.value == "running"

    with agent(bundle, tmp_path, certs, 2) as (_kubelet, kubectl):
        assert status_of(kubectl, "stubborn") == "Terminating"
        kubectl.out("wait", "--for=delete", "pod/stubborn", "--timeout=30s")
        stops = [
            float(args[1])
            for op, args in bundle.runtime.calls
            if op == "stop_container" and args[0] == container.id
        ]
        assert stops and 0 < stops[0] <= GRACE, stops
        assert [c.id for c in containers()] in ([], [container.id])  # never started again
        assert not (tmp_path / "root" / "api" / "pods" / "default_stubborn.json").exists()
    with agent(bundle, tmp_path, certs, 3) as (_kubelet, kubectl):
        assert status_of(kubectl, "stubborn") == ""


def test_once_its_containers_stopped_a_terminating_pod_shows_them_not_ready(
    node: Node, certs: Certs
) -> None:
    kubectl = node.writer(certs)
    create(node, kubectl, "stubborn", grace=2)
    wait_for(lambda: "1/1" in kubectl.out("get", "pod", "stubborn", "--no-headers"))
    node.runtime.add_latency("stop_sandbox", 4.0)  # the sandbox outlives the containers
    kubectl.out("delete", "pod", "stubborn", "--wait=false")

    def status() -> dict[str, Any]:
        answer = requests.get(
            f"{node.http.url}/api/v1/namespaces/default/pods/stubborn", headers=AUTH, timeout=10
        )
        return dict(answer.json()) if answer.ok else {}

    stopped = wait_for(
        lambda: (s := status()) and not s["status"]["containerStatuses"][0]["ready"] and s,
        what="the containers not ready while terminating",
    )
    assert stopped["metadata"]["deletionTimestamp"]  # still terminating
    assert node.running("stubborn") is None
    ready = {c["type"]: (c["status"], c.get("reason")) for c in stopped["status"]["conditions"]}
    assert ready["Ready"] == ready["ContainersReady"] == ("False", "ContainersNotReady")
    listed = kubectl.out("get", "pod", "stubborn", "--no-headers").split()
    assert listed[:3] == ["stubborn", "0/1", "Terminating"] or listed == [], listed
    wait_for(lambda: status_of(kubectl, "stubborn") == "", what="the pod to go")
