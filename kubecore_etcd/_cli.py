"""The operator's view of pods bound in etcd: ``kubecore etcd apply|delete|get``, and what
``kubecore run --etcd-endpoints ...`` needs.

Each command is a plain function returning text (tested directly); ``add_etcd_commands`` adds
them to the ``kubecore`` command as ``kubecore etcd ...`` (the plugin's
``kubecore_add_commands`` hook, ``kubecore_etcd._plugin``), each leaf with a
``kubecore.cli.CommandHandler``. ``attach`` builds the source and the status sink
``kubecore run`` adds when ``--etcd-endpoints`` is given.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import attrs

from kubecore import ValidationError
from kubecore.cli import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandSet,
    age,
    ready_and_restarts,
    text_table,
)
from kubecore.manifest import (
    load_manifest_lenient,
    object_to_dict,
    parse_document,
    pod_to_dict,
)
from kubecore_etcd._attach import DEFAULT_ENDPOINTS, Endpoints, etcd_config
from kubecore_etcd._client import EtcdClient, EtcdUnavailable
from kubecore_etcd._encoding import encode_json
from kubecore_etcd._keys import (
    DEFAULT_PREFIX,
    nodes_prefix,
    object_key,
    pod_key,
    pods_prefix,
    split_key,
    status_prefix,
)

if TYPE_CHECKING:
    from kubecore import Pod
    from kubecore.v1 import KubeObject

# --- the commands -------------------------------------------------------------------------------


def _documents_of(files: Iterable[str | Path]) -> tuple[list[Pod], list[KubeObject]]:
    """The pods, ConfigMaps and Secrets of manifest files; ``ValidationError`` on any problem."""
    pods: list[Pod] = []
    objects: list[KubeObject] = []
    for file in files:
        found, more, errors = load_manifest_lenient(Path(file))
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise ValidationError([p for e in errors for p in e.problems], str(file))
        pods.extend(found)
        objects.extend(more)
    return pods, objects


def _object_line(obj: KubeObject, verb: str) -> str:
    return f"{obj.kind.lower()}/{obj.metadata.name} ({obj.metadata.namespace}) {verb}"


def apply(
    files: Iterable[str | Path],
    node: str,
    endpoints: Endpoints,
    prefix: str = DEFAULT_PREFIX,
    **options: Any,
) -> str:
    """Bind every pod of the manifest files to ``node``: each is written (v1 JSON) under
    ``<prefix>/pods/<node>/<namespace>/<name>``; their ConfigMaps and Secrets go under
    ``<prefix>/configmaps/<namespace>/<name>`` and ``<prefix>/secrets/...`` (read by every
    node). Nothing is written when a file has a problem (``ValidationError``). Returns one
    ``pod/<name> bound to <node>`` or ``configmap/<name> (<namespace>) configured`` line each."""
    pods, objects = _documents_of(files)
    lines = []
    with EtcdClient(etcd_config(endpoints, **options)) as client:
        for obj in objects:  # before the pods, which may need them at once
            meta = obj.metadata
            key = object_key(prefix, obj.kind, meta.namespace, meta.name)
            value = encode_json(object_to_dict(obj))
            unchanged = client.get(key) == value
            client.put(key, value)
            lines.append(_object_line(obj, "unchanged" if unchanged else "configured"))
        for pod in pods:
            meta = pod.metadata
            key = pod_key(prefix, node, meta.namespace, meta.name)
            value = encode_json(pod_to_dict(pod))
            unchanged = client.get(key) == value
            client.put(key, value)
            verb = "unchanged" if unchanged else "bound to"
            lines.append(f"pod/{meta.name} ({meta.namespace}) {verb} {node}")
    return "".join(line + "\n" for line in lines)


def delete(
    node: str,
    endpoints: Endpoints,
    prefix: str = DEFAULT_PREFIX,
    *,
    names: Iterable[str] = (),
    files: Iterable[str | Path] = (),
    namespace: str = "default",
    all_pods: bool = False,
    **options: Any,
) -> str:
    """Unbind pods from ``node``: by name (in ``namespace``), the pods of manifest files, or all of
    them (``all_pods``). Returns one line per pod."""
    targets = [(namespace, name) for name in names]
    pods, objects = _documents_of(files)
    targets += [(p.metadata.namespace, p.metadata.name) for p in pods]
    lines = []
    with EtcdClient(etcd_config(endpoints, **options)) as client:
        for obj in objects:
            meta = obj.metadata
            deleted = client.delete(object_key(prefix, obj.kind, meta.namespace, meta.name))
            lines.append(_object_line(obj, "deleted" if deleted else "not found"))
        if all_pods:
            bound, _ = client.get_prefix(pods_prefix(prefix, node))
            targets += [
                where
                for key in sorted(bound)
                if (where := split_key(key, pods_prefix(prefix, node)))
            ]
        for ns, name in dict.fromkeys(targets):
            deleted = client.delete(pod_key(prefix, node, ns, name))
            state = "deleted from" if deleted else "not found on"
            lines.append(f"pod/{name} ({ns}) {state} {node}")
    return "".join(line + "\n" for line in lines)


@attrs.frozen
class PodLine:
    namespace: str
    name: str
    node: str
    ready: str
    status: str
    restarts: int
    age: str


def _status_text(document: dict[str, Any]) -> str:
    """What kubectl's STATUS column shows: a container's waiting or terminated reason, else the
    pod's reason, else its phase."""
    status = document.get("status") or {}
    for container in status.get("containerStatuses") or ():
        state = container.get("state") or {}
        for kind in ("waiting", "terminated"):
            reason = (state.get(kind) or {}).get("reason")
            if reason:
                return str(reason)
    return str(status.get("reason") or status.get("phase") or "Pending")


def _pod_line(
    node: str, namespace: str, name: str, document: dict[str, Any], now: float
) -> PodLine:
    ready, restarts = ready_and_restarts(document)
    return PodLine(
        namespace=namespace,
        name=name,
        node=node,
        ready=ready,
        status=_status_text(document),
        restarts=restarts,
        age=age((document.get("status") or {}).get("startTime", ""), now),
    )


def _document(value: bytes) -> dict[str, Any]:
    """A stored JSON or YAML object, or {} when it is not one."""
    try:
        data = parse_document(value)
    except ValidationError:
        return {}
    return data if isinstance(data, dict) else {}


def _split_node_key(key: str, base: str) -> tuple[str, str, str] | None:
    """``(node, namespace, name)`` of ``<base><node>/<namespace>/<name>``."""
    parts = key[len(base) :].split("/")
    if not key.startswith(base) or len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]


def get_pods(
    endpoints: Endpoints,
    prefix: str = DEFAULT_PREFIX,
    *,
    node: str | None = None,
    namespace: str = "default",
    all_namespaces: bool = False,
    now: float | None = None,
    **options: Any,
) -> str:
    """The kubectl-style table of the bound pods (of ``node``, or of every node) read from the
    status keys the agents write: ``NAME READY STATUS RESTARTS AGE NODE`` (``NAMESPACE`` first
    with ``all_namespaces``). A pod bound but without a status yet shows as ``Pending``."""
    now = time.time() if now is None else now
    bound_base = pods_prefix(prefix, "")[:-1]
    status_base = status_prefix(prefix)
    with EtcdClient(etcd_config(endpoints, **options)) as client:
        bound_prefix = pods_prefix(prefix, node) if node else bound_base
        bound, _ = client.get_prefix(bound_prefix)
        written, _ = client.get_prefix(status_prefix(prefix, node) if node else status_base)
    documents: dict[tuple[str, str, str], dict[str, Any]] = {}
    for key, value in bound.items():
        where = _split_node_key(key, bound_base)
        if where is not None:
            documents[where] = {"spec": _document(value).get("spec")}
    for key, value in written.items():
        where = _split_node_key(key, status_base)
        if where is not None and where in documents:
            documents[where] = _document(value) or documents[where]
    lines = [
        _pod_line(n, ns, name, document, now)
        for (n, ns, name), document in documents.items()
        if all_namespaces or ns == namespace
    ]
    lines.sort(key=lambda line: (line.namespace, line.name, line.node))
    if not lines:
        scope = "" if all_namespaces else f" in namespace {namespace}"
        return f"No pods found{scope}.\n"
    header = ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "NODE"]
    rows = [[p.name, p.ready, p.status, str(p.restarts), p.age, p.node] for p in lines]
    if all_namespaces:
        header.insert(0, "NAMESPACE")
        for row, line in zip(rows, lines, strict=True):
            row.insert(0, line.namespace)
    return text_table(header, rows)


def _node_ready(document: dict[str, Any]) -> bool:
    conditions = (document.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def get_nodes(endpoints: Endpoints, prefix: str = DEFAULT_PREFIX, **options: Any) -> str:
    """``NAME STATUS PODS VERSION`` of every node: ``Ready`` / ``NotReady`` from the node keys,
    which live on the agents' leases. A node with pods bound but no node key (its agent is dead
    or cut off: its lease expired) is ``NotReady``."""
    base = pods_prefix(prefix, "")[:-1]
    with EtcdClient(etcd_config(endpoints, **options)) as client:
        nodes, _ = client.get_prefix(nodes_prefix(prefix))
        bound, _ = client.get_prefix(base)
    pods: dict[str, int] = {}
    for key in bound:
        where = _split_node_key(key, base)
        if where is not None:
            pods[where[0]] = pods.get(where[0], 0) + 1
    documents: dict[str, dict[str, Any]] = {name: {} for name in pods}
    for key, value in nodes.items():
        documents[key[len(nodes_prefix(prefix)) :]] = _document(value)
    if not documents:
        return "No nodes found.\n"
    rows = []
    for name in sorted(documents):
        document = documents[name]
        version = ((document.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
        status = "Ready" if _node_ready(document) else "NotReady"
        rows.append([name, status, str(pods.get(name, 0)), version or "<unknown>"])
    return text_table(["NAME", "STATUS", "PODS", "VERSION"], rows)


# --- argparse -----------------------------------------------------------------------------------


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """``--etcd-endpoints``, ``--etcd-prefix``, the TLS files and ``--etcd-user``."""
    parser.add_argument(
        "--etcd-endpoints",
        default=DEFAULT_ENDPOINTS,
        metavar="URLS",
        help=f"comma-separated etcd URLs, http:// or https:// (default: {DEFAULT_ENDPOINTS})",
    )
    parser.add_argument(
        "--etcd-prefix",
        default=DEFAULT_PREFIX,
        metavar="PREFIX",
        help=f"the key prefix of the layout (default: {DEFAULT_PREFIX})",
    )
    parser.add_argument("--etcd-cafile", default="", metavar="FILE", help="CA bundle for TLS")
    parser.add_argument("--etcd-certfile", default="", metavar="FILE", help="client certificate")
    parser.add_argument("--etcd-keyfile", default="", metavar="FILE", help="client key")
    parser.add_argument(
        "--etcd-user", default="", metavar="USER[:PASSWORD]", help="etcd user (and password)"
    )


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "cafile": args.etcd_cafile,
        "certfile": args.etcd_certfile,
        "keyfile": args.etcd_keyfile,
        "user": args.etcd_user,
    }


def _run_command(out: IO[str], produce: Any) -> int:
    try:
        out.write(produce())
    except EtcdUnavailable as error:
        sys.stderr.write(f"kubecore etcd: {error}\n")
        return EXIT_FAILED
    except ValueError as error:  # a bad endpoint, a bad manifest (ValidationError)
        sys.stderr.write(f"kubecore etcd: {error}\n")
        return EXIT_FAILED
    except OSError as error:  # a manifest or TLS file that cannot be read
        sys.stderr.write(f"kubecore etcd: {error}\n")
        return EXIT_FAILED
    return EXIT_OK


def cmd_apply(args: argparse.Namespace, out: IO[str]) -> int:
    return _run_command(
        out,
        lambda: apply(
            args.files, args.node, args.etcd_endpoints, args.etcd_prefix, **_options(args)
        ),
    )


def cmd_delete(args: argparse.Namespace, out: IO[str]) -> int:
    if not (args.names or args.files or args.all):
        sys.stderr.write("kubecore etcd delete: give pod names, -f FILE or --all\n")
        return EXIT_USAGE
    return _run_command(
        out,
        lambda: delete(
            args.node,
            args.etcd_endpoints,
            args.etcd_prefix,
            names=args.names,
            files=args.files,
            namespace=args.namespace,
            all_pods=args.all,
            **_options(args),
        ),
    )


def cmd_get(args: argparse.Namespace, out: IO[str]) -> int:
    if args.what in ("nodes", "node", "no"):
        return _run_command(
            out, lambda: get_nodes(args.etcd_endpoints, args.etcd_prefix, **_options(args))
        )
    return _run_command(
        out,
        lambda: get_pods(
            args.etcd_endpoints,
            args.etcd_prefix,
            node=args.node,
            namespace=args.namespace,
            all_namespaces=args.all_namespaces,
            **_options(args),
        ),
    )


def add_etcd_commands(commands: CommandSet) -> argparse.ArgumentParser:
    """Add ``kubecore etcd apply|delete|get`` to the ``kubecore`` command; each leaf sets a
    ``handler(args, out) -> exit status``."""
    etcd = commands.add(
        "etcd",
        help="bind pods to nodes in etcd and read their status",
        description=(
            "The operator's view of a cluster of kubecore agents fed from etcd: bind pods to "
            "nodes, unbind them, list pods (from the status keys the agents write) and nodes "
            "(Ready while their agent's lease lives)."
        ),
    )
    leaves = etcd.add_subparsers(dest="etcd_command", metavar="COMMAND", required=True)

    apply_parser = leaves.add_parser("apply", help="bind the pods of manifest files to a node")
    apply_parser.add_argument(
        "-f", "--filename", dest="files", action="append", required=True, metavar="FILE"
    )
    apply_parser.add_argument("--node", required=True, help="the node to bind the pods to")
    add_connection_flags(apply_parser)
    apply_parser.set_defaults(handler=cmd_apply)

    delete_parser = leaves.add_parser("delete", help="unbind pods from a node")
    delete_parser.add_argument("names", nargs="*", metavar="POD", help="pod names")
    delete_parser.add_argument(
        "-f", "--filename", dest="files", action="append", default=[], metavar="FILE"
    )
    delete_parser.add_argument("--node", required=True)
    delete_parser.add_argument("-n", "--namespace", default="default")
    delete_parser.add_argument("--all", action="store_true", help="every pod bound to the node")
    add_connection_flags(delete_parser)
    delete_parser.set_defaults(handler=cmd_delete)

    get_parser = leaves.add_parser("get", help="list pods or nodes")
    get_parser.add_argument("what", choices=("pods", "pod", "po", "nodes", "node", "no"))
    get_parser.add_argument("--node", default=None, help="only the pods of this node")
    get_parser.add_argument("-n", "--namespace", default="default")
    get_parser.add_argument("-A", "--all-namespaces", action="store_true")
    add_connection_flags(get_parser)
    get_parser.set_defaults(handler=cmd_get)
    return etcd
