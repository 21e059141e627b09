"""``Kubelet.explain`` / ``/why/{namespace}/{pod}`` / ``kubecore why``: the one reason each
container that is not ready is held back, with its evidence, for the usual culprits."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from kubecore._agent.explain import explanation_text
from kubecore._cli import main
from kubecore._contract.values import ProbeOutcome, ProbeResult
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._model.v1 import HTTPGetAction, Probe
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    made = make_node(tmp_path, images=["busybox:1.36"], max_pods=4)
    yield made
    made.close()


def explain(node: Node, name: str) -> dict[str, Any]:
    pod = node.kubelet.get_pod("default", name)
    assert pod is not None
    document = node.kubelet.explain(pod.uid)
    assert document is not None
    return document


def container(document: dict[str, Any], name: str = "app") -> dict[str, Any]:
    return next(c for c in document["containers"] if c["name"] == name)


def test_crash_loop_back_off_with_its_timer_and_last_exit(node: Node) -> None:
    node.kubelet.set_pods([make_pod("crash", ctr("app", command=("sh", "-c", "exit 3")))])
    node.run_until(lambda: node.status("crash").container_statuses[0].restart_count >= 2)
    node.kubelet.sync()
    app = container(explain(node, "crash"))
    assert app["reason"].startswith("CrashLoopBackOff")
    evidence = "\n".join(app["evidence"])
    assert "last instance exited with code 3 (Error)" in evidence
    assert "crash back-off" in evidence and "next try at" in evidence
    assert explain(node, "crash")["lastDecision"] == "app waits: CrashLoopBackOff"


def test_image_missing(node: Node) -> None:
    node.kubelet.set_pods([make_pod("noimage", ctr("app", image="nosuch:1"))])
    node.run_until(lambda: node.status("noimage").container_statuses)
    node.kubelet.sync()
    app = container(explain(node, "noimage"))
    assert app["reason"].startswith(("ErrImagePull", "ImagePullBackOff"))
    evidence = "\n".join(app["evidence"])
    assert "image back-off" in evidence
    assert "nosuch:1" in evidence  # the Failed event names the image


def test_readiness_probe_failing_names_the_probe_and_its_output(node: Node) -> None:
    probe = Probe(http_get=HTTPGetAction(port=8080, path="/ready"), period_seconds=2)
    node.kubelet.set_pods([make_pod("probed", ctr("app", readiness_probe=probe))])
    node.checker.set_probe("app", "http", ProbeResult(ProbeOutcome.FAILURE, "HTTP 503"))
    node.run_until(lambda: node.kubelet.views.recent_events(name="probed", reason="Unhealthy"))
    document = explain(node, "probed")
    app = container(document)
    assert app["reason"] == "Readiness probe failed: HTTP 503"
    assert "last probe result: Readiness probe failed: HTTP 503" in app["evidence"]
    assert {c["type"]: c["status"] for c in document["conditions"]}["Ready"] == "False"


def test_admission_rejected(node: Node) -> None:
    node.kubelet.set_pods([make_pod(f"p{i}") for i in range(5)])
    node.kubelet.sync()
    document = explain(node, "p4")
    assert document["admission"] == {
        "admitted": False,
        "reason": "OutOfpods",
        "message": document["admission"]["message"],
    }
    assert "refused by admission (OutOfpods)" in document["reason"]
    assert "Refused by admission: OutOfpods" in explanation_text(document)


def test_why_over_the_http_api_and_the_command(node: Node) -> None:
    node.kubelet.set_pods([make_pod("crash", ctr("app", command=("sh", "-c", "exit 3")))])
    node.run_until(lambda: node.status("crash").container_statuses[0].restart_count >= 2)
    node.kubelet.sync()
    server = KubeletServer(node.kubelet, ServerConfig(port=0, request_timeout=10.0)).start()
    try:
        served = requests.get(server.url + "/why/default/crash", timeout=10)
        assert served.status_code == 200
        assert served.json() == explain(node, "crash")
        missing = requests.get(server.url + "/why/default/nosuch", timeout=10)
        assert missing.status_code == 404
        out = io.StringIO()
        assert main(["why", "default/crash", "--server", server.url], out) == 0
        text = out.getvalue()
        assert text.startswith("Pod default/crash (Running)")
        assert "app: CrashLoopBackOff" in text
        out = io.StringIO()
        assert main(["why", "default/crash", "--server", server.url, "-o", "json"], out) == 0
        assert '"reason": "CrashLoopBackOff' in out.getvalue()
        assert main(["why", "default/nosuch", "--server", server.url], io.StringIO()) == 1
    finally:
        server.stop()
