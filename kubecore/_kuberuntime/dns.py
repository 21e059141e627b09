"""A pod's resolver settings (``dns_config``) from its DNS policy, its ``dnsConfig`` and the
host's resolv.conf (``parse_resolv_conf``), capped as today's kubelet caps them
(validation.MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars)."""

from __future__ import annotations

import attrs

from kubecore._contract.values import DNSConfig
from kubecore._model.v1 import Pod, PodDNSConfig

MAX_DNS_NAMESERVERS = 3


MAX_DNS_SEARCH_PATHS = 32


MAX_DNS_SEARCH_CHARS = 2048


CLUSTER_FIRST_OPTIONS = ("ndots:5",)


@attrs.frozen
class ResolvConf:
    """What a resolv.conf file says."""

    nameservers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[str, ...] = ()


def parse_resolv_conf(text: str) -> ResolvConf:
    """Read resolv.conf text as the kubelet does.

    ``nameserver`` lines accumulate, the last ``search`` line wins, ``options`` accumulate (a later
    option of the same name replaces an earlier one); comments (``#``, ``;``) and blank lines are
    ignored.
    """
    nameservers: list[str] = []
    searches: list[str] = []
    options: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith(("#", ";")):
            continue
        key, values = fields[0], fields[1:]
        if key == "nameserver":
            nameservers.extend(values)
        elif key == "search":
            searches = [s.rstrip(".") for s in values if s != "."]
        elif key == "options":
            for option in values:
                options.pop(option.split(":", 1)[0], None)
                options[option.split(":", 1)[0]] = option
    return ResolvConf(tuple(nameservers), tuple(searches), tuple(options.values()))


def _unique(items: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _fit_searches(searches: tuple[str, ...]) -> tuple[str, ...]:
    kept: list[str] = []
    chars = 0
    for domain in searches[:MAX_DNS_SEARCH_PATHS]:
        # resolv.conf's search line: domains joined by single spaces.
        cost = len(domain) + (1 if kept else 0)
        if chars + cost > MAX_DNS_SEARCH_CHARS:
            break
        kept.append(domain)
        chars += cost
    return tuple(kept)


def _fit(
    servers: tuple[str, ...], searches: tuple[str, ...], options: tuple[str, ...]
) -> DNSConfig:
    return DNSConfig(
        servers=_unique(servers)[:MAX_DNS_NAMESERVERS],
        searches=_fit_searches(_unique(searches)),
        options=options,
    )


def dns_config(
    pod: Pod, *, cluster_dns: tuple[str, ...], cluster_domain: str, host: ResolvConf
) -> DNSConfig | None:
    """The pod's resolver settings for its DNS policy.

    * ``ClusterFirst``: the cluster DNS servers then the host's nameservers; search
      ``<ns>.svc.<domain>``, ``svc.<domain>``, ``<domain>``, then the host's; ``ndots:5``.
      A hostNetwork pod, or a node with no cluster DNS, gets ``Default`` instead.
    * ``ClusterFirstWithHostNet``: ``ClusterFirst``, even on the host network.
    * ``Default``: the host's resolv.conf (None when it says nothing: the runtime's default).
    * ``None``: an empty config (the pod names no resolver).

    ``spec.dnsConfig`` is then merged in, as the kubelet does: its nameservers and searches are
    appended (duplicates dropped), its options replace those of the same name.
    Lists are capped as today's kubelet does: 3 nameservers, 32 search domains / 2048 chars.
    """
    base = _policy_dns(pod, cluster_dns=cluster_dns, cluster_domain=cluster_domain, host=host)
    extra = pod.spec.dns_config
    if extra is None:
        return None if base is None else _fit(base.nameservers, base.searches, base.options)
    base = base or ResolvConf()
    return _fit(
        base.nameservers + extra.nameservers,
        base.searches + extra.searches,
        _merge_dns_options(base.options, extra),
    )


def _policy_dns(
    pod: Pod, *, cluster_dns: tuple[str, ...], cluster_domain: str, host: ResolvConf
) -> ResolvConf | None:
    policy = pod.spec.dns_policy
    if policy == "None":
        return ResolvConf()
    cluster_first = policy == "ClusterFirstWithHostNet" or (
        policy == "ClusterFirst" and not pod.spec.host_network
    )
    if cluster_first and cluster_dns:
        searches = host.searches
        if cluster_domain:
            ns = pod.metadata.namespace
            own = (f"{ns}.svc.{cluster_domain}", f"svc.{cluster_domain}", cluster_domain)
            searches = own + searches
        return ResolvConf(tuple(cluster_dns) + host.nameservers, searches, CLUSTER_FIRST_OPTIONS)
    if not (host.nameservers or host.searches or host.options):
        return None
    return host


def _merge_dns_options(options: tuple[str, ...], extra: PodDNSConfig) -> tuple[str, ...]:
    merged = {option.split(":", 1)[0]: option for option in options}
    for option in extra.options:
        merged[option.name] = f"{option.name}:{option.value}" if option.value else option.name
    return tuple(merged.values())
