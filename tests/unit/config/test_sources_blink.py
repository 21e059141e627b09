"""Manifest sources that blink never kill pods.

The rule: no source state that is unknown (unreadable, unparsable, not seen since start, timed
out, half-written) is ever read as "these pods are gone". Each test runs a source feeding a
Kubelet on the in-memory runtime, in virtual time, and checks that no container was stopped or
removed and that the pods' ``emptyDir`` data is still there; the table at the end runs every
source kind through every failure, across a restart (a new source and a new Kubelet on the same
root directory and the same runtime).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import kubecore._config.file as file_source_module
from kubecore._config.base import PodSource
from kubecore._config.file import FileSource
from kubecore._config.http import FetchResult, HTTPSource
from kubecore._config.listing import DirectoryIdentity
from kubecore._config.memory import LAST_GOOD_DIR
from kubecore._config.podconfig import PodConfig
from kubecore._config.updates import Operation, PodUpdate
from kubecore._contract.labels import POD_NAME_LABEL
from kubecore._contract.values import RuntimeState
from tests.agent.support import Node, make_node
from tests.unit.config.support import first_update, replace, write

NODE = "node-a"


def pod_doc(name: str, image: str = "busybox:1.36") -> str:
    return (
        "apiVersion: v1\nkind: Pod\n"
        f"metadata:\n  name: {name}\n"
        "spec:\n  containers:\n  - name: main\n"
        f"    image: {image}\n"
        '    command: ["server"]\n'
        "    volumeMounts:\n    - name: cache\n      mountPath: /cache\n"
        "  volumes:\n  - name: cache\n    emptyDir: {}\n"
    )


TWO = pod_doc("alpha") + "---\n" + pod_doc("beta")
"""The file (or body) under test: two pods."""
OTHER = pod_doc("gamma")
"""A second file of the directory."""


class Denied:
    """Paths whose reading fails (``PermissionError``, or ``TimeoutError`` as a hung network
    mount gives): the tests run as root, where ``chmod 000`` denies nothing."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: dict[str, type[OSError]] = {}
        read, listing = file_source_module.read_manifest_bytes, file_source_module.list_root

        def denied_read(path: str | os.PathLike[str]) -> bytes:
            self._check(path)
            return read(path)

        def denied_list(path: Path) -> list[Path]:
            self._check(path)
            return listing(path)

        monkeypatch.setattr(file_source_module, "read_manifest_bytes", denied_read)
        monkeypatch.setattr(file_source_module, "list_root", denied_list)

    def _check(self, path: str | os.PathLike[str]) -> None:
        error = self.paths.get(os.path.abspath(path))
        if error is not None:
            raise error(13 if error is PermissionError else 110, "injected", str(path))

    def deny(self, path: Path, error: type[OSError] = PermissionError) -> None:
        self.paths[os.path.abspath(path)] = error

    def allow(self, path: Path) -> None:
        self.paths.pop(os.path.abspath(path), None)


@pytest.fixture
def denied(monkeypatch: pytest.MonkeyPatch) -> Denied:
    return Denied(monkeypatch)


class Server:
    """What the manifest URL answers: a body, a status or an exception."""

    def __init__(self, body: str) -> None:
        self.answer: FetchResult | Exception = FetchResult(200, body.encode())
        self.calls = 0

    def serve(self, body: str) -> None:
        self.answer = FetchResult(200, body.encode())

    def __call__(self, url: str, headers: dict[str, str], timeout: float) -> FetchResult:
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@attrs.define
class Agent:
    """A node, a source feeding it, and what must survive."""

    node: Node
    make_source: Callable[[], PodSource]
    source: PodSource
    containers: set[str] = attrs.Factory(set)
    precious: dict[Path, str] = attrs.Factory(dict)
    updates: list[PodUpdate] = attrs.Factory(list)

    @classmethod
    def start(cls, tmp: Path, make_source: Callable[[], PodSource]) -> Agent:
        node = make_node(tmp / "node")
        source = make_source()
        node.kubelet.register_source(source.name)
        return cls(node, make_source, source)

    @property
    def root(self) -> Path:
        return Path(self.node.kubelet.root_dir)

    def run(self, seconds: float, step: float = 0.25) -> None:
        """Poll the source and sync the agent for ``seconds`` of virtual time."""
        end = self.node.clock.monotonic() + seconds
        while self.node.clock.monotonic() < end:
            while (update := self.source.poll(self.node.clock.monotonic())) is not None:
                self.updates.append(update)
                self.node.kubelet.update(update)
            self.node.kubelet.sync()
            self.node.clock.advance(step)

    def settle_in(self, names: list[str]) -> None:
        """Run until ``names`` run, then leave a file in each pod's ``emptyDir``."""
        self.run(3.0)
        assert self.running_pods() == sorted(names)
        self.containers = self.running_ids()
        for pod in self.node.kubelet.pods():
            cache = self.root / "pods" / pod.uid / "volumes" / "kubernetes.io~empty-dir" / "cache"
            assert cache.is_dir()
            (cache / "precious").write_text(pod.metadata.name)
            self.precious[cache / "precious"] = pod.metadata.name

    def restart(self) -> None:
        """A new agent process: a new source and Kubelet on the same root dir and runtime."""
        self.node.restart_kubelet()
        self.source = self.make_source()
        self.node.kubelet.register_source(self.source.name)

    def running_ids(self) -> set[str]:
        return {c.id for c in self.node.runtime.find_containers(state=RuntimeState.RUNNING)}

    def running_pods(self) -> list[str]:
        return sorted(
            {
                c.labels.get(POD_NAME_LABEL, "")
                for c in self.node.runtime.find_containers(state=RuntimeState.RUNNING)
            }
        )

    def assert_nothing_killed(self) -> None:
        runtime = self.node.runtime
        ops = ("stop_container", "remove_container", "stop_sandbox", "remove_sandbox")
        stopped = {op: runtime.call_count(op) for op in ops}
        assert stopped == dict.fromkeys(stopped, 0), stopped
        assert self.running_ids() == self.containers
        for path, text in self.precious.items():
            assert path.read_text() == text, path

    def empty_sets(self) -> list[PodUpdate]:
        return [u for u in self.updates if u.op is Operation.SET and not u.pods and not u.reason]


def replace_by_an_empty_directory(directory: Path) -> None:
    """Another directory (another inode), empty, where ``directory`` was: what a mount point not
    mounted looks like, short of mounting."""
    directory.rename(directory.with_name(directory.name + ".mounted"))
    directory.mkdir()


def put_the_directory_back(directory: Path) -> None:
    directory.rmdir()
    directory.with_name(directory.name + ".mounted").rename(directory)


def file_source(root: Path, state: Path | None, **kw: object) -> Callable[[], FileSource]:
    kw.setdefault("interval", 1.0)
    kw.setdefault("watch", False)
    kw.setdefault("may_be_missing", True)
    return lambda: FileSource(root, state_dir=state, **kw)  # type: ignore[arg-type]


def state_dir(tmp: Path) -> Path:
    return tmp / "node" / "root" / LAST_GOOD_DIR


# --- item 2: a path unreadable at start-up ---------------------------------------------------


@pytest.mark.parametrize("settle", [0.5, 5.0])
def test_a_path_unreadable_at_start_kills_nothing_once_it_can_be_read(
    tmp_path: Path, settle: float
) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    agent = Agent.start(tmp_path, file_source(pods, None, settle=settle, may_be_missing=False))
    agent.settle_in(["alpha", "beta"])
    # the agent restarts while the path is a dangling symlink (a mount not there yet)
    pods.rename(tmp_path / "mounted")
    pods.symlink_to(tmp_path / "not-mounted-yet")
    agent.restart()
    agent.run(4.0)
    assert agent.updates[-1].op is Operation.NOT_READY
    pods.unlink()
    pods.symlink_to(tmp_path / "mounted")  # the mount arrives
    agent.run(2 * settle + 2.0)
    agent.assert_nothing_killed()
    assert agent.empty_sets() == []
    last = agent.updates[-1]
    assert last.op is Operation.SET and sorted(p.metadata.name for p in last.pods) == [
        "alpha",
        "beta",
    ]


def test_the_first_good_scan_after_a_not_ready_start_reads_everything_at_once(
    tmp_path: Path,
) -> None:
    pods = tmp_path / "pods"
    pods.symlink_to(tmp_path / "later")
    source = FileSource(pods, interval=1.0, settle=5.0, watch=False)
    down = source.poll(0.0)
    assert down is not None and down.op is Operation.NOT_READY
    (tmp_path / "later").mkdir()
    write(tmp_path / "later" / "a.yaml", TWO)
    up = source.poll(1.0)  # no settle: nothing of this source has been sent yet
    assert up is not None and up.op is Operation.SET
    assert sorted(p.metadata.name for p in up.pods) == ["alpha", "beta"]


# --- item 3: a restart while a file is bad ---------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    ["half-written", "unreadable", "empty", "malformed"],
)
def test_a_restart_while_a_file_is_bad_keeps_its_pods(
    tmp_path: Path, denied: Denied, bad: str
) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    write(pods / "b.yaml", OTHER)
    agent = Agent.start(tmp_path, file_source(pods, state_dir(tmp_path)))
    agent.settle_in(["alpha", "beta", "gamma"])
    if bad == "half-written":
        write(pods / "a.yaml", TWO[: TWO.index("---")])
    elif bad == "unreadable":
        denied.deny(pods / "a.yaml")
    elif bad == "empty":
        write(pods / "a.yaml", "")
    else:
        write(pods / "a.yaml", MALFORMED)
    agent.restart()
    agent.run(2.0)
    assert sorted(p.metadata.name for p in agent.node.kubelet.pods()) == ["alpha", "beta", "gamma"]
    denied.allow(pods / "a.yaml")
    write(pods / "a.yaml", TWO)
    agent.run(3.0)
    agent.assert_nothing_killed()


def test_the_memory_is_private_and_holds_no_secret_in_its_names(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: hunter2\n"
    write(pods / "a.yaml", TWO + "---\n" + secret)
    state = tmp_path / "state"
    source = FileSource(pods, state_dir=state, watch=False)
    assert source.poll(0.0) is not None
    assert (state.stat().st_mode & 0o777) == 0o700
    records = sorted(state.iterdir())
    assert records and all((r.stat().st_mode & 0o777) == 0o600 for r in records)
    assert not any("hunter2" in r.name or "a.yaml" in r.name for r in records)


def test_a_file_removed_while_the_agent_was_down_removes_its_pods_after_the_loss_settle(
    tmp_path: Path,
) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    write(pods / "b.yaml", OTHER)
    state = tmp_path / "state"
    first = FileSource(pods, state_dir=state, watch=False, interval=1.0)
    assert first.poll(0.0) is not None
    (pods / "a.yaml").unlink()  # a real removal, while the agent is down
    second = FileSource(pods, state_dir=state, watch=False, interval=1.0)
    start = second.poll(0.0)
    assert start is not None and len(start.pods) == 3  # the last known state, for now
    assert second.poll(4.0) is None
    gone = second.poll(5.0)
    assert gone is not None and [p.metadata.name for p in gone.pods] == ["gamma"]
    assert [r for r in state.iterdir() if r.name.startswith("file-")] != []
    third = FileSource(pods, state_dir=state, watch=False, interval=1.0)
    again = third.poll(0.0)  # the removal is remembered too
    assert again is not None and [p.metadata.name for p in again.pods] == ["gamma"]


# --- item 4: a slow writer -------------------------------------------------------------------


def test_a_writer_pausing_longer_than_the_settle_kills_nothing(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    agent = Agent.start(tmp_path, file_source(pods, state_dir(tmp_path)))
    agent.settle_in(["alpha", "beta"])
    write(pods / "a.yaml", TWO[: TWO.index("---")])  # the same content, rewritten in place
    agent.run(2.0)  # the writer pauses four times the settle
    write(pods / "a.yaml", TWO)
    agent.run(6.0)
    agent.assert_nothing_killed()


def test_a_text_cut_mid_line_is_never_acted_on_however_long_it_stays(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    source = FileSource(pods, interval=1.0, settle=0.5, watch=False)
    first = source.poll(0.0)
    assert first is not None
    cut = TWO[: TWO.rindex("busybox:1.36") + len("busy")]  # beta's image would read "busy"
    write(pods / "a.yaml", cut)
    assert [source.poll(float(t)) for t in range(1, 60, 3)] == [None] * 20
    assert source.pods == first.pods
    assert "ends mid-line" in str(source.problems[0])
    write(pods / "a.yaml", TWO)  # the writer finishes: the same pods, nothing to send
    assert [source.poll(61.0), source.poll(62.0)] == [None, None]  # read once it settled
    assert source.problems == ()


def test_a_text_cut_at_a_line_end_waits_out_the_in_place_settle(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    source = FileSource(pods, interval=1.0, settle=0.5, watch=False)
    assert source.poll(0.0) is not None
    write(pods / "a.yaml", TWO[: TWO.index("---")])  # the last document removed, in place
    assert [source.poll(float(t)) for t in range(1, 30)] == [None] * 29
    changed = source.poll(31.0)  # it stayed so for the in-place settle: what the user wants
    assert changed is not None
    assert [p.metadata.name for p in changed.pods] == ["alpha"]


def test_a_restart_finding_a_file_cut_mid_line_keeps_its_pods(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    agent = Agent.start(tmp_path, file_source(pods, state_dir(tmp_path)))
    agent.settle_in(["alpha", "beta"])
    write(pods / "a.yaml", TWO[:200])  # a writer stopped mid-file, then the agent restarted
    agent.restart()
    agent.run(30.0)
    assert agent.running_pods() == ["alpha", "beta"]
    write(pods / "a.yaml", TWO)
    agent.run(6.0)
    agent.assert_nothing_killed()


@pytest.mark.parametrize("how", ["in place", "by a rename"])
def test_a_user_removing_a_pod_sees_it_go_once_the_write_is_whole(tmp_path: Path, how: str) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    source = FileSource(pods, interval=1.0, settle=0.5, watch=False)
    assert source.poll(0.0) is not None
    (write if how == "in place" else replace)(pods / "a.yaml", pod_doc("beta"))  # alpha removed
    when, update = first_update(source, 1.0, 40.0)
    assert update is not None and [p.metadata.name for p in update.pods] == ["beta"]
    if how == "in place":  # maybe not whole: it must stay so for the in-place settle
        assert 30.0 <= when <= 32.0
    else:  # a rename is whole: only the settle
        assert when <= 2.0


def test_a_file_that_changes_while_it_is_read_is_not_a_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    read = file_source_module.read_manifest_bytes
    writes = iter([TWO[: TWO.index("---")]])

    def read_then_written(path: str | os.PathLike[str]) -> bytes:
        data = read(path)
        more = next(writes, None)
        if more is not None:  # the writer goes on right after this read
            write(Path(path), TWO + "# more\n")
            return more.encode()
        return data

    monkeypatch.setattr(file_source_module, "read_manifest_bytes", read_then_written)
    source = FileSource(pods, interval=1.0, settle=0.5, watch=False)
    held = source.poll(0.0)  # nothing known of the file: no SET until it is a state
    assert held is not None and held.op is Operation.NOT_READY
    assert "being written" in held.reason
    up = source.poll(1.0)
    assert up is not None and up.op is Operation.SET and len(up.pods) == 2


# --- item 5: an empty directory ----------------------------------------------------------------


def test_an_empty_directory_at_start_is_refused_naming_it(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    agent = Agent.start(tmp_path, file_source(pods, state_dir(tmp_path), may_be_missing=False))
    agent.settle_in(["alpha", "beta"])
    replace_by_an_empty_directory(pods)  # another directory, empty, at the restart
    agent.restart()
    agent.run(3.0)
    reasons = agent.node.kubelet._rooms.pod_config.not_ready_reasons()
    assert str(pods) in reasons["file"] and "--manifest-allow-empty" in reasons["file"]
    assert "replaced" in reasons["file"]
    put_the_directory_back(pods)
    agent.run(2.0)
    agent.assert_nothing_killed()
    assert agent.node.kubelet.sources_ready()


def test_an_empty_directory_with_no_memory_is_refused_unless_allowed(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    refused = FileSource(pods, watch=False).poll(0.0)
    assert refused is not None and refused.op is Operation.NOT_READY
    assert str(pods) in refused.reason
    allowed = FileSource(pods, watch=False, allow_empty=True).poll(0.0)
    assert allowed == PodUpdate(Operation.SET, (), "file", ())


def test_an_empty_directory_on_a_new_node_is_its_state_and_is_remembered(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    state = tmp_path / "state"
    first = FileSource(pods, watch=False, state_dir=state, new_node=True).poll(0.0)
    assert first == PodUpdate(Operation.SET, (), "file", ())
    again = FileSource(pods, watch=False, state_dir=state).poll(0.0)  # pods have run since
    assert again == PodUpdate(Operation.SET, (), "file", ())
    write(pods / "a.yaml", TWO)
    assert FileSource(pods, watch=False, state_dir=state).poll(0.0) is not None
    replace_by_an_empty_directory(pods)  # it held files: another empty one is an outage
    later = FileSource(pods, watch=False, state_dir=state, new_node=True).poll(0.0)
    assert later is not None and later.reason and len(later.pods) == 2


def test_an_empty_directory_is_accepted_when_it_was_empty_the_last_time(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    state = tmp_path / "state"
    first = FileSource(pods, watch=False, allow_empty=True, state_dir=state).poll(0.0)
    assert first is not None and first.op is Operation.SET
    again = FileSource(pods, watch=False, state_dir=state).poll(0.0)
    assert again is not None and again.op is Operation.SET and not again.reason


def test_a_directory_replaced_by_an_empty_one_while_running_keeps_its_pods(
    tmp_path: Path,
) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    agent = Agent.start(tmp_path, file_source(pods, state_dir(tmp_path)))
    agent.settle_in(["alpha", "beta"])
    replace_by_an_empty_directory(pods)
    agent.run(20.0)
    assert not agent.node.kubelet.sources_ready()
    put_the_directory_back(pods)
    agent.run(2.0)
    agent.assert_nothing_killed()


@pytest.mark.parametrize("restart", ["no restart", "restart"])
def test_removing_the_last_manifest_of_a_directory_removes_its_pods(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, restart: str
) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    agent = Agent.start(tmp_path, file_source(pods, state_dir(tmp_path)))
    agent.settle_in(["alpha", "beta"])
    caplog.set_level("INFO")
    (pods / "a.yaml").unlink()  # the same directory: what its pods were read from
    if restart == "restart":
        agent.restart()
    agent.run(10.0)
    assert agent.running_pods() == []
    assert agent.node.kubelet.sources_ready()
    said = [r.getMessage() for r in caplog.records if "last manifest file" in r.getMessage()]
    assert said and "same device and inode" in said[0]


def test_an_unmounted_mount_point_is_told_from_a_replaced_directory() -> None:
    mounted = DirectoryIdentity(device=42, inode=2, parent_device=7)
    assert DirectoryIdentity(7, 99, 7).mount_point_unmounted(mounted)
    assert not DirectoryIdentity(42, 3, 7).mount_point_unmounted(mounted)  # another, mounted
    plain = DirectoryIdentity(7, 5, 7)
    assert not DirectoryIdentity(7, 6, 7).mount_point_unmounted(plain)  # replaced, not unmounted


# --- item 3 and 8 for the URL source -----------------------------------------------------------


def test_a_url_down_at_start_offers_its_remembered_pods_not_ready(tmp_path: Path) -> None:
    server = Server(TWO)
    state = tmp_path / "state"
    first = HTTPSource("http://example.invalid/", fetch=server, state_dir=state)
    assert first.poll(0.0) is not None
    server.answer = ConnectionRefusedError(111, "Connection refused")
    second = HTTPSource("http://example.invalid/", fetch=server, state_dir=state)
    offered = second.poll(0.0)
    assert offered is not None and offered.op is Operation.SET and len(offered.pods) == 2
    assert "Connection refused" in offered.reason
    config = PodConfig(["http"], node_name=NODE)
    config.apply(offered)
    assert not config.sources_ready() and len(config.pods()) == 2
    assert second.poll(100.0) is None  # said once


def test_an_empty_body_is_refused_unless_allowed(tmp_path: Path) -> None:
    server = Server("")
    refused = HTTPSource("http://example.invalid/", fetch=server).poll(0.0)
    assert refused is not None and refused.op is Operation.NOT_READY
    assert "--manifest-allow-empty" in refused.reason
    allowed = HTTPSource("http://example.invalid/", fetch=server, allow_empty=True).poll(0.0)
    assert allowed is not None and allowed.op is Operation.SET and allowed.pods == ()


# --- item 8: every source kind through every failure, across a restart -------------------------


@attrs.define
class Rig:
    """One source kind under test: how to make it, and how each failure is done and undone."""

    tmp: Path
    denied: Denied
    server: Server = attrs.Factory(lambda: Server(TWO))

    @property
    def pods(self) -> Path:
        return self.tmp / "pods"

    @property
    def main(self) -> Path:
        """The manifest file the failures hit."""
        return self.pods / "a.yaml" if self.pods.is_dir() else self.tmp / "pods.yaml"


Failure = Callable[[Rig], None]


def _set_text(text: str) -> Failure:
    return lambda rig: write(rig.main, text)


def _move_away(rig: Rig) -> None:
    target = rig.pods if rig.pods.is_dir() else rig.main
    target.rename(target.with_name(target.name + ".away"))


def _move_back(rig: Rig) -> None:
    for away in rig.tmp.glob("*.away"):
        away.rename(away.with_name(away.name.removesuffix(".away")))


def _deny(error: type[OSError]) -> Failure:
    def deny(rig: Rig) -> None:
        target = rig.pods if rig.pods.is_dir() else rig.main
        rig.denied.deny(target, error)
        rig.denied.deny(rig.main, error)

    return deny


def _allow(rig: Rig) -> None:
    rig.denied.paths.clear()


def _empty(rig: Rig) -> None:
    if rig.pods.is_dir():
        replace_by_an_empty_directory(rig.pods)
    else:
        write(rig.main, "")


def _unempty(rig: Rig) -> None:
    if rig.pods.with_name("pods.mounted").is_dir():
        put_the_directory_back(rig.pods)
    write(rig.main, TWO)


def _replace_by(make: Callable[[Path], None]) -> Failure:
    def replace(rig: Rig) -> None:
        rig.main.unlink()
        make(rig.main)

    return replace


def _dangling_symlink(path: Path) -> None:
    path.symlink_to(path.with_name("nowhere.yaml"))


def _write_back(rig: Rig) -> None:
    rig.main.unlink()
    write(rig.main, TWO)


CUT_AT_A_DOCUMENT = TWO[: TWO.index("---")]
CUT_MID_VALUE = TWO[: TWO.rindex("busybox:1.36") + len("busy")]
MALFORMED = (
    TWO[: TWO.index("---")]
    + "---\n"
    + pod_doc("beta").replace(
        "image: busybox:1.36", "image: busybox:1.36\n    ports:\n    - containerPort: 70000"
    )
)
"""beta's document no longer valid: the file's other pod still is."""

FILE_FAILURES: dict[str, tuple[Failure, Failure, bool]] = {
    # name: (break, mend, transient: a writer's state that only lasts a moment)
    "missing": (_move_away, _move_back, False),
    "unreadable": (_deny(PermissionError), _allow, False),
    "empty": (_empty, _unempty, False),
    "truncated": (_set_text(CUT_AT_A_DOCUMENT), _set_text(TWO), True),
    "malformed": (_set_text(MALFORMED), _set_text(TWO), False),
    "slow writer": (_set_text(CUT_MID_VALUE), _set_text(TWO), True),
    "timing out": (_deny(TimeoutError), _allow, False),
    "a dangling symlink": (_replace_by(_dangling_symlink), _write_back, False),
    "a fifo": (_replace_by(os.mkfifo), _write_back, False),
}


def _answer(answer: FetchResult | Exception) -> Failure:
    def set_answer(rig: Rig) -> None:
        rig.server.answer = answer

    return set_answer


def _serve(text: str) -> Failure:
    return _answer(FetchResult(200, text.encode()))


URL_FAILURES: dict[str, tuple[Failure, Failure, bool]] = {
    "missing": (_answer(FetchResult(404)), _serve(TWO), False),
    "unreadable": (_answer(ConnectionRefusedError(111, "Connection refused")), _serve(TWO), False),
    "empty": (_serve(""), _serve(TWO), False),
    "truncated": (_serve(CUT_AT_A_DOCUMENT), _serve(TWO), True),
    "malformed": (_serve(MALFORMED), _serve(TWO), False),
    "slow writer": (_serve(CUT_MID_VALUE), _serve(TWO), True),
    "timing out": (_answer(TimeoutError("timed out")), _serve(TWO), False),
}


def _directory_kind(rig: Rig) -> Callable[[], PodSource]:
    rig.pods.mkdir()
    write(rig.pods / "a.yaml", TWO)
    write(rig.pods / "b.yaml", OTHER)
    return file_source(rig.pods, state_dir(rig.tmp))


def _file_kind(rig: Rig) -> Callable[[], PodSource]:
    write(rig.tmp / "pods.yaml", TWO)
    return file_source(rig.tmp / "pods.yaml", state_dir(rig.tmp))


def _url_kind(rig: Rig) -> Callable[[], PodSource]:
    def make() -> HTTPSource:
        return HTTPSource(
            "http://manifests.invalid/node.yaml",
            interval=1.0,
            backoff=1.0,
            max_backoff=2.0,
            fetch=rig.server,
            state_dir=state_dir(rig.tmp),
        )

    return make


KINDS: dict[str, tuple[Callable[[Rig], Callable[[], PodSource]], dict[str, Any], list[str]]] = {
    # kind: (set it up and return its source factory, its failures, the pods it runs)
    "directory": (_directory_kind, FILE_FAILURES, ["alpha", "beta", "gamma"]),
    "file": (_file_kind, FILE_FAILURES, ["alpha", "beta"]),
    "url": (_url_kind, URL_FAILURES, ["alpha", "beta"]),
}
SKIPPED_KINDS = {
    "etcd": "the etcd source needs a cluster (tests/engines/etcd/test_etcd.py runs it against one)",
    "api": "the API's store has failures of its own (a record torn, empty, binary, invalid, of"
    " another kind, a directory): tests/api/test_api_store.py runs each across a restart",
}


def _cases() -> Iterator[Any]:
    for kind, (_setup, failures, _names) in KINDS.items():
        for failure in failures:
            yield pytest.param(kind, failure, id=f"{kind}-{failure}")
    for kind, why in SKIPPED_KINDS.items():
        yield pytest.param(kind, "", id=kind, marks=pytest.mark.skip(reason=why))


@pytest.mark.parametrize("kind, failure", list(_cases()))
def test_no_blink_of_any_source_kills_a_pod_across_a_restart(
    tmp_path: Path, denied: Denied, kind: str, failure: str
) -> None:
    setup, failures, names = KINDS[kind]
    rig = Rig(tmp_path, denied)
    agent = Agent.start(tmp_path, setup(rig))
    agent.settle_in(names)
    do, undo, transient = failures[failure]
    hold = 2.0 if transient else 30.0  # a writer's moment; an outage outlasting every window
    do(rig)
    agent.run(hold)
    agent.restart()
    agent.run(hold)
    assert sorted(p.metadata.name for p in agent.node.kubelet.pods()) == names
    undo(rig)
    agent.run(6.0)
    agent.assert_nothing_killed()
    assert agent.empty_sets() == []
    assert agent.node.kubelet.sources_ready()


def test_a_file_unreadable_for_a_while_is_read_again_and_kept(
    tmp_path: Path, denied: Denied, caplog: pytest.LogCaptureFixture
) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    source = FileSource(pods, interval=1.0, watch=False)
    first = source.poll(0.0)
    assert first is not None
    denied.deny(pods / "a.yaml", TimeoutError)  # a network mount that hangs
    write(pods / "a.yaml", TWO)  # touched: it must be read again
    caplog.set_level("WARNING")
    assert [source.poll(float(t)) for t in range(1, 5)] == [None] * 4
    assert "cannot be read" in str(source.problems[0]) and source.pods == first.pods
    assert len([r for r in caplog.records if "cannot be read" in r.getMessage()]) == 1
    denied.allow(pods / "a.yaml")
    caplog.set_level("INFO")
    assert source.poll(5.0) is None  # the same text: nothing to send
    assert source.problems == ()
    assert any("can be read again" in r.getMessage() for r in caplog.records)


def test_the_memory_failing_is_said_once_and_the_source_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the memory's directory should be")
    source = FileSource(pods, interval=1.0, settle=0, watch=False, state_dir=blocked / "memory")
    caplog.set_level("WARNING")
    first = source.poll(0.0)
    assert first is not None and len(first.pods) == 2
    write(pods / "a.yaml", TWO + "---\n" + OTHER)
    assert source.poll(1.0) is not None
    said = [r.getMessage() for r in caplog.records if "last good state" in r.getMessage()]
    assert len(said) == 1 and "a restart will not find it" in said[0]
    assert "image" not in said[0]  # no manifest content in the log


# --- intent: what a user clearly meant is done, and every problem is reported ---------------


def test_a_bad_new_file_reports_its_problems_again_after_a_restart(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO.replace("image: busybox:1.36", "imagee: busybox:1.36", 1))
    first = FileSource(pods, state_dir=tmp_path / "state", watch=False, may_be_missing=True)
    assert first.poll(0.0) is not None
    assert "imagee" in str(first.problems)
    second = FileSource(pods, state_dir=tmp_path / "state", watch=False, may_be_missing=True)
    update = second.poll(0.0)
    assert update is not None and [p.metadata.name for p in update.pods] == ["beta"]
    assert "imagee" in str(second.problems)  # the remembered hash does not hide the error


# --- the intent column: what the user clearly meant is done, across every kind of restart ------


def _remove(name: str) -> Failure:
    return lambda rig: (rig.pods / name).unlink()


def _rewrite(how: Callable[[Path, str], None], text: str) -> Failure:
    return lambda rig: how(rig.main, text)


def _url_serves(text: str) -> Failure:
    return _serve(text)


INTENTS: dict[tuple[str, str], tuple[Failure, list[str]]] = {
    # (kind, change): (the change, the pods that run once it is acted on)
    ("directory", "a file removed"): (_remove("a.yaml"), ["gamma"]),
    ("directory", "its last files removed"): (
        lambda rig: [path.unlink() for path in rig.pods.iterdir()] and None,
        [],
    ),
    ("directory", "a pod removed by a rename"): (
        _rewrite(replace, pod_doc("alpha")),
        ["alpha", "gamma"],
    ),
    ("directory", "a pod removed in place"): (
        _rewrite(write, pod_doc("alpha")),
        ["alpha", "gamma"],
    ),
    ("file", "a pod removed by a rename"): (_rewrite(replace, pod_doc("alpha")), ["alpha"]),
    ("file", "a pod removed in place"): (_rewrite(write, pod_doc("alpha")), ["alpha"]),
    ("url", "a pod no longer served"): (_url_serves(pod_doc("alpha")), ["alpha"]),
}
RESTARTS = ["no restart", "SIGTERM", "kill -9"]


def _restart(agent: Agent, how: str) -> None:
    if how == "no restart":
        return
    if how == "kill -9":  # no clean stop: the source is dropped as it is, a record half-written
        memory = agent.root / LAST_GOOD_DIR
        memory.mkdir(parents=True, exist_ok=True)
        (memory / ".file-torn.json.4242.1.tmp").write_text('{"kind": "fi')
    else:
        close = getattr(agent.source, "close", None)
        if callable(close):
            close()
    agent.restart()


@pytest.mark.parametrize("restart", RESTARTS)
@pytest.mark.parametrize("kind, change", list(INTENTS), ids=[f"{k}-{c}" for k, c in INTENTS])
def test_a_change_the_user_means_is_done_across_a_restart(
    tmp_path: Path, denied: Denied, kind: str, change: str, restart: str
) -> None:
    setup, _failures, names = KINDS[kind]
    rig = Rig(tmp_path, denied)
    agent = Agent.start(tmp_path, setup(rig))
    agent.settle_in(names)
    do, remaining = INTENTS[kind, change]
    do(rig)
    agent.run(1.0)
    _restart(agent, restart)
    agent.run(40.0)  # past the in-place settle (30 s) and the removal settle (5 s)
    assert agent.running_pods() == remaining
    assert agent.node.kubelet.sources_ready()
    for path, name in agent.precious.items():  # the pods that stay keep their emptyDir
        if name in remaining:
            assert path.read_text() == name


@pytest.mark.parametrize("restart", RESTARTS)
@pytest.mark.parametrize(
    "kind, failure",
    [
        ("directory", "truncated"),
        ("file", "malformed"),
        ("url", "timing out"),
        ("directory", "a fifo"),
        ("file", "a dangling symlink"),
    ],
)
def test_a_blink_keeps_the_pods_across_every_kind_of_restart(
    tmp_path: Path, denied: Denied, kind: str, failure: str, restart: str
) -> None:
    setup, failures, names = KINDS[kind]
    rig = Rig(tmp_path, denied)
    agent = Agent.start(tmp_path, setup(rig))
    agent.settle_in(names)
    do, undo, _transient = failures[failure]
    do(rig)
    agent.run(2.0)
    _restart(agent, restart)
    agent.run(20.0)
    assert agent.running_pods() == names
    undo(rig)
    agent.run(6.0)
    agent.assert_nothing_killed()


def test_a_pod_made_again_with_the_same_uid_keeps_its_empty_dir(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    agent = Agent.start(tmp_path, file_source(pods, state_dir(tmp_path)))
    agent.settle_in(["alpha", "beta"])
    replace(pods / "a.yaml", pod_doc("alpha"))  # beta removed, for real
    agent.run(10.0)
    assert agent.running_pods() == ["alpha"]
    replace(pods / "a.yaml", TWO)  # and put back: the same name, the same UID
    agent.run(5.0)
    assert agent.running_pods() == ["alpha", "beta"]
    agent.run(60.0)  # past the reclaim grace of a pod that left
    for path, text in agent.precious.items():
        assert path.read_text() == text, path  # beta's emptyDir was not emptied


def test_a_replaced_directory_is_a_problem_that_says_its_pods_are_kept(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    write(pods / "a.yaml", TWO)
    assert FileSource(pods, state_dir=tmp_path / "state", watch=False).poll(0.0) is not None
    replace_by_an_empty_directory(pods)
    again = FileSource(pods, state_dir=tmp_path / "state", watch=False)
    update = again.poll(0.0)
    assert update is not None and len(update.pods) == 2 and update.reason  # kept, not ready
    assert "its pods are kept" in str(again.problems)  # what --once prints, exiting 1
