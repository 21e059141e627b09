"""A pod's hostname and domain, as its containers see them, and the ``/etc/hosts`` the kubelet
writes for it."""

from __future__ import annotations

from kubecore._model.v1 import Pod

MAX_HOSTNAME = 63


def _hostname(name: str) -> str:
    # As the kubelet: truncate to 63 and never end in '-' or '.'.
    return name[:MAX_HOSTNAME].rstrip("-.") if len(name) > MAX_HOSTNAME else name


MAX_FQDN = 64


def pod_hostname_and_domain(pod: Pod, cluster_domain: str) -> tuple[str, str]:
    """The pod's hostname (``spec.hostname``, else its name) and domain
    (``<subdomain>.<namespace>.svc.<cluster domain>`` when it has a subdomain, else '')."""
    spec = pod.spec
    hostname = spec.hostname or _hostname(pod.metadata.name)
    domain = ""
    if spec.subdomain and cluster_domain:
        domain = f"{spec.subdomain}.{pod.metadata.namespace}.svc.{cluster_domain}"
    return hostname, domain


def sandbox_hostname(pod: Pod, cluster_domain: str) -> str:
    """The hostname a pod's containers see: the FQDN when ``setHostnameAsFQDN`` and it has a
    domain. A FQDN longer than 64 characters raises ``ValueError`` (the kubelet's limit)."""
    hostname, domain = pod_hostname_and_domain(pod, cluster_domain)
    if not (pod.spec.set_hostname_as_fqdn and domain):
        return hostname
    fqdn = f"{hostname}.{domain}"
    if len(fqdn) > MAX_FQDN:
        raise ValueError(
            f"failed to construct FQDN from pod hostname and cluster domain, FQDN {fqdn} is too"
            f" long ({MAX_FQDN} characters is the max, {len(fqdn)} characters requested)"
        )
    return fqdn


_HOSTS_HEADER = """\
# Kubernetes-managed hosts file.
127.0.0.1\tlocalhost
::1\tlocalhost ip6-localhost ip6-loopback
fe00::0\tip6-localnet
fe00::0\tip6-mcastprefix
fe00::1\tip6-allnodes
fe00::2\tip6-allrouters
"""


def _host_alias_lines(pod: Pod) -> str:
    if not pod.spec.host_aliases:
        return ""
    lines = [f"{a.ip}\t{chr(9).join(a.hostnames)}\n" for a in pod.spec.host_aliases]
    return "\n# Entries added by HostAliases.\n" + "".join(lines)


def managed_hosts_file(
    pod: Pod, *, pod_ip: str, cluster_domain: str, node_hosts: str = ""
) -> str | None:
    """The ``/etc/hosts`` the kubelet writes for a pod (None: the pod keeps the runtime's own).

    A pod on the pod network gets localhost entries, its own IP with its FQDN and hostname, and
    its ``hostAliases``. A host-network pod sees the node's file (``node_hosts``), plus its
    ``hostAliases`` when it has some.
    """
    if pod.spec.host_network:
        if not pod.spec.host_aliases:
            return None
        return (
            "# Kubernetes-managed hosts file (host network).\n"
            + node_hosts
            + _host_alias_lines(pod)
        )
    hostname, domain = pod_hostname_and_domain(pod, cluster_domain)
    own = ""
    if pod_ip:
        own = (
            f"{pod_ip}\t{hostname}.{domain}\t{hostname}\n" if domain else f"{pod_ip}\t{hostname}\n"
        )
    return _HOSTS_HEADER + own + _host_alias_lines(pod)
