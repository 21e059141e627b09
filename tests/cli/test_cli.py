"""The ``kubecore`` command, run in-process through ``main(argv)`` and once as a real program."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubecore._cli import (
    RUN_SETTINGS,
    UsageError,
    build_parser,
    format_table,
    parse_options,
    resolve_settings,
)
from kubecore._model.v1 import (
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
)
from kubecore._status.compute import pod_status_text, pod_verdict
from tests.cli.support import run_args, run_cli
from tests.paths import REPO

EXAMPLES = REPO / "examples" / "pods"

THREE_MISTAKES = """apiVersion: v1
kind: Pod
metadata:
  name: Not_A_Name
spec:
  containers:
  - name: web
    ports:
    - containerPort: 99999
"""

GOOD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: {policy}
  containers:
  - name: main
    image: busybox:1.35
    command: {command}
"""


def good_pod(
    tmp_path: Path, name: str, policy: str = "Always", command: str = '["sleep", "3600"]'
) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(GOOD.format(name=name, policy=policy, command=command))
    return path


# --- validate -----------------------------------------------------------------------------------


def test_validate_prints_every_mistake_with_its_field_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(THREE_MISTAKES)
    code, out, _ = run_cli("validate", str(bad))
    assert code == 1
    lines = out.splitlines()
    assert f"{bad}: metadata.name: " in out
    assert f"{bad}: spec.containers[0].image: " in out
    assert f"{bad}: spec.containers[0].ports[0].containerPort: " in out
    assert sum(1 for line in lines if line.startswith(f"{bad}: ")) == 3
    assert lines[-1].startswith("3 problem(s) in 1 file")


def test_validate_good_files_and_directories(tmp_path: Path) -> None:
    good_pod(tmp_path, "one")
    good_pod(tmp_path, "two")
    code, out, _ = run_cli("validate", str(tmp_path))
    assert code == 0
    assert out == "2 files OK, 2 pod(s)\n"


def test_validate_the_examples() -> None:
    code, out, _ = run_cli("validate", str(EXAMPLES))
    assert code == 0, out


def test_validate_missing_file_and_syntax_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [oops\n")
    code, out, _ = run_cli("validate", str(tmp_path / "nope.yaml"), str(broken))
    assert code == 1
    assert f"{tmp_path / 'nope.yaml'}: no such file or directory" in out
    assert f"{broken}: " in out and "YAML" in out


def test_validate_needs_files() -> None:
    code, _, _ = run_cli("validate")
    assert code == 2


# --- runtimes and version -----------------------------------------------------------------------


def test_runtimes_lists_docker_and_fake() -> None:
    code, out, _ = run_cli("runtimes")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "DESCRIPTION", "PLUGIN"]
    names = [line.split()[0] for line in lines[1:] if not line.startswith("broken")]
    assert "docker" in names and "fake" in names


def test_runtimes_shows_a_broken_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    import kubecore._plugins.registry as plugins

    class Boom:
        @plugins.hookimpl
        def kubecore_register_runtimes(self, registry: Any) -> None:
            raise RuntimeError("cannot reach the engine library")

    real = plugins.plugin_manager
    monkeypatch.setattr(
        plugins, "plugin_manager", lambda *a, **k: real(extra_plugins=[Boom()], entry_points=True)
    )
    code, out, _ = run_cli("runtimes")
    assert code == 0
    assert "broken plugin" in out and "cannot reach the engine library" in out


def test_version() -> None:
    import kubecore

    code, out, _ = run_cli("version")
    assert code == 0 and out.startswith(f"kubecore {kubecore.__version__} ")


def test_no_command_prints_help() -> None:
    code, out, _ = run_cli()
    assert code == 2 and "run" in out and "validate" in out


def test_help_explains_every_run_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    text = capsys.readouterr().out
    for setting in RUN_SETTINGS:
        if setting.dest != "manifests":
            assert setting.option in text, setting.option
        assert setting.env in text.replace("\n", " ").replace(" ", "") or setting.env in text


# --- configuration precedence -------------------------------------------------------------------


def test_flags_beat_env_beat_config_file_beat_defaults(tmp_path: Path) -> None:
    config = tmp_path / "kubecore.yaml"
    config.write_text("node-name: from-file\nport: 1111\nresync: 5\nallow_privileged: true\n")
    env = {"KUBECORE_PORT": "2222", "KUBECORE_RESYNC": "7.5"}
    settings = resolve_settings({"resync": 9.0}, env, str(config))
    assert settings["node_name"] == "from-file"
    assert settings["port"] == 2222
    assert settings["resync"] == 9.0
    assert settings["allow_privileged"] is True
    assert settings["runtime"] == "fake" and settings["address"] == "127.0.0.1"


def test_config_file_from_env_and_manifests_from_env(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("runtime: docker\nruntime-option: {base_url: 'unix:///x.sock', timeout: 5}\n")
    env = {"KUBECORE_CONFIG": str(config), "KUBECORE_MANIFESTS": f"a{os.pathsep}b"}
    settings = resolve_settings({}, env, None)
    assert settings["runtime"] == "docker"
    assert settings["runtime_option"] == {"base_url": "unix:///x.sock", "timeout": 5}
    assert settings["manifests"] == ["a", "b"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("nonsense: 1\n", "unknown setting"),
        ("port: lots\n", "port"),
        ("- a list\n", "mapping"),
        ("port: [1\n", "YAML"),
        ("once: perhaps\n", "once"),
    ],
)
def test_bad_config_files(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(text)
    with pytest.raises(UsageError, match=message):
        resolve_settings({}, {}, str(config))


def test_bad_env_value_and_missing_config_exit_2(tmp_path: Path) -> None:
    code, _, err = run_cli("run", "--once", env={"KUBECORE_PORT": "eighty"})
    assert code == 2 and "KUBECORE_PORT" in err
    code, _, err = run_cli("run", "--config", str(tmp_path / "none.yaml"))
    assert code == 2 and "none.yaml" in err


def test_runtime_options() -> None:
    assert parse_options(["a=1", "b=true", "c=x,y", "d="]) == {
        "a": 1,
        "b": True,
        "c": "x,y",
        "d": "",
    }
    assert parse_options("images=busybox:1.35") == {"images": "busybox:1.35"}
    with pytest.raises(ValueError):
        parse_options(["novalue"])


def test_exec_without_token_file_is_a_usage_error() -> None:
    code, _, err = run_cli("run", "--once", "--enable-exec")
    assert code == 2 and "--exec-token-file" in err


# --- the pod table ----------------------------------------------------------------------------


def status(
    name: str, state: ContainerState, ready: bool = False, restarts: int = 0
) -> ContainerStatus:
    return ContainerStatus(
        name=name, image="busybox", state=state, ready=ready, restart_count=restarts
    )


def pod(
    name: str, phase: str, *statuses: ContainerStatus, init: tuple[ContainerStatus, ...] = ()
) -> Pod:
    containers = tuple(Container(name=s.name, image="busybox") for s in statuses) or (
        Container(name="main", image="busybox"),
    )
    return Pod(
        ObjectMeta(name=name),
        PodSpec(
            containers=containers,
            init_containers=tuple(Container(name=s.name, image="busybox") for s in init),
        ),
        PodStatus(
            phase=phase,  # type: ignore[arg-type]
            start_time="2024-01-01T00:00:00Z",
            container_statuses=statuses,
            init_container_statuses=init,
        ),
    )


RUNNING = ContainerState(running=ContainerStateRunning("2024-01-01T00:00:00Z"))
CRASHING = ContainerState(waiting=ContainerStateWaiting("CrashLoopBackOff", "back-off 10s"))
COMPLETED = ContainerState(terminated=ContainerStateTerminated(0, "Completed"))
ERROR = ContainerState(terminated=ContainerStateTerminated(1, "Error"))
NO_REASON_EXIT = ContainerState(terminated=ContainerStateTerminated(3))
PULLING = ContainerState(waiting=ContainerStateWaiting("ContainerCreating"))


@pytest.mark.parametrize(
    "the_pod, text, verdict",
    [
        (pod("web", "Running", status("a", RUNNING, True)), "Running", "ok"),
        (pod("crash", "Running", status("a", CRASHING, restarts=3)), "CrashLoopBackOff", "failed"),
        (pod("job", "Succeeded", status("a", COMPLETED)), "Completed", "ok"),
        (pod("bad", "Failed", status("a", ERROR)), "Error", "failed"),
        (pod("exit", "Failed", status("a", NO_REASON_EXIT)), "ExitCode:3", "failed"),
        (pod("new", "Pending", status("a", PULLING)), "ContainerCreating", "pending"),
        (pod("new", "Pending"), "Pending", "pending"),
        (
            pod("init", "Pending", status("a", PULLING), init=(status("i", RUNNING),)),
            "Init:0/1",
            "pending",
        ),
        (
            pod("init", "Pending", status("a", PULLING), init=(status("i", CRASHING),)),
            "Init:CrashLoopBackOff",
            "failed",
        ),
        (
            pod("init", "Failed", status("a", PULLING), init=(status("i", ERROR),)),
            "Init:Error",
            "failed",
        ),
        (
            pod("half", "Running", status("a", RUNNING, True), status("b", RUNNING)),
            "Running",
            "pending",
        ),
    ],
)
def test_status_column_and_verdict(the_pod: Pod, text: str, verdict: str) -> None:
    assert pod_status_text(the_pod) == text
    assert pod_verdict(the_pod)[0] == verdict


def test_status_of_a_rejected_pod_shows_its_reason() -> None:
    rejected = Pod(
        ObjectMeta(name="late"),
        PodSpec(containers=(Container(name="a", image="x"),)),
        PodStatus(phase="Failed", reason="HostPortConflict", message="port 80 is taken"),
    )
    assert pod_status_text(rejected) == "HostPortConflict"
    verdict, reason = pod_verdict(rejected)
    assert verdict == "failed" and "HostPortConflict" in reason


def test_table_looks_like_kubectl() -> None:
    now = 1704067200.0 + 125  # 2024-01-01T00:02:05Z
    table = format_table(
        [
            pod("web", "Running", status("a", RUNNING, True), status("b", RUNNING, True, 2)),
            pod("crash", "Running", status("a", CRASHING, restarts=4)),
        ],
        now,
    )
    assert table.splitlines() == [
        "NAME    READY   STATUS             RESTARTS   AGE",
        "crash   0/1     CrashLoopBackOff   4          2m5s",
        "web     2/2     Running            2          2m5s",
    ]
    assert format_table([], now) == "No pods.\n"


def test_table_adds_namespace_when_several() -> None:
    other = Pod(
        ObjectMeta(name="x", namespace="kube-system"), PodSpec(containers=(Container("a", "b"),))
    )
    table = format_table([pod("web", "Pending"), other], 0.0)
    assert table.splitlines()[0].split() == [
        "NAMESPACE",
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
    ]
    assert "<unknown>" in table


# --- as a real program ----------------------------------------------------------------------------


def test_the_installed_command_validates_as_a_subprocess(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(THREE_MISTAKES)
    good = good_pod(tmp_path, "fine")
    script = Path(sys.executable).parent / "kubecore"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "kubecore"]
    result = subprocess.run(
        [*command, "validate", str(bad), str(good)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.count(f"{bad}: ") == 3
    assert "Traceback" not in result.stderr
    ok = subprocess.run(
        [sys.executable, "-m", "kubecore", "validate", str(good)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ok.returncode == 0 and "1 file OK" in ok.stdout


# --- pull progress and the display ----------------------------------------------------------------


class _Puller:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def pull(self, image: str, auth: Any = None, progress: Any = None) -> str:
        from kubecore._contract.errors import ImagePullError
        from kubecore._contract.values import PullProgress

        assert progress is not None
        progress(PullProgress(image, "Downloading", 50, 200, layer="l1"))
        progress(PullProgress(image, "Downloading", 10, 100, layer="l2"))
        if self.fail:
            raise ImagePullError("registry down")
        return "sha256:abc"

    def image_status(self, image: str) -> None:
        return None

    def list_images(self) -> list[Any]:
        return []

    def remove_image(self, image: str) -> None:
        pass

    def image_fs_usage(self) -> None:
        return None


def test_tracking_puller_reports_progress_and_outcome() -> None:
    from kubecore._cli import PullTracker, TrackingPuller, progress_bar
    from kubecore._contract.errors import ImagePullError

    tracker = PullTracker()
    seen: list[Any] = []
    snapshots: list[Any] = []

    class Peek(_Puller):
        def pull(self, image: str, auth: Any = None, progress: Any = None) -> str:
            result = super().pull(image, auth, progress)
            snapshots.append(tracker.active())
            return result

    puller = TrackingPuller(Peek(), tracker)
    assert puller.pull("busybox:1.35", None, seen.append) == "sha256:abc"
    assert len(seen) == 2  # the caller's own callback still gets every event
    assert snapshots == [[("busybox:1.35", "Downloading", 60, 300)]]
    assert tracker.active() == [] and tracker.finished == [("busybox:1.35", "pulled")]
    with pytest.raises(ImagePullError):
        TrackingPuller(_Puller(fail=True), tracker).pull("nginx:1", None, None)
    assert tracker.finished[-1][0] == "nginx:1" and "registry down" in tracker.finished[-1][1]
    assert progress_bar(60, 300, width=10) == "[##--------]  20%"
    assert progress_bar(0, 0, width=4) == "[????]"


def test_plain_display_logs_one_line_per_change(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from kubecore._cli import Display, PullTracker

    tracker = PullTracker()
    display = Display(io.StringIO(), False, "header", tracker)
    web = pod("web", "Pending", status("a", PULLING))
    with caplog.at_level(logging.INFO, logger="kubecore._cli"):
        display.refresh([web], 0.0, [])
        display.refresh([web], 1.0, [])  # unchanged: no line
        tracker.end("busybox:1.35", "pulled")
        display.refresh([pod("web", "Running", status("a", RUNNING, True))], 2.0, [])
        display.refresh([], 3.0, [])
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "pod default/web: 0/1 ContainerCreating restarts=0",
        "image busybox:1.35: pulled",
        "pod default/web: 1/1 Running restarts=0",
        "pod default/web: removed",
    ]


def test_live_display_draws_the_table_pulls_and_problems() -> None:
    from kubecore._cli import Display, PullTracker
    from kubecore._config.base import SourceProblem
    from kubecore._contract.errors import FieldError

    tracker = PullTracker()
    tracker.begin("nginx:1.25")
    out = io.StringIO()
    display = Display(out, True, "kubecore on node n", tracker)
    problem = SourceProblem(
        "/etc/pods/bad.yaml", (FieldError("spec.containers[0].image", "required"),)
    )
    display.refresh([pod("web", "Running", status("a", RUNNING, True))], 0.0, [problem])
    screen = out.getvalue()
    assert screen.startswith("\x1b[H\x1b[2J")
    assert "kubecore on node n" in screen and "NAME" in screen and "web" in screen
    assert "pulling nginx:1.25" in screen
    assert "/etc/pods/bad.yaml: spec.containers[0].image: required" in screen


# --- run ------------------------------------------------------------------------------------------


JOB = """apiVersion: v1
kind: Pod
metadata:
  name: job
spec:
  restartPolicy: OnFailure
  containers:
  - name: work
    image: busybox:1.35
    command: ["sh", "-c", "echo done"]
"""


@pytest.fixture
def good_dir(tmp_path: Path) -> Path:
    pods = tmp_path / "pods"
    pods.mkdir()
    good_pod(pods, "server")
    (pods / "job.yaml").write_text(JOB)
    return pods


def test_run_once_on_good_pods_converges_and_exits_0(tmp_path: Path, good_dir: Path) -> None:
    code, out, err = run_cli(*run_args(tmp_path, str(good_dir), "--once"))
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["server"][1:4] == ["1/1", "Running", "0"]
    assert rows["job"][1:3] == ["0/1", "Completed"]


def test_run_once_on_the_examples_reports_the_crash_loop(tmp_path: Path) -> None:
    code, out, err = run_cli(*run_args(tmp_path, str(EXAMPLES), "--runtime", "fake", "--once"))
    assert code == 1, out + err
    names = {
        line.split()[0] for line in out.splitlines()[1:] if line and not line.startswith("pod ")
    }
    assert {"web", "shared-volume", "job", "crashloop"} <= names
    assert "CrashLoopBackOff" in out
    failures = [line for line in out.splitlines() if line.startswith("pod ")]
    assert len(failures) == 1 and failures[0].startswith("pod default/crashloop failed:")


def test_run_once_with_a_bad_file_runs_the_rest_and_fails(tmp_path: Path, good_dir: Path) -> None:
    (good_dir / "bad.yaml").write_text(THREE_MISTAKES)
    code, out, _ = run_cli(*run_args(tmp_path, str(good_dir), "--once"))
    assert code == 1
    assert "server" in out and "Running" in out
    assert f"{good_dir / 'bad.yaml'}: spec.containers[0].image: " in out


def test_run_once_image_pull_backoff_fails_with_a_reason(tmp_path: Path, good_dir: Path) -> None:
    (good_dir / "missing.yaml").write_text(
        GOOD.format(name="missing", policy="Always", command='["sleep", "1"]').replace(
            "busybox:1.35", "registry.invalid/none:1"
        )
    )
    code, out, _ = run_cli(
        *run_args(tmp_path, str(good_dir), "--once", "--runtime-option", "images=busybox:1.35")
    )
    assert code == 1
    assert "pod default/missing failed: container main: ImagePullBackOff" in out


def test_run_once_from_env_and_deadline(tmp_path: Path) -> None:
    pods = tmp_path / "slow"
    pods.mkdir()
    # readiness never passes: the pod never converges, so the deadline ends the run
    (pods / "never.yaml").write_text(
        GOOD.format(name="never", policy="Always", command='["sleep", "3600"]')
        + '    readinessProbe:\n      exec:\n        command: ["false"]\n'
    )
    code, out, _ = run_cli(
        *run_args(tmp_path, str(pods)),
        env={"KUBECORE_ONCE": "true", "KUBECORE_DEADLINE": "30"},
    )
    assert code == 1
    assert "pod default/never did not converge in 30s" in out


def test_run_once_from_a_manifest_url(tmp_path: Path) -> None:
    import http.server
    import threading

    body = JOB.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/pods"
        code, out, err = run_cli(*run_args(tmp_path, "--manifest-url", url, "--once"))
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert code == 0, out + err
    assert "job" in out and "Completed" in out


def test_run_unknown_runtime(tmp_path: Path) -> None:
    code, out, _ = run_cli(*run_args(tmp_path, "--runtime", "nonesuch", "--once"))
    assert code == 1 and "unknown runtime 'nonesuch'" in out and "fake" in out


def test_run_bad_manifest_url_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run_cli(*run_args(tmp_path, "--manifest-url", "ftp://x/pods", "--once"))
    assert code == 2 and "--manifest-url" in err


def _command() -> list[str]:
    script = Path(sys.executable).parent / "kubecore"
    return [str(script)] if script.exists() else [sys.executable, "-m", "kubecore"]


def test_run_once_as_a_subprocess(tmp_path: Path, good_dir: Path) -> None:
    result = subprocess.run(
        [*_command(), *run_args(tmp_path, str(good_dir), "--once")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "server" in result.stdout and "Completed" in result.stdout


def _read_until(stream: Any, marker: str, timeout: float) -> str:
    """Read lines from a pipe until one contains ``marker`` (bounded in time).

    A thread does the reading: ``select`` on the pipe cannot see lines already pulled into the
    text stream's buffer, so it would wait for output that has in fact arrived."""
    import queue
    import threading
    import time

    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in iter(stream.readline, ""):
            lines.put(line)
            if marker in line:
                return

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            seen.append(lines.get(timeout=max(0.0, deadline - time.monotonic())))
            if marker in seen[-1]:
                return "".join(seen)
    except queue.Empty:
        raise AssertionError(f"{marker!r} not seen in:\n{''.join(seen)}") from None


def test_run_serves_the_api_and_stops_cleanly_on_sigterm(tmp_path: Path, good_dir: Path) -> None:
    import signal
    import socket

    import requests

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [
            *_command(),
            "run",
            str(good_dir),
            "--root-dir",
            str(tmp_path / "root"),
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        _read_until(process.stderr, "kubelet API listening on", 60)
        _read_until(process.stderr, "pod default/server: 1/1 Running", 60)
        assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=10).text == "ok\n"
        names = [
            p["metadata"]["name"]
            for p in requests.get(f"http://127.0.0.1:{port}/pods", timeout=10).json()["items"]
        ]
        assert sorted(names) == ["job", "server"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        rest = process.stderr.read()
        assert "stopping" in rest and "Traceback" not in rest
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2)


def test_runtime_options_from_env_keep_commas_in_values() -> None:
    settings = resolve_settings(
        {}, {"KUBECORE_RUNTIME_OPTION": "images=busybox:1.35,nginx:1.25,pulled=x"}, None
    )
    assert settings["runtime_option"] == {"images": "busybox:1.35,nginx:1.25", "pulled": "x"}
