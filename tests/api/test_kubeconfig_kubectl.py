"""``kubecore kubeconfig DIR`` end to end: the command as a user runs it, ``kubecore run`` with
exactly the flags it printed, and every kubectl at hand (Debian's, and the one installed beside
this Python, from PyPI) with exactly the kubeconfig it wrote; a wrong token or CA is refused."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import requests
import yaml

from tests.api.kubectl_support import KUBECTL_TIMEOUT, kubectl_binaries, wait_for

KUBECTLS = kubectl_binaries()
pytestmark = pytest.mark.skipif(not KUBECTLS, reason="no kubectl binary is installed")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _kubecore(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubecore", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


@attrs.frozen
class Setup:
    """What ``kubecore kubeconfig`` printed: the ``run`` flags and the KUBECONFIG path."""

    run_flags: list[str]
    kubeconfig: Path
    directory: Path


def _setup(directory: Path, port: int) -> Setup:
    done = _kubecore("kubeconfig", str(directory), "--port", str(port))
    assert done.returncode == 0, done.stderr
    run = re.search(r"^\s*kubecore run (.*) \[MANIFEST\.\.\.\]$", done.stdout, re.M)
    export = re.search(r"^\s*export KUBECONFIG=(.*)$", done.stdout, re.M)
    assert run and export, done.stdout
    return Setup(shlex.split(run.group(1)), Path(shlex.split(export.group(1))[0]), directory)


@contextlib.contextmanager
def _agent(tmp: Path, setup: Setup, port: int) -> Iterator[str]:
    """``kubecore run`` (in-memory runtime) with the printed flags; yields its URL."""
    log = tmp / "agent.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kubecore", "run", *setup.run_flags, "--runtime", "fake",
             "--root-dir", str(tmp / "root"), "--log-level", "error"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )  # fmt: skip
    url = f"https://127.0.0.1:{port}"

    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"kubecore run exited:\n{log.read_text(errors='replace')}")
        with contextlib.suppress(requests.RequestException):
            answer = requests.get(url + "/healthz", verify=setup.directory / "ca.crt", timeout=2)
            return answer.text == "ok\n"
        return False

    try:
        wait_for(healthy, timeout=60, what="kubecore run's /healthz over HTTPS")
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("kubeconfig")
    port = _free_port()
    setup = _setup(tmp / "kube", port)
    with _agent(tmp, setup, port):
        yield setup


def _kubectl(
    binary: str, home: Path, kubeconfig: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [binary, *args],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
             "KUBECONFIG": str(kubeconfig)},
        capture_output=True,
        text=True,
        timeout=KUBECTL_TIMEOUT,
    )  # fmt: skip


def _altered(setup: Setup, path: Path, **changes: object) -> Path:
    config = yaml.safe_load(setup.kubeconfig.read_text())
    if "token" in changes:
        config["users"][0]["user"]["token"] = changes["token"]
    if "ca_data" in changes:
        config["clusters"][0]["cluster"]["certificate-authority-data"] = changes["ca_data"]
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_reads_and_writes_with_exactly_that_kubeconfig(
    served: Setup, binary: str, tmp_path: Path
) -> None:
    def kubectl(*args: str) -> str:
        done = _kubectl(binary, tmp_path / "home", served.kubeconfig, *args)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    assert kubectl("config", "current-context").strip() == "kubecore"
    name = f"made-by-{Path(binary).parent.name}"
    kubectl("create", "configmap", name, "--from-literal=greeting=hello")  # a write: the token
    assert kubectl("get", "configmap", name, "-o", "jsonpath={.data.greeting}") == "hello"
    kubectl("delete", "configmap", name)
    assert (
        "No resources found"
        in _kubectl(binary, tmp_path / "home", served.kubeconfig, "get", "pods").stderr
    )


@pytest.mark.parametrize("binary", KUBECTLS)
def test_a_wrong_token_is_refused(served: Setup, binary: str, tmp_path: Path) -> None:
    config = _altered(served, tmp_path / "wrong-token", token="not-the-token")
    done = _kubectl(
        binary, tmp_path / "home", config, "create", "configmap", "nope", "--from-literal=a=b"
    )
    assert done.returncode != 0
    assert "the bearer token is not valid" in done.stderr, done.stderr
    right = _kubectl(binary, tmp_path / "home", served.kubeconfig, "get", "configmap", "nope")
    assert right.returncode != 0 and "NotFound" in right.stderr, right.stderr


@pytest.mark.parametrize("binary", KUBECTLS)
def test_another_ca_is_refused(served: Setup, binary: str, tmp_path: Path) -> None:
    other = _setup(tmp_path / "other", 1)  # a CA of its own, unrelated to the served one
    ca_data = yaml.safe_load(other.kubeconfig.read_text())["clusters"][0]["cluster"][
        "certificate-authority-data"
    ]
    config = _altered(served, tmp_path / "wrong-ca", ca_data=ca_data)
    done = _kubectl(binary, tmp_path / "home", config, "get", "pods")
    assert done.returncode != 0
    assert "certificate signed by unknown authority" in done.stderr, done.stderr
