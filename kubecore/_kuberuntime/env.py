"""A container's environment, resolved at its start as the kubelet does.

``container_environment`` is a pure function of the pod, the container, the object store's
ConfigMaps and Secrets, the node and the pod's IPs: ``envFrom`` first (in order, ``prefix``
applied, names that are not valid environment variable names skipped and reported), then ``env``
in order, each ``value`` with ``$(VAR)`` references expanded against what is defined so far, each
``valueFrom`` read from its source (a ``fileKeyRef`` from an env file in one of the pod's
emptyDir volumes, through ``read_file``). ``command`` and ``args`` are then expanded against the
whole environment. A missing object, file or key that is not optional raises
``CreateContainerConfigError`` (the container waits with ``CreateContainerConfigError``); its
message never holds a value.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Protocol

import attrs

from kubecore._contract.errors import CreateContainerConfigError
from kubecore._kuberuntime.envfile import EnvFileError, parse_env_file
from kubecore._manifest.validation import FIELD_REF_SUBSCRIPT_RE
from kubecore._model.quantity import parse_quantity
from kubecore._model.v1 import (
    ConfigMap,
    Container,
    EnvVarSource,
    FileKeySelector,
    Pod,
    ResourceFieldSelector,
    Secret,
)
from kubecore._util.host import memory_total_bytes

_ENV_NAME_RE = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")


VolumeFileReader = Callable[[str, str], "str | None"]
"""(volume name, path in it) -> the file's text, None when it is not there."""


def _no_volume_files(volume: str, path: str) -> str | None:
    return None


class ObjectReader(Protocol):
    """What env resolution reads (``kubecore._config.objects.ObjectStore`` is one)."""

    def get_config_map(self, namespace: str, name: str) -> ConfigMap | None: ...

    def get_secret(self, namespace: str, name: str) -> Secret | None: ...


@attrs.frozen
class NodeInfo:
    """What ``fieldRef`` and ``resourceFieldRef`` read from the node."""

    name: str = ""
    host_ip: str = ""
    capacity: Mapping[str, Decimal] = attrs.field(factory=dict)
    """``cpu`` (cores), ``memory`` and ``ephemeral-storage`` (bytes): the default limits."""


@attrs.frozen
class ResolvedContainer:
    env: tuple[tuple[str, str], ...]
    command: tuple[str, ...]
    args: tuple[str, ...]
    skipped: tuple[str, ...] = ()
    """One message per ``envFrom`` source whose keys were skipped as invalid variable names."""


# --- $(VAR) expansion ---------------------------------------------------------------------------


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: ``$(NAME)`` becomes ``lookup(NAME)`` or stays as
    written when that is None; ``$$`` is one ``$``; any other ``$`` (an unclosed ``$(``, ``$``
    before another character, a final ``$``) stays as written."""
    out: list[str] = []
    cursor = 0
    checkpoint = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            following = text[cursor + 1]
            if following == "$":
                out.append("$")
                cursor += 1
            elif following == "(":
                close = text.find(")", cursor + 2)
                if close < 0:
                    out.append("$(")
                    cursor += 1
                else:
                    name = text[cursor + 2 : close]
                    value = lookup(name)
                    out.append(f"$({name})" if value is None else value)
                    cursor = close
            else:
                out.append(text[cursor : cursor + 2])
                cursor += 1
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


def expand_sub_path_expr(expression: str, env: Mapping[str, str]) -> str:
    """A ``subPathExpr`` expanded with the container's resolved environment, as the kubelet
    does: every ``$(VAR)`` must name a variable with a non-empty value, and the result must be
    a relative path without ``..``; otherwise ``CreateContainerConfigError`` (with the
    kubelet's messages)."""
    missing: set[str] = set()

    def value_of(name: str) -> str:
        value = env.get(name, "")
        if not value:
            missing.add(name)
        return value

    sub_path = expand(expression, value_of)
    if missing:
        raise CreateContainerConfigError(f"missing value for {', '.join(sorted(missing))}")
    if sub_path.startswith("/"):
        raise CreateContainerConfigError(f"error SubPath `{sub_path}` must not be an absolute path")
    if ".." in sub_path.split("/"):
        raise CreateContainerConfigError(
            f"unable to provision SubPath `{sub_path}`: must not contain '..'"
        )
    return sub_path


# --- sources --------------------------------------------------------------------------------------


def _not_found(kind: str, name: str) -> CreateContainerConfigError:
    return CreateContainerConfigError(f'{kind} "{name}" not found')


def _key_not_found(key: str, kind: str, namespace: str, name: str) -> CreateContainerConfigError:
    return CreateContainerConfigError(f"couldn't find key {key} in {kind} {namespace}/{name}")


def _field_value(pod: Pod, field_path: str, node: NodeInfo, pod_ips: Sequence[str]) -> str:
    meta = pod.metadata
    subscript = FIELD_REF_SUBSCRIPT_RE.fullmatch(field_path)
    if subscript is not None:
        table = meta.labels if subscript[1] == "labels" else meta.annotations
        return table.get(subscript[2], "")
    host_ips = (node.host_ip,) if node.host_ip else ()
    values: dict[str, Callable[[], str]] = {
        "metadata.name": lambda: meta.name,
        "metadata.namespace": lambda: meta.namespace,
        "metadata.uid": lambda: meta.uid,
        "spec.nodeName": lambda: pod.spec.node_name or node.name,
        "spec.serviceAccountName": lambda: str(getattr(pod.spec, "service_account_name", "")),
        "status.hostIP": lambda: host_ips[0] if host_ips else "",
        "status.hostIPs": lambda: ",".join(host_ips),
        "status.podIP": lambda: pod_ips[0] if pod_ips else "",
        "status.podIPs": lambda: ",".join(pod_ips),
    }
    getter = values.get(field_path)
    if getter is None:  # validation refuses other paths
        raise CreateContainerConfigError(f"unsupported fieldRef fieldPath {field_path!r}")
    return getter()


def _resource_value(
    pod: Pod, container: Container, selector: ResourceFieldSelector, node: NodeInfo
) -> str:
    """The kubelet's value of a ``resourceFieldRef``: the container's (or the named one's) limit
    or request divided by ``divisor``, rounded up; a missing limit is the node's capacity."""
    target = container
    if selector.container_name:
        named = (*pod.spec.init_containers, *pod.spec.containers)
        target = next((c for c in named if c.name == selector.container_name), container)
    resource, divisor = selector.resource, selector.divisor
    kind, _, name = resource.partition(".")
    table = target.resources.limits if kind == "limits" else target.resources.requests
    written = table.get(name)
    if written is not None:
        amount = parse_quantity(written)
    elif kind == "limits":
        amount = node.capacity.get(name, Decimal(0))
    elif name in target.resources.limits:  # the API server defaults a request to its limit
        amount = parse_quantity(target.resources.limits[name])
    else:
        amount = Decimal(0)
    unit = parse_quantity(divisor) if divisor else Decimal(1)
    if name == "cpu":
        # The kubelet divides milli-values: 250m with divisor 1 gives 1 (rounded up).
        return str(math.ceil(_millis(amount) / _millis(unit)))
    return str(math.ceil(math.ceil(amount) / math.ceil(unit)))


def _millis(value: Decimal) -> int:
    return math.ceil(value * 1000)


def needs_pod_ip(container: Container) -> bool:
    """Whether the container's env reads the pod's IP (asked of the runtime only then)."""
    return any(
        env.value_from is not None
        and env.value_from.field_ref is not None
        and env.value_from.field_ref.field_path in ("status.podIP", "status.podIPs")
        for env in container.env
    )


# --- the environment ------------------------------------------------------------------------------


def _env_from(
    pod: Pod, container: Container, objects: ObjectReader
) -> tuple[dict[str, str], list[str]]:
    namespace = pod.metadata.namespace
    env: dict[str, str] = {}
    skipped: list[str] = []
    for source in container.env_from:
        data: Mapping[str, str]
        if source.config_map_ref is not None:
            ref_name, optional = source.config_map_ref.name, source.config_map_ref.optional
            config_map = objects.get_config_map(namespace, ref_name)
            if config_map is None:
                if optional:
                    continue
                raise _not_found("configmap", ref_name)
            data, kind = config_map.data, "configMap"
        elif source.secret_ref is not None:
            ref_name, optional = source.secret_ref.name, source.secret_ref.optional
            secret = objects.get_secret(namespace, ref_name)
            if secret is None:
                if optional:
                    continue
                raise _not_found("secret", ref_name)
            data = {k: v.decode("utf-8", "replace") for k, v in secret.data.items()}
            kind = "secret"
        else:  # validation refuses an envFrom without a source
            continue
        invalid: list[str] = []
        for key, value in data.items():
            name = source.prefix + key
            if _ENV_NAME_RE.fullmatch(name):
                env[name] = value
            else:
                invalid.append(name)
        if invalid:
            skipped.append(
                f"Keys [{', '.join(sorted(invalid))}] from the EnvFrom {kind} "
                f"{namespace}/{ref_name} were skipped since they are considered invalid "
                "environment variable names."
            )
    return env, skipped


def _value_from(
    pod: Pod,
    container: Container,
    source: EnvVarSource,
    objects: ObjectReader,
    node: NodeInfo,
    pod_ips: Sequence[str],
    read_file: VolumeFileReader,
) -> str | None:
    """One ``valueFrom``; None when an optional object, file or key is missing (the variable
    is not set)."""
    namespace = pod.metadata.namespace
    if source.config_map_key_ref is not None:
        ref = source.config_map_key_ref
        config_map = objects.get_config_map(namespace, ref.name)
        if config_map is None:
            if ref.optional:
                return None
            raise _not_found("configmap", ref.name)
        if ref.key in config_map.data:  # the kubelet reads ``data`` only, not binaryData
            return config_map.data[ref.key]
        if ref.optional:
            return None
        raise _key_not_found(ref.key, "ConfigMap", namespace, ref.name)
    if source.secret_key_ref is not None:
        sref = source.secret_key_ref
        secret = objects.get_secret(namespace, sref.name)
        if secret is None:
            if sref.optional:
                return None
            raise _not_found("secret", sref.name)
        if sref.key in secret.data:
            return secret.data[sref.key].decode("utf-8", "replace")
        if sref.optional:
            return None
        raise _key_not_found(sref.key, "Secret", namespace, sref.name)
    if source.field_ref is not None:
        return _field_value(pod, source.field_ref.field_path, node, pod_ips)
    if source.resource_field_ref is not None:
        return _resource_value(pod, container, source.resource_field_ref, node)
    if source.file_key_ref is not None:
        return _file_key_value(source.file_key_ref, read_file)
    return None  # validation refuses a valueFrom without a source


def _file_key_value(ref: FileKeySelector, read_file: VolumeFileReader) -> str | None:
    where = f'env file "{ref.path}" in volume "{ref.volume_name}"'
    try:
        text = read_file(ref.volume_name, ref.path)
    except (ValueError, OSError) as exc:
        raise CreateContainerConfigError(f"couldn't read {where}: {exc}") from None
    if text is None:
        if ref.optional:
            return None
        raise CreateContainerConfigError(f"couldn't read {where}: no such file")
    try:
        values = parse_env_file(text)
    except EnvFileError as exc:
        raise CreateContainerConfigError(f"couldn't parse {where}: {exc}") from None
    if ref.key in values:
        return values[ref.key]
    if ref.optional:
        return None
    raise CreateContainerConfigError(f"couldn't find key {ref.key} in {where}")


def container_environment(
    pod: Pod,
    container: Container,
    objects: ObjectReader,
    node: NodeInfo,
    pod_ips: Sequence[str] = (),
    read_file: VolumeFileReader = _no_volume_files,
) -> ResolvedContainer:
    """The container's environment and its expanded command and args (see the module doc)."""
    env, skipped = _env_from(pod, container, objects)
    for var in container.env:
        source = var.value_from
        if source is None:
            env[var.name] = expand(var.value, env.get) if var.value else ""
            continue
        value = _value_from(pod, container, source, objects, node, pod_ips, read_file)
        if value is not None:
            env[var.name] = value
    return ResolvedContainer(
        env=tuple(env.items()),
        command=tuple(expand(part, env.get) for part in container.command),
        args=tuple(expand(part, env.get) for part in container.args),
        skipped=tuple(skipped),
    )


# --- the node -----------------------------------------------------------------------------------


@functools.cache
def host_capacity(root_dir: str) -> Mapping[str, Decimal]:
    """This host's cpu count, memory and the size of the filesystem holding ``root_dir``: the
    limits ``resourceFieldRef`` reads for a container that sets none."""
    capacity = {"cpu": Decimal(os.cpu_count() or 1)}
    memory = memory_total_bytes()
    if memory:
        capacity["memory"] = Decimal(memory)
    path = root_dir
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    try:
        stat = os.statvfs(path or "/")
        capacity["ephemeral-storage"] = Decimal(stat.f_blocks * stat.f_frsize)
    except OSError:
        pass
    return capacity
