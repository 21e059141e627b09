"""Typed errors. Adapters translate their engine's errors into these; the agent retries on them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import attrs


class KubecoreError(Exception):
    """Base of every error kubecore raises on purpose."""


@attrs.frozen
class FieldError:
    """One problem in a manifest: ``path`` like ``spec.containers[1].image``, a plain message."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ValidationError(KubecoreError, ValueError):
    """A manifest (or pod) has one or more problems; ``problems`` lists every one of them."""

    def __init__(
        self, problems: list[FieldError] | tuple[FieldError, ...], source: str = ""
    ) -> None:
        self.problems: tuple[FieldError, ...] = tuple(problems)
        self.source = source
        where = f"{source}: " if source else ""
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{where}{len(self.problems)} problem(s)\n{lines}")

    def __reduce__(self) -> tuple[Callable[..., ValidationError], tuple[object, ...]]:
        # The default rebuilds an exception from its message; these are built from problems.
        return type(self), (self.problems, self.source)


class DocumentError(ValidationError):
    """The problems of one document (or one ``List`` item) of a manifest stream.

    ``source`` names the file; ``document`` is the document's index in the stream (counting
    non-empty documents from 0), ``item`` its index in a ``kind: List`` (else ``None``), and
    ``pod_name`` the pod's name when it could be read.
    """

    def __init__(
        self,
        problems: Sequence[FieldError],
        source: str = "",
        *,
        document: int = 0,
        item: int | None = None,
        pod_name: str = "",
    ) -> None:
        super().__init__(list(problems), source)
        self.document = document
        self.item = item
        self.pod_name = pod_name
        where = f"document {document}" + (f", item {item}" if item is not None else "")
        if pod_name:
            where += f" (pod {pod_name!r})"
        head = f"{source}: {where}" if source else where
        lines = "\n".join(f"  {p}" for p in self.problems)
        self.args = (f"{head}: {len(self.problems)} problem(s)\n{lines}",)

    def __reduce__(self) -> tuple[Callable[..., ValidationError], tuple[object, ...]]:
        rebuild = functools.partial(
            type(self), document=self.document, item=self.item, pod_name=self.pod_name
        )
        return rebuild, (self.problems, self.source)


class SubscriptionClosed(KubecoreError):
    """A change subscription (``Kubelet.subscribe``) was closed: by its consumer, or by the
    agent closing."""


class PluginError(KubecoreError):
    """A runtime plugin is broken, duplicated or misconfigured."""


class UnknownRuntime(PluginError, LookupError):
    """``load_runtime`` was asked for a runtime no installed plugin provides."""

    def __init__(self, name: str, installed: list[str]) -> None:
        import difflib  # only when a name is mistyped

        self.name = name
        self.installed = installed
        close = difflib.get_close_matches(name, installed, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        super().__init__(
            f"unknown runtime {name!r}{hint}; installed runtimes: "
            f"{', '.join(installed) or '(none)'}"
        )

    def __reduce__(self) -> tuple[type[UnknownRuntime], tuple[str, list[str]]]:
        return type(self), (self.name, self.installed)


class DuplicateRuntime(PluginError):
    """Two plugins offer a runtime under the same name."""


class PluginWarning(UserWarning):
    """A plugin could not be loaded; the other plugins still work."""


class RegistryConfigError(KubecoreError, ValueError):
    """A Docker config file (or pull secret) cannot be read or has a malformed entry."""


class CreateContainerConfigError(KubecoreError):
    """A container's config cannot be made from its spec (a ConfigMap, Secret or key its
    environment needs is missing; runAsNonRoot and an image that runs as root, ...): its status
    waits with reason ``CreateContainerConfigError``."""


class ContainerRuntimeError(KubecoreError):
    """A runtime or image-service call failed. Safe to retry at the next sync."""


class NotFound(ContainerRuntimeError, LookupError):
    """The object named does not exist (any more)."""


class SandboxNotFound(NotFound):
    """The sandbox named does not exist (any more)."""


class ContainerNotFound(NotFound):
    """The container named does not exist (any more)."""


class SandboxUnusable(ContainerRuntimeError):
    """A container cannot join its sandbox's namespaces although the engine lists the sandbox
    as running (the engine lost them, e.g. across an engine restart). The agent stops that
    sandbox, so the next sync creates a new one."""


class ImageNotFound(NotFound):
    """The image is not in the runtime's store."""


class Conflict(ContainerRuntimeError):
    """The request conflicts with the current state (a name in use, a running container)."""


class NameOwnedByAnotherNode(Conflict):
    """The name is taken on the engine by an object another node owns (``owned_by``): it is
    never removed to make room. Two agents on one engine should never make the same name (a
    static pod's UID holds the node name); this is what a clash looks like if they do."""


class StillStarting(Conflict):
    """An earlier instance of the container cannot be removed: the runtime may still be starting
    it (containerd: "container is in starting state"), after an agent was stopped mid-start. No
    new instance is made meanwhile; the next relist sees it again (adopted if it runs)."""


class ImagePullError(ContainerRuntimeError):
    """An image could not be pulled (missing, unauthorized, registry down, error in the stream)."""


class ImageNeverPull(ImagePullError):
    """The image is absent and the pull policy is Never."""


class RuntimeUnavailable(ContainerRuntimeError):
    """The engine cannot be reached."""


class RuntimeTimeout(ContainerRuntimeError, TimeoutError):
    """A call (or an exec) did not finish in time."""


class InvalidConfig(ContainerRuntimeError, ValueError):
    """The engine refused a config (a bad image name, an option it does not support)."""


class StreamingUnsupported(ContainerRuntimeError):
    """The runtime lacks a streaming capability: without ``StreamingRuntime`` it cannot exec or
    attach interactively (``kubectl exec``, ``attach``, ``cp``), without ``PortForwarder`` it
    cannot forward ports (``kubectl port-forward``)."""


class LogRequestError(KubecoreError, ValueError):
    """A log query the node cannot answer as asked: ``previous`` with no terminated instance, a
    container waiting to start, a bad option (HTTP 400, as the kubelet answers it)."""


class BadParameter(KubecoreError, ValueError):
    """A query-string parameter with a value it cannot have (HTTP 400); the message names it."""


class SourceUnavailable(KubecoreError, ValueError):
    """A pod source cannot be used as given (a manifest path that does not exist at start-up)."""


class InvalidKubeletConfig(KubecoreError, ValueError):
    """A ``KubeletConfig`` holds a value it cannot have; ``problems`` names each field and why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid KubeletConfig: " + "; ".join(problems))
        self.problems = tuple(problems)


class RootDirInUse(KubecoreError):
    """Another agent process holds the root directory's lock."""

    def __init__(self, root_dir: str, holder: str) -> None:
        super().__init__(
            f"root directory {root_dir} is in use by another kubecore agent ({holder});"
            " give each agent its own --root-dir"
        )
        self.root_dir = root_dir
        self.holder = holder


class NodeNameInUse(KubecoreError):
    """Another live agent holds the node name on this engine: two agents with one node name
    would both sync (and fight over) the same containers."""

    def __init__(self, node_name: str, holder: str, renewed_ago: float, lapses_in: float) -> None:
        super().__init__(
            f"node name {node_name!r} is in use on this engine by another kubecore agent"
            f" ({holder}; its lease was renewed {max(0.0, renewed_ago):.0f}s ago): give each"
            f" agent on one engine its own --node-name, or stop that agent first (if it was"
            f" killed, its lease lapses in {max(0.0, lapses_in):.0f}s)"
        )
        self.node_name = node_name
        self.holder = holder


class MountFailed(KubecoreError):
    """A pod's volume could not be set up (the kubelet's ``FailedMount``): a hostPath of the
    wrong type, a missing ConfigMap or Secret. The pod waits in ``ContainerCreating`` and the
    set-up is tried again at each sync."""

    def __init__(self, volume: str, reason: str) -> None:
        super().__init__(f'MountVolume.SetUp failed for volume "{volume}" : {reason}')
        self.volume = volume
        self.reason = reason


class SpdyProtocolError(Exception):
    """Bytes that are not SPDY/3.1 (or exceed a bound): the connection must end."""


class SpdyClosed(Exception):
    """The stream (or the whole connection) can no longer be written."""
