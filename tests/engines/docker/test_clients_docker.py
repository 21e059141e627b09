"""Python's Kubernetes clients against a node on the Docker engine (TLS, the bearer token, a
kubeconfig as ``kubecore kubeconfig`` writes one), streaming into a real pod: lightkube's and
kr8s' pod logs and exec (lightkube's with stdin, through the v5 channel protocol; kr8s 0.20
offers exec v4 only, where it refuses stdin itself), kr8s' port-forward; the
official ``kubernetes`` client's exec exit codes (the ``ERROR`` channel's Status), its
port-forward (raw bytes, and HTTP through ``http.client``) and an informer's watch of
ConfigMaps (``watch.Watch().stream(list_namespaced_config_map, ...)``: the initial events and
their end bookmark, a watch resumed from the resourceVersion the last one reached, the periodic
bookmarks).

One agent and one pod serve the whole module (an agent on Docker takes seconds to start)."""

from __future__ import annotations

import http.client
import json
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import attrs
import kr8s
import pytest
import yaml
from kr8s.objects import Pod as Kr8sPod
from kubernetes import client, config, watch
from kubernetes.stream import portforward, stream
from kubernetes.stream.ws_client import ERROR_CHANNEL
from lightkube import Client, KubeConfig

from kubecore._api import watch as api_watch
from kubecore._contract.labels import POD_NAMESPACE_LABEL
from tests.api.kubectl_support import wait_for
from tests.engines.docker.conftest import TestEngine, remove_labelled
from tests.engines.docker.kubectl_agent import docker_api_node
from tests.engines.docker.stream_support import HTTPD

pytestmark = [pytest.mark.docker, pytest.mark.timeout(180)]

POD = "clients"
GREETING = "clients-log-line"
POD_SCRIPT = (
    f"echo {GREETING}; ({HTTPD.format(address='8080')}) & "
    "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"
)
WAIT = 30.0


@attrs.frozen
class Site:
    namespace: str
    kubeconfig: str

    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(config.new_client_from_config(self.kubeconfig))


def _pod(image: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": POD, "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", POD_SCRIPT],
                    "ports": [{"containerPort": 8080}],
                    "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def site(engine: TestEngine, raw: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("clients-docker")
    namespace = f"clients-{uuid.uuid4().hex[:10]}"
    try:
        with docker_api_node(engine, tmp, "clients-node") as node:
            found = Site(namespace, str(node.kubectl.kubeconfig))
            found.core().create_namespaced_pod(namespace, _pod(engine.image, namespace))

            def ready() -> bool:
                pod = node.kubelet.get_pod(namespace, POD)
                conditions = pod.status.conditions if pod and pod.status else ()
                return any(c.type == "Ready" and c.status == "True" for c in conditions)

            wait_for(ready, 90, what=f"pod {POD} to be ready")
            yield found
    finally:
        remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={namespace}")


def _http_get(sock: socket.socket) -> bytes:
    sock.sendall(b"GET / HTTP/1.0\r\nHost: pod\r\n\r\n")
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


# -- lightkube ---------------------------------------------------------------------------------


def test_lightkube_logs_and_exec_with_stdin(site: Site) -> None:
    api = Client(KubeConfig.from_file(site.kubeconfig), namespace=site.namespace)
    assert GREETING in next(iter(api.log(POD, container="main")))
    done = api.exec(POD, command=["cat"], stdin="through lightkube\n", stdout=True, stderr=True)
    assert (done.stdout, done.exit_code) == ("through lightkube\n", 0)
    failed = api.exec(POD, command=["sh", "-c", "echo no >&2; exit 4"], stderr=True)
    assert (failed.stderr, failed.exit_code) == ("no\n", 4)


# -- kr8s --------------------------------------------------------------------------------------


def test_kr8s_logs_exec_with_stdin_and_port_forward(site: Site) -> None:
    api = kr8s.api(kubeconfig=site.kubeconfig)
    pod = Kr8sPod.get(POD, namespace=site.namespace, api=api)
    assert GREETING in "".join(pod.logs(container="main"))
    # kr8s 0.20 offers exec only v4.channel.k8s.io, where it refuses stdin itself.
    done = pod.exec(["sh", "-c", "echo through kr8s"])
    assert (done.stdout, done.returncode) == (b"through kr8s\n", 0)
    failed = pod.exec(["sh", "-c", "exit 5"], check=False)
    assert failed.returncode == 5
    with (
        pod.portforward(8080, local_port=None) as port,
        socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock,
    ):
        assert _http_get(sock).endswith(b"hello-from-pod\n")


# -- the kubernetes client ---------------------------------------------------------------------


def _exec(api: client.CoreV1Api, namespace: str, script: str) -> Any:
    """``script`` run to its end: the client's session (its ERROR channel not read yet)."""
    session = stream(
        api.connect_get_namespaced_pod_exec,
        POD,
        namespace,
        command=["sh", "-c", script],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _preload_content=False,
    )
    session.run_forever(timeout=WAIT)
    return session


def test_kubernetes_exec_exit_codes(site: Site) -> None:
    api = site.core()
    assert [_exec(api, site.namespace, f"exit {c}").returncode for c in (0, 3, 255)] == [0, 3, 255]
    success = yaml.safe_load(_exec(api, site.namespace, "true").read_channel(ERROR_CHANNEL))
    assert success == {"metadata": {}, "status": "Success"}
    failure = yaml.safe_load(_exec(api, site.namespace, "exit 3").read_channel(ERROR_CHANNEL))
    assert (failure["status"], failure["reason"]) == ("Failure", "NonZeroExitCode")
    assert failure["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
    output = stream(
        api.connect_get_namespaced_pod_exec,
        POD,
        site.namespace,
        command=["sh", "-c", "echo out"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
    )
    assert output == "out\n"


def test_kubernetes_port_forward_raw_and_http(site: Site) -> None:
    api = site.core()
    raw = portforward(api.connect_get_namespaced_pod_portforward, POD, site.namespace, ports="8080")
    sock = raw.socket(8080)
    sock.setblocking(True)
    assert _http_get(sock).endswith(b"hello-from-pod\n")
    sock.close()
    forwarded = portforward(
        api.connect_get_namespaced_pod_portforward, POD, site.namespace, ports="8080"
    )
    connection = http.client.HTTPConnection(
        f"{POD}.{site.namespace}.kubernetes", 8080, timeout=WAIT
    )
    connection.sock = forwarded.socket(8080)  # type: ignore[assignment]
    connection.request("GET", "/")
    response = connection.getresponse()
    assert (response.status, response.read()) == (200, b"hello-from-pod\n")
    connection.close()
    assert raw.error(8080) is None and forwarded.error(8080) is None


def _config_map(name: str, value: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"app": "informer"}}, "data": {"v": value}}


def test_kubernetes_informer_watch_of_config_maps(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api_watch, "BOOKMARK_SECONDS", 1.0)
    api, namespace = site.core(), site.namespace
    api.create_namespaced_config_map(namespace, _config_map("first", "1"))
    # An informer's first watch: the initial events, their end told by a bookmark.
    watcher = watch.Watch()
    seen: list[tuple[str, str]] = []
    for event in watcher.stream(
        api.list_namespaced_config_map,
        namespace,
        label_selector="app=informer",
        allow_watch_bookmarks=True,
        send_initial_events=True,
        resource_version_match="NotOlderThan",
        timeout_seconds=10,
    ):
        obj = event["object"]
        if event["type"] == "BOOKMARK":
            annotations = obj["metadata"].get("annotations") or {}
            if annotations.get("k8s.io/initial-events-end") == "true":
                break
            continue
        seen.append((event["type"], obj.metadata.name))
    watcher.stop()
    assert seen == [("ADDED", "first")]
    reached = watcher.resource_version
    assert reached and int(reached) > 0
    # Changes made while no watch runs: the next watch, from the version reached, sees each.
    api.patch_namespaced_config_map("first", namespace, {"data": {"v": "2"}})
    api.create_namespaced_config_map(namespace, _config_map("second", "1"))
    api.delete_namespaced_config_map("first", namespace)
    resumed = watch.Watch()
    changes: list[tuple[str, str, Any]] = []
    bookmarks = 0
    for event in resumed.stream(
        api.list_namespaced_config_map,
        namespace,
        label_selector="app=informer",
        allow_watch_bookmarks=True,
        resource_version=reached,
        timeout_seconds=15,
    ):
        if event["type"] == "BOOKMARK":
            bookmarks += 1
            assert json.dumps(event["object"]["metadata"]["resourceVersion"])
        else:
            obj = event["object"]
            changes.append((event["type"], obj.metadata.name, obj.data))
        if len(changes) == 3 and bookmarks:
            break
    resumed.stop()
    assert changes == [
        ("MODIFIED", "first", {"v": "2"}),
        ("ADDED", "second", {"v": "1"}),
        ("DELETED", "first", {"v": "2"}),
    ]
    assert int(resumed.resource_version) > int(reached)
    api.delete_namespaced_config_map("second", namespace)
