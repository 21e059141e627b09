"""Tools for testing with kubecore: ``FakeNode`` (a node in virtual time) and ``ManualClock`` (the
time it runs on), the pytest plugin (fixtures ``kubecore_clock`` and ``kubecore_node``),
hypothesis strategies (``kubecore.testing.strategies``), the runtime conformance suite
(``kubecore.testing.conformance``).

Every name is imported on first use, so that pytest loading the plugin (a submodule of this
package) in a project that never uses it imports no runtime.
"""

import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore._util.clock import (
        ManualClock as ManualClock,
    )
    from kubecore.testing._node import (
        FakeNode as FakeNode,
    )
    from kubecore.testing._node import (
        NotReached as NotReached,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)
