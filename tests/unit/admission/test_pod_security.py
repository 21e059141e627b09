"""The node's pod-security policy, rule by rule and level by level, as the Pod Security Standards
have them: each pod breaks one rule, and the violations name it and its field, in PSA's words."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from kubecore._agent.admission.pod_security import (
    BASELINE,
    PRIVILEGED,
    RESTRICTED,
    HostPathRule,
    PodSecurityPolicy,
    forbidden_message,
    host_path_rule,
    make_policy,
    parse_host_path_rule,
    parse_host_ports,
    violations,
)
from kubecore._manifest import pod_from_dict
from kubecore._model.v1 import Pod, SecurityContext, WindowsSecurityContextOptions

IMAGE = "busybox:1.35"
LOCKED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
"""A container context that meets ``restricted``."""


def pod(
    spec: dict[str, Any] | None = None,
    container: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> Pod:
    """A pod named ``p`` with one container ``app`` (``container``: more of its fields)."""
    app = {"name": "app", "image": IMAGE, **(container or {})}
    return pod_from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "annotations": annotations or {}},
            "spec": {"containers": [app], **(spec or {})},
        }
    )


def context(**fields: Any) -> dict[str, Any]:
    return {"securityContext": fields}


def windows_host_process() -> Pod:
    """A container asking to be a Windows host process (validation refuses any Windows option on
    this Linux node: the policy refuses it too, whatever reads it)."""
    base = pod()
    options = WindowsSecurityContextOptions(host_process=True)
    app = attrs.evolve(
        base.spec.containers[0], security_context=SecurityContext(windows_options=options)
    )
    return attrs.evolve(base, spec=attrs.evolve(base.spec, containers=(app,)))


HOST_ROOT = {
    "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
}
BASELINE_CASES: list[tuple[str, Pod, list[tuple[str, str]]]] = [
    (
        "host network",
        pod({"hostNetwork": True}),
        [("host namespaces (hostNetwork=true)", "spec.hostNetwork")],
    ),
    ("host PID", pod({"hostPID": True}), [("host namespaces (hostPID=true)", "spec.hostPID")]),
    ("host IPC", pod({"hostIPC": True}), [("host namespaces (hostIPC=true)", "spec.hostIPC")]),
    (
        "privileged",
        pod(container=context(privileged=True)),
        [
            (
                'privileged (container "app" must not set securityContext.privileged=true)',
                "spec.containers[0].securityContext.privileged",
            )
        ],
    ),
    (
        "SYS_ADMIN",
        pod(container=context(capabilities={"add": ["SYS_ADMIN"]})),
        [
            (
                'non-default capabilities (container "app" must not include "SYS_ADMIN" in'
                " securityContext.capabilities.add)",
                "spec.containers[0].securityContext.capabilities.add",
            )
        ],
    ),
    (
        "ALL",
        pod(container=context(capabilities={"add": ["ALL", "CHOWN"]})),
        [
            (
                'non-default capabilities (container "app" must not include "ALL" in'
                " securityContext.capabilities.add)",
                "spec.containers[0].securityContext.capabilities.add",
            )
        ],
    ),
    (
        "hostPath /",
        pod(HOST_ROOT),
        [('hostPath volumes (volume "root")', "spec.volumes[0].hostPath.path")],
    ),
    (
        "docker socket",
        pod({"volumes": [{"name": "sock", "hostPath": {"path": "/var/run/docker.sock"}}]}),
        [('hostPath volumes (volume "sock")', "spec.volumes[0].hostPath.path")],
    ),
    (
        "privileged host port",
        pod(container={"ports": [{"containerPort": 80, "hostPort": 80}]}),
        [
            (
                'hostPort (container "app" uses hostPort 80)',
                "spec.containers[0].ports[0].hostPort",
            )
        ],
    ),
    (
        "unmasked /proc",
        pod({"hostUsers": False}, context(procMount="Unmasked")),
        [
            (
                'procMount (container "app" must not set securityContext.procMount to "Unmasked")',
                "spec.containers[0].securityContext.procMount",
            )
        ],
    ),
    (
        "seccomp Unconfined (pod)",
        pod({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
        [
            (
                "seccompProfile (pod must not set securityContext.seccompProfile.type to"
                ' "Unconfined")',
                "spec.securityContext.seccompProfile.type",
            )
        ],
    ),
    (
        "AppArmor unconfined",
        pod(container=context(appArmorProfile={"type": "Unconfined"})),
        [
            (
                'forbidden AppArmor profile (container "app" must not set'
                ' securityContext.appArmorProfile.type to "Unconfined")',
                "spec.containers[0].securityContext.appArmorProfile.type",
            )
        ],
    ),
    (
        "AppArmor annotation",
        pod(annotations={"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}),
        [
            (
                "forbidden AppArmor profile (annotation"
                ' "container.apparmor.security.beta.kubernetes.io/app"="unconfined")',
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]",
            )
        ],
    ),
    (
        "SELinux type and user",
        pod(container=context(seLinuxOptions={"type": "spc_t", "user": "root"})),
        [
            (
                'seLinuxOptions (container "app" set forbidden securityContext.seLinuxOptions:'
                ' type "spc_t"; user "root")',
                "spec.containers[0].securityContext.seLinuxOptions",
            )
        ],
    ),
    (
        "unsafe sysctl",
        pod({"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}),
        [("forbidden sysctls (kernel.msgmax)", "spec.securityContext.sysctls[0].name")],
    ),
    (
        "Windows hostProcess",
        windows_host_process(),
        [
            (
                'hostProcess (container "app" must not set'
                " securityContext.windowsOptions.hostProcess=true)",
                "spec.containers[0].securityContext.windowsOptions.hostProcess",
            )
        ],
    ),
]


@pytest.mark.parametrize(
    ("case", "subject", "expected"), BASELINE_CASES, ids=[c[0] for c in BASELINE_CASES]
)
def test_baseline_refuses_each_rule_with_its_field(
    case: str, subject: Pod, expected: list[tuple[str, str]]
) -> None:
    found = violations(subject, PodSecurityPolicy(BASELINE))
    assert [(str(v), v.path) for v in found] == expected
    assert violations(subject, PodSecurityPolicy(PRIVILEGED)) == []


@pytest.mark.parametrize(
    "allowed",
    [
        pod(container=context(capabilities={"add": ["NET_BIND_SERVICE", "CHOWN", "KILL"]})),
        pod(container={"ports": [{"containerPort": 8080, "hostPort": 18080}]}),
        pod({"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]}}),
        pod(container=context(seccompProfile={"type": "RuntimeDefault"}, procMount="Default")),
        pod(container=context(seLinuxOptions={"type": "container_t", "level": "s0:c1"})),
        pod(annotations={"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"}),
        pod({"volumes": [{"name": "c", "emptyDir": {}}]}),
    ],
)
def test_baseline_lets_in_what_the_standards_allow(allowed: Pod) -> None:
    assert violations(allowed, PodSecurityPolicy(BASELINE)) == []


def test_every_kind_of_container_is_checked() -> None:
    subject = pod_from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "initContainers": [
                    {"name": "init", "image": IMAGE, **context(privileged=True)},
                    {
                        "name": "side",
                        "image": IMAGE,
                        "restartPolicy": "Always",
                        **context(capabilities={"add": ["SYS_PTRACE"]}),
                    },
                ],
                "containers": [{"name": "app", "image": IMAGE}],
                "ephemeralContainers": [
                    {
                        "name": "debug",
                        "image": IMAGE,
                        **context(capabilities={"add": ["SYS_ADMIN"]}),
                    }
                ],
            },
        }
    )
    paths = [v.path for v in violations(subject, PodSecurityPolicy(BASELINE))]
    assert paths == [
        "spec.initContainers[0].securityContext.privileged",
        "spec.initContainers[1].securityContext.capabilities.add",
        "spec.ephemeralContainers[0].securityContext.capabilities.add",
    ]


def test_the_attack_pod_gets_every_violation_in_one_message() -> None:
    attack = pod(
        {"hostNetwork": True, **HOST_ROOT},
        {
            **context(capabilities={"add": ["SYS_ADMIN"]}),
            "volumeMounts": [{"name": "root", "mountPath": "/host"}],
        },
    )
    found = violations(attack, PodSecurityPolicy(BASELINE))
    assert forbidden_message(found, BASELINE) == (
        'violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true),'
        ' non-default capabilities (container "app" must not include "SYS_ADMIN" in'
        ' securityContext.capabilities.add), hostPath volumes (volume "root")'
    )


RESTRICTED_CASES: list[tuple[str, Pod, list[tuple[str, str]]]] = [
    (
        "nothing set",
        pod(),
        [
            (
                'unrestricted capabilities (container "app" must set'
                ' securityContext.capabilities.drop=["ALL"])',
                "spec.containers[0].securityContext.capabilities.drop",
            ),
            (
                'seccompProfile (pod or container "app" must set'
                ' securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
                "spec.containers[0].securityContext.seccompProfile.type",
            ),
            (
                'allowPrivilegeEscalation != false (container "app" must set'
                " securityContext.allowPrivilegeEscalation=false)",
                "spec.containers[0].securityContext.allowPrivilegeEscalation",
            ),
            (
                'runAsNonRoot != true (pod or container "app" must set'
                " securityContext.runAsNonRoot=true)",
                "spec.containers[0].securityContext.runAsNonRoot",
            ),
        ],
    ),
    (
        "an added capability",
        pod(container=context(**{**LOCKED, "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}})),
        [
            (
                'unrestricted capabilities (container "app" must not include "CHOWN" in'
                " securityContext.capabilities.add)",
                "spec.containers[0].securityContext.capabilities.add",
            )
        ],
    ),
    (
        "root",
        pod({"securityContext": {"runAsUser": 0}}, context(**LOCKED)),
        [("runAsUser=0 (pod must not set runAsUser=0)", "spec.securityContext.runAsUser")],
    ),
    (
        "runAsNonRoot false",
        pod(container=context(**{**LOCKED, "runAsNonRoot": False})),
        [
            (
                'runAsNonRoot != true (container "app" must not set'
                " securityContext.runAsNonRoot=false)",
                "spec.containers[0].securityContext.runAsNonRoot",
            )
        ],
    ),
    (
        "a hostPath volume",
        pod(HOST_ROOT, context(**LOCKED)),
        [
            ('hostPath volumes (volume "root")', "spec.volumes[0].hostPath.path"),
            (
                'restricted volume types (volume "root" uses restricted volume type "hostPath")',
                "spec.volumes[0].hostPath",
            ),
        ],
    ),
]


@pytest.mark.parametrize(
    ("case", "subject", "expected"), RESTRICTED_CASES, ids=[c[0] for c in RESTRICTED_CASES]
)
def test_restricted_adds_its_rules(
    case: str, subject: Pod, expected: list[tuple[str, str]]
) -> None:
    found = violations(subject, PodSecurityPolicy(RESTRICTED))
    assert [(str(v), v.path) for v in found] == expected


def test_a_locked_down_pod_meets_restricted() -> None:
    locked = pod(
        {
            "securityContext": {
                "runAsNonRoot": True,
                "seccompProfile": {"type": "Localhost", "localhostProfile": "a.json"},
            }
        },
        context(
            allowPrivilegeEscalation=False,
            capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
        ),
    )
    assert violations(locked, PodSecurityPolicy(RESTRICTED)) == []


@pytest.mark.parametrize(
    ("path", "kind", "rules", "allowed"),
    [
        ("/data/x", "", ["/data"], "/data"),
        ("/data", "", ["/data/"], "/data"),
        ("/database", "", ["/data"], None),  # never by string prefix alone
        ("/data/../etc/shadow", "", ["/data"], None),  # normalised before it is compared
        ("/data//./x/", "", ["/data:ro"], "/data:ro"),
        ("/var/run/docker.sock", "", ["/var/run"], None),  # a socket is never implied
        ("/var/run/docker.sock", "", ["/"], None),
        ("/run/containerd/containerd.sock", "", ["/run/containerd"], None),
        ("/run/x", "Socket", ["/run"], None),
        ("/var/run/docker.sock", "", ["/var/run/docker.sock"], "/var/run/docker.sock"),
        ("/var/run", "", ["/var/run"], None),  # a directory holding an engine's socket
        ("/", "", ["/"], None),
        ("/run/containerd", "", ["/run", "/run/containerd/containerd.sock"], "/run"),
        ("/var/lib/x", "", ["/var"], "/var"),
        ("/srv/a", "", ["/srv:ro", "/srv/a"], "/srv/a"),  # a read-write rule wins
        ("relative", "", ["/"], None),
    ],
)
def test_host_paths_are_allowed_by_whole_normalised_components(
    path: str, kind: str, rules: list[str], allowed: str | None
) -> None:
    rule = host_path_rule(path, kind, [parse_host_path_rule(r) for r in rules])
    expected = None
    if allowed is not None:
        expected = parse_host_path_rule(allowed)
    assert rule == expected


def test_a_read_only_host_path_must_be_mounted_read_only() -> None:
    spec = {"volumes": [{"name": "logs", "hostPath": {"path": "/var/log"}}]}
    read_write = pod(spec, {"volumeMounts": [{"name": "logs", "mountPath": "/l"}]})
    read_only = pod(spec, {"volumeMounts": [{"name": "logs", "mountPath": "/l", "readOnly": True}]})
    policy = make_policy(BASELINE, ["/var/log:ro"])
    assert [(str(v), v.path) for v in violations(read_write, policy)] == [
        (
            'hostPath volumes (container "app" must mount volume "logs" readOnly (/var/log is'
            " allowed read-only))",
            "spec.containers[0].volumeMounts[0].readOnly",
        )
    ]
    assert violations(read_only, policy) == []
    assert violations(read_write, make_policy(BASELINE, ["/var/log"])) == []


def test_the_node_flags_loosen_what_they_always_loosened() -> None:
    hosty = pod({"hostNetwork": True, "hostPID": True}, context(privileged=True))
    assert violations(hosty, make_policy(BASELINE, allow_privileged=True)) == []
    sysctl = pod({"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}})
    assert violations(sysctl, make_policy(BASELINE, unsafe_sysctls=["kernel.msg*"])) == []
    low_port = pod(container={"ports": [{"containerPort": 80, "hostPort": 80}]})
    assert violations(low_port, make_policy(BASELINE, host_ports=["80", "8000-9000"])) == []
    high_port = pod(container={"ports": [{"containerPort": 80, "hostPort": 18080}]})
    assert [v.check for v in violations(high_port, make_policy(BASELINE, host_ports=["none"]))] == [
        "hostPort"
    ]


@pytest.mark.parametrize("text", ["", "data", "data:ro", ":ro"])
def test_a_host_path_rule_must_be_absolute(text: str) -> None:
    with pytest.raises(ValueError, match="absolute path"):
        parse_host_path_rule(text)


def test_host_path_rules_and_port_ranges_are_read() -> None:
    assert parse_host_path_rule("/srv/../data/:ro") == HostPathRule("/data", read_only=True)
    assert parse_host_path_rule("//data:rw") == HostPathRule("/data")
    assert parse_host_ports(["80", "8000-9000", "none"]) == ((80, 80), (8000, 9000))
    for bad in ("0", "9000-8000", "http", "70000"):
        with pytest.raises(ValueError, match="allowed host port"):
            parse_host_ports([bad])
