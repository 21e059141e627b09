"""A pod bound in etcd with ``kubecore etcd apply`` runs on the Docker runtime, its status lands
under its status key, and deleting its key stops it: the real engine and the real etcd cluster."""

# ruff: noqa: F811 - fixtures are imported from the Docker and etcd test modules

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore import Kubelet, KubeletConfig, SourcePoller
from kubecore.runtime import CONTAINER_NAME_LABEL, POD_NAMESPACE_LABEL, SystemClock
from kubecore_docker import DockerConnection, DockerOptions, DockerPuller, DockerRuntime
from tests.engines.docker.conftest import TestEngine, engine, raw, remove_labelled, test_uid  # noqa: F401
from tests.engines.etcd.helpers import statuses, wait_for

pytestmark = [pytest.mark.docker, pytest.mark.etcd]

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: {namespace}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: {image}
    command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"]
"""


@pytest.fixture
def namespace(raw: Any, test_uid: str) -> Iterator[str]:
    ns = f"etcd-{test_uid}"
    yield ns
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={ns}")


def running_in_engine(raw: Any, namespace: str) -> list[dict[str, Any]]:
    """The pod's ``app`` container (not its sandbox) as the engine lists it, while running."""
    labels = [f"{POD_NAMESPACE_LABEL}={namespace}", f"{CONTAINER_NAME_LABEL}=app"]
    found: list[dict[str, Any]] = raw.containers(filters={"label": labels, "status": "running"})
    return found


def test_a_pod_bound_with_apply_runs_on_docker_and_its_status_comes_back(
    engine: TestEngine,
    raw: Any,
    namespace: str,
    etcd_endpoints: tuple[str, ...],
    client: Any,
    prefix: str,
    tmp_path: Path,
) -> None:
    from kubecore_etcd import attach
    from kubecore_etcd._cli import apply

    connection = DockerConnection(
        DockerOptions(
            base_url=engine.base_url,
            timeout=30,
            sandbox_image=engine.pause_image,
            sandbox_stop_timeout=2,
        )
    )
    runtime = DockerRuntime(connection)
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 192.0.2.53\n")
    kubelet = Kubelet(
        runtime,
        DockerPuller(connection),
        config=KubeletConfig(
            node_name="docker-node",
            root_dir=str(tmp_path / "root"),
            resolv_conf=str(resolv),
            relist_interval=0.3,
        ),
        clock=SystemClock(),
    )
    attachment = attach(kubelet, etcd_endpoints, prefix, qps=0)
    poller = SourcePoller([attachment.source], kubelet.update, tick=0.1)
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(MANIFEST.format(namespace=namespace, image=engine.image))
    kubelet.start()
    poller.start()
    attachment.start()
    try:
        apply([manifest], "docker-node", etcd_endpoints, prefix)
        key = f"{namespace}/web"

        def running_status() -> Any:
            document = statuses(client, prefix, "docker-node").get(key)
            return document if document and document["status"]["phase"] == "Running" else None

        document = wait_for(running_status, timeout=60, what="the pod Running in etcd")
        (engine_container,) = wait_for(lambda: running_in_engine(raw, namespace), timeout=30)
        (container_status,) = document["status"]["containerStatuses"]
        assert container_status["containerID"] == f"docker://{engine_container['Id']}"

        client.delete(f"{prefix}/pods/docker-node/{namespace}/web")
        wait_for(lambda: not running_in_engine(raw, namespace), timeout=60, what="stopped")
        wait_for(lambda: key not in statuses(client, prefix, "docker-node"), what="status gone")
    finally:
        poller.stop()
        attachment.close()
        kubelet.stop(timeout=10)
        runtime.close()
        connection.close()
