"""Pod-level options through the agent on every engine (Docker, then the CRI on containerd),
seen from inside the container: the managed /etc/hosts (hostname, subdomain, hostAliases),
setHostnameAsFQDN and dnsConfig."""

from __future__ import annotations

from typing import Any

from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    exec_until,
    make_pod,
    wait_pod,
)
from tests.engines.engine_support import EngineUnderTest


def text(result: Any) -> str:
    return str(result.stdout.decode())


def test_managed_etc_hosts_hostname_subdomain_and_host_aliases(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
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


def test_set_hostname_as_fqdn(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
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
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
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
