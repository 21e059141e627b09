"""ConfigMaps and Secrets in etcd (``<prefix>/configmaps/<ns>/<name>``, ``<prefix>/secrets/...``):
decoded without quoting values, written by ``kubecore etcd apply``, read by every node's agent."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubecore import Kubelet, KubeletConfig, SourcePoller, ValidationError
from kubecore.v1 import ConfigMap, Secret
from kubecore_fake import FakeRuntime
from tests.engines.etcd.helpers import wait_for

SECRET_VALUE = "etcd-hunter2"


def test_object_key_layout() -> None:
    from kubecore_etcd import object_key, objects_prefix

    assert objects_prefix("/kubecore", "ConfigMap") == "/kubecore/configmaps/"
    assert object_key("kubecore/", "Secret", "ns", "db") == "/kubecore/secrets/ns/db"


def test_decode_object_takes_namespace_and_name_from_the_key_and_hides_values() -> None:
    from kubecore_etcd import decode_object

    value = json.dumps({"stringData": {"password": SECRET_VALUE}}).encode()
    secret = decode_object(value, "/p/secrets/team/db", "Secret", "team", "db")
    assert isinstance(secret, Secret)
    assert (secret.metadata.namespace, secret.metadata.name) == ("team", "db")
    assert secret.data == {"password": SECRET_VALUE.encode()}
    config_map = decode_object(b"data: {a: b}", "/p/configmaps/x/c", "ConfigMap", "x", "c")
    assert isinstance(config_map, ConfigMap) and config_map.data == {"a": "b"}
    with pytest.raises(ValidationError) as bad:
        decode_object(f"data: {{k: '{SECRET_VALUE}'}}".encode(), "k", "Secret", "d", "s")
    assert SECRET_VALUE not in str(bad.value)
    with pytest.raises(ValidationError) as unparsable:
        decode_object(f"data: [{SECRET_VALUE}".encode(), "k", "Secret", "d", "s")
    assert SECRET_VALUE not in str(unparsable.value)
    with pytest.raises(ValidationError, match="must be Secret"):
        decode_object(b"kind: ConfigMap", "k", "Secret", "d", "s")


MANIFEST = f"""
apiVersion: v1
kind: Secret
metadata: {{name: db}}
stringData: {{password: {SECRET_VALUE}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: web}}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [server]
    env:
    - name: LEVEL
      valueFrom: {{configMapKeyRef: {{name: settings, key: level}}}}
    - name: PASSWORD
      valueFrom: {{secretKeyRef: {{name: db, key: password}}}}
"""


@pytest.mark.etcd
def test_apply_writes_objects_and_the_agent_waits_for_a_missing_one(
    client: Any, prefix: str, etcd_endpoints: tuple[str, ...], tmp_path: Path
) -> None:
    from kubecore_etcd import EtcdObjectSource, EtcdSource, object_key
    from kubecore_etcd._cli import apply

    manifest = tmp_path / "web.yaml"
    manifest.write_text(MANIFEST)
    out = apply([manifest], "n1", etcd_endpoints, prefix)
    assert out == "secret/db (default) configured\npod/web (default) bound to n1\n"
    stored = json.loads(client.get(object_key(prefix, "Secret", "default", "db")))
    assert stored["data"] == {"password": base64.b64encode(SECRET_VALUE.encode()).decode()}
    assert apply([manifest], "n1", etcd_endpoints, prefix).startswith(
        "secret/db (default) unchanged\n"
    )

    runtime = FakeRuntime(images=["busybox:1.36"])
    kubelet = Kubelet(
        runtime,
        runtime,
        config=KubeletConfig(node_name="n1", root_dir=str(tmp_path / "root"), relist_interval=0.2),
    )
    sources = [
        EtcdSource(client, "n1", prefix=prefix),
        *(EtcdObjectSource(client, "n1", kind, prefix=prefix) for kind in ("ConfigMap", "Secret")),
    ]
    poller = SourcePoller(sources, kubelet.update, tick=0.05)
    kubelet.start()
    poller.start()
    try:

        def waiting_reason() -> str:
            pod = kubelet.get_pod("default", "web")
            statuses = pod.status.container_statuses if pod and pod.status else ()
            state = statuses[0].state.waiting if statuses else None
            return state.message if state and state.reason == "CreateContainerConfigError" else ""

        assert wait_for(waiting_reason, what="CreateContainerConfigError")
        assert waiting_reason() == 'configmap "settings" not found'
        client.put(
            object_key(prefix, "ConfigMap", "default", "settings"),
            json.dumps({"data": {"level": "debug"}}),
        )
        running: Callable[[], list[Any]] = lambda: runtime.find_containers("app")  # noqa: E731
        (container,) = wait_for(running, what="the container started")
        env = dict(runtime.container_config(container.id).env)
        assert env == {"LEVEL": "debug", "PASSWORD": SECRET_VALUE}
        assert kubelet.views.objects.get_secret("default", "db") is not None
    finally:
        poller.stop()
        kubelet.stop()
