"""/stats/summary and /metrics/resource on Docker: a running busybox container's figures."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    forever,
    make_pod,
    wait_pod,
)
from tests.engines.docker.helpers import wait_for

pytestmark = pytest.mark.docker

# Busy a little, all the time: a CPU rate between any two reads is above zero.
SPIN = "echo started; while :; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; sleep 0.1; done"


def busy_container(summary: dict[str, Any], namespace: str) -> dict[str, Any] | None:
    for pod in summary["pods"]:
        if pod["podRef"]["namespace"] == namespace and pod["containers"]:
            containers: list[dict[str, Any]] = pod["containers"]
            return containers[0]
    return None


def test_the_summary_has_a_running_containers_cpu_and_memory(
    make_agent: AgentFactory, engine: TestEngine, namespace: str
) -> None:
    pod = make_pod(
        "busy",
        namespace,
        [
            container(
                "spin",
                engine.image,
                forever(SPIN),
            )
        ],
    )
    # A node name of its own: agents of other tests on the shared engine leave its pod alone.
    kubelet = make_agent([pod], node_name=f"stats-{namespace}")
    wait_pod(kubelet, namespace, "busy", all_running)

    first = wait_for(
        lambda: busy_container(kubelet.views.stats_summary(), namespace), 30, what="the stats"
    )
    assert first["name"] == "spin"
    assert first["cpu"]["usageCoreNanoSeconds"] > 0
    assert first["memory"]["workingSetBytes"] > 0
    assert first["memory"]["usageBytes"] > 0
    assert "usedBytes" in first["rootfs"], "the writable layer's size"
    # the log file of the line it printed
    wait_for(
        lambda: (
            (busy_container(kubelet.views.stats_summary(), namespace) or {})
            .get("logs", {})
            .get("usedBytes")
        ),
        30,
        what="the log's size",
    )
    # the rate needs two samples of the same container
    second = wait_for(
        lambda: (
            (c := busy_container(kubelet.views.stats_summary(), namespace))
            and "usageNanoCores" in c["cpu"]
            and c
        ),
        30,
        what="usageNanoCores",
    )
    assert second["cpu"]["usageNanoCores"] > 0

    text = kubelet.metrics.render_resource().decode()
    samples = [
        s
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "container_cpu_usage_seconds_total" and s.labels["namespace"] == namespace
    ]
    assert [s.labels["container"] for s in samples] == ["spin"] and samples[0].value > 0
