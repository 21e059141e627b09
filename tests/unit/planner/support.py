"""The planner tests' comparison: ``plain`` (actions as a dict of simple values) and ``expect``
(the expected actions in that same form)."""

from __future__ import annotations

from typing import Any

import attrs

from kubecore._planner.actions import PodActions
from tests.builders import SB


def plain(actions: PodActions) -> dict[str, Any]:
    """Actions as a dict, kills as (id, reason), waits as (name, reason), starts as
    (index, restart count), for comparison."""
    d = attrs.asdict(actions, recurse=False)
    d["containers_to_kill"] = tuple((k.container_id, k.reason) for k in actions.containers_to_kill)
    d["waiting"] = tuple((w.name, w.reason) for w in actions.waiting)
    d["containers_to_start"] = tuple(
        (s.index, s.restart_count) for s in actions.containers_to_start
    )
    init = actions.next_init_container
    d["next_init_container"] = None if init is None else (init.index, init.restart_count)
    return d


def expect(**kw: Any) -> dict[str, Any]:
    """Expected actions: every field at its default unless given; kills and waits as pairs;
    starts as indexes with ``restart_counts`` (and ``init_restart_count``) beside them."""
    kw.setdefault("sandbox_id", "" if kw.get("create_sandbox") or kw.get("terminal") else SB)
    kills, waits = kw.pop("containers_to_kill", ()), kw.pop("waiting", ())
    starts = kw.pop("containers_to_start", ())
    counts = kw.pop("restart_counts", (0,) * len(starts))
    init, init_count = kw.pop("next_init_container", None), kw.pop("init_restart_count", 0)
    d = plain(PodActions(**kw))
    d["containers_to_kill"], d["waiting"] = tuple(kills), tuple(waits)
    d["containers_to_start"] = tuple(zip(starts, counts, strict=True))
    d["next_init_container"] = None if init is None else (init, init_count)
    return d
