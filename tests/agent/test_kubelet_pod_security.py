"""The node's pod-security policy through a Kubelet on the fake runtime: a pod it forbids is
refused (phase Failed, reason PodSecurity, every violation in the message and in one event) and
the other pods run; the flags let exactly what they name in."""

from __future__ import annotations

from pathlib import Path

from kubecore._model.v1 import (
    Capabilities,
    HostPathVolumeSource,
    Pod,
    PodSecurityContext,
    SeccompProfile,
    SecurityContext,
    Volume,
    VolumeMount,
)
from tests.agent.support import make_node
from tests.builders import ctr, make_pod

ATTACK_MESSAGE = (
    'Pod was rejected: violates PodSecurity "baseline:latest": non-default capabilities'
    ' (container "app" must not include "SYS_ADMIN" in securityContext.capabilities.add),'
    ' hostPath volumes (volume "root")'
)


def host_path_pod(name: str, path: str, **mount: bool) -> Pod:
    app = ctr("app", volume_mounts=(VolumeMount("root", "/host", **mount),))
    return make_pod(name, app, volumes=(Volume("root", host_path=HostPathVolumeSource(path)),))


def attack(name: str = "attack") -> Pod:
    """The pod that read the host as uid 0: hostPath ``/`` with SYS_ADMIN."""
    admin = SecurityContext(capabilities=Capabilities(add=("SYS_ADMIN",)))
    app = ctr("app", volume_mounts=(VolumeMount("root", "/host"),), security_context=admin)
    return make_pod(name, app, volumes=(Volume("root", host_path=HostPathVolumeSource("/")),))


def test_the_attack_pod_is_refused_by_default_and_the_others_run(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    node.kubelet.set_pods([make_pod("before"), attack(), make_pod("after")])
    node.converge()
    assert node.running_names() == [("after", "app"), ("before", "app")]
    status = node.status("attack")
    assert (status.phase, status.reason, status.message) == (
        "Failed",
        "PodSecurity",
        ATTACK_MESSAGE,
    )
    (event,) = node.kubelet.views.recent_events(name="attack", reason="PodSecurity")
    assert event.type == "Warning" and event.message == ATTACK_MESSAGE
    assert not node.containers("attack")
    # refused for good: a resync does not let it in
    node.converge()
    assert node.status("attack").phase == "Failed"


def test_the_flags_let_the_attack_pod_in(tmp_path: Path) -> None:
    node = make_node(tmp_path, pod_security="privileged")
    node.kubelet.set_pods([attack()])
    node.converge()
    assert node.running_names() == [("attack", "app")]


def test_an_allowed_host_path_is_let_in_and_nothing_else(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    (tmp_path / "database").mkdir()
    node = make_node(tmp_path, allowed_host_paths=(f"{data}:ro",))
    node.kubelet.set_pods(
        [
            host_path_pod("under", str(data / "logs"), read_only=True),
            host_path_pod("read-write", str(data), read_only=False),
            host_path_pod("beside", str(tmp_path / "database"), read_only=True),
            host_path_pod("escape", f"{data}/../database", read_only=True),
        ]
    )
    node.converge()
    assert node.running_names() == [("under", "app")]
    for refused in ("read-write", "beside", "escape"):
        assert node.status(refused).reason == "PodSecurity", refused
    assert 'must mount volume "root" readOnly' in node.status("read-write").message


def test_restricted_refuses_a_plain_pod_and_runs_a_locked_one(tmp_path: Path) -> None:
    node = make_node(tmp_path, pod_security="restricted")
    locked = SecurityContext(
        allow_privilege_escalation=False, capabilities=Capabilities(drop=("ALL",))
    )
    pod_context = PodSecurityContext(
        run_as_non_root=True, run_as_user=1000, seccomp_profile=SeccompProfile("RuntimeDefault")
    )
    node.kubelet.set_pods(
        [
            make_pod("plain"),
            make_pod("locked", ctr("app", security_context=locked), security_context=pod_context),
        ]
    )
    node.converge()
    assert node.running_names() == [("locked", "app")]
    assert node.status("plain").message.startswith(
        'Pod was rejected: violates PodSecurity "restricted:latest": unrestricted capabilities'
    )


def test_the_old_flags_keep_their_reasons(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    privileged = ctr("app", security_context=SecurityContext(privileged=True))
    node.kubelet.set_pods([make_pod("priv", privileged), make_pod("hostpid", host_pid=True)])
    node.converge()
    assert node.status("priv").reason == "PrivilegedNotAllowed"
    assert node.status("hostpid").reason == "HostNamespacesNotAllowed"
    allowed = make_node(tmp_path / "allowed", allow_privileged=True)
    allowed.kubelet.set_pods([make_pod("priv", privileged), make_pod("hostnet", host_network=True)])
    allowed.converge()
    assert allowed.running_names() == [("hostnet", "app"), ("priv", "app")]
