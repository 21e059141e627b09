"""The fixtures every check of the suite is given, and those a plugin provides or overrides."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kubecore._plugins.registry import RuntimeBundle
from kubecore._util.clock import Clock, SystemClock
from kubecore.testing.conformance._harness import Harness
from kubecore.testing.conformance._strict import Strictness, report_of, strict_requested
from kubecore.testing.conformance._workloads import SecurityReport, Workloads


class PluginFixtures:
    """The fixtures a plugin provides (``bundle``, ``workloads``) or may override, and the
    ``harness`` every check is given."""

    STOP_TIMEOUT = 10.0
    STRICT = False
    """True: always strict (see ``kubecore.testing.conformance._strict``), whatever the
    command line says."""

    # -- fixtures a plugin provides or may override -----------------------------------------

    @pytest.fixture
    def bundle(self) -> RuntimeBundle:
        pytest.fail(
            "RuntimeConformance needs a `bundle` fixture returning the RuntimeBundle under test",
            pytrace=False,
        )

    @pytest.fixture
    def workloads(self) -> Workloads:
        pytest.fail(
            "RuntimeConformance needs a `workloads` fixture (see busybox_workloads)",
            pytrace=False,
        )

    @pytest.fixture
    def clock(self) -> Clock:
        return SystemClock()

    @pytest.fixture
    def unmanaged_container(self) -> Callable[[], str] | None:
        return None

    @pytest.fixture
    def reopen(self) -> Callable[[], RuntimeBundle] | None:
        return None

    @pytest.fixture
    def observe_security(self) -> Callable[[Harness, str], SecurityReport | None] | None:
        """Reads a running container's ``SecurityReport`` (None: not yet); the default (None)
        reads what the ``report_security`` workload printed."""
        return None

    @pytest.fixture
    def harness(
        self,
        request: pytest.FixtureRequest,
        bundle: RuntimeBundle,
        workloads: Workloads,
        clock: Clock,
        reopen: Callable[[], RuntimeBundle] | None,
    ) -> Iterator[Harness]:
        # ``reopen`` is set up first so that what it opened is closed after the cleanup.
        config = request.config
        strict = strict_requested(config, self.STRICT)
        strictness = Strictness(strict, report_of(config), request.node.nodeid)
        harness = Harness(bundle, workloads, clock, strictness)
        harness.ensure_image(workloads.image)
        yield harness
        harness.cleanup()
