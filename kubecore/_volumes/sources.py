"""What each volume source puts on the node: hostPath type checks, and the files of configMap,
secret, downwardAPI and projected volumes (pure payloads, written by ``_atomic_writer``).

Objects (ConfigMaps, Secrets) are read through ``ObjectLookup``, the narrow read interface this
part needs from the agent's object store.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import stat
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Protocol, runtime_checkable

import attrs

from kubecore._model.quantity import parse_quantity
from kubecore._model.v1 import (
    Container,
    DownwardAPIVolumeFile,
    KeyToPath,
    Pod,
    Volume,
)
from kubecore._volumes.atomic_writer import FileProjection

_SUBSCRIPT_RE = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")

DEFAULT_MODE = 0o644
"""Kubernetes' ``defaultMode`` for configMap, secret, downwardAPI and projected files."""


class ConfigMapData(Protocol):
    """What a volume reads of a ConfigMap (the object store's ``ConfigMap`` has these)."""

    @property
    def data(self) -> Mapping[str, str]: ...

    @property
    def binary_data(self) -> Mapping[str, bytes]: ...


class SecretData(Protocol):
    """What a volume reads of a Secret: ``data`` decoded, ``string_data`` winning over it."""

    @property
    def data(self) -> Mapping[str, bytes]: ...

    @property
    def string_data(self) -> Mapping[str, str]: ...


@runtime_checkable
class ObjectLookup(Protocol):
    """Read access to the ConfigMaps and Secrets on the node, by namespace and name (None: no
    such object). The agent's object store is one; ``DictObjects`` is a plain stand-in."""

    def get_config_map(self, namespace: str, name: str) -> ConfigMapData | None: ...

    def get_secret(self, namespace: str, name: str) -> SecretData | None: ...


@attrs.frozen
class StoredConfigMap:
    data: Mapping[str, str] = attrs.field(factory=dict)
    binary_data: Mapping[str, bytes] = attrs.field(factory=dict)


@attrs.frozen
class StoredSecret:
    data: Mapping[str, bytes] = attrs.field(factory=dict, repr=False)
    string_data: Mapping[str, str] = attrs.field(factory=dict, repr=False)


@attrs.define
class DictObjects:
    """An ``ObjectLookup`` over plain dicts keyed by (namespace, name) holding each object's
    data as key -> bytes; change them freely."""

    config_maps: dict[tuple[str, str], Mapping[str, bytes]] = attrs.field(factory=dict)
    secrets: dict[tuple[str, str], Mapping[str, bytes]] = attrs.field(factory=dict)

    def get_config_map(self, namespace: str, name: str) -> ConfigMapData | None:
        found = self.config_maps.get((namespace, name))
        return None if found is None else StoredConfigMap(binary_data=dict(found))

    def get_secret(self, namespace: str, name: str) -> SecretData | None:
        found = self.secrets.get((namespace, name))
        return None if found is None else StoredSecret(data=dict(found))


def config_map_bytes(config_map: ConfigMapData) -> dict[str, bytes]:
    return {**{k: v.encode() for k, v in config_map.data.items()}, **config_map.binary_data}


def secret_bytes(secret: SecretData) -> dict[str, bytes]:
    return {**secret.data, **{k: v.encode() for k, v in secret.string_data.items()}}


# --- hostPath -----------------------------------------------------------------------------------

_HOST_PATH_KINDS = {
    "Directory": (stat.S_ISDIR, "a directory"),
    "DirectoryOrCreate": (stat.S_ISDIR, "a directory"),
    "File": (stat.S_ISREG, "a file"),
    "FileOrCreate": (stat.S_ISREG, "a file"),
    "Socket": (stat.S_ISSOCK, "a socket file"),
    "CharDevice": (stat.S_ISCHR, "a character device"),
    "BlockDevice": (stat.S_ISBLK, "a block device"),
}


def _type_check_failed(path: str, what: str, type_: str) -> str:
    return f"hostPath type check failed: {path} is not {what} (type {type_})"


def check_host_path(path: str, type_: str) -> None:
    """The kubelet's hostPath type check: create what ``DirectoryOrCreate`` / ``FileOrCreate``
    ask for when nothing is there (0755 / 0644, the parent of a file is not made), and raise
    ``ValueError`` naming the path and the expected type when what is there does not match.
    The default type ("") checks nothing."""
    if type_ == "":
        return
    test, what = _HOST_PATH_KINDS[type_]
    if not os.path.lexists(path):
        try:
            if type_ == "DirectoryOrCreate":
                os.makedirs(path, mode=0o755)
                os.chmod(path, 0o755)
            elif type_ == "FileOrCreate":
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                os.chmod(path, 0o644)
        except FileExistsError:
            pass  # made meanwhile: checked below
        except OSError as exc:
            raise ValueError(
                f"hostPath type check failed: could not create {path} for type {type_}:"
                f" {exc.strerror}"
            ) from None
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise ValueError(_type_check_failed(path, what, type_)) from None
    if not test(mode):
        raise ValueError(_type_check_failed(path, what, type_))


# --- configMap and secret -----------------------------------------------------------------------


def _key_payload(
    kind: str,
    name: str,
    data: Mapping[str, bytes] | None,
    items: Sequence[KeyToPath],
    optional: bool,
    default_mode: int,
) -> dict[str, FileProjection]:
    if data is None:
        if optional:
            return {}
        raise ValueError(f'{kind} "{name}" not found')
    if not items:
        return {key: FileProjection(value, default_mode) for key, value in data.items()}
    payload: dict[str, FileProjection] = {}
    for item in items:
        value = data.get(item.key)
        if value is None:
            if optional:
                continue
            raise ValueError(f"{kind} references non-existent {kind} key: {item.key}")
        mode = item.mode if item.mode is not None else default_mode
        payload[item.path] = FileProjection(value, mode)
    return payload


def config_map_payload(
    objects: ObjectLookup,
    namespace: str,
    name: str,
    items: Sequence[KeyToPath],
    optional: bool,
    default_mode: int,
) -> dict[str, FileProjection]:
    found = objects.get_config_map(namespace, name)
    data = None if found is None else config_map_bytes(found)
    return _key_payload("configmap", name, data, items, optional, default_mode)


def secret_payload(
    objects: ObjectLookup,
    namespace: str,
    name: str,
    items: Sequence[KeyToPath],
    optional: bool,
    default_mode: int,
) -> dict[str, FileProjection]:
    found = objects.get_secret(namespace, name)
    data = None if found is None else secret_bytes(found)
    return _key_payload("secret", name, data, items, optional, default_mode)


# --- downwardAPI --------------------------------------------------------------------------------


@attrs.frozen
class NodeCapacity:
    """What a container's unset limit stands for in the downward API (the node's allocatable)."""

    cpu_millis: int
    memory_bytes: int
    ephemeral_storage_bytes: int


def node_capacity(root_dir: str) -> NodeCapacity:
    pages = os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    page_size = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 0
    try:
        disk = shutil.disk_usage(root_dir if os.path.isdir(root_dir) else "/").total
    except OSError:
        disk = 0
    return NodeCapacity((os.cpu_count() or 1) * 1000, pages * page_size, disk)


def _format_map(values: Mapping[str, str]) -> bytes:
    """``key="value"`` lines in key order, values quoted as Go's ``strconv.Quote`` does."""
    return "\n".join(
        f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(values.items())
    ).encode()


def _ceil_div(value: Decimal, divisor: Decimal) -> int:
    return math.ceil(value / divisor)


def resource_value(
    container: Container, resource: str, divisor: str, capacity: NodeCapacity
) -> str:
    """A container's resource as the downward API shows it, rounded up in units of ``divisor``
    (default 1): an unset limit is the node's capacity, an unset request the limit (Kubernetes'
    defaulting) or else 0."""
    kind, _, name = resource.partition(".")
    limit = container.resources.limits.get(name)
    written = limit if kind == "limits" else container.resources.requests.get(name, limit)
    if written is not None:
        amount = parse_quantity(written)
    elif kind == "limits":
        amount = {
            "cpu": Decimal(capacity.cpu_millis) / 1000,
            "memory": Decimal(capacity.memory_bytes),
            "ephemeral-storage": Decimal(capacity.ephemeral_storage_bytes),
        }[name]
    else:
        amount = Decimal(0)
    unit = parse_quantity(divisor) if divisor else Decimal(1)
    return str(_ceil_div(amount, unit))


def downward_payload(
    pod: Pod,
    files: Sequence[DownwardAPIVolumeFile],
    default_mode: int,
    capacity: NodeCapacity,
) -> dict[str, FileProjection]:
    payload: dict[str, FileProjection] = {}
    meta = pod.metadata
    for file in files:
        mode = file.mode if file.mode is not None else default_mode
        if file.field_ref is not None:
            field = file.field_ref.field_path
            value: bytes
            if field == "metadata.name":
                value = meta.name.encode()
            elif field == "metadata.namespace":
                value = meta.namespace.encode()
            elif field == "metadata.uid":
                value = meta.uid.encode()
            elif field == "metadata.labels":
                value = _format_map(meta.labels)
            elif field == "metadata.annotations":
                value = _format_map(meta.annotations)
            elif (one := _SUBSCRIPT_RE.fullmatch(field)) is not None:
                kind, key = one.groups()
                values = meta.labels if kind == "labels" else meta.annotations
                value = values.get(key, "").encode()
            else:
                raise ValueError(f"unsupported fieldRef {field!r}")
            payload[file.path] = FileProjection(value, mode)
        elif file.resource_field_ref is not None:
            ref = file.resource_field_ref
            container = next(
                (
                    c
                    for c in (*pod.spec.containers, *pod.spec.init_containers)
                    if c.name == ref.container_name
                ),
                None,
            )
            if container is None:
                raise ValueError(f"resourceFieldRef names no container {ref.container_name!r}")
            text = resource_value(container, ref.resource, ref.divisor, capacity)
            payload[file.path] = FileProjection(text.encode(), mode)
    return payload


# --- one volume ---------------------------------------------------------------------------------


def _mode(default_mode: int | None) -> int:
    return DEFAULT_MODE if default_mode is None else default_mode


def object_payload(
    pod: Pod, volume: Volume, objects: ObjectLookup, capacity: NodeCapacity
) -> dict[str, FileProjection] | None:
    """The files of a configMap, secret, downwardAPI or projected volume (None for another
    source); ``ValueError`` says why they cannot be made (a missing object, key or container)."""
    ns = pod.metadata.namespace
    if volume.config_map is not None:
        cm = volume.config_map
        return config_map_payload(
            objects, ns, cm.name, cm.items, bool(cm.optional), _mode(cm.default_mode)
        )
    if volume.secret is not None:
        sec = volume.secret
        return secret_payload(
            objects, ns, sec.secret_name, sec.items, bool(sec.optional), _mode(sec.default_mode)
        )
    if volume.downward_api is not None:
        dapi = volume.downward_api
        return downward_payload(pod, dapi.items, _mode(dapi.default_mode), capacity)
    if volume.projected is not None:
        mode = _mode(volume.projected.default_mode)
        payload: dict[str, FileProjection] = {}
        for source in volume.projected.sources:
            if source.config_map is not None:
                c = source.config_map
                payload.update(
                    config_map_payload(objects, ns, c.name, c.items, bool(c.optional), mode)
                )
            elif source.secret is not None:
                s = source.secret
                payload.update(secret_payload(objects, ns, s.name, s.items, bool(s.optional), mode))
            elif source.downward_api is not None:
                payload.update(downward_payload(pod, source.downward_api.items, mode, capacity))
            elif source.service_account_token is not None:
                raise ValueError(
                    "a serviceAccountToken projection needs the Kubernetes API server to issue"
                    " the token, and kubecore runs without one"
                )
        return payload
    return None
