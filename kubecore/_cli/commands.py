"""The ``run`` subcommand (``version``, ``runtimes`` and ``validate``, which need little, are in
``basic``)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

import attrs

import kubecore
from kubecore._cli.basic import setup_logging, warnings_shown
from kubecore._cli.blocked import PermanentErrors, blocked_reason, newest_warning
from kubecore._cli.output import Display, PullTracker, TrackingPuller, format_table
from kubecore._cli.settings import (
    RUN_SETTINGS,
    UsageError,
    kubelet_config_values,
    resolve_settings,
)
from kubecore._config.base import PodSource, SourceProblem
from kubecore._config.file import FileSource
from kubecore._config.http import HTTPSource
from kubecore._config.memory import LAST_GOOD_DIR
from kubecore._config.poller import SourcePoller
from kubecore._contract.errors import (
    InvalidKubeletConfig,
    KubecoreError,
    RootDirInUse,
    RuntimeUnavailable,
    SourceUnavailable,
)
from kubecore._contract.protocols import Puller
from kubecore._model.v1 import Pod
from kubecore._plugins.commands import EXIT_FAILED, EXIT_OK
from kubecore._status.compute import Verdict, pod_verdict, verdict_settled
from kubecore._util.clock import Clock, ManualClock, SystemClock
from kubecore._util.collector import agent_collector
from kubecore._util.watchdog import stack_dump_after

if TYPE_CHECKING:
    from kubecore._agent.kubelet import Kubelet
    from kubecore._api.server import KubeApi
    from kubecore._kuberuntime.credentials import DockerKeyring
    from kubecore._plugins.registry import RuntimeBundle
    from kubecore_etcd import EtcdAttachment

logger = logging.getLogger(__name__)

_RUN_DESTS = frozenset(setting.dest for setting in RUN_SETTINGS)


# --- plugins ------------------------------------------------------------------------------


def load_runtime_bundle(
    name: str, options: Mapping[str, Any], once: bool, err: IO[str]
) -> RuntimeBundle:
    """Build runtime ``name``. A runtime registered as running in virtual time gets the clock
    to run on: virtual with ``--once`` (it converges, or reaches the deadline, without
    waiting), the system clock otherwise (so that the API is usable)."""
    from kubecore._plugins.registry import plugin_manager

    manager = plugin_manager()
    with warnings_shown(err):
        info = next((i for i in manager.runtimes() if i.name == name), None)
        chosen = dict(options)
        if info is not None and info.virtual_time:
            chosen.setdefault("clock", ManualClock(start=time.time()) if once else SystemClock())
        return manager.load_runtime(name, **chosen)


def build_sources(settings: Mapping[str, Any]) -> list[PodSource]:
    """The manifest sources of the settings; each remembers its last good state under the root
    directory (``LAST_GOOD_DIR``), so that a restart during an outage keeps the pods."""
    sources: list[PodSource] = []
    state_dir = os.path.join(settings["root_dir"], LAST_GOOD_DIR)
    new_node = nothing_ran(settings["root_dir"])
    if settings["manifests"]:
        try:
            sources.append(
                FileSource(
                    settings["manifests"],
                    interval=settings["file_check_interval"],
                    may_be_missing=settings["manifest_may_be_missing"],
                    settle=settings["manifest_settle"],
                    in_place_settle=settings["manifest_in_place_settle"],
                    allow_empty=settings["manifest_allow_empty"],
                    state_dir=state_dir,
                    new_node=new_node,
                )
            )
        except SourceUnavailable as error:
            raise UsageError(str(error)) from None
    if settings["manifest_url"]:
        try:
            sources.append(
                HTTPSource(
                    settings["manifest_url"],
                    interval=settings["http_check_interval"],
                    allow_empty=settings["manifest_allow_empty"],
                    loss_settle=settings["manifest_in_place_settle"],
                    state_dir=state_dir,
                    new_node=new_node,
                )
            )
        except ValueError as error:
            raise UsageError(f"--manifest-url: {error}") from None
    return sources


def nothing_ran(root_dir: str) -> bool:
    """No pod has a directory under the root directory (every pod that ran a container has one,
    until it is cleaned up): a new node, whose sources held nothing before, so an empty manifest
    directory is its state rather than a mount point not mounted yet."""
    try:
        with os.scandir(os.path.join(root_dir, "pods")) as entries:
            return not any(entry.is_dir() for entry in entries)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def source_problems(sources: Iterable[PodSource]) -> list[SourceProblem]:
    problems: list[SourceProblem] = []
    for source in sources:
        problems.extend(getattr(source, "problems", ()))
    return problems


def read_token(path: str) -> str:
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except OSError as error:
        raise UsageError(f"--exec-token-file {path}: {error.strerror or error}") from None
    if not token:
        raise UsageError(f"--exec-token-file {path}: the file is empty")
    return token


def read_registry_config(path: str) -> DockerKeyring | None:
    """The ``--registry-config`` keyring (None without the flag); a bad file is a usage error."""
    if not path:
        return None
    from kubecore._kuberuntime.credentials import DockerKeyring, RegistryConfigError

    try:
        return DockerKeyring.from_file(path)
    except RegistryConfigError as error:
        raise UsageError(f"--registry-config: {error}") from None


def kubelet_config(settings: Mapping[str, Any]) -> kubecore.KubeletConfig:
    """The agent's ``KubeletConfig`` from the resolved settings."""
    try:
        return kubecore.KubeletConfig(**kubelet_config_values(settings))
    except InvalidKubeletConfig as error:
        options = {s.config_field: s.option for s in RUN_SETTINGS if s.config_field}
        lines = []
        for problem in error.problems:
            field, _, why = problem.partition(": ")
            lines.append(f"{options.get(field, field)}: {why}")
        raise UsageError("; ".join(lines)) from None
    except (TypeError, ValueError) as error:
        raise UsageError(f"invalid agent configuration: {error}") from None


def cmd_run(
    args: argparse.Namespace, out: IO[str], environ: Mapping[str, str] | None = None
) -> int:
    """``kubecore run``: the agent on the chosen runtime, fed by the sources of the settings
    (flags over environment over config file); with ``--once`` until the pods settle or the
    deadline passes, otherwise until a signal."""
    environ = os.environ if environ is None else environ
    flags = {k: v for k, v in vars(args).items() if k in _RUN_DESTS}
    settings = resolve_settings(flags, environ, args.config)
    level = log_level(settings["log_level"])
    once = bool(settings["once"])
    exec_token = ""
    if settings["enable_exec"]:
        if not settings["exec_token_file"]:
            raise UsageError("--enable-exec needs --exec-token-file")
        exec_token = read_token(settings["exec_token_file"])
    sources = build_sources(settings)
    keyring = read_registry_config(settings["registry_config"])
    config = kubelet_config(settings)
    try:
        bundle = load_runtime_bundle(
            settings["runtime"], settings["runtime_option"], once, sys.stderr
        )
    except KubecoreError as error:
        out.write(f"kubecore: {error}\n")
        return EXIT_FAILED
    # after loading the plugins: a broken one is reported once, by the warning above
    setup_logging(level)
    tracker = PullTracker()
    errors = PermanentErrors() if once else None
    kubelet = agent_on(bundle, config, sources, keyring, tracker, errors)
    clock = kubelet.clock
    etcd = attach_etcd(kubelet, settings)
    if etcd is not None:
        sources.extend(etcd.sources)
    poller = SourcePoller(sources, kubelet.update, clock=clock)
    if once or not settings["port"]:
        from kubecore._api.store import keep_stored_pods

        keep_stored_pods(kubelet.root_dir, kubelet.update)

    def close() -> None:
        if etcd is not None:
            etcd.close()
        bundle.runtime.close()

    if once:
        return run_once_and_close(kubelet, poller, settings, out, tracker, errors, etcd, close)
    return run_forever(
        kubelet,
        poller,
        close,
        settings,
        exec_token,
        out,
        tracker,
        start_extras=etcd.start if etcd is not None else None,
    )


def agent_on(
    bundle: RuntimeBundle,
    config: kubecore.KubeletConfig,
    sources: Sequence[PodSource],
    keyring: DockerKeyring | None,
    tracker: PullTracker,
    errors: PermanentErrors | None,
) -> Kubelet:
    """The agent on the loaded runtime: pulls with the registry credentials, tracked for the
    display, and (with ``--once``) the runtime's permanent errors kept in ``errors``. A root
    directory another agent holds is a usage error."""
    from kubecore._agent.kubelet import Kubelet

    puller: Puller = bundle.puller
    if keyring is not None:
        from kubecore._kuberuntime.credentials import KeyringPuller

        puller = KeyringPuller(puller, keyring)
    puller = TrackingPuller(puller, tracker)
    runtime = bundle.runtime
    if errors is not None:
        runtime, puller = errors.runtime(runtime), errors.puller(puller)
    try:
        return Kubelet.from_bundle(
            attrs.evolve(bundle, runtime=runtime, puller=puller),
            config=config,
            sources=tuple(source.name for source in sources),
        )
    except RootDirInUse as error:
        bundle.runtime.close()
        raise UsageError(str(error)) from None


def run_once_and_close(
    kubelet: Kubelet,
    poller: SourcePoller,
    settings: Mapping[str, Any],
    out: IO[str],
    tracker: PullTracker,
    errors: PermanentErrors | None,
    etcd: EtcdAttachment | None,
    close: Callable[[], None],
) -> int:
    """``--once``: ``run_once`` (after etcd listed the node's pods), then the agent stopped,
    the pods' last status written to etcd, and the runtime closed."""
    clock = kubelet.clock
    try:
        if etcd is not None:
            wait_for_etcd(etcd, min(settings["deadline"], 30.0))
        display = None if clock.virtual else once_display(out, settings, tracker)
        return run_once(kubelet, poller, clock, settings["deadline"], out, display, errors=errors)
    finally:
        kubelet.stop()
        if etcd is not None:
            publish_status(etcd, 10.0)
        close()


def once_display(out: IO[str], settings: Mapping[str, Any], tracker: PullTracker) -> Display:
    """``--once``'s progress: the live table and pulls on a terminal (cleared before the final
    table), one log line per change otherwise."""
    live = out.isatty()
    header = (
        f"kubecore {kubecore.__version__} --once on node {settings['node_name']}, runtime "
        f"{settings['runtime']}: starting the pods (deadline {settings['deadline']:g}s)"
    )
    display = Display(out, live, header, tracker, clear_on_close=live)
    if display.log_handler is not None:
        _route_logs_to(display.log_handler)
    return display


def wait_for_etcd(etcd: EtcdAttachment, timeout: float) -> None:
    """Start the etcd source and wait (real time, bounded) until it has listed the node's pods:
    ``--once`` then starts from the whole list."""
    for source in etcd.sources:
        source.start()
    deadline = time.monotonic() + timeout
    while not etcd.ready and time.monotonic() < deadline:
        time.sleep(0.05)
    if not etcd.ready:
        logger.warning("etcd did not answer within %.0f s: its pods are not known", timeout)


def publish_status(etcd: EtcdAttachment, timeout: float) -> None:
    """``--once`` writes the pods' last status to etcd before it exits (bounded)."""
    deadline = time.monotonic() + timeout
    try:
        while not etcd.sink.sync_once():  # True once nothing is left to write
            if time.monotonic() >= deadline:
                logger.warning("not every pod status reached etcd within %.0f s", timeout)
                return
            time.sleep(0.05)
    except Exception as error:  # etcd down at the very end: say so, the pods ran anyway
        logger.warning("writing the pods' status to etcd failed: %s", error)


def attach_etcd(kubelet: Kubelet, settings: Mapping[str, Any]) -> EtcdAttachment | None:
    """The etcd source and status sink of ``--etcd-endpoints`` (None without it)."""
    endpoints = settings["etcd_endpoints"]
    if not endpoints:
        return None
    try:
        from kubecore_etcd import attach, parse_endpoints

        parse_endpoints(endpoints)
    except ValueError as error:
        raise UsageError(f"--etcd-endpoints: {error}") from None
    try:
        return attach(
            kubelet,
            endpoints,
            settings["etcd_prefix"],
            cafile=settings["etcd_cafile"],
            certfile=settings["etcd_certfile"],
            keyfile=settings["etcd_keyfile"],
            user=settings["etcd_user"],
        )
    except ModuleNotFoundError as error:
        raise UsageError(
            f"--etcd-endpoints needs the etcd client ({error.name} is not installed):"
            " pip install 'kubecore[etcd]'"
        ) from None


def run_once(
    kubelet: Kubelet,
    poller: SourcePoller,
    clock: Clock,
    deadline: float,
    out: IO[str],
    display: Display | None = None,
    *,
    errors: PermanentErrors | None = None,
) -> int:
    """Sync until every pod converged, failed or is blocked on an error a retry will not fix
    (kept in ``errors``), or the deadline passed; print the table. An engine that does not
    answer at the start ends the run at once.

    On a real clock the agent's own loop and pod workers do the work (pods start in parallel)
    and ``display`` shows the progress meanwhile (the live table and pulls on a terminal, a
    log line per change otherwise); on a virtual clock (the in-memory runtime) passes run
    inline and time is stepped."""
    unreachable = runtime_unreachable(kubelet)
    if unreachable:
        if display is not None:
            display.close()
        out.write(f"kubecore: the runtime does not answer: {unreachable}\n")
        return EXIT_FAILED
    judge = PodJudge(kubelet, errors or PermanentErrors())
    if clock.virtual:
        pods, verdicts = settle_stepped(kubelet, poller, clock, deadline, judge)
    else:
        pods, verdicts = settle_pooled(kubelet, poller, deadline, display, judge)
    if display is not None:
        display.close()
    return report_once(pods, verdicts, source_problems(poller.sources), deadline, clock, out)


def runtime_unreachable(kubelet: Kubelet) -> str:
    """Why the runtime cannot be reached ('' when it answers)."""
    try:
        kubelet.views.runtime_version()
    except RuntimeUnavailable as error:
        return str(error)
    return ""


Verdicts = dict[str, tuple[Verdict, str]]


class PodJudge:
    """Each pod's verdict for ``--once``: a pending pod blocked on an error a retry will not
    fix has failed, and one still pending says the newest warning it got."""

    def __init__(self, kubelet: Kubelet, errors: PermanentErrors) -> None:
        self._kubelet = kubelet
        self._errors = errors

    def verdict(self, pod: Pod) -> tuple[Verdict, str]:
        verdict, reason = pod_verdict(pod)
        if verdict_settled(verdict):
            return verdict, reason
        events = self._kubelet.views.recent_events(
            namespace=pod.metadata.namespace, name=pod.metadata.name
        )
        blocked = blocked_reason(events, self._errors)
        if blocked:
            return "failed", blocked
        warning = newest_warning(events)
        return verdict, f"{reason} ({warning})" if warning else reason


def pod_verdicts(pods: Iterable[Pod], judge: PodJudge | None = None) -> Verdicts:
    verdict = pod_verdict if judge is None else judge.verdict
    return {f"{p.metadata.namespace}/{p.metadata.name}": verdict(p) for p in pods}


def all_settled(verdicts: Verdicts) -> bool:
    return all(verdict_settled(v) for v, _ in verdicts.values())


def settle_stepped(
    kubelet: Kubelet,
    poller: SourcePoller,
    clock: Clock,
    deadline: float,
    judge: PodJudge | None = None,
) -> tuple[list[Pod], Verdicts]:
    """Inline passes, ``step`` seconds of clock time apart (a virtual clock does not wait)."""
    step = 1.0
    end = clock.monotonic() + deadline
    verdicts: Verdicts = {}
    pods: list[Pod] = []
    for _ in range(int(deadline / step) + 2):
        poller.poll_once()
        kubelet.sync()
        pods = list(kubelet.pods())
        verdicts = pod_verdicts(pods, judge)
        if all_settled(verdicts) or clock.monotonic() >= end:
            break
        clock.sleep(step)
    return pods, verdicts


_PROGRESS_INTERVAL = 0.5
"""Seconds between two looks at the pods while a pass (or a long pull) is still going on."""


def settle_pooled(
    kubelet: Kubelet,
    poller: SourcePoller,
    deadline: float,
    display: Display | None = None,
    judge: PodJudge | None = None,
) -> tuple[list[Pod], Verdicts]:
    """The background loop and its pod workers, as the daemon runs them; after each pass (and
    the syncs it dispatched), and every half second meanwhile, the pods are looked at, until
    all settled or the deadline."""
    end = time.monotonic() + deadline
    poller.poll_once()
    kubelet.start()
    while True:
        # the loop's own passes (no extra engine lists): it passes again as soon as a sync acted
        left = max(0.0, min(_PROGRESS_INTERVAL, end - time.monotonic()))
        passed = kubelet.wait_pass(left, ask=False)
        pods = list(kubelet.pods())
        verdicts = pod_verdicts(pods, judge)
        if display is not None:
            display.refresh(pods, time.time(), source_problems(poller.sources))
        if all_settled(verdicts) or time.monotonic() >= end:
            return pods, verdicts
        if passed:
            poller.poll_once()


def report_once(
    pods: Sequence[Pod],
    verdicts: Verdicts,
    problems: Sequence[SourceProblem],
    deadline: float,
    clock: Clock,
    out: IO[str],
) -> int:
    """The final table, the source problems and one line per pod that failed or did not settle;
    the exit code."""
    out.write(format_table(pods, clock.now()))
    for problem in problems:
        for line in problem.lines():
            out.write(line + "\n")
    bad = {name: v for name, v in verdicts.items() if v[0] != "ok"}
    for name, (verdict, reason) in sorted(bad.items()):
        what = "failed" if verdict == "failed" else f"did not converge in {deadline:g}s"
        out.write(f"pod {name} {what}: {reason}\n")
    if not pods and not problems:
        out.write("no pods to run\n")
    return EXIT_FAILED if bad or problems else EXIT_OK


def _install_signal_handlers(stop: threading.Event) -> Callable[[], None]:
    """SIGINT / SIGTERM set ``stop``; returns a function restoring the old handlers."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


STOP_GRACE = 30.0
"""Seconds the agent's stop may take (the workers' drain is 10) before every thread's stack is
logged, to say where a stop that hangs is stuck; the stop goes on after."""


def run_forever(
    kubelet: Kubelet,
    poller: SourcePoller,
    close_runtime: Callable[[], None],
    settings: Mapping[str, Any],
    exec_token: str,
    out: IO[str],
    tracker: PullTracker,
    stop: threading.Event | None = None,
    start_extras: Callable[[], None] | None = None,
    stop_grace: float = STOP_GRACE,
) -> int:
    from kubecore._http.server import KubeletServer, ServerConfig

    stop = stop or threading.Event()
    restore = _install_signal_handlers(stop)
    server: KubeletServer | None = None
    live = out.isatty()
    try:
        if settings["port"]:
            try:
                server = KubeletServer(
                    kubelet,
                    ServerConfig(
                        address=settings["address"],
                        port=settings["port"],
                        enable_exec=settings["enable_exec"],
                        exec_token=exec_token,
                        log_dir=settings["log_dir"] or None,
                        tls_cert_file=settings["tls_cert_file"] or None,
                        tls_private_key_file=settings["tls_private_key_file"] or None,
                        max_connections=settings["max_connections"],
                        max_connections_per_client=settings["max_connections_per_client"],
                    ),
                    api=kube_api(kubelet, settings),
                )
            except ValueError as error:
                raise UsageError(str(error)) from None
            except OSError as error:
                out.write(
                    f"kubecore: cannot listen on {settings['address']}:{settings['port']}:"
                    f" {error.strerror or error}\n"
                )
                return EXIT_FAILED
        api = f"API {server.url}" if server is not None else "no API server"
        header = (
            f"kubecore {kubecore.__version__} on node {settings['node_name']}, runtime "
            f"{settings['runtime']}, {api}. Ctrl-C stops the agent (containers keep running)."
        )
        display = Display(out, live, header, tracker)
        if display.log_handler is not None:
            _route_logs_to(display.log_handler)
        else:
            logger.info(header)
        kubelet.start()
        poller.start()
        if start_extras is not None:
            start_extras()
        if server is not None:
            server.start()
        with agent_collector():
            display.refresh(kubelet.pods(), time.time(), source_problems(poller.sources))
            while not stop.wait(1.0):
                display.refresh(kubelet.pods(), time.time(), source_problems(poller.sources))
        logger.info("stopping: sources, workers, then the API server; containers keep running")
        return EXIT_OK
    finally:
        with stack_dump_after(stop_grace, "stopping the agent"):
            poller.stop()
            kubelet.stop()
            if server is not None:
                server.stop()
            close_runtime()
        restore()
        if live:
            out.write("\n")


def kube_api(kubelet: Kubelet, settings: Mapping[str, Any]) -> KubeApi:
    """The node's Kubernetes API (what kubectl speaks), served beside the kubelet API."""
    from kubecore._api.server import ApiServerConfig, attach_api

    config = ApiServerConfig(
        token_file=settings["api_token_file"] or None,
        anonymous_reads=bool(settings["anonymous_reads"]),
    )
    tls = bool(settings["tls_cert_file"])
    return attach_api(kubelet, config, address=settings["address"], tls=tls)


def log_level(name: str) -> int:
    numeric = logging.getLevelName(name.upper())
    if not isinstance(numeric, int):
        raise UsageError(f"--log-level: unknown level {name!r} (debug, info, warning or error)")
    return numeric


def _route_logs_to(handler: logging.Handler) -> None:
    root = logging.getLogger()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
    for existing in list(root.handlers):
        if isinstance(existing, logging.StreamHandler) and getattr(existing, "stream", None) in (
            sys.stderr,
            sys.stdout,
        ):
            root.removeHandler(existing)
    root.addHandler(handler)
