"""The manifest corpus: every ``tests/corpus/*.yaml`` validates (``kubecore validate`` as a
subprocess, and in-process) and runs on the in-memory runtime, in virtual time, to what its
``# expect:`` lines say Kubernetes gives it.

An expectation line (one per pod of the file)::

    # expect: <pod-name> <Phase> [<container>=running|waiting:<Reason>|terminated:<Reason>] ...

``<pod-name>`` is ``name`` (namespace ``default``) or ``namespace/name``; containers are app or
init containers, by name; a container not listed is not checked. A file whose pods Kubernetes runs
only in a namespace of a looser Pod Security level says so (``# pod-security: privileged``), and
its node is given that level. The node runs until every
expectation of the file holds at once, for at most ``DEADLINE`` virtual seconds.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from kubecore import KubeletConfig, Pod
from kubecore._cli.basic import validate_paths
from kubecore.testing import FakeNode, NotReached
from kubecore.testing._node import pod_key
from kubecore.v1 import ContainerState, ContainerStatus, PodStatus
from tests.paths import CORPUS

FILES = sorted(CORPUS.glob("*.yaml"))
DEADLINE = 600.0
"""Virtual seconds a file's pods get to reach their expectations."""

_EXPECT = re.compile(r"^#\s*expect:\s*(?P<rest>.*)$")
_POD_SECURITY = re.compile(r"^#\s*pod-security:\s*(?P<level>\w+)\s*$", re.MULTILINE)


def pod_security_level(text: str) -> str:
    """The Pod Security level a corpus file's pods need (``baseline``, the node's default, when
    the file says none)."""
    found = _POD_SECURITY.search(text)
    return found.group("level") if found else "baseline"


_CONTAINER = re.compile(
    r"^(?P<name>[^=\s]+)=(?P<state>running|waiting|terminated)(?::(?P<reason>\S+))?$"
)
_PHASES = frozenset({"Pending", "Running", "Succeeded", "Failed", "Unknown"})


@attrs.frozen
class ContainerExpectation:
    name: str
    state: str
    reason: str = ""


@attrs.frozen
class PodExpectation:
    pod: str
    phase: str
    containers: tuple[ContainerExpectation, ...] = ()


def parse_expectations(text: str) -> list[PodExpectation]:
    """The ``# expect:`` lines of a corpus file (``ValueError`` for a malformed one)."""
    found: list[PodExpectation] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _EXPECT.match(line.strip())
        if match is None:
            continue
        words = match["rest"].split()
        if len(words) < 2 or words[1] not in _PHASES:
            raise ValueError(f"line {number}: expected '# expect: <pod> <Phase> ...': {line!r}")
        containers = []
        for word in words[2:]:
            parsed = _CONTAINER.match(word)
            if parsed is None:
                raise ValueError(
                    f"line {number}: {word!r} is not <container>=running|waiting:<Reason>|"
                    "terminated:<Reason>"
                )
            containers.append(
                ContainerExpectation(parsed["name"], parsed["state"], parsed["reason"] or "")
            )
        found.append(PodExpectation(words[0], words[1], tuple(containers)))
    return found


def _state_of(state: ContainerState) -> tuple[str, str]:
    if state.running is not None:
        return "running", ""
    if state.waiting is not None:
        return "waiting", state.waiting.reason
    if state.terminated is not None:
        return "terminated", state.terminated.reason
    return "unknown", ""


def unmet(expected: PodExpectation, status: PodStatus) -> list[str]:
    """What of ``expected`` the status does not show (empty when all of it holds)."""
    problems = []
    if status.phase != expected.phase:
        problems.append(f"phase {status.phase}, expected {expected.phase}")
    statuses: dict[str, ContainerStatus] = {
        cs.name: cs for cs in status.init_container_statuses + status.container_statuses
    }
    for want in expected.containers:
        cs = statuses.get(want.name)
        if cs is None:
            problems.append(f"container {want.name}: no status")
            continue
        state, reason = _state_of(cs.state)
        if state != want.state or (want.reason and reason != want.reason):
            shown = f"{state}:{reason}" if reason else state
            wanted = f"{want.state}:{want.reason}" if want.reason else want.state
            problems.append(f"container {want.name}: {shown}, expected {wanted}")
    return problems


def test_the_corpus_is_not_empty() -> None:
    assert FILES, f"no manifests in {CORPUS}"


def test_kubecore_validate_accepts_every_corpus_file() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kubecore", "validate", *map(str, FILES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_corpus_file(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    problems, _, pod_count = validate_paths([str(path)])
    assert problems == []
    expectations = parse_expectations(text)
    assert expectations, f"{path.name}: no '# expect:' line"
    config = KubeletConfig(pod_security=pod_security_level(text))
    with FakeNode(tmp_path, config=config) as node:
        # ConfigMap and Secret documents may sit beside the pods: only pods are expected.
        pods = [p for p in node.apply(text) if isinstance(p, Pod)]
        names = {"/".join(pod_key(p)) for p in pods}
        expected = {"/".join(pod_key(e.pod)) for e in expectations}
        assert expected == names, "one '# expect:' line per pod of the file"
        assert pod_count == len(pods)

        def report() -> list[str]:
            return [
                f"{e.pod}: {problem}"
                for e in expectations
                for problem in unmet(e, node.status(e.pod))
            ]

        try:
            node.run_until(lambda: not report(), timeout=DEADLINE)
        except NotReached:
            pytest.fail("\n".join([*report(), "", node.describe()]))


# -- the runner's own reading ---------------------------------------------------------------------


def test_expectations_are_read_with_their_containers() -> None:
    text = (
        "# expect: web Running app=running init=terminated:Completed\n"
        "# expect: jobs/once Failed main=waiting:CrashLoopBackOff\n"
        "apiVersion: v1\n"
    )
    assert parse_expectations(text) == [
        PodExpectation(
            "web",
            "Running",
            (
                ContainerExpectation("app", "running"),
                ContainerExpectation("init", "terminated", "Completed"),
            ),
        ),
        PodExpectation(
            "jobs/once", "Failed", (ContainerExpectation("main", "waiting", "CrashLoopBackOff"),)
        ),
    ]


@pytest.mark.parametrize(
    "line", ["# expect: web", "# expect: web Runing", "# expect: web Running app=asleep"]
)
def test_a_malformed_expectation_is_refused(line: str) -> None:
    with pytest.raises(ValueError, match="line 1"):
        parse_expectations(line)


def test_unmet_names_what_differs() -> None:
    status = PodStatus(
        phase="Pending",
        container_statuses=(
            ContainerStatus(
                name="app",
                image="x",
                state=ContainerState(),
            ),
        ),
    )
    expectation = PodExpectation(
        "p",
        "Running",
        (ContainerExpectation("app", "running"), ContainerExpectation("gone", "running")),
    )
    assert unmet(expectation, status) == [
        "phase Pending, expected Running",
        "container app: unknown, expected running",
        "container gone: no status",
    ]


def test_the_corpus_covers_the_volume_sources() -> None:
    text = "\n".join(p.read_text() for p in CORPUS.glob("volumes-*.yaml"))
    for field in (
        "emptyDir",
        "medium: Memory",
        "sizeLimit",
        "hostPath",
        "type: Directory",
        "CharDevice",
        "configMap",
        "secret",
        "defaultMode",
        "optional",
        "downwardAPI",
        "resourceFieldRef",
        "projected",
        "subPath",
        "persistentVolumeClaim",
    ):
        assert field in text, field
