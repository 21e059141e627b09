"""The ``kubecore`` command: ``run``, ``validate``, ``runtimes``, ``version``, ``kubeconfig``.

A thin shell over the public API: ``settings`` (the flags of ``run`` and how flags, environment
and config file are layered), ``output`` (the pod table, pull progress, the live display),
``basic`` (the subcommands that need little), ``commands`` (``run``) and ``parser`` (the parser
and ``main``).

Only ``main`` is imported up front; every other name on first use, so that a command that needs
little (``kubecore version``) starts fast.
"""

import importlib as _importlib
import typing as _typing

from kubecore._cli.parser import build_parser, console_main, main

if _typing.TYPE_CHECKING:
    from kubecore._cli.basic import (
        UsageError as UsageError,
    )
    from kubecore._cli.basic import (
        validate_paths as validate_paths,
    )
    from kubecore._cli.commands import (
        build_sources as build_sources,
    )
    from kubecore._cli.commands import (
        cmd_run as cmd_run,
    )
    from kubecore._cli.commands import (
        read_registry_config as read_registry_config,
    )
    from kubecore._cli.commands import (
        read_token as read_token,
    )
    from kubecore._cli.commands import (
        run_forever as run_forever,
    )
    from kubecore._cli.commands import (
        run_once as run_once,
    )
    from kubecore._cli.output import (
        Display as Display,
    )
    from kubecore._cli.output import (
        PodRow as PodRow,
    )
    from kubecore._cli.output import (
        PullTracker as PullTracker,
    )
    from kubecore._cli.output import (
        TrackingPuller as TrackingPuller,
    )
    from kubecore._cli.output import (
        format_table as format_table,
    )
    from kubecore._cli.output import (
        pod_row as pod_row,
    )
    from kubecore._cli.output import (
        progress_bar as progress_bar,
    )
    from kubecore._cli.settings import (
        CONFIG_FIELD_HELP as CONFIG_FIELD_HELP,
    )
    from kubecore._cli.settings import (
        ENV_PREFIX as ENV_PREFIX,
    )
    from kubecore._cli.settings import (
        RUN_SETTINGS as RUN_SETTINGS,
    )
    from kubecore._cli.settings import (
        Setting as Setting,
    )
    from kubecore._cli.settings import (
        convert as convert,
    )
    from kubecore._cli.settings import (
        parse_options as parse_options,
    )
    from kubecore._cli.settings import (
        resolve_settings as resolve_settings,
    )
    from kubecore._plugins.commands import (
        EXIT_FAILED as EXIT_FAILED,
    )
    from kubecore._plugins.commands import (
        EXIT_OK as EXIT_OK,
    )
    from kubecore._plugins.commands import (
        EXIT_USAGE as EXIT_USAGE,
    )

__all__ = [
    "CONFIG_FIELD_HELP",
    "ENV_PREFIX",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "RUN_SETTINGS",
    "Display",
    "PodRow",
    "PullTracker",
    "Setting",
    "TrackingPuller",
    "UsageError",
    "build_parser",
    "build_sources",
    "cmd_run",
    "console_main",
    "convert",
    "format_table",
    "main",
    "parse_options",
    "pod_row",
    "progress_bar",
    "read_registry_config",
    "read_token",
    "resolve_settings",
    "run_forever",
    "run_once",
    "validate_paths",
]

_DEFINED_IN: dict[str, tuple[str, ...]] = {
    "kubecore._plugins.commands": ("EXIT_FAILED", "EXIT_OK", "EXIT_USAGE"),
    "kubecore._cli.basic": (
        "UsageError",
        "validate_paths",
    ),
    "kubecore._cli.commands": (
        "build_sources",
        "cmd_run",
        "read_registry_config",
        "read_token",
        "run_forever",
        "run_once",
    ),
    "kubecore._cli.output": (
        "Display",
        "PodRow",
        "PullTracker",
        "TrackingPuller",
        "format_table",
        "pod_row",
        "progress_bar",
    ),
    "kubecore._cli.settings": (
        "CONFIG_FIELD_HELP",
        "ENV_PREFIX",
        "RUN_SETTINGS",
        "Setting",
        "convert",
        "parse_options",
        "resolve_settings",
    ),
}
_HOME = {name: module for module, names in _DEFINED_IN.items() for name in names}


def __getattr__(name: str) -> _typing.Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value
