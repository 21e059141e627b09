"""Readiness is each source's own: a source that cannot be read keeps its pods and every pod the
agent cannot place, while a pod another, readable source deleted goes (``kubectl delete`` works
while a manifest directory is unmounted)."""

from __future__ import annotations

from pathlib import Path

from kubecore._config.updates import Operation, PodUpdate
from tests.agent.support import make_node
from tests.builders import make_pod

MUTATING = {"stop_container", "remove_container", "stop_sandbox", "remove_sandbox"}


def test_a_pod_deleted_by_a_ready_source_goes_while_another_cannot_be_read(
    tmp_path: Path,
) -> None:
    node = make_node(tmp_path)
    node.kubelet.register_source("file")
    node.kubelet.register_source("kube-apiserver")
    node.kubelet.set_pods([make_pod("static")], source="file")
    node.kubelet.set_pods([make_pod("web"), make_pod("db")], source="kube-apiserver")
    node.converge()
    assert sorted(c[0] for c in node.running_names()) == ["db", "static", "web"]
    node.kubelet.update(PodUpdate(Operation.NOT_READY, (), "file", reason="/pods: unmounted"))
    assert not node.kubelet.sources_ready()
    node.kubelet.set_pods([make_pod("db")], source="kube-apiserver")  # kubectl delete pod web
    node.converge()
    assert sorted(c[0] for c in node.running_names()) == ["db", "static"]


def test_a_pod_of_no_known_source_stays_while_a_source_cannot_be_read(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    node.kubelet.register_source("file")
    node.kubelet.set_pods([make_pod("static"), make_pod("other")], source="file")
    node.converge()
    kubelet = node.restart_kubelet()  # no record of which source "other" came from
    kubelet.register_source("file")
    kubelet.register_source("kube-apiserver")
    kubelet.update(PodUpdate(Operation.NOT_READY, (), "file", reason="/pods: unmounted"))
    kubelet.set_pods([], source="kube-apiserver")
    calls = node.runtime.call_count("*")
    node.converge()
    assert [op for op, _ in node.runtime.calls[calls:] if op in MUTATING] == []
    assert sorted(c[0] for c in node.running_names()) == ["other", "static"]
