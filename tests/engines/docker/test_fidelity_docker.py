"""On the real Docker engine: the pod as the API server shows it (ids in docker:// form, the
sandbox's IP, the image id) and log queries that read the previous instance."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    make_pod,
    status_of,
    wait_pod,
)
from tests.engines.docker.helpers import wait_for

pytestmark = pytest.mark.docker

# Exits 3 the first time (its emptyDir remembers it), then serves.
ONCE_THEN_SERVE = [
    "sh",
    "-c",
    "trap 'exit 0' TERM; if [ -f /state/ran ]; then echo second-run;"
    " while :; do sleep 1 & wait $!; done; else touch /state/ran; echo first-run; exit 3; fi",
]


def test_status_and_previous_logs_on_docker(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any, test_uid: str
) -> None:
    pod = make_pod(
        "twice",
        namespace,
        [
            container(
                "main",
                engine.image,
                ONCE_THEN_SERVE,
                volumeMounts=[{"name": "state", "mountPath": "/state"}],
                resources={"limits": {"cpu": "100m", "memory": "32Mi"}},
            )
        ],
        volumes=[{"name": "state", "emptyDir": {}}],
    )
    kubelet = make_agent([pod], host_ip="192.0.2.44")
    shown = wait_pod(
        kubelet,
        namespace,
        "twice",
        lambda p: (
            all_running(p) and (s := status_of(p, "main")) is not None and s.restart_count == 1
        ),
        timeout=40,
        what="the restarted container",
    )
    status = shown.status
    assert status is not None
    main = status_of(shown, "main")
    assert main is not None
    scheme, _, engine_id = main.container_id.partition("://")
    assert scheme == "docker"
    inspected = raw.inspect_container(engine_id)
    assert inspected["Id"] == engine_id
    assert main.image_id and main.image_id == inspected["Image"]
    assert main.started
    previous = main.last_state.terminated
    assert previous is not None and previous.exit_code == 3
    assert previous.container_id.startswith("docker://")

    # the pod's IP is its sandbox's address on the engine's network
    sandbox = raw.inspect_container(inspected["HostConfig"]["NetworkMode"].split(":", 1)[1])
    addresses = {n["IPAddress"] for n in sandbox["NetworkSettings"]["Networks"].values()}
    assert status.pod_ip in addresses and [p.ip for p in status.pod_ips] == [status.pod_ip]
    assert [h.ip for h in status.host_ips] == ["192.0.2.44"]
    assert status.qos_class == "Guaranteed"
    assert shown.spec.node_name == f"e2e-node-{test_uid}" and shown.metadata.creation_timestamp

    assert b"".join(kubelet.streams.logs(namespace, "twice", "main", previous=True)) == (
        b"first-run\n"
    )
    # Running is reported once the engine started it: its first line may come a moment later.
    current = wait_for(
        lambda: b"".join(kubelet.streams.logs(namespace, "twice", "main")),
        timeout=30,
        what="the second run's log line",
    )
    assert current == b"second-run\n"
    assert b"".join(kubelet.streams.logs(namespace, "twice", "main", limit_bytes=6)) == (b"second")
    stamped = b"".join(kubelet.streams.logs(namespace, "twice", "main", timestamps=True))
    assert stamped.startswith(b"20") and stamped.endswith(b" second-run\n")
