"""The rules about a pod's volumes: their names and sources, and the files of the ConfigMap, Secret,
downward API and projected volumes."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _field, _item, _Problems
from kubecore._manifest.validation.names import (
    check_enum,
    check_name,
    dns_label_problem,
    dns_subdomain_problem,
    one_of,
    relative_path_problem,
)
from kubecore._model import v1 as m
from kubecore._model.quantity import parse_quantity

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


def check_volumes(errs: _Problems, path: str, volumes: Sequence[m.Volume]) -> frozenset[str]:
    names: dict[str, int] = {}
    for i, volume in enumerate(volumes):
        where = _item(path, i)
        check_name(errs, _field(where, "name"), volume.name, dns_label_problem)
        if volume.name in names:
            errs.append(
                FieldError(
                    _field(where, "name"),
                    f"duplicate volume name {volume.name!r} (also volumes[{names[volume.name]}])",
                )
            )
        elif volume.name:
            names[volume.name] = i
        sources = [name for name, value in _volume_sources(volume) if value is not None]
        if not sources:
            errs.append(
                FieldError(
                    where,
                    "must have a volume source (" + ", ".join(_VOLUME_SOURCE_NAMES) + "); got none",
                )
            )
        elif len(sources) > 1:
            errs.append(
                FieldError(
                    where,
                    f"must have exactly one volume source, got {' and '.join(sources)}",
                )
            )
        if volume.host_path is not None:
            _check_host_path(errs, where, volume.host_path)
        if volume.empty_dir is not None:
            _check_empty_dir(errs, where, volume.empty_dir)
        _check_object_volumes(errs, where, volume)
    return frozenset(names)


def _check_host_path(errs: _Problems, where: str, host: m.HostPathVolumeSource) -> None:
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
                one_of(host.type, [t for t in _HOST_PATH_TYPES if t]),
            )
        )


def _check_empty_dir(errs: _Problems, where: str, empty: m.EmptyDirVolumeSource) -> None:
    medium = empty.medium
    if medium.startswith("HugePages"):
        errs.append(
            FieldError(
                _field(where, "emptyDir.medium"),
                f"not supported: {medium} needs huge pages set aside on the node, and"
                " kubecore does not manage them",
            )
        )
    elif medium not in ("", "Memory"):
        errs.append(
            FieldError(
                _field(where, "emptyDir.medium"),
                f"unsupported value {medium!r}: must be '' (disk), Memory or HugePages",
            )
        )
    if empty.mode is not None and not 0 <= empty.mode <= 0o1777:
        errs.append(
            FieldError(
                _field(where, "emptyDir.mode"),
                f"must be a mode between 0 and 01777 (octal), got {empty.mode}",
            )
        )
    if empty.size_limit is not None:
        size_where = _field(where, "emptyDir.sizeLimit")
        try:
            if parse_quantity(empty.size_limit) < 0:
                errs.append(FieldError(size_where, "must not be negative"))
        except ValueError as exc:
            errs.append(FieldError(size_where, str(exc)))


_VOLUME_SOURCE_NAMES = (
    "emptyDir",
    "hostPath",
    "configMap",
    "secret",
    "downwardAPI",
    "projected",
    "persistentVolumeClaim",
    "image",
)


_DOWNWARD_FIELDS = ("metadata.name", "metadata.namespace", "metadata.uid")
_DOWNWARD_MAP_FIELDS = ("metadata.labels", "metadata.annotations")
_DOWNWARD_SUBSCRIPT_RE = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")
_DOWNWARD_RESOURCES = (
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
)


def _volume_sources(volume: m.Volume) -> tuple[tuple[str, object], ...]:
    return (
        ("emptyDir", volume.empty_dir),
        ("hostPath", volume.host_path),
        ("configMap", volume.config_map),
        ("secret", volume.secret),
        ("downwardAPI", volume.downward_api),
        ("projected", volume.projected),
        ("persistentVolumeClaim", volume.persistent_volume_claim),
        ("image", volume.image),
    )


def _check_mode(errs: _Problems, where: str, mode: int | None) -> None:
    if mode is not None and not 0 <= mode <= 0o777:
        errs.append(
            FieldError(where, f"must be a file mode between 0 and 0777 (octal), got {mode}")
        )


def _check_items(errs: _Problems, where: str, items: Sequence[m.KeyToPath]) -> None:
    for i, item in enumerate(items):
        at = _item(where, i)
        if item.key == "":
            errs.append(FieldError(_field(at, "key"), "required"))
        if item.path == "":
            errs.append(FieldError(_field(at, "path"), "required"))
        elif (problem := relative_path_problem(item.path)) is not None:
            errs.append(FieldError(_field(at, "path"), problem))
        _check_mode(errs, _field(at, "mode"), item.mode)


def _check_downward_files(
    errs: _Problems, where: str, files: Sequence[m.DownwardAPIVolumeFile]
) -> None:
    for i, file in enumerate(files):
        at = _item(where, i)
        if file.path == "":
            errs.append(FieldError(_field(at, "path"), "required"))
        elif (problem := relative_path_problem(file.path)) is not None:
            errs.append(FieldError(_field(at, "path"), problem))
        _check_mode(errs, _field(at, "mode"), file.mode)
        if (file.field_ref is None) == (file.resource_field_ref is None):
            errs.append(FieldError(at, "must have exactly one of fieldRef or resourceFieldRef"))
        if file.field_ref is not None:
            field_path = file.field_ref.field_path
            subscripted = _DOWNWARD_SUBSCRIPT_RE.fullmatch(field_path)
            if (
                field_path not in _DOWNWARD_FIELDS
                and field_path not in _DOWNWARD_MAP_FIELDS
                and subscripted is None
            ):
                errs.append(
                    FieldError(
                        _field(at, "fieldRef.fieldPath"),
                        one_of(
                            field_path,
                            [*_DOWNWARD_FIELDS, *_DOWNWARD_MAP_FIELDS, "metadata.labels['<key>']"],
                        ),
                    )
                )
        if file.resource_field_ref is not None:
            ref = file.resource_field_ref
            check_enum(
                errs, _field(at, "resourceFieldRef.resource"), ref.resource, _DOWNWARD_RESOURCES
            )
            if ref.container_name == "":
                errs.append(
                    FieldError(
                        _field(at, "resourceFieldRef.containerName"),
                        "required in a volume (which container's resources to show)",
                    )
                )
            if ref.divisor:
                try:
                    if parse_quantity(ref.divisor) <= 0:
                        errs.append(
                            FieldError(_field(at, "resourceFieldRef.divisor"), "must be positive")
                        )
                except ValueError as exc:
                    errs.append(FieldError(_field(at, "resourceFieldRef.divisor"), str(exc)))


def _check_object_volumes(errs: _Problems, where: str, volume: m.Volume) -> None:
    """configMap, secret, downwardAPI, projected, persistentVolumeClaim and image sources."""
    if volume.config_map is not None:
        at = _field(where, "configMap")
        if volume.config_map.name == "":
            errs.append(FieldError(_field(at, "name"), "required"))
        _check_items(errs, _field(at, "items"), volume.config_map.items)
        _check_mode(errs, _field(at, "defaultMode"), volume.config_map.default_mode)
    if volume.secret is not None:
        at = _field(where, "secret")
        if volume.secret.secret_name == "":
            errs.append(FieldError(_field(at, "secretName"), "required"))
        _check_items(errs, _field(at, "items"), volume.secret.items)
        _check_mode(errs, _field(at, "defaultMode"), volume.secret.default_mode)
    if volume.downward_api is not None:
        at = _field(where, "downwardAPI")
        _check_downward_files(errs, _field(at, "items"), volume.downward_api.items)
        _check_mode(errs, _field(at, "defaultMode"), volume.downward_api.default_mode)
    if volume.projected is not None:
        at = _field(where, "projected")
        _check_mode(errs, _field(at, "defaultMode"), volume.projected.default_mode)
        for i, source in enumerate(volume.projected.sources):
            src = _item(_field(at, "sources"), i)
            given = [
                name
                for name, value in (
                    ("configMap", source.config_map),
                    ("secret", source.secret),
                    ("downwardAPI", source.downward_api),
                    ("serviceAccountToken", source.service_account_token),
                )
                if value is not None
            ]
            if len(given) != 1:
                errs.append(
                    FieldError(
                        src,
                        "must have exactly one of configMap, secret, downwardAPI or"
                        f" serviceAccountToken, got {' and '.join(given) or 'none'}",
                    )
                )
            if source.config_map is not None:
                if source.config_map.name == "":
                    errs.append(FieldError(_field(src, "configMap.name"), "required"))
                _check_items(errs, _field(src, "configMap.items"), source.config_map.items)
            if source.secret is not None:
                if source.secret.name == "":
                    errs.append(FieldError(_field(src, "secret.name"), "required"))
                _check_items(errs, _field(src, "secret.items"), source.secret.items)
            if source.downward_api is not None:
                _check_downward_files(
                    errs, _field(src, "downwardAPI.items"), source.downward_api.items
                )
            if source.service_account_token is not None:
                errs.append(
                    FieldError(
                        _field(src, "serviceAccountToken"),
                        "not supported: a service account token is issued by the Kubernetes API"
                        " server, and kubecore runs without one",
                    )
                )
    if volume.persistent_volume_claim is not None:
        claim = volume.persistent_volume_claim.claim_name
        at = _field(where, "persistentVolumeClaim.claimName")
        if claim == "":
            errs.append(FieldError(at, "required"))
        elif (problem := dns_subdomain_problem(claim)) is not None:
            errs.append(FieldError(at, problem))
    if volume.image is not None:
        errs.append(
            FieldError(
                _field(where, "image"),
                "not supported: mounting an image's filesystem needs an engine that mounts"
                " images (Docker 28's --mount type=image); kubecore's runtimes cannot",
            )
        )
