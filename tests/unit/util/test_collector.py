"""The agent's collector settings hold while it runs and are undone when it stops."""

from __future__ import annotations

import gc

from kubecore._util.collector import YOUNG_THRESHOLD, agent_collector


def test_the_collector_is_tuned_while_the_agent_runs_and_restored_after() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    kept = [[object()] for _ in range(10)]  # tracked objects that exist at start-up
    with agent_collector():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() >= frozen + len(kept)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
