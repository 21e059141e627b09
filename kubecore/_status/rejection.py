"""Why the node refused or evicted a pod: the reason and message its status records."""

from __future__ import annotations

import attrs


@attrs.frozen
class Rejection:
    reason: str
    """The rule that refused the pod (``HostPortConflict``, ``OutOfpods``, ...)."""
    message: str
