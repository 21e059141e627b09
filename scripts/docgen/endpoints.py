"""The HTTP references: the kubelet's endpoints (``kubecore._http.server.ROUTES``) and the
node's Kubernetes API (its discovery documents in ``kubecore._api.discovery`` and the group
documents of ``kubecore._api.leases``), each with the query parameters and status codes its code
reads and answers (``scripts.docgen.codescan``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from scripts.docgen.codescan import loaded, module_statuses, scan
from scripts.docgen.markdown import code, rst_to_md, table

_BULLET = re.compile(r"^\* (.*?)(?=^\* |\Z)", re.DOTALL | re.MULTILINE)


def _statuses(codes: Iterable[int]) -> str:
    return ", ".join(f"{code} {HTTPStatus(code).phrase}" for code in sorted(set(codes)))


def _bullets(doc: str) -> list[str]:
    return [" ".join(match.group(1).split()) for match in _BULLET.finditer(doc)]


def _described(segment: str, bullets: list[str]) -> str:
    for bullet in bullets:
        if re.search(rf"``/{re.escape(segment)}[`/{{]", bullet):
            return rst_to_md(bullet)
    return ""


def _auth(called: set[str]) -> str:
    if called & {"require_bearer", "check_bearer"}:
        return "bearer token (`--exec-token-file`), only with `--enable-exec`"
    return "none (bind to loopback, or protect the port)"


def render_kubelet() -> str:
    server = loaded("kubecore._http.server")
    bullets = _bullets(server.__doc__ or "")
    rows = []
    for segment, (methods, route) in server.ROUTES.items():
        found = scan(route)
        rows.append(
            (
                f"`/{segment}`",
                methods.replace("|", ", "),
                _described(segment, bullets),
                ", ".join(code(name) for name in sorted(found.parameters)) or "none",
                _auth(found.called),
                _statuses({200, *found.statuses}),
            )
        )
    serving = loaded("kubecore._http.serving")
    everywhere = module_statuses(serving) | module_statuses(server)
    return "\n".join(
        [
            table(("path", "methods", "what", "query parameters", "auth", "status codes"), rows),
            "Any endpoint may also answer, from the server itself (framing, limits, load): "
            + _statuses(everywhere)
            + ". An error's body is a v1 `Status` (JSON) naming what is wrong.",
            "",
        ]
    )


_METHODS = {
    "get": "GET",
    "list": "GET",
    "watch": "GET `?watch=true`",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}


def _paths(prefix: str, resource: dict[str, Any]) -> str:
    name = resource["name"]
    base, _, sub = name.partition("/")
    if resource["namespaced"]:
        collection = f"{prefix}/namespaces/{{namespace}}/{base}"
        paths = [f"{prefix}/{base}", collection] if not sub else []
    else:
        collection = f"{prefix}/{base}"
        paths = [collection] if not sub else []
    item = f"{collection}/{{name}}" + (f"/{sub}" if sub else "")
    return "<br>".join(code(path) for path in [*paths, item])


def _resource_rows(prefix: str, document: dict[str, Any]) -> list[tuple[str, ...]]:
    rows = []
    for resource in document["resources"]:
        verbs = resource["verbs"]
        methods = sorted({_METHODS[verb] for verb in verbs}, key=list(_METHODS.values()).index)
        rows.append(
            (
                code(resource["name"]),
                resource["kind"],
                _paths(prefix, resource),
                ", ".join(verbs),
                ", ".join(methods),
                ", ".join(code(s) for s in resource.get("shortNames", [])),
            )
        )
    return rows


def _api_parameters() -> list[tuple[str, str]]:
    """Every query parameter the API's modules read, with the modules that read it."""
    import inspect
    import pkgutil

    api = loaded("kubecore._api")
    readers: dict[str, set[str]] = {}
    for info in pkgutil.iter_modules(api.__path__):
        module = loaded(f"kubecore._api.{info.name}")
        for _, function in inspect.getmembers(module, inspect.isfunction):
            if function.__module__ == module.__name__:
                _collect(function, readers)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                for _, method in inspect.getmembers(cls, inspect.isfunction):
                    if method.__module__ == module.__name__:
                        _collect(method, readers)
    return [(code(name), ", ".join(sorted(where))) for name, where in sorted(readers.items())]


def _collect(function: Any, readers: dict[str, set[str]]) -> None:
    found = scan(function)
    where = _room_module(function.__module__)
    for name in found.parameters:
        readers.setdefault(name, set()).add(where)


def _room_module(module: str) -> str:
    return module.removeprefix("kubecore.").removeprefix("_")


def render_kubernetes_api() -> str:
    discovery = loaded("kubecore._api.discovery")
    leases = loaded("kubecore._api.leases")
    rows = _resource_rows("/api/v1", discovery.API_RESOURCES)
    rows += _resource_rows(f"/apis/{leases.GROUP_VERSION}", leases.LEASE_RESOURCES)
    metrics_version = discovery.METRICS_RESOURCES["groupVersion"]
    rows += _resource_rows(f"/apis/{metrics_version}", discovery.METRICS_RESOURCES)
    api_modules = [loaded(f"kubecore._api.{name}") for name in _api_module_names()]
    api_modules.append(loaded("kubecore._apimachinery.rules"))  # the shared errors (401, ...)
    codes = set().union(*(module_statuses(module) for module in api_modules)) - {200, 201}
    major, minor = discovery.KUBERNETES_VERSION
    return "\n".join(
        [
            f"The subset follows Kubernetes {major}.{minor}. Discovery: "
            + ", ".join(code(f"/{head}") for head in sorted(discovery.API_HEADS))
            + ".",
            "",
            table(("resource", "kind", "paths", "verbs", "methods", "short names"), rows),
            "### Query parameters",
            "",
            "Read by the API's code (the module that reads each):",
            "",
            table(("parameter", "read in"), _api_parameters()),
            "Pod logs (`pods/{name}/log`) and the streams (`exec`, `attach`) also read the "
            "kubelet's log and stream options (see the kubelet endpoints above).",
            "",
            "### Status codes",
            "",
            "Besides 200 OK and 201 Created, the API's code answers: " + _statuses(codes) + ".",
            "",
        ]
    )


def _api_module_names() -> list[str]:
    import pkgutil

    return [info.name for info in pkgutil.iter_modules(loaded("kubecore._api").__path__)]
