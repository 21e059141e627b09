"""The ``fake`` runtime plugin (entry point ``kubecore: fake = kubecore_fake._plugin``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from kubecore import RuntimeRegistry, hookimpl
from kubecore.runtime import Clock, InvalidConfig, RuntimeBundle, SystemClock, missing_clock_members
from kubecore.testing import ManualClock

_INT_OPTIONS = ("image_fs_capacity", "default_image_size")
_KNOWN = frozenset({"clock", "images", "pulled", "node_ip", "events", *_INT_OPTIONS})


def _image_option(name: str, value: object) -> Iterable[str] | Mapping[str, int] | None:
    """Images as given through the API, or ``a,b,c`` from the command line."""
    if value is None:
        return None
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, Mapping):
        return {str(k): int(v) for k, v in value.items()}
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    raise InvalidConfig(f"fake runtime option {name}: expected image references, got {value!r}")


_CLOCKS_BY_NAME: Mapping[str, Callable[[], Clock]] = {
    "system": SystemClock,
    "manual": ManualClock,
    "virtual": ManualClock,
}


def _clock_option(value: object) -> Clock | None:
    """A clock object as given through the API, or its name from the command line."""
    if value is None:
        return None
    expected = "fake runtime option clock: expected a Clock, 'system' or 'manual'"
    if isinstance(value, str):
        make = _CLOCKS_BY_NAME.get(value)
        if make is None:
            raise InvalidConfig(f"{expected}, got {value!r}")
        return make()
    missing = missing_clock_members(value)
    if missing:
        raise InvalidConfig(f"{expected}, got {value!r}, which lacks {', '.join(missing)}")
    return cast(Clock, value)


def _bool_option(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in (
        "1",
        "true",
        "yes",
        "on",
        "0",
        "false",
        "no",
        "off",
    ):
        return value.lower() in ("1", "true", "yes", "on")
    raise InvalidConfig(f"fake runtime option {name}: expected true or false, got {value!r}")


def create_fake_runtime(**options: Any) -> RuntimeBundle:
    """Build a ``FakeRuntime`` and its health checker.

    Options (strings from the command line are accepted): ``clock`` (a ``Clock``, ``system``
    or ``manual``), ``images`` (the only pullable images; default: any), ``pulled`` (present
    from the start), ``image_fs_capacity`` and ``default_image_size`` (bytes), ``node_ip``,
    ``events`` (false: no event stream).

    The bundle says ``adopts=False``: sandboxes and containers live in the ``FakeRuntime``
    object, so an agent that loads the runtime anew starts every pod again. A harness that
    restarts its agent in the same process hands the new agent the same runtime object instead.
    """
    from kubecore_fake._health import FakeHealthChecker
    from kubecore_fake._runtime import FakeRuntime

    unknown = sorted(set(options) - _KNOWN)
    if unknown:
        raise InvalidConfig(
            f"unknown fake runtime option(s) {', '.join(unknown)};"
            f" known: {', '.join(sorted(_KNOWN))}"
        )
    kwargs: dict[str, Any] = {}
    for name in _INT_OPTIONS:
        if name in options:
            try:
                kwargs[name] = int(options[name])
            except (TypeError, ValueError):
                raise InvalidConfig(
                    f"fake runtime option {name}: expected a number of bytes, got {options[name]!r}"
                ) from None
    if "pulled" in options:
        kwargs["pulled"] = _image_option("pulled", options["pulled"]) or ()
    if "node_ip" in options:
        kwargs["node_ip"] = str(options["node_ip"])
    if "events" in options:
        kwargs["events"] = _bool_option("events", options["events"])
    runtime = FakeRuntime(
        _clock_option(options.get("clock")),
        _image_option("images", options.get("images")),
        **kwargs,
    )
    return RuntimeBundle(
        runtime=runtime,
        puller=runtime,
        health_checker=FakeHealthChecker(runtime),
        name="fake",
        clock=runtime.clock,
        adopts=False,  # its objects live in this process only: a fresh load starts empty
    )


@hookimpl
def kubecore_register_runtimes(registry: RuntimeRegistry) -> None:
    registry.register(
        "fake",
        create_fake_runtime,
        "in-memory runtime: deterministic, virtual time, fault injection (tests and demos)",
        virtual_time=True,
    )
