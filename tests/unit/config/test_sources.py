"""Pod sources: manifest files and directories, a manifest URL, the in-process API, the poller."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubecore._config.base import PodSource
from kubecore._config.file import FileSource
from kubecore._config.http import FetchResult, HTTPSource
from kubecore._config.podconfig import PodConfig
from kubecore._config.poller import SourcePoller
from kubecore._config.static import StaticSource
from kubecore._config.updates import Operation, PodUpdate
from kubecore._contract.errors import SourceUnavailable
from kubecore._manifest.identity import SOURCE_ANNOTATION
from kubecore._model.v1 import Container, ObjectMeta, Pod, PodSpec
from kubecore._util.clock import ManualClock, SystemClock
from tests.unit.config.support import first_update, pod_yaml, replace, write

NODE = "node-a"

BAD_POD = """apiVersion: v1
kind: Pod
metadata:
  name: Bad_Name
spec:
  containers:
  - name: main
    ports:
    - containerPort: 70000
"""


def names(update: PodUpdate | None) -> list[str]:
    assert update is not None
    return sorted(p.metadata.name for p in update.pods)


def key(pod: Pod) -> tuple[str, str]:
    return (pod.metadata.namespace, pod.metadata.name)


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    d = tmp_path / "pods"
    d.mkdir()
    write(d / "a.yaml", pod_yaml("alpha") + "---\n" + pod_yaml("beta"))
    write(
        d / "b.json",
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gamma"},'
        ' "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}',
    )
    write(d / ".hidden.yaml", pod_yaml("hidden"))
    (d / "sub").mkdir()
    write(d / "sub" / "nested.yaml", pod_yaml("nested"))
    return d


# --- FileSource -------------------------------------------------------------------------------


def test_file_source_is_a_pod_source(manifests: Path) -> None:
    assert isinstance(FileSource(manifests), PodSource)
    assert isinstance(StaticSource(), PodSource)
    assert isinstance(HTTPSource("http://127.0.0.1:1/"), PodSource)


def test_directory_yaml_multidoc_and_json_skipping_dotfiles_and_subdirs(manifests: Path) -> None:
    source = FileSource(manifests)
    update = source.poll(0.0)
    assert update is not None
    assert update.op is Operation.SET and update.source == "file"
    assert names(update) == ["alpha", "beta", "gamma"]
    for pod in update.pods:
        assert pod.metadata.annotations[SOURCE_ANNOTATION] == "file"
        assert not pod.metadata.uid  # the agent's PodConfig gives it the node's uid
    assert source.problems == ()


def test_uids_are_stable_across_sources_objects(manifests: Path) -> None:
    uids = []
    for _restart in range(2):
        update = FileSource(manifests).poll(0.0)
        assert update is not None
        config = PodConfig(["file"], node_name=NODE)
        config.apply(update)
        uids.append([p.uid for p in config.pods()])
    assert uids[0] == uids[1]
    assert len(set(uids[0])) == 3


def test_nothing_sent_when_nothing_changed_or_not_due(manifests: Path) -> None:
    source = FileSource(manifests, interval=20.0)
    assert source.poll(0.0) is not None
    assert source.poll(5.0) is None  # not due
    assert source.poll(20.0) is None  # due, unchanged
    os.utime(manifests / "a.yaml", ns=(10**18, 10**18))  # touched, same content
    assert source.poll(40.0) is None


def test_changed_file_updates_its_pods_once_it_has_settled(manifests: Path) -> None:
    source = FileSource(manifests, interval=1.0, settle=2.0)
    source.poll(0.0)
    replace(
        manifests / "a.yaml", pod_yaml("alpha", image="busybox:1.36") + "---\n" + pod_yaml("beta")
    )
    assert source.poll(1.0) is None  # changed just now: maybe still being written
    assert source.poll(2.0) is None
    update = source.poll(3.0)
    assert names(update) == ["alpha", "beta", "gamma"]
    assert update is not None
    alpha = next(p for p in update.pods if p.metadata.name == "alpha")
    assert alpha.spec.containers[0].image == "busybox:1.36"


def test_removed_file_removes_its_pods_and_new_file_adds(manifests: Path) -> None:
    source = FileSource(manifests, interval=1.0, settle=0)
    source.poll(0.0)
    (manifests / "b.json").unlink()
    assert names(source.poll(1.0)) == ["alpha", "beta"]
    write(manifests / "c.yml", pod_yaml("delta"))
    assert names(source.poll(2.0)) == ["alpha", "beta", "delta"]


def test_bad_file_reported_with_path_and_every_field_error(manifests: Path) -> None:
    write(manifests / "bad.yaml", BAD_POD)
    source = FileSource(manifests)
    update = source.poll(0.0)
    assert names(update) == ["alpha", "beta", "gamma"]  # the other files' pods still run
    (problem,) = source.problems
    assert problem.where == str(manifests / "bad.yaml")
    paths = {error.path for error in problem.errors}
    assert "metadata.name" in paths
    assert "spec.containers[0].image" in paths
    assert "spec.containers[0].ports[0].containerPort" in paths
    assert all(line.startswith(str(manifests / "bad.yaml") + ": ") for line in problem.lines())


def test_yaml_syntax_error_is_a_problem_not_a_crash(manifests: Path) -> None:
    write(manifests / "broken.yaml", "apiVersion: v1\nkind: [unclosed\n")
    source = FileSource(manifests)
    assert names(source.poll(0.0)) == ["alpha", "beta", "gamma"]
    (problem,) = source.problems
    assert "YAML" in str(problem)


def test_good_file_turned_bad_keeps_last_good_pods_until_fixed(manifests: Path) -> None:
    source = FileSource(manifests, interval=1.0, settle=0)
    first = source.poll(0.0)
    assert first is not None
    write(manifests / "a.yaml", BAD_POD + "---\n" + pod_yaml("alpha", image="busybox:9"))
    assert source.poll(1.0) is None  # same pods as before: nothing to send
    assert [p.where for p in source.problems] == [str(manifests / "a.yaml")]
    assert source.pods == first.pods
    write(manifests / "a.yaml", pod_yaml("alpha", image="busybox:1.36"))
    assert names(source.poll(2.0)) == ["alpha", "gamma"]
    assert source.problems == ()


def test_new_bad_file_contributes_its_valid_pods(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    write(path, pod_yaml("good") + "---\n" + BAD_POD)
    source = FileSource(path)
    assert names(source.poll(0.0)) == ["good"]
    (problem,) = source.problems
    assert all(e.path.startswith("documents[1]") for e in problem.errors)


def test_same_pod_in_two_files_first_file_wins(manifests: Path) -> None:
    write(manifests / "z.yaml", pod_yaml("alpha", image="other:1"))
    source = FileSource(manifests)
    update = source.poll(0.0)
    assert names(update) == ["alpha", "beta", "gamma"]
    assert update is not None
    alpha = next(p for p in update.pods if p.metadata.name == "alpha")
    assert alpha.spec.containers[0].image == "busybox:1.35"
    (problem,) = source.problems
    assert problem.where == str(manifests / "z.yaml")
    assert "a.yaml" in str(problem)


def test_missing_path_at_start_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable, match=r"later.*does not exist.*may-be-missing"):
        FileSource(tmp_path / "later")


def test_path_that_may_be_missing_sends_empty_set_then_picks_up(tmp_path: Path) -> None:
    path = tmp_path / "later"
    source = FileSource(path, interval=1.0, may_be_missing=True, settle=0)
    update = source.poll(0.0)
    assert update is not None and update.pods == ()  # the source has reported: empty
    assert source.problems == ()  # the user said it may be missing
    path.mkdir()
    write(path / "p.yaml", pod_yaml("late"))
    assert names(source.poll(1.0)) == ["late"]
    assert source.problems == ()


def test_single_file_and_several_paths_in_one_source(tmp_path: Path) -> None:
    one = tmp_path / "one.yaml"
    write(one, pod_yaml("one"))
    other_dir = tmp_path / "d"
    other_dir.mkdir()
    write(other_dir / "two.yaml", pod_yaml("two"))
    source = FileSource([one, other_dir])
    assert names(source.poll(0.0)) == ["one", "two"]
    assert source.paths == (one, other_dir)


def test_unreadable_bytes_are_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    source = FileSource(tmp_path)
    update = source.poll(0.0)
    assert update is not None and update.pods == ()
    assert "UTF-8" in str(source.problems[0])


# --- HTTPSource -------------------------------------------------------------------------------


class ScriptedFetch:
    """A fetcher answering from a list; records the headers of each call."""

    def __init__(self, *answers: FetchResult | Exception) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, str]] = []

    def __call__(self, url: str, headers: dict[str, str], timeout: float) -> FetchResult:
        self.calls.append(dict(headers))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_http_source_sets_pods_and_skips_unchanged() -> None:
    body = (pod_yaml("web") + "---\n" + pod_yaml("db")).encode()
    fetch = ScriptedFetch(FetchResult(200, body, etag='"v1"'), FetchResult(304))
    source = HTTPSource("http://example.invalid/pods", interval=10.0, fetch=fetch)
    update = source.poll(0.0)
    assert names(update) == ["db", "web"]
    assert update is not None and update.source == "http"
    assert all(p.metadata.annotations[SOURCE_ANNOTATION] == "http" for p in update.pods)
    assert source.poll(5.0) is None and len(fetch.calls) == 1  # not due
    assert source.poll(10.0) is None  # 304
    assert fetch.calls[1]["If-None-Match"] == '"v1"'


def test_http_source_same_body_without_etag_is_skipped() -> None:
    body = pod_yaml("web").encode()
    fetch = ScriptedFetch(FetchResult(200, body))
    source = HTTPSource("http://example.invalid/", interval=1.0, fetch=fetch)
    assert source.poll(0.0) is not None
    assert source.poll(1.0) is None
    assert source.poll(2.0) is None
    assert len(fetch.calls) == 3


def test_http_errors_back_off_and_keep_last_good_state() -> None:
    good = FetchResult(200, pod_yaml("web").encode())
    fetch = ScriptedFetch(
        good,
        OSError("connection refused"),
        OSError("connection refused"),
        OSError("connection refused"),
        FetchResult(200, (pod_yaml("web") + "---\n" + pod_yaml("web2")).encode()),
    )
    source = HTTPSource(
        "http://example.invalid/", interval=10.0, backoff=1.0, max_backoff=3.0, fetch=fetch
    )
    first = source.poll(0.0)
    assert first is not None
    down = source.poll(10.0)  # fails: retry after 1 s; not ready, its pods kept
    assert down == PodUpdate(Operation.NOT_READY, (), "http")
    assert source.failures == 1 and "connection refused" in str(source.problems[0])
    assert source.pods == first.pods
    assert source.poll(10.5) is None and len(fetch.calls) == 2  # backing off
    assert source.poll(11.0) is None and len(fetch.calls) == 3  # fails again: 2 s
    assert source.poll(12.9) is None and len(fetch.calls) == 3
    assert source.poll(13.0) is None and len(fetch.calls) == 4  # fails: capped at 3 s
    assert source.poll(15.9) is None and len(fetch.calls) == 4
    assert names(source.poll(16.0)) == ["web", "web2"]
    assert source.failures == 0 and source.problems == ()


def test_http_bad_body_is_reported_and_last_good_kept() -> None:
    fetch = ScriptedFetch(
        FetchResult(200, pod_yaml("web").encode()),
        FetchResult(200, BAD_POD.encode()),
    )
    source = HTTPSource("http://example.invalid/", interval=1.0, fetch=fetch)
    first = source.poll(0.0)
    assert first is not None
    down = source.poll(1.0)
    assert down is not None and down.op is Operation.NOT_READY
    assert source.poll(3.0) is None  # said once
    assert source.pods == first.pods
    assert any(e.path == "spec.containers[0].image" for e in source.problems[0].errors)


def test_http_source_ready_again_resends_its_pods_even_unchanged() -> None:
    good = FetchResult(200, pod_yaml("web").encode())
    fetch = ScriptedFetch(good, OSError("connection refused"), good)
    source = HTTPSource("http://example.invalid/", interval=1.0, backoff=1.0, fetch=fetch)
    first = source.poll(0.0)
    config = PodConfig(["http"], node_name=NODE)
    assert first is not None and config.apply(first)
    down = source.poll(1.0)
    assert down is not None and config.apply(down)
    assert not config.sources_ready() and len(config.pods()) == 1
    again = source.poll(2.0)
    assert again is not None and again.op is Operation.SET and again.pods == first.pods
    config.apply(again)
    assert config.sources_ready()


def test_http_non_2xx_status_is_an_error() -> None:
    source = HTTPSource("http://example.invalid/", fetch=ScriptedFetch(FetchResult(503)))
    down = source.poll(0.0)  # nothing known yet: not ready, and why
    assert down is not None and down.op is Operation.NOT_READY and "503" in down.reason
    assert "503" in str(source.problems[0])


def test_http_source_refuses_other_schemes() -> None:
    with pytest.raises(ValueError, match="http"):
        HTTPSource("file:///etc/passwd")


class _ManifestHandler(http.server.BaseHTTPRequestHandler):
    body = b""
    status = 200
    seen: list[str | None] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("If-None-Match"))
        if self.headers.get("If-None-Match") == '"same"':
            self.send_response(304)
            self.end_headers()
            return
        self.send_response(self.status)
        self.send_header("ETag", '"same"')
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def manifest_server() -> Iterator[tuple[str, type[_ManifestHandler]]]:
    handler = type(
        "Handler", (_ManifestHandler,), {"seen": [], "body": pod_yaml("remote").encode()}
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/pods.yaml", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_http_source_over_a_real_loopback_server(
    manifest_server: tuple[str, type[_ManifestHandler]],
) -> None:
    url, handler = manifest_server
    source = HTTPSource(url, interval=1.0, timeout=5.0)
    assert names(source.poll(0.0)) == ["remote"]
    assert source.poll(1.0) is None  # a 304 thanks to the ETag
    assert handler.seen == [None, '"same"']


def test_http_source_connection_refused_is_reported() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    source = HTTPSource(f"http://127.0.0.1:{port}/", timeout=2.0)
    down = source.poll(0.0)
    assert down is not None and down.op is Operation.NOT_READY
    assert source.failures == 1 and source.problems


# --- StaticSource -----------------------------------------------------------------------------


def make_pod(name: str, image: str = "busybox:1.35", namespace: str = "default") -> Pod:
    return Pod(
        ObjectMeta(name=name, namespace=namespace),
        PodSpec(containers=(Container(name="main", image=image),)),
    )


def test_static_source_queues_each_operation() -> None:
    source = StaticSource(name="embed")
    assert source.poll(0.0) is None
    source.set([make_pod("a"), make_pod("b")])
    source.add(make_pod("c"))
    source.update(make_pod("a", image="busybox:2"))
    source.remove("default/b", ("default", "zzz"))
    ops = []
    for _ in range(10):
        update = source.poll(0.0)
        if update is None:
            break
        ops.append((update.op, [p.metadata.name for p in update.pods]))
    assert ops == [
        (Operation.SET, ["a", "b"]),
        (Operation.ADD, ["c"]),
        (Operation.UPDATE, ["a"]),
        (Operation.REMOVE, ["b"]),
    ]
    assert sorted(p.metadata.name for p in source.pods) == ["a", "c"]
    assert all(p.metadata.annotations[SOURCE_ANNOTATION] == "embed" for p in source.pods)


def test_static_source_with_a_sink_delivers_at_once() -> None:
    delivered: list[PodUpdate] = []
    source = StaticSource([], sink=delivered.append)
    assert [u.op for u in delivered] == [Operation.SET]
    source.add(make_pod("x"))
    source.remove(make_pod("x"))
    source.remove("nothing-here")  # nothing removed: nothing sent
    assert [u.op for u in delivered] == [Operation.SET, Operation.ADD, Operation.REMOVE]
    assert source.poll(0.0) is None


OPS = st.lists(
    st.tuples(
        st.sampled_from(["set", "add", "update", "remove"]),
        st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3),
        st.sampled_from(["busybox:1", "busybox:2"]),
    ),
    max_size=12,
)


@settings(max_examples=60)
@given(OPS)
def test_static_source_through_pod_config_matches_its_own_view(
    ops: list[tuple[str, list[str], str]],
) -> None:
    config = PodConfig(["api"], node_name=NODE)
    source = StaticSource(sink=config.apply)
    for op, pod_names, image in ops:
        pods = [make_pod(n, image) for n in pod_names]
        if op == "set":
            source.set(pods)
        elif op == "add":
            source.add(*pods)
        elif op == "update":
            source.update(*pods)
        else:
            source.remove(*pod_names)
    expected = {key(p): p.spec.containers[0].image for p in source.pods}
    assert {key(p): p.spec.containers[0].image for p in config.pods()} == expected


# --- SourcePoller -----------------------------------------------------------------------------


def test_poller_delivers_updates_from_every_source(manifests: Path) -> None:
    clock = ManualClock()
    delivered: list[PodUpdate] = []
    static = StaticSource([make_pod("local")])
    static.add(make_pod("more"))
    poller = SourcePoller([FileSource(manifests), static], delivered.append, clock=clock)
    assert poller.names == ("file", "api")
    assert poller.poll_once() == 3
    assert [(u.source, u.op) for u in delivered] == [
        ("file", Operation.SET),
        ("api", Operation.SET),
        ("api", Operation.ADD),
    ]
    assert poller.poll_once() == 0


def test_poller_feeds_pod_config_and_sources_become_ready(manifests: Path, tmp_path: Path) -> None:
    clock = ManualClock()
    config = PodConfig(["file", "http"], node_name=NODE)
    http_fetch = ScriptedFetch(OSError("down"), FetchResult(200, pod_yaml("remote").encode()))
    poller = SourcePoller(
        [
            FileSource(manifests, interval=1.0),
            HTTPSource("http://example.invalid/", fetch=http_fetch, backoff=1.0),
        ],
        config.apply,
        clock=clock,
    )
    poller.poll_once()
    assert not config.sources_ready()  # the URL has not answered yet
    clock.advance(1.0)
    poller.poll_once()
    assert config.sources_ready()
    assert sorted(p.metadata.name for p in config.pods()) == ["alpha", "beta", "gamma", "remote"]


def test_poller_survives_a_failing_source_and_sink(manifests: Path) -> None:
    class Exploding:
        name = "boom"

        def poll(self, now: float) -> PodUpdate | None:
            raise RuntimeError("source bug")

    calls: list[PodUpdate] = []

    def sink(update: PodUpdate) -> None:
        calls.append(update)
        raise RuntimeError("sink bug")

    poller = SourcePoller([Exploding(), FileSource(manifests)], sink, clock=ManualClock())
    assert poller.poll_once() == 1
    assert calls and calls[0].source == "file"


def test_poller_rejects_two_sources_with_one_name(manifests: Path) -> None:
    with pytest.raises(ValueError, match="file"):
        SourcePoller([FileSource(manifests), FileSource(manifests)], print)


def test_poller_thread_starts_and_stops(manifests: Path) -> None:
    got = threading.Event()
    poller = SourcePoller(
        [FileSource(manifests)], lambda u: got.set(), clock=SystemClock(), tick=0.05
    )
    poller.start()
    try:
        assert got.wait(5.0)
        with pytest.raises(RuntimeError):
            poller.start()
    finally:
        poller.stop(timeout=5.0)


# --- an unreadable source is an outage, not an instruction -----------------------------------


def test_directory_gone_while_running_is_not_ready_and_keeps_its_pods(
    manifests: Path, tmp_path: Path
) -> None:
    source = FileSource(manifests, interval=1.0, settle=0)
    config = PodConfig(["file"], node_name=NODE)
    first = source.poll(0.0)
    assert first is not None
    config.apply(first)
    moved = tmp_path / "moved-away"
    manifests.rename(moved)
    down = source.poll(1.0)
    assert down == PodUpdate(Operation.NOT_READY, (), "file")
    config.apply(down)
    assert not config.sources_ready() and config.not_ready() == ("file",)
    assert config.not_ready_reasons() == {"file": f"{manifests}: no such file or directory"}
    assert [p.metadata.name for p in config.pods()] == ["alpha", "beta", "gamma"]
    assert source.poll(2.0) is None  # said once
    assert "no such file" in str(source.problems[0])
    moved.rename(manifests)
    back = source.poll(3.0)
    assert back is not None and back.op is Operation.SET and back.pods == first.pods
    config.apply(back)
    assert config.sources_ready() and source.problems == ()


def test_unlistable_directory_is_one_warning_not_a_traceback_per_poll(
    manifests: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    source = FileSource(manifests, interval=1.0)
    assert source.poll(0.0) is not None

    def denied(self: Path) -> Iterator[Path]:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", denied)
    caplog.set_level("WARNING")
    updates = [source.poll(float(t)) for t in range(1, 6)]
    assert [u.op for u in updates if u is not None] == [Operation.NOT_READY]
    warnings = [r for r in caplog.records if "is not ready" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert "Permission denied" in warnings[0].getMessage()


def test_half_written_file_is_not_acted_on(manifests: Path) -> None:
    source = FileSource(manifests, interval=1.0, settle=2.0)
    first = source.poll(0.0)
    assert first is not None
    original = (manifests / "a.yaml").read_text()
    write(manifests / "a.yaml", original[: int(len(original) * 0.6)])  # cut mid-write
    assert source.poll(1.0) is None
    write(manifests / "a.yaml", original)  # the writer finishes: same content as before
    for t in (2.0, 3.0, 4.0, 5.0, 6.0):
        assert source.poll(t) is None
    assert source.pods == first.pods and source.problems == ()


def test_file_truncated_to_nothing_keeps_its_last_pods(manifests: Path) -> None:
    source = FileSource(manifests, interval=1.0, settle=0)
    first = source.poll(0.0)
    assert first is not None
    write(manifests / "a.yaml", "")
    assert source.poll(1.0) is None  # no change sent: the pods stay
    assert source.pods == first.pods
    (problem,) = source.problems
    assert problem.where == str(manifests / "a.yaml") and "remove the file" in str(problem)
    (manifests / "a.yaml").unlink()  # removing the file is how its pods go
    assert names(source.poll(2.0)) == ["gamma"]


def test_removed_file_waits_for_the_loss_settle_time(manifests: Path) -> None:
    source = FileSource(manifests, interval=1.0, settle=0.5, loss_settle=2.0)
    source.poll(0.0)
    saved = (manifests / "b.json").read_bytes()
    (manifests / "b.json").unlink()
    assert source.poll(1.0) is None
    (manifests / "b.json").write_bytes(saved)  # put back (an editor's save, a git checkout)
    assert source.poll(2.0) is None and source.poll(4.0) is None
    (manifests / "b.json").unlink()
    assert source.poll(5.0) is None
    assert names(source.poll(7.0)) == ["alpha", "beta"]


def test_duplicate_pod_name_in_a_second_file_is_logged_once(
    manifests: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(manifests / "z.yaml", pod_yaml("alpha", image="other:1"))
    caplog.set_level("WARNING")
    source = FileSource(manifests, interval=1.0)
    source.poll(0.0)
    source.poll(1.0)
    logged = [r.getMessage() for r in caplog.records if "already defined" in r.getMessage()]
    assert len(logged) == 1 and "z.yaml" in logged[0] and "a.yaml" in logged[0]


def test_a_url_that_trickles_its_body_times_out_as_a_whole_and_keeps_the_pods() -> None:
    done = threading.Event()
    body = pod_yaml("remote").encode()

    class Trickle(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for byte in body[:60]:  # one byte every 0.2 s: each read is quick, the whole is not
                if done.wait(0.2):
                    return
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:  # the source gave up: the connection is closed
                    return

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/pods.yaml"
        source = HTTPSource(url, timeout=1.0)
        clock = SystemClock()
        began = clock.monotonic()
        update = source.poll(began)
        took = clock.monotonic() - began
    finally:
        done.set()
        server.shutdown()
        server.server_close()
        thread.join(5.0)
    assert update is not None and update.op is Operation.NOT_READY
    assert "longer than 1s" in str(source.problems[0])
    assert took < 3.0, took


def test_a_pod_changed_in_place_waits_for_the_in_place_settle(manifests: Path) -> None:
    source = FileSource(manifests, interval=1.0, settle=0.5)
    source.poll(0.0)
    write(  # in place: the same inode, maybe a writer that paused
        manifests / "a.yaml", pod_yaml("alpha", image="busybox:1.36") + "---\n" + pod_yaml("beta")
    )
    when, update = first_update(source, 1.0, 40.0)
    assert 30.0 <= when <= 32.0 and update is not None  # stable for 60 times the settle: whole
    alpha = next(p for p in update.pods if p.metadata.name == "alpha")
    assert alpha.spec.containers[0].image == "busybox:1.36"


def test_a_pod_added_in_place_is_not_held_back(manifests: Path) -> None:
    source = FileSource(manifests, interval=1.0, settle=0.5)
    source.poll(0.0)
    write(manifests / "c.yaml", pod_yaml("delta"))
    when, update = first_update(source, 1.0, 40.0)
    assert when <= 2.0 and update is not None  # the settle only
