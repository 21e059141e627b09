"""Names and the small value rules every part of a pod shares: DNS labels and subdomains,
qualified names and label values, config keys, relative paths, port numbers and names,
enumerations."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _Problems

_DNS_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
QUALIFIED_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PORT_NAME_RE = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")


def one_of(value: str, choices: Sequence[str]) -> str:
    return f"unsupported value {value!r}: must be one of {', '.join(choices)}"


def check_enum(errs: _Problems, path: str, value: str, choices: Sequence[str]) -> None:
    if value == "":
        errs.append(FieldError(path, "required"))
    elif value not in choices:
        errs.append(FieldError(path, one_of(value, choices)))


def dns_label_problem(value: str) -> str | None:
    if len(value) > 63:
        return f"must be no more than 63 characters, got {len(value)}"
    if not _DNS_LABEL_RE.fullmatch(value):
        return (
            f"invalid name {value!r}: must be a DNS-1123 label (lowercase letters, digits "
            "and '-', starting and ending with a letter or digit)"
        )
    return None


def dns_subdomain_problem(value: str) -> str | None:
    if len(value) > 253:
        return f"must be no more than 253 characters, got {len(value)}"
    if not _DNS_SUBDOMAIN_RE.fullmatch(value):
        return (
            f"invalid name {value!r}: must be a DNS-1123 subdomain (lowercase letters, digits, "
            "'-' and '.', starting and ending with a letter or digit)"
        )
    return None


def check_name(errs: _Problems, path: str, value: str, rule: Callable[[str], str | None]) -> None:
    if value == "":
        errs.append(FieldError(path, "required"))
        return
    problem = rule(value)
    if problem:
        errs.append(FieldError(path, problem))


def qualified_name_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return f"invalid key {key!r}: the prefix before '/' must not be empty"
        problem = dns_subdomain_problem(prefix)
        if problem:
            return f"invalid key prefix {prefix!r}: must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not QUALIFIED_NAME_RE.fullmatch(name):
        return (
            f"invalid key {key!r}: the name must be 1-63 characters of letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit"
        )
    return None


def check_port_number(errs: _Problems, path: str, value: int, low: int = 1) -> None:
    if not low <= value <= 65535:
        errs.append(FieldError(path, f"must be {low}-65535, got {value}"))


def port_name_problem(name: str) -> str | None:
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


_KEY_RE = re.compile(r"[-._a-zA-Z0-9]+")


def config_key_problem(key: str) -> str | None:
    """Kubernetes' rule for a ConfigMap or Secret key (and a file name in their volumes)."""
    if not key:
        return "required"
    if len(key) > 253 or not _KEY_RE.fullmatch(key) or key in (".", "..") or key.startswith(".."):
        return (
            f"invalid key {key!r}: must be at most 253 characters of letters, digits,"
            " '-', '_' or '.', and not '.', '..' or start with '..'"
        )
    return None


def relative_path_problem(value: str) -> str | None:
    """Kubernetes' rule for a file path inside a volume (``items[].path``, ``subPath``, and
    ``subPathExpr`` as written)."""
    if value.startswith("/"):
        return f"must be a relative path, got {value!r}"
    if ".." in value.split("/"):
        return f"must not contain '..', got {value!r}"
    return None


def _label_value_problem(value: str) -> str | None:
    if value and (len(value) > 63 or not QUALIFIED_NAME_RE.fullmatch(value)):
        return (
            f"invalid label value {value!r}: must be at most 63 characters of letters, "
            "digits, '-', '_' or '.', starting and ending with a letter or digit"
        )
    return None


def label_problem(key: str, value: str) -> str | None:
    """What is wrong with a label (None when it is valid)."""
    if key == "":
        return "the key must not be empty"
    return qualified_name_problem(key) or _label_value_problem(value)


def check_label_key(errs: _Problems, path: str, key: str) -> None:
    if key == "":
        errs.append(FieldError(path, "required"))
    elif problem := qualified_name_problem(key):
        errs.append(FieldError(path, problem))


def check_label_value(errs: _Problems, path: str, value: str) -> None:
    if problem := _label_value_problem(value):
        errs.append(FieldError(path, problem))
