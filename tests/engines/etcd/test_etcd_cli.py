"""``kubecore etcd apply|delete|get`` and ``attach`` (what ``kubecore run --etcd-endpoints``
adds), on the real etcd cluster: the functions directly, then their argparse wiring."""

from __future__ import annotations

import argparse
import io
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from kubecore import Kubelet, KubeletConfig, PodSource, SourcePoller
from kubecore_fake import FakeRuntime
from tests.engines.etcd.helpers import IMAGE, Agent, statuses, wait_for

pytestmark = pytest.mark.etcd

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [server]
---
apiVersion: v1
kind: Pod
metadata:
  name: db
  namespace: data
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [server]
  - name: backup
    image: busybox:1.36
    command: [server]
"""


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "pods.yaml"
    path.write_text(MANIFEST)
    return path


def test_apply_binds_the_pods_and_get_pods_shows_their_status(
    etcd_endpoints: tuple[str, ...],
    client: Any,
    prefix: str,
    agents: Callable[..., Agent],
    manifest: Path,
) -> None:
    from kubecore_etcd._cli import apply, get_pods

    agent = agents("n1")
    out = apply([manifest], "n1", etcd_endpoints, prefix)
    assert out == "pod/web (default) bound to n1\npod/db (data) bound to n1\n"
    wait_for(lambda: agent.running_pods() == {"web", "db"})
    wait_for(
        lambda: (
            all(d["status"]["phase"] == "Running" for d in statuses(client, prefix, "n1").values())
            and len(statuses(client, prefix, "n1")) == 2
        )
    )
    table = wait_for(
        lambda: (t := get_pods(etcd_endpoints, prefix, all_namespaces=True)) and "2/2" in t and t
    )
    lines = table.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "NODE"]
    assert lines[1].split()[:5] == ["data", "db", "2/2", "Running", "0"]
    assert lines[1].split()[-1] == "n1"
    assert lines[2].split()[:5] == ["default", "web", "1/1", "Running", "0"]
    only_default = get_pods(etcd_endpoints, prefix, node="n1").splitlines()
    assert [line.split()[0] for line in only_default] == ["NAME", "web"]
    assert get_pods(etcd_endpoints, prefix, node="n2") == "No pods found in namespace default.\n"
    again = apply([manifest], "n1", etcd_endpoints, prefix)
    assert again.count("unchanged") == 2


def test_a_pod_bound_without_status_yet_is_pending(
    etcd_endpoints: tuple[str, ...], prefix: str, manifest: Path
) -> None:
    from kubecore_etcd._cli import apply, get_pods

    apply([manifest], "nobody", etcd_endpoints, prefix)
    lines = get_pods(etcd_endpoints, prefix).splitlines()
    assert lines[1].split() == ["web", "0/1", "Pending", "0", "<unknown>", "nobody"]


def test_delete_unbinds_by_name_file_or_all(
    etcd_endpoints: tuple[str, ...], prefix: str, agents: Callable[..., Agent], manifest: Path
) -> None:
    from kubecore_etcd._cli import apply, delete

    agent = agents("n1")
    apply([manifest], "n1", etcd_endpoints, prefix)
    wait_for(lambda: agent.running_pods() == {"web", "db"})
    out = delete("n1", etcd_endpoints, prefix, names=["web", "ghost"])
    assert out == "pod/web (default) deleted from n1\npod/ghost (default) not found on n1\n"
    wait_for(lambda: agent.running_pods() == {"db"})
    assert delete("n1", etcd_endpoints, prefix, all_pods=True) == "pod/db (data) deleted from n1\n"
    wait_for(lambda: not agent.running_pods())
    apply([manifest], "n1", etcd_endpoints, prefix)
    assert delete("n1", etcd_endpoints, prefix, files=[manifest]).count("deleted from") == 2


def test_get_nodes_is_ready_while_the_agent_holds_its_lease(
    etcd_endpoints: tuple[str, ...], prefix: str, agents: Callable[..., Agent], manifest: Path
) -> None:
    from kubecore_etcd._cli import apply, get_nodes

    assert get_nodes(etcd_endpoints, prefix) == "No nodes found.\n"
    agent = agents("n1")
    apply([manifest], "n1", etcd_endpoints, prefix)
    table = wait_for(lambda: (t := get_nodes(etcd_endpoints, prefix)) and "n1" in t and t)
    assert table.splitlines()[0].split() == ["NAME", "STATUS", "PODS", "VERSION"]
    assert table.splitlines()[1].split()[:3] == ["n1", "Ready", "2"]
    agent.stop()  # a clean stop revokes the lease: the node key goes at once
    assert get_nodes(etcd_endpoints, prefix).splitlines()[1].split()[:3] == ["n1", "NotReady", "2"]


def test_attach_registers_the_source_so_nothing_is_deleted_before_etcd_was_listed(
    etcd_endpoints: tuple[str, ...], client: Any, prefix: str, tmp_path: Path, manifest: Path
) -> None:
    from kubecore_etcd import attach
    from kubecore_etcd._cli import apply

    runtime = FakeRuntime(images=[IMAGE])
    kubelet = Kubelet(
        runtime, runtime, config=KubeletConfig(node_name="n9", root_dir=str(tmp_path / "root"))
    )
    attachment = attach(kubelet, ",".join(etcd_endpoints), prefix, qps=0)
    assert not kubelet.sources_ready()
    apply([manifest], "n9", etcd_endpoints, prefix)
    poller = SourcePoller([attachment.source], kubelet.update, tick=0.05)
    kubelet.start()
    poller.start()
    attachment.start()
    try:
        wait_for(lambda: len(statuses(client, prefix, "n9")) == 2)
        assert kubelet.sources_ready()
        # The agent's events land under the events prefix, on a lease (they expire by themselves).
        events = wait_for(lambda: events_of(client, f"{prefix}/events/data/db."))
        reasons = {json.loads(kv.value)["reason"] for kv in events}
        assert {"Pulled", "Created", "Started"} <= reasons
        assert all(kv.lease for kv in events)
        document = json.loads(events[0].value)
        assert document["involvedObject"]["name"] == "db"
        assert document["source"] == {"component": "kubelet", "host": "n9"}
        ttl = client.run(lambda etcd: etcd.get_lease_info(events[0].lease, keys=False)).TTL
        assert 3000 < ttl <= 3600
        assert attachment.events.dropped == 0
        assert isinstance(attachment.source, PodSource)
        scraped = generate_latest(kubelet.metrics.registry).decode()
        assert "kubecore_etcd_source_ready 1.0" in scraped
        assert "kubecore_etcd_events_dropped_total 0.0" in scraped
        assert 'kubecore_etcd_status_writes_total{op="put"}' in scraped
    finally:
        poller.stop()
        attachment.close()
        kubelet.stop()
    assert client.get(f"{prefix}/nodes/n9") is None


def events_of(client: Any, key_prefix: str) -> list[Any]:
    return list(client.run(lambda etcd: etcd.get_prefix(key_prefix.encode())))


def parse(*argv: str) -> argparse.Namespace:
    from kubecore._cli.parser import build_parser

    return build_parser(only=argv[0]).parse_args(argv)


def run(*argv: str) -> tuple[int, str]:
    args = parse(*argv)
    out = io.StringIO()
    return args.handler(args, out), out.getvalue()


def test_the_commands_through_argparse(
    etcd_endpoints: tuple[str, ...], prefix: str, manifest: Path, tmp_path: Path
) -> None:
    flags = ("--etcd-endpoints", ",".join(etcd_endpoints), "--etcd-prefix", prefix)
    code, out = run("etcd", "apply", "-f", str(manifest), "--node", "n1", *flags)
    assert (code, out.count("bound to n1")) == (0, 2)
    code, out = run("etcd", "get", "pods", "-A", *flags)
    assert code == 0
    assert [line.split()[1] for line in out.splitlines()[1:]] == ["db", "web"]
    code, out = run("etcd", "get", "nodes", *flags)
    assert (code, out.splitlines()[1].split()[:2]) == (0, ["n1", "NotReady"])
    assert run("etcd", "delete", "--node", "n1", *flags)[0] == 2
    code, out = run("etcd", "delete", "web", "--node", "n1", *flags)
    assert (code, out) == (0, "pod/web (default) deleted from n1\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n")
    assert run("etcd", "apply", "-f", str(bad), "--node", "n1", *flags)[0] == 1
    assert "x" not in run("etcd", "get", "pods", "-A", *flags)[1].split()


def test_an_unreachable_cluster_is_an_error_not_a_hang(tmp_path: Path, manifest: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, out = run(
        "etcd", "get", "pods", "--etcd-endpoints", f"http://127.0.0.1:{port}", "--etcd-prefix", "/x"
    )
    assert (code, out) == (1, "")


def test_kubecore_run_once_runs_the_pods_bound_in_etcd_and_writes_their_status(
    etcd_endpoints: tuple[str, ...], prefix: str, tmp_path: Path
) -> None:
    from kubecore._cli import main
    from kubecore_etcd._cli import apply, get_pods

    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
        f"spec:\n  containers:\n  - {{name: app, image: {IMAGE}}}\n"
    )
    endpoints = ",".join(etcd_endpoints)
    apply([manifest], "cli-node", endpoints, prefix)
    out = io.StringIO()
    code = main(
        [
            "run",
            "--etcd-endpoints",
            endpoints,
            "--etcd-prefix",
            prefix,
            "--node-name",
            "cli-node",
            "--once",
            "--root-dir",
            str(tmp_path / "root"),
            "--log-level",
            "error",
        ],
        out=out,
    )
    assert code == 0, out.getvalue()
    assert "web" in out.getvalue() and "Running" in out.getvalue()
    table = get_pods(endpoints, prefix, node="cli-node")
    assert table.splitlines()[1].split()[:3] == ["web", "1/1", "Running"]


def test_kubecore_run_refuses_etcd_endpoints_that_are_not_urls(tmp_path: Path) -> None:
    from kubecore._cli import main

    code = main(
        ["run", "--etcd-endpoints", "not a url", "--once", "--root-dir", str(tmp_path / "r")],
        out=io.StringIO(),
    )
    assert code == 2
