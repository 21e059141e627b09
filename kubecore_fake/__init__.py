"""kubecore_fake: an in-memory container runtime for kubecore, a plugin like any other.

``FakeRuntime`` implements ``ContainerRuntime`` and ``Puller``; ``FakeHealthChecker`` implements
``HealthChecker``. Load it like any runtime (``kubecore.load_runtime("fake", clock=...)``) or
build it directly. It is deterministic, thread-safe, runs in virtual time with a ``ManualClock``
and has controls for tests: scripted behaviours, fault injection, latency, unmanaged objects.
"""

from kubecore_fake._health import FakeHealthChecker
from kubecore_fake._plugin import create_fake_runtime
from kubecore_fake._runtime import (
    OPERATIONS,
    Behaviour,
    ExecRequest,
    FakeRuntime,
    image_id_for,
    normalize_image,
)
from kubecore_fake._shell import TimedFile, TimedLog

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
