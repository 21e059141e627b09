"""What is written over the node's Kubernetes API survives a restart of the agent: the API's store
under ``<root-dir>/api`` (``kubecore._api.store``), read back by ``attach_api`` before the first
pass. On the fake runtime, in virtual time; the API is driven over HTTP as kubectl drives it."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import requests

from kubecore._api.server import ApiServerConfig, KubeApi, attach_api
from kubecore._api.store import STALE_TEMP_SECONDS, ApiStore, replace_file
from kubecore._config.static import StaticSource
from kubecore._contract.labels import POD_NAME_LABEL, POD_UID_LABEL
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._manifest import load_pods_from_string
from kubecore._model.v1 import ConfigMap, ObjectMeta, Secret
from tests.agent.support import Node, make_node

TOKEN = "store-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PODS = "/api/v1/namespaces/default/pods"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
SECRET_VALUE = "store-hunter2"
MUTATING = {"run_sandbox", "create_container", "start_container", "stop_container",
            "remove_container", "stop_sandbox", "remove_sandbox"}  # fmt: skip

STATIC = """
apiVersion: v1
kind: Pod
metadata: {name: static}
spec:
  containers: [{name: app, image: busybox:1.36, command: [server]}]
"""


def api_pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": name}},
        "spec": {
            "volumes": [{"name": "scratch", "emptyDir": {}}],
            "containers": [
                {
                    "name": "app",
                    "image": "busybox:1.36",
                    "command": ["server"],
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                }
            ],
        },
    }


CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
          "data": {"level": "debug"}}  # fmt: skip
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "type": "Opaque",
          "stringData": {"password": SECRET_VALUE}}  # fmt: skip


@attrs.define
class Agent:
    """One run of the agent: the kubelet of ``node``, its API, and the API over HTTP."""

    node: Node
    api: KubeApi
    http: KubeletServer
    servers: list[KubeletServer]
    """Every run's server (stopped at the end of the test)."""

    def send(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("headers", AUTH)
        return requests.request(method, self.http.url + path, timeout=10, **kwargs)

    def get(self, path: str) -> Any:
        answer = self.send("GET", path)
        assert answer.status_code == 200, answer.text
        return answer.json()


def start_agent(node: Node, servers: list[KubeletServer]) -> Agent:
    """The agent as ``kubecore run`` wires it: a manifest source, then the API, then passes."""
    token = node.tmp / "token"
    token.write_text(TOKEN + "\n")
    node.kubelet.register_source("file")
    StaticSource(load_pods_from_string(STATIC), name="file", sink=node.kubelet.update)
    api = attach_api(node.kubelet, ApiServerConfig(token_file=str(token)), address="127.0.0.1")
    http = KubeletServer(node.kubelet, ServerConfig(port=0, request_timeout=10.0), api=api)
    servers.append(http.start())
    return Agent(node, api, http, servers)


def restart(agent: Agent) -> Agent:
    """Stop the agent and start a new one on the same runtime and root directory."""
    agent.http.stop()
    agent.servers.remove(agent.http)
    agent.node.restart_kubelet()
    return start_agent(agent.node, agent.servers)


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    servers: list[KubeletServer] = []
    try:
        yield start_agent(make_node(tmp_path), servers)
    finally:
        for server in servers:
            server.stop()


def store_dir(node: Node) -> Path:
    return Path(node.kubelet.root_dir) / "api"


def running_ids(node: Node) -> dict[str, str]:
    return {c.labels[POD_NAME_LABEL]: c.id for c in node.running()}


def scratch(node: Node, uid: str) -> Path:
    return (
        Path(node.kubelet._rooms.volumes.pod_dir(uid)) / "volumes/kubernetes.io~empty-dir/scratch"
    )


def populate(agent: Agent) -> dict[str, Any]:
    """Pods, a ConfigMap and a Secret over the API, running; what the API answered for each."""
    for name in ("web", "db", "cache"):
        created = agent.send("POST", PODS, json=api_pod(name))
        assert created.status_code == 201, created.text
    patched = agent.send(
        "PATCH",
        PODS + "/web",
        data=json.dumps({"metadata": {"labels": {"patched": "yes"}}}),
        headers={**AUTH, "Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert agent.send("POST", CONFIGMAPS, json=CONFIG).status_code == 201
    assert agent.send("POST", SECRETS, json=SECRET).status_code == 201
    agent.node.converge()
    seen = {
        "pods": {p["metadata"]["name"]: p for p in agent.get(PODS)["items"]},
        "configmaps": agent.get(CONFIGMAPS + "/settings"),
        "secrets": agent.get(SECRETS + "/db"),
    }
    for name in ("web", "db", "cache"):
        uid = seen["pods"][name]["metadata"]["uid"]
        (scratch(agent.node, uid) / "user-file").write_text(f"{name}'s data\n")
    return seen


def test_a_restarted_agent_keeps_what_was_written_over_the_api(agent: Agent) -> None:
    node = agent.node
    before = populate(agent)
    ids = running_ids(node)
    assert set(ids) == {"web", "db", "cache", "static"}
    node.clock.advance(3600)  # an hour later: AGE goes on from the first creation
    calls = node.runtime.call_count("*")

    agent = restart(agent)
    node.converge()

    assert running_ids(node) == ids
    assert [op for op, _ in node.runtime.calls[calls:] if op in MUTATING] == []
    after = {p["metadata"]["name"]: p for p in agent.get(PODS)["items"]}
    for name in ("web", "db", "cache"):
        old, new = before["pods"][name]["metadata"], after[name]["metadata"]
        assert new["uid"] == old["uid"]
        assert new["creationTimestamp"] == old["creationTimestamp"]
        assert new["labels"] == old["labels"]
        assert after[name]["status"]["phase"] == "Running"
        assert (scratch(node, new["uid"]) / "user-file").read_text() == f"{name}'s data\n"
    assert after["web"]["metadata"]["labels"] == {"app": "web", "patched": "yes"}
    configmaps = agent.get(CONFIGMAPS)["items"]
    assert [c["data"] for c in configmaps] == [{"level": "debug"}]
    secret = agent.get(SECRETS + "/db")
    for field in ("uid", "creationTimestamp"):
        assert configmaps[0]["metadata"][field] == before["configmaps"]["metadata"][field]
        assert secret["metadata"][field] == before["secrets"]["metadata"][field]
    assert secret["data"] == {"password": "c3RvcmUtaHVudGVyMg=="}
    assert node.kubelet.views.objects.get_secret("default", "db") is not None
    # The restarted API owns them: they can be changed and deleted as before.
    replaced = agent.send("PUT", CONFIGMAPS + "/settings", json={**CONFIG, "data": {"a": "b"}})
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["metadata"]["uid"] == before["configmaps"]["metadata"]["uid"]
    assert agent.send("DELETE", PODS + "/cache").status_code == 200


def test_the_store_holds_each_object_in_a_private_file(agent: Agent) -> None:
    populate(agent)
    root = store_dir(agent.node)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == [
        "configmaps/default_settings.json",
        "pods/default_cache.json",
        "pods/default_db.json",
        "pods/default_web.json",
        "secrets/default_db.json",
        "store-version",
    ]
    for path in [root, *(p for p in root.iterdir() if p.is_dir())]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    assert stat.S_IMODE(root.parent.stat().st_mode) == 0o755  # the root dir is left as it was
    secret_file = root / "secrets/default_db.json"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    stored = json.loads((root / "pods/default_web.json").read_text())
    assert "status" not in stored
    assert stored["metadata"]["creationTimestamp"] and stored["metadata"]["uid"]
    assert stored["metadata"]["annotations"]["kubernetes.io/config.source"] == "kube-apiserver"


def test_deletes_over_the_api_leave_the_store(agent: Agent) -> None:
    populate(agent)
    assert agent.send("DELETE", PODS + "/db").status_code == 200
    assert agent.send("DELETE", SECRETS + "/db").status_code == 200
    assert agent.send("DELETE", PODS + "/web?dryRun=All").status_code == 200
    root = store_dir(agent.node)
    # A pod is deleted gracefully: it is kept, marked, until its containers are stopped.
    assert "deletionTimestamp" in (root / "pods/default_db.json").read_text()
    agent.node.converge()
    assert "db" not in [p["metadata"]["name"] for p in agent.get(PODS)["items"]]
    assert not (root / "pods/default_db.json").exists()
    assert not (root / "secrets/default_db.json").exists()
    assert (root / "pods/default_web.json").exists()
    assert "deletionTimestamp" not in (root / "pods/default_web.json").read_text()

    agent = restart(agent)
    agent.node.converge()
    assert sorted(p["metadata"]["name"] for p in agent.get(PODS)["items"]) == [
        "cache",
        "static",
        "web",
    ]
    assert agent.get(SECRETS)["items"] == []
    assert sorted(running_ids(agent.node)) == ["cache", "static", "web"]


def test_a_dry_run_writes_nothing_to_the_store(agent: Agent) -> None:
    assert agent.send("POST", PODS + "?dryRun=All", json=api_pod("web")).status_code == 201
    assert agent.send("POST", SECRETS + "?dryRun=All", json=SECRET).status_code == 201
    assert not store_dir(agent.node).exists()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "not valid JSON"),
        (lambda p: p.write_bytes(b""), "empty file"),
        (lambda p: p.write_bytes(b"\xff\xfe"), "not UTF-8"),
        (lambda p: p.write_text('{"kind": "Pod", "metadata": {}}'), "not a valid Pod"),
        (lambda p: p.write_text('{"kind": "Secret"}'), "holds kind 'Secret', not 'Pod'"),
        (lambda p: (p.unlink(), p.mkdir()), "not a regular file (a directory)"),
        # Opening a FIFO blocked the agent at its start, before the API listened.
        pytest.param(
            lambda p: (p.unlink(), os.mkfifo(p)),
            "not a regular file (a FIFO)",
            marks=pytest.mark.timeout(60),
        ),
        (lambda p: (p.unlink(), p.symlink_to("/etc/hostname")), "a symbolic link"),
    ],
    ids=["torn", "empty", "binary", "invalid", "wrong-kind", "unreadable", "fifo", "symlink"],
)
def test_a_stored_file_that_cannot_be_read_kills_nothing(
    agent: Agent, damage: Any, reason: str
) -> None:
    node = agent.node
    populate(agent)
    ids = running_ids(node)
    broken = store_dir(node) / "pods/default_db.json"
    damage(broken)

    agent = restart(agent)
    for _ in range(5):
        node.converge()
        node.clock.advance(60)
    assert running_ids(node) == ids  # db's containers too: its file is unknown, not empty
    for uid, name in uids_of(node).items():
        if name != "static":
            assert (scratch(node, uid) / "user-file").read_text() == f"{name}'s data\n"
    reasons = node.kubelet._rooms.pod_config.not_ready_reasons()
    assert list(reasons) == ["kube-apiserver"]
    assert reasons["kube-apiserver"].startswith(f"cannot read {broken}: ")
    assert reason in reasons["kube-apiserver"]
    health = requests.get(agent.http.url + "/healthz", timeout=10)
    assert health.status_code == 500 and f"cannot read {broken}" in health.text
    refused = agent.send("POST", PODS, json=api_pod("new"))
    assert refused.status_code == 503
    assert str(broken) in refused.json()["message"]
    other = {**CONFIG, "metadata": {"name": "other"}}
    assert agent.send("POST", CONFIGMAPS, json=other).status_code == 503

    # Removing the file says db is gone: the next write reads the store again and goes through.
    if broken.is_dir():
        broken.rmdir()
    else:
        broken.unlink()
    assert agent.send("POST", PODS, json=api_pod("new")).status_code == 201
    node.converge()
    assert node.kubelet._rooms.pod_config.not_ready_reasons() == {}
    assert sorted(running_ids(node)) == ["cache", "new", "static", "web"]


def uids_of(node: Node) -> dict[str, str]:
    return {c.labels[POD_UID_LABEL]: c.labels[POD_NAME_LABEL] for c in node.running()}


def test_a_broken_secret_file_is_reported_without_its_values(agent: Agent) -> None:
    populate(agent)
    broken = store_dir(agent.node) / "secrets/default_db.json"
    document = json.loads(broken.read_text())
    document["data"]["password"] = "not base64 " + SECRET_VALUE
    broken.write_text(json.dumps(document))

    agent = restart(agent)
    (problem,) = agent.api.storage.problems
    assert problem.path == str(broken) and "not a valid Secret" in problem.reason
    assert SECRET_VALUE not in problem.reason
    refused = agent.send("POST", PODS, json=api_pod("new"))
    assert refused.status_code == 503 and SECRET_VALUE not in refused.text


def test_a_change_that_cannot_be_stored_is_refused_and_not_applied(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert agent.api.store is not None

    def full(item: object, managed: object = None) -> None:
        raise OSError(28, "cannot write /somewhere: No space left on device")

    monkeypatch.setattr(agent.api.store, "put", full)
    refused = agent.send("POST", PODS, json=api_pod("web"))
    assert refused.status_code == 500
    assert refused.json()["message"] == (
        'Pod "web" was not changed: the API\'s store cannot write /somewhere: No space left on'
        " device"
    )
    assert agent.node.kubelet.get_pod("default", "web") is None
    assert agent.send("POST", SECRETS, json=SECRET).status_code == 500
    assert agent.node.kubelet.views.objects.get_secret("default", "db") is None


# --- the store itself ------------------------------------------------------------------------


def test_the_store_reads_back_what_it_wrote(tmp_path: Path) -> None:
    store = ApiStore(str(tmp_path / "api"))
    assert store.load().pods == () and store.load().problems == ()
    (pod,) = load_pods_from_string(STATIC)
    config = ConfigMap(ObjectMeta(name="c", uid="u1"), data={"k": "v"}, binary_data={"b": b"\0"})
    secret = Secret(ObjectMeta(name="s", namespace="other"), data={"k": b"\xff"}, type="x/y")
    for item in (pod, config, secret):
        store.put(item)
    state = store.load()
    assert state.pods == (pod,) and state.objects == (config, secret)
    store.delete("ConfigMap", "default", "c")
    store.delete("ConfigMap", "default", "never-stored")
    assert store.load().objects == (secret,)
    with pytest.raises(ValueError, match="not a DNS name"):
        store.put(attrs.evolve(config, metadata=ObjectMeta(name="../../etc")))


def test_a_file_under_another_name_or_a_stray_file_is_a_problem(tmp_path: Path) -> None:
    store = ApiStore(str(tmp_path / "api"))
    (pod,) = load_pods_from_string(STATIC)
    store.put(pod)
    pods = tmp_path / "api/pods"
    os.rename(pods / "default_static.json", pods / "default_other.json")
    (pods / "notes.txt").write_text("hi")
    problems = {(Path(p.path).name, p.reason) for p in store.load().problems}
    assert problems == {
        ("default_other.json", "holds default/static, whose file would be default_static.json"),
        ("notes.txt", "not a file of the store (no .json suffix)"),
    }


def test_a_write_that_fails_halfway_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ApiStore(str(tmp_path / "api"))
    config = ConfigMap(ObjectMeta(name="c"), data={"k": "old"})
    store.put(config)

    def crash(src: str, dst: str) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match=r"cannot write .*default_c\.json: Input/output error"):
        store.put(attrs.evolve(config, data={"k": "new"}))
    monkeypatch.undo()
    assert store.load().objects == (config,)
    assert sorted(os.listdir(tmp_path / "api/configmaps")) == ["default_c.json"]


def test_a_temporary_file_left_by_a_crash_is_not_read_and_removed_once_old(
    tmp_path: Path,
) -> None:
    store = ApiStore(str(tmp_path / "api"))
    config = ConfigMap(ObjectMeta(name="c"), data={"k": "v"})
    store.put(config)
    leftover = tmp_path / "api/configmaps/.tmp-abc123"
    leftover.write_text('{"kind": "Conf')
    state = store.load()
    assert state.objects == (config,) and state.problems == ()
    assert leftover.exists()  # perhaps a write at work in another process
    old = time.time() - STALE_TEMP_SECONDS - 1
    os.utime(leftover, (old, old))
    assert store.load() == state
    assert not leftover.exists()


WRITER = textwrap.dedent(
    """
    import sys
    from kubecore._api.store import ApiStore
    from kubecore._model.v1 import ConfigMap, ObjectMeta

    store = ApiStore(sys.argv[1])
    print("ready", flush=True)
    version = 0
    while True:
        version += 1
        data = {"version": str(version), "pad": "x" * 50000}
        store.put(ConfigMap(ObjectMeta(name="c"), data=data))
    """
)


def test_kill_9_at_any_point_leaves_a_readable_store(tmp_path: Path) -> None:
    directory = tmp_path / "api"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    last = 0
    for trial in range(8):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(directory)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        time.sleep(0.02 + 0.03 * trial)  # kill it after some writes, somewhere in one
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=10)
        writer.stdout.close()
        state = ApiStore(str(directory)).load()
        assert state.problems == ()
        if trial == 0 and not state.objects:
            continue  # killed before the first write was renamed in
        (config,) = state.objects
        assert isinstance(config, ConfigMap) and config.data["pad"] == "x" * 50000
        assert int(config.data["version"]) >= 1
        last = int(config.data["version"])
    assert last >= 1


def test_replace_file_gives_the_mode_asked_for(tmp_path: Path) -> None:
    target = tmp_path / "f"
    replace_file(str(target), b"one", 0o640)
    assert target.read_bytes() == b"one" and stat.S_IMODE(target.stat().st_mode) == 0o640
    replace_file(str(target), b"two")
    assert target.read_bytes() == b"two" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["f"]


def test_the_stored_pod_document_is_the_pod_as_written(agent: Agent) -> None:
    created = agent.send("POST", PODS, json=api_pod("web"))
    assert created.status_code == 201
    stored = json.loads((store_dir(agent.node) / "pods/default_web.json").read_text())
    answered = created.json()["metadata"]
    assert stored["metadata"]["uid"] == answered["uid"]
    assert stored["metadata"]["creationTimestamp"] == answered["creationTimestamp"]
    assert stored["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "scratch", "mountPath": "/scratch"}
    ]


def test_a_watch_from_before_a_restart_is_told_to_list_again(agent: Agent) -> None:
    assert agent.send("POST", PODS, json=api_pod("web")).status_code == 201
    for n in range(10):
        patch = json.dumps({"metadata": {"labels": {"n": str(n)}}})
        headers = {**AUTH, "Content-Type": "application/merge-patch+json"}
        assert agent.send("PATCH", PODS + "/web", data=patch, headers=headers).status_code == 200
    agent.node.converge()
    version = agent.get(PODS)["metadata"]["resourceVersion"]

    agent = restart(agent)
    agent.node.converge()
    assert int(agent.get(PODS)["metadata"]["resourceVersion"]) < int(version)
    url = agent.http.url + PODS + f"?watch=true&resourceVersion={version}&timeoutSeconds=5"
    with requests.get(url, stream=True, headers=AUTH, timeout=10) as stream:
        event = json.loads(next(stream.iter_lines()))
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and "restarted" in event["object"]["message"]


@pytest.mark.parametrize("damaged", [False, True])
def test_an_agent_not_serving_the_api_keeps_its_pods(agent: Agent, damaged: bool) -> None:
    """``--port 0`` or ``--once`` after a run that served the API: the stored pods are the API
    source's state, read-only; nothing is killed, a damaged file included."""
    from kubecore._api.store import keep_stored_pods

    node = agent.node
    populate(agent)
    ids = running_ids(node)
    if damaged:
        (store_dir(node) / "pods/default_db.json").write_text("{torn")
    agent.http.stop()
    agent.servers.remove(agent.http)
    kubelet = node.restart_kubelet()
    kubelet.register_source("file")
    StaticSource(load_pods_from_string(STATIC), name="file", sink=kubelet.update)
    calls = node.runtime.call_count("*")
    state = keep_stored_pods(kubelet.root_dir, kubelet.update)
    assert len(state.pods) == (2 if damaged else 3)
    for _ in range(3):
        node.converge()
        node.clock.advance(60)
    assert running_ids(node) == ids
    assert [op for op, _ in node.runtime.calls[calls:] if op in MUTATING] == []
    assert kubelet.sources_ready() is not damaged


def test_managed_fields_are_kept_across_a_restart(agent: Agent) -> None:
    apply = {**AUTH, "Content-Type": "application/apply-patch+yaml"}
    body = json.dumps(api_pod("web", app="web"))
    answer = agent.send("PATCH", PODS + "/web?fieldManager=kubectl", data=body, headers=apply)
    assert answer.status_code == 201, answer.text
    merge = {**AUTH, "Content-Type": "application/merge-patch+json"}
    labelled = agent.send(
        "PATCH",
        PODS + "/web?fieldManager=kubectl-label",
        data=json.dumps({"metadata": {"labels": {"team": "a"}}}),
        headers=merge,
    )
    assert labelled.status_code == 200, labelled.text
    before = agent.get(PODS + "/web")["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in before] == [
        ("kubectl", "Apply"),
        ("kubectl-label", "Update"),
    ]
    agent = restart(agent)
    assert agent.get(PODS + "/web")["metadata"]["managedFields"] == before
    # The restarted API still knows who owns what: the label is kept by a new apply.
    answer = agent.send("PATCH", PODS + "/web?fieldManager=kubectl", data=body, headers=apply)
    assert answer.status_code == 200, answer.text
    assert answer.json()["metadata"]["labels"] == {"app": "web", "team": "a"}


# --- names too long for a file name, and a store missing its pods -------------------------------


@pytest.mark.parametrize("length", [245, 246, 253])
def test_a_name_too_long_for_a_file_name_is_stored_and_read_back(agent: Agent, length: int) -> None:
    name = ("a" * 63 + ".") * 3 + "b" * (length - 192)
    assert len(name) == length
    pod = api_pod("long")
    pod["metadata"]["name"] = name
    created = agent.send("POST", PODS, json=pod)
    assert created.status_code == 201, created.text  # it was a 500 from 246 characters on
    config = {**CONFIG, "metadata": {"name": name}}
    assert agent.send("POST", CONFIGMAPS, json=config).status_code == 201
    files = {p.name for p in store_dir(agent.node).rglob("*.json")}
    assert all(len(f) <= 255 for f in files)
    assert (f"default_{name}.json" in files) == (length <= 242)
    store = ApiStore(str(store_dir(agent.node)))
    assert os.path.basename(store.path_of("Pod", "default", name)) in files  # O(1): computed

    agent = restart(agent)
    agent.node.converge()
    assert agent.get(PODS + "/" + name)["metadata"]["uid"] == created.json()["metadata"]["uid"]
    assert agent.get(CONFIGMAPS + "/" + name)["data"] == CONFIG["data"]
    assert agent.node.kubelet._rooms.pod_config.not_ready_reasons() == {}
    assert agent.send("DELETE", PODS + "/" + name).status_code == 200


@pytest.mark.parametrize("damage", ["removed", "dangling-symlink"])
def test_a_store_that_lost_its_pods_directory_keeps_the_pods_not_ready(
    agent: Agent, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    node = agent.node
    populate(agent)
    ids = running_ids(node)
    pods = store_dir(node) / "pods"
    for path in pods.iterdir():
        path.unlink()
    pods.rmdir()
    if damage == "dangling-symlink":
        pods.symlink_to(store_dir(node) / "nowhere")

    agent = restart(agent)
    for _ in range(5):
        node.converge()
        node.clock.advance(60)
    assert running_ids(node) == ids  # the API's pods were replaced: unknown is not empty
    reasons = node.kubelet._rooms.pod_config.not_ready_reasons()
    assert list(reasons) == ["kube-apiserver"]
    assert reasons["kube-apiserver"].startswith(f"cannot read {pods}: ")
    assert f"API store file {pods} cannot be read" in caplog.text


def test_a_store_made_before_the_marker_reads_a_missing_directory_as_empty(
    tmp_path: Path,
) -> None:
    store = ApiStore(str(tmp_path / "api"))
    assert store.load() == ApiStore(str(tmp_path / "api")).load()  # no store at all: empty
    assert store.load().problems == ()
    store.put(ConfigMap(metadata=ObjectMeta(name="c", namespace="default")))
    (tmp_path / "api" / "store-version").unlink()
    (tmp_path / "api" / "pods").rmdir()  # an older store wrote only the kinds it held
    state = store.load()
    assert (state.problems, [o.metadata.name for o in state.objects]) == ((), ["c"])
