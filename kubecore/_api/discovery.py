"""Discovery: what kubectl reads first to learn what the node serves (``/version``, ``/api``,
``/apis``, ``/api/v1``)."""

from __future__ import annotations

from typing import Any

from kubecore._api.leases import LEASE_GROUP
from kubecore._version import __version__

API_HEADS = frozenset({"api", "apis", "version", "openapi"})
"""The first path segments the Kubernetes API answers."""
KUBERNETES_VERSION = (1, 34)
"""The Kubernetes API level this subset serves: the newest fields of its Pod are 1.34's
(``restartPolicyRules``, ``env[].valueFrom.fileKeyRef``). kubectl warns past one minor version
of skew, as it would against a cluster of that version."""
API_GROUPS: dict[str, Any] = {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
API_GROUPS["groups"].append(LEASE_GROUP)


def version() -> dict[str, Any]:
    """``/version``: the Kubernetes version followed, with kubecore's own."""
    major, minor = KUBERNETES_VERSION
    return {
        "major": str(major),
        "minor": str(minor),
        "gitVersion": f"v{major}.{minor}.0+kubecore-{__version__}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "python",
        "compiler": "kubecore",
        "platform": "linux/amd64",
    }


def api_versions(host: str) -> dict[str, Any]:
    """``/api``, for a client that reached the node as ``host``."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    }


def _resource(
    name: str,
    kind: str,
    verbs: list[str],
    *,
    namespaced: bool = True,
    short: list[str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "singularName": "" if "/" in name else name.removesuffix("s"),
        "namespaced": namespaced,
        "kind": kind,
        "verbs": verbs,
    }
    if short:
        body["shortNames"] = short
    if "/" not in name:
        body["categories"] = ["all"] if name == "pods" else []
    return body


API_RESOURCES: dict[str, Any] = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        _resource(
            "pods",
            "Pod",
            ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            short=["po"],
        ),
        _resource("pods/attach", "PodAttachOptions", ["create", "get"]),
        _resource("pods/exec", "PodExecOptions", ["create", "get"]),
        _resource("pods/log", "Pod", ["get"]),
        _resource("pods/portforward", "PodPortForwardOptions", ["create", "get"]),
        _resource("pods/status", "Pod", ["get"]),
        _resource("events", "Event", ["get", "list", "watch"], short=["ev"]),
        _resource(
            "configmaps",
            "ConfigMap",
            ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            short=["cm"],
        ),
        _resource(
            "secrets",
            "Secret",
            ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        ),
        _resource("namespaces", "Namespace", ["get", "list"], namespaced=False, short=["ns"]),
        _resource(
            "nodes",
            "Node",
            ["get", "list", "patch", "update", "watch"],
            namespaced=False,
            short=["no"],
        ),
    ],
}

_CORE_NAMES = frozenset(r["name"] for r in API_RESOURCES["resources"] if "/" not in r["name"])
_NAMESPACED_NAMES = frozenset(
    r["name"] for r in API_RESOURCES["resources"] if "/" not in r["name"] and r["namespaced"]
)


def serves(segments: tuple[str, ...]) -> bool:
    """Whether the path names a document or a resource the node serves (whatever the verb): a
    request for anything else is answered 404, as ``GET`` of it is, never 405."""
    head = segments[:1]
    if head in (("version",), ("openapi",)) or segments in (("api",), ("apis",), ("api", "v1")):
        return True
    if head == ("apis",):
        return segments[1] in {group["name"] for group in API_GROUPS["groups"]}
    if segments[:2] != ("api", "v1"):
        return False
    rest = segments[2:]
    if rest[:1] == ("namespaces",) and len(rest) >= 3:
        return rest[2] in _NAMESPACED_NAMES
    return rest[0] in _CORE_NAMES


METRICS_RESOURCES: dict[str, Any] = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": "metrics.k8s.io/v1beta1",
    "resources": [
        # singular as the generic API server names them (the kind, lower case), so that
        # ``kubectl get podmetrics`` finds them and "pod" stays the core pods'
        {
            **_resource("nodes", "NodeMetrics", ["get", "list"], namespaced=False),
            "singularName": "nodemetrics",
            "categories": [],
        },
        {
            **_resource("pods", "PodMetrics", ["get", "list"]),
            "singularName": "podmetrics",
            "categories": [],  # not in ``kubectl get all``
        },
    ],
}
"""``/apis/metrics.k8s.io/v1beta1``: NodeMetrics and PodMetrics."""

METRICS_GROUP: dict[str, Any] = {
    "kind": "APIGroup",
    "apiVersion": "v1",
    "name": "metrics.k8s.io",
    "versions": [{"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}],
    "preferredVersion": {"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"},
}
"""The resource metrics group (``kubectl top``), as metrics-server registers it."""
API_GROUPS["groups"].append(
    {k: v for k, v in METRICS_GROUP.items() if k not in ("kind", "apiVersion")}
)
