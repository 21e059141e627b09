"""kubecore: the core of a container node agent (the Kubernetes kubelet) as a pluggable library.

The names here are what embedding the agent needs: the agent (``Kubelet``, ``KubeletConfig``) and
its reports, the pod sources, the manifest loaders, the runtime registry (``load_runtime``), the
pod and its verdict (``pod_settled``, ``pod_verdict``), the base errors, and the four seams a
plugin fills (``ContainerRuntime``, ``Puller``, ``HealthChecker``, ``EventRecorder``). The rest
lives in a few public namespaces:

* ``kubecore.v1``: the Kubernetes core/v1 model (``Pod``, ``Container``, ... every object)
* ``kubecore.runtime``: the whole plugin contract (protocols, values, labels, errors, image
  references, hooks)
* ``kubecore.manifest``: load, validate and dump pod manifests
* ``kubecore.events``: the events the agent records, their reasons (``EventReason``), recorders
* ``kubecore.server``: the HTTP API and the metrics
* ``kubecore.streaming``: SPDY/3.1 framing and connections, for a runtime plugin that streams
* ``kubecore.credentials``: registry keyrings and the puller that uses them
* ``kubecore.aio``: the agent for asyncio and trio programs (``AsyncKubelet``)
* ``kubecore.testing``: ``FakeNode``, ``ManualClock``, strategies and the runtime conformance suite

Everything else (the modules whose names start with ``_``) is private. The public names are
listed once, in ``kubecore._util.exports.SURFACE``.

Everything is imported on first use (``kubecore.Kubelet``, ``kubecore.v1``, ``import
kubecore.manifest``): ``import kubecore`` alone loads no namespace, so a command that needs little
starts fast.
"""

import logging as _logging
import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace
from kubecore._version import __version__ as __version__

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore import aio as aio
    from kubecore import cli as cli
    from kubecore import credentials as credentials
    from kubecore import events as events
    from kubecore import manifest as manifest
    from kubecore import runtime as runtime
    from kubecore import server as server
    from kubecore import streaming as streaming
    from kubecore import testing as testing
    from kubecore import v1 as v1
    from kubecore._agent.changes import (
        ChangeSubscription as ChangeSubscription,
    )
    from kubecore._agent.changes import (
        EventChange as EventChange,
    )
    from kubecore._agent.changes import (
        FellBehind as FellBehind,
    )
    from kubecore._agent.changes import (
        PodChange as PodChange,
    )
    from kubecore._agent.config import (
        KubeletConfig as KubeletConfig,
    )
    from kubecore._agent.desired import (
        PodReport as PodReport,
    )
    from kubecore._agent.kubelet import (
        Kubelet as Kubelet,
    )
    from kubecore._agent.sync_pass import (
        SyncReport as SyncReport,
    )
    from kubecore._config.base import (
        PodSource as PodSource,
    )
    from kubecore._config.base import (
        SourceProblem as SourceProblem,
    )
    from kubecore._config.file import (
        FileSource as FileSource,
    )
    from kubecore._config.http import (
        HTTPSource as HTTPSource,
    )
    from kubecore._config.podconfig import (
        PodConfig as PodConfig,
    )
    from kubecore._config.poller import (
        SourcePoller as SourcePoller,
    )
    from kubecore._config.static import (
        StaticSource as StaticSource,
    )
    from kubecore._config.updates import (
        Operation as Operation,
    )
    from kubecore._config.updates import (
        PodUpdate as PodUpdate,
    )
    from kubecore._contract.errors import (
        ContainerRuntimeError as ContainerRuntimeError,
    )
    from kubecore._contract.errors import (
        FieldError as FieldError,
    )
    from kubecore._contract.errors import (
        InvalidKubeletConfig as InvalidKubeletConfig,
    )
    from kubecore._contract.errors import (
        KubecoreError as KubecoreError,
    )
    from kubecore._contract.errors import (
        NodeNameInUse as NodeNameInUse,
    )
    from kubecore._contract.errors import (
        PluginError as PluginError,
    )
    from kubecore._contract.errors import (
        RootDirInUse as RootDirInUse,
    )
    from kubecore._contract.errors import (
        SourceUnavailable as SourceUnavailable,
    )
    from kubecore._contract.errors import (
        SubscriptionClosed as SubscriptionClosed,
    )
    from kubecore._contract.errors import (
        ValidationError as ValidationError,
    )
    from kubecore._contract.protocols import (
        ContainerRuntime as ContainerRuntime,
    )
    from kubecore._contract.protocols import (
        EventRecorder as EventRecorder,
    )
    from kubecore._contract.protocols import (
        HealthChecker as HealthChecker,
    )
    from kubecore._contract.protocols import (
        Puller as Puller,
    )
    from kubecore._manifest import (
        load_pods_from_file as load_pods_from_file,
    )
    from kubecore._manifest import (
        load_pods_from_string as load_pods_from_string,
    )
    from kubecore._model.v1 import (
        Pod as Pod,
    )
    from kubecore._plugins.registry import (
        RuntimeRegistry as RuntimeRegistry,
    )
    from kubecore._plugins.registry import (
        hookimpl as hookimpl,
    )
    from kubecore._plugins.registry import (
        load_runtime as load_runtime,
    )
    from kubecore._plugins.registry import (
        runtimes as runtimes,
    )
    from kubecore._status.compute import (
        pod_settled as pod_settled,
    )
    from kubecore._status.compute import (
        pod_verdict as pod_verdict,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)

# A library prints nothing unless its host configures logging: without a handler of its own,
# ``logging`` would write a warning to stderr through its last-resort handler.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())
