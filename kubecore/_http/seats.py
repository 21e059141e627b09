"""Who a connection belongs to and what it may be used for, as the bounded server
(``kubecore._http.serving``) shares its connections: per client (``client_of``), with the last
few kept for health checks (``HEALTH_PATHS``, ``seat_for``)."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

HEALTH_PATHS = ("/healthz", "/readyz", "/livez")
"""The paths a connection in the health reserve may ask for (and what is under them)."""


def client_of(address: Any) -> str:
    """Whose connection this is, for the per-client share: the IPv4 address (an IPv4-mapped IPv6
    one too), or the /64 network of a routed IPv6 address (one host may hold a whole /64)."""
    host = str(address[0] if isinstance(address, tuple) else address).partition("%")[0]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        if not (ip.is_loopback or ip.is_link_local):  # a link's neighbours share one /64
            return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def is_health_check(target: str) -> bool:
    """Whether a request target asks for a health check (``HEALTH_PATHS``)."""
    path = target.partition("?")[0]
    return any(path == p or path.startswith(p + "/") for p in HEALTH_PATHS)


Seat = Literal["any", "health", "none"]
"""What a new connection may be used for: any request, health checks only, or nothing (it is
refused)."""


def seat_for(open_here: int, open_all: int, *, per_client: int, most: int, reserve: int) -> Seat:
    """The seat a new connection gets from the counts of open ones (its client's, everyone's),
    once the idle ones that could be closed to make room have been: none past ``most`` in all,
    health checks only past ``per_client`` for its client or in the last ``reserve`` of
    ``most``."""
    if open_all >= most:
        return "none"
    if open_here >= per_client or open_all >= most - reserve:
        return "health"
    return "any"
