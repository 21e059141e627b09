"""The pods of the securityContext scenarios (tests/engines/scenarios/test_security_scenarios.py),
shared with the Docker-only checks of what the engine was told (``docker inspect``) in
tests/engines/docker/test_security_docker.py."""

from __future__ import annotations

import json
from pathlib import Path

from kubecore._model.v1 import Pod
from tests.engines.docker.e2e_helpers import container, make_pod

CAP_NET_ADMIN = "0000000000001000"
DEFAULT_CAPABILITIES = "00000000a80425fb"
"""The capabilities Docker and containerd give a container by default (the same 14)."""
NO_MKDIR_PROFILE = "profiles/no-mkdir.json"
SYSCTLS = {"net.ipv4.ip_local_port_range": "1100 60999", "kernel.shm_rmid_forced": "1"}


def demo_pod(namespace: str, image: str) -> Pod:
    """pods/security/security-context.yaml: user, group, fsGroup, supplemental groups and
    allowPrivilegeEscalation: false."""
    return make_pod(
        "demo",
        namespace,
        [
            container(
                "app",
                image,
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


def locked_pod(namespace: str, image: str) -> Pod:
    """``app``: every capability dropped but NET_ADMIN, a read-only root, no seccomp; ``plain``:
    the runtime's default seccomp profile."""
    return make_pod(
        "locked",
        namespace,
        [
            container(
                "app",
                image,
                securityContext={
                    "capabilities": {"drop": ["ALL"], "add": ["CAP_NET_ADMIN"]},
                    "readOnlyRootFilesystem": True,
                    "seccompProfile": {"type": "Unconfined"},
                },
            ),
            container(
                "plain",
                image,
                securityContext={"seccompProfile": {"type": "RuntimeDefault"}},
            ),
        ],
    )


def audited_pod(namespace: str, image: str, root_dir: Path) -> Pod:
    """A pod under a Localhost seccomp profile, written into the agent's ``root_dir``, that
    allows everything but mkdir (so the profile's effect shows)."""
    profiles = root_dir / "seccomp" / "profiles"
    profiles.mkdir(parents=True)
    profile = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}],
    }
    (profiles / "no-mkdir.json").write_text(json.dumps(profile))
    return make_pod(
        "audited",
        namespace,
        [container("app", image)],
        securityContext={
            "seccompProfile": {"type": "Localhost", "localhostProfile": NO_MKDIR_PROFILE}
        },
    )


def tuned_pod(namespace: str, image: str) -> Pod:
    """A pod setting two namespaced sysctls (``SYSCTLS``)."""
    return make_pod(
        "tuned",
        namespace,
        [container("app", image)],
        securityContext={"sysctls": [{"name": k, "value": v} for k, v in SYSCTLS.items()]},
    )
