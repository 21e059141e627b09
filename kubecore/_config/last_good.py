"""When a change to a manifest is acted on: a changed file must settle, and a change that takes
pods away (or a text cut short) must stay so for longer before the last good state gives way."""

from __future__ import annotations

from pathlib import Path

import attrs

from kubecore._config.base import pod_key
from kubecore._config.file_state import Fingerprint
from kubecore._config.objects import object_key
from kubecore._contract.errors import FieldError
from kubecore._model.v1 import KubeObject, Pod

DEFAULT_SETTLE = 0.5
"""Seconds a changed manifest file must stay unchanged before it is read (editors and ``cp``
write in place: a half-written file must not restart pods). Short, so that with the file watch a
complete edit is applied within a second."""

LOSS_SETTLE_FACTOR = 10
"""A file removed (or a URL body that serves less) must stay so ten times the settle time (5 s by
default) before it is acted on."""

IN_PLACE_SETTLE_FACTOR = 60
"""A file written in place (the same inode, not a rename over it) whose new text takes pods or
objects away, is its old text cut short, or changes a pod it had, must stay unchanged (size and
mtime) sixty times the settle time (30 s by default) before it is acted on: what a writer that
pauses (an editor saving in place, config management, ``scp``, a copy over a slow link) leaves
for a moment must neither kill the pods of the documents not written yet nor replace a pod's
containers twice. A rename over the file is a whole write: it is acted on after the settle."""


@attrs.define
class Pending:
    """A change seen but not acted on yet: the file must stay as it is for the settle time."""

    seen: Fingerprint | None
    """None: the file is gone."""
    since: float


class Settling:
    """The changes of one file source waiting to settle, and when its next poll is due."""

    def __init__(self) -> None:
        self.pending: dict[Path, Pending] = {}
        self.next_due: float | None = None

    def stable_for(self, path: Path, seen: Fingerprint | None, now: float) -> float:
        """Seconds ``path`` has been seen as ``seen`` (0 the first time)."""
        pending = self.pending.get(path)
        same = pending is not None and (
            pending.seen is seen
            or (pending.seen is not None and seen is not None and pending.seen.same_stat(seen))
        )
        if pending is None or not same:
            pending = self.pending[path] = Pending(seen, now)
        return now - pending.since

    def wait(self, now: float, stable: float, needed: float) -> bool:
        """True (and a poll asked for when it is over) while a file stable for ``stable`` seconds
        must wait ``needed``."""
        if stable >= needed:
            return False
        due = now + needed - stable
        if self.next_due is None or due < self.next_due:
            self.next_due = due
        return True

    def forget(self, path: Path) -> None:
        self.pending.pop(path, None)


def takes_away(
    before: tuple[tuple[Pod, ...], tuple[KubeObject, ...], str],
    pods: tuple[Pod, ...],
    objects: tuple[KubeObject, ...],
    text: str,
) -> bool:
    """Whether a new text (with ``pods`` and ``objects``) loses something ``before`` had: a pod
    or an object, or its end (the new text is a strict prefix of the old one: a write cut short
    rather than an edit)."""
    old_pods, old_objects, old_text = before
    if {pod_key(p) for p in old_pods} - {pod_key(p) for p in pods}:
        return True
    if {object_key(o) for o in old_objects} - {object_key(o) for o in objects}:
        return True
    return len(text) < len(old_text) and old_text.startswith(text)


def in_place_change(
    before: tuple[tuple[Pod, ...], tuple[KubeObject, ...], str],
    pods: tuple[Pod, ...],
    objects: tuple[KubeObject, ...],
    text: str,
) -> str:
    """What a new text, written in place, does that must wait for it to be whole: "holds less
    than before" (``takes_away``), "changes a pod", or "" (it only adds, or changes nothing the
    agent runs)."""
    if takes_away(before, pods, objects, text):
        return "holds less than before"
    old = {pod_key(p): p for p in before[0]}
    if any(pod_key(p) in old and old[pod_key(p)] != p for p in pods):
        return "changes a pod"
    return ""


def cut_mid_line(old_text: str, text: str) -> tuple[FieldError, ...]:
    """A text that is the last good one cut inside a line is a write that has not finished
    (a writer paused or died mid-file, a restart found it so): never a state, however long it
    stays, unlike a text cut at a line's end (the last lines or documents removed, which waits
    out the loss settle). Its last good pods are kept until it is written whole."""
    cut = len(text)
    if cut >= len(old_text) or not old_text.startswith(text) or text.endswith("\n"):
        return ()
    if old_text[cut] == "\n":
        return ()
    return (
        FieldError(
            "",
            "the text ends mid-line where its last good version went on: it is being written"
            " (or its writer stopped); its last good pods are kept until it is written whole",
        ),
    )
