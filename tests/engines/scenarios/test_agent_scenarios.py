"""The agent (Kubelet) end to end on every engine (the ``engine`` fixture: Docker, then the CRI on
containerd), in real time: containers of a pod together, an emptyDir they share, a hostPort
on loopback, restart policy and CrashLoopBackOff, liveness probes, a failing postStart hook, logs
and exec, container GC, pulls from the local registries with and without credentials (through
the agent and through ``kubecore run --once --registry-config``), and a new agent adopting what
the last one started.

Each test runs its pods in a namespace of its own (``e2e-<uid>``), all of whose sandboxes and
containers are removed afterwards. The agents relist every 0.3 s with 1 s grace periods.
CrashLoopBackOff keeps Kubernetes' 10 s initial delay (not configurable through
``KubeletConfig``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet
from kubecore._contract.errors import ContainerNotFound, NotFound, RuntimeTimeout
from kubecore._kuberuntime.credentials import DockerKeyring, KeyringPuller
from tests.engines.docker.e2e_helpers import (
    SERVER,
    AgentFactory,
    all_running,
    container,
    docker_config,
    exec_until,
    forever,
    get_pod,
    make_pod,
    running_ids,
    status_of,
    wait_pod,
)
from tests.engines.docker.helpers import free_port, wait_for
from tests.engines.engine_support import EngineUnderTest

# busybox httpd serving one page, exiting at once on TERM (httpd as PID 1 would ignore it).
HTTPD = [
    "sh",
    "-c",
    "trap 'exit 0' TERM; mkdir -p /www; echo \"$GREETING\" > /www/index.html;"
    " httpd -f -p 8080 -h /www & wait $!",
]
GREETING = "hello from the server container"


def reasons(kubelet: Kubelet, namespace: str, name: str) -> list[str]:
    return kubelet._rooms.events.reasons(namespace=namespace, name=name)


def credentials(engine: EngineUnderTest) -> tuple[str, str]:
    return engine.registries.auth_user, engine.registries.auth_password


def write_docker_config(path: Path, auths: dict[str, tuple[str, str]]) -> DockerKeyring:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(docker_config(auths)))
    return DockerKeyring.from_file(path)


def test_containers_of_a_pod_reach_each_other_over_localhost(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    pod = make_pod(
        "web",
        namespace,
        [
            container("server", engine.image, HTTPD, env=[{"name": "GREETING", "value": GREETING}]),
            container("client", engine.image),
        ],
    )
    kubelet = make_agent([pod])
    running = wait_pod(kubelet, namespace, "web", all_running, what="web running")
    ids = running_ids(running)
    assert ids["server"] != ids["client"]

    result = exec_until(
        kubelet, namespace, "web", "client", ["wget", "-qO-", "http://127.0.0.1:8080/"]
    )
    assert result.exit_code == 0, result
    assert result.stdout.decode().strip() == GREETING
    # One sandbox, two app containers.
    assert len(engine.sandboxes(namespace)) == 1
    assert sorted(c.name for c in engine.containers(namespace)) == ["client", "server"]


def test_an_empty_dir_is_shared_by_the_pods_containers(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str, tmp_path: Path
) -> None:
    pod = make_pod(
        "shared",
        namespace,
        [
            container(
                "writer",
                engine.image,
                forever("echo written-by-writer > /data/from-writer"),
                volumeMounts=[{"name": "scratch", "mountPath": "/data"}],
            ),
            container(
                "reader", engine.image, volumeMounts=[{"name": "scratch", "mountPath": "/shared"}]
            ),
            container(
                "viewer",
                engine.image,
                volumeMounts=[{"name": "scratch", "mountPath": "/view", "readOnly": True}],
            ),
        ],
        volumes=[{"name": "scratch", "emptyDir": {}}],
    )
    kubelet = make_agent([pod])
    wait_pod(kubelet, namespace, "shared", all_running)

    # Until the writer's line is there (its shell makes the file, then writes the line).
    read = exec_until(
        kubelet,
        namespace,
        "shared",
        "reader",
        ["cat", "/shared/from-writer"],
        ok=lambda r: r.stdout,
    )
    assert read.stdout == b"written-by-writer\n", read
    wrote = kubelet.streams.exec(
        namespace, "shared", "reader", ["sh", "-c", "echo back > /shared/from-reader"]
    )
    assert wrote.exit_code == 0, wrote
    back = kubelet.streams.exec(namespace, "shared", "writer", ["cat", "/data/from-reader"])
    assert back.stdout == b"back\n"
    seen = kubelet.streams.exec(namespace, "shared", "viewer", ["cat", "/view/from-writer"])
    assert seen.stdout == b"written-by-writer\n"
    refused = kubelet.streams.exec(
        namespace, "shared", "viewer", ["sh", "-c", "echo x > /view/nope"]
    )
    assert refused.exit_code != 0
    # The volume is a directory under the agent's root dir, on the engine's host.
    on_host = [p for p in (tmp_path / "root").rglob("from-writer") if pod.uid in str(p)]
    assert len(on_host) == 1 and on_host[0].read_text() == "written-by-writer\n"


def test_an_exiting_container_is_restarted_with_backoff(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    pod = make_pod(
        "crash",
        namespace,
        [container("crasher", engine.image, ["sh", "-c", "echo crashing; exit 3"])],
        restartPolicy="Always",
    )
    kubelet = make_agent([pod])
    counts: list[tuple[float, int]] = []
    waiting: set[str] = set()
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        status = status_of(get_pod(kubelet, namespace, "crash"), "crasher")
        if status is not None:
            if not counts or counts[-1][1] != status.restart_count:
                counts.append((time.monotonic(), status.restart_count))
            if status.state.waiting is not None:
                waiting.add(status.state.waiting.reason)
            if status.restart_count >= 2:
                break
        time.sleep(0.1)
    assert counts and counts[-1][1] >= 2, counts
    assert [c for _, c in counts] == sorted(c for _, c in counts), "restartCount never goes back"
    assert "CrashLoopBackOff" in waiting, waiting
    # The second restart waited out the first backoff (10 s; the first restart is at once).
    first = next(t for t, c in counts if c >= 1)
    second = next(t for t, c in counts if c >= 2)
    assert second - first >= 8.0, counts

    final = status_of(get_pod(kubelet, namespace, "crash"), "crasher")
    assert final is not None
    last = final.last_state.terminated or final.state.terminated
    assert last is not None and last.exit_code == 3
    assert "BackOff" in reasons(kubelet, namespace, "crash")
    # The last run's output, as ``kubectl logs --previous`` asks for it.
    previous = kubelet.streams.logs(namespace, "crash", "crasher", previous=True)
    assert list(previous) == [b"crashing\n"]
    attempts = {c.attempt for c in engine.containers(namespace, "crasher")}
    assert {0, 1, 2} <= attempts, attempts


def test_a_failing_liveness_probe_restarts_its_container(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    pod = make_pod(
        "live",
        namespace,
        [
            container(
                "app",
                engine.image,
                forever("touch /tmp/healthy"),
                livenessProbe={
                    "exec": {"command": ["test", "-f", "/tmp/healthy"]},
                    "periodSeconds": 1,
                    "failureThreshold": 1,
                    "timeoutSeconds": 2,
                },
            )
        ],
    )
    kubelet = make_agent([pod])
    first = running_ids(wait_pod(kubelet, namespace, "live", all_running))["app"]
    # Healthy: a few probe periods pass without a restart.
    time.sleep(2.5)
    status = status_of(get_pod(kubelet, namespace, "live"), "app")
    assert status is not None and status.restart_count == 0

    broken = kubelet.streams.exec(namespace, "live", "app", ["rm", "/tmp/healthy"])
    assert broken.exit_code == 0
    restarted = wait_pod(
        kubelet,
        namespace,
        "live",
        lambda p: all_running(p) and running_ids(p)["app"] != first,
        timeout=20,
        what="the container restarted",
    )
    status = status_of(restarted, "app")
    assert status is not None and status.restart_count == 1
    events = kubelet.views.recent_events(namespace=namespace, name="live")
    assert any(e.reason == "Unhealthy" for e in events)
    assert any(e.reason == "Killing" and "liveness" in e.message for e in events)
    assert [c.running for c in engine.containers(namespace) if c.id == first] == [False]
    # The new container is healthy (it made the file again): it stays.
    time.sleep(2.0)
    status = status_of(get_pod(kubelet, namespace, "live"), "app")
    assert status is not None and status.restart_count == 1


def test_a_failing_post_start_hook_kills_the_container(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    pod = make_pod(
        "hook",
        namespace,
        [
            container(
                "app",
                engine.image,
                lifecycle={
                    "postStart": {"exec": {"command": ["sh", "-c", "echo hook-broke >&2; exit 3"]}}
                },
            )
        ],
    )
    kubelet = make_agent([pod])
    failed = wait_for(
        lambda: kubelet.views.recent_events(
            namespace=namespace, name="hook", reason="FailedPostStartHook"
        ),
        timeout=15,
        what="a FailedPostStartHook event",
    )
    assert "exited with 3" in failed[0].message and "hook-broke" in failed[0].message
    # The kill comes after the hook's event, in the same sync: wait for it, do not race it.
    wait_for(
        lambda: [
            e
            for e in kubelet.views.recent_events(namespace=namespace, name="hook", reason="Killing")
            if "postStart" in e.message
        ],
        timeout=30,
        what="the Killing event of the postStart failure",
    )
    # The container the hook failed in was stopped by the agent, and is not running.
    attempts = wait_for(
        lambda: [
            c for c in engine.containers(namespace, "app") if c.attempt == 0 and not c.running
        ],
        timeout=30,
        what="the first container stopped",
    )
    assert len(attempts) == 1
    # It is restarted (and fails again): the restart count grows.
    wait_pod(
        kubelet,
        namespace,
        "hook",
        lambda p: (s := status_of(p, "app")) is not None and s.restart_count >= 1,
        timeout=15,
        what="a restart after the hook failed",
    )


def test_logs_and_exec_through_the_agent(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    pod = make_pod(
        "talk",
        namespace,
        [
            container(
                "talker",
                engine.image,
                forever('echo line-one; echo line-two >&2; echo "$GREETING"'),
                env=[{"name": "GREETING", "value": "hi-from-env"}],
            )
        ],
    )
    kubelet = make_agent([pod])
    wait_pod(kubelet, namespace, "talk", all_running)

    lines = wait_for(
        lambda: (
            found
            if len(found := list(kubelet.streams.logs(namespace, "talk", "talker"))) >= 3
            else None
        ),
        timeout=30,
        what="three log lines",
    )
    assert sorted(lines) == [b"hi-from-env\n", b"line-one\n", b"line-two\n"]
    # stdout and stderr reach the log in either order; tail follows the log's own order.
    assert list(kubelet.streams.logs(namespace, "talk", "talker", tail=1)) == lines[-1:]
    stamped = list(kubelet.streams.logs(namespace, "talk", "talker", timestamps=True))
    assert len(stamped) == 3
    assert all(line[:2] == b"20" and b"T" in line.split(b" ", 1)[0] for line in stamped)
    follow = kubelet.streams.logs(namespace, "talk", "talker", follow=True)
    try:
        assert next(follow) in (b"line-one\n", b"line-two\n", b"hi-from-env\n")
    finally:
        close = getattr(follow, "close", None)
        if close is not None:
            close()

    result = kubelet.streams.exec(
        namespace, "talk", "talker", ["sh", "-c", "echo out; echo err >&2; exit 7"]
    )
    assert result.exit_code == 7
    assert result.stdout == b"out\n"
    assert result.stderr == b"err\n"
    env = kubelet.streams.exec(namespace, "talk", "talker", ["sh", "-c", "echo $GREETING"])
    assert env.stdout == b"hi-from-env\n"
    with pytest.raises(RuntimeTimeout):
        kubelet.streams.exec(namespace, "talk", "talker", ["sleep", "5"], timeout=0.5)
    with pytest.raises(ContainerNotFound):
        kubelet.streams.exec(namespace, "talk", "nobody", ["true"])
    with pytest.raises(NotFound):
        kubelet.streams.exec(namespace, "missing", "talker", ["true"])


def test_container_gc_keeps_one_dead_container_per_container(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    pod = make_pod(
        "gc",
        namespace,
        [
            container("crasher", engine.image, ["sh", "-c", "exit 1"]),
            container("steady", engine.image),
        ],
    )
    kubelet = make_agent(
        [pod], container_gc_interval=0.3, gc_max_dead_per_container=1, gc_min_age=0.0
    )

    def attempts() -> list[str]:
        return sorted(str(c.attempt) for c in engine.containers(namespace, "crasher"))

    # Attempt 0 died, attempt 1 died (then backs off 10 s): GC removes attempt 0.
    wait_pod(
        kubelet,
        namespace,
        "gc",
        lambda p: (
            (s := status_of(p, "crasher")) is not None
            and s.restart_count == 1
            and s.state.waiting is not None
        ),
        timeout=15,
        what="the second attempt dead",
    )
    assert wait_for(lambda: attempts() == ["1"], timeout=30, what="attempt 0 collected")
    steady = engine.containers(namespace, "steady")
    assert [c.running for c in steady] == [True]  # running containers are never collected
    status = status_of(get_pod(kubelet, namespace, "gc"), "crasher")
    assert status is not None and status.restart_count == 1  # counts survive collection


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_an_image_is_pulled_from_the_local_registry(
    make_agent: AgentFactory,
    engine: EngineUnderTest,
    namespace: str,
    own_images: list[str],
    host: str,
) -> None:
    image = engine.registries.image.replace("localhost", host, 1)
    own_images.append(image)  # untagged afterwards (the image is the test image)
    engine.remove_image(image)
    pod = make_pod("pulled", namespace, [container("app", image, imagePullPolicy="Always")])
    kubelet = make_agent([pod])
    running = wait_pod(kubelet, namespace, "pulled", all_running, timeout=30)
    status = status_of(running, "app")
    assert status is not None and status.image == image
    events = kubelet.views.recent_events(namespace=namespace, name="pulled")
    assert [e.reason for e in events if e.reason.startswith("Pull")][:2] == ["Pulling", "Pulled"]
    assert any(e.reason == "Pulled" and "Successfully pulled" in e.message for e in events)
    assert engine.has_image(image)


@pytest.mark.parametrize("via", ["node-keyring", "pod-pull-secret"])
def test_the_auth_registry_with_credentials(
    make_agent: AgentFactory,
    engine: EngineUnderTest,
    namespace: str,
    own_images: list[str],
    tmp_path: Path,
    via: str,
) -> None:
    image = engine.registries.auth_image
    own_images.append(image)
    engine.remove_image(image)
    registry = image.split("/")[0]
    keyring = write_docker_config(
        tmp_path / "docker" / "config.json",
        {registry: credentials(engine)},
    )
    spec: dict[str, Any] = {}
    if via == "node-keyring":
        kubelet_kwargs: dict[str, Any] = {"wrap": lambda p: KeyringPuller(p, keyring)}
    else:
        kubelet_kwargs = {"pull_secrets": {(namespace, "regcred"): keyring}}
        spec["imagePullSecrets"] = [{"name": "regcred"}]
    pod = make_pod(
        "private", namespace, [container("app", image, imagePullPolicy="Always")], **spec
    )
    kubelet = make_agent([pod], **kubelet_kwargs)
    wait_pod(kubelet, namespace, "private", all_running, timeout=30)
    events = kubelet.views.recent_events(namespace=namespace, name="private")
    assert "Failed" not in [e.reason for e in events]
    assert any(e.reason == "Pulled" and "Successfully pulled" in e.message for e in events)
    assert engine.has_image(image)


def test_the_auth_registry_without_credentials(
    make_agent: AgentFactory,
    engine: EngineUnderTest,
    namespace: str,
    tmp_path: Path,
) -> None:
    image = engine.registries.auth_image
    registry = image.split("/")[0]
    # Credentials for the same registry under another host name do not apply (as in Docker).
    other = registry.replace("localhost", "127.0.0.1", 1)
    assert other != registry
    keyring = write_docker_config(
        tmp_path / "docker" / "config.json",
        {other: credentials(engine)},
    )
    pod = make_pod("private", namespace, [container("app", image, imagePullPolicy="Always")])
    kubelet = make_agent([pod], wrap=lambda p: KeyringPuller(p, keyring))
    failing = wait_pod(
        kubelet,
        namespace,
        "private",
        lambda p: (
            (s := status_of(p, "app")) is not None
            and s.state.waiting is not None
            and s.state.waiting.reason in ("ErrImagePull", "ImagePullBackOff")
        ),
        timeout=20,
        what="ErrImagePull / ImagePullBackOff",
    )
    assert failing.status is not None and failing.status.phase == "Pending"
    failed = kubelet.views.recent_events(namespace=namespace, name="private", reason="Failed")
    assert failed and "Failed to pull image" in failed[0].message
    assert "auth" in failed[0].message.lower(), failed[0].message  # refused, not unreachable
    assert engine.containers(namespace, "app") == []


def test_a_new_agent_adopts_every_running_container(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    pods = [
        make_pod(
            "web",
            namespace,
            [
                container("server", engine.image, HTTPD, env=[{"name": "GREETING", "value": "x"}]),
                container("client", engine.image),
            ],
        ),
        make_pod("solo", namespace, [container("app", engine.image, SERVER)]),
    ]
    first = make_agent(pods)
    for pod in pods:
        wait_pod(first, namespace, pod.metadata.name, all_running)
    assert first.wait_idle(15)
    before = {p.metadata.name: running_ids(p) for p in first.pods()}
    engine_before = {c.id: c.running for c in engine.containers(namespace)}
    assert len(engine_before) == 3 and set(engine_before.values()) == {True}
    sandboxes_before = {s.id for s in engine.sandboxes(namespace)}
    assert len(sandboxes_before) == 2
    first.stop()

    second = make_agent(pods)
    assert second.wait_idle(15)
    for pod in pods:
        adopted = wait_pod(second, namespace, pod.metadata.name, all_running)
        assert running_ids(adopted) == before[pod.metadata.name]
        assert adopted.status is not None
        assert all(s.restart_count == 0 for s in adopted.status.container_statuses)
    assert {c.id: c.running for c in engine.containers(namespace)} == engine_before
    assert {s.id for s in engine.sandboxes(namespace)} == sandboxes_before
    assert not {"Created", "Started", "Killing", "Pulling"} & set(second._rooms.events.reasons()), (
        second._rooms.events.reasons()
    )

    # Adopted containers are managed: one that dies is restarted by the new agent.
    code, _ = engine.exec(before["solo"]["app"], ["kill", "1"])  # SERVER exits on TERM
    assert code in (0, 137, 143, -1), code
    restarted = wait_pod(
        second,
        namespace,
        "solo",
        lambda p: all_running(p) and running_ids(p)["app"] != before["solo"]["app"],
        timeout=15,
        what="the killed container restarted",
    )
    status = status_of(restarted, "app")
    assert status is not None and status.restart_count == 1


def test_cli_run_once_pulls_with_registry_config(
    engine: EngineUnderTest, namespace: str, own_images: list[str], tmp_path: Path
) -> None:
    """``kubecore run --runtime NAME --once --registry-config FILE`` on the engine."""
    image = engine.registries.auth_image
    own_images.append(image)
    registry = image.split("/")[0]
    config = tmp_path / "docker" / "config.json"
    write_docker_config(config, {registry: credentials(engine)})
    manifests = tmp_path / "pods"
    manifests.mkdir()
    (manifests / "private.yaml").write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "cli-private", "namespace": namespace},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "app",
                            "image": image,
                            "imagePullPolicy": "Always",
                            "command": SERVER,
                        }
                    ],
                },
            }
        )
    )
    base = [
        sys.executable, "-m", "kubecore", "run", str(manifests), *engine.run_arguments(tmp_path),
        "--root-dir", str(tmp_path / "root"), "--once", "--deadline", "30", "--port", "0",
        "--log-level", "warning",
    ]  # fmt: skip
    env = {**os.environ, "DOCKER_CONFIG": str(tmp_path / "empty-docker-config")}
    refused = subprocess.run(base, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "cli-private" in refused.stdout
    done = subprocess.run(
        [*base, "--registry-config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    running = [c for c in engine.containers(namespace, "app") if c.running]
    assert [c.pod for c in running] == ["cli-private"]


def http_get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            body: bytes = response.read()
            return body
    except (OSError, urllib.error.URLError):
        return None


def test_a_host_port_is_reachable_on_loopback(
    make_agent: AgentFactory, engine: EngineUnderTest, namespace: str
) -> None:
    port = free_port()
    pod = make_pod(
        "exposed",
        namespace,
        [
            container(
                "server",
                engine.image,
                HTTPD,
                env=[{"name": "GREETING", "value": "hello over the host port"}],
                ports=[{"containerPort": 8080, "hostPort": port}],
            )
        ],
    )
    kubelet = make_agent([pod])
    wait_pod(kubelet, namespace, "exposed", all_running)
    body = wait_for(
        lambda: http_get(f"http://127.0.0.1:{port}/"), timeout=30, what=f"127.0.0.1:{port}"
    )
    assert body == b"hello over the host port\n"
