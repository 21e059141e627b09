"""``kubecore run`` on the real Docker engine, restarted with SIGTERM and with kill -9: the pods,
ConfigMap and Secret written over its Kubernetes API are read back from ``<root-dir>/api``, their
containers keep running (same ids) and the files the pods wrote into their ``emptyDir`` stay."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from kubecore._contract.labels import POD_NAMESPACE_LABEL, POD_UID_LABEL
from tests.engines.docker.conftest import TestEngine, remove_labelled
from tests.engines.docker.helpers import free_port, wait_for

pytestmark = pytest.mark.docker

TOKEN = "store-docker-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRET_VALUE = "docker-store-hunter2"
API_PODS = ("web", "worker", "cache")


def writer_pod(name: str, namespace: str, image: str) -> dict[str, Any]:
    """A pod that writes a file into its emptyDir once, then runs until TERM."""
    script = (
        f"trap 'exit 0' TERM; [ -f /scratch/user-file ] || echo {name} > /scratch/user-file;"
        " while :; do sleep 1 & wait $!; done"
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "volumes": [{"name": "scratch", "emptyDir": {}}],
            "containers": [
                {
                    "name": "app",
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", script],
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                }
            ],
        },
    }


@pytest.fixture
def namespace(raw: Any, test_uid: str) -> Iterator[str]:
    ns = f"store-{test_uid}"
    yield ns
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={ns}")


class Agent:
    """``kubecore run`` as a process on the engine, restartable, on one root dir and port."""

    def __init__(self, engine: TestEngine, namespace: str, tmp: Path) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        manifests = tmp / "manifests"
        manifests.mkdir()
        static = writer_pod("static", namespace, engine.image)
        (manifests / "static.json").write_text(json.dumps(static))
        token = tmp / "token"
        token.write_text(TOKEN + "\n")
        self.command = [
            sys.executable, "-m", "kubecore", "run", str(manifests), "--runtime", "docker",
            "--runtime-option", f"base_url={engine.base_url}",
            "--runtime-option", f"sandbox_image={engine.pause_image}",
            "--root-dir", str(tmp / "root"), "--node-name", namespace,
            "--address", "127.0.0.1", "--port", str(self.port), "--api-token-file", str(token),
            "--relist-interval", "0.3", "--housekeeping-interval", "0.5",
            "--log-level", "warning",
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def start(self) -> None:
        self.runs += 1
        log = open(self.tmp / f"agent-{self.runs}.log", "wb")  # noqa: SIM115 - the child's
        self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_for(self._healthy, timeout=60, interval=0.2, what="the agent's /healthz")

    def _healthy(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"the agent exited ({self.process.returncode}):\n{self.log()}")
        with contextlib.suppress(requests.RequestException):
            return requests.get(self.url + "/healthz", timeout=2).text == "ok\n"
        return False

    def log(self) -> str:
        return (self.tmp / f"agent-{self.runs}.log").read_text(errors="replace")

    def stop(self, how: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(how)
        self.process.wait(timeout=30)
        self.process = None

    def send(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, self.url + path, headers=AUTH, timeout=10, **kwargs)

    def get(self, path: str) -> Any:
        answer = self.send("GET", path)
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture
def agent(engine: TestEngine, namespace: str, tmp_path: Path) -> Iterator[Agent]:
    found = Agent(engine, namespace, tmp_path)
    try:
        yield found
    finally:
        if found.process is not None:
            found.stop(signal.SIGTERM)


def engine_view(raw: Any, namespace: str) -> dict[str, str]:
    """Every container of the namespace on the engine (sandboxes too): id -> state."""
    found = raw.containers(all=True, filters={"label": f"{POD_NAMESPACE_LABEL}={namespace}"})
    return {c["Id"]: c["State"] for c in found}


def pods_running(agent: Agent, namespace: str, names: set[str]) -> dict[str, Any] | None:
    """The API's pods of the namespace once ``names`` all show Running with a container id."""
    items = agent.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    pods = {p["metadata"]["name"]: p for p in items}
    if set(pods) != names:
        return None
    for pod in pods.values():
        statuses = pod["status"].get("containerStatuses") or []
        if pod["status"].get("phase") != "Running" or not all(
            s.get("state", {}).get("running") for s in statuses
        ):
            return None
    return pods


def user_files(root: Path, uids: dict[str, str]) -> dict[str, str]:
    """Pod name -> what its emptyDir's user-file holds on the host ('' when it is gone)."""
    found = {}
    for name, uid in uids.items():
        path = root / "pods" / uid / "volumes/kubernetes.io~empty-dir/scratch/user-file"
        found[name] = path.read_text().strip() if path.exists() else ""
    return found


def test_api_pods_survive_sigterm_and_kill_9_on_docker(
    agent: Agent, engine: TestEngine, namespace: str, raw: Any, tmp_path: Path
) -> None:
    agent.start()
    base = f"/api/v1/namespaces/{namespace}"
    for name in API_PODS:
        created = agent.send("POST", base + "/pods", json=writer_pod(name, namespace, engine.image))
        assert created.status_code == 201, created.text
    config = {"metadata": {"name": "settings"}, "data": {"level": "debug"}}
    assert agent.send("POST", base + "/configmaps", json=config).status_code == 201
    secret = {"metadata": {"name": "db"}, "stringData": {"password": SECRET_VALUE}}
    assert agent.send("POST", base + "/secrets", json=secret).status_code == 201
    every = {*API_PODS, "static"}
    first = wait_for(
        lambda: pods_running(agent, namespace, every), timeout=90, what="the pods running"
    )
    uids = {name: pod["metadata"]["uid"] for name, pod in first.items()}
    created = {name: first[name]["metadata"]["creationTimestamp"] for name in API_PODS}
    root = tmp_path / "root"
    wait_for(
        lambda: user_files(root, uids) == {name: name for name in uids},
        timeout=30,
        what="every pod's file in its emptyDir",
    )
    containers = engine_view(raw, namespace)
    assert set(containers.values()) == {"running"} and len(containers) == 8  # 4 sandboxes + 4

    for how in (signal.SIGTERM, signal.SIGKILL):
        agent.stop(how)
        agent.start()
        again = wait_for(
            lambda: pods_running(agent, namespace, every),
            timeout=60,
            what=f"the pods running after {how.name}",
        )
        assert {name: pod["metadata"]["uid"] for name, pod in again.items()} == uids
        assert {n: again[n]["metadata"]["creationTimestamp"] for n in API_PODS} == created
        assert engine_view(raw, namespace) == containers, agent.log()
        assert user_files(root, uids) == {name: name for name in uids}
        assert [c["metadata"]["name"] for c in agent.get(base + "/configmaps")["items"]] == [
            "settings"
        ]
        stored = agent.get(base + "/secrets/db")
        assert stored["data"] == {"password": "ZG9ja2VyLXN0b3JlLWh1bnRlcjI="}
        for line in agent.log().splitlines():
            assert SECRET_VALUE not in line and "ZG9ja2VyLXN0b3JlLWh1bnRlcjI=" not in line

    # A delete over the API is for good: killed at once after it, the agent comes back without
    # the pod and stops what is left of it.
    assert agent.send("DELETE", base + "/pods/cache").status_code == 200
    agent.stop(signal.SIGKILL)
    agent.start()

    def cache_gone() -> bool:
        running = raw.containers(filters={"label": f"{POD_UID_LABEL}={uids['cache']}"})
        return not running and pods_running(agent, namespace, every - {"cache"}) is not None

    wait_for(cache_gone, timeout=60, what="cache stopped, the others running")
    assert not os.path.exists(root / "api/pods" / f"{namespace}_cache.json")
    assert os.path.exists(root / "api/pods" / f"{namespace}_web.json")
    running = {
        c["Id"] for c in raw.containers(filters={"label": f"{POD_NAMESPACE_LABEL}={namespace}"})
    }
    assert running <= set(containers) and len(running) == 6  # the same ones, less cache's
