"""securityContext end to end on every engine (Docker, then the CRI on containerd), seen from
inside the container: ``id``, ``/proc/self/status`` (capabilities, no_new_privs, seccomp), a
write to a read-only root, a Localhost seccomp profile, sysctls, and a non-root container's
termination message. What Docker itself was told is checked in
tests/engines/docker/test_security_docker.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    exec_until,
    make_pod,
    status_of,
    wait_pod,
)
from tests.engines.engine_support import EngineUnderTest
from tests.engines.security_support import (
    CAP_NET_ADMIN,
    DEFAULT_CAPABILITIES,
    SYSCTLS,
    audited_pod,
    demo_pod,
    locked_pod,
    tuned_pod,
)


@pytest.fixture
def agent(make_agent: AgentFactory, namespace: str) -> AgentFactory:
    """Agents named after the test's namespace: the engines are shared, and an agent removes
    what its own node name made but it does not want."""

    def make(pods: list[Any], **config: Any) -> Kubelet:
        config.setdefault("node_name", namespace)
        return make_agent(pods, **config)

    return make


def run(kubelet: Kubelet, ns: str, pod: str, name: str, script: str) -> str:
    result = exec_until(kubelet, ns, pod, name, ["sh", "-c", script])
    assert result.exit_code == 0, result
    return result.stdout.decode().strip()


def status_line(kubelet: Kubelet, ns: str, pod: str, name: str, key: str) -> str:
    return run(kubelet, ns, pod, name, f"grep '^{key}:' /proc/self/status | cut -f2")


def test_the_docs_security_context_demo(
    agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    kubelet = agent([demo_pod(namespace, engine.image)])
    wait_pod(kubelet, namespace, "demo", all_running)
    assert run(kubelet, namespace, "demo", "app", "id -u") == "1000"
    assert run(kubelet, namespace, "demo", "app", "id -g") == "3000"
    assert set(run(kubelet, namespace, "demo", "app", "id -G").split()) == {"3000", "2000", "4000"}
    assert status_line(kubelet, namespace, "demo", "app", "NoNewPrivs") == "1"
    # fsGroup: the non-root user writes into the emptyDir, and the file joins group 2000.
    written = run(
        kubelet,
        namespace,
        "demo",
        "app",
        "echo hello > /data/demo/testfile; stat -c %g:%u /data/demo/testfile",
    )
    assert written == "2000:1000"


def test_capabilities_read_only_root_and_seccomp(
    agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    kubelet = agent([locked_pod(namespace, engine.image)], pod_security="privileged")
    wait_pod(kubelet, namespace, "locked", all_running)
    assert status_line(kubelet, namespace, "locked", "app", "CapEff") == CAP_NET_ADMIN
    assert status_line(kubelet, namespace, "locked", "app", "Seccomp") == "0"
    refused = kubelet.streams.exec(namespace, "locked", "app", ["touch", "/written"])
    assert refused.exit_code != 0 and b"Read-only file system" in refused.stderr + refused.stdout
    # Kubernetes' default: privilege escalation allowed, the runtime's default capabilities.
    assert status_line(kubelet, namespace, "locked", "plain", "NoNewPrivs") == "0"
    assert status_line(kubelet, namespace, "locked", "plain", "Seccomp") == "2"
    assert status_line(kubelet, namespace, "locked", "plain", "CapEff") == DEFAULT_CAPABILITIES


def test_a_localhost_seccomp_profile_from_the_root_dir(
    agent: AgentFactory, engine: EngineUnderTest, namespace: str, tmp_path: Path
) -> None:
    kubelet = agent([audited_pod(namespace, engine.image, tmp_path / "root")])
    wait_pod(kubelet, namespace, "audited", all_running)
    assert status_line(kubelet, namespace, "audited", "app", "Seccomp") == "2"
    denied = kubelet.streams.exec(namespace, "audited", "app", ["mkdir", "/tmp/x"])
    assert denied.exit_code != 0


def test_sysctls_are_set_in_the_pods_namespaces(
    agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    kubelet = agent([tuned_pod(namespace, engine.image)])
    wait_pod(kubelet, namespace, "tuned", all_running)
    for name, value in SYSCTLS.items():
        path = "/proc/sys/" + name.replace(".", "/")
        assert run(kubelet, namespace, "tuned", "app", f"cat {path}").split() == value.split()


def test_an_unsafe_sysctl_is_refused_unless_allowed(
    agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    def pod(name: str) -> Any:
        sysctl = {"name": "net.core.somaxconn", "value": "1024"}
        return make_pod(
            name, namespace, [container("app", engine.image)], securityContext={"sysctls": [sysctl]}
        )

    refused = agent([pod("refused")])
    failed = wait_pod(
        refused, namespace, "refused", lambda p: p.status is not None and p.status.phase == "Failed"
    )
    assert failed.status is not None and failed.status.reason == "SysctlForbidden"
    allowed = agent(
        [pod("allowed")], allowed_unsafe_sysctls=("net.core.*",), node_name=f"{namespace}-2"
    )
    wait_pod(allowed, namespace, "allowed", all_running)
    assert run(allowed, namespace, "allowed", "app", "cat /proc/sys/net/core/somaxconn") == "1024"


def test_a_non_root_container_writes_its_termination_message(
    agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    pod = make_pod(
        "quitter",
        namespace,
        [container("app", engine.image, ["sh", "-c", "echo bye > /dev/termination-log; exit 3"])],
        securityContext={"runAsUser": 1000},
        restartPolicy="Never",
    )
    kubelet = agent([pod])

    def ended(p: Any) -> bool:
        status = status_of(p, "app")
        return status is not None and status.state.terminated is not None

    done = wait_pod(kubelet, namespace, "quitter", ended)
    status = status_of(done, "app")
    assert status is not None and status.state.terminated is not None
    assert status.state.terminated.message == "bye\n"
