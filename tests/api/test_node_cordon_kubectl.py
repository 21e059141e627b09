"""The node as kubectl sees it beyond ``get``: ``kubectl cordon`` / ``uncordon`` (honoured at
admission, kept across a restart), the pressure conditions and images in ``describe node``, and
the node Lease (``kubectl get lease -n kube-node-lease``), with Debian's kubectl and the
current one."""

from __future__ import annotations

import datetime
import errno
import json
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import requests

from kubecore._housekeeping.eviction import HostFigures
from tests.api.kubectl_support import (
    AUTH,
    TOKEN,
    Certs,
    Kubectl,
    Node,
    kubectl_binaries,
    make_certs,
    needs_kubectl,
    running_node,
    wait_for,
)
from tests.api.node_support import run

pytestmark = needs_kubectl
BINARIES = kubectl_binaries()

TOLERATING_POD = """
apiVersion: v1
kind: Pod
metadata: {name: tolerant}
spec:
  tolerations: [{key: node.kubernetes.io/unschedulable, operator: Exists, effect: NoSchedule}]
  containers: [{name: main, image: busybox:1.35, command: [sleep, "3600"]}]
"""


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with running_node(tmp_path_factory.mktemp("node")) as found:
        yield found


@pytest.fixture(scope="module")
def kubectl(node: Node, certs: Certs) -> Kubectl:
    return node.writer(certs)


def phase(node: Node, name: str) -> tuple[str, str]:
    pod = node.kubelet.get_pod("default", name)
    if pod is None or pod.status is None:
        return "", ""
    return pod.status.phase, pod.status.reason


def node_json(binary: str, kubectl: Kubectl) -> dict[str, object]:
    found: dict[str, object] = json.loads(
        run(binary, kubectl, "get", "node", "node-1", "-o", "json").stdout
    )
    return found


@pytest.mark.parametrize("binary", BINARIES)
def test_cordon_keeps_new_api_pods_out_until_uncordon(
    node: Node, kubectl: Kubectl, binary: str, tmp_path: Path
) -> None:
    tag = BINARIES.index(binary)
    before, during, after = f"before-{tag}", f"during-{tag}", f"after-{tag}"
    run(binary, kubectl, "run", before, "--image=busybox:1.35", "--", "sleep", "3600")
    wait_for(lambda: phase(node, before)[0] == "Running", what=f"{before} to run")

    assert "cordoned" in run(binary, kubectl, "cordon", "node-1").stdout
    try:
        row = run(binary, kubectl, "get", "nodes", "--no-headers").stdout.split()
        assert row[:2] == ["node-1", "Ready,SchedulingDisabled"]
        spec = node_json(binary, kubectl)["spec"]
        assert isinstance(spec, dict) and spec["unschedulable"] is True
        (taint,) = spec["taints"]
        assert (taint["key"], taint["effect"]) == ("node.kubernetes.io/unschedulable", "NoSchedule")
        assert taint["timeAdded"]
        described = run(binary, kubectl, "describe", "node", "node-1").stdout
        assert "node.kubernetes.io/unschedulable:NoSchedule" in described
        assert "Unschedulable:      true" in described
        assert "Node node-1 status is now: NodeNotSchedulable" in described

        run(binary, kubectl, "run", during, "--image=busybox:1.35", "--", "sleep", "3600")
        wait_for(lambda: phase(node, during)[0] == "Failed", what=f"{during} to be refused")
        assert phase(node, during) == ("Failed", "NodeUnschedulable")
        shown = run(binary, kubectl, "describe", "pod", during).stdout
        assert "node node-1 is cordoned" in shown and "kubectl uncordon node-1" in shown
        assert phase(node, before)[0] == "Running" and phase(node, "talker")[0] == "Running"
        assert "already cordoned" in run(binary, kubectl, "cordon", "node-1").stdout
    finally:
        assert "uncordoned" in run(binary, kubectl, "uncordon", "node-1").stdout
    row = run(binary, kubectl, "get", "nodes", "--no-headers").stdout.split()
    assert row[:2] == ["node-1", "Ready"]
    assert node_json(binary, kubectl)["spec"] == {}
    run(binary, kubectl, "run", after, "--image=busybox:1.35", "--", "sleep", "3600")
    wait_for(lambda: phase(node, after)[0] == "Running", what=f"{after} to run")
    assert phase(node, during)[0] == "Failed"  # a rejection is final
    for name in (before, during, after):
        run(binary, kubectl, "delete", "pod", name, "--wait=false")


def test_a_pod_tolerating_the_taint_comes_in(node: Node, kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "tolerant.yaml"
    manifest.write_text(TOLERATING_POD)
    kubectl.out("cordon", "node-1")
    try:
        kubectl.out("apply", "-f", str(manifest))
        wait_for(lambda: phase(node, "tolerant")[0] == "Running", what="the tolerant pod to run")
    finally:
        kubectl.out("uncordon", "node-1")
        kubectl.run("delete", "pod", "tolerant", "--wait=false", check=False)


def test_only_unschedulable_can_be_written(node: Node, kubectl: Kubectl, certs: Certs) -> None:
    labelled = kubectl.run("label", "node", "node-1", "team=a", check=False)
    assert labelled.returncode != 0
    assert 'The Node "node-1" is invalid: metadata.labels: Forbidden' in labelled.stderr
    assert "only spec.unschedulable can be changed" in labelled.stderr
    tainted = kubectl.run("taint", "node", "node-1", "k=v:NoSchedule", check=False)
    assert tainted.returncode != 0 and "spec.taints: Forbidden" in tainted.stderr

    server = node.https(certs)
    url = server.url + "/api/v1/nodes/node-1"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    merge = {"Content-Type": "application/merge-patch+json"}
    anonymous = requests.patch(
        url,
        data=json.dumps({"spec": {"unschedulable": True}}),
        headers=merge,
        verify=str(certs.ca),
        timeout=10,
    )
    assert anonymous.status_code == 401
    status = requests.patch(
        url,
        data=json.dumps({"status": {"capacity": {"cpu": "64"}}}),
        headers={**auth, **merge},
        verify=str(certs.ca),
        timeout=10,
    )
    assert status.status_code == 422 and "status" in status.json()["message"]
    dry = requests.patch(
        url + "?dryRun=All",
        data=json.dumps({"spec": {"unschedulable": True}}),
        headers={**auth, **merge},
        verify=str(certs.ca),
        timeout=10,
    )
    assert dry.status_code == 200
    assert (
        "unschedulable"
        not in requests.get(
            node.http.url + "/api/v1/nodes/node-1", timeout=10, headers=AUTH
        ).json()["spec"]
    )

    current = requests.get(node.http.url + "/api/v1/nodes/node-1", timeout=10, headers=AUTH).json()
    current["spec"]["unschedulable"] = True  # a PUT of what was read, status and all
    put = requests.put(url, json=current, headers=auth, verify=str(certs.ca), timeout=10)
    assert put.status_code == 200, put.text
    assert put.json()["spec"]["unschedulable"] is True
    current["spec"] = {}
    assert requests.put(url, json=current, headers=auth, verify=str(certs.ca), timeout=10).ok
    assert kubectl.out("get", "nodes", "--no-headers").split()[1] == "Ready"


def test_cordon_survives_a_restart_and_keeps_the_pods_it_kept(tmp_path: Path, certs: Certs) -> None:
    with running_node(tmp_path) as first:
        kubectl = first.writer(certs)
        created = json.loads(kubectl.out("get", "node", "node-1", "-o", "json"))["metadata"]
        kubectl.out("run", "kept", "--image=busybox:1.35", "--", "sleep", "3600")
        wait_for(lambda: phase(first, "kept")[0] == "Running", what="kept to run")
        kubectl.out("cordon", "node-1")
    with running_node(tmp_path) as second:
        kubectl = second.writer(certs)
        shown = json.loads(kubectl.out("get", "node", "node-1", "-o", "json"))
        assert shown["spec"]["unschedulable"] is True
        assert shown["metadata"]["uid"] == created["uid"]
        assert shown["metadata"]["creationTimestamp"] == created["creationTimestamp"]
        wait_for(lambda: phase(second, "kept")[0] == "Running", what="kept to run again")
        kubectl.out("run", "late", "--image=busybox:1.35", "--", "sleep", "3600")
        wait_for(lambda: phase(second, "late")[0] == "Failed", what="late to be refused")
        assert phase(second, "late")[1] == "NodeUnschedulable"
        kubectl.out("uncordon", "node-1")
    with running_node(tmp_path) as third:
        kubectl = third.writer(certs)
        spec = json.loads(kubectl.out("get", "node", "node-1", "-o", "json"))["spec"]
        assert "unschedulable" not in spec
        wait_for(lambda: phase(third, "late")[0] == "Failed", what="late to stay refused")
        assert phase(third, "late")[1] == "NodeUnschedulable"
        assert "a rejection is final" in kubectl.out("describe", "pod", "late")
        kubectl.out("run", "fresh", "--image=busybox:1.35", "--", "sleep", "3600")
        wait_for(lambda: phase(third, "fresh")[0] == "Running", what="fresh to run")
        assert phase(third, "kept")[0] == "Running"


@attrs.define
class _Scripted:
    figures: HostFigures

    def __call__(self) -> HostFigures:
        return self.figures


@pytest.mark.parametrize("binary", BINARIES)
def test_describe_node_shows_the_pressure_conditions(
    node: Node, kubectl: Kubectl, binary: str
) -> None:
    conditions = node.api.nodes.conditions
    real = conditions.host
    described = run(binary, kubectl, "describe", "node", "node-1").stdout
    for words in (
        "MemoryPressure   False",
        "KubeletHasSufficientMemory",
        "DiskPressure     False",
        "KubeletHasNoDiskPressure",
        "PIDPressure      False",
        "KubeletHasSufficientPID",
        "Ready            True",
        "kubelet is posting ready status",
    ):
        assert words in described, words
    pressed = attrs.evolve(real(), memory_available=1 << 20)
    conditions.host = _Scripted(pressed)
    try:
        described = run(binary, kubectl, "describe", "node", "node-1").stdout
        (line,) = [row for row in described.splitlines() if "MemoryPressure" in row]
        assert line.split()[:2] == ["MemoryPressure", "True"]
        assert "KubeletHasInsufficientMemory" in line and "memory.available<100Mi" in line
        assert "Node node-1 status is now: NodeHasInsufficientMemory" in described
        (ready,) = [row for row in described.splitlines() if row.strip().startswith("Ready ")]
        assert "True" in ready
    finally:
        conditions.host = real
        period, conditions.transition_period = conditions.transition_period, 0.0
        calm = requests.get(node.http.url + "/api/v1/nodes/node-1", timeout=10, headers=AUTH).json()
        conditions.transition_period = period  # the node is calm again for the next test
    (memory,) = [c for c in calm["status"]["conditions"] if c["type"] == "MemoryPressure"]
    assert memory["status"] == "False"


def test_the_node_lists_its_images_and_host_ids(kubectl: Kubectl) -> None:
    node = json.loads(kubectl.out("get", "node", "node-1", "-o", "json"))
    images = node["status"]["images"]
    assert any("busybox:1.35" in image["names"] for image in images)
    assert all(image["sizeBytes"] >= 0 for image in images)
    info = node["status"]["nodeInfo"]
    assert info["bootID"] and info["machineID"] is not None
    assert node["status"]["capacity"]["ephemeral-storage"].endswith("Ki")


@pytest.mark.parametrize("binary", BINARIES)
def test_the_node_lease_is_served_and_renewed(node: Node, kubectl: Kubectl, binary: str) -> None:
    header, row = run(binary, kubectl, "get", "lease", "-n", "kube-node-lease").stdout.splitlines()
    assert header.split() == ["NAME", "HOLDER", "AGE"] and row.split()[:2] == ["node-1", "node-1"]
    lease = json.loads(
        run(binary, kubectl, "get", "lease", "node-1", "-n", "kube-node-lease", "-o", "json").stdout
    )
    assert lease["apiVersion"] == "coordination.k8s.io/v1" and lease["kind"] == "Lease"
    spec = lease["spec"]
    assert spec["holderIdentity"] == "node-1" and spec["leaseDurationSeconds"] == 40
    assert spec["renewTime"].endswith("Z") and "." in spec["renewTime"]
    owner = lease["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Node", "node-1")
    listed = json.loads(run(binary, kubectl, "get", "lease", "-A", "-o", "json").stdout)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["node-1"]
    assert run(binary, kubectl, "get", "lease", "-n", "default", check=False).stderr.startswith(
        "No resources found"
    )
    missing = run(binary, kubectl, "get", "lease", "other", "-n", "kube-node-lease", check=False)
    assert missing.returncode != 0 and "not found" in missing.stderr
    described = run(binary, kubectl, "describe", "node", "node-1").stdout
    assert "HolderIdentity:  node-1" in described


def test_the_lease_is_renewed_within_the_last_ten_seconds(node: Node) -> None:
    url = node.http.url + "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1"
    renewed = requests.get(url, timeout=10, headers=AUTH).json()["spec"]["renewTime"]
    at = datetime.datetime.fromisoformat(renewed).timestamp()
    assert time.time() - 10.5 <= at <= time.time()


def test_leases_are_read_only_and_discovered(node: Node, kubectl: Kubectl, certs: Certs) -> None:
    server = node.https(certs)
    url = server.url + "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for method in ("PUT", "PATCH", "DELETE"):
        answer = requests.request(
            method, url, json={}, headers=auth, verify=str(certs.ca), timeout=10
        )
        assert answer.status_code == 405, (method, answer.text)
    groups = requests.get(node.http.url + "/apis", timeout=10, headers=AUTH).json()["groups"]
    assert "coordination.k8s.io" in [g["name"] for g in groups]
    resources = kubectl.out("api-resources", "--api-group=coordination.k8s.io")
    assert "leases" in resources and "Lease" in resources


def test_a_cordon_the_record_cannot_keep_changes_nothing(
    node: Node, kubectl: Kubectl, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(record: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(node.api.nodes.file, "save", full)
    refused = kubectl.run("cordon", "node-1", check=False)  # kubectl 1.32 exits 0 even so
    assert 'unable to cordon node "node-1"' in refused.stderr
    assert "node.json cannot be written: No space left on device" in refused.stderr
    assert kubectl.out("get", "nodes", "--no-headers").split()[1] == "Ready"
    assert node.api.nodes.file.cordon().cordoned is False
