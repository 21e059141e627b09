"""securityContext end to end on the real engine: each field seen by ``docker inspect`` and from
inside the container (``id``, ``/proc/self/status``, a write to a read-only root, sysctls)."""

from __future__ import annotations

import json
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

pytestmark = pytest.mark.docker


CAP_NET_ADMIN = "0000000000001000"


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


def test_the_docs_security_context_demo(
    agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    """pods/security/security-context.yaml: user, group, fsGroup, supplemental groups and
    allowPrivilegeEscalation: false."""
    pod = make_pod(
        "demo",
        namespace,
        [
            container(
                "app",
                engine.image,
                volumeMounts=[{"name": "vol", "mountPath": "/data/demo"}],
                securityContext={"allowPrivilegeEscalation": False},
            )
        ],
        securityContext={
            "runAsUser": 1000,
            "runAsGroup": 3000,
            "fsGroup": 2000,
            "supplementalGroups": [4000],
        },
        volumes=[{"name": "vol", "emptyDir": {}}],
    )
    kubelet = agent([pod])
    running = wait_pod(kubelet, namespace, "demo", all_running)
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
    info = inspect(raw, namespace, running, "app")
    assert info["Config"]["User"] == "1000:3000"
    assert info["HostConfig"]["GroupAdd"] == ["2000", "4000"]
    assert "no-new-privileges" in info["HostConfig"]["SecurityOpt"]


def test_capabilities_read_only_root_and_seccomp(
    agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "locked",
        namespace,
        [
            container(
                "app",
                engine.image,
                securityContext={
                    "capabilities": {"drop": ["ALL"], "add": ["CAP_NET_ADMIN"]},
                    "readOnlyRootFilesystem": True,
                    "seccompProfile": {"type": "Unconfined"},
                },
            ),
            container(
                "plain",
                engine.image,
                securityContext={"seccompProfile": {"type": "RuntimeDefault"}},
            ),
        ],
    )
    kubelet = agent([pod])
    running = wait_pod(kubelet, namespace, "locked", all_running)
    assert status_line(kubelet, namespace, "locked", "app", "CapEff") == CAP_NET_ADMIN
    assert status_line(kubelet, namespace, "locked", "app", "Seccomp") == "0"
    refused = kubelet.exec(namespace, "locked", "app", ["touch", "/written"])
    assert refused.exit_code != 0 and b"Read-only file system" in refused.stderr + refused.stdout
    # Kubernetes' default: privilege escalation allowed, Docker's default capabilities.
    assert status_line(kubelet, namespace, "locked", "plain", "NoNewPrivs") == "0"
    assert status_line(kubelet, namespace, "locked", "plain", "Seccomp") == "2"
    assert status_line(kubelet, namespace, "locked", "plain", "CapEff") == "00000000a80425fb"
    host = inspect(raw, namespace, running, "app")["HostConfig"]
    assert (host["CapAdd"], host["CapDrop"], host["ReadonlyRootfs"]) == (
        ["CAP_NET_ADMIN"],
        ["ALL"],
        True,
    )
    assert host["SecurityOpt"] == ["seccomp=unconfined"]


def test_a_localhost_seccomp_profile_from_the_root_dir(
    agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any, tmp_path: Path
) -> None:
    profiles = tmp_path / "root" / "seccomp" / "profiles"
    profiles.mkdir(parents=True)
    # Allows everything but mkdir, so the profile's effect shows.
    profile = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}],
    }
    (profiles / "no-mkdir.json").write_text(json.dumps(profile))
    pod = make_pod(
        "audited",
        namespace,
        [container("app", engine.image)],
        securityContext={
            "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/no-mkdir.json"}
        },
    )
    kubelet = agent([pod])
    running = wait_pod(kubelet, namespace, "audited", all_running)
    assert status_line(kubelet, namespace, "audited", "app", "Seccomp") == "2"
    denied = kubelet.exec(namespace, "audited", "app", ["mkdir", "/tmp/x"])
    assert denied.exit_code != 0
    options = inspect(raw, namespace, running, "app")["HostConfig"]["SecurityOpt"]
    assert any(o.startswith("seccomp=") and "mkdirat" in o for o in options)


def test_sysctls_are_set_in_the_pods_namespaces(
    agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "tuned",
        namespace,
        [container("app", engine.image)],
        securityContext={
            "sysctls": [
                {"name": "net.ipv4.ip_local_port_range", "value": "1100 60999"},
                {"name": "kernel.shm_rmid_forced", "value": "1"},
            ]
        },
    )
    kubelet = agent([pod])
    wait_pod(kubelet, namespace, "tuned", all_running)
    seen = run(kubelet, namespace, "tuned", "app", "cat /proc/sys/net/ipv4/ip_local_port_range")
    assert seen.split() == ["1100", "60999"]
    assert run(kubelet, namespace, "tuned", "app", "cat /proc/sys/kernel/shm_rmid_forced") == "1"
    (sandbox,) = engine_containers(raw, namespace, "POD")
    sysctls = raw.inspect_container(sandbox["Id"])["HostConfig"]["Sysctls"]
    assert sysctls == {"net.ipv4.ip_local_port_range": "1100 60999", "kernel.shm_rmid_forced": "1"}


def test_an_unsafe_sysctl_is_refused_unless_allowed(
    agent: AgentFactory, engine: TestEngine, namespace: str
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


def test_a_non_root_container_writes_its_termination_message(
    agent: AgentFactory, engine: TestEngine, namespace: str
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
