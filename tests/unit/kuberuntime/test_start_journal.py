"""The start journal: a start begun and never ended (the agent killed in it) is told to the
next agent on the root dir, until the instance is dealt with."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubecore._kuberuntime.start_journal import StartJournal


def test_a_start_cut_off_is_known_to_the_next_agent_until_ended(tmp_path: Path) -> None:
    first = StartJournal(str(tmp_path))
    first.begin("done")
    first.end("done")
    first.begin("cut")  # the agent is killed here
    assert first.interrupted == frozenset()  # its own starts are not an earlier process's

    second = StartJournal(str(tmp_path))
    assert second.interrupted == frozenset({"cut"})
    second.end("cut")  # replaced
    assert second.interrupted == frozenset()
    assert StartJournal(str(tmp_path)).interrupted == frozenset()


@pytest.mark.parametrize("bad", ["", "../x", ".hidden", "a/b"])
def test_only_container_ids_name_files(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="not a container id"):
        StartJournal(str(tmp_path)).begin(bad)
