"""Container restart rules (KEP-5307) through the agent on every engine: under a Never pod,
the container whose exit code a rule matches is started again, the other stays exited."""

from __future__ import annotations

from kubecore._model.v1 import Pod
from kubecore.runtime import NODE_LABEL
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    container,
    make_pod,
    status_of,
    wait_pod,
)
from tests.engines.engine_support import EngineUnderTest

# Agents of other tests on a shared engine kill what carries no node label or their node's.
OWN_NODE = {NODE_LABEL: "restartrules-tests"}
ON_42 = [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]


def test_a_rule_restarts_the_container_whose_exit_code_it_matches(
    make_agent: AgentFactory,
    engine: EngineUnderTest,
    namespace: str,
) -> None:
    pod = make_pod(
        "job",
        namespace,
        [
            container(
                "ruled",
                engine.image,
                ["sh", "-c", "sleep 1; exit 42"],
                restartPolicy="Never",
                restartPolicyRules=ON_42,
            ),
            container(
                "other",
                engine.image,
                ["sh", "-c", "sleep 1; exit 3"],
                restartPolicy="Never",
                restartPolicyRules=ON_42,
            ),
        ],
        restartPolicy="Never",
    )
    kubelet = make_agent([pod], node_name=OWN_NODE[NODE_LABEL])

    def restarted(found: Pod) -> bool:
        ruled, other = status_of(found, "ruled"), status_of(found, "other")
        return (
            ruled is not None
            and ruled.restart_count >= 1
            and other is not None
            and other.state.terminated is not None
        )

    found = wait_pod(kubelet, namespace, "job", restarted, timeout=40, what="ruled restarted")
    assert found.status is not None and found.status.phase == "Running"
    ruled, other = status_of(found, "ruled"), status_of(found, "other")
    assert ruled is not None and other is not None
    last = ruled.last_state.terminated or ruled.state.terminated
    assert last is not None and last.exit_code == 42
    assert other.restart_count == 0
    assert other.state.terminated is not None and other.state.terminated.exit_code == 3
    # The engine has the exited run of ``ruled`` beside its new one, and ``other`` once.
    assert len(engine.containers(namespace, "ruled")) >= 2
    assert len(engine.containers(namespace, "other")) == 1
