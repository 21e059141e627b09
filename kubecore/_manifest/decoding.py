"""Decoding: the v1 JSON shape of a Pod read into the model, and written back.

A small declarative table per model class (``_Spec``) says each JSON field's name, the attribute it
fills and its kind. Reading checks JSON types, required fields and unknown fields; problems are
collected, never raised one by one, and a field with a problem gets a placeholder so decoding can
go on. Writing applies ``omitempty`` and Kubernetes' defaults.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

import attrs
import yaml

from kubecore import _model as m
from kubecore._errors import FieldError

_Problems = list[FieldError]


# --- paths and value display ----------------------------------------------------------------


def _field(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _item(path: str, index: int | str) -> str:
    return f"{path}[{index}]"


MAX_NUMBER_DIGITS = 640
"""The longest number (in characters) a manifest may hold. Python refuses to convert integers of
more than ``sys.get_int_max_str_digits()`` digits (4,300 by default, 640 at the least) to and from
text, and converting long ones costs quadratic time; no field of a pod needs more than 20."""


@attrs.frozen
class OversizedNumber:
    """What a parser keeps for a number longer than ``MAX_NUMBER_DIGITS``: no field accepts it,
    so decoding reports it with its path instead of converting it."""

    digits: int

    def __str__(self) -> str:
        return f"a number of {self.digits} characters"


_MAX_INT_BITS = 3 * MAX_NUMBER_DIGITS  # fewer than MAX_NUMBER_DIGITS decimal digits


def _is_integer(value: object) -> TypeGuard[int]:
    """A JSON integer a field can hold: not a bool, and short enough to convert to text (data
    from ``load_pods_from_dict`` comes from code, where integers have no length limit)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return value.bit_length() <= _MAX_INT_BITS


def _show(value: object) -> str:
    """A value as a user would recognise it from their manifest."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
        return "a very large integer"  # repr() could exceed the interpreter's digit limit
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, OversizedNumber):
        return str(value)
    return type(value).__name__


# --- decoding: field kinds ------------------------------------------------------------------


class _Kind:
    """How one field is read from JSON data and written back."""

    def zero(self) -> Any:
        """The placeholder used when the field is missing or has the wrong type."""
        return None

    def load(self, value: object, path: str, errs: _Problems) -> Any:
        raise TypeError(f"{type(self).__name__} cannot load")  # pragma: no cover

    def dump(self, value: Any) -> Any:
        return value

    def is_empty(self, value: Any) -> bool:
        """Whether ``omitempty`` drops the value."""
        return value is None


class _Str(_Kind):
    def __init__(self, upper_choices: Sequence[str] = ()) -> None:
        # Values in ``upper_choices`` are accepted in any case and normalised to upper case.
        self.upper_choices = tuple(upper_choices)

    def zero(self) -> str:
        return ""

    def load(self, value: object, path: str, errs: _Problems) -> str:
        if not isinstance(value, str):
            errs.append(FieldError(path, f"expected a string, got {_show(value)}"))
            return ""
        if value.upper() in self.upper_choices:
            return value.upper()
        return value

    def is_empty(self, value: Any) -> bool:
        return bool(value == "")


class _StrOrDefault(_Str):
    """A string whose default value is left out of a dump, like an empty one."""

    def __init__(self, default: str) -> None:
        super().__init__()
        self.default = default

    def is_empty(self, value: Any) -> bool:
        return bool(value in ("", self.default))


class _Int(_Kind):
    def zero(self) -> int:
        return 0

    def load(self, value: object, path: str, errs: _Problems) -> int:
        if _is_integer(value):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        errs.append(FieldError(path, f"expected an integer, got {_show(value)}"))
        return 0

    def is_empty(self, value: Any) -> bool:
        return bool(value == 0)


class _Bool(_Kind):
    def __init__(self, optional: bool = False) -> None:
        self.optional = optional

    def zero(self) -> bool | None:
        return None if self.optional else False

    def load(self, value: object, path: str, errs: _Problems) -> bool | None:
        if isinstance(value, bool):
            return value
        errs.append(FieldError(path, f"expected true or false, got {_show(value)}"))
        return self.zero()

    def is_empty(self, value: Any) -> bool:
        return value is None if self.optional else value is False


def _load_quantity(value: object, path: str, errs: _Problems) -> str:
    # Kubernetes reads quantities from JSON numbers too (``cpu: 0.5``); kept as written.
    if isinstance(value, str):
        return value
    if _is_integer(value):
        return str(value)
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return repr(value)
    errs.append(
        FieldError(path, f"expected a quantity such as '500m' or '1Gi', got {_show(value)}")
    )
    return ""


class _OptQuantity(_Kind):
    def load(self, value: object, path: str, errs: _Problems) -> str:
        return _load_quantity(value, path, errs)


class _IntOrStr(_Kind):
    def zero(self) -> int:
        return 0

    def load(self, value: object, path: str, errs: _Problems) -> int | str:
        if isinstance(value, str) or _is_integer(value):
            return value
        errs.append(FieldError(path, f"expected a port number or name, got {_show(value)}"))
        return 0


class _StrList(_Kind):
    def zero(self) -> tuple[str, ...]:
        return ()

    def load(self, value: object, path: str, errs: _Problems) -> tuple[str, ...]:
        if not isinstance(value, list):
            errs.append(FieldError(path, f"expected a list of strings, got {_show(value)}"))
            return ()
        return tuple(_Str().load(v, _item(path, i), errs) for i, v in enumerate(value))

    def dump(self, value: Any) -> Any:
        return list(value)

    def is_empty(self, value: Any) -> bool:
        return not value


class _StrMap(_Kind):
    def __init__(self, quantities: bool = False) -> None:
        self.quantities = quantities

    def zero(self) -> dict[str, str]:
        return {}

    def load(self, value: object, path: str, errs: _Problems) -> dict[str, str]:
        if not isinstance(value, Mapping):
            errs.append(FieldError(path, f"expected a mapping, got {_show(value)}"))
            return {}
        out: dict[str, str] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                errs.append(FieldError(_item(path, str(key)), "keys must be strings"))
                continue
            where = _item(path, key)
            if self.quantities:
                out[key] = _load_quantity(item, where, errs)
            else:
                out[key] = _Str().load(item, where, errs)
        return out

    def dump(self, value: Any) -> Any:
        return dict(value)

    def is_empty(self, value: Any) -> bool:
        return not value


class _Obj(_Kind):
    """A nested object. ``optional``: ``None`` when absent; else always written, even as ``{}``."""

    def __init__(self, spec: _Spec, optional: bool = False) -> None:
        self.spec = spec
        self.optional = optional

    def zero(self) -> Any:
        return None if self.optional else self.spec.placeholder()

    def load(self, value: object, path: str, errs: _Problems) -> Any:
        return self.spec.load(value, path, errs)

    def dump(self, value: Any) -> Any:
        return self.spec.dump(value)


class _ObjList(_Kind):
    def __init__(self, spec: _Spec) -> None:
        self.spec = spec

    def zero(self) -> tuple[Any, ...]:
        return ()

    def load(self, value: object, path: str, errs: _Problems) -> tuple[Any, ...]:
        if not isinstance(value, list):
            errs.append(FieldError(path, f"expected a list, got {_show(value)}"))
            return ()
        return tuple(self.spec.load(v, _item(path, i), errs) for i, v in enumerate(value))

    def dump(self, value: Any) -> Any:
        return [self.spec.dump(v) for v in value]

    def is_empty(self, value: Any) -> bool:
        return not value


# --- decoding: the tables -------------------------------------------------------------------


@attrs.frozen
class _F:
    """One JSON field: its v1 name, the attribute it fills, how to read it.

    ``required``: missing is a problem. ``always``: written even when empty (a field Kubernetes
    defaults, or one without ``omitempty``), so a dump reads back to the same value.
    """

    json: str
    kind: _Kind
    required: bool = False
    always: bool = False
    attr: str = attrs.field()

    @attr.default
    def _snake(self) -> str:
        return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", self.json).lower()


@attrs.frozen
class _Spec:
    cls: type[Any]
    fields: tuple[_F, ...]
    unsupported: frozenset[str] = frozenset()
    without_default: frozenset[str] = attrs.field(init=False)
    """Attributes the model class needs; filled with the kind's zero when absent and optional."""

    @without_default.default
    def _model_needs(self) -> frozenset[str]:
        return frozenset(a.name for a in attrs.fields(self.cls) if a.default is attrs.NOTHING)

    def placeholder(self) -> Any:
        return self.cls(
            **{
                f.attr: f.kind.zero()
                for f in self.fields
                if f.required or f.attr in self.without_default
            }
        )

    def load(self, value: object, path: str, errs: _Problems) -> Any:
        if not isinstance(value, Mapping):
            errs.append(FieldError(path, f"expected a mapping, got {_show(value)}"))
            return self.placeholder()
        known = {f.json: f for f in self.fields}
        kwargs: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                errs.append(FieldError(_field(path, str(key)), "field names must be strings"))
                continue
            where = _field(path, key)
            field = known.get(key)
            if field is not None:
                if item is not None:  # null means "not set" in the v1 API
                    kwargs[field.attr] = field.kind.load(item, where, errs)
            elif key in self.unsupported:
                if item is not None:
                    errs.append(FieldError(where, "not supported by kubecore"))
            else:
                errs.append(FieldError(where, _unknown_field_message(key, known)))
        for field in self.fields:
            if field.attr in kwargs:
                continue
            if field.required:
                errs.append(FieldError(_field(path, field.json), "required"))
                kwargs[field.attr] = field.kind.zero()
            elif field.attr in self.without_default:
                kwargs[field.attr] = field.kind.zero()
        return self.cls(**kwargs)

    def dump(self, obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field in self.fields:
            value = getattr(obj, field.attr)
            if value is None:
                continue
            if field.always or not field.kind.is_empty(value):
                out[field.json] = field.kind.dump(value)
        return out


def _unknown_field_message(key: str, known: Mapping[str, _F]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.8)
    return f"unknown field (did you mean {close[0]!r}?)" if close else "unknown field"


_PROTOCOLS = ("TCP", "UDP", "SCTP")

_EXEC = _Spec(m.ExecAction, (_F("command", _StrList()),))
_HTTP_HEADER = _Spec(
    m.HTTPHeader,
    (_F("name", _Str(), required=True, always=True), _F("value", _Str(), always=True)),
)
_HTTP_GET = _Spec(
    m.HTTPGetAction,
    (
        _F("path", _Str(), always=True),
        _F("port", _IntOrStr(), required=True, always=True),
        _F("host", _Str()),
        _F("scheme", _Str(), always=True),
        _F("httpHeaders", _ObjList(_HTTP_HEADER)),
    ),
)
_TCP_SOCKET = _Spec(
    m.TCPSocketAction,
    (_F("port", _IntOrStr(), required=True, always=True), _F("host", _Str())),
)
_GRPC = _Spec(
    m.GRPCAction,
    (_F("port", _Int(), required=True, always=True), _F("service", _Str())),
)
_SLEEP = _Spec(m.SleepAction, (_F("seconds", _Int(), required=True, always=True),))
_HANDLER_FIELDS = (
    _F("exec", _Obj(_EXEC, optional=True)),
    _F("httpGet", _Obj(_HTTP_GET, optional=True)),
    _F("tcpSocket", _Obj(_TCP_SOCKET, optional=True)),
)
_PROBE = _Spec(
    m.Probe,
    (
        *_HANDLER_FIELDS,
        _F("grpc", _Obj(_GRPC, optional=True)),
        _F("initialDelaySeconds", _Int(), always=True),
        _F("timeoutSeconds", _Int(), always=True),
        _F("periodSeconds", _Int(), always=True),
        _F("successThreshold", _Int(), always=True),
        _F("failureThreshold", _Int(), always=True),
        _F("terminationGracePeriodSeconds", _Int()),
    ),
)
_LIFECYCLE_HANDLER = _Spec(
    m.LifecycleHandler, (*_HANDLER_FIELDS, _F("sleep", _Obj(_SLEEP, optional=True)))
)
_LIFECYCLE = _Spec(
    m.Lifecycle,
    (
        _F("postStart", _Obj(_LIFECYCLE_HANDLER, optional=True)),
        _F("preStop", _Obj(_LIFECYCLE_HANDLER, optional=True)),
        _F("stopSignal", _Str()),
    ),
)
_ENV_VAR = _Spec(
    m.EnvVar,
    (_F("name", _Str(), required=True, always=True), _F("value", _Str())),
    unsupported=frozenset({"valueFrom"}),
)
_CONTAINER_PORT = _Spec(
    m.ContainerPort,
    (
        _F("name", _Str()),
        _F("hostPort", _Int()),
        _F("containerPort", _Int(), required=True, always=True),
        _F("protocol", _Str(upper_choices=_PROTOCOLS), always=True),
        _F("hostIP", _Str(), attr="host_ip"),
    ),
)
_VOLUME_MOUNT = _Spec(
    m.VolumeMount,
    (
        _F("name", _Str(), required=True, always=True),
        _F("readOnly", _Bool()),
        _F("mountPath", _Str(), required=True, always=True),
    ),
    unsupported=frozenset({"subPath", "subPathExpr", "mountPropagation", "recursiveReadOnly"}),
)
_RESOURCES = _Spec(
    m.ResourceRequirements,
    (_F("limits", _StrMap(quantities=True)), _F("requests", _StrMap(quantities=True))),
    unsupported=frozenset({"claims"}),
)
_SECURITY_CONTEXT = _Spec(
    m.SecurityContext,
    (_F("privileged", _Bool(optional=True)),),
    unsupported=frozenset(
        {
            "allowPrivilegeEscalation",
            "appArmorProfile",
            "capabilities",
            "procMount",
            "readOnlyRootFilesystem",
            "runAsGroup",
            "runAsNonRoot",
            "runAsUser",
            "seLinuxOptions",
            "seccompProfile",
            "windowsOptions",
        }
    ),
)
_RESIZE_POLICY = _Spec(
    m.ContainerResizePolicy,
    (
        _F("resourceName", _Str(), required=True, always=True),
        _F("restartPolicy", _Str(), required=True, always=True),
    ),
)
_CONTAINER = _Spec(
    m.Container,
    (
        _F("name", _Str(), required=True, always=True),
        _F("image", _Str(), required=True, always=True),
        _F("command", _StrList()),
        _F("args", _StrList()),
        _F("workingDir", _Str()),
        _F("ports", _ObjList(_CONTAINER_PORT)),
        _F("env", _ObjList(_ENV_VAR)),
        _F("resources", _Obj(_RESOURCES), always=True),
        _F("volumeMounts", _ObjList(_VOLUME_MOUNT)),
        _F("livenessProbe", _Obj(_PROBE, optional=True)),
        _F("readinessProbe", _Obj(_PROBE, optional=True)),
        _F("startupProbe", _Obj(_PROBE, optional=True)),
        _F("lifecycle", _Obj(_LIFECYCLE, optional=True)),
        _F("terminationMessagePath", _Str(), always=True),
        _F("imagePullPolicy", _Str(), always=True),
        _F("securityContext", _Obj(_SECURITY_CONTEXT, optional=True)),
        _F("terminationMessagePolicy", _StrOrDefault("File")),
        _F("restartPolicy", _Str()),
        _F("stdin", _Bool()),
        _F("stdinOnce", _Bool()),
        _F("tty", _Bool()),
        _F("resizePolicy", _ObjList(_RESIZE_POLICY)),
    ),
    unsupported=frozenset(
        {
            "envFrom",
            "volumeDevices",
        }
    ),
)
_EMPTY_DIR = _Spec(m.EmptyDirVolumeSource, (_F("medium", _Str()), _F("sizeLimit", _OptQuantity())))
_HOST_PATH = _Spec(
    m.HostPathVolumeSource,
    (_F("path", _Str(), required=True, always=True), _F("type", _Str())),
)
_SUPPORTED_VOLUME_SOURCES = ("emptyDir", "hostPath")
_UNSUPPORTED_VOLUME_SOURCES = frozenset(
    {
        "awsElasticBlockStore",
        "azureDisk",
        "azureFile",
        "cephfs",
        "cinder",
        "configMap",
        "csi",
        "downwardAPI",
        "ephemeral",
        "fc",
        "flexVolume",
        "flocker",
        "gcePersistentDisk",
        "gitRepo",
        "glusterfs",
        "image",
        "iscsi",
        "nfs",
        "persistentVolumeClaim",
        "photonPersistentDisk",
        "portworxVolume",
        "projected",
        "quobyte",
        "rbd",
        "scaleIO",
        "secret",
        "storageos",
        "vsphereVolume",
    }
)
_VOLUME = _Spec(
    m.Volume,
    (
        _F("name", _Str(), required=True, always=True),
        _F("emptyDir", _Obj(_EMPTY_DIR, optional=True)),
        _F("hostPath", _Obj(_HOST_PATH, optional=True)),
    ),
    unsupported=_UNSUPPORTED_VOLUME_SOURCES,
)
_LOCAL_OBJECT_REFERENCE = _Spec(
    m.LocalObjectReference, (_F("name", _Str(), required=True, always=True),)
)
_POD_SPEC = _Spec(
    m.PodSpec,
    (
        _F("volumes", _ObjList(_VOLUME)),
        _F("initContainers", _ObjList(_CONTAINER)),
        _F("containers", _ObjList(_CONTAINER), required=True, always=True),
        _F("restartPolicy", _Str(), always=True),
        _F("terminationGracePeriodSeconds", _Int(), always=True),
        _F("dnsPolicy", _Str(), always=True),
        _F("nodeName", _Str()),
        _F("hostNetwork", _Bool()),
        _F("imagePullSecrets", _ObjList(_LOCAL_OBJECT_REFERENCE)),
        _F("activeDeadlineSeconds", _Int()),
    ),
    unsupported=frozenset(
        {
            "affinity",
            "automountServiceAccountToken",
            "dnsConfig",
            "enableServiceLinks",
            "ephemeralContainers",
            "hostAliases",
            "hostIPC",
            "hostPID",
            "hostUsers",
            "hostname",
            "nodeSelector",
            "os",
            "overhead",
            "preemptionPolicy",
            "priority",
            "priorityClassName",
            "readinessGates",
            "resourceClaims",
            "resources",
            "runtimeClassName",
            "schedulerName",
            "schedulingGates",
            "securityContext",
            "serviceAccount",
            "serviceAccountName",
            "setHostnameAsFQDN",
            "shareProcessNamespace",
            "subdomain",
            "tolerations",
            "topologySpreadConstraints",
        }
    ),
)
_OBJECT_META = _Spec(
    m.ObjectMeta,
    (
        _F("name", _Str(), required=True, always=True),
        _F("namespace", _Str(), always=True),
        _F("uid", _Str()),
        _F("labels", _StrMap()),
        _F("annotations", _StrMap()),
    ),
    unsupported=frozenset(
        {
            "clusterName",
            "creationTimestamp",
            "deletionGracePeriodSeconds",
            "deletionTimestamp",
            "finalizers",
            "generateName",
            "generation",
            "managedFields",
            "ownerReferences",
            "resourceVersion",
            "selfLink",
        }
    ),
)

# status
_WAITING = _Spec(m.ContainerStateWaiting, (_F("reason", _Str()), _F("message", _Str())))
_RUNNING = _Spec(m.ContainerStateRunning, (_F("startedAt", _Str()),))
_TERMINATED = _Spec(
    m.ContainerStateTerminated,
    (
        _F("exitCode", _Int(), required=True, always=True),
        _F("signal", _Int()),
        _F("reason", _Str()),
        _F("message", _Str()),
        _F("startedAt", _Str()),
        _F("finishedAt", _Str()),
        _F("containerID", _Str(), attr="container_id"),
    ),
)
_STATE = _Spec(
    m.ContainerState,
    (
        _F("waiting", _Obj(_WAITING, optional=True)),
        _F("running", _Obj(_RUNNING, optional=True)),
        _F("terminated", _Obj(_TERMINATED, optional=True)),
    ),
)
_CONTAINER_STATUS = _Spec(
    m.ContainerStatus,
    (
        _F("name", _Str(), required=True, always=True),
        _F("state", _Obj(_STATE), always=True),
        _F("lastState", _Obj(_STATE), always=True),
        _F("ready", _Bool(), always=True),
        _F("restartCount", _Int(), always=True),
        _F("image", _Str(), required=True, always=True),
        _F("imageID", _Str(), always=True, attr="image_id"),
        _F("containerID", _Str(), attr="container_id"),
        _F("started", _Bool(), always=True),
    ),
    unsupported=frozenset(
        {
            "allocatedResources",
            "allocatedResourcesStatus",
            "resources",
            "stopSignal",
            "user",
            "volumeMounts",
        }
    ),
)
_CONDITION = _Spec(
    m.PodCondition,
    (
        _F("type", _Str(), required=True, always=True),
        _F("status", _Str(), required=True, always=True),
        _F("lastTransitionTime", _Str()),
        _F("reason", _Str()),
        _F("message", _Str()),
    ),
    unsupported=frozenset({"lastProbeTime", "observedGeneration"}),
)
_POD_STATUS = _Spec(
    m.PodStatus,
    (
        _F("phase", _Str(), always=True),
        _F("conditions", _ObjList(_CONDITION)),
        _F("message", _Str()),
        _F("reason", _Str()),
        _F("hostIP", _Str(), attr="host_ip"),
        _F("podIP", _Str(), attr="pod_ip"),
        _F("startTime", _Str()),
        _F("initContainerStatuses", _ObjList(_CONTAINER_STATUS)),
        _F("containerStatuses", _ObjList(_CONTAINER_STATUS)),
    ),
    unsupported=frozenset(
        {
            "ephemeralContainerStatuses",
            "hostIPs",
            "nominatedNodeName",
            "observedGeneration",
            "podIPs",
            "qosClass",
            "resize",
            "resourceClaimStatuses",
        }
    ),
)
_POD = _Spec(
    m.Pod,
    (
        _F("apiVersion", _Str(), required=True, always=True),
        _F("kind", _Str(), required=True, always=True),
        _F("metadata", _Obj(_OBJECT_META), required=True, always=True),
        _F("spec", _Obj(_POD_SPEC), required=True, always=True),
        _F("status", _Obj(_POD_STATUS, optional=True)),
    ),
)


# --- Pod -> v1 JSON / YAML ---------------------------------------------------------------


def pod_to_dict(pod: m.Pod) -> dict[str, Any]:
    """The v1 JSON shape of a pod, with ``omitempty`` applied and Kubernetes' defaults written."""
    return _POD.dump(pod)


def dump_pod_yaml(pod: m.Pod) -> str:
    return yaml.dump(
        pod_to_dict(pod),
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
    )


def dump_pods_yaml(pods: Iterable[m.Pod]) -> str:
    """Several pods as a multi-document YAML stream."""
    return yaml.dump_all(
        [pod_to_dict(p) for p in pods],
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
    )


def dump_pod_json(pod: m.Pod, *, indent: int | None = 2) -> str:
    return json.dumps(pod_to_dict(pod), indent=indent, ensure_ascii=False)


# --- YAML flavour -----------------------------------------------------------------------------

_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[valid-type,misc]
    """Safe YAML that writes multi-line strings (shell scripts) as ``|`` blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML refuses block style for text with trailing spaces or tabs; it falls back to quotes.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)
