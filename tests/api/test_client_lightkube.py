"""lightkube against a node (fake runtime, TLS, the bearer token, a kubeconfig as ``kubecore
kubeconfig`` writes one), as a user drives it: pods and ConfigMaps listed, read, created,
patched and deleted, watched from a list's resourceVersion, the Node read into lightkube's
strict models, exec sessions one after another. Each watch is bounded by its
``server_timeout``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client, KubeConfig
from lightkube.codecs import from_dict
from lightkube.resources.core_v1 import ConfigMap, Node, Pod

from kubecore._contract.streaming import StreamSession
from tests.api.client_support import CONFIG_MAP, TlsNode, tls_node, web_pod
from tests.api.kubectl_support import wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def lightkube(tmp_path: Path) -> Iterator[tuple[TlsNode, Client]]:
    with tls_node(tmp_path) as node:
        yield node, Client(KubeConfig.from_file(str(node.kubeconfig)), namespace="default")


def _first(
    stream: Iterator[tuple[str, Any]], wanted: str, name: str, label: str | None = None
) -> Any:
    """The first ``wanted`` event of ``name`` (whose object carries ``label``, if given)."""
    for kind, obj in stream:
        carried = label is None or label in (obj.metadata.labels or {})
        if kind == wanted and obj.metadata.name == name and carried:
            return obj
    raise AssertionError(f"the watch ended before {wanted} {name}")


def test_the_node_is_read(lightkube: tuple[TlsNode, Client]) -> None:
    node, api = lightkube
    name = node.node.kubelet.config.node_name
    assert api.get(Node, name).status.nodeInfo.kubeProxyVersion == ""
    assert [n.metadata.name for n in api.list(Node)] == [name]


def test_pods_are_created_read_patched_watched_and_deleted(
    lightkube: tuple[TlsNode, Client],
) -> None:
    _, api = lightkube
    created = api.create(from_dict(web_pod()))
    assert created.metadata.uid
    listed = api.list(Pod, labels={"app": "web"})
    assert [p.metadata.name for p in listed] == ["web"]
    version = listed.resourceVersion
    api.patch(Pod, "web", {"metadata": {"labels": {"tier": "front"}}})
    assert api.get(Pod, "web").metadata.labels["tier"] == "front"
    stream = api.watch(Pod, resource_version=version, server_timeout=10)
    # The agent's own status writes are MODIFIED events too, before the patch or after it.
    assert _first(stream, "MODIFIED", "web", label="tier").metadata.labels["tier"] == "front"
    api.delete(Pod, "web", grace_period=0)
    wait_for(lambda: "web" not in {p.metadata.name for p in api.list(Pod)}, what="the pod to go")


def test_config_maps_are_created_read_patched_watched_and_deleted(
    lightkube: tuple[TlsNode, Client],
) -> None:
    _, api = lightkube
    api.create(from_dict(CONFIG_MAP))
    listed = api.list(ConfigMap, labels={"app": "clients"})
    assert [c.metadata.name for c in listed] == ["settings"]
    version = listed.resourceVersion
    api.patch(ConfigMap, "settings", {"data": {"mode": "slow"}})
    assert api.get(ConfigMap, "settings").data == {"mode": "slow"}
    api.delete(ConfigMap, "settings")
    stream = api.watch(ConfigMap, resource_version=version, server_timeout=10)
    assert _first(stream, "MODIFIED", "settings").data == {"mode": "slow"}
    assert _first(stream, "DELETED", "settings")
    assert list(api.list(ConfigMap)) == []


class _SlowToClose:
    """A session whose ``close`` takes a while (a runtime that takes its time to clean up):
    whatever follows the close on the connection goes out that much later."""

    def __init__(self, session: StreamSession) -> None:
        self._session = session

    def close(self) -> None:
        time.sleep(0.2)
        self._session.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def test_exec_sessions_one_after_another_leave_the_next_connection_whole(
    lightkube: tuple[TlsNode, Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    """lightkube closes its socket as soon as it has the exit status, while a thread of its own
    still reads the connection: a close frame sent after the status (here after a slow session
    close) woke that read, which then took bytes of the client's next TLS connection, the same
    descriptor number (``WRONG_VERSION_NUMBER`` on connect, ``BAD_RECORD_MAC`` on read). The
    status and the close frame go out in one write."""
    node, api = lightkube
    kubelet = node.node.kubelet
    open_session = kubelet.exec_stream
    monkeypatch.setattr(kubelet, "exec_stream", lambda *a, **k: _SlowToClose(open_session(*a, **k)))
    deadline = time.monotonic() + 60
    for _ in range(12):
        done = api.exec("talker", command=["cat"], stdin="x\n", stdout=True, stderr=True)
        assert (done.stdout, done.exit_code) == ("x\n", 0)
        failed = api.exec("talker", command=["sh", "-c", "exit 4"], stderr=True)
        assert failed.exit_code == 4
        assert time.monotonic() < deadline, "exec sessions took over a minute"
