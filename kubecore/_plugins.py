"""Runtime plugins: found through pluggy entry points (group ``kubecore``), loaded only when asked.

A plugin is a module (or any object) with a ``kubecore_register_runtimes`` hook implementation::

    from kubecore import hookimpl

    @hookimpl
    def kubecore_register_runtimes(registry):
        registry.register("mine", create_my_runtime, "My engine over its Python client")

and an entry point in its distribution's metadata::

    [options.entry_points]
    kubecore =
        mine = my_package._plugin

``create_my_runtime(**options)`` returns a ``RuntimeBundle``. Nothing is imported until
``runtimes()``, ``load_runtime()`` or ``KubecorePluginManager.load()`` is called; a plugin that
fails to import is reported (a ``PluginWarning`` and ``broken_plugins()``) without hiding the
others; ``KUBECORE_DISABLE_PLUGINS=a,b`` skips entry points by name.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
import pluggy

from kubecore._clock import Clock
from kubecore._errors import DuplicateRuntime as DuplicateRuntime
from kubecore._errors import PluginError, UnknownRuntime
from kubecore._errors import PluginWarning as PluginWarning
from kubecore._runtime import ContainerRuntime, HealthChecker, Puller

logger = logging.getLogger(__name__)

PROJECT_NAME = "kubecore"
ENTRY_POINT_GROUP = "kubecore"
DISABLE_ENV_VAR = "KUBECORE_DISABLE_PLUGINS"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

_RUNTIME_NAME = re.compile(r"^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$")


@attrs.frozen
class RuntimeBundle:
    """What a runtime factory returns: the engine's runtime and image service, and optionally
    its own health checker (None: the core's default checker is used)."""

    runtime: ContainerRuntime
    puller: Puller
    health_checker: HealthChecker | None = None
    name: str = ""
    clock: Clock | None = None
    """The clock the runtime keeps time on (the in-memory runtime's virtual clock). The agent
    takes its clock from here; None: the system clock."""
    adopts: bool = True
    """A new instance of the runtime sees the sandboxes and containers an earlier instance
    started, with the same ids and labels, so a restarted agent adopts them. False: the agent
    warns at start-up that a restart starts every pod again."""


RuntimeFactory = Callable[..., RuntimeBundle]
"""Called with the user's ``**options`` (from the API, or ``--runtime-opt`` on the command line)."""


@attrs.frozen
class RuntimeInfo:
    """One installed runtime, as ``runtimes()`` lists it."""

    name: str
    description: str = ""
    plugin: str = ""
    """The name the providing plugin is registered under (its entry-point name)."""
    distribution: str = ""
    """``project version`` of the distribution that ships the plugin ('' for in-process plugins)."""
    virtual_time: bool = False
    """The factory accepts a ``clock`` option and runs in that clock's (possibly virtual) time."""


@attrs.frozen
class BrokenPlugin:
    """A plugin that failed to import or to register its runtimes."""

    name: str
    error: str
    distribution: str = ""


@attrs.frozen
class _Registration:
    info: RuntimeInfo
    factory: RuntimeFactory


class RuntimeRegistry:
    """Handed to each plugin's ``kubecore_register_runtimes`` hook; collects named factories."""

    def __init__(self) -> None:
        self._entries: dict[str, _Registration] = {}
        self._plugin = ""
        self._distribution = ""

    def register(
        self,
        name: str,
        factory: RuntimeFactory,
        description: str = "",
        *,
        virtual_time: bool = False,
    ) -> None:
        """Offer a runtime under ``name``. A name already offered by another plugin is an error.
        ``virtual_time``: the factory accepts a ``clock`` option and runs on it."""
        if not isinstance(name, str) or not _RUNTIME_NAME.match(name):
            raise PluginError(
                f"plugin {self._plugin!r}: invalid runtime name {name!r} "
                "(lower-case letters, digits, '.', '_' and '-', at most 63 characters)"
            )
        if not callable(factory):
            raise PluginError(f"plugin {self._plugin!r}: the factory for {name!r} is not callable")
        existing = self._entries.get(name)
        if existing is not None:
            raise DuplicateRuntime(
                f"runtime {name!r} is registered twice: by plugin {existing.info.plugin!r}"
                f"{_from_dist(existing.info.distribution)} and by plugin {self._plugin!r}"
                f"{_from_dist(self._distribution)}"
            )
        self._entries[name] = _Registration(
            RuntimeInfo(name, description, self._plugin, self._distribution, virtual_time),
            factory,
        )

    def _set_current(self, plugin: str, distribution: str) -> None:
        self._plugin = plugin
        self._distribution = distribution

    def _drop_plugin(self, plugin: str) -> None:
        for name in [n for n, r in self._entries.items() if r.info.plugin == plugin]:
            del self._entries[name]

    @property
    def infos(self) -> list[RuntimeInfo]:
        return sorted((r.info for r in self._entries.values()), key=lambda i: i.name)

    def get(self, name: str) -> _Registration | None:
        return self._entries.get(name)


def _from_dist(distribution: str) -> str:
    return f" (from {distribution})" if distribution else ""


class KubecoreHookspecs:
    """The hooks a kubecore plugin may implement (all prefixed ``kubecore_``)."""

    @hookspec
    def kubecore_register_runtimes(self, registry: RuntimeRegistry) -> None:
        """Register the plugin's runtimes with ``registry.register(name, factory, description)``.

        Called once per load; must not start anything (a factory does that when asked).
        """


def disabled_from_env(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """Entry-point names listed (comma separated) in ``KUBECORE_DISABLE_PLUGINS``."""
    raw = (os.environ if environ is None else environ).get(DISABLE_ENV_VAR, "")
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


def _dist_label(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ""
    return f"{dist.metadata['Name']} {dist.version}"


class KubecorePluginManager(pluggy.PluginManager):
    """A pluggy ``PluginManager`` for kubecore's hooks, with runtime discovery on top.

    Create one for isolation (tests, embedding); ``runtimes()`` and ``load_runtime()`` at module
    level build a fresh one each call. Entry points are read on the first ``load()`` (or any call
    that needs the plugins), never at construction.
    """

    def __init__(
        self,
        *,
        extra_plugins: Iterable[object] = (),
        disabled: Iterable[str] | None = None,
        entry_points: bool = True,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(KubecoreHookspecs)
        self._extra_plugins = list(extra_plugins)
        self._use_entry_points = entry_points
        self._disabled = disabled_from_env(environ) | frozenset(disabled or ())
        self._broken: dict[str, BrokenPlugin] = {}
        self._dists: dict[str, str] = {}
        self._registry: RuntimeRegistry | None = None
        self._loaded = False
        for name in self._disabled:
            self.set_blocked(name)

    # -- loading ----------------------------------------------------------------------------

    @property
    def disabled(self) -> frozenset[str]:
        return self._disabled

    def load(self) -> None:
        """Import the entry-point plugins and register the extra ones (once)."""
        if self._loaded:
            return
        self._loaded = True
        for plugin in self._extra_plugins:
            if not self.is_registered(plugin):
                self.register(plugin, name=self._free_name(_object_name(plugin)))
        if self._use_entry_points:
            self._load_entry_points()
        self.check_pending()

    def _load_entry_points(self) -> None:
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = _dist_label(ep)
            if ep.name in self._disabled:
                logger.info("kubecore plugin %r is disabled", ep.name, extra={"plugin": ep.name})
                continue
            if self.has_plugin(ep.name) or ep.name in self._broken:
                existing = self._dists.get(ep.name, "")
                self._mark_broken(
                    ep.name,
                    f"the plugin name is already taken{_from_dist(existing)}",
                    dist,
                )
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # any import failure is reported, not raised
                self._mark_broken(ep.name, f"{type(exc).__name__}: {exc}", dist)
                continue
            try:
                self.register(plugin, name=ep.name)
            except Exception as exc:
                self._mark_broken(ep.name, f"{type(exc).__name__}: {exc}", dist)
                continue
            self._dists[ep.name] = dist

    def _free_name(self, base: str) -> str:
        name, n = base, 1
        while self.has_plugin(name) or self.is_blocked(name):
            n += 1
            name = f"{base}#{n}"
        return name

    def _mark_broken(self, name: str, error: str, distribution: str) -> None:
        self._broken[name] = BrokenPlugin(name, error, distribution)
        message = f"kubecore plugin {name!r}{_from_dist(distribution)} is broken: {error}"
        logger.info(message, extra={"plugin": name})
        warnings.warn(message, PluginWarning, stacklevel=2)

    def check_pending(self) -> None:
        """Raise ``PluginError`` if a plugin implements a hook kubecore does not define."""
        try:
            super().check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {exc.plugin!r}: {exc}") from exc

    def broken_plugins(self) -> list[BrokenPlugin]:
        self.load()
        self._collect()
        return sorted(self._broken.values(), key=lambda b: b.name)

    # -- runtimes ---------------------------------------------------------------------------

    def _collect(self) -> RuntimeRegistry:
        if self._registry is not None:
            return self._registry
        self.load()
        registry = RuntimeRegistry()
        caller = self.hook.kubecore_register_runtimes
        # One call per plugin (pluggy's order: last registered first) so that each registration
        # knows which plugin made it, and a failing plugin does not take the others down.
        for impl in reversed(caller.get_hookimpls()):
            if impl.hookwrapper or impl.wrapper:
                logger.debug("ignoring wrapper %r for kubecore_register_runtimes", impl.plugin_name)
                continue
            registry._set_current(impl.plugin_name, self._dists.get(impl.plugin_name, ""))
            args = [{"registry": registry}[name] for name in impl.argnames]
            try:
                impl.function(*args)
            except DuplicateRuntime:
                raise
            except PluginError as exc:
                registry._drop_plugin(impl.plugin_name)
                self._mark_broken(impl.plugin_name, str(exc), self._dists.get(impl.plugin_name, ""))
            except Exception as exc:
                registry._drop_plugin(impl.plugin_name)
                self._mark_broken(
                    impl.plugin_name,
                    f"kubecore_register_runtimes raised {type(exc).__name__}: {exc}",
                    self._dists.get(impl.plugin_name, ""),
                )
        self._registry = registry
        return registry

    def runtimes(self) -> list[RuntimeInfo]:
        """Every runtime the loaded plugins offer, sorted by name."""
        return self._collect().infos

    def load_runtime(self, name: str, /, **options: Any) -> RuntimeBundle:
        """Build the runtime called ``name`` with ``options``.

        Raises ``UnknownRuntime`` (listing the installed ones) or ``PluginError`` when the
        factory fails or returns something that is not a usable ``RuntimeBundle``.
        """
        registry = self._collect()
        entry = registry.get(name)
        if entry is None:
            raise UnknownRuntime(name, [info.name for info in registry.infos])
        origin = f"runtime {name!r} (plugin {entry.info.plugin!r})"
        try:
            bundle = entry.factory(**options)
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(f"{origin} failed to start: {type(exc).__name__}: {exc}") from exc
        return _checked_bundle(bundle, name, origin)


def _object_name(plugin: object) -> str:
    """A readable plugin name: a module's name, else the object's class."""
    module_name = getattr(plugin, "__name__", None)
    if isinstance(module_name, str):
        return module_name
    kind = type(plugin)
    return f"{kind.__module__}.{kind.__qualname__}"


def _checked_bundle(bundle: object, name: str, origin: str) -> RuntimeBundle:
    if not isinstance(bundle, RuntimeBundle):
        raise PluginError(
            f"{origin}: the factory returned {type(bundle).__name__}, not a RuntimeBundle"
        )
    problems = [
        f"{role} lacks {', '.join(missing)}"
        for role, obj, proto in (
            ("runtime", bundle.runtime, ContainerRuntime),
            ("puller", bundle.puller, Puller),
        )
        if (missing := _missing_methods(obj, proto))
    ]
    if bundle.health_checker is not None and (
        missing := _missing_methods(bundle.health_checker, HealthChecker)
    ):
        problems.append(f"health_checker lacks {', '.join(missing)}")
    if problems:
        raise PluginError(f"{origin} returned an incomplete bundle: {'; '.join(problems)}")
    return bundle if bundle.name else attrs.evolve(bundle, name=name)


def _missing_methods(obj: object, protocol: type) -> list[str]:
    names = [n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")]
    return sorted(n for n in names if not callable(getattr(obj, n, None)))


# -- module-level conveniences ------------------------------------------------------------------


def plugin_manager(
    extra_plugins: Iterable[object] = (),
    disabled: Iterable[str] | None = None,
    *,
    entry_points: bool = True,
    environ: Mapping[str, str] | None = None,
) -> KubecorePluginManager:
    """A fresh, isolated plugin manager. ``extra_plugins`` are registered like installed ones;
    ``disabled`` adds to ``KUBECORE_DISABLE_PLUGINS``; ``entry_points=False`` ignores installed
    plugins entirely."""
    return KubecorePluginManager(
        extra_plugins=extra_plugins, disabled=disabled, entry_points=entry_points, environ=environ
    )


def runtimes() -> list[RuntimeInfo]:
    """The runtimes installed plugins offer (imports the plugin modules, not their engines)."""
    return plugin_manager().runtimes()


def broken_plugins() -> list[BrokenPlugin]:
    """Installed plugins that failed to load, each with its error."""
    return plugin_manager().broken_plugins()


def load_runtime(name: str, /, **options: Any) -> RuntimeBundle:
    """Build the installed runtime ``name``: ``load_runtime("fake", clock=ManualClock())``."""
    return plugin_manager().load_runtime(name, **options)
