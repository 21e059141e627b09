"""Pod-level options on the real engine: the shared PID namespace, hostPID/hostIPC, the managed
/etc/hosts (hostname, subdomain, hostAliases), setHostnameAsFQDN and dnsConfig, each
checked with ``docker inspect`` and from inside the container (pod-level limits, on every engine:
tests/engines/scenarios/test_resource_scenarios.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    engine_containers,
    exec_until,
    forever,
    make_pod,
    running_ids,
    wait_pod,
)

pytestmark = pytest.mark.docker


def sandbox_id(raw: Any, namespace: str) -> str:
    (sandbox,) = engine_containers(raw, namespace, "POD")
    return str(sandbox["Id"])


def text(result: Any) -> str:
    return str(result.stdout.decode())


def test_share_process_namespace_lets_a_container_see_the_others_processes(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "shared",
        namespace,
        [
            container("marked", engine.image, forever("echo started")),
            container("looker", engine.image),
        ],
        shareProcessNamespace=True,
    )
    kubelet = make_agent([pod])
    running = wait_pod(kubelet, namespace, "shared", all_running, what="shared running")
    ids = running_ids(running)
    sandbox = sandbox_id(raw, namespace)
    for name in ("marked", "looker"):
        assert raw.inspect_container(ids[name])["HostConfig"]["PidMode"] == f"container:{sandbox}"
    result = exec_until(
        kubelet,
        namespace,
        "shared",
        "looker",
        ["ps"],
        ok=lambda r: r.exit_code == 0 and b"echo started" in r.stdout,
    )
    assert "echo started" in text(result), text(result)


def test_without_share_process_namespace_each_container_has_its_own(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "apart",
        namespace,
        [
            container("marked", engine.image, forever("echo started")),
            container("looker", engine.image),
        ],
    )
    kubelet = make_agent([pod])
    running = wait_pod(kubelet, namespace, "apart", all_running, what="apart running")
    assert raw.inspect_container(running_ids(running)["looker"])["HostConfig"]["PidMode"] == ""
    result = exec_until(kubelet, namespace, "apart", "looker", ["ps"])
    assert "echo started" not in text(result)


def test_host_pid_and_host_ipc_when_the_node_allows_them(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "hostns", namespace, [container("app", engine.image)], hostPID=True, hostIPC=True
    )
    kubelet = make_agent([pod], allow_privileged=True)
    running = wait_pod(kubelet, namespace, "hostns", all_running, what="hostns running")
    app = raw.inspect_container(running_ids(running)["app"])["HostConfig"]
    assert (app["PidMode"], app["IpcMode"]) == ("host", "host")
    sandbox = raw.inspect_container(sandbox_id(raw, namespace))["HostConfig"]
    assert (sandbox["PidMode"], sandbox["IpcMode"]) == ("host", "host")
    # The node's PID 1 is not the container's command.
    result = exec_until(kubelet, namespace, "hostns", "app", ["cat", "/proc/1/cmdline"])
    assert b"trap" not in result.stdout


def test_managed_etc_hosts_hostname_subdomain_and_host_aliases(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "hosts",
        namespace,
        [container("app", engine.image)],
        hostname="busybox-1",
        subdomain="busybox-subdomain",
        hostAliases=[
            {"ip": "127.0.0.1", "hostnames": ["foo.local", "bar.local"]},
            {"ip": "10.1.2.3", "hostnames": ["foo.remote", "bar.remote"]},
        ],
    )
    kubelet = make_agent([pod])
    running = wait_pod(kubelet, namespace, "hosts", all_running, what="hosts running")
    app_id = running_ids(running)["app"]
    mounts = {m["Destination"]: m for m in raw.inspect_container(app_id)["Mounts"]}
    assert mounts["/etc/hosts"]["Source"].endswith(f"/pods/{pod.uid}/etc-hosts")
    ip = running.status.pod_ip if running.status else ""
    assert ip
    hosts = text(exec_until(kubelet, namespace, "hosts", "app", ["cat", "/etc/hosts"]))
    fqdn = f"busybox-1.busybox-subdomain.{namespace}.svc.cluster.local"
    assert hosts.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n")
    assert f"{ip}\t{fqdn}\tbusybox-1\n" in hosts
    assert hosts.endswith(
        "\n# Entries added by HostAliases.\n"
        "127.0.0.1\tfoo.local\tbar.local\n"
        "10.1.2.3\tfoo.remote\tbar.remote\n"
    )
    hostname = exec_until(kubelet, namespace, "hosts", "app", ["hostname"])
    assert text(hostname).strip() == "busybox-1"


def test_set_hostname_as_fqdn(make_agent: AgentFactory, engine: TestEngine, namespace: str) -> None:
    pod = make_pod(
        "fqdn",
        namespace,
        [container("app", engine.image)],
        hostname="h",
        subdomain="s",
        setHostnameAsFQDN=True,
    )
    kubelet = make_agent([pod], cluster_domain="example.test")
    wait_pod(kubelet, namespace, "fqdn", all_running, what="fqdn running")
    hostname = exec_until(kubelet, namespace, "fqdn", "app", ["hostname"])
    assert text(hostname).strip() == f"h.s.{namespace}.svc.example.test"


def test_dns_config_is_merged_into_the_pods_resolv_conf(
    make_agent: AgentFactory, engine: TestEngine, namespace: str
) -> None:
    pod = make_pod(
        "dns",
        namespace,
        [container("app", engine.image)],
        dnsPolicy="None",
        dnsConfig={
            "nameservers": ["192.0.2.1"],
            "searches": ["ns1.svc.cluster-domain.example", "my.dns.search.suffix"],
            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
        },
    )
    kubelet = make_agent([pod])
    wait_pod(kubelet, namespace, "dns", all_running, what="dns running")
    resolv = text(exec_until(kubelet, namespace, "dns", "app", ["cat", "/etc/resolv.conf"]))
    assert "nameserver 192.0.2.1" in resolv
    assert "search ns1.svc.cluster-domain.example my.dns.search.suffix" in resolv
    assert "ndots:2" in resolv and "edns0" in resolv
    assert "192.0.2.53" not in resolv  # dnsPolicy None: nothing from the node


def test_a_host_network_pod_with_host_aliases_sees_the_nodes_hosts_and_its_aliases(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "hn",
        namespace,
        [container("app", engine.image)],
        hostNetwork=True,
        hostAliases=[{"ip": "10.9.8.7", "hostnames": ["alias.example"]}],
    )
    kubelet = make_agent([pod])
    running = wait_pod(kubelet, namespace, "hn", all_running, what="hn running")
    inspected = raw.inspect_container(running_ids(running)["app"])
    assert {m["Destination"] for m in inspected["Mounts"]} >= {"/etc/hosts"}
    hosts = text(exec_until(kubelet, namespace, "hn", "app", ["cat", "/etc/hosts"]))
    assert hosts.startswith("# Kubernetes-managed hosts file (host network).\n")
    assert hosts.endswith("# Entries added by HostAliases.\n10.9.8.7\talias.example\n")
