"""The rules about a container's environment: variables and their sources (field, resource,
ConfigMap, Secret and file references) and ``envFrom``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _field, _item, _Problems
from kubecore._manifest.validation.names import (
    check_name,
    config_key_problem,
    dns_subdomain_problem,
    relative_path_problem,
)
from kubecore._model import v1 as m
from kubecore._model.quantity import parse_quantity

_ENV_NAME_RE = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
FIELD_REF_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
"""``env[].valueFrom.fieldRef.fieldPath`` values besides ``metadata.labels['k']`` and
``metadata.annotations['k']``."""


FIELD_REF_SUBSCRIPT_RE = re.compile(r"metadata\.(labels|annotations)\['(.+)'\]")
RESOURCE_FIELD_REF_RESOURCES = (
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
)


def _check_env_source(errs: _Problems, path: str, env: m.EnvVar) -> None:
    source = env.value_from
    assert source is not None
    where = _field(path, "valueFrom")
    if env.value:
        errs.append(FieldError(where, "may not be specified when `value` is not empty"))
    given = [
        name
        for name, value in (
            ("fieldRef", source.field_ref),
            ("resourceFieldRef", source.resource_field_ref),
            ("configMapKeyRef", source.config_map_key_ref),
            ("secretKeyRef", source.secret_key_ref),
            ("fileKeyRef", source.file_key_ref),
        )
        if value is not None
    ]
    if len(given) != 1:
        errs.append(
            FieldError(
                where,
                "must specify one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef,"
                " fileKeyRef"
                if not given
                else f"may not have more than one source, got {', '.join(given)}",
            )
        )
        return
    if source.field_ref is not None:
        ref = source.field_ref
        field_path = ref.field_path
        if ref.api_version != "v1":
            errs.append(
                FieldError(
                    _field(_field(where, "fieldRef"), "apiVersion"),
                    f"unsupported version {ref.api_version!r}: only 'v1'",
                )
            )
        if field_path not in FIELD_REF_PATHS and not FIELD_REF_SUBSCRIPT_RE.fullmatch(field_path):
            errs.append(
                FieldError(
                    _field(_field(where, "fieldRef"), "fieldPath"),
                    f"unsupported value {field_path!r}: use one of {', '.join(FIELD_REF_PATHS)},"
                    " metadata.labels['<key>'] or metadata.annotations['<key>']",
                )
            )
    if source.resource_field_ref is not None:
        ref_path = _field(where, "resourceFieldRef")
        res = source.resource_field_ref
        if res.resource not in RESOURCE_FIELD_REF_RESOURCES:
            errs.append(
                FieldError(
                    _field(ref_path, "resource"),
                    f"unsupported value {res.resource!r}: use one of "
                    + ", ".join(RESOURCE_FIELD_REF_RESOURCES),
                )
            )
        if res.divisor:
            _check_divisor(errs, _field(ref_path, "divisor"), res.resource, res.divisor)
    for name, selector in (
        ("configMapKeyRef", source.config_map_key_ref),
        ("secretKeyRef", source.secret_key_ref),
    ):
        if selector is None:
            continue
        ref_path = _field(where, name)
        if not selector.name:
            errs.append(FieldError(_field(ref_path, "name"), "required"))
        else:
            check_name(errs, _field(ref_path, "name"), selector.name, dns_subdomain_problem)
        problem = config_key_problem(selector.key)
        if problem:
            errs.append(FieldError(_field(ref_path, "key"), problem))
    if source.file_key_ref is not None:
        _check_file_key_selector(errs, _field(where, "fileKeyRef"), source.file_key_ref)


def _check_file_key_selector(errs: _Problems, where: str, ref: m.FileKeySelector) -> None:
    """``fileKeyRef``'s own fields (its volume is checked against the pod's volumes apart)."""
    if not ref.volume_name:
        errs.append(FieldError(_field(where, "volumeName"), "required"))
    if not ref.path:
        errs.append(FieldError(_field(where, "path"), "required"))
    elif (problem := relative_path_problem(ref.path)) is not None:
        errs.append(FieldError(_field(where, "path"), problem))
    if not ref.key:
        errs.append(FieldError(_field(where, "key"), "required"))
    elif not all(" " <= c <= "~" and c != "=" for c in ref.key):
        errs.append(
            FieldError(
                _field(where, "key"),
                f"invalid key {ref.key!r}: use printable ASCII characters other than '='",
            )
        )


def check_file_key_volumes(
    errs: _Problems, path: str, spec: m.PodSpec, groups: Sequence[tuple[str, Sequence[m.Container]]]
) -> None:
    """A ``fileKeyRef`` names one of the pod's emptyDir volumes (on disk: the agent reads the
    file, and a Memory emptyDir is a tmpfs the runtime holds)."""
    volumes = {v.name: v for v in spec.volumes}
    for group, containers in groups:
        for i, container in enumerate(containers):
            for j, env in enumerate(container.env):
                ref = env.value_from.file_key_ref if env.value_from else None
                if ref is None or not ref.volume_name:
                    continue
                where = f"{_item(_field(path, group), i)}.env[{j}].valueFrom.fileKeyRef.volumeName"
                volume = volumes.get(ref.volume_name)
                if volume is None:
                    problem = f"no volume named {ref.volume_name!r} in the pod"
                    errs.append(FieldError(where, problem))
                elif volume.empty_dir is None:
                    errs.append(
                        FieldError(where, f"volume {ref.volume_name!r} must be an emptyDir volume")
                    )
                elif volume.empty_dir is not None and volume.empty_dir.medium == "Memory":
                    errs.append(
                        FieldError(
                            where,
                            f"not supported by kubecore: volume {ref.volume_name!r} is an emptyDir"
                            " of medium Memory, a tmpfs the container runtime holds, which the"
                            " agent cannot read the env file from",
                        )
                    )


_CPU_DIVISORS = ("1m", "1")
_BYTE_DIVISORS = ("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")


def _check_divisor(errs: _Problems, path: str, resource: str, divisor: str) -> None:
    """Kubernetes accepts only these divisors (by value: ``1000m`` is ``1``)."""
    allowed = _CPU_DIVISORS if resource.endswith(".cpu") else _BYTE_DIVISORS
    try:
        value = parse_quantity(divisor)
    except ValueError as exc:
        errs.append(FieldError(path, str(exc)))
        return
    if value not in {parse_quantity(a) for a in allowed}:
        errs.append(FieldError(path, f"must be one of {', '.join(allowed)}, got {divisor!r}"))


def _check_env_from(errs: _Problems, path: str, source: m.EnvFromSource) -> None:
    refs = [
        (name, ref)
        for name, ref in (("configMapRef", source.config_map_ref), ("secretRef", source.secret_ref))
        if ref is not None
    ]
    if len(refs) != 1:
        errs.append(
            FieldError(
                path,
                "must specify one of configMapRef or secretRef"
                if not refs
                else "may not have more than one field specified at a time",
            )
        )
    for name, ref in refs:
        where = _field(_field(path, name), "name")
        if not ref.name:
            errs.append(FieldError(where, "required"))
        else:
            check_name(errs, where, ref.name, dns_subdomain_problem)
    if source.prefix and not _ENV_NAME_RE.fullmatch(source.prefix):
        errs.append(
            FieldError(
                _field(path, "prefix"),
                f"invalid environment variable prefix {source.prefix!r}: use letters, digits,"
                " '_', '-' and '.', not starting with a digit",
            )
        )


def check_container_env(errs: _Problems, path: str, container: m.Container) -> None:
    """A container's ``env`` (names unique and well formed, each source) and ``envFrom``."""
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
        if env.value_from is not None:
            _check_env_source(errs, _item(_field(path, "env"), i), env)
    for i, env_from in enumerate(container.env_from):
        _check_env_from(errs, _item(_field(path, "envFrom"), i), env_from)
