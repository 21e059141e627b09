"""Host ports at admission: a new pod that binds a host port (hostPort, or a container port of a
hostNetwork pod) an admitted pod already binds is refused; the earlier pod wins."""

from __future__ import annotations

from kubecore._model.rejection import Rejection
from kubecore._model.v1 import Pod

HOST_PORT_CONFLICT = "HostPortConflict"

HostPortsInUse = dict[tuple[int, str], set[str]]
"""(host port, protocol) -> the host IPs bound on it."""


HostPortKey = tuple[str, int, str]


def host_ports(pod: Pod) -> list[HostPortKey]:
    """(host IP, host port, protocol) of every port the pod binds on the host.

    hostNetwork pods bind their container ports on the host too. hostPort 0 binds nothing.
    """
    keys: list[HostPortKey] = []
    for container in (*pod.spec.init_containers, *pod.spec.containers):
        for port in container.ports:
            host_port = port.host_port
            if pod.spec.host_network and not host_port:
                host_port = port.container_port
            if host_port:
                keys.append((port.host_ip, host_port, (port.protocol or "TCP").upper()))
    return keys


def _conflicts(key: HostPortKey, used: HostPortsInUse) -> bool:
    ips = used.get((key[1], key[2]))
    if not ips:
        return False
    ip = key[0]
    wildcard = ("", "0.0.0.0", "::")
    return ip in wildcard or ip in ips or any(u in wildcard for u in ips)


def mark_used(pod: Pod, used: HostPortsInUse) -> None:
    """Count ``pod``'s host ports as bound."""
    for ip, port, proto in host_ports(pod):
        used.setdefault((port, proto), set()).add(ip)


def host_port_rejection(pod: Pod, used: HostPortsInUse) -> Rejection | None:
    """A host port of ``pod`` already bound (by an admitted pod, or twice by ``pod`` itself)."""
    mine: HostPortsInUse = {}
    for key in host_ports(pod):
        if _conflicts(key, used) or _conflicts(key, mine):
            ip, port, proto = key
            where = f"{ip}:{port}" if ip else str(port)
            owner = "this pod" if _conflicts(key, mine) else "another pod"
            return Rejection(
                HOST_PORT_CONFLICT,
                f"Pod was rejected: host port {where}/{proto} is already used by {owner}",
            )
        mine.setdefault((key[1], key[2]), set()).add(key[0])
    return None
