"""Pod-level options on the in-memory runtime and in the pure translation: namespace modes,
hostname/subdomain, the managed hosts file, dnsConfig, pod-level limits, hostPID/hostIPC gating."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from kubecore._contract.errors import ValidationError
from kubecore._contract.values import DNSConfig, NamespaceMode, NamespaceOption
from kubecore._kuberuntime.dns import ResolvConf, dns_config
from kubecore._kuberuntime.hosts import managed_hosts_file
from kubecore._kuberuntime.translate import container_config, sandbox_config
from kubecore._model.spec_hash import sandbox_hash
from kubecore._model.v1 import (
    HostAlias,
    PodDNSConfig,
    PodDNSConfigOption,
    ResourceRequirements,
)
from kubecore.manifest import pod_from_dict
from tests.agent.support import make_node
from tests.builders import ctr, make_pod

HOST = ResolvConf(("192.0.2.53",), ("example.invalid",), ("timeout:2",))


def test_namespace_modes_follow_the_pod() -> None:
    def modes(**spec: Any) -> NamespaceOption:
        return sandbox_config(make_pod("p", ctr(), **spec), 0, dns=None).namespace_options

    assert modes() == NamespaceOption()
    assert modes(share_process_namespace=True).pid is NamespaceMode.POD
    assert modes(host_pid=True).pid is NamespaceMode.NODE
    assert modes(host_ipc=True).ipc is NamespaceMode.NODE
    assert modes(host_network=True).network is NamespaceMode.NODE


def test_hostname_subdomain_and_fqdn() -> None:
    pod = make_pod("p", ctr(), hostname="h", subdomain="s")
    assert sandbox_config(pod, 0, dns=None, cluster_domain="cluster.local").hostname == "h"
    fqdn = attrs.evolve(pod, spec=attrs.evolve(pod.spec, set_hostname_as_fqdn=True))
    config = sandbox_config(fqdn, 0, dns=None, cluster_domain="cluster.local")
    assert config.hostname == "h.s.default.svc.cluster.local"
    long = attrs.evolve(fqdn, spec=attrs.evolve(fqdn.spec, hostname="h" * 60))
    with pytest.raises(ValueError, match=r"FQDN h+\.s\.default\.svc\.cluster\.local is too long"):
        sandbox_config(long, 0, dns=None, cluster_domain="cluster.local")


def test_sandbox_hash_changes_only_with_options_set() -> None:
    plain = make_pod("p", ctr(), uid="u1")
    same = make_pod("p", ctr(), uid="u1", share_process_namespace=False, hostname="")
    assert sandbox_hash(plain) == sandbox_hash(same)
    assert sandbox_hash(plain) != sandbox_hash(make_pod("p", ctr(), uid="u1", hostname="x"))


def test_managed_hosts_file() -> None:
    pod = make_pod(
        "p",
        ctr(),
        hostname="h",
        subdomain="s",
        host_aliases=(HostAlias("10.1.2.3", ("foo.remote", "bar.remote")),),
    )
    text = managed_hosts_file(pod, pod_ip="10.0.0.7", cluster_domain="cluster.local")
    assert text == (
        "# Kubernetes-managed hosts file.\n"
        "127.0.0.1\tlocalhost\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::0\tip6-localnet\n"
        "fe00::0\tip6-mcastprefix\n"
        "fe00::1\tip6-allnodes\n"
        "fe00::2\tip6-allrouters\n"
        "10.0.0.7\th.s.default.svc.cluster.local\th\n"
        "\n# Entries added by HostAliases.\n"
        "10.1.2.3\tfoo.remote\tbar.remote\n"
    )
    plain = managed_hosts_file(make_pod("web", ctr()), pod_ip="10.0.0.8", cluster_domain="c")
    assert plain is not None and plain.endswith("fe00::2\tip6-allrouters\n10.0.0.8\tweb\n")
    host = make_pod("hn", ctr(), host_network=True)
    assert managed_hosts_file(host, pod_ip="", cluster_domain="c") is None
    aliased = attrs.evolve(host, spec=attrs.evolve(host.spec, host_aliases=pod.spec.host_aliases))
    node_file = managed_hosts_file(
        aliased, pod_ip="", cluster_domain="c", node_hosts="1.2.3.4\tn\n"
    )
    assert node_file == (
        "# Kubernetes-managed hosts file (host network).\n1.2.3.4\tn\n"
        "\n# Entries added by HostAliases.\n10.1.2.3\tfoo.remote\tbar.remote\n"
    )


def test_the_agent_mounts_the_managed_hosts_file_in_every_container(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    pod = make_pod("web", ctr(), host_aliases=(HostAlias("10.1.2.3", ("foo",)),))
    node.kubelet.set_pods([pod])
    node.converge()
    (app,) = node.runtime.list_containers()
    mounts = {m.container_path: m for m in node.runtime.container_config(app.id).mounts}
    path = Path(mounts["/etc/hosts"].host_path)
    assert (path.parent.name, path.name) == (pod.uid, "etc-hosts")
    ip = node.status("web").pod_ip
    assert f"{ip}\tweb\n" in path.read_text()
    assert path.read_text().endswith("10.1.2.3\tfoo\n")
    sandbox = node.runtime.sandbox_config(app.sandbox_id)
    assert sandbox.namespace_options == NamespaceOption()


def test_a_too_long_fqdn_fails_the_sandbox_with_an_event(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    pod = make_pod("web", ctr(), hostname="h" * 60, subdomain="s", set_hostname_as_fqdn=True)
    node.kubelet.set_pods([pod])
    node.run_until(lambda: bool(node.kubelet.views.recent_events(reason="FailedCreatePodSandBox")))
    event = node.kubelet.views.recent_events(name="web", reason="FailedCreatePodSandBox")[0]
    assert "too long" in event.message
    assert not node.runtime.list_sandboxes()


def test_dns_config_is_merged_per_policy() -> None:
    extra = PodDNSConfig(
        nameservers=("192.0.2.1",),
        searches=("my.dns.search.suffix",),
        options=(PodDNSConfigOption("ndots", "2"), PodDNSConfigOption("edns0")),
    )

    def dns(policy: str, **spec: Any) -> DNSConfig | None:
        pod = make_pod("p", ctr(), dns_policy=policy, dns_config=extra, **spec)
        return dns_config(
            pod, cluster_dns=("10.96.0.10",), cluster_domain="cluster.local", host=HOST
        )

    assert dns("None") == DNSConfig(("192.0.2.1",), ("my.dns.search.suffix",), ("ndots:2", "edns0"))
    assert dns("ClusterFirst") == DNSConfig(
        ("10.96.0.10", "192.0.2.53", "192.0.2.1"),
        (
            "default.svc.cluster.local",
            "svc.cluster.local",
            "cluster.local",
            "example.invalid",
            "my.dns.search.suffix",
        ),
        ("ndots:2", "edns0"),
    )
    assert dns("Default") == DNSConfig(
        ("192.0.2.53", "192.0.2.1"),
        ("example.invalid", "my.dns.search.suffix"),
        ("timeout:2", "ndots:2", "edns0"),
    )


def test_dns_policy_none_needs_a_nameserver() -> None:
    data = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "a", "image": "busybox:1.35"}],
            "dnsPolicy": "None",
            "dnsConfig": {"searches": ["a.b"], "options": [{"value": "1"}]},
        },
    }
    with pytest.raises(ValidationError) as info:
        pod_from_dict(data)
    assert [str(p) for p in info.value.problems] == [
        "spec.dnsConfig.nameservers: required: at least one nameserver when dnsPolicy is None",
        "spec.dnsConfig.options[0].name: required",
    ]


def test_pod_level_limits_cap_containers_without_their_own() -> None:
    pod = make_pod(
        "p",
        ctr("free"),
        ctr("own", resources=ResourceRequirements(limits={"memory": "32Mi"})),
        resources=ResourceRequirements(limits={"memory": "64Mi", "cpu": "500m"}),
    )
    free, own = (
        container_config(pod, c, restart_count=0, volume_paths={}) for c in pod.spec.containers
    )
    assert (free.memory_limit, free.cpu_quota) == (64 << 20, 50_000)
    assert (own.memory_limit, own.cpu_quota) == (32 << 20, 50_000)
    assert free.cpu_shares is None  # a pod limit is not the container's request


def test_pod_level_resources_rules() -> None:
    def problems(resources: dict[str, Any], container: dict[str, Any]) -> list[str]:
        data = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "a", "image": "busybox:1.35", "resources": container}],
                "resources": resources,
            },
        }
        with pytest.raises(ValidationError) as info:
            pod_from_dict(data)
        return [str(p) for p in info.value.problems]

    assert problems({"limits": {"example.com/dongle": "1"}}, {}) == [
        "spec.resources.limits[example.com/dongle]: unsupported pod-level resource"
        " 'example.com/dongle': must be cpu or memory"
    ]
    assert problems({"requests": {"cpu": "1"}}, {"requests": {"cpu": "2"}}) == [
        "spec.resources.requests[cpu]: must be at least the sum of the containers' cpu"
        " requests, got 1"
    ]


def test_host_pid_and_host_ipc_are_gated_like_privileged(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    node.kubelet.set_pods([make_pod("pid", ctr(), host_pid=True), make_pod("ok", ctr())])
    node.converge()
    assert node.running_names() == [("ok", "app")]
    status = node.status("pid")
    assert (status.phase, status.reason) == ("Failed", "HostNamespacesNotAllowed")
    assert "hostPID" in status.message and "allow_privileged" in status.message

    allowed = make_node(tmp_path / "allowed", allow_privileged=True)
    allowed.kubelet.set_pods([make_pod("pid", ctr(), host_pid=True, host_ipc=True)])
    allowed.converge()
    (app,) = allowed.runtime.list_containers()
    options = allowed.runtime.sandbox_config(app.sandbox_id).namespace_options
    assert (options.pid, options.ipc) == (NamespaceMode.NODE, NamespaceMode.NODE)


def test_share_process_namespace_with_host_pid_is_invalid() -> None:
    data = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "a", "image": "busybox:1.35"}],
            "shareProcessNamespace": True,
            "hostPID": True,
        },
    }
    with pytest.raises(ValidationError, match="cannot be set when hostPID is true"):
        pod_from_dict(data)
