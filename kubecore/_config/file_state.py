"""What the file source knows of one manifest file: how it looked when last read, and the pods,
objects and text it contributes."""

from __future__ import annotations

import attrs

from kubecore._config.base import SourceProblem
from kubecore._model.v1 import KubeObject, Pod


@attrs.frozen
class Fingerprint:
    mtime_ns: int
    size: int
    ctime_ns: int = 0
    """A ``chmod`` changes only this."""
    sha256: str = ""
    inode: tuple[int, int] = (0, 0)
    """The file's device and inode ((0, 0): not known): another one is an atomic replace (a
    rename over it, what editors and config management do), evidence that the write is whole."""

    def replaced(self, before: Fingerprint) -> bool:
        """This is another file than ``before`` (a rename over it), as far as both are known."""
        return (0, 0) not in (self.inode, before.inode) and self.inode != before.inode

    def same_stat(self, other: Fingerprint) -> bool:
        return (self.mtime_ns, self.size, self.ctime_ns) == (
            other.mtime_ns,
            other.size,
            other.ctime_ns,
        )


@attrs.define
class FileState:
    fingerprint: Fingerprint
    pods: tuple[Pod, ...]
    """The pods this file contributes now: its last good pods when it has turned bad."""
    problem: SourceProblem | None = None
    objects: tuple[KubeObject, ...] = ()
    """Its ConfigMaps and Secrets, kept like its pods."""
    text: str = ""
    """The text ``pods`` and ``objects`` come from (what a restart reads back from memory)."""
    known: bool = True
    """False: the file has never been read (it could not be), so what it holds is unknown."""

    def before(self) -> tuple[tuple[Pod, ...], tuple[KubeObject, ...], str]:
        return self.pods, self.objects, self.text


def unreadable(state: FileState) -> bool:
    """The file could not be read the last time: it is read again at every scan."""
    return state.problem is not None and state.problem.errors[0].message.startswith(
        "cannot be read"
    )
