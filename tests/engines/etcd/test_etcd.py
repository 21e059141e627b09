"""The etcd pod source and status sink, on a real etcd cluster (scripts/test-etcd.sh up).

No mock etcd: the tests that need a cluster are marked ``etcd`` and skip, saying why, when
``KUBECORE_TEST_ETCD_ENDPOINTS`` is unset or nothing answers there. The fault tests stop and start
the members of the test cluster through the script, and only when the cluster is the script's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubecore import Kubelet, KubeletConfig, Pod, ValidationError
from kubecore.manifest import pod_to_dict
from kubecore.v1 import Container, ObjectMeta, PodSpec
from kubecore_fake import FakeRuntime
from tests.engines.etcd.helpers import IMAGE, Agent, statuses, wait_for
from tests.paths import REPO

SCRIPT = REPO / "scripts" / "test-etcd.sh"
STATE = Path(os.environ.get("KUBECORE_TEST_ETCD_STATE", "/var/tmp/kubecore-test-etcd"))


def make_pod(name: str, *containers: Container, namespace: str = "default") -> Pod:
    if not containers:
        containers = (Container(name="app", image=IMAGE, command=("server",)),)
    return Pod(ObjectMeta(name=name, namespace=namespace), PodSpec(containers=containers))


# --- no cluster needed ------------------------------------------------------------------------


def test_import_kubecore_does_not_import_the_etcd_client() -> None:
    code = (
        "import sys, kubecore, kubecore.runtime, kubecore.manifest, kubecore.server\n"
        # The CLI can wire the etcd commands in without the client installed.
        "import kubecore_etcd, kubecore_etcd._plugin, kubecore_etcd._cli\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('aetcd', 'grpc'))\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""


def test_key_layout() -> None:
    from kubecore_etcd import node_key, pod_key, split_key, status_key

    assert pod_key("/kubecore", "n1", "default", "web") == "/kubecore/pods/n1/default/web"
    assert pod_key("kubecore/", "n1", "ns", "web") == "/kubecore/pods/n1/ns/web"
    assert status_key("/kubecore", "n1", "ns", "web") == "/kubecore/status/n1/ns/web"
    assert node_key("/kubecore", "n1") == "/kubecore/nodes/n1"
    assert split_key("/k/pods/n1/ns/web", "/k/pods/n1/") == ("ns", "web")
    assert split_key("/k/pods/n1/web", "/k/pods/n1/") is None
    assert split_key("/k/pods/n1/ns/web/x", "/k/pods/n1/") is None
    assert split_key("/k/pods/n10/ns/web", "/k/pods/n1/") is None


def test_decode_pod_takes_namespace_and_name_from_the_key() -> None:
    from kubecore_etcd import decode_pod

    spec = "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: app, image: busybox:1.36}]\n"
    pod = decode_pod(spec.encode(), "k", "prod", "web")
    assert (pod.metadata.namespace, pod.metadata.name) == ("prod", "web")
    same = decode_pod(
        f"metadata: {{name: web, namespace: prod}}\n{spec}".encode(), "k", "prod", "web"
    )
    assert same.metadata.name == "web"
    with pytest.raises(ValidationError, match="the key says 'web'"):
        decode_pod(f"metadata: {{name: other}}\n{spec}".encode(), "k", "prod", "web")
    with pytest.raises(ValidationError, match="the key says 'prod'"):
        decode_pod(f"metadata: {{namespace: default}}\n{spec}".encode(), "k", "prod", "web")
    with pytest.raises(ValidationError, match="must be Pod"):
        decode_pod(b"kind: List\nitems: []\n", "k", "prod", "web")
    with pytest.raises(ValidationError, match="not a YAML or JSON"):
        decode_pod(b"{", "k", "prod", "web")
    with pytest.raises(ValidationError):
        decode_pod(b"spec: {}\n", "k", "prod", "web")


def test_a_json_value_is_read_as_json_and_anything_else_as_yaml() -> None:
    from kubecore_etcd import decode_pod, load_document

    assert load_document(b' {"a": [1, "x"]}') == {"a": [1, "x"]}
    assert load_document(b"{a: 1, b: [x]}") == {"a": 1, "b": ["x"]}, "a YAML flow mapping"
    assert load_document(b"a: 1\n") == {"a": 1}
    spec = {"containers": [{"name": "app", "image": IMAGE}]}
    document = json.dumps({"apiVersion": "v1", "kind": "Pod", "spec": spec})
    from_json = decode_pod(document.encode(), "k", "prod", "web")
    from_yaml = decode_pod(
        b"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: app\n    image: "
        + IMAGE.encode(),
        "k",
        "prod",
        "web",
    )
    assert from_json == from_yaml


def test_the_status_document_is_the_pod_as_json_with_its_status() -> None:
    from kubecore_etcd import encode_json, status_document

    runtime = FakeRuntime(images=[IMAGE])
    with Kubelet(runtime, runtime) as kubelet:
        kubelet.set_pods([make_pod("a"), make_pod("b")])
        seen = set()
        for _ in range(3):
            kubelet.sync()
            for pod in kubelet.pods():
                assert status_document(pod) == encode_json(pod_to_dict(pod))
                assert pod.status is not None
                seen.add(pod.status.phase)
        assert seen == {"Pending", "Running"}


def test_an_event_document_is_the_v1_event_as_json() -> None:
    from kubecore._contract.values import Event, EventType
    from kubecore._observability.events import pod_reference
    from kubecore_etcd import encode_json, event_document
    from kubecore_etcd._encoding import event_json

    for event in (
        Event(pod_reference("prod", "web", "uid-1", "app"), EventType.NORMAL, "Started",
              'Started container "app" \u00e9\n', 1.7e9),
        Event(pod_reference("", "web"), EventType.WARNING, "Failed", "no uid, no path", 1.8e9),
    ):  # fmt: skip
        expected = encode_json(event_document(event, "node-1", "web.1"))
        assert event_json(event, "node-1", "web.1") == expected


@settings(max_examples=200, deadline=None)
@given(
    namespace=st.text(max_size=8),
    name=st.text(min_size=1, max_size=8),
    uid=st.text(max_size=8),
    field_path=st.text(max_size=8),
    reason=st.text(max_size=8),
    message=st.text(max_size=40),
    node=st.text(max_size=8),
    warning=st.booleans(),
    timestamp=st.floats(min_value=1.0e9 + 1, max_value=4e9),
)
def test_the_fast_event_encoder_equals_the_v1_event_builder(
    namespace: str,
    name: str,
    uid: str,
    field_path: str,
    reason: str,
    message: str,
    node: str,
    warning: bool,
    timestamp: float,
) -> None:
    """Whatever an event holds (quotes, control characters, any Unicode, no namespace, no uid, no
    field path), the etcd encoder writes the v1 Event builder's document byte for byte."""
    from kubecore.events import Event, EventType, ObjectReference
    from kubecore_etcd import encode_json, event_document
    from kubecore_etcd._encoding import event_json

    ref = ObjectReference(
        kind="Pod", namespace=namespace, name=name, uid=uid, field_path=field_path
    )
    kind = EventType.WARNING if warning else EventType.NORMAL
    event = Event(ref, kind, reason, message, timestamp)
    expected = encode_json(event_document(event, node, f"{name}.1"))
    assert event_json(event, node, f"{name}.1") == expected


def test_the_node_api_and_etcd_build_one_event_document() -> None:
    """kubectl reads the same Event whether the node's API serves it or etcd holds it."""
    from kubecore._api.events import event_object
    from kubecore._contract.values import Event, EventType
    from kubecore._observability.events import pod_reference
    from kubecore_etcd import event_document

    event = Event(pod_reference("prod", "web", "uid-1", "app"), EventType.NORMAL, "Started",
                  "Started", 1.7e9)  # fmt: skip
    served = event_object(event, "node-1")
    stored = event_document(event, "node-1", served["metadata"]["name"])
    assert stored == served
    assert stored["source"] == {"component": "kubelet", "host": "node-1"}
    assert stored["reportingComponent"] == "kubelet"


def test_parse_endpoints() -> None:
    from kubecore_etcd import parse_endpoints

    assert parse_endpoints("http://127.0.0.1:2379, https://etcd-1:2379,10.0.0.3:2379") == (
        "http://127.0.0.1:2379",
        "https://etcd-1:2379",
        "http://10.0.0.3:2379",
    )
    for bad in ("", "ftp://a:1", "http://a", "http://a:port"):
        with pytest.raises(ValueError):
            parse_endpoints(bad)


def test_token_bucket_allows_the_burst_then_the_rate() -> None:
    from kubecore._util.clock import ManualClock
    from kubecore._util.ratelimit import TokenBucket

    clock = ManualClock()
    bucket = TokenBucket(2.0, 3, clock)
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]
    clock.advance(0.5)
    assert [bucket.try_acquire() for _ in range(2)] == [True, False]


def test_the_event_recorder_never_blocks_it_drops_and_counts() -> None:
    pytest.importorskip("aetcd", reason="the etcd extra is not installed")
    from kubecore.events import Event, EventType, ObjectReference
    from kubecore_etcd import EtcdClient, EtcdConfig, EtcdEventRecorder

    event = Event(ObjectReference("Pod", "default", "web"), EventType.NORMAL, "Started", "", 0.0)
    # Nothing listens there: the writes fail, and are dropped and counted, never retried.
    with EtcdClient(EtcdConfig(("http://127.0.0.1:9",), timeout=0.5)) as client:
        recorder = EtcdEventRecorder(client, "n1", queue_size=2)
        for _ in range(3):
            recorder.record(event)
        assert (recorder.queued, recorder.dropped) == (2, 1)
        assert recorder.flush() == 0
        assert (recorder.queued, recorder.dropped, recorder.written) == (0, 3, 0)


# --- the cluster ------------------------------------------------------------------------------


def script_members() -> list[Path]:
    return [STATE / f"member-{n}" / "pid" for n in (1, 2, 3)]


@pytest.fixture
def members(etcd_endpoints: tuple[str, ...]) -> Iterator[Members]:
    """The test cluster's members, to stop and start: only when scripts/test-etcd.sh runs it."""
    out = subprocess.run(
        ["bash", str(SCRIPT), "env"], capture_output=True, text=True, check=True, timeout=30
    )
    if ",".join(etcd_endpoints) not in out.stdout or not all(p.exists() for p in script_members()):
        pytest.skip("the etcd cluster is not the one scripts/test-etcd.sh started")
    members = Members()
    yield members
    members.up()  # whatever the test did, the cluster is whole again for the next one


class Members:
    def pid(self, member: int) -> int:
        return int((STATE / f"member-{member}" / "pid").read_text())

    def kill(self, member: int) -> None:
        os.kill(self.pid(member), signal.SIGKILL)

    def pause(self, member: int) -> None:
        os.kill(self.pid(member), signal.SIGSTOP)

    def resume(self, member: int) -> None:
        os.kill(self.pid(member), signal.SIGCONT)

    def number(self, endpoint: str) -> int:
        """The member (1-3) serving a client endpoint of the script's cluster."""
        base = int(os.environ.get("KUBECORE_TEST_ETCD_CLIENT_PORT_BASE") or 23790)
        return int(endpoint.rsplit(":", 1)[1]) - base

    def up(self) -> None:
        subprocess.run(["bash", str(SCRIPT), "up"], check=True, capture_output=True, timeout=180)

    def down(self) -> None:
        subprocess.run(["bash", str(SCRIPT), "down"], check=True, capture_output=True, timeout=180)

    def leader(self, client: Any) -> int:
        """The member number (1-3) of the current leader."""

        async def op(etcd: Any) -> int:
            status = await etcd.status()
            return int(status.leader.id)

        leader_id = client.run(op)

        async def members(etcd: Any) -> list[Any]:
            return [m async for m in etcd.members()]

        for member in client.run(members):
            if int(member.id) == leader_id:
                return int(member.name.rsplit("-", 1)[1])
        raise AssertionError("no leader")


def phase(client: Any, prefix: str, node: str, name: str) -> str:
    document = statuses(client, prefix, node).get(f"default/{name}")
    return str(document.get("status", {}).get("phase", "")) if document else ""


def bind(client: Any, prefix: str, node: str, *pods: Pod) -> None:
    from kubecore_etcd import bind_pods

    bind_pods(client, pods, node, prefix)


POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [server]
"""


@pytest.mark.etcd
def test_pod_bound_with_etcdctl_runs_and_its_status_matches_the_agent(
    client: Any, prefix: str, agents: Callable[..., Agent], etcd_endpoints: tuple[str, ...]
) -> None:
    if shutil.which("etcdctl") is None:
        pytest.skip("etcdctl is not installed (Debian's etcd-client)")
    agent = agents("n1")
    subprocess.run(
        [
            "etcdctl",
            "--endpoints",
            ",".join(etcd_endpoints),
            "put",
            f"{prefix}/pods/n1/default/web",
        ],
        input=POD_YAML.format(name="web"),
        env={**os.environ, "ETCDCTL_API": "3"},
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    wait_for(lambda: phase(client, prefix, "n1", "web") == "Running", what="web Running in etcd")
    assert agent.running_pods() == {"web"}
    pod = agent.kubelet.get_pod("default", "web")
    assert pod is not None
    wait_for(
        lambda: (
            statuses(client, prefix, "n1")["default/web"] == pod_to_dict(agent.kubelet.pods()[0])
        ),
        what="the status key equal to Kubelet.pods()",
    )
    document = statuses(client, prefix, "n1")["default/web"]
    assert document["metadata"]["annotations"]["kubernetes.io/config.source"] == "etcd"
    assert document["status"]["containerStatuses"][0]["ready"] is True


@pytest.mark.etcd
def test_two_nodes_run_only_their_own_pods_and_write_only_their_own_status(
    client: Any, prefix: str, agents: Callable[..., Agent]
) -> None:
    n1, n2 = agents("n1"), agents("n2")
    bind(client, prefix, "n1", make_pod("a"), make_pod("b"))
    bind(client, prefix, "n2", make_pod("c"))
    wait_for(lambda: n1.running_pods() == {"a", "b"} and n2.running_pods() == {"c"})
    wait_for(lambda: set(statuses(client, prefix, "n1")) == {"default/a", "default/b"})
    wait_for(lambda: set(statuses(client, prefix, "n2")) == {"default/c"})
    # Deleting n1's pods leaves n2's pod and its status alone.
    n2_containers = n2.running()
    client.delete_prefix(f"{prefix}/pods/n1/")
    wait_for(lambda: not n1.running_pods() and not statuses(client, prefix, "n1"))
    assert n2.running() == n2_containers
    assert set(statuses(client, prefix, "n2")) == {"default/c"}
    nodes, _ = client.get_prefix(f"{prefix}/nodes/")
    assert sorted(nodes) == [f"{prefix}/nodes/n1", f"{prefix}/nodes/n2"]


@pytest.mark.etcd
def test_deleting_the_key_stops_the_pod_and_removes_its_status(
    client: Any, prefix: str, agents: Callable[..., Agent]
) -> None:
    agent = agents("n1")
    bind(client, prefix, "n1", make_pod("web"), make_pod("db"))
    wait_for(lambda: phase(client, prefix, "n1", "web") == "Running")
    client.delete(f"{prefix}/pods/n1/default/web")
    wait_for(lambda: agent.running_pods() == {"db"}, what="web stopped")
    wait_for(lambda: set(statuses(client, prefix, "n1")) == {"default/db"}, what="status gone")


@pytest.mark.etcd
def test_a_change_is_pushed_to_etcd_without_waiting_for_the_interval(
    client: Any, prefix: str, agents: Callable[..., Agent]
) -> None:
    # The sink looks at the node key once a minute here: a status that lands sooner came from
    # the agent's change subscription, not from a poll.
    agent = agents("n1", interval=60.0)
    bind(client, prefix, "n1", make_pod("web"))
    wait_for(lambda: phase(client, prefix, "n1", "web") == "Running", what="web running")
    (app,) = [c for c in agent.runtime.find_containers() if c.name == "app"]
    agent.runtime.crash(app.id, code=3)

    def restarted() -> bool:
        document = statuses(client, prefix, "n1").get("default/web") or {}
        counts = [c.get("restartCount", 0) for c in document.get("status", {}).get(
            "containerStatuses", []
        )]  # fmt: skip
        return counts == [1]

    wait_for(restarted, timeout=20, what="the restart pushed to etcd")


@pytest.mark.etcd
def test_editing_a_pod_changes_only_what_changed(
    client: Any, prefix: str, agents: Callable[..., Agent]
) -> None:
    agent = agents("n1")
    two = (
        Container(name="app", image=IMAGE, command=("server",)),
        Container(name="side", image=IMAGE, command=("server",)),
    )
    bind(client, prefix, "n1", make_pod("web", *two), make_pod("other"))
    wait_for(lambda: len(agent.running()) == 3, what="three containers running")
    before = agent.running()
    edited = (two[0], Container(name="side", image=IMAGE, command=("server", "--v2")))
    bind(client, prefix, "n1", make_pod("web", *edited))
    wait_for(
        lambda: (
            agent.running().get(("web", "side"), before[("web", "side")]) != before[("web", "side")]
        ),
        what="the edited container replaced",
    )
    after = wait_for(lambda: (r := agent.running()) and len(r) == 3 and r)
    assert after[("web", "app")] == before[("web", "app")]
    assert after[("other", "app")] == before[("other", "app")]
    assert agent.source.lists == 1


@pytest.mark.etcd
def test_a_bad_value_is_reported_with_its_key_and_the_others_run(
    client: Any, prefix: str, agents: Callable[..., Agent]
) -> None:
    agent = agents("n1")
    client.put(f"{prefix}/pods/n1/default/bad", "spec: {containers: 3}\n")
    client.put(f"{prefix}/pods/n1/default/deep/er", POD_YAML.format(name="er"))
    bind(client, prefix, "n1", make_pod("good"))
    wait_for(lambda: agent.running_pods() == {"good"})
    where = wait_for(lambda: {p.where for p in agent.source.problems} or None)
    assert where == {f"{prefix}/pods/n1/default/bad", f"{prefix}/pods/n1/default/deep/er"}
    # A good pod turned bad keeps running as it was; fixed, the problem goes.
    before = agent.running()
    client.put(f"{prefix}/pods/n1/default/good", "{")
    wait_for(lambda: len(agent.source.problems) == 3)
    assert agent.running() == before
    bind(client, prefix, "n1", make_pod("good"))
    wait_for(lambda: len(agent.source.problems) == 2)
    assert agent.running() == before


# --- faults -------------------------------------------------------------------------------------


class Proxy:
    """A TCP relay in front of one etcd member: ``cut()`` drops every connection and refuses new
    ones (the agent's view of a cluster it cannot reach), ``restore()`` listens again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.restore()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, []
        for sock in [listener, *sockets]:
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                downstream, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                downstream.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    downstream.close()
                    upstream.close()
                    return
                self._sockets += [downstream, upstream]
            for a, b in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def proxied_client(etcd_endpoints: tuple[str, ...]) -> Iterator[tuple[Any, Proxy]]:
    """A client whose only way to the cluster is a relay the test can cut."""
    from kubecore_etcd import EtcdClient, EtcdConfig

    host, _, port = etcd_endpoints[0].rpartition("://")[2].rpartition(":")
    proxy = Proxy((host, int(port)))
    with EtcdClient(EtcdConfig((proxy.endpoint,), timeout=2.0)) as client:
        yield client, proxy
    proxy.cut()


@pytest.mark.etcd
def test_unreachable_etcd_keeps_every_pod_then_a_compacted_watch_lists_again(
    client: Any,
    prefix: str,
    proxied_client: tuple[Any, Proxy],
    tmp_path: Path,
) -> None:
    agent_client, proxy = proxied_client
    agent = Agent(agent_client, prefix, "n1", tmp_path)
    try:
        bind(client, prefix, "n1", make_pod("keep"), make_pod("gone"), make_pod("edit"))
        wait_for(lambda: agent.running_pods() == {"keep", "gone", "edit"})
        wait_for(lambda: len(statuses(client, prefix, "n1")) == 3)
        before = agent.running()

        proxy.cut()
        wait_for(lambda: not agent.kubelet.sources_ready(), what="the source not ready")
        assert not agent.source.ready
        # /healthz says why
        problem = dict(agent.kubelet.views.health_checks())["source etcd"]
        assert problem.startswith("not ready: etcd is unreachable: "), problem
        # Meanwhile the cluster moves on, and compacts past the agent's watch revision.
        client.delete(f"{prefix}/pods/n1/default/gone")
        bind(client, prefix, "n1", make_pod("new"))
        bind(
            client,
            prefix,
            "n1",
            make_pod("edit", Container(name="app", image=IMAGE, command=("v2",))),
        )
        watched = agent.source.revision
        client.compact(client.put(f"{prefix}/unrelated", "x"))
        assert agent.running() == before, "nothing stopped while etcd was unreachable"

        proxy.restore()
        wait_for(lambda: agent.source.ready and agent.kubelet.sources_ready())
        wait_for(lambda: agent.running_pods() == {"keep", "new", "edit"})
        assert agent.source.lists == 2, "the compacted watch listed again"
        assert agent.source.revision > watched
        assert agent.running()[("keep", "app")] == before[("keep", "app")]
        assert agent.running()[("edit", "app")] != before[("edit", "app")]
        wait_for(
            lambda: (
                set(statuses(client, prefix, "n1"))
                == {"default/keep", "default/new", "default/edit"}
            ),
            what="the statuses written once etcd answered",
        )
    finally:
        agent.stop()


@pytest.mark.etcd
@pytest.mark.serial  # stops members of the shared cluster
def test_the_cluster_stopped_and_started_again_keeps_every_pod(
    client: Any, prefix: str, agents: Callable[..., Agent], members: Members
) -> None:
    agent = agents("n1")
    bind(client, prefix, "n1", *(make_pod(f"p{i}") for i in range(5)))
    # Every pod running and its status written (a status is written as soon as it changes, so
    # five documents alone may still be Pending ones).
    wait_for(lambda: all(phase(client, prefix, "n1", f"p{i}") == "Running" for i in range(5)))
    wait_for(lambda: len(agent.running()) == 5, what="the five containers running")
    before = agent.running()
    members.down()
    wait_for(lambda: not agent.kubelet.sources_ready(), what="the source not ready")
    assert not agent.source.ready
    assert agent.running() == before
    members.up()
    wait_for(lambda: agent.kubelet.sources_ready(), timeout=60, what="the source ready again")
    assert agent.running() == before
    bind(client, prefix, "n1", make_pod("after"))
    wait_for(lambda: phase(client, prefix, "n1", "after") == "Running", timeout=30)
    assert {k: v for k, v in agent.running().items() if k[0] != "after"} == before


@pytest.mark.etcd
@pytest.mark.serial  # stops members of the shared cluster
@pytest.mark.parametrize("victim", ["follower", "leader"])
def test_a_member_killed_during_a_convergence_loses_nothing(
    client: Any, prefix: str, agents: Callable[..., Agent], members: Members, victim: str
) -> None:
    agent = agents("n1", batch=64, max_pods=1100)
    count = 1000
    bind(client, prefix, "n1", *(make_pod(f"p{i:04}") for i in range(count)))
    wait_for(lambda: len(agent.running()) >= count // 5, what="the convergence under way")
    leader = members.leader(client)
    members.kill(leader if victim == "leader" else leader % 3 + 1)
    bind(client, prefix, "n1", *(make_pod(f"q{i:03}") for i in range(20)))
    wait_for(lambda: len(agent.running()) == count + 20, timeout=120, what="every pod running")
    wait_for(
        lambda: (
            sum(
                1
                for d in statuses(client, prefix, "n1").values()
                if d["status"]["phase"] == "Running"
            )
            == count + 20
        ),
        timeout=120,
        what="every status Running",
    )
    restarts = [c for c in agent.runtime.find_containers() if c.attempt > 0]
    assert restarts == []
    assert agent.kubelet.sources_ready()


@pytest.mark.etcd
def test_an_agent_that_died_adopts_its_pods_and_drops_the_stale_statuses_when_restarted(
    client: Any, prefix: str, agents: Callable[..., Agent], tmp_path: Path
) -> None:
    first = agents("n1", revoke_on_close=False)
    bind(client, prefix, "n1", make_pod("stays"), make_pod("unbound"))
    wait_for(lambda: len(statuses(client, prefix, "n1")) == 2)
    before = first.running()
    first.stop()  # gone without a word: its containers run on, its keys stay
    client.delete(f"{prefix}/pods/n1/default/unbound")
    assert set(statuses(client, prefix, "n1")) == {"default/stays", "default/unbound"}

    second = agents("n1", runtime=first.runtime)
    wait_for(lambda: set(statuses(client, prefix, "n1")) == {"default/stays"})
    wait_for(lambda: second.running_pods() == {"stays"})
    assert second.running()[("stays", "app")] == before[("stays", "app")], "adopted, not restarted"
    assert client.get(f"{prefix}/nodes/n1") is not None


@pytest.mark.etcd
@pytest.mark.parametrize("value", ["", "{garbage: [\n"], ids=["emptied", "garbage"])
def test_a_value_made_bad_while_the_agent_was_down_keeps_its_pod_across_the_restart(
    client: Any, prefix: str, agents: Callable[..., Agent], value: str
) -> None:
    first = agents("n1", revoke_on_close=False)
    bind(client, prefix, "n1", make_pod("stays"))
    wait_for(lambda: first.running_pods() == {"stays"})
    before = first.running()
    first.stop()  # gone without a word: its containers run on
    client.put(f"{prefix}/pods/n1/default/stays", value)

    second = agents("n1", runtime=first.runtime)
    where = wait_for(lambda: {p.where for p in second.source.problems} or None)
    assert where == {f"{prefix}/pods/n1/default/stays"}  # reported
    wait_for(lambda: second.kubelet.sources_ready())
    assert second.running() == before, "the last good pod is kept: not replaced"
    client.delete(f"{prefix}/pods/n1/default/stays")  # a deletion is what the user means
    wait_for(lambda: second.running_pods() == set())


@pytest.mark.etcd
@pytest.mark.serial  # stops members of the shared cluster
def test_a_paused_member_under_the_watch_is_left_for_another(
    client: Any, prefix: str, agents: Callable[..., Agent], members: Members
) -> None:
    agent = agents("n1")
    bind(client, prefix, "n1", make_pod("before"))
    wait_for(lambda: agent.running_pods() == {"before"})
    # SIGSTOP: the member keeps its sockets open and answers nothing (no reset, no close).
    paused = members.number(client.endpoint)
    members.pause(paused)
    try:
        bind(client, prefix, "n1", make_pod("after"))
        wait_for(lambda: agent.running_pods() == {"before", "after"}, timeout=60)
        wait_for(lambda: phase(client, prefix, "n1", "after") == "Running", timeout=30)
        assert members.number(client.endpoint) != paused
    finally:
        members.resume(paused)
    assert agent.running_pods() == {"before", "after"}


# --- the node key and the status writes ---------------------------------------------------------


@pytest.mark.etcd
def test_the_node_key_lives_on_a_lease_that_is_renewed_after_expiry(
    client: Any, prefix: str, tmp_path: Path
) -> None:
    from kubecore_etcd import EtcdStatusSink, node_key

    runtime = FakeRuntime(images=[IMAGE])
    kubelet = Kubelet(
        runtime, runtime, config=KubeletConfig(node_name="n1", root_dir=str(tmp_path / "root"))
    )
    sink = EtcdStatusSink(kubelet, client, prefix=prefix, lease_ttl=2, lease_refresh=0)
    sink.sync_once()
    node = json.loads(client.get(node_key(prefix, "n1")))
    assert node["kind"] == "Node"
    assert [(c["type"], c["status"]) for c in node["status"]["conditions"]] == [("Ready", "True")]
    assert node["status"]["nodeInfo"]["kubeletVersion"].startswith("kubecore/")
    assert node["status"]["capacity"]["pods"] == "110"
    first_lease = sink.lease_id
    # No keep-alive: the lease expires and etcd drops the key by itself.
    wait_for(lambda: client.get(node_key(prefix, "n1")) is None, timeout=15, what="key expired")
    sink.sync_once()
    assert sink.lease_id != first_lease
    assert client.get(node_key(prefix, "n1")) is not None
    sink.sync_once()
    assert sink.stats.keepalives >= 1
    sink.close()
    assert client.get(node_key(prefix, "n1")) is None, "closing revokes the lease"


@pytest.mark.etcd
def test_status_writes_happen_on_change_only_in_rate_limited_batches(
    client: Any, prefix: str, tmp_path: Path
) -> None:
    from kubecore import StaticSource
    from kubecore_etcd import EtcdStatusSink

    runtime = FakeRuntime(images=[IMAGE])
    kubelet = Kubelet(
        runtime, runtime, config=KubeletConfig(node_name="n1", root_dir=str(tmp_path / "root"))
    )
    StaticSource([make_pod("a"), make_pod("b"), make_pod("c")], sink=kubelet.update)
    assert kubelet.sync_until_converged()
    limited = EtcdStatusSink(kubelet, client, prefix=prefix, qps=0.001, burst=1, batch=2)
    assert not limited.sync_once(), "one transaction of two statuses, then the rate limit"
    assert (limited.stats.transactions, limited.stats.puts, limited.pending) == (1, 2, 1)
    assert not limited.sync_once()
    assert limited.pending == 1, "the pending write is kept once, not queued again"
    sink = EtcdStatusSink(kubelet, client, prefix=prefix, qps=0, batch=2)
    assert sink.sync_once()
    assert sink.stats.puts == 1, "what is already in etcd is not written again"
    assert sink.sync_once()
    assert sink.stats.puts == 1, "nothing changed, nothing written"
    assert set(statuses(client, prefix, "n1")) == {"default/a", "default/b", "default/c"}
    sink.close()


@pytest.mark.etcd
def test_the_status_sink_makes_a_document_only_for_a_pod_that_changed(
    client: Any, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubecore import StaticSource
    from kubecore_etcd import EtcdStatusSink, _sink

    made: list[str] = []
    with_status = _sink.with_status

    def counting(head: bytes, status: Any) -> bytes:
        made.append(json.loads(head + b"}")["metadata"]["name"])
        return with_status(head, status)

    monkeypatch.setattr(_sink, "with_status", counting)
    runtime = FakeRuntime(images=[IMAGE])
    kubelet = Kubelet(
        runtime, runtime, config=KubeletConfig(node_name="n1", root_dir=str(tmp_path / "root"))
    )
    a = make_pod("a")
    source = StaticSource([a, make_pod("b")], sink=kubelet.update)
    assert kubelet.sync_until_converged()
    sink = EtcdStatusSink(kubelet, client, prefix=prefix, qps=0)
    assert sink.sync_once()
    assert sorted(made) == ["a", "b"]
    made.clear()
    kubelet.sync()
    assert sink.sync_once()
    assert made == [], "no pod changed: no document made, none written"
    source.set([a, make_pod("b", Container(name="app", image=IMAGE, command=("x",)))])
    assert kubelet.sync_until_converged()
    puts = sink.stats.puts
    assert sink.sync_once()
    assert "b" in made
    assert sink.stats.puts == puts + 1, "only the pod whose status changed is written"
    assert phase(client, prefix, "n1", "b") == "Running"
    sink.close()


# --- TLS and auth, on a member of the test's own ----------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def make_certificates(directory: Path) -> dict[str, str]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate (openssl)."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca",
            "-keyout", "ca.key", "-out", "ca.crt")  # fmt: skip
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                "-keyout", f"{name}.key", "-out", f"{name}.csr")  # fmt: skip
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "1", "-extfile", "san.ext",
                "-out", f"{name}.crt")  # fmt: skip
    return {
        name: str(directory / name)
        for name in ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")
    }


@pytest.fixture
def secure_member(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A one-member etcd of this test's own on https://127.0.0.1 with client certificates and
    auth enabled (user root, password kubecore-test)."""
    pytest.importorskip("aetcd", reason="the etcd extra is not installed")
    if shutil.which("etcd") is None or shutil.which("etcdctl") is None:
        pytest.skip("etcd is not installed (scripts/test-etcd.sh up installs it)")
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    certs = make_certificates(tmp_path)
    client_port, peer_port = free_port(), free_port()
    endpoint = f"https://127.0.0.1:{client_port}"
    peer = f"http://127.0.0.1:{peer_port}"
    log = (tmp_path / "etcd.log").open("wb")
    member = subprocess.Popen(
        ["etcd", "--name", "secure", "--data-dir", str(tmp_path / "data"),
         "--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
         "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
         "--initial-cluster", f"secure={peer}",
         "--cert-file", certs["server.crt"], "--key-file", certs["server.key"],
         "--trusted-ca-file", certs["ca.crt"], "--client-cert-auth"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    tls = ["--endpoints", endpoint, "--cacert", certs["ca.crt"], "--cert", certs["client.crt"],
           "--key", certs["client.key"]]  # fmt: skip
    env = {**os.environ, "ETCDCTL_API": "3"}

    def etcdctl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["etcdctl", *tls, *args], env=env, capture_output=True, text=True, timeout=30
        )

    try:
        wait_for(lambda: etcdctl("endpoint", "health").returncode == 0, what="the member")
        for args in (("user", "add", "root:kubecore-test"), ("auth", "enable")):
            done = etcdctl(*args)
            assert done.returncode == 0, done.stderr
        yield endpoint, certs
    finally:
        member.terminate()
        member.wait(30)
        log.close()


@pytest.mark.etcd
def test_tls_with_client_certificates_and_a_user(
    secure_member: tuple[str, dict[str, str]],
) -> None:
    from kubecore_etcd import EtcdClient, EtcdConfig, EtcdUnavailable

    endpoint, certs = secure_member
    tls = {
        "cafile": certs["ca.crt"],
        "certfile": certs["client.crt"],
        "keyfile": certs["client.key"],
    }
    with EtcdClient(EtcdConfig((endpoint,), user="root:kubecore-test", **tls)) as client:
        client.put("/secure/pods/n1/default/web", POD_YAML.format(name="web"))
        assert client.get("/secure/pods/n1/default/web") == POD_YAML.format(name="web").encode()
    wrong = EtcdClient(EtcdConfig((endpoint,), user="root:wrong", timeout=2.0, **tls))
    with wrong, pytest.raises(Exception, match="authentication failed"):
        wrong.get("/secure/pods/n1/default/web")
    # Without the CA the server's certificate is refused: nothing answers.
    plain = {"certfile": certs["client.crt"], "keyfile": certs["client.key"]}
    untrusting = EtcdClient(
        EtcdConfig((endpoint,), user="root:kubecore-test", timeout=2.0, **plain)
    )
    with untrusting, pytest.raises(EtcdUnavailable):
        untrusting.get("/secure/pods/n1/default/web")


# --- an agent in a process of its own: paused past its lease, killed, restarted -------------------

AGENT_SCRIPT = """
import sys, tempfile, threading
from kubecore import Kubelet, KubeletConfig, SourcePoller
from kubecore_etcd import EtcdClient, EtcdConfig, EtcdSource, EtcdStatusSink, parse_endpoints
from kubecore_fake import FakeRuntime

endpoints, prefix, node = sys.argv[1:4]
client = EtcdClient(EtcdConfig(parse_endpoints(endpoints)))
runtime = FakeRuntime(images=["busybox:1.36"])
kubelet = Kubelet(runtime, runtime, config=KubeletConfig(
    node_name=node, root_dir=tempfile.mkdtemp(), relist_interval=0.2), sources=["etcd"])
source = EtcdSource(client, node, prefix=prefix)
SourcePoller([source], kubelet.update, tick=0.05).start()
EtcdStatusSink(kubelet, client, node, prefix=prefix, interval=0.1, qps=0,
               lease_ttl=2, lease_refresh=0.5).start()
kubelet.start()
print("started", flush=True)
threading.Event().wait()
"""


@pytest.fixture
def agent_process(
    etcd_endpoints: tuple[str, ...], prefix: str
) -> Iterator[Callable[[], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-c", AGENT_SCRIPT, ",".join(etcd_endpoints), prefix, "p1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        started.append(process)
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "started"
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.kill()
        process.wait(30)


@pytest.mark.etcd
def test_an_agent_paused_past_its_lease_comes_back_and_a_killed_one_keeps_its_pods_bound(
    client: Any, prefix: str, agent_process: Callable[[], subprocess.Popen[str]]
) -> None:
    from kubecore_etcd import node_key

    agent = agent_process()
    bind(client, prefix, "p1", make_pod("web"))
    wait_for(lambda: phase(client, prefix, "p1", "web") == "Running", what="web Running")
    assert client.get(node_key(prefix, "p1")) is not None

    agent.send_signal(signal.SIGSTOP)  # past the 2 s lease: etcd drops the node key by itself
    wait_for(lambda: client.get(node_key(prefix, "p1")) is None, timeout=15, what="lease expiry")
    agent.send_signal(signal.SIGCONT)  # a new lease, the node key again
    wait_for(lambda: client.get(node_key(prefix, "p1")) is not None, what="the node key back")
    bind(client, prefix, "p1", make_pod("db"))
    wait_for(lambda: phase(client, prefix, "p1", "db") == "Running", what="db Running")

    agent.kill()  # kill -9: the node key goes with its lease; the pods stay bound
    agent.wait(30)
    wait_for(lambda: client.get(node_key(prefix, "p1")) is None, timeout=15, what="lease expiry")
    assert set(statuses(client, prefix, "p1")) == {"default/web", "default/db"}

    agent_process()  # restarted: the bound pods run again and their statuses are rewritten
    wait_for(lambda: client.get(node_key(prefix, "p1")) is not None, what="the node key back")
    bind(client, prefix, "p1", make_pod("db", Container(name="app", image=IMAGE, command=("v2",))))
    wait_for(
        lambda: (
            statuses(client, prefix, "p1")["default/db"]["spec"]["containers"][0]["command"]
            == ["v2"]
        ),
        what="the restarted agent following the edit",
    )
    assert phase(client, prefix, "p1", "web") == "Running"
