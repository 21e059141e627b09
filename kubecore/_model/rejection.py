"""Why the agent refused a pod: the rule's reason and a message. A refused pod is not dropped: it
stays listed with phase Failed and this reason and message (the status manager), an event says
why, and the refusal is final for that pod UID (admission, eviction, deadlines)."""

from __future__ import annotations

import attrs


@attrs.frozen
class Rejection:
    reason: str
    """The rule that refused the pod (``HostPortConflict``, ``OutOfpods``, ...)."""
    message: str
