"""The rules about an object's metadata: its name, namespace, labels and annotations."""

from __future__ import annotations

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _field, _item, _Problems
from kubecore._manifest.validation.names import (
    QUALIFIED_NAME_RE,
    check_name,
    dns_label_problem,
    dns_subdomain_problem,
    qualified_name_problem,
)
from kubecore._model import v1 as m


def check_metadata(errs: _Problems, path: str, meta: m.ObjectMeta) -> None:
    check_name(errs, _field(path, "name"), meta.name, dns_subdomain_problem)
    check_name(errs, _field(path, "namespace"), meta.namespace, dns_label_problem)
    for key, value in meta.labels.items():
        where = _item(_field(path, "labels"), key)
        problem = qualified_name_problem(key)
        if problem:
            errs.append(FieldError(where, problem))
        if value and (len(value) > 63 or not QUALIFIED_NAME_RE.fullmatch(value)):
            errs.append(
                FieldError(
                    where,
                    f"invalid label value {value!r}: must be at most 63 characters of letters, "
                    "digits, '-', '_' or '.', starting and ending with a letter or digit",
                )
            )
    for key in meta.annotations:
        problem = qualified_name_problem(key)
        if problem:
            errs.append(FieldError(_item(_field(path, "annotations"), key), problem))
