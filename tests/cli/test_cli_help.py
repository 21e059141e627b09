"""What a user reads first: ``kubecore run --help`` in groups as the kubelet's reference has
them, with examples; a mistyped runtime with the closest installed one; log lines named after
the rooms a user knows (``kubecore.agent``), not private modules."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

import kubecore
from kubecore._cli.run_help import RUN_FLAG_GROUPS
from kubecore._cli.settings import RUN_SETTINGS
from kubecore._util.log_names import ROOMS, RoomFormatter, room_of
from kubecore.runtime import UnknownRuntime
from tests.cli.support import run_args, run_cli
from tests.paths import REPO


def test_every_run_flag_is_in_exactly_one_group() -> None:
    grouped = [dest for _, _, dests in RUN_FLAG_GROUPS for dest in dests]
    assert sorted(grouped) == sorted(setting.dest for setting in RUN_SETTINGS)


def test_run_help_shows_the_groups_in_order_then_the_examples(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, _ = run_cli("run", "--help")
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("usage: kubecore run [flags] [MANIFEST ...]\n")
    places = [out.index(f"\n{title}:\n") for title, _, _ in RUN_FLAG_GROUPS]
    assert places == sorted(places)
    sources = out[places[0] : places[1]]
    assert "--manifest-url URL" in sources and "--etcd-endpoints URLS" in sources
    assert "--resync" not in sources
    examples = out.split("\nexamples:\n", 1)[1]
    assert "kubecore run examples/pods --runtime fake --once" in examples
    assert out.index("\nexamples:\n") > places[-1]


def test_an_unknown_runtime_suggests_the_closest_installed_one(tmp_path: Path) -> None:
    code, out, _ = run_cli(*run_args(tmp_path, "--runtime", "fkae", "--once"))
    assert code == 1
    assert "unknown runtime 'fkae' (did you mean fake?); installed runtimes: " in out
    with pytest.raises(UnknownRuntime, match=r"\(did you mean fake\?\)"):
        kubecore.load_runtime("faek")
    with pytest.raises(UnknownRuntime) as raised:
        kubecore.load_runtime("zzzzzz")
    assert "did you mean" not in str(raised.value)


@pytest.mark.parametrize(
    ("module", "room"),
    [
        ("kubecore._cli.output", "kubecore.cli"),
        ("kubecore._agent.pod_workers", "kubecore.agent"),
        ("kubecore._api.store", "kubecore.api"),
        ("kubecore._observability.events", "kubecore.events"),
        ("kubecore._observability.stats", "kubecore.observability"),
        ("kubecore._newfolder.x", "kubecore.newfolder"),
        ("kubecore.testing.conformance._harness", "kubecore.testing.conformance._harness"),
        ("kubecore_docker._runtime", "kubecore_docker"),
        ("kubecore", "kubecore"),
        ("watchfiles.main", "watchfiles.main"),
    ],
)
def test_a_log_line_names_the_room_not_the_private_module(module: str, room: str) -> None:
    assert room_of(module) == room


def test_every_private_folder_has_a_room_with_a_public_name() -> None:
    folders = {p.name for p in (REPO / "kubecore").iterdir() if p.is_dir() and p.name[0] == "_"}
    folders.discard("__pycache__")
    assert folders <= set(ROOMS), f"name the room of {sorted(folders - set(ROOMS))} in ROOMS"
    assert all("_" not in room_of(f"kubecore.{folder}.module") for folder in folders)


def test_the_formatter_names_the_room_and_leaves_the_record_as_it_was() -> None:
    record = logging.LogRecord("kubecore._cli.output", logging.INFO, __file__, 1, "hi", None, None)
    assert RoomFormatter("%(name)s: %(message)s").format(record) == "kubecore.cli: hi"
    assert record.name == "kubecore._cli.output"


def test_the_commands_log_lines_name_rooms(tmp_path: Path) -> None:
    from kubecore._cli.basic import setup_logging

    stream = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers = []
    try:
        setup_logging(logging.INFO)
        (handler,) = root.handlers
        assert isinstance(handler, logging.StreamHandler)
        handler.setStream(stream)
        logging.getLogger("kubecore._agent.kubelet").info("synced")
    finally:
        root.handlers, level = saved
        root.setLevel(level)
    assert " INFO kubecore.agent: synced" in stream.getvalue()
