"""The ``kubecore`` command: ``run``, ``validate``, ``runtimes``, ``version``.

A thin shell over the public API: ``settings`` (the flags of ``run`` and how flags, environment
and config file are layered), ``output`` (the pod table, pull progress, the live display),
``commands`` (what each subcommand does) and ``parser`` (the parser and ``main``).
"""

from kubecore._cli.commands import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    build_sources,
    cmd_run,
    read_registry_config,
    read_token,
    run_forever,
    run_once,
    validate_paths,
)
from kubecore._cli.output import (
    Display,
    PodRow,
    PullTracker,
    TrackingPuller,
    format_table,
    pod_row,
    progress_bar,
)
from kubecore._cli.parser import build_parser, main
from kubecore._cli.settings import (
    CONFIG_FIELD_HELP,
    ENV_PREFIX,
    RUN_SETTINGS,
    Setting,
    UsageError,
    convert,
    parse_options,
    resolve_settings,
)
from kubecore._status import short_duration

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
    "short_duration",
    "validate_paths",
]
