"""The ``fake`` runtime plugin (entry point ``kubecore: fake = kubecore_fake._plugin``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubecore._clock import Clock
from kubecore._plugins import RuntimeBundle, RuntimeRegistry, hookimpl


def _image_option(value: object) -> Iterable[str] | Mapping[str, int] | None:
    """Images as given through the API, or ``a,b,c`` from the command line."""
    if value is None:
        return None
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, Mapping):
        return {str(k): int(v) for k, v in value.items()}
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    raise TypeError(f"images: expected a list of references, got {type(value).__name__}")


def create_fake_runtime(
    clock: Clock | None = None, images: object = None, **options: Any
) -> RuntimeBundle:
    """Build a ``FakeRuntime`` (``options`` go to its constructor) with its health checker."""
    from kubecore_fake._health import FakeHealthChecker
    from kubecore_fake._runtime import FakeRuntime

    if "pulled" in options:
        options["pulled"] = _image_option(options["pulled"]) or ()
    runtime = FakeRuntime(clock, _image_option(images), **options)
    return RuntimeBundle(
        runtime=runtime, puller=runtime, health_checker=FakeHealthChecker(runtime), name="fake"
    )


@hookimpl
def kubecore_register_runtimes(registry: RuntimeRegistry) -> None:
    registry.register(
        "fake",
        create_fake_runtime,
        "in-memory runtime: deterministic, virtual time, fault injection (tests and demos)",
    )
