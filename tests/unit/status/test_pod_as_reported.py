"""``/pods`` and ``Kubelet.pods()`` show the pod as the API server would (``kubectl get pod -o
yaml``): creation time, node, host and pod IPs, QoS class, start time, container ids in the
runtime's scheme, image ids, ``started`` and ``lastState``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubecore import KubeletConfig, Pod
from kubecore._util.host import detect_host_ip
from kubecore.manifest import pod_from_dict, pod_to_dict
from kubecore.testing import FakeNode
from kubecore.v1 import Container, ObjectMeta, PodSpec, ResourceRequirements, qos_class

CPU_AND_MEMORY = {"cpu": "500m", "memory": "128Mi"}


def pod_of(*containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod(ObjectMeta(name="p"), PodSpec(containers=containers, init_containers=init))


def c(name: str = "c", **resources: dict[str, str]) -> Container:
    return Container(name=name, image="busybox", resources=ResourceRequirements(**resources))


@pytest.mark.parametrize(
    "pod, expected",
    [
        (pod_of(c()), "BestEffort"),
        (pod_of(c(requests={"cpu": "100m"})), "Burstable"),
        (pod_of(c(limits=CPU_AND_MEMORY)), "Guaranteed"),  # requests default to limits
        (pod_of(c(requests=CPU_AND_MEMORY, limits=CPU_AND_MEMORY)), "Guaranteed"),
        (pod_of(c(requests={"cpu": "250m"}, limits=CPU_AND_MEMORY)), "Burstable"),
        (pod_of(c(limits={"cpu": "1"})), "Burstable"),
        (pod_of(c(limits=CPU_AND_MEMORY), c("other")), "Burstable"),
        (pod_of(c(limits=CPU_AND_MEMORY), init=(c("i"),)), "Burstable"),
        (pod_of(c(requests={"cpu": "0"})), "BestEffort"),
        (pod_of(c(requests={"ephemeral-storage": "1Gi"})), "BestEffort"),
        (
            pod_of(
                c(limits={"cpu": "1", "memory": "1Gi"}),
                c("b", limits={"cpu": "1000m", "memory": "1024Mi"}),
            ),
            "Guaranteed",
        ),
    ],
)
def test_qos_class(pod: Pod, expected: str) -> None:
    assert qos_class(pod) == expected


MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: busybox:1.35
    command: ["httpd", "-f", "-p", "8080"]
    resources:
      limits: {cpu: 500m, memory: 64Mi}
"""


def test_the_pod_as_the_api_server_shows_it(tmp_path: Path) -> None:
    config = KubeletConfig(node_name="node-7", host_ip="192.0.2.10")
    with FakeNode(tmp_path, config=config) as node:
        node.apply(MANIFEST)
        node.run_until(lambda: node.status("web").phase == "Running")
        first_id = node.containers("web", "app", running=True)[0].id
        node.runtime.crash(first_id, 2)
        node.run_until(
            lambda: (
                node.status("web").container_statuses[0].state.running is not None
                and node.status("web").container_statuses[0].restart_count == 1
            )
        )
        pod = node.pod("web")
    assert pod.metadata.creation_timestamp.endswith("Z")
    assert pod.spec.node_name == "node-7"
    status = pod.status
    assert status is not None
    assert status.host_ip == "192.0.2.10"
    assert [h.ip for h in status.host_ips] == ["192.0.2.10"]
    assert status.pod_ip and [p.ip for p in status.pod_ips] == [status.pod_ip]
    assert status.qos_class == "Guaranteed"
    assert status.start_time.endswith("Z")
    (app,) = status.container_statuses
    assert app.container_id.startswith("fake://") and app.image_id
    assert app.started and app.ready
    terminated = app.last_state.terminated
    assert terminated is not None
    assert (terminated.exit_code, terminated.container_id) == (2, f"fake://{first_id}")

    as_json = pod_to_dict(pod)
    assert as_json["metadata"]["creationTimestamp"] == pod.metadata.creation_timestamp
    assert as_json["spec"]["nodeName"] == "node-7"
    assert as_json["status"]["hostIPs"] == [{"ip": "192.0.2.10"}]
    assert as_json["status"]["podIPs"] == [{"ip": status.pod_ip}]
    assert as_json["status"]["qosClass"] == "Guaranteed"
    assert pod_from_dict(as_json) == pod  # what is shown reads back


def test_without_a_host_ip_the_pods_host_ip_is_the_default_routes(tmp_path: Path) -> None:
    with FakeNode(tmp_path, config=KubeletConfig(node_name="node-7")) as node:
        node.apply(MANIFEST)
        node.run_until(lambda: node.status("web").phase == "Running")
        status = node.status("web")
    assert status.host_ip == detect_host_ip()
    assert [h.ip for h in status.host_ips] == [detect_host_ip()]


def test_a_creation_time_the_source_gives_is_kept(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        node.apply(
            MANIFEST.replace(
                "  name: web\n", "  name: web\n  creationTimestamp: '2024-05-01T10:00:00Z'\n"
            )
        )
        node.sync()
        assert node.pod("web").metadata.creation_timestamp == "2024-05-01T10:00:00Z"


def test_kubectl_get_pod_yaml_shows_the_fields(tmp_path: Path) -> None:
    import yaml

    from tests.api.kubectl_support import running_node

    with running_node(tmp_path) as node:
        shown = yaml.safe_load(node.reader().out("get", "pod", "talker", "-o", "yaml"))
    assert shown["metadata"]["creationTimestamp"]
    assert shown["spec"]["nodeName"]
    status = shown["status"]
    assert status["qosClass"] == "BestEffort"
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["startTime"]
    (main,) = status["containerStatuses"]
    assert main["containerID"].startswith("fake://") and main["imageID"]
    assert main["started"] is True and "lastState" in main
