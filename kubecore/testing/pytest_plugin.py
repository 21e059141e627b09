"""The pytest plugin (entry point ``pytest11: kubecore``): fixtures for tests of code that
runs pods.

* ``kubecore_clock``: the ``ManualClock`` of the test's node (virtual time);
* ``kubecore_node``: a ``FakeNode`` on that clock in ``tmp_path``, closed when the test ends.

For the runtime conformance suite (``kubecore.testing.conformance``) it adds the option
``--conformance-strict`` (fail on the checks a runtime skipped but could have run) and, at the end
of a run of the suite, the report of what was not checked: each optional capability the runtime
lacks and each field it refused.

pytest loads this module in every project where kubecore is installed, so it imports no runtime
until a test asks for ``kubecore_node``. Where plugin autoloading is off
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), load it with ``-p kubecore.testing.pytest_plugin``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kubecore._util.clock import ManualClock

if TYPE_CHECKING:
    from kubecore.testing import FakeNode


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--conformance-strict``, for the runtime conformance suite."""
    parser.getgroup("kubecore").addoption(
        "--conformance-strict",
        action="store_true",
        default=False,
        help="kubecore conformance suite: fail on a check skipped for want of a workload or a"
        " fixture (not for an optional capability the runtime lacks)",
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The conformance report: what the run did not check (only after a run of the suite)."""
    if "kubecore.testing.conformance._strict" not in sys.modules:
        return  # the suite did not run: nothing to import, nothing to say
    from kubecore.testing.conformance._strict import REPORT_KEY

    report = terminalreporter.config.stash.get(REPORT_KEY, None)
    lines = report.lines() if report is not None else []
    if lines:
        terminalreporter.write_sep("-", "kubecore conformance: not checked")
        for line in lines:
            terminalreporter.write_line(line)


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
