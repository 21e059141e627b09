"""What a request handler reads and answers, found in its source: the query parameters it reads
and the HTTP status codes it can answer, in the function and in the functions it hands the query
(or the request) to, followed through the modules of kubecore that define them."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterator
from types import FunctionType, ModuleType
from typing import Any

import attrs

QUERY_READERS = frozenset({"get", "param", "flag", "number"})
"""Methods of a query or a request whose first argument is a parameter's name."""
SELF_READERS = frozenset({"param", "flag", "number"})
"""The request's own readers, called on ``self`` inside it."""
ERROR_MODULES = frozenset({"kubecore._apimachinery.rules", "kubecore._api.errors"})
"""Where the errors a handler raises are made: every call into them is followed."""
CARRIERS = frozenset({"query", "request", "options"})
"""Names of the values that carry the query: a call given one of them is followed."""
MAX_DEPTH = 4


@attrs.define
class Found:
    parameters: set[str] = attrs.field(factory=set)
    statuses: set[int] = attrs.field(factory=set)
    calls: set[str] = attrs.field(factory=set)
    """Qualified names of every kubecore function reached."""
    called: set[str] = attrs.field(factory=set)
    """The names of every function those call (``require_bearer``, ...)."""


def _carries(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in CARRIERS
    if isinstance(node, ast.Attribute):
        return node.attr in CARRIERS or _carries(node.value)
    return False


def _function_of(node: ast.expr, namespace: dict[str, Any]) -> Callable[..., Any] | None:
    if isinstance(node, ast.Name):
        found = namespace.get(node.id)
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        owner = namespace.get(node.value.id)
        found = getattr(owner, node.attr, None) if owner is not None else None
    else:
        return None
    if isinstance(found, FunctionType) and found.__module__.startswith("kubecore"):
        return found
    return None


def _strings(args: list[ast.expr]) -> Iterator[str]:
    for arg in args:
        if (
            isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
            and arg.value.isidentifier()
        ):
            yield arg.value


def _status_codes(tree: ast.AST) -> Iterator[int]:
    from http import HTTPStatus

    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "HTTPStatus"
            and node.attr in HTTPStatus.__members__
        ):
            yield HTTPStatus[node.attr].value


def _reads_itself(func: ast.Attribute) -> bool:
    """``query.get``, ``request.param``, or the request's own ``self.param``."""
    if func.attr in QUERY_READERS and _carries(func.value):
        return True
    on_self = isinstance(func.value, ast.Name) and func.value.id == "self"
    return on_self and func.attr in SELF_READERS


def _query_names(call: ast.Call) -> Iterator[str]:
    """``query.get("x")``, ``request.param("x", "default")``: the first argument;
    ``query_value(query, "x")``, ``_flag(query, "stdin", "input")``: every string argument."""
    func = call.func
    if isinstance(func, ast.Attribute) and _reads_itself(func):
        yield from _strings(call.args[:1])
    elif call.args and _carries(call.args[0]):
        yield from _strings(call.args[1:])


def _membership(node: ast.Compare) -> Iterator[str]:
    if any(isinstance(op, ast.In | ast.NotIn) for op in node.ops) and any(
        _carries(right) for right in node.comparators
    ):
        yield from _strings([node.left])


def scan(function: Callable[..., Any], found: Found | None = None, depth: int = 0) -> Found:
    """The parameters and statuses of ``function`` and of what it hands the query to."""
    found = found if found is not None else Found()
    qualified = f"{function.__module__}.{function.__qualname__}"
    if qualified in found.calls or depth > MAX_DEPTH:
        return found
    found.calls.add(qualified)
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    found.statuses.update(_status_codes(tree))
    namespace = function.__globals__
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            found.parameters.update(_membership(node))
        if not isinstance(node, ast.Call):
            continue
        found.parameters.update(_query_names(node))
        func = node.func
        found.called.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
        callee = _function_of(node.func, namespace)
        if callee is not None and (
            any(_carries(arg) for arg in node.args)
            or any(_carries(k.value) for k in node.keywords)
            or _is_handler_helper(node, callee)
            or callee.__module__ in ERROR_MODULES
        ):
            scan(callee, found, depth + 1)
    return found


def _is_handler_helper(call: ast.Call, callee: Callable[..., Any]) -> bool:
    """A helper given the request's handler (it may answer for it) in the same room."""
    handed = any(
        isinstance(arg, ast.Name) and arg.id in ("handler", "exchange") for arg in call.args
    )
    return handed and callee.__module__.rsplit(".", 1)[0] in _ROOMS


_ROOMS = frozenset({"kubecore._http", "kubecore._api", "kubecore._streaming"})


def module_statuses(module: ModuleType) -> set[int]:
    """Every status code a module's source names."""
    return set(_status_codes(ast.parse(inspect.getsource(module))))


def loaded(name: str) -> ModuleType:
    __import__(name)
    return sys.modules[name]
