"""The settings of ``kubecore run`` and how they are layered.

In order of precedence: command line flags, environment variables ``KUBECORE_<FLAG>``
(``--node-name`` -> ``KUBECORE_NODE_NAME``), a YAML config file (``--config``, keys named like the
flags), and the defaults. Every field of ``KubeletConfig`` is a setting, generated from the
config's attrs fields; ``CONFIG_FIELD_HELP`` gives each its help text and range.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

import kubecore
from kubecore._agent.admission.node_fit import parse_node_labels
from kubecore._agent.config_bounds import FIELD_BOUNDS, SECONDS, Bounds
from kubecore._cli.basic import UsageError as UsageError
from kubecore._config.last_good import DEFAULT_SETTLE, IN_PLACE_SETTLE_FACTOR
from kubecore._http.serving import DEFAULT_ADDRESS, DEFAULT_PORT

ENV_PREFIX = "KUBECORE_"

Kind = Literal["str", "int", "float", "bool", "list", "strs", "options"]
"""``list``: paths (``os.pathsep`` separated in the environment); ``strs``: a repeatable flag,
comma separated in the environment; ``options``: ``key=value`` pairs for the runtime plugin."""


@attrs.frozen
class Setting:
    dest: str
    kind: Kind
    default: Callable[[], Any]
    help: str
    flag: str = ""
    metavar: str | None = None
    bounds: Bounds | None = None
    config_field: str = ""
    """The ``KubeletConfig`` field this setting fills ("" for the command's own settings)."""

    @property
    def option(self) -> str:
        return self.flag or "--" + self.dest.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.dest.upper()


def _default_root_dir() -> str:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return "/var/lib/kubecore"
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return os.path.join(state, "kubecore")


def _host_name() -> str:
    return socket.gethostname().lower()


@attrs.frozen
class FieldHelp:
    """How a ``KubeletConfig`` field appears on the command line."""

    help: str
    metavar: str | None = None
    flag_name: str = ""
    """The setting's name when it is not the field's (``resync`` for ``resync_interval``)."""
    default: Callable[[], Any] | None = None
    """The command's default when it differs from the library's."""


CONFIG_FIELD_HELP: Mapping[str, FieldHelp] = {
    "node_name": FieldHelp("the node's name (default: the host name)", "NAME", default=_host_name),
    "root_dir": FieldHelp(
        "the agent's state directory (pod volumes live under it)", "DIR", default=_default_root_dir
    ),
    "resync_interval": FieldHelp(
        "seconds between full resyncs of every pod", "SECONDS", flag_name="resync"
    ),
    "relist_interval": FieldHelp("seconds between relists of the runtime's containers", "SECONDS"),
    "housekeeping_interval": FieldHelp(
        "seconds between housekeeping passes (orphans, volumes, status)", "SECONDS"
    ),
    "allow_privileged": FieldHelp(
        "allow containers with securityContext.privileged and host namespaces (hostNetwork,"
        " hostPID, hostIPC), refused otherwise; lifts those checks of --pod-security too"
    ),
    "allowed_unsafe_sysctls": FieldHelp(
        "a sysctl outside the safe set that pods may set, or a prefix ending in *"
        " (repeatable; env: comma separated); --pod-security lets these in too",
        "SYSCTL",
    ),
    "pod_security": FieldHelp(
        "the Pod Security Standards level new pods must meet: privileged (no check), baseline"
        " (no host namespaces, privileged containers, extra capabilities, hostPath volumes,"
        " unlisted host ports, Unconfined seccomp or AppArmor, ...) or restricted (baseline,"
        " and non-root, capabilities dropped, no privilege escalation, seccomp set)",
        "LEVEL",
    ),
    "allowed_host_paths": FieldHelp(
        "a host path pods may mount as a hostPath volume, it and what is under it (compared"
        " normalised, by whole components); PREFIX:ro allows it read-only; a socket"
        " (/var/run/docker.sock), and a directory holding an engine's socket, only when the"
        " socket is named exactly (repeatable; env: comma separated)",
        "PREFIX[:ro]",
        flag_name="allowed_host_path",
    ),
    "allowed_host_ports": FieldHelp(
        "a host port (PORT or LOW-HIGH) pods may use under --pod-security baseline or"
        " restricted, or none (repeatable; env: comma separated; default: 1024-65535)",
        "PORT[-PORT]",
        flag_name="allowed_host_port",
    ),
    "cluster_dns": FieldHelp(
        "a DNS server for pods with dnsPolicy ClusterFirst (repeatable; env: comma separated)",
        "IP",
    ),
    "cluster_domain": FieldHelp("the cluster's DNS domain, searched by pods", "DOMAIN"),
    "resolv_conf": FieldHelp("the resolver file pods with dnsPolicy Default inherit", "FILE"),
    "sandbox_image": FieldHelp("the image of pod sandboxes (default: the runtime's own)", "IMAGE"),
    "pull_qps": FieldHelp("image pulls per second at most; 0 = no limit", "QPS"),
    "pull_burst": FieldHelp("image pulls allowed at once above --pull-qps", "N"),
    "max_pods": FieldHelp("pods admitted at most", "N"),
    "workers": FieldHelp("pods synced in parallel at most", "N"),
    "container_gc_interval": FieldHelp(
        "seconds between garbage collections of dead containers", "SECONDS"
    ),
    "gc_max_dead_per_container": FieldHelp("dead instances kept per container", "N"),
    "gc_min_age": FieldHelp("seconds a dead container is kept at least", "SECONDS"),
    "image_gc_interval": FieldHelp("seconds between image garbage collections", "SECONDS"),
    "image_gc_high": FieldHelp(
        "image disk usage (percent) above which unused images are removed",
        "PERCENT",
    ),
    "image_gc_low": FieldHelp(
        "image disk usage (percent) image garbage collection frees down to",
        "PERCENT",
    ),
    "image_min_age": FieldHelp("seconds an unused image is kept at least", "SECONDS"),
    "max_events": FieldHelp("events kept in memory at most", "N"),
    "backoff_initial": FieldHelp(
        "seconds of the first CrashLoopBackOff / ImagePullBackOff delay (it doubles)",
        "SECONDS",
    ),
    "backoff_max": FieldHelp("seconds those delays grow to at most", "SECONDS"),
    "host_ip": FieldHelp("the node's IP reported as the pods' hostIP", "IP"),
    "pvc_dir": FieldHelp(
        "serve persistentVolumeClaim volumes from DIR/<namespace>/<claimName>"
        " (refused without it: there is no API server to bind claims)",
        "DIR",
    ),
    "node_labels": FieldHelp(
        "labels of the node, checked against pods' nodeSelector and node affinity, beside"
        " kubernetes.io/hostname, /os and /arch (comma separated; repeatable)",
        "KEY=VALUE,...",
    ),
    "container_log_max_size": FieldHelp(
        "size at which a container's log file is rotated (runtimes writing log files)",
        "QUANTITY",
    ),
    "container_log_max_files": FieldHelp(
        "a container's log files kept at most, the live one included", "N"
    ),
    "eviction_hard": FieldHelp(
        "hard eviction thresholds making the node's pressure conditions, each replacing the"
        " default of its signal (memory.available<100Mi, nodefs.available<10%%,"
        " nodefs.inodesFree<5%%, imagefs.available<15%%; comma separated; repeatable)",
        "SIGNAL<QUANTITY,...",
    ),
}

_KIND_OF_TYPE: Mapping[str, Kind] = {
    "str": "str",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "tuple[str, ...]": "strs",
}


def _type_name(annotation: object) -> str:
    """An attrs field's type as written (a string under postponed annotations)."""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__name__
    return repr(annotation)


def field_kind(field: attrs.Attribute[Any]) -> Kind | None:
    """The setting kind of a ``KubeletConfig`` field; None: no flag can express its type."""
    return _KIND_OF_TYPE.get(_type_name(field.type))


def _field_default(field: attrs.Attribute[Any]) -> Callable[[], Any]:
    default: Any = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        factory: Callable[[], Any] = default.factory
        return factory
    return lambda: default


def config_settings(config_type: type = kubecore.KubeletConfig) -> tuple[Setting, ...]:
    """One setting per field of ``config_type`` that has help and a type a flag can carry
    (a test requires every field to have both)."""
    settings = []
    for field in attrs.fields(config_type):
        info = CONFIG_FIELD_HELP.get(field.name)
        kind = field_kind(field)
        if info is None or kind is None:
            continue
        settings.append(
            Setting(
                info.flag_name or field.name,
                kind,
                info.default or _field_default(field),
                info.help,
                metavar=info.metavar,
                bounds=FIELD_BOUNDS.get(field.name),
                config_field=field.name,
            )
        )
    return tuple(settings)


COMMAND_SETTINGS: tuple[Setting, ...] = (
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
        bounds=Bounds(0, 65535),
    ),
    Setting(
        "file_check_interval",
        "float",
        lambda: 20.0,
        "seconds between checks of the manifest files for changes",
        metavar="SECONDS",
        bounds=SECONDS,
    ),
    Setting(
        "manifest_may_be_missing",
        "bool",
        lambda: False,
        "a MANIFEST path that does not exist yet is empty until it appears (by default a"
        " missing path is an error: a mistyped path must not delete the pods it held)",
    ),
    Setting(
        "manifest_allow_empty",
        "bool",
        lambda: False,
        "an empty manifest directory or URL means no pods (by default it is an outage, as an"
        " unmounted mount point is: the pods are kept until files appear)",
    ),
    Setting(
        "manifest_settle",
        "float",
        lambda: DEFAULT_SETTLE,
        "seconds a changed manifest file must stay unchanged before it is read (a file being"
        " written is never acted on half-written)",
        metavar="SECONDS",
        bounds=Bounds(0, 600),
    ),
    Setting(
        "manifest_in_place_settle",
        "float",
        lambda: DEFAULT_SETTLE * IN_PLACE_SETTLE_FACTOR,
        "seconds a manifest file written in place (not renamed over) must stay unchanged before"
        " a change that removes or changes a pod is acted on, and a --manifest-url body that does"
        " so must be served: a writer that pauses mid-file deletes nothing",
        metavar="SECONDS",
        bounds=Bounds(0, 3600),
    ),
    Setting(
        "http_check_interval",
        "float",
        lambda: 20.0,
        "seconds between fetches of --manifest-url",
        metavar="SECONDS",
        bounds=SECONDS,
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
        "api_token_file",
        "str",
        lambda: "",
        "a file holding the bearer token every request to the port needs (kubectl's, and the"
        " kubelet endpoints'), reads too unless --anonymous-reads (default: no writes over the"
        " API)",
        metavar="FILE",
    ),
    Setting(
        "anonymous_reads",
        "bool",
        lambda: False,
        "with --api-token-file, let reads of the read-only endpoints (the API's GETs, /pods, "
        "/containerLogs, /logs/, /stats, /metrics) pass without the token (default: every "
        "endpoint but /healthz, /livez and /readyz needs it); logged as a warning off loopback",
    ),
    Setting(
        "tls_cert_file",
        "str",
        lambda: "",
        "serve the API port over HTTPS with this certificate (PEM; with --tls-private-key-file)",
        metavar="FILE",
    ),
    Setting(
        "tls_private_key_file",
        "str",
        lambda: "",
        "the private key of --tls-cert-file (PEM)",
        metavar="FILE",
    ),
    Setting(
        "max_connections",
        "int",
        lambda: 1024,
        "open connections to the API port at most; past it the oldest idle one is closed (the"
        " last few are kept for /healthz, /readyz and /livez)",
        metavar="N",
        bounds=Bounds(16, 65536),
    ),
    Setting(
        "max_connections_per_client",
        "int",
        lambda: 256,
        "open connections to the API port from one client address (an IPv6 /64; loopback too)"
        " at most; past it that client's oldest idle one is closed",
        metavar="N",
        bounds=Bounds(1, 65536),
    ),
    Setting(
        "etcd_endpoints",
        "str",
        lambda: "",
        "etcd URLs, comma separated: the pods bound to this node under --etcd-prefix are a"
        " source, and their status is written back (needs kubecore[etcd]; default: no etcd)",
        metavar="URLS",
    ),
    Setting(
        "etcd_prefix",
        "str",
        lambda: "/kubecore",
        "the etcd key prefix of pods, status, nodes and events",
        metavar="PREFIX",
    ),
    Setting("etcd_cafile", "str", lambda: "", "the CA bundle of etcd's TLS", metavar="FILE"),
    Setting("etcd_certfile", "str", lambda: "", "the client certificate for etcd", metavar="FILE"),
    Setting("etcd_keyfile", "str", lambda: "", "the client key for etcd", metavar="FILE"),
    Setting(
        "etcd_user",
        "str",
        lambda: "",
        "etcd user and password as USER:PASSWORD",
        metavar="USER:PASSWORD",
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
        "with --once: give up after this many seconds (virtual seconds on a runtime that runs "
        "in virtual time, such as fake)",
        metavar="SECONDS",
        bounds=SECONDS,
    ),
    Setting(
        "log_level",
        "str",
        lambda: "info",
        "debug, info, warning or error",
        metavar="LEVEL",
    ),
)

RUN_SETTINGS: tuple[Setting, ...] = COMMAND_SETTINGS + config_settings()

_BY_DEST = {setting.dest: setting for setting in RUN_SETTINGS}


def _noun(setting: Setting) -> str:
    return "an integer" if setting.kind == "int" else "a number"


def _shown(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def number_problem(setting: Setting, value: int | float, shown: str = "") -> str | None:
    """Why ``value`` cannot be the setting's value (None: it can)."""
    shown = _shown(shown or value)
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {shown}"
    if setting.bounds is not None and not setting.bounds.contains(value):
        return f"must be {_noun(setting)} {setting.bounds.describe()}, got {shown}"
    return None


def parse_number(setting: Setting, text: str) -> int | float:
    """A flag's or variable's text as the setting's number, within its bounds; ``ValueError``
    with a one-line reason otherwise."""
    try:
        value: int | float = int(text) if setting.kind == "int" else float(text)
    except ValueError:
        raise ValueError(f"must be {_noun(setting)}, got {_shown(repr(text))}") from None
    problem = number_problem(setting, value, text.strip())
    if problem is not None:
        raise ValueError(problem)
    return value


def _number(setting: Setting, value: Any) -> int | float:
    if isinstance(value, str):
        return parse_number(setting, value)
    accepted = int if setting.kind == "int" else int | float
    if isinstance(value, bool) or not isinstance(value, accepted):
        raise ValueError(f"must be {_noun(setting)}, got {_shown(value)}")
    try:
        number = value if setting.kind == "int" else float(value)
    except OverflowError:
        raise ValueError(f"must be a finite number, got {_shown(value)}") from None
    problem = number_problem(setting, number)
    if problem is not None:
        raise ValueError(problem)
    return number


def convert(setting: Setting, value: Any, origin: str) -> Any:
    """``value`` (a string from the environment, or anything from YAML) as the setting's type."""
    where = f"{origin}: {setting.dest.replace('_', '-')}"
    if setting.kind in ("int", "float"):
        try:
            return _number(setting, value)
        except ValueError as error:
            raise UsageError(f"{where}: {error}") from None
    try:
        if setting.kind == "bool":
            return _to_bool(value)
        if setting.kind == "list":
            if isinstance(value, str):
                return [part for part in value.split(os.pathsep) if part]
            return _string_list(value)
        if setting.kind == "strs":
            if isinstance(value, str):
                return tuple(part.strip() for part in value.split(",") if part.strip())
            return tuple(_string_list(value))
        if setting.kind == "options":
            return parse_options(value)
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ValueError(value)
        return str(value)
    except (TypeError, ValueError):
        raise UsageError(f"{where}: not a valid {setting.kind}: {_shown(repr(value))}") from None


def _string_list(value: Any) -> list[str]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ValueError(value)


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
    import yaml  # loaded by the flag that needs it: `kubecore run` starts without it

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
    import yaml  # loaded with the config file: `kubecore run` without one starts without it

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise UsageError(f"config file {path}: {reason}") from None
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as error:
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
            if setting.kind in ("options", "strs"):
                value = convert(setting, value, "command line")
            resolved[setting.dest] = value
        elif setting.env in environ:
            resolved[setting.dest] = convert(setting, environ[setting.env], setting.env)
        elif setting.dest in from_file:
            resolved[setting.dest] = from_file[setting.dest]
        else:
            resolved[setting.dest] = setting.default()
    return resolved


def kubelet_config_values(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The ``KubeletConfig`` keyword arguments the resolved settings give; a usage error when
    two of them contradict each other."""
    values = {s.config_field: settings[s.dest] for s in RUN_SETTINGS if s.config_field}
    if values.get("image_gc_low", 0) > values.get("image_gc_high", 100):
        raise UsageError("--image-gc-low must not be above --image-gc-high")
    if values.get("backoff_initial", 0) > values.get("backoff_max", math.inf):
        raise UsageError("--backoff-initial must not be above --backoff-max")
    try:
        parse_node_labels(values.get("node_labels", ()))
    except ValueError as error:
        raise UsageError(f"--node-labels: {error}") from None
    return values
