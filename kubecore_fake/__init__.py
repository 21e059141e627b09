"""kubecore_fake: an in-memory container runtime for kubecore, a plugin like any other.

``FakeRuntime`` implements ``ContainerRuntime`` and ``Puller``; ``FakeHealthChecker`` implements
``HealthChecker``. Load it like any runtime (``kubecore.load_runtime("fake", clock=...)``) or
build it directly. It is deterministic, thread-safe, runs in virtual time with a ``ManualClock``
and has controls for tests: scripted behaviours, fault injection, latency, unmanaged objects.
"""

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubecore_fake._behaviour import Behaviour
    from kubecore_fake._controls import OPERATIONS
    from kubecore_fake._exec import ExecRequest
    from kubecore_fake._health import FakeHealthChecker
    from kubecore_fake._images import image_id_for, normalize_image
    from kubecore_fake._plugin import create_fake_runtime
    from kubecore_fake._runtime import FakeRuntime
    from kubecore_fake._shell import TimedFile, TimedLog

# Names are imported on first use: the plugin entry point (``kubecore_fake._plugin``) is
# loaded by every ``kubecore run``, whatever the runtime, and must stay cheap.
_DEFINED_IN = {
    "FakeHealthChecker": "kubecore_fake._health",
    "create_fake_runtime": "kubecore_fake._plugin",
    "OPERATIONS": "kubecore_fake._controls",
    "Behaviour": "kubecore_fake._behaviour",
    "ExecRequest": "kubecore_fake._exec",
    "FakeRuntime": "kubecore_fake._runtime",
    "image_id_for": "kubecore_fake._images",
    "normalize_image": "kubecore_fake._images",
    "TimedFile": "kubecore_fake._shell",
    "TimedLog": "kubecore_fake._shell",
}


def __getattr__(name: str) -> Any:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_DEFINED_IN])


__all__ = [
    "OPERATIONS",
    "Behaviour",
    "ExecRequest",
    "FakeHealthChecker",
    "FakeRuntime",
    "TimedFile",
    "TimedLog",
    "create_fake_runtime",
    "image_id_for",
    "normalize_image",
]

# A library prints nothing unless its host configures logging (see ``kubecore``).
logging.getLogger(__name__).addHandler(logging.NullHandler())
