"""A cordoned node (``kubectl cordon``: the Node's ``spec.unschedulable``) admits no new pods
created over the node's API: there is no scheduler to keep them away, so admission does what the
scheduler's ``NodeUnschedulable`` filter does (a pod that tolerates the
``node.kubernetes.io/unschedulable:NoSchedule`` taint still comes in). The API's pods that
existed when the node was cordoned stay, and pods from manifest files or a URL (static pods) are
admitted as ever, as a kubelet runs them whatever its node's spec says.

The cordon is kept in the node's record, ``<root-dir>/node.json`` (mode 0600, written as the
API store writes its files: whole, flushed, renamed in), with the node's uid and creation time,
so that it survives a restart of the agent. ``NodeRecordFile`` reads and writes it; admission
reads it again only when the file changed."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable
from typing import Any

import attrs

from kubecore._config.updates import SourceName
from kubecore._manifest.identity import SOURCE_ANNOTATION
from kubecore._model.v1 import Pod, Toleration
from kubecore._util.files import replace_file

logger = logging.getLogger(__name__)

NODE_RECORD = "node.json"
"""The node's record in the root directory."""
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
"""The taint a cordoned node carries (effect NoSchedule), as the node controller sets it."""
NO_SCHEDULE = "NoSchedule"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
"""The rejection reason: the scheduler's filter of the same name."""


@attrs.frozen
class NodeRecord:
    """What the node keeps of its own Node object across restarts."""

    uid: str
    created: str
    """Its ``creationTimestamp`` (RFC 3339): when this root directory first served a Node."""
    unschedulable: bool = False
    cordoned_at: str = ""
    """When it was cordoned (RFC 3339): the taint's ``timeAdded``."""
    kept: tuple[str, ...] = ()
    """The uids of the API's pods when it was cordoned: they stay admitted."""
    refused: tuple[str, ...] = ()
    """The uids of the API's pods refused while it was cordoned: refused for good (after an
    uncordon and a restart too), as every rejection is."""

    def to_json(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "creationTimestamp": self.created,
            "unschedulable": self.unschedulable,
            "cordonedAt": self.cordoned_at,
            "kept": list(self.kept),
            "refused": list(self.refused),
        }


@attrs.frozen
class CordonView:
    """What admission reads of the record."""

    cordoned: bool
    kept: frozenset[str] = frozenset()
    refused: frozenset[str] = frozenset()


SCHEDULABLE = CordonView(False)


def record_from_json(document: object) -> NodeRecord:
    """The record a file holds; ``ValueError`` saying what is wrong with it."""
    if not isinstance(document, dict):
        raise ValueError("does not hold a JSON object")
    uid, created = document.get("uid"), document.get("creationTimestamp")
    unschedulable = document.get("unschedulable", False)
    cordoned_at = document.get("cordonedAt", "")
    kept, refused = document.get("kept", []), document.get("refused", [])
    if not isinstance(uid, str) or not uid or not isinstance(created, str) or not created:
        raise ValueError("needs a uid and a creationTimestamp (strings)")
    if not isinstance(unschedulable, bool) or not isinstance(cordoned_at, str):
        raise ValueError("unschedulable must be true or false and cordonedAt a string")
    for name, uids in (("kept", kept), ("refused", refused)):
        if not isinstance(uids, list) or not all(isinstance(u, str) for u in uids):
            raise ValueError(f"{name} must be a list of pod uids")
    return NodeRecord(uid, created, unschedulable, cordoned_at, tuple(kept), tuple(refused))


class NodeRecordFile:
    """The node's record at ``<root_dir>/node.json``."""

    def __init__(self, root_dir: str) -> None:
        self.path = os.path.join(os.path.abspath(root_dir), NODE_RECORD)
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._cached: NodeRecord | None = None
        self._problem = ""

    def load(self) -> NodeRecord | None:
        """The record (None: never written); ``ValueError`` naming the file and why it cannot
        be read (never guessed: the caller decides)."""
        try:
            with open(self.path, "rb") as file:
                raw = file.read()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise ValueError(f"{self.path}: {error.strerror or error}") from None
        try:
            return record_from_json(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, ValueError) as error:
            raise ValueError(f"{self.path}: {error}") from None

    def save(self, record: NodeRecord) -> None:
        """Write ``record`` atomically and durably (``OSError`` when it cannot be)."""
        os.makedirs(
            os.path.dirname(self.path), exist_ok=True
        )  # the root dir, as the agent makes it
        data = json.dumps(record.to_json(), indent=1, sort_keys=True).encode() + b"\n"
        replace_file(self.path, data)

    def cordon(self) -> CordonView:
        """For admission: whether the node is cordoned, the API pods it keeps and those it
        refused. Read again only when the file changed. A record that cannot be read is logged and
        taken as schedulable: refusing pods on a guess would stop, after a restart, the very
        pods that ran before."""
        with self._lock:
            try:
                stat = os.stat(self.path)
                seen: tuple[int, int, int] | None = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            except OSError:
                seen = None
            if seen is None or seen != self._seen:
                self._read(seen)
            record = self._cached
        if record is None:
            return SCHEDULABLE
        return CordonView(record.unschedulable, frozenset(record.kept), frozenset(record.refused))

    def _read(self, seen: tuple[int, int, int] | None) -> None:
        try:
            self._cached = self.load()
        except ValueError as error:
            logger.error(
                "the node's record cannot be read (%s): the node is taken as schedulable until"
                " it is fixed, removed, or written again by kubectl cordon/uncordon",
                error,
            )
            self._cached = None
        self._seen = seen


def tolerates_unschedulable(tolerations: Iterable[Toleration]) -> bool:
    """A toleration matches the ``node.kubernetes.io/unschedulable:NoSchedule`` taint."""
    for t in tolerations:
        if t.effect not in ("", NO_SCHEDULE):
            continue
        if t.operator == "Exists" and t.key in ("", UNSCHEDULABLE_TAINT):
            return True
        if t.key == UNSCHEDULABLE_TAINT and t.operator in ("", "Equal") and t.value == "":
            return True
    return False


def cordon_refusal(pod: Pod, view: CordonView, node_name: str) -> str | None:
    """Why the cordon keeps a new pod out (None: it does not): a pod created over the API since
    the node was cordoned that does not tolerate the unschedulable taint, or one refused so
    before."""
    source = pod.metadata.annotations.get(SOURCE_ANNOTATION, "")
    if source != SourceName.KUBE_APISERVER.value:
        return None
    if pod.uid in view.refused:
        return (
            f"Pod was rejected: node {node_name} was cordoned when the pod was created, and a"
            " rejection is final: create it again to have it run"
        )
    if not view.cordoned or pod.uid in view.kept or tolerates_unschedulable(pod.spec.tolerations):
        return None
    return (
        f"Pod was rejected: node {node_name} is cordoned (spec.unschedulable is true) and"
        f" admits no new pods; `kubectl uncordon {node_name}` lets them in again"
    )
