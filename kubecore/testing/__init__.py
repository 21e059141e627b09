"""Tools for testing with kubecore: ``FakeNode`` (a node in virtual time), the pytest plugin
(fixtures ``kubecore_clock`` and ``kubecore_node``), hypothesis strategies, the runtime
conformance suite.

``FakeNode`` is imported on first use, so that pytest loading the plugin (a submodule of this
package) in a project that never uses it imports no runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubecore.testing._node import FakeNode, NotReached

__all__ = ["FakeNode", "NotReached"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("kubecore.testing._node"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
