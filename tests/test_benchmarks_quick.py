"""The benchmark harness itself: formatting, request counting, call counting, one tiny run.

The full figures come from ``python -m benchmarks``; the test command also runs its quick mode.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests

from benchmarks.__main__ import BENCHMARKS, main
from benchmarks._common import Context, Row, Skip, fmt_ratio, fmt_value, render_table
from benchmarks._cpu import EngineSample, cpu_spent, state_dir_of
from benchmarks._cri import CallCounter, find_containerd
from benchmarks._docker import RequestCounter
from benchmarks._fake import release
from benchmarks._timing import WatchedRuntime
from benchmarks.sync_cost import measure
from kubecore._util.clock import ManualClock
from kubecore_fake import FakeRuntime


def test_values_are_formatted_with_their_units() -> None:
    assert fmt_value(0.0000123, "s") == "12.3 µs"
    assert fmt_value(2.5, "s") == "2.50 s"
    assert fmt_value(45_500, "B") == "45.5 kB"
    assert fmt_value(3.0, "req") == "3 req"
    assert fmt_value(None, "s") == "—"
    assert fmt_ratio(1234.0) == "1,234x"
    assert fmt_ratio(0.00012) == "0.00012x"


def test_ratio_needs_both_figures() -> None:
    assert Row("b", "f", 2.0, baseline=4.0).ratio == 0.5
    assert Row("b", "f", 2.0).ratio is None
    assert Row("b", "f", None, baseline=1.0).ratio is None


def test_the_table_says_which_targets_are_met() -> None:
    table = render_table(
        [
            Row("b", "fast", 1.0, "s", baseline=2.0, target="< 2 s", met=True),
            Row("b", "slow", 3.0, "s", baseline=2.0, target="< 2 s", met=False),
        ]
    )
    lines = table.splitlines()
    assert lines[0].startswith("| benchmark")
    assert "| yes" in lines[2] and "0.50x" in lines[2]
    assert "| no" in lines[3] and "1.50x" in lines[3]


def test_list_names_every_benchmark(capsys: object) -> None:
    assert main(["--list"]) == 0
    out = capsys.readouterr().out.split()  # type: ignore[attr-defined]
    assert out == list(BENCHMARKS)


def test_requests_are_counted_by_endpoint() -> None:
    counter = RequestCounter()
    for method, url in (
        ("GET", "http+docker://localhost/v1.41/containers/json?all=1"),
        ("GET", "http+docker://localhost/v1.41/containers/abc123/json"),
        ("DELETE", "http+docker://localhost/v1.41/containers/abc123?force=True"),
    ):
        counter.add(requests.Request(method, url).prepare())
    assert counter.total == 3
    assert counter.snapshot() == {
        "GET /containers/json": 1,
        "GET /containers/{id}/json": 1,
        "DELETE /containers/{id}": 1,
    }


def test_the_runtime_proxy_counts_calls_and_notes_starts() -> None:
    runtime = FakeRuntime(ManualClock())
    watch = WatchedRuntime(runtime)
    proxy = watch.proxy()
    proxy.snapshot()
    proxy.list_containers()
    assert watch.calls() == {"snapshot": 1, "list_containers": 1}
    assert watch.wait_for_start(1, timeout=0.0) is None


def test_a_steady_sync_makes_one_runtime_call() -> None:
    ctx = Context(name="sync_cost", quick=True, budget=5.0, command="test")
    try:
        rows = measure(ctx, 5, 5.0, largest=True)
    finally:
        release(5)
    calls = [r for r in rows if r.figure.endswith("runtime calls per sync")]
    assert [r.kubecore for r in calls] == [1.0, 1.0]
    assert all(r.met for r in calls)
    assert not any("did not converge" in note for note in ctx.notes)


def test_cri_calls_are_counted_by_method_where_they_leave_the_process() -> None:
    counter = CallCounter()
    unary, stream = counter.interceptors()
    seen = []

    def continuation(details: object, request: object) -> str:
        seen.append(request)
        return "answer"

    method = SimpleNamespace(method="/runtime.v1.RuntimeService/ListContainers")
    assert unary.intercept_unary_unary(continuation, method, "req") == "answer"
    events = SimpleNamespace(method="/runtime.v1.RuntimeService/GetContainerEvents")
    stream.intercept_unary_stream(continuation, events, "req")
    assert seen == ["req", "req"]
    assert counter.total == 2
    assert counter.snapshot() == {"ListContainers": 1, "GetContainerEvents": 1}


def test_no_test_containerd_is_a_skip_that_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KUBECORE_TEST_CRI_ENDPOINT", "")
    with pytest.raises(Skip, match="empty"):
        find_containerd()
    monkeypatch.setenv("KUBECORE_TEST_CRI_ENDPOINT", f"unix://{tmp_path}/none.sock")
    with pytest.raises(Skip, match="does not exist"):
        find_containerd()


def test_an_engines_cpu_is_read_from_its_processes_only() -> None:
    assert state_dir_of("unix:///var/tmp/engine/docker.sock") == "/var/tmp/engine"
    # No engine process names this directory: nothing is counted, the client's CPU is.
    with cpu_spent(f"/nonexistent-{os.getpid()}") as spent:
        sum(i * i for i in range(200_000))
    assert spent.engine == 0.0 and spent.shims == 0
    assert spent.client > 0.0
    assert EngineSample.take("/nonexistent").cpu == {}
