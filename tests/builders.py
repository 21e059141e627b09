"""The values the tests build: pods and containers as a user writes them (``make_pod``,
``ctr``), and what a runtime reports of them, for the planner and the status tests
(``sandbox``, ``observed_ctr``, ``dead``, ``healthy``: the labels and annotations kubecore puts
on what it starts, at times ``T0`` before ``NOW``)."""

from __future__ import annotations

from typing import Any

import attrs

from kubecore._contract.labels import HASH_ANNOTATION
from kubecore._contract.observed import ObservedPod
from kubecore._kuberuntime.translate import container_config, sandbox_config
from kubecore._planner.actions import BackoffEntry
from kubecore.runtime import RuntimeContainer, RuntimeSandbox, RuntimeState, SandboxState
from kubecore.v1 import Container, ObjectMeta, Pod, PodSpec

# --- pods as written ----------------------------------------------------------------------------


def ctr(name: str = "app", image: str = "busybox:1.36", **kw: Any) -> Container:
    """A container spec; by default its program is ``server`` (unknown to the fake runtime: it
    runs until stopped)."""
    kw.setdefault("command", ("server",))
    return Container(name=name, image=image, **kw)


def make_pod(
    name: str = "web",
    *containers: Container,
    uid: str | None = None,
    namespace: str = "default",
    **spec: Any,
) -> Pod:
    """A pod of ``containers`` (one ``ctr()`` if none), uid ``uid-NAMESPACE-NAME`` unless given;
    ``spec`` sets other ``PodSpec`` fields."""
    return Pod(
        ObjectMeta(name=name, namespace=namespace, uid=uid or f"uid-{namespace}-{name}"),
        PodSpec(containers=containers or (ctr(),), **spec),
    )


# --- pods as observed ---------------------------------------------------------------------------

T0 = 1000.0
"""When the observed sandboxes were created (their containers a second later)."""
NOW = 2000.0
"""The planner's "now" in the observed-state tests."""
SB = "sb-1"
"""The observed sandbox's id."""

BASE_POD = Pod(
    metadata=ObjectMeta(name="web", namespace="default", uid="uid-1"),
    spec=PodSpec(
        containers=(
            Container(name="app", image="nginx:1.25"),
            Container("sidecar", "busybox:1.36"),
        ),
    ),
)
"""The planner tests' pod: ``web`` (uid ``uid-1``) with containers ``app`` and ``sidecar``."""


def with_spec(pod: Pod, **changes: Any) -> Pod:
    """``pod`` with ``changes`` to its spec."""
    return attrs.evolve(pod, spec=attrs.evolve(pod.spec, **changes))


INIT_POD = with_spec(
    BASE_POD,
    init_containers=(Container("setup", "busybox:1.36"), Container("migrate", "busybox:1.36")),
)
"""``BASE_POD`` with the init containers ``setup`` and ``migrate``."""


def sandbox(
    pod: Pod = BASE_POD,
    id: str = SB,
    *,
    attempt: int = 0,
    ready: bool = True,
    created: float = T0,
    ip: str = "10.0.0.2",
) -> RuntimeSandbox:
    """An observed sandbox of ``pod`` carrying the labels/annotations kubecore puts on it."""
    config = sandbox_config(pod, attempt, dns=None)
    return RuntimeSandbox(
        id=id,
        name=pod.metadata.name,
        namespace=pod.metadata.namespace,
        uid=pod.uid,
        attempt=attempt,
        state=SandboxState.READY if ready else SandboxState.NOTREADY,
        created_at=created,
        ip=ip,
        labels=dict(config.labels),
        annotations=dict(config.annotations),
    )


def _spec_container(pod: Pod, name: str) -> tuple[Container, bool]:
    for c in pod.spec.containers:
        if c.name == name:
            return c, False
    for c in pod.spec.init_containers:
        if c.name == name:
            return c, True
    return Container(name=name, image="busybox:1.36"), False


def observed_ctr(
    name: str,
    pod: Pod = BASE_POD,
    *,
    id: str | None = None,
    state: RuntimeState = RuntimeState.RUNNING,
    sandbox_id: str = SB,
    restart: int = 0,
    created: float = T0 + 1,
    exit_code: int | None = None,
    reason: str = "",
    hash: str | None = None,
    image_id: str = "sha256:img",
) -> RuntimeContainer:
    """An observed container of ``pod`` carrying the labels/annotations kubecore puts on it.
    ``hash=None`` keeps the right hash, ``""`` drops it, anything else replaces it."""
    spec, is_init = _spec_container(pod, name)
    config = container_config(pod, spec, restart_count=restart, volume_paths={}, is_init=is_init)
    annotations = dict(config.annotations)
    if hash == "":
        del annotations[HASH_ANNOTATION]
    elif hash is not None:
        annotations[HASH_ANNOTATION] = hash
    dead = state in (RuntimeState.EXITED, RuntimeState.CREATED)
    if state is RuntimeState.EXITED and exit_code is None:
        exit_code = 0
    return RuntimeContainer(
        id=id or f"{name}-{restart}",
        sandbox_id=sandbox_id,
        name=name,
        image=spec.image,
        state=state,
        created_at=created,
        attempt=restart,
        image_id=image_id,
        started_at=created + 0.5 if state is not RuntimeState.CREATED else None,
        finished_at=created + 5 if dead and state is RuntimeState.EXITED else None,
        exit_code=exit_code,
        reason=reason,
        labels=dict(config.labels),
        annotations=annotations,
    )


def dead(name: str, exit_code: int = 0, **kw: Any) -> RuntimeContainer:
    """An observed container that exited with ``exit_code``."""
    return observed_ctr(name, state=RuntimeState.EXITED, exit_code=exit_code, **kw)


def healthy(pod: Pod = BASE_POD) -> ObservedPod:
    """``pod`` as observed when all is well: its sandbox, its containers running, its init
    containers done."""
    containers = [observed_ctr(c.name, pod) for c in pod.spec.containers]
    containers += [dead(c.name, pod=pod, created=T0 - 1) for c in pod.spec.init_containers]
    return ObservedPod(sandboxes=(sandbox(pod),), containers=tuple(containers))


def swap(observed: ObservedPod, *containers: RuntimeContainer) -> ObservedPod:
    """Replace the containers of the same names (or add them)."""
    names = {c.name for c in containers}
    kept = tuple(c for c in observed.containers if c.name not in names)
    return attrs.evolve(observed, containers=kept + containers)


def crash(delay: float = 20.0, until: float = NOW + 5) -> BackoffEntry:
    """A crash back-off still running at ``NOW``."""
    return BackoffEntry(delay=delay, until=until, last_failure=until - delay)
