"""AGE and ``creationTimestamp`` across a restart of the agent (and the node conditions' and
events' times), read with the real ``kubectl``
(fake runtime, real time): the same for a pod of a manifest file (the file source, as ``kubecore
run`` wires it) as for a pod written over the API."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._api.server import ApiServerConfig, attach_api
from kubecore._config.file import FileSource
from kubecore._config.poller import SourcePoller
from kubecore._http.server import KubeletServer, ServerConfig
from kubecore._plugins.registry import RuntimeBundle, load_runtime
from kubecore._util.timefmt import rfc3339
from tests.api.kubectl_support import (
    STATIC_POD,
    TOKEN,
    WEB_POD,
    Certs,
    Kubectl,
    kubectl_for,
    make_certs,
    needs_kubectl,
    wait_for,
)

pytestmark = needs_kubectl


@contextlib.contextmanager
def agent(bundle: RuntimeBundle, tmp: Path, certs: Certs, run: int) -> Iterator[Kubectl]:
    """One run of the agent: a manifest directory, the API, the loop, HTTPS."""
    kubelet = Kubelet.from_bundle(
        bundle,
        config=KubeletConfig(node_name="node-1", root_dir=str(tmp / "root")),
        sources=("file",),
    )
    files = FileSource(tmp / "manifests", interval=0.2, settle=0.0, watch=False)
    poller = SourcePoller([files], kubelet.update, clock=kubelet.clock)
    token_file = tmp / "token"
    token_file.write_text(TOKEN + "\n")
    api = attach_api(kubelet, ApiServerConfig(token_file=str(token_file)), address="127.0.0.1")
    poller.start()
    kubelet.start()
    config = ServerConfig(
        port=0, tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key)
    )
    server = KubeletServer(kubelet, config, api=api).start()
    try:
        yield kubectl_for(tmp / f"kubectl-{run}", server.url, token=TOKEN, ca=certs.ca)
    finally:
        server.stop()
        poller.stop()
        kubelet.stop()


def created(kubectl: Kubectl, name: str) -> str:
    done = kubectl.run(
        "get", "pod", name, "-o", "jsonpath={.metadata.creationTimestamp}", check=False
    )
    return done.stdout if done.returncode == 0 else ""


def test_every_pod_keeps_its_creation_time_across_a_restart(tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    bundle = load_runtime("fake")
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "talker.yaml").write_text(STATIC_POD)
    web = tmp_path / "web.yaml"
    web.write_text(WEB_POD)
    with agent(bundle, tmp_path, certs, 1) as kubectl:
        kubectl.out("apply", "-f", str(web))
        before = {name: wait_for(lambda n=name: created(kubectl, n)) for name in ("talker", "web")}
        ages = kubectl.out("get", "pods")
        # A restart in the same second would prove nothing.
        wait_for(lambda: rfc3339(time.time()) not in before.values(), what="the next second")
    with agent(bundle, tmp_path, certs, 2) as kubectl:
        after = {name: wait_for(lambda n=name: created(kubectl, n)) for name in ("talker", "web")}
        assert after == before, ages
        assert rfc3339(time.time()) not in after.values()


def node_times(kubectl: Kubectl) -> tuple[dict[str, str], dict[str, str]]:
    """Each condition's lastTransitionTime, and each node event's (reason: firstTimestamp)."""
    node = json.loads(kubectl.out("get", "node", "node-1", "-o", "json"))
    conditions = {c["type"]: c["lastTransitionTime"] for c in node["status"]["conditions"]}
    events = json.loads(kubectl.out("get", "events", "-A", "-o", "json"))["items"]
    return conditions, {
        e["reason"]: e["firstTimestamp"] for e in events if e["involvedObject"]["kind"] == "Node"
    }


def test_the_node_conditions_and_their_events_keep_their_times_across_a_restart(
    tmp_path: Path,
) -> None:
    certs = make_certs(tmp_path / "certs")
    bundle = load_runtime("fake")
    (tmp_path / "manifests").mkdir()
    with agent(bundle, tmp_path, certs, 1) as kubectl:
        conditions, events = wait_for(lambda: (t := node_times(kubectl))[1] and t)
        assert conditions["Ready"] == events["NodeReady"]
        assert set(events) >= {"NodeReady", "NodeHasSufficientMemory", "NodeHasNoDiskPressure"}
        # A restart in the same second would prove nothing.
        wait_for(lambda: rfc3339(time.time()) not in conditions.values(), what="the next second")
    with agent(bundle, tmp_path, certs, 2) as kubectl:
        again, events_again = node_times(kubectl)
    assert again == conditions
    assert {r: events_again.get(r) for r in events} == events
    assert rfc3339(time.time()) not in again.values()
