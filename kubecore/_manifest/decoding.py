"""Decoding: the v1 JSON shape of a Pod read into the model, and written back.

A small declarative table per model class (``_Spec``) says each JSON field's name, the attribute it
fills and its kind. Reading checks JSON types, required fields and unknown fields; problems are
collected, never raised one by one, and a field with a problem gets a placeholder so decoding can
go on. Writing applies ``omitempty`` and Kubernetes' defaults.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

import attrs
import yaml

from kubecore._contract.errors import FieldError
from kubecore._manifest import fields
from kubecore._model import v1 as m

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
        # Interned: the images, paths, policies and names repeated across many pods are held
        # once, however many documents carried them.
        return sys.intern(value)

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


class _OptStr(_Kind):
    """A string that may be absent (``None``)."""

    def load(self, value: object, path: str, errs: _Problems) -> str | None:
        return _Str().load(value, path, errs)


class _OptQuantity(_Kind):
    def load(self, value: object, path: str, errs: _Problems) -> str:
        return _load_quantity(value, path, errs)


class _OptInt(_Kind):
    """An integer that may be unset (``None``: a file mode; ``runAsUser: 0`` is root, not
    "unset"), written back whenever set, even as 0."""

    def load(self, value: object, path: str, errs: _Problems) -> int | None:
        return _Int().load(value, path, errs)


class _IntOrStr(_Kind):
    def zero(self) -> int:
        return 0

    def load(self, value: object, path: str, errs: _Problems) -> int | str:
        if isinstance(value, str) or _is_integer(value):
            return value
        errs.append(FieldError(path, f"expected a port number or name, got {_show(value)}"))
        return 0


class _ScalarList(_Kind):
    """A list of strings or of integers, each read by ``item``."""

    def __init__(self, item: _Kind, what: str) -> None:
        self.item = item
        self.what = what

    def zero(self) -> tuple[Any, ...]:
        return ()

    def load(self, value: object, path: str, errs: _Problems) -> tuple[Any, ...]:
        if not isinstance(value, list):
            errs.append(FieldError(path, f"expected a list of {self.what}, got {_show(value)}"))
            return ()
        return tuple(self.item.load(v, _item(path, i), errs) for i, v in enumerate(value))

    def dump(self, value: Any) -> Any:
        return list(value)

    def is_empty(self, value: Any) -> bool:
        return not value


def _StrList() -> _ScalarList:
    return _ScalarList(_Str(), "strings")


def _IntList() -> _ScalarList:
    return _ScalarList(_Int(), "integers")


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


class _BytesMap(_Kind):
    """``data`` of a Secret and ``binaryData`` of a ConfigMap: base64 text read into bytes.
    Problems never quote a value (it may be a secret)."""

    def zero(self) -> dict[str, bytes]:
        return {}

    def load(self, value: object, path: str, errs: _Problems) -> dict[str, bytes]:
        if not isinstance(value, Mapping):
            errs.append(FieldError(path, f"expected a mapping, got {_show(value)}"))
            return {}
        out: dict[str, bytes] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                errs.append(FieldError(_item(path, str(key)), "keys must be strings"))
                continue
            where = _item(path, key)
            if not isinstance(item, str):
                errs.append(FieldError(where, "expected base64 text"))
                continue
            try:
                out[key] = base64.b64decode(item.encode("ascii"), validate=True)
            except (ValueError, binascii.Error):
                errs.append(FieldError(where, "not valid base64 (value not shown)"))
        return out

    def dump(self, value: Any) -> Any:
        return {k: base64.b64encode(v).decode("ascii") for k, v in value.items()}

    def is_empty(self, value: Any) -> bool:
        return not value


class _SecretStrMap(_StrMap):
    """``stringData`` of a Secret: like ``_StrMap``, but problems never quote a value."""

    def load(self, value: object, path: str, errs: _Problems) -> dict[str, str]:
        if not isinstance(value, Mapping):
            errs.append(FieldError(path, f"expected a mapping, got {_show(value)}"))
            return {}
        out: dict[str, str] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                errs.append(FieldError(_item(path, str(key)), "keys must be strings"))
            elif not isinstance(item, str):
                errs.append(FieldError(_item(path, key), "expected a string (value not shown)"))
            else:
                out[key] = item
        return out


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
    ignored: frozenset[str] = frozenset()
    """Fields that are an API server's business: accepted, dropped (never dumped)."""
    refused: Mapping[str, str] = attrs.field(factory=dict)
    """Fields refused with their own reason (instead of "not supported by kubecore")."""
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
                    errs.append(FieldError(where, fields.refusal_message(where)))
            elif key in self.refused:
                if item is not None:
                    errs.append(FieldError(where, self.refused[key]))
            elif key in self.ignored:
                continue
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
_CONFIG_MAP_KEY_SELECTOR = _Spec(
    m.ConfigMapKeySelector,
    (
        _F("key", _Str(), required=True, always=True),
        _F("name", _Str()),
        _F("optional", _Bool(optional=True)),
    ),
)
_SECRET_KEY_SELECTOR = _Spec(
    m.SecretKeySelector,
    (
        _F("key", _Str(), required=True, always=True),
        _F("name", _Str()),
        _F("optional", _Bool(optional=True)),
    ),
)
_OBJECT_FIELD_SELECTOR = _Spec(
    m.ObjectFieldSelector,
    (
        _F("apiVersion", _Str(), always=True),
        _F("fieldPath", _Str(), required=True, always=True),
    ),
)
_RESOURCE_FIELD_SELECTOR = _Spec(
    m.ResourceFieldSelector,
    (
        _F("containerName", _Str()),
        _F("resource", _Str(), required=True, always=True),
        _F("divisor", _OptQuantity()),
    ),
)
_FILE_KEY_SELECTOR = _Spec(
    m.FileKeySelector,
    (
        _F("volumeName", _Str(), required=True, always=True),
        _F("path", _Str(), required=True, always=True),
        _F("key", _Str(), required=True, always=True),
        _F("optional", _Bool(optional=True)),
    ),
)
_ENV_VAR_SOURCE = _Spec(
    m.EnvVarSource,
    (
        _F("fieldRef", _Obj(_OBJECT_FIELD_SELECTOR, optional=True)),
        _F("resourceFieldRef", _Obj(_RESOURCE_FIELD_SELECTOR, optional=True)),
        _F("configMapKeyRef", _Obj(_CONFIG_MAP_KEY_SELECTOR, optional=True)),
        _F("secretKeyRef", _Obj(_SECRET_KEY_SELECTOR, optional=True)),
        _F("fileKeyRef", _Obj(_FILE_KEY_SELECTOR, optional=True)),
    ),
)
_ENV_VAR = _Spec(
    m.EnvVar,
    (
        _F("name", _Str(), required=True, always=True),
        _F("value", _Str()),
        _F("valueFrom", _Obj(_ENV_VAR_SOURCE, optional=True)),
    ),
)
_CONFIG_MAP_ENV_SOURCE = _Spec(
    m.ConfigMapEnvSource, (_F("name", _Str()), _F("optional", _Bool(optional=True)))
)
_SECRET_ENV_SOURCE = _Spec(
    m.SecretEnvSource, (_F("name", _Str()), _F("optional", _Bool(optional=True)))
)
_ENV_FROM_SOURCE = _Spec(
    m.EnvFromSource,
    (
        _F("prefix", _Str()),
        _F("configMapRef", _Obj(_CONFIG_MAP_ENV_SOURCE, optional=True)),
        _F("secretRef", _Obj(_SECRET_ENV_SOURCE, optional=True)),
    ),
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
        _F("subPath", _Str()),
        _F("subPathExpr", _Str()),
        _F("mountPropagation", _OptStr()),
    ),
    unsupported=frozenset({"recursiveReadOnly"}),
)
_RESOURCES = _Spec(
    m.ResourceRequirements,
    (_F("limits", _StrMap(quantities=True)), _F("requests", _StrMap(quantities=True))),
    unsupported=frozenset({"claims"}),
)
_CAPABILITIES = _Spec(m.Capabilities, (_F("add", _StrList()), _F("drop", _StrList())))
_SECCOMP_PROFILE = _Spec(
    m.SeccompProfile,
    (_F("type", _Str(), required=True, always=True), _F("localhostProfile", _Str())),
)
_APP_ARMOR_PROFILE = _Spec(
    m.AppArmorProfile,
    (_F("type", _Str(), required=True, always=True), _F("localhostProfile", _Str())),
)
_SE_LINUX_OPTIONS = _Spec(
    m.SELinuxOptions,
    (_F("user", _Str()), _F("role", _Str()), _F("type", _Str()), _F("level", _Str())),
)
_WINDOWS_OPTIONS = _Spec(
    m.WindowsSecurityContextOptions,
    (
        _F("gmsaCredentialSpecName", _Str()),
        _F("gmsaCredentialSpec", _Str()),
        _F("runAsUserName", _Str()),
        _F("hostProcess", _Bool(optional=True)),
    ),
)
_SYSCTL = _Spec(
    m.Sysctl,
    (
        _F("name", _Str(), required=True, always=True),
        _F("value", _Str(), required=True, always=True),
    ),
)
_SECURITY_PROFILE_FIELDS = (
    _F("seccompProfile", _Obj(_SECCOMP_PROFILE, optional=True)),
    _F("appArmorProfile", _Obj(_APP_ARMOR_PROFILE, optional=True)),
    _F("seLinuxOptions", _Obj(_SE_LINUX_OPTIONS, optional=True)),
    _F("windowsOptions", _Obj(_WINDOWS_OPTIONS, optional=True)),
)
_SECURITY_CONTEXT = _Spec(
    m.SecurityContext,
    (
        _F("privileged", _Bool(optional=True)),
        _F("capabilities", _Obj(_CAPABILITIES, optional=True)),
        _F("runAsUser", _OptInt()),
        _F("runAsGroup", _OptInt()),
        _F("runAsNonRoot", _Bool(optional=True)),
        _F("readOnlyRootFilesystem", _Bool(optional=True)),
        _F("allowPrivilegeEscalation", _Bool(optional=True)),
        _F("procMount", _Str()),
        *_SECURITY_PROFILE_FIELDS,
    ),
)
_POD_SECURITY_CONTEXT = _Spec(
    m.PodSecurityContext,
    (
        _F("runAsUser", _OptInt()),
        _F("runAsGroup", _OptInt()),
        _F("runAsNonRoot", _Bool(optional=True)),
        _F("supplementalGroups", _IntList()),
        _F("supplementalGroupsPolicy", _Str()),
        _F("fsGroup", _OptInt()),
        _F("fsGroupChangePolicy", _Str()),
        _F("sysctls", _ObjList(_SYSCTL)),
        _F("seLinuxChangePolicy", _Str(), attr="se_linux_change_policy"),
        *_SECURITY_PROFILE_FIELDS,
    ),
)
_RESIZE_POLICY = _Spec(
    m.ContainerResizePolicy,
    (
        _F("resourceName", _Str(), required=True, always=True),
        _F("restartPolicy", _Str(), required=True, always=True),
    ),
)
_RESTART_RULE_EXIT_CODES = _Spec(
    m.ContainerRestartRuleOnExitCodes,
    (_F("operator", _Str(), required=True, always=True), _F("values", _IntList())),
)
_RESTART_RULE = _Spec(
    m.ContainerRestartRule,
    (
        _F("action", _Str(), required=True, always=True),
        _F("exitCodes", _Obj(_RESTART_RULE_EXIT_CODES, optional=True)),
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
        _F("envFrom", _ObjList(_ENV_FROM_SOURCE)),
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
        _F("restartPolicyRules", _ObjList(_RESTART_RULE)),
        _F("stdin", _Bool()),
        _F("stdinOnce", _Bool()),
        _F("tty", _Bool()),
        _F("resizePolicy", _ObjList(_RESIZE_POLICY)),
    ),
    unsupported=frozenset(
        {
            "volumeDevices",
        }
    ),
)
_EPHEMERAL_CONTAINER = _Spec(
    m.EphemeralContainer,
    (*_CONTAINER.fields, _F("targetContainerName", _Str())),
    unsupported=_CONTAINER.unsupported,
)
_EMPTY_DIR = _Spec(
    m.EmptyDirVolumeSource,
    (_F("medium", _Str()), _F("sizeLimit", _OptQuantity()), _F("mode", _OptInt())),
)
_HOST_PATH = _Spec(
    m.HostPathVolumeSource,
    (_F("path", _Str(), required=True, always=True), _F("type", _Str())),
)
_KEY_TO_PATH = _Spec(
    m.KeyToPath,
    (
        _F("key", _Str(), required=True, always=True),
        _F("path", _Str(), required=True, always=True),
        _F("mode", _OptInt()),
    ),
)
_CONFIG_MAP_VOLUME = _Spec(
    m.ConfigMapVolumeSource,
    (
        _F("name", _Str()),
        _F("items", _ObjList(_KEY_TO_PATH)),
        _F("defaultMode", _OptInt()),
        _F("optional", _Bool(optional=True)),
    ),
)
_SECRET_VOLUME = _Spec(
    m.SecretVolumeSource,
    (
        _F("secretName", _Str()),
        _F("items", _ObjList(_KEY_TO_PATH)),
        _F("defaultMode", _OptInt()),
        _F("optional", _Bool(optional=True)),
    ),
)
_DOWNWARD_API_FILE = _Spec(
    m.DownwardAPIVolumeFile,
    (
        _F("path", _Str(), required=True, always=True),
        _F("fieldRef", _Obj(_OBJECT_FIELD_SELECTOR, optional=True)),
        _F("resourceFieldRef", _Obj(_RESOURCE_FIELD_SELECTOR, optional=True)),
        _F("mode", _OptInt()),
    ),
)
_DOWNWARD_API_VOLUME = _Spec(
    m.DownwardAPIVolumeSource,
    (_F("items", _ObjList(_DOWNWARD_API_FILE)), _F("defaultMode", _OptInt())),
)


def _object_projection(model: type[Any]) -> _Spec:
    """A projected volume's ConfigMap or Secret source: the same fields for both."""
    return _Spec(
        model,
        (
            _F("name", _Str()),
            _F("items", _ObjList(_KEY_TO_PATH)),
            _F("optional", _Bool(optional=True)),
        ),
    )


_PROJECTION = _Spec(
    m.VolumeProjection,
    (
        _F("configMap", _Obj(_object_projection(m.ConfigMapProjection), optional=True)),
        _F("secret", _Obj(_object_projection(m.SecretProjection), optional=True)),
        _F(
            "downwardAPI",
            _Obj(
                _Spec(m.DownwardAPIProjection, (_F("items", _ObjList(_DOWNWARD_API_FILE)),)),
                optional=True,
            ),
        ),
        _F(
            "serviceAccountToken",
            _Obj(
                _Spec(
                    m.ServiceAccountTokenProjection,
                    (
                        _F("audience", _Str()),
                        _F("expirationSeconds", _Int()),
                        _F("path", _Str(), required=True, always=True),
                    ),
                ),
                optional=True,
            ),
        ),
    ),
    unsupported=frozenset({"clusterTrustBundle", "podCertificate"}),
)
_PROJECTED_VOLUME = _Spec(
    m.ProjectedVolumeSource,
    (_F("sources", _ObjList(_PROJECTION)), _F("defaultMode", _OptInt())),
)
_PVC_VOLUME = _Spec(
    m.PersistentVolumeClaimVolumeSource,
    (_F("claimName", _Str(), required=True, always=True), _F("readOnly", _Bool())),
)
_IMAGE_VOLUME = _Spec(m.ImageVolumeSource, (_F("reference", _Str()), _F("pullPolicy", _Str())))
_UNSUPPORTED_VOLUME_SOURCES = frozenset(
    {
        "awsElasticBlockStore",
        "azureDisk",
        "azureFile",
        "cephfs",
        "cinder",
        "csi",
        "ephemeral",
        "fc",
        "flexVolume",
        "flocker",
        "gcePersistentDisk",
        "gitRepo",
        "glusterfs",
        "iscsi",
        "nfs",
        "photonPersistentDisk",
        "portworxVolume",
        "quobyte",
        "rbd",
        "scaleIO",
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
        _F("configMap", _Obj(_CONFIG_MAP_VOLUME, optional=True)),
        _F("secret", _Obj(_SECRET_VOLUME, optional=True)),
        _F("downwardAPI", _Obj(_DOWNWARD_API_VOLUME, optional=True)),
        _F("projected", _Obj(_PROJECTED_VOLUME, optional=True)),
        _F("persistentVolumeClaim", _Obj(_PVC_VOLUME, optional=True)),
        _F("image", _Obj(_IMAGE_VOLUME, optional=True)),
    ),
    unsupported=_UNSUPPORTED_VOLUME_SOURCES,
)
_LOCAL_OBJECT_REFERENCE = _Spec(
    m.LocalObjectReference, (_F("name", _Str(), required=True, always=True),)
)
_TOLERATION = _Spec(
    m.Toleration,
    (
        _F("key", _Str()),
        _F("operator", _Str()),
        _F("value", _Str()),
        _F("effect", _Str()),
        _F("tolerationSeconds", _OptInt()),
    ),
)
_LABEL_SELECTOR_REQUIREMENT = _Spec(
    m.LabelSelectorRequirement,
    (
        _F("key", _Str(), required=True, always=True),
        _F("operator", _Str(), required=True, always=True),
        _F("values", _StrList()),
    ),
)
_LABEL_SELECTOR = _Spec(
    m.LabelSelector,
    (
        _F("matchLabels", _StrMap()),
        _F("matchExpressions", _ObjList(_LABEL_SELECTOR_REQUIREMENT)),
    ),
)
_TOPOLOGY_SPREAD_CONSTRAINT = _Spec(
    m.TopologySpreadConstraint,
    (
        _F("maxSkew", _Int(), required=True, always=True),
        _F("topologyKey", _Str(), required=True, always=True),
        _F("whenUnsatisfiable", _Str(), required=True, always=True),
        _F("labelSelector", _Obj(_LABEL_SELECTOR, optional=True)),
        _F("minDomains", _OptInt()),
        _F("nodeAffinityPolicy", _Str()),
        _F("nodeTaintsPolicy", _Str()),
        _F("matchLabelKeys", _StrList()),
    ),
)
_SCHEDULING_GATE = _Spec(m.PodSchedulingGate, (_F("name", _Str(), required=True, always=True),))
_NODE_SELECTOR_REQUIREMENT = _Spec(
    m.NodeSelectorRequirement,
    (
        _F("key", _Str(), required=True, always=True),
        _F("operator", _Str(), required=True, always=True),
        _F("values", _StrList()),
    ),
)
_NODE_SELECTOR_TERM = _Spec(
    m.NodeSelectorTerm,
    (
        _F("matchExpressions", _ObjList(_NODE_SELECTOR_REQUIREMENT)),
        _F("matchFields", _ObjList(_NODE_SELECTOR_REQUIREMENT)),
    ),
)
_NODE_SELECTOR = _Spec(
    m.NodeSelector,
    (_F("nodeSelectorTerms", _ObjList(_NODE_SELECTOR_TERM), required=True, always=True),),
)
_PREFERRED_SCHEDULING_TERM = _Spec(
    m.PreferredSchedulingTerm,
    (
        _F("weight", _Int(), required=True, always=True),
        _F("preference", _Obj(_NODE_SELECTOR_TERM), required=True, always=True),
    ),
)
_NODE_AFFINITY = _Spec(
    m.NodeAffinity,
    (
        _F(
            "requiredDuringSchedulingIgnoredDuringExecution",
            _Obj(_NODE_SELECTOR, optional=True),
        ),
        _F(
            "preferredDuringSchedulingIgnoredDuringExecution",
            _ObjList(_PREFERRED_SCHEDULING_TERM),
        ),
    ),
)
_POD_AFFINITY_TERM = _Spec(
    m.PodAffinityTerm,
    (
        _F("labelSelector", _Obj(_LABEL_SELECTOR, optional=True)),
        _F("namespaces", _StrList()),
        _F("topologyKey", _Str(), required=True, always=True),
        _F("namespaceSelector", _Obj(_LABEL_SELECTOR, optional=True)),
        _F("matchLabelKeys", _StrList()),
        _F("mismatchLabelKeys", _StrList()),
    ),
)
_WEIGHTED_POD_AFFINITY_TERM = _Spec(
    m.WeightedPodAffinityTerm,
    (
        _F("weight", _Int(), required=True, always=True),
        _F("podAffinityTerm", _Obj(_POD_AFFINITY_TERM), required=True, always=True),
    ),
)
_POD_AFFINITY = _Spec(
    m.PodAffinity,
    (
        _F("requiredDuringSchedulingIgnoredDuringExecution", _ObjList(_POD_AFFINITY_TERM)),
        _F(
            "preferredDuringSchedulingIgnoredDuringExecution", _ObjList(_WEIGHTED_POD_AFFINITY_TERM)
        ),
    ),
)
_AFFINITY = _Spec(
    m.Affinity,
    (
        _F("nodeAffinity", _Obj(_NODE_AFFINITY, optional=True)),
        _F("podAffinity", _Obj(_POD_AFFINITY, optional=True)),
        _F("podAntiAffinity", _Obj(_POD_AFFINITY, optional=True)),
    ),
)
_READINESS_GATE = _Spec(
    m.PodReadinessGate, (_F("conditionType", _Str(), required=True, always=True),)
)
_POD_OS = _Spec(m.PodOS, (_F("name", _Str(), required=True, always=True),))
_HOST_ALIAS = _Spec(
    m.HostAlias, (_F("ip", _Str(), required=True, always=True), _F("hostnames", _StrList()))
)
_DNS_CONFIG_OPTION = _Spec(m.PodDNSConfigOption, (_F("name", _Str()), _F("value", _Str())))
_POD_DNS_CONFIG = _Spec(
    m.PodDNSConfig,
    (
        _F("nameservers", _StrList()),
        _F("searches", _StrList()),
        _F("options", _ObjList(_DNS_CONFIG_OPTION)),
    ),
)
_POD_SPEC = _Spec(
    m.PodSpec,
    (
        _F("volumes", _ObjList(_VOLUME)),
        _F("initContainers", _ObjList(_CONTAINER)),
        _F("containers", _ObjList(_CONTAINER), required=True, always=True),
        _F("ephemeralContainers", _ObjList(_EPHEMERAL_CONTAINER)),
        _F("restartPolicy", _Str(), always=True),
        _F("terminationGracePeriodSeconds", _Int(), always=True),
        _F("dnsPolicy", _Str(), always=True),
        _F("nodeName", _Str()),
        _F("hostNetwork", _Bool()),
        _F("imagePullSecrets", _ObjList(_LOCAL_OBJECT_REFERENCE)),
        _F("nodeSelector", _StrMap()),
        _F("affinity", _Obj(_AFFINITY, optional=True)),
        _F("tolerations", _ObjList(_TOLERATION)),
        _F("topologySpreadConstraints", _ObjList(_TOPOLOGY_SPREAD_CONSTRAINT)),
        _F("schedulingGates", _ObjList(_SCHEDULING_GATE)),
        _F("priority", _OptInt()),
        _F("priorityClassName", _Str()),
        _F("preemptionPolicy", _Str()),
        _F("schedulerName", _Str()),
        _F("serviceAccountName", _Str()),
        _F("serviceAccount", _Str()),
        _F("automountServiceAccountToken", _Bool(optional=True)),
        _F("overhead", _StrMap(quantities=True)),
        _F("readinessGates", _ObjList(_READINESS_GATE)),
        _F("os", _Obj(_POD_OS, optional=True)),
        _F("enableServiceLinks", _Bool(optional=True)),
        _F("shareProcessNamespace", _Bool(optional=True)),
        _F("hostPID", _Bool(), attr="host_pid"),
        _F("hostIPC", _Bool(), attr="host_ipc"),
        _F("hostAliases", _ObjList(_HOST_ALIAS)),
        _F("hostname", _Str()),
        _F("subdomain", _Str()),
        _F("setHostnameAsFQDN", _Bool(optional=True), attr="set_hostname_as_fqdn"),
        _F("dnsConfig", _Obj(_POD_DNS_CONFIG, optional=True)),
        _F("resources", _Obj(_RESOURCES, optional=True)),
        _F("securityContext", _Obj(_POD_SECURITY_CONTEXT, optional=True)),
        _F("hostUsers", _Bool(optional=True)),
        _F("activeDeadlineSeconds", _Int()),
    ),
    unsupported=frozenset(
        {
            "resourceClaims",
            "runtimeClassName",
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
        _F("generateName", _Str()),
        _F("creationTimestamp", _Str()),
    ),
    # What an API server keeps about an object (``kubectl get -o yaml`` shows them): no node acts
    # on them, so a manifest saved from a cluster runs as it is.
    ignored=frozenset(
        {
            "clusterName",
            "finalizers",
            "generation",
            "managedFields",
            "ownerReferences",
            "resourceVersion",
            "selfLink",
        }
    ),
    refused={
        "deletionGracePeriodSeconds": "set by the API server on a pod being deleted; a manifest"
        " cannot ask for it (remove the pod from its source to delete it)",
        "deletionTimestamp": "set by the API server on a pod being deleted; a manifest cannot ask"
        " for it (remove the pod from its source to delete it)",
    },
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
_HOST_IP = _Spec(m.HostIP, (_F("ip", _Str(), required=True, always=True),))
_POD_IP = _Spec(m.PodIP, (_F("ip", _Str(), required=True, always=True),))
_POD_STATUS = _Spec(
    m.PodStatus,
    (
        _F("phase", _Str(), always=True),
        _F("conditions", _ObjList(_CONDITION)),
        _F("message", _Str()),
        _F("reason", _Str()),
        _F("hostIP", _Str(), attr="host_ip"),
        _F("hostIPs", _ObjList(_HOST_IP), attr="host_ips"),
        _F("podIP", _Str(), attr="pod_ip"),
        _F("podIPs", _ObjList(_POD_IP), attr="pod_ips"),
        _F("startTime", _Str()),
        _F("qosClass", _Str()),
        _F("initContainerStatuses", _ObjList(_CONTAINER_STATUS)),
        _F("containerStatuses", _ObjList(_CONTAINER_STATUS)),
        _F("ephemeralContainerStatuses", _ObjList(_CONTAINER_STATUS)),
    ),
    unsupported=frozenset(
        {
            "nominatedNodeName",
            "observedGeneration",
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


_CONFIG_MAP = _Spec(
    m.ConfigMap,
    (
        _F("apiVersion", _Str(), required=True, always=True),
        _F("kind", _Str(), required=True, always=True),
        _F("metadata", _Obj(_OBJECT_META), required=True, always=True),
        _F("data", _StrMap()),
        _F("binaryData", _BytesMap()),
        _F("immutable", _Bool(optional=True)),
    ),
)
_SECRET = _Spec(
    m.Secret,
    (
        _F("apiVersion", _Str(), required=True, always=True),
        _F("kind", _Str(), required=True, always=True),
        _F("metadata", _Obj(_OBJECT_META), required=True, always=True),
        _F("type", _Str()),
        _F("data", _BytesMap()),
        _F("stringData", _SecretStrMap()),
        _F("immutable", _Bool(optional=True)),
    ),
)
OBJECT_KINDS = {"ConfigMap": _CONFIG_MAP, "Secret": _SECRET}
"""The kinds besides Pod a manifest may hold, and how each is read."""


def object_to_dict(obj: m.KubeObject) -> dict[str, Any]:
    """The v1 JSON shape of a ConfigMap or Secret (a Secret's values base64 in ``data``)."""
    return OBJECT_KINDS[obj.kind].dump(obj)


# --- Pod -> v1 JSON / YAML ---------------------------------------------------------------


def pod_to_dict(pod: m.Pod) -> dict[str, Any]:
    """The v1 JSON shape of a pod, with ``omitempty`` applied and Kubernetes' defaults written."""
    return _POD.dump(pod)


def pod_status_to_dict(status: m.PodStatus) -> dict[str, Any]:
    """The v1 JSON shape of a pod's status (what ``pod_to_dict`` writes under ``status``)."""
    return _POD_STATUS.dump(status)


def dump_pod_yaml(pod: m.Pod) -> str:
    """The pod as a YAML manifest (``kubectl get pod -o yaml``'s shape, camelCase fields)."""
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
    """The pod as a JSON manifest (camelCase fields), indented by ``indent`` (None: one line)."""
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
