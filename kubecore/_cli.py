"""The ``kubecore`` command: ``run``, ``validate``, ``runtimes``, ``version``.

A thin shell over the public API. Settings for ``run`` come from, in order of precedence: command
line flags, environment variables ``KUBECORE_<FLAG>`` (``--node-name`` -> ``KUBECORE_NODE_NAME``),
a YAML config file (``--config``, keys named like the flags), and the defaults.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, Literal

import attrs
import yaml

import kubecore
from kubecore._clock import Clock, ManualClock, SystemClock
from kubecore._errors import KubecoreError, RootDirInUse, SourceUnavailable
from kubecore._model import Pod
from kubecore._runtime import Puller, PullerWrapper, PullProgress, RegistryAuth
from kubecore._server import DEFAULT_ADDRESS, DEFAULT_PORT, KubeletServer, ServerConfig
from kubecore._sources import (
    FileSource,
    HTTPSource,
    PodSource,
    SourcePoller,
    SourceProblem,
    list_manifest_files,
    parse_manifest,
)
from kubecore._status import Verdict, pod_status_text, pod_verdict

if TYPE_CHECKING:
    from kubecore._credentials import DockerKeyring
    from kubecore._kubelet import Kubelet

logger = logging.getLogger(__name__)

ENV_PREFIX = "KUBECORE_"
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

# --- settings -----------------------------------------------------------------------------

Kind = Literal["str", "int", "float", "bool", "list", "options"]


def _default_root_dir() -> str:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return "/var/lib/kubecore"
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return os.path.join(state, "kubecore")


@attrs.frozen
class Setting:
    dest: str
    kind: Kind
    default: Callable[[], Any]
    help: str
    flag: str = ""
    metavar: str | None = None

    @property
    def option(self) -> str:
        return self.flag or "--" + self.dest.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.dest.upper()


RUN_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "manifests",
        "list",
        list,
        "manifest files or directories of v1 Pod YAML/JSON (several documents per file; files "
        "starting with '.' are skipped); watched for changes",
        flag="manifests",
        metavar="MANIFEST",
    ),
    Setting(
        "manifest_url",
        "str",
        lambda: "",
        "a URL serving pod manifests, polled; the last good state is kept when it fails",
        metavar="URL",
    ),
    Setting(
        "runtime",
        "str",
        lambda: "fake",
        "the container runtime plugin: fake (in memory), docker, or any installed "
        "plugin (see `kubecore runtimes`)",
        metavar="NAME",
    ),
    Setting(
        "runtime_option",
        "options",
        dict,
        "an option for the runtime plugin as key=value (repeatable; the value is read as YAML, "
        "so 'true' and '3' are a bool and an int); env: comma separated",
        metavar="KEY=VALUE",
    ),
    Setting(
        "root_dir",
        "str",
        _default_root_dir,
        "the agent's state directory (pod volumes live under it)",
        metavar="DIR",
    ),
    Setting(
        "node_name",
        "str",
        lambda: socket.gethostname().lower(),
        "the node's name (default: the host name)",
        metavar="NAME",
    ),
    Setting(
        "address",
        "str",
        lambda: DEFAULT_ADDRESS,
        "the address the HTTP API binds to (0.0.0.0 exposes it to the network)",
        metavar="IP",
    ),
    Setting(
        "port",
        "int",
        lambda: DEFAULT_PORT,
        "the HTTP API port; 0 = no server",
        metavar="PORT",
    ),
    Setting(
        "resync",
        "float",
        lambda: 60.0,
        "seconds between full resyncs of every pod",
        metavar="SECONDS",
    ),
    Setting(
        "file_check_interval",
        "float",
        lambda: 20.0,
        "seconds between checks of the manifest files for changes",
        metavar="SECONDS",
    ),
    Setting(
        "manifest_may_be_missing",
        "bool",
        lambda: False,
        "a MANIFEST path that does not exist yet is empty until it appears (by default a"
        " missing path is an error: a mistyped path must not delete the pods it held)",
    ),
    Setting(
        "manifest_settle",
        "float",
        lambda: 2.0,
        "seconds a changed manifest file must stay unchanged before it is read (a file being"
        " written is never acted on half-written)",
        metavar="SECONDS",
    ),
    Setting(
        "http_check_interval",
        "float",
        lambda: 20.0,
        "seconds between fetches of --manifest-url",
        metavar="SECONDS",
    ),
    Setting(
        "registry_config",
        "str",
        lambda: "",
        "a Docker config file (config.json with 'auths') whose credentials image pulls use "
        "when the pod's pull secrets give none (default: none; the runtime may read its own)",
        metavar="FILE",
    ),
    Setting(
        "allow_privileged",
        "bool",
        lambda: False,
        "allow containers with securityContext.privileged (refused otherwise)",
    ),
    Setting(
        "enable_exec",
        "bool",
        lambda: False,
        "serve /run/{namespace}/{pod}/{container} (exec in a container); needs --exec-token-file",
    ),
    Setting(
        "exec_token_file",
        "str",
        lambda: "",
        "a file holding the bearer token /run requires",
        metavar="FILE",
    ),
    Setting(
        "log_dir",
        "str",
        lambda: "",
        "a directory of node log files to serve under /logs/ (default: none served)",
        metavar="DIR",
    ),
    Setting(
        "once",
        "bool",
        lambda: False,
        "sync until every pod converges or --deadline passes, print the pod table and exit: "
        "non-zero if a pod failed or did not converge (no API server is started)",
    ),
    Setting(
        "deadline",
        "float",
        lambda: 300.0,
        "with --once: give up after this many seconds (virtual seconds on the fake runtime)",
        metavar="SECONDS",
    ),
    Setting(
        "log_level",
        "str",
        lambda: "info",
        "debug, info, warning or error",
        metavar="LEVEL",
    ),
)

_BY_DEST = {setting.dest: setting for setting in RUN_SETTINGS}


class UsageError(Exception):
    """A bad flag, environment variable or config file: exit 2 with the message."""


def convert(setting: Setting, value: Any, origin: str) -> Any:
    """``value`` (a string from the environment, or anything from YAML) as the setting's type."""
    where = f"{origin}: {setting.dest.replace('_', '-')}"
    try:
        if setting.kind == "bool":
            return _to_bool(value)
        if setting.kind == "int":
            if isinstance(value, bool):
                raise ValueError(value)
            return int(value)
        if setting.kind == "float":
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if setting.kind == "list":
            if isinstance(value, str):
                return [part for part in value.split(os.pathsep) if part]
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return list(value)
            raise ValueError(value)
        if setting.kind == "options":
            return parse_options(value)
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ValueError(value)
        return str(value)
    except (TypeError, ValueError):
        raise UsageError(f"{where}: not a valid {setting.kind}: {value!r}") from None


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(value)


def parse_options(value: Any) -> dict[str, Any]:
    """Runtime options from ``["k=v", ...]``, ``"k=v,k2=v2"`` or a mapping."""
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    items = _split_options(value) if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ValueError(value)
    options: dict[str, Any] = {}
    for item in items:
        key, sep, raw = str(item).partition("=")
        if not sep or not key.strip():
            raise ValueError(item)
        try:
            options[key.strip().replace("-", "_")] = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            options[key.strip().replace("-", "_")] = raw
    return options


def _split_options(text: str) -> list[str]:
    """``a=1,b=x,y`` -> ``["a=1", "b=x,y"]``: a piece without ``=`` continues the value before."""
    items: list[str] = []
    for piece in text.split(","):
        if items and "=" not in piece:
            items[-1] += "," + piece
        elif piece.strip():
            items.append(piece)
    return items


def load_config_file(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"config file {path}: {error.strerror or error}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise UsageError(f"config file {path}: not valid YAML: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"config file {path}: must be a mapping of settings")
    values: dict[str, Any] = {}
    for key, value in data.items():
        dest = str(key).replace("-", "_")
        setting = _BY_DEST.get(dest)
        if setting is None:
            known = ", ".join(s.dest.replace("_", "-") for s in RUN_SETTINGS)
            raise UsageError(f"config file {path}: unknown setting {key!r} (known: {known})")
        values[dest] = convert(setting, value, f"config file {path}")
    return values


def resolve_settings(
    flags: Mapping[str, Any], environ: Mapping[str, str], config_path: str | None
) -> dict[str, Any]:
    """flags > ``KUBECORE_*`` environment > config file > defaults."""
    config_path = config_path or environ.get(ENV_PREFIX + "CONFIG") or None
    from_file = load_config_file(config_path) if config_path else {}
    resolved: dict[str, Any] = {}
    for setting in RUN_SETTINGS:
        if setting.dest in flags:
            value = flags[setting.dest]
            if setting.kind == "options":
                value = convert(setting, value, "command line")
            resolved[setting.dest] = value
        elif setting.env in environ:
            resolved[setting.dest] = convert(setting, environ[setting.env], setting.env)
        elif setting.dest in from_file:
            resolved[setting.dest] = from_file[setting.dest]
        else:
            resolved[setting.dest] = setting.default()
    return resolved


# --- the pod table ------------------------------------------------------------------------


@attrs.frozen
class PodRow:
    namespace: str
    name: str
    ready: str
    status: str
    restarts: int
    age: str


def parse_time(value: str) -> float | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def short_duration(seconds: float) -> str:
    """Like kubectl's ages: 45s, 3m20s, 12m, 5h10m, 20h, 3d4h, 12d, 2y."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"


def pod_row(pod: Pod, now: float) -> PodRow:
    statuses = pod.status.container_statuses if pod.status else ()
    ready = sum(1 for cs in statuses if cs.ready)
    restarts = sum(cs.restart_count for cs in statuses)
    started = parse_time(pod.status.start_time) if pod.status else None
    return PodRow(
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        ready=f"{ready}/{len(pod.spec.containers)}",
        status=pod_status_text(pod),
        restarts=restarts,
        age=short_duration(now - started) if started is not None else "<unknown>",
    )


def format_table(pods: Sequence[Pod], now: float) -> str:
    """``NAME READY STATUS RESTARTS AGE`` (plus NAMESPACE when pods span several)."""
    rows = [pod_row(pod, now) for pod in pods]
    rows.sort(key=lambda r: (r.namespace, r.name))
    with_namespace = len({r.namespace for r in rows}) > 1
    header = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    table = [[r.name, r.ready, r.status, str(r.restarts), r.age] for r in rows]
    if with_namespace:
        header.insert(0, "NAMESPACE")
        for row, r in zip(table, rows, strict=True):
            row.insert(0, r.namespace)
    if not rows:
        return "No pods.\n"
    widths = [max(len(line[i]) for line in [header, *table]) for i in range(len(header))]
    lines = [
        "   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in [header, *table]
    ]
    return "\n".join(lines) + "\n"


# --- image pull progress ------------------------------------------------------------------


@attrs.define
class _Pull:
    image: str
    started: float
    layers: dict[str, tuple[int, int]] = attrs.field(factory=dict)
    status: str = "Pulling"


class PullTracker:
    """Collects pull progress from the runtime for the display (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pulls: dict[str, _Pull] = {}
        self.finished: list[tuple[str, str]] = []

    def begin(self, image: str) -> None:
        with self._lock:
            self._pulls[image] = _Pull(image, time.monotonic())

    def progress(self, event: PullProgress) -> None:
        with self._lock:
            pull = self._pulls.setdefault(event.image, _Pull(event.image, time.monotonic()))
            pull.status = event.status or pull.status
            if event.layer and event.total:
                pull.layers[event.layer] = (event.current or 0, event.total)

    def end(self, image: str, outcome: str) -> None:
        with self._lock:
            self._pulls.pop(image, None)
            self.finished.append((image, outcome))

    def active(self) -> list[tuple[str, str, int, int]]:
        """(image, status, bytes done, bytes total) of each pull in progress."""
        with self._lock:
            return [
                (
                    p.image,
                    p.status,
                    sum(c for c, _ in p.layers.values()),
                    sum(t for _, t in p.layers.values()),
                )
                for p in self._pulls.values()
            ]


def progress_bar(done: int, total: int, width: int = 24) -> str:
    if total <= 0:
        return "[" + "?" * width + "]"
    filled = min(width, int(width * done / total))
    return "[" + "#" * filled + "-" * (width - filled) + f"] {100 * done // total:3d}%"


class TrackingPuller(PullerWrapper):
    """A ``Puller`` that also reports each pull's progress to a ``PullTracker``."""

    def __init__(self, inner: Puller, tracker: PullTracker) -> None:
        super().__init__(inner)
        self._tracker = tracker

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        def report(event: PullProgress) -> None:
            self._tracker.progress(event)
            if progress is not None:
                progress(event)

        self._tracker.begin(image)
        try:
            image_id = self.inner.pull(image, auth, report)
        except BaseException as error:
            self._tracker.end(image, f"failed: {error}")
            raise
        self._tracker.end(image, "pulled")
        return image_id


# --- subcommands --------------------------------------------------------------------------


def cmd_version(args: argparse.Namespace, out: IO[str]) -> int:
    out.write(
        f"kubecore {kubecore.__version__} (python {sys.version.split()[0]}, {sys.platform})\n"
    )
    return EXIT_OK


def cmd_runtimes(args: argparse.Namespace, out: IO[str]) -> int:
    from kubecore._plugins import plugin_manager

    manager = plugin_manager()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        infos = manager.runtimes()
        broken = manager.broken_plugins()
    rows = [["NAME", "DESCRIPTION", "PLUGIN"]]
    for info in infos:
        plugin = info.plugin + (f" ({info.distribution})" if info.distribution else "")
        note = f" (unavailable: {info.unavailable})" if info.unavailable else ""
        rows.append([info.name, info.description + note, plugin])
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        out.write("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
    for bad in broken:
        where = f" ({bad.distribution})" if bad.distribution else ""
        out.write(f"broken plugin {bad.name}{where}: {bad.error}\n")
    return EXIT_OK if infos else EXIT_FAILED


def validate_paths(paths: Sequence[str]) -> tuple[list[str], int, int]:
    """Every problem line (``file: path: message``), the file count and the valid pod count."""
    lines: list[str] = []
    files = 0
    pods = 0
    for raw in paths:
        root = Path(raw)
        found = list_manifest_files(root)
        if not found:
            lines.append(
                f"{raw}: no such file or directory"
                if not root.exists()
                else f"{raw}: no manifest files"
            )
            continue
        for path in found:
            files += 1
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                lines.append(f"{path}: cannot read: {error}")
                continue
            valid, errors = parse_manifest(text, str(path))
            pods += len(valid)
            lines.extend(str(SourceProblem(str(path), (error,))) for error in errors)
    return lines, files, pods


def cmd_validate(args: argparse.Namespace, out: IO[str]) -> int:
    problems, files, pods = validate_paths(args.files)
    for line in problems:
        out.write(line + "\n")
    noun = "file" if files == 1 else "files"
    if problems:
        out.write(f"{len(problems)} problem(s) in {files} {noun}; {pods} valid pod(s)\n")
        return EXIT_FAILED
    out.write(f"{files} {noun} OK, {pods} pod(s)\n")
    return EXIT_OK


# --- run ----------------------------------------------------------------------------------


class _TableLog(logging.Handler):
    """Keeps the newest log lines for the live table (a tty cannot show both streams)."""

    def __init__(self, size: int = 8) -> None:
        super().__init__()
        self.lines: list[str] = []
        self._size = size

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record).splitlines()[0]
        except Exception:
            return
        self.lines = [*self.lines, line][-self._size :]


class Display:
    """The live pod table on a terminal; one log line per change otherwise."""

    def __init__(self, out: IO[str], live: bool, header: str, tracker: PullTracker) -> None:
        self._out = out
        self._live = live
        self._header = header
        self._tracker = tracker
        self._last_rows: dict[tuple[str, str], tuple[str, str, int]] = {}
        self._reported_pulls = 0
        self.log_handler = _TableLog() if live else None

    def refresh(self, pods: Sequence[Pod], now: float, problems: Sequence[SourceProblem]) -> None:
        if self._live:
            self._draw(pods, now, problems)
        else:
            self._log_changes(pods, now)

    def _draw(self, pods: Sequence[Pod], now: float, problems: Sequence[SourceProblem]) -> None:
        parts = ["\x1b[H\x1b[2J", self._header, "\n\n", format_table(pods, now)]
        pulls = self._tracker.active()
        if pulls:
            parts.append("\n")
            for image, status, done, total in pulls:
                size = f" {done / 1e6:.1f}/{total / 1e6:.1f} MB" if total else ""
                parts.append(f"pulling {image} {progress_bar(done, total)}{size} {status}\n")
        if problems:
            parts.append("\n")
            parts.extend(line + "\n" for p in problems for line in p.lines())
        if self.log_handler is not None and self.log_handler.lines:
            parts.append("\n")
            parts.extend(line + "\n" for line in self.log_handler.lines)
        self._out.write("".join(parts))
        self._out.flush()

    def _log_changes(self, pods: Sequence[Pod], now: float) -> None:
        finished = self._tracker.finished[self._reported_pulls :]
        self._reported_pulls += len(finished)
        for image, outcome in finished:
            logger.info("image %s: %s", image, outcome)
        current: dict[tuple[str, str], tuple[str, str, int]] = {}
        for pod in pods:
            row = pod_row(pod, now)
            key = (row.namespace, row.name)
            current[key] = (row.ready, row.status, row.restarts)
            if self._last_rows.get(key) != current[key]:
                logger.info(
                    "pod %s/%s: %s %s restarts=%d",
                    row.namespace,
                    row.name,
                    row.ready,
                    row.status,
                    row.restarts,
                )
        for gone in self._last_rows.keys() - current.keys():
            logger.info("pod %s/%s: removed", *gone)
        self._last_rows = current


def build_sources(settings: Mapping[str, Any]) -> list[PodSource]:
    sources: list[PodSource] = []
    if settings["manifests"]:
        try:
            sources.append(
                FileSource(
                    settings["manifests"],
                    interval=settings["file_check_interval"],
                    may_be_missing=settings["manifest_may_be_missing"],
                    settle=settings["manifest_settle"],
                )
            )
        except SourceUnavailable as error:
            raise UsageError(str(error)) from None
    if settings["manifest_url"]:
        try:
            sources.append(
                HTTPSource(settings["manifest_url"], interval=settings["http_check_interval"])
            )
        except ValueError as error:
            raise UsageError(f"--manifest-url: {error}") from None
    return sources


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
    from kubecore._credentials import DockerKeyring, RegistryConfigError

    try:
        return DockerKeyring.from_file(path)
    except RegistryConfigError as error:
        raise UsageError(f"--registry-config: {error}") from None


def cmd_run(
    args: argparse.Namespace, out: IO[str], environ: Mapping[str, str] | None = None
) -> int:
    environ = os.environ if environ is None else environ
    flags = {k: v for k, v in vars(args).items() if k in _BY_DEST}
    settings = resolve_settings(flags, environ, args.config)
    _setup_logging(settings["log_level"])
    once = bool(settings["once"])
    exec_token = ""
    if settings["enable_exec"]:
        if not settings["exec_token_file"]:
            raise UsageError("--enable-exec needs --exec-token-file")
        exec_token = read_token(settings["exec_token_file"])
    sources = build_sources(settings)
    keyring = read_registry_config(settings["registry_config"])

    from kubecore._kubelet import Kubelet, KubeletConfig
    from kubecore._plugins import plugin_manager

    # The fake runtime runs in real time so that the API is usable; --once on it runs in
    # virtual time, which converges (or reaches the deadline) without waiting.
    virtual = once and settings["runtime"] == "fake"
    clock: Clock = ManualClock(start=time.time()) if virtual else SystemClock()
    options = dict(settings["runtime_option"])
    if settings["runtime"] == "fake":
        options.setdefault("clock", clock)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            bundle = plugin_manager().load_runtime(settings["runtime"], **options)
        except KubecoreError as error:
            out.write(f"kubecore: {error}\n")
            return EXIT_FAILED
    tracker = PullTracker()
    puller: Puller = bundle.puller
    if keyring is not None:
        from kubecore._credentials import KeyringPuller

        puller = KeyringPuller(puller, keyring)
    config = KubeletConfig(
        node_name=settings["node_name"],
        root_dir=settings["root_dir"],
        resync_interval=settings["resync"],
        allow_privileged=settings["allow_privileged"],
    )
    kubelet = Kubelet(
        bundle.runtime,
        TrackingPuller(puller, tracker),
        config=config,
        health_checker=bundle.health_checker,
        clock=clock,
        sources=tuple(source.name for source in sources),
    )
    try:
        kubelet.volumes.acquire()
    except RootDirInUse as error:
        raise UsageError(str(error)) from None
    poller = SourcePoller(sources, kubelet.update, clock=clock)
    if once:
        try:
            return run_once(kubelet, poller, clock, settings["deadline"], out)
        finally:
            kubelet.stop()
            bundle.runtime.close()
    return run_forever(kubelet, poller, bundle.runtime.close, settings, exec_token, out, tracker)


def run_once(
    kubelet: Kubelet, poller: SourcePoller, clock: Clock, deadline: float, out: IO[str]
) -> int:
    """Sync until every pod converged or failed, or the deadline passed; print the table."""
    step = 1.0
    end = clock.monotonic() + deadline
    verdicts: dict[str, tuple[Verdict, str]] = {}
    pods: list[Pod] = []
    for _ in range(int(deadline / step) + 2):
        poller.poll_once()
        kubelet.sync()
        pods = list(kubelet.pods())
        verdicts = {f"{p.metadata.namespace}/{p.metadata.name}": pod_verdict(p) for p in pods}
        if all(v != "pending" for v, _ in verdicts.values()) or clock.monotonic() >= end:
            break
        clock.sleep(step)
    out.write(format_table(pods, clock.now()))
    problems = source_problems(poller.sources)
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


def run_forever(
    kubelet: Kubelet,
    poller: SourcePoller,
    close_runtime: Callable[[], None],
    settings: Mapping[str, Any],
    exec_token: str,
    out: IO[str],
    tracker: PullTracker,
    stop: threading.Event | None = None,
) -> int:
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
                    ),
                )
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
        if server is not None:
            server.start()
        display.refresh(kubelet.pods(), time.time(), source_problems(poller.sources))
        while not stop.wait(1.0):
            display.refresh(kubelet.pods(), time.time(), source_problems(poller.sources))
        logger.info("stopping: sources, workers, then the API server; containers keep running")
        return EXIT_OK
    finally:
        poller.stop()
        kubelet.stop()
        if server is not None:
            server.stop()
        close_runtime()
        restore()
        if live:
            out.write("\n")


def _setup_logging(level: str) -> None:
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise UsageError(f"--log-level: unknown level {level!r}")
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
        )
        root.addHandler(handler)
    root.setLevel(numeric)


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


# --- the parser ---------------------------------------------------------------------------


def _default_text(setting: Setting) -> str:
    if setting.kind in ("bool", "list", "options") or setting.dest == "node_name":
        return ""
    value = setting.default()
    return (
        f" (default: {value:g})" if isinstance(value, float) else f" (default: {value or 'none'})"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubecore",
        description="The core of a container node agent (the Kubernetes kubelet) as a library.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run the agent",
        description=(
            "Run the node agent: keep the pods of the manifests running on a container runtime "
            "and serve the kubelet HTTP API. Every flag can also be set with an environment "
            f"variable {ENV_PREFIX}<FLAG> (--node-name -> {ENV_PREFIX}NODE_NAME) or in a YAML "
            "config file (--config, keys named like the flags); flags win over the environment, "
            "the environment over the file."
        ),
    )
    for setting in RUN_SETTINGS:
        text = f"{setting.help}{_default_text(setting)} [env {setting.env}]"
        if setting.dest == "manifests":
            run.add_argument(
                "manifests",
                nargs="*",
                metavar=setting.metavar,
                default=argparse.SUPPRESS,
                help=text,
            )
        elif setting.kind == "bool":
            run.add_argument(
                setting.option,
                dest=setting.dest,
                action=argparse.BooleanOptionalAction,
                default=argparse.SUPPRESS,
                help=text,
            )
        elif setting.kind == "options":
            run.add_argument(
                setting.option,
                dest=setting.dest,
                action="append",
                metavar=setting.metavar,
                default=argparse.SUPPRESS,
                help=text,
            )
        else:
            converter: Callable[[str], Any] = {"int": int, "float": float}.get(setting.kind, str)
            run.add_argument(
                setting.option,
                dest=setting.dest,
                type=converter,
                metavar=setting.metavar,
                default=argparse.SUPPRESS,
                help=text,
            )
    run.add_argument(
        "--config",
        metavar="FILE",
        default=None,
        help=f"a YAML file of settings named like the flags [env {ENV_PREFIX}CONFIG]",
    )
    run.set_defaults(handler=cmd_run)

    validate = commands.add_parser(
        "validate",
        help="check manifests and print every problem",
        description=(
            "Check manifest files (or directories of them) and print every problem as "
            "'file: field.path: message'. Exits 1 if there is any problem, 0 if all are good."
        ),
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="manifest files or directories")
    validate.set_defaults(handler=cmd_validate)

    runtimes = commands.add_parser(
        "runtimes",
        help="list the installed runtime plugins",
        description="List the runtimes installed plugins offer, and any plugin that is broken.",
    )
    runtimes.set_defaults(handler=cmd_runtimes)

    version = commands.add_parser("version", help="print the version")
    version.set_defaults(handler=cmd_version)
    return parser


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None) -> int:
    """The ``kubecore`` command. Returns the exit status (the console script exits with it)."""
    stream = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0) if isinstance(exit_.code, int | None) else EXIT_USAGE
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(stream)
        return EXIT_USAGE
    try:
        return int(handler(args, stream))
    except UsageError as error:
        sys.stderr.write(f"kubecore: {error}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:  # only outside `run`'s own signal handling (e.g. during --once)
        sys.stderr.write("kubecore: interrupted\n")
        return 130
