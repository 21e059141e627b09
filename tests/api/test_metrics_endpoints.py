"""/metrics, /metrics/probes, /metrics/resource and /healthz as the kubelet serves them: every
family parsed with prometheus_client's own parser, its name, type and label set checked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._config.updates import Operation, PodUpdate
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._model.v1 import ExecAction, Probe
from kubecore._observability.metrics import Metrics, image_size_label
from kubecore_fake import FakeRuntime
from tests.agent.support import Node, make_node
from tests.builders import ctr, make_pod

# name -> (type, label names) as pkg/kubelet/metrics and the prober / resource collectors have them
KUBELET_METRICS = {
    "kubelet_node_name": ("gauge", {"node"}),
    "kubelet_running_pods": ("gauge", set()),
    "kubelet_running_containers": ("gauge", {"container_state"}),
    "kubelet_desired_pods": ("gauge", {"static"}),
    "kubelet_active_pods": ("gauge", {"static"}),
    "kubelet_working_pods": ("gauge", {"lifecycle", "config", "static"}),
    "kubelet_restarted_pods": ("counter", {"static"}),
    "kubelet_pod_start_duration_seconds": ("histogram", set()),
    "kubelet_pod_start_sli_duration_seconds": ("histogram", set()),
    "kubelet_pod_worker_duration_seconds": ("histogram", {"operation_type"}),
    "kubelet_pod_worker_start_duration_seconds": ("histogram", set()),
    "kubelet_runtime_operations": ("counter", {"operation_type"}),
    "kubelet_runtime_operations_errors": ("counter", {"operation_type"}),
    "kubelet_runtime_operations_duration_seconds": ("histogram", {"operation_type"}),
    "kubelet_pleg_relist_duration_seconds": ("histogram", set()),
    "kubelet_pleg_relist_interval_seconds": ("histogram", set()),
    "kubelet_pleg_last_seen_seconds": ("gauge", set()),
    "kubelet_started_pods": ("counter", set()),
    "kubelet_started_pods_errors": ("counter", set()),
    "kubelet_started_containers": ("counter", {"container_type"}),
    "kubelet_started_containers_errors": ("counter", {"container_type", "code"}),
    "kubelet_evictions": ("counter", {"eviction_signal"}),
    "kubelet_image_pull_duration_seconds": ("histogram", {"image_size_in_bytes"}),
}
KUBECORE_METRICS = {
    "kubecore_sync_duration_seconds": ("histogram", set()),
    "kubecore_pod_worker_updates_replaced": ("counter", set()),
    "kubecore_pod_sync_errors": ("counter", set()),
}
PROBE_METRICS = {
    "prober_probe": (
        "counter",
        {"probe_type", "result", "container", "pod", "namespace", "pod_uid"},
    ),
    "prober_probe_duration_seconds": ("histogram", {"probe_type", "container", "pod", "namespace"}),
}
CONTAINER = {"container", "pod", "namespace"}
RESOURCE_METRICS = {
    "node_cpu_usage_seconds": ("counter", set()),
    "node_memory_working_set_bytes": ("gauge", set()),
    "container_cpu_usage_seconds": ("counter", CONTAINER),
    "container_memory_working_set_bytes": ("gauge", CONTAINER),
    "container_start_time_seconds": ("gauge", CONTAINER),
    "pod_cpu_usage_seconds": ("counter", {"pod", "namespace"}),
    "pod_memory_working_set_bytes": ("gauge", {"pod", "namespace"}),
    "scrape_error": ("gauge", set()),
    "resource_scrape_error": ("gauge", set()),
}
HISTOGRAM_LABELS = {"le"}


def families(text: str) -> dict[str, tuple[str, set[str], set[str]]]:
    """Family name -> (type, label names without ``le``, sample names)."""
    out: dict[str, tuple[str, set[str], set[str]]] = {}
    for family in text_string_to_metric_families(text):
        labels: set[str] = set()
        for sample in family.samples:
            labels |= set(sample.labels) - HISTOGRAM_LABELS
        out[family.name] = (family.type, labels, {s.name for s in family.samples})
    return out


def check(
    found: dict[str, tuple[str, set[str], set[str]]], expected: dict[str, tuple[str, set[str]]]
) -> None:
    for name, (kind, labels) in expected.items():
        assert name in found, f"{name} missing"
        got_kind, got_labels, samples = found[name]
        assert got_kind == kind, f"{name}: {got_kind}, not {kind}"
        assert got_labels == labels, f"{name}: labels {got_labels}, not {labels}"
        assert samples, f"{name} has no sample"


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return make_node(tmp_path, pulled=())


@pytest.fixture
def served(node: Node) -> Iterator[tuple[Node, str]]:
    with KubeletServer(node.kubelet, ServerConfig(port=0)) as server:
        yield node, server.url


def converge_probed_pod(node: Node) -> None:
    live = Probe(exec=ExecAction(command=("true",)), period_seconds=1)
    node.runtime.fail_next("create_container", 1)
    node.kubelet.set_pods(
        [make_pod("web", ctr("app", image="busybox:latest", liveness_probe=live), uid="uid-web")]
    )
    node.converge()
    node.clock.sleep(3)
    node.kubelet.sync()
    node.kubelet.metrics.record_eviction("memory.available")
    restart_a_pod(node)


def restart_a_pod(node: Node) -> None:
    """A pod deleted and added again with the same UID before its containers went."""
    again = make_pod("again", ctr("app"), uid="uid-again")
    node.kubelet.set_pods([again], source="file")
    node.converge()
    node.kubelet.set_pods([], source="file")
    node.kubelet.sync()
    node.kubelet.set_pods([again], source="file")
    node.converge()


def test_metrics_has_the_kubelets_names_types_and_labels(served: tuple[Node, str]) -> None:
    node, url = served
    converge_probed_pod(node)
    response = requests.get(url + "/metrics", timeout=10)
    assert response.status_code == 200
    found = families(response.text)
    check(found, KUBELET_METRICS)
    check(found, KUBECORE_METRICS)
    kubelet_or_kubecore = {n for n in found if n.startswith(("kubelet_", "kubecore_"))}
    assert kubelet_or_kubecore == set(found), "every family is kubelet_* or kubecore_*"
    assert not [n for n in found if n.endswith("_created")], "the kubelet has no _created series"
    # a counter the kubelet names without _total keeps that name
    assert "# TYPE kubelet_evictions counter" in response.text
    assert 'kubelet_evictions{eviction_signal="memory.available"} 1.0' in response.text
    assert "# TYPE kubelet_started_pods_total counter" in response.text
    buckets = {
        s.labels["le"]
        for f in text_string_to_metric_families(response.text)
        if f.name == "kubelet_pod_start_duration_seconds"
        for s in f.samples
        if "le" in s.labels
    }
    assert {"0.5", "3600.0", "+Inf"} <= buckets and len(buckets) == 26


def test_metrics_probes(served: tuple[Node, str]) -> None:
    node, url = served
    converge_probed_pod(node)
    text = requests.get(url + "/metrics/probes", timeout=10).text
    found = families(text)
    check(found, PROBE_METRICS)
    assert set(found) == set(PROBE_METRICS)
    (family,) = [f for f in text_string_to_metric_families(text) if f.name == "prober_probe"]
    (sample,) = family.samples
    assert sample.labels == {
        "probe_type": "Liveness",
        "result": "successful",
        "container": "app",
        "pod": "web",
        "namespace": "default",
        "pod_uid": "uid-web",
    }


def test_metrics_resource(served: tuple[Node, str]) -> None:
    node, url = served
    converge_probed_pod(node)
    text = requests.get(url + "/metrics/resource", timeout=10).text
    found = families(text)
    check(found, RESOURCE_METRICS)
    assert set(found) == set(RESOURCE_METRICS)
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }
    app = (("container", "app"), ("namespace", "default"), ("pod", "web"))
    cpu = samples[("container_cpu_usage_seconds_total", app)]
    assert cpu.value > 0 and cpu.timestamp is not None
    assert samples[("container_memory_working_set_bytes", app)].value == 4 * 1024 * 1024
    assert samples[("scrape_error", ())].value == 0


def test_a_failing_summary_is_a_scrape_error(node: Node) -> None:
    node.runtime.fail_next("container_stats", 1)
    text = node.kubelet.metrics.render_resource().decode()
    found = {f.name: f for f in text_string_to_metric_families(text)}
    assert found["resource_scrape_error"].samples[0].value == 1
    assert not found["container_cpu_usage_seconds"].samples


def test_healthz_lists_its_checks_and_says_why_a_source_is_not_ready(
    served: tuple[Node, str],
) -> None:
    node, url = served
    node.kubelet.set_pods([], source="etcd")
    assert requests.get(url + "/healthz", timeout=10).text == "ok\n"
    verbose = requests.get(url + "/healthz?verbose", timeout=10).text.splitlines()
    assert verbose == [
        "[+]ping ok",
        "[+]syncloop ok",
        "[+]runtime ok",
        "[+]source etcd ok",
        "healthz check passed",
    ]
    node.kubelet.update(
        PodUpdate(Operation.NOT_READY, (), "etcd", reason="etcd is unreachable: refused")
    )
    response = requests.get(url + "/healthz", timeout=10)
    assert response.status_code == 500
    assert "[-]source etcd not ready: etcd is unreachable: refused" in response.text.splitlines()
    assert requests.get(url + "/healthz/ping", timeout=10).status_code == 200
    node.kubelet.set_pods([], source="etcd")
    assert requests.get(url + "/healthz", timeout=10).status_code == 200


def test_syncloop_fails_past_the_kubelets_threshold(node: Node) -> None:
    kubelet = node.kubelet
    kubelet.start()
    try:
        assert dict(kubelet.views.health_checks())["syncloop"] == ""
        kubelet._pass.last_pass -= 301
        problem = dict(kubelet.views.health_checks())["syncloop"]
        assert problem.startswith("failed: the sync loop last passed")
    finally:
        kubelet.stop()


@pytest.mark.parametrize(
    ("size", "label"),
    [(0, "0-10MB"), (10 * 1024 * 1024 - 1, "0-10MB"), (10 * 1024 * 1024, "10MB-100MB"),
     (200 * 1024**3, "GT100GB")],
)  # fmt: skip
def test_image_size_labels(size: int, label: str) -> None:
    assert image_size_label(size) == label


def test_a_gone_pod_leaves_no_probe_series() -> None:
    metrics = Metrics()
    labels = {"container": "c", "pod": "p", "namespace": "n"}
    metrics.record_probe(kind="readiness", outcome="failure", pod_uid="u", duration=0.1, **labels)
    assert (
        metrics.value(
            "prober_probe_total",
            {"probe_type": "Readiness", "result": "failed", "pod_uid": "u", **labels},
        )
        == 1
    )
    metrics.forget_pod("u")
    assert b"pod_uid" not in metrics.render_probes()


def working(node: Node, lifecycle: str, config: str, static: str) -> float | None:
    labels = {"lifecycle": lifecycle, "config": config, "static": static}
    return node.kubelet.metrics.value("kubelet_working_pods", labels)


def test_working_and_restarted_pods(node: Node) -> None:
    node.kubelet.set_pods([make_pod("web", ctr("app"), uid="uid-web")])
    node.converge()
    assert working(node, "sync", "desired", "false") == 1
    assert working(node, "terminated", "orphan", "false") == 0
    node.kubelet.set_pods([])
    node.kubelet.sync()  # killed and removed in this pass; the pod was still on the node
    assert working(node, "sync", "desired", "false") == 0
    assert working(node, "terminated", "orphan", "false") == 1
    restart_a_pod(node)
    assert node.kubelet.metrics.value("kubelet_restarted_pods_total", {"static": "true"}) == 1
    assert working(node, "sync", "desired", "true") == 1


@pytest.mark.parametrize(
    ("source", "static"),
    [("api", "false"), ("kube-apiserver", "false"), ("etcd", "false"), ("file", "true"),
     ("http", "true")],
)  # fmt: skip
def test_pods_from_the_api_server_are_not_static(node: Node, source: str, static: str) -> None:
    node.kubelet.set_pods([make_pod("web", ctr("app"))], source=source)
    node.converge()
    assert node.kubelet.metrics.value("kubelet_desired_pods", {"static": static}) == 1


def test_agents_sharing_metrics_serve_the_last_ones_resources(tmp_path: Path) -> None:
    shared = Metrics()
    runtimes = [FakeRuntime(), FakeRuntime()]
    for i, runtime in enumerate(runtimes):
        config = KubeletConfig(node_name=f"n{i}", root_dir=str(tmp_path / f"n{i}"))
        Kubelet(runtime, runtime, config=config, metrics=shared)
    assert shared.value("kubelet_node_name", {"node": "n1"}) == 1
    assert shared.value("kubelet_node_name", {"node": "n0"}) is None
    assert shared.value("resource_scrape_error") == 0
