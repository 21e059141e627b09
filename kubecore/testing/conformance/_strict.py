"""Strict mode, and the report of what a run did not check.

A check the suite cannot run is skipped for one of two reasons:

* the runtime lacks an optional capability (``StreamingRuntime``, ``PortForwarder``,
  ``NodeClaims``, an event stream, adoption, its own health checker): nothing is wrong, the
  capability is *not checked*, and the report at the end of the run lists it;
* the plugin's test module did not give the suite what the check needs (a workload command such
  as ``list_processes``, a fixture such as ``unmanaged_container``): the behaviour the check
  would see (a PID namespace, mounts, the environment, the security context) goes unseen, and a
  runtime that ignores it would pass. In strict mode that is a failure that names what is
  missing; otherwise a skip.

A field the runtime refuses clearly (an ``InvalidConfig`` naming it, as the contract allows) is
listed in the report too: the run proved the refusal, not that the field works.

Strict mode is on with ``pytest --conformance-strict``, ``KUBECORE_CONFORMANCE_STRICT=1`` in the
environment, or ``STRICT = True`` on the ``RuntimeConformance`` subclass.
"""

from __future__ import annotations

import os
from typing import NoReturn

import attrs
import pytest

STRICT_OPTION = "--conformance-strict"
STRICT_ENVIRONMENT = "KUBECORE_CONFORMANCE_STRICT"
NOT_CHECKED = "not checked"
"""The prefix of the reason of a skip for an absent optional capability."""


@attrs.define
class ConformanceReport:
    """What one pytest run of the suite left unchecked: each optional capability absent (with
    the checks it skipped) and each field a runtime refused instead of applying."""

    not_checked: dict[str, set[str]] = attrs.field(factory=dict)
    """``capability: {check, ...}``."""
    refused: dict[str, set[str]] = attrs.field(factory=dict)
    """``field: {check, ...}``."""

    def lines(self) -> list[str]:
        """The report, one line a capability or field (empty when everything was checked)."""
        out = [
            f"{NOT_CHECKED}: {capability} ({_count(checks)})"
            for capability, checks in sorted(self.not_checked.items())
        ]
        out += [
            f"refused, not applied: {field} ({_count(checks)})"
            for field, checks in sorted(self.refused.items())
        ]
        return out


def _count(checks: set[str]) -> str:
    return f"{len(checks)} check" + ("s" if len(checks) != 1 else "")


REPORT_KEY = pytest.StashKey[ConformanceReport]()


def report_of(config: pytest.Config) -> ConformanceReport:
    """The run's report (made on first use)."""
    return config.stash.setdefault(REPORT_KEY, ConformanceReport())


def strict_requested(config: pytest.Config, class_says: bool) -> bool:
    """Whether the run is strict: the class, the command line or the environment says so."""
    if class_says or config.getoption(STRICT_OPTION.lstrip("-").replace("-", "_"), False):
        return True
    return os.environ.get(STRICT_ENVIRONMENT, "").lower() in ("1", "true", "yes")


@attrs.define
class Strictness:
    """The harness's word on a check it cannot run, as the mode and the report need it."""

    strict: bool
    report: ConformanceReport
    check: str
    """The check's pytest node id."""

    def not_checked(self, capability: str, reason: str) -> NoReturn:
        """Skip: the runtime lacks the optional ``capability`` (listed in the report)."""
        __tracebackhide__ = True  # the skip is reported at the check, not here
        self.report.not_checked.setdefault(capability, set()).add(self.check)
        pytest.skip(f"{NOT_CHECKED} ({capability}): {reason}")

    def unseen(self, reason: str) -> NoReturn:
        """Skip, or in strict mode fail: ``reason`` says what the test module did not give the
        suite, so the behaviour the check would see goes unseen."""
        __tracebackhide__ = True
        if self.strict:
            pytest.fail(
                f"strict conformance: {reason}, so a runtime that ignores what this check sees"
                " would pass; give the suite what it needs (see kubecore.testing.conformance)",
                pytrace=False,
            )
        pytest.skip(reason)

    def refused(self, field: str) -> None:
        """The runtime refused ``field`` clearly instead of applying it (listed in the
        report)."""
        self.report.refused.setdefault(field, set()).add(self.check)
