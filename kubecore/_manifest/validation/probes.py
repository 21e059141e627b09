"""The rules about probes and lifecycle hooks: their handlers (exec, HTTP, TCP, gRPC, sleep) and
the stop signal."""

from __future__ import annotations

import re

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _field, _item, _Problems
from kubecore._manifest.validation.names import check_port_number, one_of, port_name_problem
from kubecore._model import v1 as m

_HEADER_NAME_RE = re.compile(r"[-A-Za-z0-9!#$%&'*+.^_`|~]+")


# The Linux signal names Kubernetes accepts for lifecycle.stopSignal.
STOP_SIGNALS = frozenset(
    {
        *(
            f"SIG{name}"
            for name in [
                "ABRT",
                "ALRM",
                "BUS",
                "CHLD",
                "CLD",
                "CONT",
                "FPE",
                "HUP",
                "ILL",
                "INT",
                "IO",
                "IOT",
                "KILL",
                "PIPE",
                "POLL",
                "PROF",
                "PWR",
                "QUIT",
                "SEGV",
                "STKFLT",
                "STOP",
                "SYS",
                "TERM",
                "TRAP",
                "TSTP",
                "TTIN",
                "TTOU",
                "URG",
                "USR1",
                "USR2",
                "VTALRM",
                "WINCH",
                "XCPU",
                "XFSZ",
                "RTMIN",
                "RTMAX",
            ]
        ),
        *(f"SIGRTMIN+{n}" for n in range(1, 16)),
        *(f"SIGRTMAX-{n}" for n in range(1, 15)),
    }
)


_SCHEMES = ("HTTP", "HTTPS")


def _check_handler_port(
    errs: _Problems, path: str, port: int | str, port_names: frozenset[str]
) -> None:
    if isinstance(port, int):
        check_port_number(errs, path, port)
    elif port == "":
        errs.append(FieldError(path, "required"))
    elif port.isdigit():
        errs.append(FieldError(path, f"must be a number or a port name, got the string {port!r}"))
    elif port not in port_names:
        problem = port_name_problem(port)
        errs.append(
            FieldError(path, problem or f"no port named {port!r} in this container's ports")
        )


def _check_handler(
    errs: _Problems,
    path: str,
    handler: m.Probe | m.LifecycleHandler,
    port_names: frozenset[str],
) -> None:
    kinds: tuple[tuple[str, object], ...] = (
        ("exec", handler.exec),
        ("httpGet", handler.http_get),
        ("tcpSocket", handler.tcp_socket),
    )
    if isinstance(handler, m.Probe):
        kinds += (("grpc", handler.grpc),)
    else:
        kinds += (("sleep", handler.sleep),)
    actions = [name for name, value in kinds if value is not None]
    if len(actions) != 1:
        got = " and ".join(actions) if actions else "none"
        choices = ", ".join(name for name, _ in kinds)
        errs.append(FieldError(path, f"must have exactly one of {choices}; got {got}"))
    sleep = handler.sleep if isinstance(handler, m.LifecycleHandler) else None
    if sleep is not None and sleep.seconds < 0:
        errs.append(
            FieldError(_field(path, "sleep.seconds"), f"must be 0 or more, got {sleep.seconds}")
        )
    if handler.exec is not None and not handler.exec.command:
        errs.append(FieldError(_field(path, "exec.command"), "required"))
    if handler.http_get is not None:
        where = _field(path, "httpGet")
        _check_handler_port(errs, _field(where, "port"), handler.http_get.port, port_names)
        if handler.http_get.scheme not in _SCHEMES:
            errs.append(
                FieldError(_field(where, "scheme"), one_of(handler.http_get.scheme, _SCHEMES))
            )
        for i, header in enumerate(handler.http_get.http_headers):
            if not _HEADER_NAME_RE.fullmatch(header.name):
                errs.append(
                    FieldError(
                        _field(_item(_field(where, "httpHeaders"), i), "name"),
                        f"invalid HTTP header name {header.name!r}",
                    )
                )
    if handler.tcp_socket is not None:
        where = _field(path, "tcpSocket.port")
        _check_handler_port(errs, where, handler.tcp_socket.port, port_names)


def _check_probe(
    errs: _Problems, path: str, probe: m.Probe, kind: str, port_names: frozenset[str]
) -> None:
    _check_handler(errs, path, probe, port_names)
    if probe.grpc is not None:
        check_port_number(errs, _field(_field(path, "grpc"), "port"), probe.grpc.port)
    grace = probe.termination_grace_period_seconds
    if grace is not None:
        where = _field(path, "terminationGracePeriodSeconds")
        if kind == "readinessProbe":
            errs.append(FieldError(where, "not allowed on a readinessProbe (it never kills)"))
        elif grace < 1:
            errs.append(FieldError(where, f"must be at least 1, got {grace}"))
    minimums = (
        ("initialDelaySeconds", probe.initial_delay_seconds, 0),
        ("timeoutSeconds", probe.timeout_seconds, 1),
        ("periodSeconds", probe.period_seconds, 1),
        ("successThreshold", probe.success_threshold, 1),
        ("failureThreshold", probe.failure_threshold, 1),
    )
    for name, value, low in minimums:
        if value < low:
            errs.append(FieldError(_field(path, name), f"must be at least {low}, got {value}"))
    if kind in ("livenessProbe", "startupProbe") and probe.success_threshold > 1:
        errs.append(
            FieldError(
                _field(path, "successThreshold"),
                f"must be 1 for a {kind}, got {probe.success_threshold}",
            )
        )


def check_container_hooks(
    errs: _Problems, path: str, container: m.Container, port_names: frozenset[str], *, init: bool
) -> None:
    """A container's probes and lifecycle hooks: not on init containers (``init``), each
    handler's port a number or one of ``port_names``."""
    probes = (
        ("livenessProbe", container.liveness_probe),
        ("readinessProbe", container.readiness_probe),
        ("startupProbe", container.startup_probe),
    )
    for kind, probe in probes:
        if probe is None:
            continue
        if init:
            errs.append(FieldError(_field(path, kind), "not allowed on init containers"))
        else:
            _check_probe(errs, _field(path, kind), probe, kind, port_names)
    if container.lifecycle is not None:
        where = _field(path, "lifecycle")
        if init:
            errs.append(FieldError(where, "not allowed on init containers"))
        else:
            for name, handler in (
                ("postStart", container.lifecycle.post_start),
                ("preStop", container.lifecycle.pre_stop),
            ):
                if handler is not None:
                    _check_handler(errs, _field(where, name), handler, port_names)
            signal = container.lifecycle.stop_signal
            if signal and signal not in STOP_SIGNALS:
                errs.append(
                    FieldError(
                        _field(where, "stopSignal"),
                        f"unsupported value {signal!r}: must be a Linux signal name such as"
                        " SIGTERM, SIGINT, SIGQUIT, SIGUSR1",
                    )
                )
