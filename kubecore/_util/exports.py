"""Show public names where users import them from, as httpx does."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable, Mapping


def publish(names: Iterable[str], namespace: Mapping[str, object], module: str) -> None:
    """Set ``__module__`` to ``module`` on each class and function of ``names`` that a private
    module defines, so reprs, docs and pickles name the public home. A name the top level
    exports too (``load_pods_from_file``) has ``kubecore`` as its home, whichever module is
    imported first (every name is imported on first use)."""
    import kubecore  # initialised before any of its modules runs this

    top_level = frozenset(kubecore.__all__)
    for name in names:
        value = namespace[name]
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        if not value.__module__.startswith("kubecore._"):
            continue
        if inspect.isclass(value):
            _resolve_own_annotations(value)
        value.__module__ = "kubecore" if name in top_level else module


def _resolve_own_annotations(cls: type) -> None:
    """Evaluate the class's string annotations while ``__module__`` still names the module they
    were written in: ``typing.get_type_hints`` looks names up in ``sys.modules[cls.__module__]``,
    which after publishing is a namespace that lacks private aliases such as ``PullPolicy``.
    A name imported only for type checking cannot be evaluated: those annotations stay strings
    (tests/test_public_api.py reports the class)."""
    own = inspect.get_annotations(cls)
    if not own:
        return
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except NameError:
        return
    cls.__annotations__ = {name: hints[name] for name in own}
