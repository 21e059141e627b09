"""The suite's hands: a harness that makes labelled sandboxes and containers, waits on the
clock and cleans up, and the checks that what came back is what was given."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import TypeVar

import attrs

from kubecore._contract.labels import (
    HASH_ANNOTATION,
    RESTART_COUNT_ANNOTATION,
    container_labels,
    sandbox_labels,
)
from kubecore._contract.protocols import ContainerRuntime, Puller
from kubecore._contract.values import (
    ContainerConfig,
    LinuxContainerSecurityContext,
    RuntimeContainer,
    RuntimeSandbox,
    RuntimeState,
    SandboxConfig,
)
from kubecore._plugins.registry import RuntimeBundle
from kubecore._util.clock import Clock
from kubecore.testing.conformance._strict import ConformanceReport, Strictness
from kubecore.testing.conformance._workloads import Command, Workloads

T = TypeVar("T")
MISSING_ID = "0" * 64


def wait_for(
    clock: Clock,
    condition: Callable[[], T | None],
    what: str,
    timeout: float,
    step: float = 0.1,
) -> T:
    """Poll ``condition`` until it returns something truthy, sleeping ``step`` on ``clock``
    between polls (a ``ManualClock`` advances). Bounded in polls and in real time."""
    deadline = clock.monotonic() + timeout
    real_deadline = time.monotonic() + 2 * timeout + 5
    for _ in range(int(timeout / step) + 2):
        value = condition()
        if value:
            return value
        if clock.monotonic() >= deadline or time.monotonic() >= real_deadline:
            break
        clock.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Harness:
    """Creates sandboxes and containers with kubecore's labels, waits, and cleans up; says why a
    check cannot run (``not_checked``, ``unseen``) and what the runtime refused (``refused``),
    as strict mode and the report need it."""

    def __init__(
        self,
        bundle: RuntimeBundle,
        workloads: Workloads,
        clock: Clock,
        strictness: Strictness | None = None,
    ) -> None:
        self.strictness = strictness or Strictness(False, ConformanceReport(), "")
        self.not_checked = self.strictness.not_checked
        self.unseen = self.strictness.unseen
        self.refused = self.strictness.refused
        self.bundle = bundle
        self.runtime: ContainerRuntime = bundle.runtime
        self.puller: Puller = bundle.puller
        self.workloads = workloads
        self.clock = clock
        self.prefix = f"kcconf-{uuid.uuid4().hex[:8]}"
        self._serial = 0
        self.sandboxes: list[str] = []
        self.containers: list[str] = []

    def _next(self) -> int:
        self._serial += 1
        return self._serial

    def ensure_image(self, image: str) -> None:
        """Pull ``image`` unless the runtime has it."""
        if self.puller.image_status(image) is None:
            self.puller.pull(image)

    def sandbox_config(self, name: str = "", attempt: int = 0) -> SandboxConfig:
        """A ``SandboxConfig`` with kubecore's labels, a fresh uid and an annotation that must come
        back unchanged."""
        pod = name or f"{self.prefix}-pod{self._next()}"
        uid = str(uuid.uuid4())
        return SandboxConfig(
            name=pod,
            namespace="conformance",
            uid=uid,
            attempt=attempt,
            hostname=pod[:63],
            labels={
                **sandbox_labels(pod, "conformance", uid),
                "conformance.kubecore.io/kind": "sandbox",
            },
            annotations={"conformance.kubecore.io/note": "spaces, = and / survive"},
            image=self.workloads.sandbox_image,
        )

    def run_sandbox(self, config: SandboxConfig | None = None) -> tuple[str, SandboxConfig]:
        """Run a sandbox (of ``config``, else a new one) and remember it for the cleanup; returns
        its id and config."""
        config = config or self.sandbox_config()
        sandbox_id = self.runtime.run_sandbox(config)
        self.sandboxes.append(sandbox_id)
        return sandbox_id, config

    def container_config(
        self,
        sandbox: SandboxConfig,
        command: Command,
        name: str = "",
        image: str = "",
        memory_limit: int | None = None,
    ) -> ContainerConfig:
        """A ``ContainerConfig`` running ``command`` in the sandbox, with kubecore's labels and
        annotations that must come back unchanged."""
        container = name or f"c{self._next()}"
        return ContainerConfig(
            name=container,
            image=image or self.workloads.image,
            command=command,
            labels={
                **container_labels(sandbox.name, sandbox.namespace, sandbox.uid, container),
                "conformance.kubecore.io/kind": "container",
            },
            annotations={
                HASH_ANNOTATION: "1a2b3c4d",
                RESTART_COUNT_ANNOTATION: "0",
                "conformance.kubecore.io/note": "spaces, = and / survive",
            },
            memory_limit=memory_limit,
        )

    def create(
        self,
        sandbox: tuple[str, SandboxConfig],
        command: Command,
        name: str = "",
        image: str = "",
        memory_limit: int | None = None,
        security_context: LinuxContainerSecurityContext | None = None,
    ) -> str:
        """Create (not start) a container in the sandbox and remember it for the cleanup; returns
        its id."""
        config = self.container_config(sandbox[1], command, name, image, memory_limit)
        config = attrs.evolve(config, security_context=security_context)
        container_id = self.runtime.create_container(sandbox[0], config, sandbox[1])
        self.containers.append(container_id)
        return container_id

    def start(
        self,
        sandbox: tuple[str, SandboxConfig],
        command: Command,
        name: str = "",
        memory_limit: int | None = None,
    ) -> str:
        """Create and start a container in the sandbox; returns its id."""
        container_id = self.create(sandbox, command, name, memory_limit=memory_limit)
        self.runtime.start_container(container_id)
        return container_id

    def wait(self, condition: Callable[[], T | None], what: str) -> T:
        """Wait (bounded by the workloads' ``timeout``) until ``condition`` returns something;
        returns it. Raises ``AssertionError`` naming ``what`` on time-out."""
        return wait_for(self.clock, condition, what, self.workloads.timeout)

    def wait_state(self, container_id: str, state: RuntimeState) -> RuntimeContainer:
        """Wait until the container is in ``state``; returns its status."""

        def reached() -> RuntimeContainer | None:
            status = self.runtime.container_status(container_id)
            return status if status.state is state else None

        return self.wait(reached, f"container {container_id} to be {state.value}")

    def wait_logs(self, container_id: str, text: str) -> list[bytes]:
        """Wait until ``text`` is in the container's logs; returns the log lines."""

        def found() -> list[bytes] | None:
            lines = list(self.runtime.logs(container_id))
            return lines if any(text.encode() in line for line in lines) else None

        return self.wait(found, f"{text!r} in the logs of {container_id}")

    def use(self, bundle: RuntimeBundle) -> None:
        """Go on (and clean up) with another instance of the runtime."""
        self.bundle = bundle
        self.runtime = bundle.runtime
        self.puller = bundle.puller

    def abandon(self) -> None:
        """Forget what was made: it is left to the ``bundle`` fixture's teardown."""
        self.containers.clear()
        self.sandboxes.clear()

    def cleanup(self) -> None:
        """Remove every container and sandbox made, giving each its chance; raises
        ``AssertionError`` listing what could not be removed."""
        problems: list[str] = []
        for container_id in reversed(self.containers):
            try:
                self.runtime.remove_container(container_id)
            except Exception as exc:  # every object gets its chance to be removed
                problems.append(f"remove_container({container_id}): {exc!r}")
        for sandbox_id in reversed(self.sandboxes):
            try:
                self.runtime.stop_sandbox(sandbox_id)
                self.runtime.remove_sandbox(sandbox_id)
            except Exception as exc:
                problems.append(f"stop/remove_sandbox({sandbox_id}): {exc!r}")
        if problems:
            raise AssertionError("cleanup failed: " + "; ".join(problems))


def assert_kept(given: Mapping[str, str], returned: Mapping[str, str], what: str) -> None:
    """Every given key comes back with its value (an adapter may add keys of its own)."""
    for key, value in given.items():
        got = returned.get(key)
        assert got == value, f"{what}: {key}={value!r} came back as {got!r}"


def assert_sandbox_matches(sandbox: RuntimeSandbox, config: SandboxConfig) -> None:
    assert (sandbox.name, sandbox.namespace, sandbox.uid, sandbox.attempt) == (
        config.name,
        config.namespace,
        config.uid,
        config.attempt,
    )
    assert_kept(config.labels, sandbox.labels, "sandbox labels")
    assert_kept(config.annotations, sandbox.annotations, "sandbox annotations")


def assert_container_matches(
    container: RuntimeContainer, config: ContainerConfig, sandbox_id: str
) -> None:
    assert (container.name, container.attempt, container.sandbox_id) == (
        config.name,
        config.attempt,
        sandbox_id,
    )
    assert config.image.split(":")[0].rsplit("/", 1)[-1] in container.image
    assert_kept(config.labels, container.labels, "container labels")
    assert_kept(config.annotations, container.annotations, "container annotations")
