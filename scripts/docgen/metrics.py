"""The metrics reference: every family the agent serves, read from its definitions in
``kubecore._observability.metrics`` (name, type, labels, help) and from the etcd source's
collector."""

from __future__ import annotations

from typing import Any

from scripts.docgen.codescan import loaded
from scripts.docgen.markdown import code, table

_TYPES = {"Gauge": "gauge", "Counter": "counter", "Histogram": "histogram"}


def _kind(family: Any) -> str:
    name = family.kind.__name__
    return _TYPES.get(name, "counter")


def _rows(families: Any) -> list[tuple[str, ...]]:
    return [
        (
            code(family.name),
            _kind(family),
            ", ".join(code(label) for label in family.labels),
            family.documentation,
        )
        for family in families
    ]


def _resource_rows() -> list[tuple[str, ...]]:
    metrics = loaded("kubecore._observability.metrics")
    rows = []
    for family in metrics._resource_families().values():
        name = family.name + ("_total" if family.type == "counter" else "")
        labels = ", ".join(code(label) for label in family._labelnames)
        rows.append((code(name), family.type, labels, family.documentation))
    return rows


def _etcd_rows() -> list[tuple[str, ...]]:
    """The etcd collector's families, collected from stand-ins for the parts it reads."""
    from types import SimpleNamespace as Part

    collector_module = loaded("kubecore_etcd._metrics")
    collector = collector_module.EtcdCollector(
        Part(requests=0),
        Part(ready=True, lists=0),
        Part(stats=Part(puts=0, deletes=0), pending=0),
        Part(written=0, dropped=0),
    )
    rows = []
    for family in collector.collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        labels = ", ".join(code(label) for label in getattr(family, "_labelnames", ()))
        rows.append((code(name), family.type, labels, family.documentation))
    return rows


def render() -> str:
    metrics = loaded("kubecore._observability.metrics")
    headers = ("name", "type", "labels", "help")
    return "\n".join(
        [
            "### `/metrics`",
            "",
            table(headers, _rows(metrics._MAIN_FAMILIES)),
            "### `/metrics/probes`",
            "",
            table(headers, _rows(metrics._PROBE_FAMILIES)),
            "### `/metrics/resource`",
            "",
            "Read from the stats summary at each scrape, with its timestamps.",
            "",
            table(headers, _resource_rows()),
            "### The etcd source's (`--etcd-endpoints`), on `/metrics`",
            "",
            table(headers, _etcd_rows()),
        ]
    )
