"""The pytest plugin (entry point ``pytest11: kubecore``): fixtures for tests of code that
runs pods.

* ``kubecore_clock``: the ``ManualClock`` of the test's node (virtual time);
* ``kubecore_node``: a ``FakeNode`` on that clock in ``tmp_path``, closed when the test ends.

pytest loads this module in every project where kubecore is installed, so it imports no runtime
until a test asks for ``kubecore_node``. Where plugin autoloading is off
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), load it with ``-p kubecore.testing.pytest_plugin``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kubecore._util.clock import ManualClock

if TYPE_CHECKING:
    from kubecore.testing import FakeNode


@pytest.fixture
def kubecore_clock() -> ManualClock:
    """Virtual time: it moves only when the test (or its ``kubecore_node``) moves it."""
    return ManualClock()


@pytest.fixture
def kubecore_node(tmp_path: Path, kubecore_clock: ManualClock) -> Iterator[FakeNode]:
    """A node on the in-memory runtime in ``tmp_path / "node"``, on ``kubecore_clock``."""
    from kubecore.testing import FakeNode

    with FakeNode(tmp_path / "node", clock=kubecore_clock) as node:
        yield node
