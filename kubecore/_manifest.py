"""Loading, dumping and validating ``v1`` Pod manifests.

Reading a manifest happens in two passes over plain data:

1. *Decoding* walks the JSON/YAML value with a small declarative table per model class
   (``_Spec``), checking JSON types, required fields and unknown fields. Problems are collected,
   never raised one by one; a field with a problem gets a placeholder so decoding can go on.
2. *Validation* (``validate_pod``) checks the rules that are about values, not JSON types, on the
   built ``Pod``. Embedders who build pods in code call it directly.

A validation problem at, above or below a path that already has a decoding problem is dropped:
it would only repeat the decoding problem through a placeholder.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import os
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import attrs
import yaml

from kubecore import _model as m
from kubecore._errors import DocumentError as DocumentError
from kubecore._errors import FieldError, ValidationError
from kubecore._quantity import parse_quantity
from kubecore._updates import SOURCE_ANNOTATION

__all__ = [
    "DocumentError",
    "assign_uid",
    "dump_pod_json",
    "dump_pod_yaml",
    "dump_pods_yaml",
    "load_pods_from_dict",
    "load_pods_from_file",
    "load_pods_from_string",
    "load_pods_lenient",
    "pod_from_dict",
    "pod_to_dict",
    "stamp_source",
    "validate_pod",
]

_Problems = list[FieldError]


# --- paths and value display ----------------------------------------------------------------


def _field(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _item(path: str, index: int | str) -> str:
    return f"{path}[{index}]"


def _show(value: object) -> str:
    """A value as a user would recognise it from their manifest."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def _covers(outer: str, inner: str) -> bool:
    """Whether ``inner`` is ``outer`` or lies under it."""
    return (
        not outer
        or inner == outer
        or inner.startswith(outer + ".")
        or inner.startswith(outer + "[")
    )


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


class _Int(_Kind):
    def zero(self) -> int:
        return 0

    def load(self, value: object, path: str, errs: _Problems) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
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
    if isinstance(value, int) and not isinstance(value, bool):
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
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
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

    def placeholder(self) -> Any:
        return self.cls(**{f.attr: f.kind.zero() for f in self.fields if f.required})

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
            if field.required and field.attr not in kwargs:
                errs.append(FieldError(_field(path, field.json), "required"))
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


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


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
_HANDLER_FIELDS = (
    _F("exec", _Obj(_EXEC, optional=True)),
    _F("httpGet", _Obj(_HTTP_GET, optional=True)),
    _F("tcpSocket", _Obj(_TCP_SOCKET, optional=True)),
)
_PROBE = _Spec(
    m.Probe,
    (
        *_HANDLER_FIELDS,
        _F("initialDelaySeconds", _Int(), always=True),
        _F("timeoutSeconds", _Int(), always=True),
        _F("periodSeconds", _Int(), always=True),
        _F("successThreshold", _Int(), always=True),
        _F("failureThreshold", _Int(), always=True),
    ),
    unsupported=frozenset({"grpc", "terminationGracePeriodSeconds"}),
)
_LIFECYCLE_HANDLER = _Spec(m.LifecycleHandler, _HANDLER_FIELDS, frozenset({"sleep"}))
_LIFECYCLE = _Spec(
    m.Lifecycle,
    (
        _F("postStart", _Obj(_LIFECYCLE_HANDLER, optional=True)),
        _F("preStop", _Obj(_LIFECYCLE_HANDLER, optional=True)),
    ),
    unsupported=frozenset({"stopSignal"}),
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
    unsupported=_names(
        "capabilities seLinuxOptions windowsOptions runAsUser runAsGroup runAsNonRoot "
        "readOnlyRootFilesystem allowPrivilegeEscalation procMount seccompProfile appArmorProfile"
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
    ),
    unsupported=_names(
        "envFrom resizePolicy restartPolicy volumeDevices terminationMessagePolicy stdin "
        "stdinOnce tty"
    ),
)
_EMPTY_DIR = _Spec(m.EmptyDirVolumeSource, (_F("medium", _Str()), _F("sizeLimit", _OptQuantity())))
_HOST_PATH = _Spec(
    m.HostPathVolumeSource,
    (_F("path", _Str(), required=True, always=True), _F("type", _Str())),
)
_SUPPORTED_VOLUME_SOURCES = ("emptyDir", "hostPath")
_UNSUPPORTED_VOLUME_SOURCES = _names(
    "gcePersistentDisk awsElasticBlockStore gitRepo secret nfs iscsi glusterfs "
    "persistentVolumeClaim rbd flexVolume cinder cephfs flocker downwardAPI fc azureFile "
    "configMap vsphereVolume quobyte azureDisk photonPersistentDisk projected portworxVolume "
    "scaleIO storageos csi ephemeral image"
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
    ),
    unsupported=_names(
        "ephemeralContainers activeDeadlineSeconds nodeSelector serviceAccountName serviceAccount "
        "automountServiceAccountToken hostPID hostIPC shareProcessNamespace securityContext "
        "hostname subdomain affinity schedulerName tolerations hostAliases priorityClassName "
        "priority dnsConfig readinessGates runtimeClassName enableServiceLinks preemptionPolicy "
        "overhead topologySpreadConstraints setHostnameAsFQDN os hostUsers schedulingGates "
        "resourceClaims resources"
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
    unsupported=_names(
        "generateName selfLink resourceVersion generation creationTimestamp deletionTimestamp "
        "deletionGracePeriodSeconds ownerReferences finalizers managedFields clusterName"
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
    unsupported=_names(
        "allocatedResources resources volumeMounts user allocatedResourcesStatus stopSignal"
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
    unsupported=_names(
        "nominatedNodeName hostIPs podIPs qosClass ephemeralContainerStatuses resize "
        "resourceClaimStatuses observedGeneration"
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


# --- validation -----------------------------------------------------------------------------

_DNS_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PORT_NAME_RE = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
_ENV_NAME_RE = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_HEADER_NAME_RE = re.compile(r"[-A-Za-z0-9!#$%&'*+.^_`|~]+")
_HUGEPAGES_PREFIX = "hugepages-"

_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_SCHEMES = ("HTTP", "HTTPS")
_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_CONDITION_STATUSES = ("True", "False", "Unknown")
_HOST_PATH_TYPES = (
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
)


def _one_of(value: str, choices: Sequence[str]) -> str:
    return f"unsupported value {value!r}: must be one of {', '.join(choices)}"


def _check_enum(errs: _Problems, path: str, value: str, choices: Sequence[str]) -> None:
    if value == "":
        errs.append(FieldError(path, "required"))
    elif value not in choices:
        errs.append(FieldError(path, _one_of(value, choices)))


def _dns_label_problem(value: str) -> str | None:
    if len(value) > 63:
        return f"must be no more than 63 characters, got {len(value)}"
    if not _DNS_LABEL_RE.fullmatch(value):
        return (
            f"invalid name {value!r}: must be a DNS-1123 label (lowercase letters, digits "
            "and '-', starting and ending with a letter or digit)"
        )
    return None


def _dns_subdomain_problem(value: str) -> str | None:
    if len(value) > 253:
        return f"must be no more than 253 characters, got {len(value)}"
    if not _DNS_SUBDOMAIN_RE.fullmatch(value):
        return (
            f"invalid name {value!r}: must be a DNS-1123 subdomain (lowercase letters, digits, "
            "'-' and '.', starting and ending with a letter or digit)"
        )
    return None


def _check_name(errs: _Problems, path: str, value: str, rule: Callable[[str], str | None]) -> None:
    if value == "":
        errs.append(FieldError(path, "required"))
        return
    problem = rule(value)
    if problem:
        errs.append(FieldError(path, problem))


def _qualified_name_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return f"invalid key {key!r}: the prefix before '/' must not be empty"
        problem = _dns_subdomain_problem(prefix)
        if problem:
            return f"invalid key prefix {prefix!r}: must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME_RE.fullmatch(name):
        return (
            f"invalid key {key!r}: the name must be 1-63 characters of letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit"
        )
    return None


def _check_metadata(errs: _Problems, path: str, meta: m.ObjectMeta) -> None:
    _check_name(errs, _field(path, "name"), meta.name, _dns_subdomain_problem)
    _check_name(errs, _field(path, "namespace"), meta.namespace, _dns_label_problem)
    for key, value in meta.labels.items():
        where = _item(_field(path, "labels"), key)
        problem = _qualified_name_problem(key)
        if problem:
            errs.append(FieldError(where, problem))
        if value and (len(value) > 63 or not _QUALIFIED_NAME_RE.fullmatch(value)):
            errs.append(
                FieldError(
                    where,
                    f"invalid label value {value!r}: must be at most 63 characters of letters, "
                    "digits, '-', '_' or '.', starting and ending with a letter or digit",
                )
            )
    for key in meta.annotations:
        problem = _qualified_name_problem(key)
        if problem:
            errs.append(FieldError(_item(_field(path, "annotations"), key), problem))


def _check_port_number(errs: _Problems, path: str, value: int, low: int = 1) -> None:
    if not low <= value <= 65535:
        errs.append(FieldError(path, f"must be {low}-65535, got {value}"))


def _port_name_problem(name: str) -> str | None:
    if (
        len(name) > 15
        or not _PORT_NAME_RE.fullmatch(name)
        or "--" in name
        or not any(c.isalpha() for c in name)
    ):
        return (
            f"invalid port name {name!r}: must be at most 15 lowercase letters, digits and "
            "'-', with at least one letter, no '--', starting and ending with a letter or digit"
        )
    return None


def _check_handler_port(
    errs: _Problems, path: str, port: int | str, port_names: frozenset[str]
) -> None:
    if isinstance(port, int):
        _check_port_number(errs, path, port)
    elif port == "":
        errs.append(FieldError(path, "required"))
    elif port.isdigit():
        errs.append(FieldError(path, f"must be a number or a port name, got the string {port!r}"))
    elif port not in port_names:
        problem = _port_name_problem(port)
        errs.append(
            FieldError(path, problem or f"no port named {port!r} in this container's ports")
        )


def _check_handler(
    errs: _Problems,
    path: str,
    handler: m.Probe | m.LifecycleHandler,
    port_names: frozenset[str],
) -> None:
    actions = [
        name
        for name, value in (
            ("exec", handler.exec),
            ("httpGet", handler.http_get),
            ("tcpSocket", handler.tcp_socket),
        )
        if value is not None
    ]
    if len(actions) != 1:
        got = " and ".join(actions) if actions else "none"
        errs.append(
            FieldError(path, f"must have exactly one of exec, httpGet, tcpSocket; got {got}")
        )
    if handler.exec is not None and not handler.exec.command:
        errs.append(FieldError(_field(path, "exec.command"), "required"))
    if handler.http_get is not None:
        where = _field(path, "httpGet")
        _check_handler_port(errs, _field(where, "port"), handler.http_get.port, port_names)
        if handler.http_get.scheme not in _SCHEMES:
            errs.append(
                FieldError(_field(where, "scheme"), _one_of(handler.http_get.scheme, _SCHEMES))
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


def _resource_name_problem(name: str) -> str | None:
    if name in ("cpu", "memory", "ephemeral-storage"):
        return None
    if name.startswith(_HUGEPAGES_PREFIX):
        try:
            parse_quantity(name[len(_HUGEPAGES_PREFIX) :])
        except ValueError:
            return f"invalid hugepages resource name {name!r}: expected e.g. hugepages-2Mi"
        return None
    return (
        f"unsupported resource name {name!r}: expected cpu, memory, ephemeral-storage "
        "or hugepages-<size>"
    )


def _check_quantities(errs: _Problems, path: str, values: Mapping[str, str]) -> dict[str, Decimal]:
    parsed: dict[str, Decimal] = {}
    for name, text in values.items():
        where = _item(path, name)
        problem = _resource_name_problem(name)
        if problem:
            errs.append(FieldError(where, problem))
            continue
        try:
            value = parse_quantity(text)
        except ValueError as exc:
            errs.append(FieldError(where, str(exc)))
            continue
        if value < 0:
            errs.append(FieldError(where, f"must not be negative, got {text!r}"))
            continue
        parsed[name] = value
    return parsed


def _check_resources(errs: _Problems, path: str, resources: m.ResourceRequirements) -> None:
    requests = _check_quantities(errs, _field(path, "requests"), resources.requests)
    limits = _check_quantities(errs, _field(path, "limits"), resources.limits)
    for name, request in requests.items():
        limit = limits.get(name)
        if limit is not None and request > limit:
            errs.append(
                FieldError(
                    _item(_field(path, "requests"), name),
                    f"must be less than or equal to the {name} limit "
                    f"({resources.limits[name]}), got {resources.requests[name]}",
                )
            )


def _check_ports(
    errs: _Problems, path: str, container: m.Container, host_network: bool
) -> frozenset[str]:
    names: dict[str, int] = {}
    for i, port in enumerate(container.ports):
        where = _item(path, i)
        _check_port_number(errs, _field(where, "containerPort"), port.container_port)
        _check_port_number(errs, _field(where, "hostPort"), port.host_port, low=0)
        if port.protocol not in _PROTOCOLS:
            errs.append(FieldError(_field(where, "protocol"), _one_of(port.protocol, _PROTOCOLS)))
        if port.host_ip:
            try:
                ipaddress.ip_address(port.host_ip)
            except ValueError:
                errs.append(
                    FieldError(_field(where, "hostIP"), f"invalid IP address {port.host_ip!r}")
                )
        if host_network and port.host_port and port.host_port != port.container_port:
            errs.append(
                FieldError(
                    _field(where, "hostPort"),
                    f"must match containerPort ({port.container_port}) when hostNetwork is true",
                )
            )
        if port.name:
            problem = _port_name_problem(port.name)
            if problem:
                errs.append(FieldError(_field(where, "name"), problem))
            elif port.name in names:
                errs.append(
                    FieldError(
                        _field(where, "name"),
                        f"duplicate port name {port.name!r} (also ports[{names[port.name]}])",
                    )
                )
            else:
                names[port.name] = i
    return frozenset(names)


def _check_container(
    errs: _Problems,
    path: str,
    container: m.Container,
    *,
    init: bool,
    volume_names: frozenset[str],
    host_network: bool,
) -> None:
    _check_name(errs, _field(path, "name"), container.name, _dns_label_problem)
    if container.image == "":
        errs.append(FieldError(_field(path, "image"), "required"))
    elif any(c.isspace() for c in container.image):
        errs.append(
            FieldError(
                _field(path, "image"),
                f"must not contain whitespace, got {container.image!r}",
            )
        )
    _check_enum(errs, _field(path, "imagePullPolicy"), container.image_pull_policy, _PULL_POLICIES)
    if container.termination_message_path == "":
        errs.append(FieldError(_field(path, "terminationMessagePath"), "required"))
    port_names = _check_ports(errs, _field(path, "ports"), container, host_network)

    env_seen: dict[str, int] = {}
    for i, env in enumerate(container.env):
        where = _field(_item(_field(path, "env"), i), "name")
        if env.name == "":
            errs.append(FieldError(where, "required"))
        elif not _ENV_NAME_RE.fullmatch(env.name):
            errs.append(
                FieldError(
                    where,
                    f"invalid environment variable name {env.name!r}: use letters, digits, "
                    "'_', '-' and '.', not starting with a digit",
                )
            )
        elif env.name in env_seen:
            errs.append(
                FieldError(where, f"duplicate name {env.name!r} (also env[{env_seen[env.name]}])")
            )
        else:
            env_seen[env.name] = i

    mount_paths: dict[str, int] = {}
    for i, mount in enumerate(container.volume_mounts):
        where = _item(_field(path, "volumeMounts"), i)
        if mount.name == "":
            errs.append(FieldError(_field(where, "name"), "required"))
        elif mount.name not in volume_names:
            errs.append(
                FieldError(_field(where, "name"), f"no volume named {mount.name!r} in the pod")
            )
        mount_where = _field(where, "mountPath")
        if mount.mount_path == "":
            errs.append(FieldError(mount_where, "required"))
        elif not mount.mount_path.startswith("/"):
            errs.append(
                FieldError(mount_where, f"must be an absolute path, got {mount.mount_path!r}")
            )
        elif mount.mount_path in mount_paths:
            errs.append(
                FieldError(
                    mount_where,
                    f"duplicate mount path {mount.mount_path!r} "
                    f"(also volumeMounts[{mount_paths[mount.mount_path]}])",
                )
            )
        else:
            mount_paths[mount.mount_path] = i

    _check_resources(errs, _field(path, "resources"), container.resources)

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


def _check_volumes(errs: _Problems, path: str, volumes: Sequence[m.Volume]) -> frozenset[str]:
    names: dict[str, int] = {}
    for i, volume in enumerate(volumes):
        where = _item(path, i)
        _check_name(errs, _field(where, "name"), volume.name, _dns_label_problem)
        if volume.name in names:
            errs.append(
                FieldError(
                    _field(where, "name"),
                    f"duplicate volume name {volume.name!r} (also volumes[{names[volume.name]}])",
                )
            )
        elif volume.name:
            names[volume.name] = i
        sources = [
            name
            for name, value in (("emptyDir", volume.empty_dir), ("hostPath", volume.host_path))
            if value is not None
        ]
        if not sources:
            errs.append(
                FieldError(where, "must have a volume source (emptyDir or hostPath); got none")
            )
        elif len(sources) > 1:
            errs.append(
                FieldError(
                    where,
                    f"must have exactly one volume source, got {' and '.join(sources)}",
                )
            )
        if volume.host_path is not None:
            host = volume.host_path
            if host.path == "":
                errs.append(FieldError(_field(where, "hostPath.path"), "required"))
            elif not host.path.startswith("/"):
                errs.append(
                    FieldError(
                        _field(where, "hostPath.path"),
                        f"must be an absolute path, got {host.path!r}",
                    )
                )
            if host.type not in _HOST_PATH_TYPES:
                errs.append(
                    FieldError(
                        _field(where, "hostPath.type"),
                        _one_of(host.type, [t for t in _HOST_PATH_TYPES if t]),
                    )
                )
        if volume.empty_dir is not None:
            empty = volume.empty_dir
            medium = empty.medium
            if medium not in ("", "Memory") and not medium.startswith("HugePages"):
                errs.append(
                    FieldError(
                        _field(where, "emptyDir.medium"),
                        f"unsupported value {medium!r}: must be '' (disk), Memory or HugePages",
                    )
                )
            if empty.size_limit is not None:
                size_where = _field(where, "emptyDir.sizeLimit")
                try:
                    if parse_quantity(empty.size_limit) < 0:
                        errs.append(FieldError(size_where, "must not be negative"))
                except ValueError as exc:
                    errs.append(FieldError(size_where, str(exc)))
    return frozenset(names)


def _check_host_ports(errs: _Problems, path: str, containers: Sequence[m.Container]) -> None:
    seen: dict[tuple[int, str, str], str] = {}
    for c, container in enumerate(containers):
        for p, port in enumerate(container.ports):
            if not port.host_port:
                continue
            where = _field(_item(_field(_item(path, c), "ports"), p), "hostPort")
            key = (port.host_port, port.protocol, port.host_ip)
            if key in seen:
                errs.append(
                    FieldError(
                        where,
                        f"duplicate host port {port.host_port}/{port.protocol} (also {seen[key]})",
                    )
                )
            else:
                seen[key] = where


def _check_spec(errs: _Problems, path: str, spec: m.PodSpec) -> None:
    volume_names = _check_volumes(errs, _field(path, "volumes"), spec.volumes)
    if not spec.containers:
        errs.append(FieldError(_field(path, "containers"), "required: at least one container"))
    container_names: dict[str, str] = {}
    groups = (
        ("initContainers", spec.init_containers, True),
        ("containers", spec.containers, False),
    )
    for group, containers, init in groups:
        for i, container in enumerate(containers):
            where = _item(_field(path, group), i)
            _check_container(
                errs,
                where,
                container,
                init=init,
                volume_names=volume_names,
                host_network=spec.host_network,
            )
            if container.name in container_names:
                errs.append(
                    FieldError(
                        _field(where, "name"),
                        f"duplicate container name {container.name!r} "
                        f"(also {container_names[container.name]})",
                    )
                )
            elif container.name:
                container_names[container.name] = where
        _check_host_ports(errs, _field(path, group), containers)
    _check_enum(errs, _field(path, "restartPolicy"), spec.restart_policy, _RESTART_POLICIES)
    _check_enum(errs, _field(path, "dnsPolicy"), spec.dns_policy, _DNS_POLICIES)
    if spec.termination_grace_period_seconds < 0:
        errs.append(
            FieldError(
                _field(path, "terminationGracePeriodSeconds"),
                f"must be 0 or more, got {spec.termination_grace_period_seconds}",
            )
        )
    if spec.node_name:
        problem = _dns_subdomain_problem(spec.node_name)
        if problem:
            errs.append(FieldError(_field(path, "nodeName"), problem))
    for i, ref in enumerate(spec.image_pull_secrets):
        if not ref.name:
            errs.append(
                FieldError(_field(_item(_field(path, "imagePullSecrets"), i), "name"), "required")
            )


def _check_status(errs: _Problems, path: str, status: m.PodStatus) -> None:
    if status.phase not in _PHASES:
        errs.append(FieldError(_field(path, "phase"), _one_of(status.phase, _PHASES)))
    for i, condition in enumerate(status.conditions):
        if condition.status not in _CONDITION_STATUSES:
            errs.append(
                FieldError(
                    _field(_item(_field(path, "conditions"), i), "status"),
                    _one_of(condition.status, _CONDITION_STATUSES),
                )
            )


def _validate(pod: m.Pod, path: str) -> _Problems:
    errs: _Problems = []
    if pod.api_version != "v1":
        errs.append(
            FieldError(
                _field(path, "apiVersion"),
                f"must be 'v1', got {pod.api_version!r}" if pod.api_version else "required",
            )
        )
    if pod.kind != "Pod":
        errs.append(
            FieldError(
                _field(path, "kind"),
                f"must be 'Pod', got {pod.kind!r}" if pod.kind else "required",
            )
        )
    _check_metadata(errs, _field(path, "metadata"), pod.metadata)
    _check_spec(errs, _field(path, "spec"), pod.spec)
    if pod.status is not None:
        _check_status(errs, _field(path, "status"), pod.status)
    return errs


def validate_pod(pod: m.Pod) -> list[FieldError]:
    """Every problem with a built pod (an empty list when it is valid).

    The same value rules the loaders apply: names, ports, volumes and mounts, probes, resources,
    enums. JSON type rules only apply to loading.
    """
    return _validate(pod, "")


# --- dict <-> Pod ---------------------------------------------------------------------------


def _decode_pod(data: object, path: str) -> tuple[m.Pod, _Problems]:
    if isinstance(data, Mapping) and data.get("status") == {}:
        data = {k: v for k, v in data.items() if k != "status"}
    decode_errs: _Problems = []
    pod: m.Pod = _POD.load(data, path, decode_errs)
    problems = list(decode_errs)
    for problem in _validate(pod, path):
        if any(_covers(d.path, problem.path) or _covers(problem.path, d.path) for d in decode_errs):
            continue
        problems.append(problem)
    return pod, _dedupe(problems)


def _dedupe(problems: Iterable[FieldError]) -> _Problems:
    """Unique problems, grouped by place: ``containers[2]`` before ``containers[10]``."""
    return sorted(dict.fromkeys(problems), key=lambda p: _path_key(p.path))


def _path_key(path: str) -> list[tuple[int, int, str]]:
    return [
        (1, int(token), "") if token.isdigit() else (0, 0, token)
        for token in re.split(r"[.\[\]]+", path)
        if token
    ]


def pod_from_dict(data: object, *, path: str = "") -> m.Pod:
    """Build and validate a pod from its v1 JSON shape; raises ``ValidationError`` listing every
    problem. ``path`` prefixes every problem's path (e.g. ``items[2]``)."""
    pod, problems = _decode_pod(data, path)
    if problems:
        raise ValidationError(problems)
    return pod


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

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[valid-type,misc]
    """Safe YAML that writes multi-line strings (shell scripts) as ``|`` blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML refuses block style for text with trailing spaces or tabs; it falls back to quotes.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


class _Loader(_BaseLoader):  # type: ignore[valid-type,misc]
    """Safe YAML without timestamps (``2024-01-01`` stays a string, as in Kubernetes) that notes
    duplicate mapping keys, which Kubernetes refuses and plain PyYAML silently resolves."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicate_keys: list[str] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value != "<<":
                if key_node.value in seen:
                    mark = key_node.start_mark
                    self.duplicate_keys.append(
                        f"duplicate key {key_node.value!r} at line {mark.line + 1}, "
                        f"column {mark.column + 1}"
                    )
                seen.add(key_node.value)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)
        return mapping


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


# --- streams of documents -------------------------------------------------------------------


@attrs.frozen
class _RawDocuments:
    documents: list[object]
    error: FieldError | None = None  # a syntax error after the documents that did parse
    notes: dict[int, list[str]] = attrs.field(factory=dict)  # problems found while parsing


def _parse_text(text: str) -> _RawDocuments:
    if text.lstrip().startswith(("{", "[")):
        raw = _parse_json_stream(text)
        if raw.error is None:
            return raw
        # A YAML flow mapping also starts with "{"; fall back, but report JSON's complaint.
        as_yaml = _parse_yaml(text)
        return as_yaml if as_yaml.error is None else raw
    return _parse_yaml(text)


def _parse_json_stream(text: str) -> _RawDocuments:
    """One JSON value, or several written one after another (as ``kubectl get -o json`` may)."""
    decoder = json.JSONDecoder()
    documents: list[object] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return _RawDocuments(documents)
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            message = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            return _RawDocuments(documents, FieldError("", message))
        documents.append(value)


def _parse_yaml(text: str) -> _RawDocuments:
    documents: list[object] = []
    notes: dict[int, list[str]] = {}
    loader = _Loader(text)
    try:
        while loader.check_data():
            document = loader.get_data()
            if loader.duplicate_keys:
                notes[len(documents)] = loader.duplicate_keys
                loader.duplicate_keys = []
            if document is not None:
                documents.append(document)
    except yaml.YAMLError as exc:
        return _RawDocuments(documents, FieldError("", _yaml_error_message(exc)), notes)
    finally:
        loader.dispose()
    return _RawDocuments(documents, None, notes)


def _yaml_error_message(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"invalid YAML: {problem}"


@attrs.frozen
class _PodDoc:
    data: object
    path: str
    document: int
    item: int | None


def _pod_name_of(data: object) -> str:
    if isinstance(data, Mapping):
        meta = data.get("metadata")
        if isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
            return str(meta["name"])
    return ""


def _load_documents(
    documents: Sequence[object], source: str, notes: Mapping[int, Sequence[str]] | None = None
) -> tuple[list[m.Pod], list[ValidationError]]:
    multi = len(documents) > 1
    pods: list[m.Pod] = []
    errors: list[ValidationError] = []
    seen: dict[tuple[str, str], str] = {}
    for index, document in enumerate(documents):
        prefix = f"documents[{index}]" if multi else ""
        for doc in _expand(document, prefix, index, source, errors):
            pod, problems = _decode_pod(doc.data, doc.path)
            if notes and index in notes:
                problems = [FieldError(prefix, note) for note in notes[index]] + problems
            if not problems:
                key = (pod.metadata.namespace, pod.metadata.name)
                where = doc.path or "the first pod"
                if key in seen:
                    problems = [
                        FieldError(
                            _field(doc.path, "metadata.name"),
                            f"duplicate pod {key[0]}/{key[1]} (also {seen[key]})",
                        )
                    ]
                else:
                    seen[key] = where
            if problems:
                errors.append(
                    DocumentError(
                        problems,
                        source,
                        document=doc.document,
                        item=doc.item,
                        pod_name=_pod_name_of(doc.data),
                    )
                )
            else:
                pods.append(pod)
    return pods, errors


def _expand(
    document: object, prefix: str, index: int, source: str, errors: list[ValidationError]
) -> list[_PodDoc]:
    if not isinstance(document, Mapping):
        errors.append(
            DocumentError(
                [
                    FieldError(
                        prefix, f"expected a mapping (a Pod or a List), got {_show(document)}"
                    )
                ],
                source,
                document=index,
            )
        )
        return []
    if document.get("kind") not in ("List", "PodList"):
        return [_PodDoc(document, prefix, index, None)]
    items = document.get("items")
    items_path = _field(prefix, "items")
    if items is None:
        return []
    if not isinstance(items, list):
        errors.append(
            DocumentError(
                [FieldError(items_path, f"expected a list, got {_show(items)}")],
                source,
                document=index,
            )
        )
        return []
    return [_PodDoc(item, _item(items_path, j), index, j) for j, item in enumerate(items)]


def _load_text(text: str, source: str) -> tuple[list[m.Pod], list[ValidationError]]:
    raw = _parse_text(text)
    documents = raw.documents
    pods, errors = _load_documents(documents, source, raw.notes)
    if raw.error is not None:
        index = len(documents)
        prefix = f"documents[{index}]" if index else ""
        errors.append(DocumentError([attrs.evolve(raw.error, path=prefix)], source, document=index))
    return pods, errors


def _raise_all(errors: Sequence[ValidationError], source: str) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ValidationError([p for e in errors for p in e.problems], source)


def _read_file(path: str | os.PathLike[str]) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError([FieldError("", f"not UTF-8 text: {exc.reason}")], str(path)) from exc


def load_pods_from_string(text: str, *, source_name: str = "<string>") -> list[m.Pod]:
    """Every pod in a YAML (multi-document) or JSON text; ``kind: List`` items are pods too.

    Raises ``ValidationError`` with every problem of every document: nothing is half loaded.
    With several documents, each problem's path starts with ``documents[i]``.
    """
    pods, errors = _load_text(text, source_name)
    _raise_all(errors, source_name)
    return pods


def load_pods_from_file(path: str | os.PathLike[str]) -> list[m.Pod]:
    """``load_pods_from_string`` on a file; the file name is the errors' ``source``."""
    return load_pods_from_string(_read_file(path), source_name=str(path))


def load_pods_from_dict(data: object, *, source_name: str = "<dict>") -> list[m.Pod]:
    """Pods from already parsed data: one Pod mapping, or a ``kind: List`` of them."""
    pods, errors = _load_documents([data], source_name)
    _raise_all(errors, source_name)
    return pods


def load_pods_lenient(
    text_or_path: str | os.PathLike[str], *, source_name: str | None = None
) -> tuple[list[m.Pod], list[ValidationError]]:
    """Every good pod, and one error per bad document, instead of raising.

    A ``str`` is manifest text; a ``pathlib.Path`` (any ``os.PathLike``) is a file to read.
    Each error is a ``DocumentError`` naming its document index and pod name where known.
    """
    if isinstance(text_or_path, str):
        return _load_text(text_or_path, source_name or "<string>")
    source = source_name or str(text_or_path)
    try:
        text = _read_file(text_or_path)
    except ValidationError as exc:
        return [], [exc]
    return _load_text(text, source)


# --- identity -------------------------------------------------------------------------------

_UID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://kubecore.invalid/pod-uid")


def assign_uid(pod: m.Pod, source: str) -> m.Pod:
    """A pod without a uid gets a stable one from (source, namespace, name); others keep theirs."""
    if pod.metadata.uid:
        return pod
    meta = pod.metadata
    key = "\x00".join((source, meta.namespace, meta.name))
    uid = str(uuid.uuid5(_UID_NAMESPACE, key))
    return attrs.evolve(pod, metadata=attrs.evolve(meta, uid=uid))


def stamp_source(pod: m.Pod, source: str) -> m.Pod:
    """The pod with annotation ``kubernetes.io/config.source`` set to ``source``."""
    meta = pod.metadata
    if meta.annotations.get(SOURCE_ANNOTATION) == source:
        return pod
    annotations = {**meta.annotations, SOURCE_ANNOTATION: source}
    return attrs.evolve(pod, metadata=attrs.evolve(meta, annotations=annotations))
