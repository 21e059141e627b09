"""``FakeNode``: a whole node on the in-memory runtime, in virtual time, for tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import attrs

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._config.objects import object_key
from kubecore._config.updates import Operation, PodUpdate
from kubecore._contract.errors import ValidationError
from kubecore._contract.values import (
    Event,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeState,
)
from kubecore._manifest import load_manifest_lenient
from kubecore._model.v1 import ConfigMap, KubeObject, Pod, PodStatus, Secret
from kubecore._plugins.registry import RuntimeBundle, load_runtime
from kubecore._util.clock import ManualClock

if TYPE_CHECKING:  # the plugin is reached through the registry: the core never imports it
    from kubecore_fake import FakeHealthChecker, FakeRuntime

SYNCS_PER_INSTANT = 10
"""At most this many syncs at one instant (another after each that acted or saw a death)."""

HOST_RESOLV_CONF = "nameserver 192.0.2.53\nsearch example.org\n"
"""The host DNS a node sees unless its config names a resolv.conf: fixed, so every run is alike
(written to ``host-resolv.conf`` in the node's root dir)."""

PodRef = Pod | str
"""A pod by object, by ``name`` (namespace ``default``) or by ``namespace/name``."""


class NotReached(AssertionError):
    """``FakeNode.run_until`` ran out of virtual time before its predicate held."""


def pod_key(pod: PodRef) -> tuple[str, str]:
    """``(namespace, name)`` of a pod given as an object, ``name`` or ``namespace/name``."""
    if isinstance(pod, Pod):
        return pod.metadata.namespace, pod.metadata.name
    namespace, _, name = pod.rpartition("/")
    return namespace or "default", name


def as_pods_and_objects(
    manifest: str | Pod | KubeObject | Iterable[Pod | KubeObject],
) -> tuple[list[Pod], list[KubeObject]]:
    """Pods and ConfigMaps/Secrets from manifest text (raises ``ValidationError`` on any
    problem), an object or objects."""
    if isinstance(manifest, str):
        pods, objects, errors = load_manifest_lenient(manifest)
        if errors:
            raise ValidationError([p for e in errors for p in e.problems])
        return pods, objects
    items = [manifest] if isinstance(manifest, Pod | ConfigMap | Secret) else list(manifest)
    return [i for i in items if isinstance(i, Pod)], [i for i in items if not isinstance(i, Pod)]


def steps(seconds: float, step: float) -> list[float]:
    """``seconds`` cut into ``step``-sized pieces, the last one shorter if need be."""
    if seconds < 0:
        raise ValueError("virtual time cannot go back")
    whole, rest = divmod(seconds, step)
    pieces = [step] * int(whole)
    return [*pieces, rest] if rest > 1e-9 else pieces


def node_config(root_dir: Path, config: KubeletConfig | None) -> KubeletConfig:
    """``config`` rooted at ``root_dir``, reading the fixed host DNS unless it names its own."""
    config = config or KubeletConfig()
    default_resolv_conf = attrs.fields(KubeletConfig).resolv_conf.default
    resolv_conf = config.resolv_conf
    if resolv_conf == default_resolv_conf:
        resolv_conf = str(root_dir / "host-resolv.conf")  # written by FakeNode
    return attrs.evolve(config, root_dir=str(root_dir), resolv_conf=resolv_conf)


class FakeNode:
    """A node (a ``Kubelet``) on the in-memory ``fake`` runtime, in virtual time.

    Nothing runs in the background and nothing sleeps: time moves only when the test moves it
    (``advance``, ``run_until``), and the node syncs after each ``step`` of virtual time on the
    way, as its loop would. At each of those instants it syncs until it has nothing left to do
    (a container that dies wakes it at once, as the runtime's event stream wakes a real node).
    The same test gives the same result every run::

        node = FakeNode(tmp_path)
        node.apply(MANIFEST)
        node.run_until(lambda: node.status("web").phase == "Running")

    ``node.runtime`` (a ``FakeRuntime``) scripts exits, crashes and faults;
    ``node.health_checker`` (a ``FakeHealthChecker``) answers the HTTP, TCP and gRPC probes as
    scripted (``node.health_checker.set_probe("app", "http", False)``) and lists the checks made;
    ``node.kubelet`` is the agent; ``node.clock`` the one ``ManualClock`` they all run on.
    ``runtime_options`` go to ``kubecore.load_runtime("fake", ...)`` (``images``, ``pulled``, ...).
    """

    def __init__(
        self,
        root_dir: str | os.PathLike[str],
        *,
        config: KubeletConfig | None = None,
        clock: ManualClock | None = None,
        step: float = 1.0,
        **runtime_options: Any,
    ) -> None:
        if step <= 0:
            raise ValueError("step must be positive")
        self.root_dir = Path(root_dir)
        self.root_dir.mkdir(parents=True, exist_ok=True)
        (self.root_dir / "host-resolv.conf").write_text(HOST_RESOLV_CONF)
        self.config = node_config(self.root_dir, config)
        self.clock = clock or ManualClock()
        self.step = step
        self.bundle: RuntimeBundle = load_runtime("fake", clock=self.clock, **runtime_options)
        assert self.bundle.name == "fake", f"the fake plugin gave {self.bundle!r}"
        self.runtime = cast("FakeRuntime", self.bundle.runtime)
        self.health_checker = cast("FakeHealthChecker", self.bundle.health_checker)
        self._pods: dict[tuple[str, str], Pod] = {}
        self._objects: dict[tuple[str, str, str], KubeObject] = {}
        self._deaths = 0
        self._subscription = self.runtime.watch_events(self._on_runtime_event)
        self.kubelet = self._new_kubelet(self.config)

    def _new_kubelet(self, config: KubeletConfig) -> Kubelet:
        # A restarted agent gets the very same runtime object, which still holds what the
        # earlier agent started: it adopts it (the fake alone cannot outlive its process).
        return Kubelet.from_bundle(attrs.evolve(self.bundle, adopts=True), config=config)

    # --- desired state ------------------------------------------------------------------------

    def apply(
        self, manifest_or_pods: str | Pod | KubeObject | Iterable[Pod | KubeObject]
    ) -> list[Pod]:
        """Add the pods, ConfigMaps and Secrets, or replace those of the same kind and
        ``namespace/name`` (``kubectl apply``). The node acts on them at its next sync."""
        pods, objects = as_pods_and_objects(manifest_or_pods)
        for pod in pods:
            self._pods[pod_key(pod)] = pod
        for obj in objects:
            self._objects[object_key(obj)] = obj
        self._hand_over()
        return pods

    def delete_object(self, kind: str, ref: str) -> None:
        """Delete a ConfigMap or Secret given with ``apply`` (``ref``: ``name`` or
        ``namespace/name``). Raises ``KeyError`` for one it was never given."""
        namespace, name = pod_key(ref)
        del self._objects[(kind, namespace, name)]
        self._hand_over()

    def delete(self, pod: PodRef) -> None:
        """Delete a pod given with ``apply``: the node kills it (with its grace period) as it
        syncs. Raises ``KeyError`` for a pod it was never given."""
        key = pod_key(pod)
        if key not in self._pods:
            raise KeyError(f"pod {'/'.join(key)} was never applied to this node")
        del self._pods[key]
        self._hand_over()

    def _hand_over(self) -> None:
        objects = tuple(self._objects.values())
        self.kubelet.update(PodUpdate(Operation.SET, tuple(self._pods.values()), "api", objects))

    def _on_runtime_event(self, event: RuntimeEvent) -> None:
        if event.type in (RuntimeEventType.DIED, RuntimeEventType.OOM):
            self._deaths += 1

    # --- time ---------------------------------------------------------------------------------

    def sync(self) -> None:
        """Sync now, without moving time, until a sync does nothing and sees no container die:
        in virtual time what the node does takes no time, so it settles at each instant."""
        for _ in range(SYNCS_PER_INSTANT):
            deaths = self._deaths
            report = self.kubelet.sync()
            if self._deaths == deaths and not (report.actions or report.removed):
                return

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass, the node syncing after each ``step``."""
        for piece in steps(seconds, self.step):
            self.clock.advance(piece)
            self.sync()

    def run_until(self, predicate: Callable[[], object], *, timeout: float = 60.0) -> float:
        """Sync now, then let time pass a ``step`` at a time until ``predicate()`` holds; the
        virtual seconds that took. Raises ``NotReached`` after ``timeout`` virtual seconds."""
        started = self.clock.monotonic()
        pieces = iter(steps(timeout, self.step))
        self.sync()
        while not predicate():
            piece = next(pieces, None)
            if piece is None:
                raise NotReached(
                    f"not reached within {timeout:g} virtual seconds: {predicate!r}\n"
                    f"{self.describe()}"
                )
            self.clock.advance(piece)
            self.sync()
        return self.clock.monotonic() - started

    # --- reading ------------------------------------------------------------------------------

    def pod(self, pod: PodRef) -> Pod:
        """The pod as the node reports it, status filled in. ``LookupError`` if not on it."""
        namespace, name = pod_key(pod)
        found = self.kubelet.get_pod(namespace, name)
        if found is None:
            raise LookupError(f"pod {namespace}/{name} is not on this node")
        return found

    def status(self, pod: PodRef) -> PodStatus:
        """The pod's status as ``kubectl get pod -o yaml`` shows it."""
        return self.pod(pod).status or PodStatus()

    def events(
        self, *, reason: str | None = None, pod: PodRef | None = None, type: str | None = None
    ) -> list[Event]:
        """Events recorded by the current agent, oldest first, optionally of one reason, one
        pod and one type (``"Warning"``)."""
        key = pod_key(pod) if pod is not None else None
        return [
            event
            for event in self.kubelet.views.recent_events()
            if (reason is None or event.reason == reason)
            and (type is None or event.type == type)
            and (
                key is None or (event.involved_object.namespace, event.involved_object.name) == key
            )
        ]

    def containers(
        self, pod: PodRef | None = None, name: str | None = None, *, running: bool = False
    ) -> list[RuntimeContainer]:
        """The runtime's containers (of one pod on the node, of one container name), oldest
        first: ``node.runtime.crash(node.containers("web", "app", running=True)[0].id)``."""
        return self.runtime.find_containers(
            name,
            pod_uid=self.pod(pod).uid if pod is not None else None,
            state=RuntimeState.RUNNING if running else None,
        )

    def describe(self) -> str:
        """One line per pod (phase, each container's state) and the last events: what a
        failing test should print."""
        lines = [describe_pod(pod) for pod in self.kubelet.pods()] or ["no pods"]
        lines += [
            f"  {e.type} {e.reason} {e.involved_object.name}: {e.message}"
            for e in self.kubelet.views.recent_events(limit=10)
        ]
        return "\n".join(lines)

    # --- the agent ----------------------------------------------------------------------------

    def restart_agent(self, config: KubeletConfig | None = None) -> Kubelet:
        """Stop the agent and start a new one on the same runtime, root dir and clock, given
        the pods this node was given (as its sources would): it adopts what runs."""
        self.kubelet.close()
        if config is not None:
            self.config = node_config(self.root_dir, config)
        self.kubelet = self._new_kubelet(self.config)
        if self._pods or self._objects:
            self._hand_over()
        return self.kubelet

    def close(self) -> None:
        """Stop the agent (if its loop was started) and close the runtime."""
        self.kubelet.close()
        if self._subscription is not None:
            self._subscription.close()
        self.runtime.close()

    def __enter__(self) -> FakeNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def describe_pod(pod: Pod) -> str:
    status = pod.status or PodStatus()
    states = []
    for c in status.container_statuses:
        if c.state.waiting is not None:
            state = f"waiting {c.state.waiting.reason}"
        elif c.state.terminated is not None:
            state = f"terminated {c.state.terminated.exit_code}"
        else:
            state = "running" if c.state.running is not None else "unknown"
        states.append(f"{c.name}={state} restarts={c.restart_count}")
    return f"{pod.metadata.namespace}/{pod.metadata.name} {status.phase} {' '.join(states)}"
