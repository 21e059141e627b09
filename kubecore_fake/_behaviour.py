"""What a container of the in-memory runtime does once started: a ``Behaviour``, from the newest
matching ``script(...)`` or else from a reading of its command (``kubecore_fake._shell``)."""

from __future__ import annotations

import functools
from collections.abc import Iterable

import attrs

from kubecore.runtime import INIT_CONTAINER_ANNOTATION, SIDECAR_ANNOTATION, ContainerConfig
from kubecore_fake import _shell
from kubecore_fake._images import normalize_image
from kubecore_fake._mounts import list_mounted_dir, read_mounted_file
from kubecore_fake._shell import TimedFile, TimedLog

MiB = 1024 * 1024


def _str_tuple(values: Iterable[str]) -> tuple[str, ...]:
    return (values,) if isinstance(values, str) else tuple(values)


def _int_tuple(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _timeline(values: Iterable[TimedLog | TimedFile]) -> tuple[TimedLog | TimedFile, ...]:
    return tuple(values)


@attrs.frozen
class Behaviour:
    """What a container does once started (scripted with ``FakeRuntime.script``)."""

    exit_code: int | None = None
    """Exit with this code ``after`` seconds; None runs until stopped."""
    after: float = 0.0
    fail_start: bool | str = False
    """Make ``start_container`` fail (a string is the engine's message)."""
    logs: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    """Lines printed when the container starts."""
    traps_term: bool = True
    """True: TERM makes it exit 0 at once. False: it is killed (137) after the grace period."""
    oom: bool = False
    """OOM-killed (137, ``OOMKilled``) ``after`` seconds. Also happens when ``memory_bytes``
    exceeds the container's ``memory_limit``."""
    memory_bytes: int = 4 * MiB
    cpu_fraction: float = 0.01
    writable_layer_bytes: int = 0
    """Disk its writable layer uses (reported by ``container_stats``)."""
    ports: tuple[int, ...] = attrs.field(default=(), converter=_int_tuple)
    """TCP ports it listens on (inside its sandbox's network) while running."""
    reason: str = ""
    """Reason reported on exit ('' derives it: ``Completed`` for 0, else ``Error``)."""
    timeline: tuple[TimedLog | TimedFile, ...] = attrs.field(default=(), converter=_timeline)
    """Lines printed and files written at given offsets after start."""
    message: str = ""
    """The termination message it exits with."""


@attrs.frozen
class _Script:
    image: str | None
    command: str | tuple[str, ...] | None
    behaviour: Behaviour


class Scripts:
    """The scripts given so far, newest last (kept under the runtime's lock)."""

    def __init__(self) -> None:
        self._scripts: list[_Script] = []

    def add(
        self,
        image: str | None,
        command: str | tuple[str, ...] | None,
        behaviour: Behaviour,
    ) -> None:
        normalized = None if image is None else normalize_image(image)
        self._scripts.append(_Script(normalized, command, behaviour))

    def behaviour_of(self, config: ContainerConfig, hostname: str) -> Behaviour:
        """The newest matching script's behaviour, else the reading of the container's
        command (with its environment, its mounted files and whether it is an init
        container)."""
        argv = _shell.effective_argv(config.command, config.args)
        image = normalize_image(config.image)
        for script in reversed(self._scripts):
            if script.image is not None and script.image != image:
                continue
            if script.command is not None and not _command_matches(script.command, argv):
                continue
            return script.behaviour
        program = _shell.read_program(
            argv,
            {"HOSTNAME": hostname, **dict(config.env)},  # as Docker and containerd set it
            # A sidecar is an init container that runs beside the app, as long as they do.
            is_init=config.annotations.get(INIT_CONTAINER_ANNOTATION) == "true"
            and config.annotations.get(SIDECAR_ANNOTATION) != "true",
            read_file=functools.partial(read_mounted_file, config.mounts),
            list_dir=functools.partial(list_mounted_dir, config.mounts),
        )
        return Behaviour(
            exit_code=program.exit_code,
            after=program.after,
            traps_term=program.traps_term,
            ports=program.ports,
            timeline=program.timeline,
            message=program.message,
        )


def _command_matches(expected: str | tuple[str, ...], argv: tuple[str, ...]) -> bool:
    if isinstance(expected, str):
        return expected in (" ".join(argv), _shell.shell_script(argv))
    return expected == argv
