"""Startup and readiness probes through the agent on every engine (Docker, then the CRI on
containerd): an exec startup probe holds the readiness probes back, an httpGet and a tcpSocket
readiness probe reach the pod at its IP, and a readiness failure makes the pod not ready without
restarting anything. (Liveness: test_agent_scenarios.py.)"""

from __future__ import annotations

from kubecore._model.v1 import Pod
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    container,
    make_pod,
    status_of,
    wait_pod,
)
from tests.engines.engine_support import EngineUnderTest

# busybox httpd serving /www from 2 s on, when it also says it has started; exits at once on TERM.
SLOW_HTTPD = [
    "sh",
    "-c",
    "trap 'exit 0' TERM; mkdir -p /www; echo ok > /www/ready; sleep 2; touch /tmp/started;"
    " httpd -f -p 8080 -h /www & wait $!",
]


def ready(pod: Pod) -> bool:
    status = pod.status
    return status is not None and any(
        c.type == "Ready" and c.status == "True" for c in status.conditions
    )


def test_startup_and_readiness_probes(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    probe = {"periodSeconds": 1, "failureThreshold": 1, "timeoutSeconds": 2}
    pod = make_pod(
        "probed",
        namespace,
        [
            container(
                "web",
                engine.image,
                SLOW_HTTPD,
                startupProbe={
                    "exec": {"command": ["test", "-f", "/tmp/started"]},
                    "periodSeconds": 1,
                    "failureThreshold": 30,
                },
                readinessProbe={"httpGet": {"path": "/ready", "port": 8080}, **probe},
            ),
            container(
                "side",
                engine.image,
                readinessProbe={"tcpSocket": {"port": 8080}, **probe},
            ),
        ],
    )
    kubelet = make_agent([pod])

    def started_not_ready(found: Pod) -> bool:
        web = status_of(found, "web")
        return web is not None and web.state.running is not None and not web.started

    # Before the startup probe succeeds the container is running, not started, and not ready.
    early = wait_pod(kubelet, namespace, "probed", started_not_ready, what="web not started")
    assert not ready(early)
    serving = wait_pod(kubelet, namespace, "probed", ready, timeout=30, what="the pod ready")
    web = status_of(serving, "web")
    assert web is not None and web.started and web.ready
    assert serving.status is not None and serving.status.pod_ip

    gone = kubelet.streams.exec(namespace, "probed", "web", ["rm", "/www/ready"])
    assert gone.exit_code == 0
    unready = wait_pod(
        kubelet, namespace, "probed", lambda p: not ready(p), timeout=15, what="not ready"
    )
    web, side = status_of(unready, "web"), status_of(unready, "side")
    assert web is not None and not web.ready and web.restart_count == 0
    assert side is not None and side.ready  # its TCP probe still connects
    events = kubelet.views.recent_events(namespace=namespace, name="probed", reason="Unhealthy")
    assert any("Readiness probe failed" in e.message for e in events), events
