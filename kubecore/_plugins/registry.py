"""Runtime plugins: found through pluggy entry points (group ``kubecore``), loaded only when asked.

A plugin is a module (or any object) with a ``kubecore_register_runtimes`` hook implementation
(and, to add subcommands to the ``kubecore`` command, ``kubecore_add_commands``: see
``kubecore._plugins.commands``)::

    from kubecore import hookimpl

    @hookimpl
    def kubecore_register_runtimes(registry):
        registry.register("mine", create_my_runtime, "My engine over its Python client")

and an entry point in its distribution's metadata::

    [options.entry_points]
    kubecore =
        mine = my_package._plugin

``create_my_runtime(**options)`` returns a ``RuntimeBundle``. Nothing is imported until
``runtimes()``, ``load_runtime()`` or ``KubecorePluginManager.load()`` is called. A plugin that
fails to import, implements a hook kubecore does not define (``kubecore_register_runtime``) or
none, or whose hook raises is reported by name with the reason (a ``PluginWarning`` and
``broken_plugins()``) and skipped; the others keep working. A runtime name two plugins offer is
listed for both, and loading it is a ``DuplicateRuntime`` naming both.
``KUBECORE_DISABLE_PLUGINS=a,b`` skips entry points by name.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import logging
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
import pluggy

from kubecore._contract.errors import DuplicateRuntime as DuplicateRuntime
from kubecore._contract.errors import PluginError, UnknownRuntime
from kubecore._contract.errors import PluginWarning as PluginWarning
from kubecore._contract.protocols import ContainerRuntime, HealthChecker, Puller
from kubecore._plugins.commands import CommandSet
from kubecore._util.clock import Clock

logger = logging.getLogger(__name__)

PROJECT_NAME = "kubecore"
ENTRY_POINT_GROUP = "kubecore"
DISABLE_ENV_VAR = "KUBECORE_DISABLE_PLUGINS"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
"""Marks the hook specifications of kubecore's plugin manager (``KubecoreHookspecs``)."""
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Marks a plugin's hook implementations: ``@hookimpl def kubecore_register_runtimes(registry)``."""

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

    def agent_clock(self, clock: Clock | None = None) -> Clock | None:
        """The clock an agent on this runtime keeps time on: the bundle's, so that a harness
        passes its clock once. ``clock`` is accepted when it is (or equals) that clock, or when the
        bundle has none; any other clock would split time in two, and is a ``ValueError``."""
        if self.clock is None or clock is None or clock is self.clock or clock == self.clock:
            return self.clock if self.clock is not None else clock
        raise ValueError(
            f"runtime {self.name or '(unnamed)'!r} keeps time on {self.clock!r}, but the agent "
            f"was given clock={clock!r}: give the clock to the runtime (load_runtime(name, "
            "clock=...)) and let the agent take it from the bundle"
        )

    def restart_warning(self) -> str:
        """What an agent on a runtime that cannot adopt says at start-up."""
        return (
            f"runtime {self.name or '(unnamed)'!r} cannot adopt what an earlier instance started:"
            " if the agent restarts, every pod is started again and the containers the earlier"
            " agent left running are not managed any more"
        )


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
    unavailable: str = ""
    """Why ``load_runtime(name)`` fails here ('' when it can be loaded): a missing optional
    dependency, or another plugin offering the same name."""


@attrs.frozen
class BrokenPlugin:
    """A plugin that failed to import, was refused (an unknown hook, no hook) or failed to
    register its runtimes; it is skipped."""

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
        self._entries: dict[str, list[_Registration]] = {}
        self._plugin = ""
        self._distribution = ""

    def register(
        self,
        name: str,
        factory: RuntimeFactory,
        description: str = "",
        *,
        virtual_time: bool = False,
        unavailable: str = "",
    ) -> None:
        """Offer a runtime under ``name``. ``virtual_time``: the factory accepts a ``clock``
        option and runs on it. ``unavailable``: why the runtime cannot be loaded here (say, a
        missing optional dependency and how to install it); it is still listed, with that note.

        A name another plugin also offers is listed for both, and loading it is a
        ``DuplicateRuntime`` error naming both plugins."""
        if not isinstance(name, str) or not _RUNTIME_NAME.match(name):
            raise PluginError(
                f"plugin {self._plugin!r}: invalid runtime name {name!r} "
                "(lower-case letters, digits, '.', '_' and '-', at most 63 characters)"
            )
        if not callable(factory):
            raise PluginError(f"plugin {self._plugin!r}: the factory for {name!r} is not callable")
        offered = self._entries.setdefault(name, [])
        if any(entry.info.plugin == self._plugin for entry in offered):
            raise PluginError(f"plugin {self._plugin!r} registers runtime {name!r} twice")
        info = RuntimeInfo(
            name, description, self._plugin, self._distribution, virtual_time, unavailable
        )
        offered.append(_Registration(info, factory))

    def _set_current(self, plugin: str, distribution: str) -> None:
        self._plugin = plugin
        self._distribution = distribution

    def _drop_plugin(self, plugin: str) -> None:
        for name, offered in list(self._entries.items()):
            kept = [entry for entry in offered if entry.info.plugin != plugin]
            if kept:
                self._entries[name] = kept
            else:
                del self._entries[name]

    @property
    def infos(self) -> list[RuntimeInfo]:
        """Every registration, sorted by name then plugin; a duplicate name is listed once per
        plugin, each noting the others."""
        listed = [
            _noting_rivals(entry.info, offered)
            for offered in self._entries.values()
            for entry in offered
        ]
        return sorted(listed, key=lambda info: (info.name, info.plugin))

    @property
    def names(self) -> list[str]:
        """The names of the registered runtimes, sorted."""
        return sorted(self._entries)

    def get(self, name: str) -> _Registration | None:
        """The one registration of ``name``; ``DuplicateRuntime`` if several plugins offer it."""
        offered = self._entries.get(name, [])
        if len(offered) > 1:
            raise DuplicateRuntime(_duplicate_message(name, offered))
        return offered[0] if offered else None


def _provider(info: RuntimeInfo) -> str:
    return f"plugin {info.plugin!r}{_from_dist(info.distribution)}"


def _duplicate_message(name: str, offered: list[_Registration]) -> str:
    providers = [_provider(entry.info) for entry in offered]
    times = "twice" if len(offered) == 2 else f"{len(offered)} times"
    return (
        f"runtime {name!r} is registered {times}: by {' and by '.join(providers)}; "
        f"keep one: {DISABLE_ENV_VAR} lists the entry points not to load"
    )


def _noting_rivals(info: RuntimeInfo, offered: list[_Registration]) -> RuntimeInfo:
    rivals = [_provider(entry.info) for entry in offered if entry.info is not info]
    if not rivals:
        return info
    note = f"also offered by {', '.join(rivals)}: loading it is an error until one is disabled"
    return attrs.evolve(info, unavailable="; ".join(filter(None, [info.unavailable, note])))


def _from_dist(distribution: str) -> str:
    return f" (from {distribution})" if distribution else ""


class KubecoreHookspecs:
    """The hooks a kubecore plugin may implement (all prefixed ``kubecore_``)."""

    @hookspec
    def kubecore_register_runtimes(self, registry: RuntimeRegistry) -> None:
        """Register the plugin's runtimes with ``registry.register(name, factory, description)``.

        Called once per load; must not start anything (a factory does that when asked).
        """

    @hookspec
    def kubecore_add_commands(self, commands: CommandSet) -> None:
        """Add the plugin's subcommands of the ``kubecore`` command with
        ``commands.add(name, help=...)`` (``kubecore._plugins.commands``: each parser sets
        ``handler(args, out) -> exit status``).

        Called only when the command line may name one of them; must import nothing heavy.
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
                self._register_or_report(plugin, self._free_name(_object_name(plugin)), "")
        if self._use_entry_points:
            self._load_entry_points()

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Register ``plugin`` (pluggy's ``register``), refusing one that implements a hook
        kubecore does not define (a misspelling) or none at all: ``PluginError``."""
        registered = super().register(plugin, name)
        if registered is None:  # blocked
            return None
        problem = self._hook_problem(plugin)
        if problem:
            self.unregister(plugin)
            raise PluginError(f"plugin {registered!r} {problem}")
        return registered

    def _hook_problem(self, plugin: object) -> str:
        callers = self.get_hookcallers(plugin) or []
        unknown = sorted(
            caller.name
            for caller in callers
            if not caller.has_spec()
            and any(
                impl.plugin is plugin and not impl.optionalhook for impl in caller.get_hookimpls()
            )
        )
        if unknown:
            return "implements " + ", ".join(_did_you_mean(name) for name in unknown)
        if not callers:
            expected = " or ".join(_hook_names())
            return f"implements no kubecore hook (expected {expected} with @hookimpl)"
        return ""

    def _register_or_report(self, plugin: object, name: str, distribution: str) -> bool:
        """Register ``plugin``; a plugin pluggy or kubecore refuses is reported as broken."""
        try:
            self.register(plugin, name=name)
        except PluginError as exc:
            self._mark_broken(name, str(exc).removeprefix(f"plugin {name!r} "), distribution)
            return False
        except Exception as exc:
            self._mark_broken(name, f"{type(exc).__name__}: {exc}", distribution)
            return False
        return True

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
            if self._register_or_report(plugin, ep.name, dist):
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

    # -- commands ---------------------------------------------------------------------------

    def add_commands(self, commands: CommandSet) -> None:
        """Let every plugin add its subcommands of ``kubecore``; a plugin whose hook fails is
        reported as broken (its warning), the others' commands are added."""
        self.load()
        for impl in reversed(self.hook.kubecore_add_commands.get_hookimpls()):
            commands._set_current(impl.plugin_name)
            try:
                impl.function(*[{"commands": commands}[name] for name in impl.argnames])
            except Exception as exc:
                error = str(exc) if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
                self._mark_broken(
                    impl.plugin_name,
                    f"kubecore_add_commands: {error}",
                    self._dists.get(impl.plugin_name, ""),
                )

    def runtimes(self) -> list[RuntimeInfo]:
        """Every runtime the loaded plugins offer, sorted by name."""
        return self._collect().infos

    def load_runtime(self, name: str, /, **options: Any) -> RuntimeBundle:
        """Build the runtime called ``name`` with ``options``.

        Raises ``UnknownRuntime`` (listing the installed ones), ``DuplicateRuntime`` when
        several plugins offer ``name``, or ``PluginError`` when the runtime is unavailable here,
        its factory fails or returns something that is not a usable ``RuntimeBundle``.
        """
        registry = self._collect()
        entry = registry.get(name)
        if entry is None:
            raise UnknownRuntime(name, registry.names)
        origin = f"runtime {name!r} (plugin {entry.info.plugin!r})"
        if entry.info.unavailable:
            raise PluginError(f"{origin} cannot be loaded: {entry.info.unavailable}")
        try:
            bundle = entry.factory(**options)
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(f"{origin} failed to start: {type(exc).__name__}: {exc}") from exc
        return _checked_bundle(bundle, name, origin)


def _hook_names() -> list[str]:
    return sorted(name for name in vars(KubecoreHookspecs) if name.startswith("kubecore_"))


def _did_you_mean(hook: str) -> str:
    close = difflib.get_close_matches(hook, _hook_names(), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"{hook}, which is not a kubecore hook{hint}"


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
    """The methods of ``protocol`` (its own and those of the protocols it is made of) that
    ``obj`` lacks."""
    parts = [cls for cls in protocol.__mro__ if getattr(cls, "_is_protocol", False)]
    names = {n for cls in parts for n, v in vars(cls).items() if callable(v) and n[0] != "_"}
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
