"""The node's pressure signals and the conditions they make (``kubecore._housekeeping.eviction``,
``kubecore._agent.node_pressure``, ``kubecore._api.node_status``): thresholds as
``--eviction-hard`` writes them, the host's own figures, and the kubelet's transition and
heartbeat times, on a scripted host."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore import KubeletConfig
from kubecore._agent.node_pressure import host_reader
from kubecore._api.node_status import ConditionsFile, Heartbeat, NodeConditions
from kubecore._contract.errors import InvalidKubeletConfig
from kubecore._housekeeping.eviction import (
    DEFAULT_EVICTION_HARD,
    SIGNALS,
    Filesystem,
    HostFigures,
    Summary,
    eviction_thresholds,
    parse_threshold,
    pressure_conditions,
)
from kubecore._util.timefmt import rfc3339

GiB = 1 << 30
CALM = HostFigures(
    memory_available=8 * GiB,
    memory_capacity=16 * GiB,
    nodefs=Filesystem(50 * GiB, 100 * GiB, 900, 1000),
    imagefs=None,
    pid_max=4_194_304,
    processes=300,
)


def test_thresholds_parse_as_the_kubelet_writes_them() -> None:
    memory = parse_threshold("memory.available<100Mi")
    assert memory.quantity == 100 * 1024 * 1024 and memory.percent is None
    assert str(memory) == "memory.available<100Mi"
    disk = parse_threshold(" nodefs.available < 10% ")
    assert disk.percent == 10 and disk.limit(1000) == 100
    assert str(disk) == "nodefs.available<10%"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("memory.available=100Mi", "expected SIGNAL<QUANTITY"),
        ("memory.free<1Gi", "unknown signal 'memory.free'"),
        ("nodefs.available<110%", "from 0% to 100%"),
        ("nodefs.available<x%", "not a percentage"),
        ("memory.available<lots", "memory.available<lots"),
        ("memory.available<-1Mi", "cannot be negative"),
    ],
)
def test_a_bad_threshold_names_what_is_wrong(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why.replace("(", r"\(")):
        parse_threshold(text)


@given(st.text(max_size=40))
@example("pid.available<")
@example("nodefs.available<NaN%")
@example("nodefs.available<Infinity%")
def test_any_text_parses_or_is_a_value_error(text: str) -> None:
    try:
        threshold = parse_threshold(text)
    except ValueError:
        return
    assert threshold.signal in SIGNALS
    assert (threshold.quantity is None) != (threshold.percent is None)


def test_entries_replace_the_defaults_signal_by_signal() -> None:
    defaults = eviction_thresholds(())
    assert {s: str(t) for s, t in defaults.items()} == {
        s: f"{s}<{v}" for s, v in DEFAULT_EVICTION_HARD.items()
    }
    given_ = eviction_thresholds(["memory.available<1Gi,pid.available<10%"])
    assert given_["memory.available"].quantity == GiB
    assert given_["pid.available"].percent == 10
    assert given_["nodefs.available"] == defaults["nodefs.available"]


def test_the_config_refuses_a_bad_threshold() -> None:
    assert KubeletConfig(eviction_hard=("memory.available<1Gi",)).eviction_hard
    with pytest.raises(InvalidKubeletConfig, match=r"eviction_hard: .*unknown signal"):
        KubeletConfig(eviction_hard=("swap.available<1Gi",))


def test_crossed_thresholds_make_each_condition() -> None:
    thresholds = eviction_thresholds(["pid.available<1000"])
    assert pressure_conditions(Summary(node=CALM), thresholds) == {}
    pressed = attrs.evolve(
        CALM,
        memory_available=50 << 20,
        nodefs=Filesystem(50 * GiB, 100 * GiB, 10, 1000),
        processes=4_194_000,
    )
    assert pressure_conditions(Summary(node=pressed), thresholds) == {
        "MemoryPressure": ["memory.available<100Mi"],
        "DiskPressure": ["nodefs.inodesFree<5%"],
        "PIDPressure": ["pid.available<1000"],
    }


def test_the_image_filesystem_is_the_node_filesystem_unless_the_runtime_has_its_own() -> None:
    thresholds = eviction_thresholds(())
    full_node = attrs.evolve(CALM, nodefs=Filesystem(12 * GiB, 100 * GiB))
    assert pressure_conditions(Summary(node=full_node), thresholds) == {
        "DiskPressure": ["imagefs.available<15%"]
    }
    separate = attrs.evolve(full_node, imagefs=Filesystem(90 * GiB, 100 * GiB))
    assert pressure_conditions(Summary(node=separate), thresholds) == {}


def test_unknown_figures_are_no_pressure() -> None:
    assert (
        pressure_conditions(Summary(node=HostFigures()), eviction_thresholds(["pid.available<99%"]))
        == {}
    )


def test_the_host_reader_reads_this_host(tmp_path: object) -> None:
    figures = host_reader(str(tmp_path))()
    assert figures.memory_capacity and figures.memory_available is not None
    assert 0 <= figures.memory_available <= figures.memory_capacity
    assert figures.nodefs is not None and 0 <= figures.nodefs.available <= figures.nodefs.capacity
    assert figures.pid_max and figures.processes and figures.processes < figures.pid_max
    assert figures.imagefs is None


@attrs.define
class _Host:
    figures: HostFigures = CALM

    def __call__(self) -> HostFigures:
        return self.figures


def _conditions(
    host: _Host, health: list[tuple[bool, str]] | None = None, events: list[str] | None = None
) -> NodeConditions:
    said = health or [(True, "ok")]
    seen = [] if events is None else events
    return NodeConditions(
        host, eviction_thresholds(()), lambda: said[0], on_status=lambda r, now: seen.append(r)
    )


def _by_type(conditions: list[dict[str, object]]) -> dict[object, dict[str, object]]:
    return {c["type"]: c for c in conditions}


def test_conditions_in_the_kubelets_order_with_its_words() -> None:
    shown = _conditions(_Host()).conditions(1000.0)
    assert [c["type"] for c in shown] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert [(c["status"], c["reason"], c["message"]) for c in shown] == [
        ("False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("True", "KubeletReady", "kubelet is posting ready status"),
    ]
    assert {c["lastTransitionTime"] for c in shown} == {rfc3339(1000.0)}


def test_transition_moves_only_when_a_status_flips_and_pressure_is_held() -> None:
    host = _Host()
    events: list[str] = []
    conditions = _conditions(host, events=events)
    conditions.conditions(1000.0)
    assert _by_type(conditions.conditions(1010.0))["Ready"]["lastHeartbeatTime"] == rfc3339(1000)
    host.figures = attrs.evolve(CALM, memory_available=10 << 20)
    shown = _by_type(conditions.conditions(1020.0))
    memory = shown["MemoryPressure"]
    assert (memory["status"], memory["reason"]) == ("True", "KubeletHasInsufficientMemory")
    assert "memory.available<100Mi" in str(memory["message"])
    assert memory["lastTransitionTime"] == rfc3339(1020) == memory["lastHeartbeatTime"]
    assert shown["Ready"]["lastTransitionTime"] == rfc3339(1000)
    assert shown["Ready"]["lastHeartbeatTime"] == rfc3339(1020)
    host.figures = CALM  # relieved, but held for the transition period
    held = _by_type(conditions.conditions(1020.0 + 299))["MemoryPressure"]
    assert held["status"] == "True" and held["lastTransitionTime"] == rfc3339(1020)
    over = _by_type(conditions.conditions(1020.0 + 300))["MemoryPressure"]
    assert over["status"] == "False" and over["lastTransitionTime"] == rfc3339(1320)
    assert events == [
        "NodeHasSufficientMemory",
        "NodeHasNoDiskPressure",
        "NodeHasSufficientPID",
        "NodeReady",
        "NodeHasInsufficientMemory",
        "NodeHasSufficientMemory",
    ]


def test_the_heartbeat_is_reported_every_five_minutes_when_nothing_changes() -> None:
    conditions = _conditions(_Host())
    conditions.conditions(1000.0)
    assert _by_type(conditions.conditions(1299.0))["Ready"]["lastHeartbeatTime"] == rfc3339(1000)
    ready = _by_type(conditions.conditions(1300.0))["Ready"]
    assert ready["lastHeartbeatTime"] == rfc3339(1300)
    assert ready["lastTransitionTime"] == rfc3339(1000)


def test_ready_follows_the_agents_health() -> None:
    health = [(True, "ok")]
    conditions = _conditions(_Host(), health)
    conditions.conditions(1000.0)
    health[0] = (False, "container runtime is down: gone")
    ready = _by_type(conditions.conditions(1005.0))["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "KubeletNotReady",
        "container runtime is down: gone",
    )
    assert ready["lastTransitionTime"] == rfc3339(1005)


def test_the_lease_is_renewed_every_ten_seconds_while_the_agent_runs() -> None:
    alive = [True]
    beat = Heartbeat(1000.0, lambda: alive[0])
    assert beat.renew_time(1009.9) == 1000.0
    assert beat.renew_time(1010.0) == 1010.0
    assert beat.renew_time(1047.0) == 1040.0
    alive[0] = False
    assert beat.renew_time(1100.0) == 1040.0
    alive[0] = True
    assert beat.renew_time(1100.0) == 1100.0
    assert Decimal(beat.interval) == 10


def test_statuses_and_transitions_are_kept_across_a_restart(tmp_path: Path) -> None:
    health = [(True, "ok")]
    events: list[tuple[str, float]] = []

    def started() -> NodeConditions:
        return NodeConditions(
            _Host(),
            eviction_thresholds(()),
            lambda: health[0],
            on_status=lambda reason, now: events.append((reason, now)),
            kept=ConditionsFile(str(tmp_path)),
        )

    started().conditions(1000.0)
    events.clear()
    again = started()  # the restart: each status's event again, with its first date
    assert ("NodeReady", 1000.0) in events and len(events) == 4
    ready = _by_type(again.conditions(2000.0))["Ready"]
    assert (ready["lastTransitionTime"], ready["lastHeartbeatTime"]) == (
        rfc3339(1000),
        rfc3339(2000),
    )
    assert len(events) == 4  # nothing flipped
    health[0] = (False, "runtime down")
    again.conditions(2500.0)
    health[0] = (True, "ok")
    ready = _by_type(started().conditions(3000.0))["Ready"]  # down at 2500, up again at 3000
    assert ready["lastTransitionTime"] == rfc3339(3000)
    # The restart's NotReady of 2500 again, then the flip back at 3000.
    assert events[-2:] == [("NodeNotReady", 2500.0), ("NodeReady", 3000.0)]
