"""The process runtime against kubecore's runtime conformance suite.

The runtime is loaded through its entry point, as any user would load it, so the package must be
installed (``pip install -e examples/process_runtime``). Workloads are host commands: ``/bin/sh``,
``sleep``, ``echo`` and this Python interpreter (for a loopback TCP server). There is no memory
limit to enforce, so the OOM check is skipped.
"""

from __future__ import annotations

import random
import shlex
import socket
import sys
from collections.abc import Callable

import pytest

import kubecore
from kubecore.testing.conformance import RuntimeConformance, Workloads, busybox_workloads

PYTHON = shlex.quote(sys.executable)


def forever(prefix: str = "") -> tuple[str, ...]:
    return ("sh", "-c", f"{prefix}trap 'exit 0' TERM; while :; do sleep 0.2; done")


def serve_tcp(port: int) -> tuple[str, ...]:
    server = f"{PYTHON} -m http.server --bind 127.0.0.1 {port}"
    return ("sh", "-c", f"trap 'exit 0' TERM; {server} & wait")


def check_tcp(port: int) -> tuple[str, ...]:
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2).close()"
    return (sys.executable, "-c", connect)


def free_loopback_port() -> int:
    """A free loopback port below the ephemeral range (others' port-0 sockets land there), with
    the next port free too: the suite checks that nothing answers on it."""
    for _ in range(100):
        port = random.randrange(20000, 32000)
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
        except OSError:
            continue
        return port
    raise RuntimeError("no free loopback port pair between 20000 and 32000")


class TestProcessRuntime(RuntimeConformance):
    @pytest.fixture
    def bundle(
        self, open_runtime: Callable[[], kubecore.runtime.RuntimeBundle]
    ) -> kubecore.runtime.RuntimeBundle:
        return open_runtime()

    @pytest.fixture
    def reopen(
        self, open_runtime: Callable[[], kubecore.runtime.RuntimeBundle]
    ) -> Callable[[], kubecore.runtime.RuntimeBundle]:
        """A new instance on the same state directory, as a restarted agent loads it."""
        return open_runtime

    @pytest.fixture
    def unmanaged_container(self, bundle: kubecore.runtime.RuntimeBundle) -> Callable[[], str]:
        """A container the runtime runs without kubecore's label: it must never be listed."""

        def create() -> str:
            runtime = bundle.runtime
            bundle.puller.pull("host")
            sandbox = kubecore.runtime.SandboxConfig(
                name="foreign", namespace="other", uid="foreign-1"
            )
            sandbox_id = runtime.run_sandbox(sandbox)
            config = kubecore.runtime.ContainerConfig(
                name="foreign", image="host", command=forever()
            )
            container_id = runtime.create_container(sandbox_id, config, sandbox)
            runtime.start_container(container_id)
            return container_id

        return create

    @pytest.fixture
    def workloads(self) -> Workloads:
        return Workloads(
            image="host",
            run_forever=forever(),
            print_and_run=lambda text: forever(f"echo {shlex.quote(text)}; "),
            exit_with=lambda code: ("sh", "-c", f"exit {code}"),
            serve_tcp=serve_tcp,
            check_tcp=check_tcp,
            consume_memory=None,
            pullable_image="spare",
            # Refused at create (no isolation); only the baseline check runs it, on the host.
            report_security=busybox_workloads().report_security,
            tcp_port=free_loopback_port(),
            timeout=15.0,
        )
