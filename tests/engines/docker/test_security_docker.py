"""securityContext on the real Docker engine: what Docker is told for each field (``docker
inspect``; what the container sees, on every engine, is in
tests/engines/scenarios/test_security_scenarios.py), runAsNonRoot against an image's user, and
AppArmor on a host without it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet
from kubecore._kuberuntime.security import detect_host_security
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    engine_containers,
    exec_until,
    make_pod,
    running_ids,
    status_of,
    wait_pod,
)
from tests.engines.security_support import (
    SYSCTLS,
    audited_pod,
    demo_pod,
    locked_pod,
    tuned_pod,
)

pytestmark = pytest.mark.docker


@pytest.fixture
def agent(make_agent: AgentFactory, namespace: str) -> AgentFactory:
    """Agents named after the test's namespace: every Docker test of the machine shares the
    engine, and an agent removes what its own node name made but it does not want."""

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


def inspect(raw: Any, ns: str, pod: Any, name: str) -> dict[str, Any]:
    found: dict[str, Any] = raw.inspect_container(running_ids(pod)[name])
    return found


def test_the_docs_security_context_demo_as_docker_is_told(
    agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    """The user, groups and no-new-privileges Docker is given for the docs' demo (what the
    container sees: tests/engines/scenarios/test_security_scenarios.py)."""
    kubelet = agent([demo_pod(namespace, engine.image)])
    running = wait_pod(kubelet, namespace, "demo", all_running)
    info = inspect(raw, namespace, running, "app")
    assert info["Config"]["User"] == "1000:3000"
    assert info["HostConfig"]["GroupAdd"] == ["2000", "4000"]
    assert "no-new-privileges" in info["HostConfig"]["SecurityOpt"]


def test_capabilities_read_only_root_and_seccomp_as_docker_is_told(
    agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    kubelet = agent([locked_pod(namespace, engine.image)], pod_security="privileged")
    running = wait_pod(kubelet, namespace, "locked", all_running)
    host = inspect(raw, namespace, running, "app")["HostConfig"]
    assert (host["CapAdd"], host["CapDrop"], host["ReadonlyRootfs"]) == (
        ["CAP_NET_ADMIN"],
        ["ALL"],
        True,
    )
    assert host["SecurityOpt"] == ["seccomp=unconfined"]


def test_a_localhost_seccomp_profile_is_given_to_docker_inline(
    agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any, tmp_path: Path
) -> None:
    kubelet = agent([audited_pod(namespace, engine.image, tmp_path / "root")])
    running = wait_pod(kubelet, namespace, "audited", all_running)
    options = inspect(raw, namespace, running, "app")["HostConfig"]["SecurityOpt"]
    assert any(o.startswith("seccomp=") and "mkdirat" in o for o in options)


def test_sysctls_are_given_to_the_sandbox_container(
    agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    kubelet = agent([tuned_pod(namespace, engine.image)])
    wait_pod(kubelet, namespace, "tuned", all_running)
    (sandbox,) = engine_containers(raw, namespace, "POD")
    assert raw.inspect_container(sandbox["Id"])["HostConfig"]["Sysctls"] == SYSCTLS


def _image_with_user(raw: Any, engine: TestEngine, own_images: list[str], user: str) -> str:
    ref = f"kubecore-test/user-{user}:{os.getpid()}-{len(own_images)}"
    made = raw.create_container(engine.image, command=["true"])
    try:
        repository, tag = ref.split(":")
        raw.commit(made["Id"], repository=repository, tag=tag, changes=[f"USER {user}"])
    finally:
        raw.remove_container(made["Id"], force=True)
    own_images.append(ref)
    return ref


def test_run_as_non_root_is_checked_against_the_images_user(
    agent: AgentFactory,
    engine: TestEngine,
    namespace: str,
    raw: Any,
    own_images: list[str],
) -> None:
    numeric = _image_with_user(raw, engine, own_images, "1000")
    named = _image_with_user(raw, engine, own_images, "nobody")
    non_root = {"runAsNonRoot": True}
    pods = [
        make_pod("root", namespace, [container("app", engine.image)], securityContext=non_root),
        make_pod("numeric", namespace, [container("app", numeric)], securityContext=non_root),
        make_pod("named", namespace, [container("app", named)], securityContext=non_root),
        make_pod(
            "grouped",
            namespace,
            [container("app", numeric)],
            securityContext={"runAsGroup": 3000},
        ),
    ]
    kubelet = agent(pods)
    wait_pod(kubelet, namespace, "numeric", all_running)
    assert run(kubelet, namespace, "numeric", "app", "id -u") == "1000"
    wait_pod(kubelet, namespace, "grouped", all_running)
    assert run(kubelet, namespace, "grouped", "app", "id -u; id -g").split() == ["1000", "3000"]

    def waiting(name: str, words: str) -> None:
        def stuck(pod: Any) -> bool:
            status = status_of(pod, "app")
            state = status.state.waiting if status is not None else None
            return (
                state is not None
                and state.reason == "CreateContainerConfigError"
                and words in state.message
            )

        wait_pod(kubelet, namespace, name, stuck, what=f"{name}: {words}")

    waiting("root", "container has runAsNonRoot and image will run as root")
    waiting("named", "image has non-numeric user (nobody), cannot verify user is non-root")
    assert engine_containers(raw, namespace, "app") and not any(
        c["Labels"].get("io.kubernetes.pod.name") in ("root", "named")
        for c in engine_containers(raw, namespace, "app")
    )


@pytest.mark.skipif(detect_host_security().apparmor, reason="this host has AppArmor")
def test_app_armor_is_refused_on_a_host_without_it(
    agent: AgentFactory, engine: TestEngine, namespace: str
) -> None:
    pod = make_pod(
        "armored",
        namespace,
        [
            container(
                "app", engine.image, securityContext={"appArmorProfile": {"type": "RuntimeDefault"}}
            )
        ],
    )
    kubelet = agent([pod])
    failed = wait_pod(
        kubelet, namespace, "armored", lambda p: p.status is not None and p.status.phase == "Failed"
    )
    assert failed.status is not None and failed.status.reason == "AppArmorNotSupported"
    assert "appArmorProfile" in failed.status.message


def host_root_pod(namespace: str, image: str) -> Any:
    """The attack: the host's ``/`` (mounted read-only here) with SYS_ADMIN, as uid 0."""
    app = container(
        "app",
        image,
        securityContext={"capabilities": {"add": ["SYS_ADMIN"]}},
        volumeMounts=[{"name": "root", "mountPath": "/host", "readOnly": True}],
    )
    return make_pod(
        "attack", namespace, [app], volumes=[{"name": "root", "hostPath": {"path": "/"}}]
    )


def test_the_host_root_pod_is_refused_by_default_and_runs_only_with_the_flags(
    agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = host_root_pod(namespace, engine.image)
    kubelet = agent([pod])
    refused = wait_pod(
        kubelet, namespace, "attack", lambda p: p.status is not None and p.status.phase == "Failed"
    )
    assert refused.status is not None and refused.status.reason == "PodSecurity"
    assert 'hostPath volumes (volume "root")' in refused.status.message
    assert '"SYS_ADMIN"' in refused.status.message
    assert engine_containers(raw, namespace) == []  # not even a sandbox
    kubelet.stop(timeout=10)

    loosened = agent([pod], pod_security="privileged")
    wait_pod(loosened, namespace, "attack", all_running, timeout=30)
    seen = exec_until(loosened, namespace, "attack", "app", ["sh", "-c", "id -u; ls /host"])
    assert seen.exit_code == 0 and seen.stdout.split(b"\n")[0] == b"0", seen
    assert b"etc" in seen.stdout.split(b"\n")
