"""ConfigMaps, Secrets and the downward API as environment variables, and ``$(VAR)`` expansion,
observed inside real containers; a container waiting for a missing ConfigMap starts once it
appears; a pull secret from a ``kubernetes.io/dockerconfigjson`` Secret document."""

from __future__ import annotations

import base64
import contextlib
import json
from typing import Any

import pytest

from kubecore._config.updates import Operation, PodUpdate
from kubecore._manifest import load_manifest_lenient
from kubecore._model.v1 import KubeObject
from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import (
    SOURCE,
    AgentFactory,
    all_running,
    container,
    exec_until,
    make_pod,
    status_of,
    wait_pod,
)

pytestmark = pytest.mark.docker

SECRET_VALUE = "s3cr3t-$(NOT_EXPANDED)"


def objects(text: str, namespace: str) -> tuple[KubeObject, ...]:
    _, found, errors = load_manifest_lenient(text.replace("NAMESPACE", namespace))
    assert not errors
    return tuple(found)


OBJECTS = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: NAMESPACE}
data: {LEVEL: debug, color: blue}
---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: NAMESPACE}
stringData: {password: "s3cr3t-$(NOT_EXPANDED)", user: shop}
"""


def env_pod(namespace: str, image: str) -> Any:
    script = (
        'echo "$(GREETING)|$$HOME" > /tmp/expanded;'
        " echo '$(UNDEFINED)|$$(LEVEL)' >> /tmp/expanded;"
        ' echo "$1" > /tmp/arg'
    )
    return make_pod(
        "env",
        namespace,
        [
            container(
                "app",
                image,
                ["sh", "-c", f"trap 'exit 0' TERM; {script}; while :; do sleep 1 & wait $!; done"],
                args=["$(POD_NAME)", "$(POD_NAME)-arg"],
                resources={"limits": {"memory": "64Mi", "cpu": "500m"}},
                envFrom=[
                    {"configMapRef": {"name": "settings"}},
                    {"prefix": "DB_", "secretRef": {"name": "db"}},
                ],
                env=[
                    {"name": "GREETING", "value": "hello $(LEVEL) $(color)"},
                    {
                        "name": "POD_NAME",
                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                    },
                    {
                        "name": "POD_IP",
                        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
                    },
                    {
                        "name": "MEM_MI",
                        "valueFrom": {
                            "resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}
                        },
                    },
                    {
                        "name": "CPU_M",
                        "valueFrom": {
                            "resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}
                        },
                    },
                    {
                        "name": "PASSWORD",
                        "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}},
                    },
                ],
            )
        ],
    )


def container_env(kubelet: Any, namespace: str) -> dict[str, str]:
    result = exec_until(kubelet, namespace, "env", "app", ["env"])
    assert result.exit_code == 0, result
    return dict(line.split("=", 1) for line in result.stdout.decode().splitlines() if "=" in line)


def test_env_values_and_expansion_inside_the_container(
    make_agent: AgentFactory, engine: TestEngine, namespace: str
) -> None:
    kubelet = make_agent(start=False)
    pod = env_pod(namespace, engine.image)
    kubelet.update(PodUpdate(Operation.SET, (pod,), SOURCE, objects(OBJECTS, namespace)))
    kubelet.start()
    wait_pod(kubelet, namespace, "env", all_running, timeout=30)

    env = container_env(kubelet, namespace)
    assert env["LEVEL"] == "debug" and env["color"] == "blue"
    assert env["DB_user"] == "shop" and env["DB_password"] == SECRET_VALUE
    assert env["PASSWORD"] == SECRET_VALUE  # values from objects are never expanded
    assert env["GREETING"] == "hello debug blue"
    assert env["POD_NAME"] == "env"
    assert env["MEM_MI"] == "64" and env["CPU_M"] == "500"
    hosts = exec_until(kubelet, namespace, "env", "app", ["cat", "/etc/hosts"]).stdout.decode()
    assert env["POD_IP"] and env["POD_IP"] in hosts.split()  # the engine's own entry
    expanded = exec_until(kubelet, namespace, "env", "app", ["cat", "/tmp/expanded"])
    assert expanded.stdout == b"hello debug blue|/root\n$(UNDEFINED)|$(LEVEL)\n"
    arg = exec_until(kubelet, namespace, "env", "app", ["cat", "/tmp/arg"])
    assert arg.stdout == b"env-arg\n"  # sh -c's $0 is the first arg, $1 the second


def test_a_container_waits_for_its_config_map_then_starts(
    make_agent: AgentFactory, engine: TestEngine, namespace: str
) -> None:
    kubelet = make_agent(start=False)
    pod = env_pod(namespace, engine.image)
    secret_only = tuple(o for o in objects(OBJECTS, namespace) if o.kind == "Secret")
    kubelet.update(PodUpdate(Operation.SET, (pod,), SOURCE, secret_only))
    kubelet.start()
    waiting = wait_pod(
        kubelet,
        namespace,
        "env",
        lambda p: (
            (s := status_of(p, "app")) is not None
            and s.state.waiting is not None
            and s.state.waiting.reason == "CreateContainerConfigError"
        ),
        timeout=30,
        what="CreateContainerConfigError",
    )
    status = status_of(waiting, "app")
    assert status is not None and status.state.waiting is not None
    assert status.state.waiting.message == 'configmap "settings" not found'

    kubelet.update(PodUpdate(Operation.SET, (pod,), SOURCE, objects(OBJECTS, namespace)))
    wait_pod(kubelet, namespace, "env", all_running, timeout=15)
    assert container_env(kubelet, namespace)["LEVEL"] == "debug"
    shown = "".join(e.message for e in kubelet.views.recent_events())
    assert SECRET_VALUE not in shown


def test_pull_secret_from_a_dockerconfigjson_secret(
    make_agent: AgentFactory,
    engine: TestEngine,
    namespace: str,
    raw: Any,
    own_images: list[str],
) -> None:
    image = engine.auth_registry_image
    own_images.append(image)
    with contextlib.suppress(Exception):
        raw.remove_image(image)
    registry = image.split("/")[0]
    auth = base64.b64encode(f"{engine.auth_user}:{engine.auth_password}".encode()).decode()
    config = json.dumps({"auths": {registry: {"auth": auth}}})
    secret = objects(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: regcred, namespace: NAMESPACE}\n"
        f"type: kubernetes.io/dockerconfigjson\nstringData: {{.dockerconfigjson: '{config}'}}\n",
        namespace,
    )
    pod = make_pod(
        "private",
        namespace,
        [container("app", image, imagePullPolicy="Always")],
        imagePullSecrets=[{"name": "regcred"}],
    )
    kubelet = make_agent(start=False)
    kubelet.update(PodUpdate(Operation.SET, (pod,), SOURCE, secret))
    kubelet.start()
    wait_pod(kubelet, namespace, "private", all_running, timeout=30)
    events = kubelet.views.recent_events(namespace=namespace, name="private")
    assert any(e.reason == "Pulled" and "Successfully pulled" in e.message for e in events)


def test_a_variable_from_the_env_file_an_init_container_wrote(
    make_agent: AgentFactory, engine: TestEngine, namespace: str
) -> None:
    """The docs' fileKeyRef pod (pods/inject/envars-file-container.yaml) on the engine: the
    agent reads the env file from the emptyDir on the node, the app container gets the key."""
    write = "echo \"DB_ADDRESS='address'\nREST_ENDPOINT='endpoint'\" > /data/config.env"
    ref = {"volumeName": "config", "path": "config.env", "key": "DB_ADDRESS"}
    pod = make_pod(
        "envfile",
        namespace,
        [
            container(
                "app",
                engine.image,
                ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"],
                env=[{"name": "DB_ADDRESS", "valueFrom": {"fileKeyRef": ref}}],
            )
        ],
        initContainers=[
            container(
                "setup-envfile",
                engine.image,
                ["sh", "-c", write],
                volumeMounts=[{"name": "config", "mountPath": "/data"}],
            )
        ],
        volumes=[{"name": "config", "emptyDir": {}}],
    )
    kubelet = make_agent(start=False)
    kubelet.set_pods([pod], source=SOURCE)
    kubelet.start()
    wait_pod(kubelet, namespace, "envfile", all_running, timeout=30)
    env = dict(
        line.split("=", 1)
        for line in exec_until(kubelet, namespace, "envfile", "app", ["env"])
        .stdout.decode()
        .splitlines()
        if "=" in line
    )
    assert env["DB_ADDRESS"] == "address"
    assert "REST_ENDPOINT" not in env
