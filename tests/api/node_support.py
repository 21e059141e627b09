"""Running one of the kubectl binaries (``kubectl_support.kubectl_binaries``) the node tests drive
with a node's kubeconfig, and a pod listing read straight from the agent."""

from __future__ import annotations

import subprocess

from tests.api.kubectl_support import KUBECTL_TIMEOUT, Kubectl


def run(
    binary: str, kubectl: Kubectl, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``binary`` with ``kubectl``'s home and kubeconfig."""
    done = subprocess.run(
        [binary, *args], env=kubectl.env(), capture_output=True, text=True, timeout=KUBECTL_TIMEOUT
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"{binary} {' '.join(args)} failed ({done.returncode}):\n{done.stderr}"
        )
    return done
