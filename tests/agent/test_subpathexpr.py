"""``volumeMounts[].subPathExpr``: expanded with the container's resolved environment as the
kubelet does (only ``$(VAR)`` references, each to a variable with a value; a relative result
without ``..``), then mounted like a ``subPath``; a failed expansion leaves the container waiting
in ``CreateContainerConfigError``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore import ValidationError
from kubecore._contract.errors import CreateContainerConfigError
from kubecore._kuberuntime.env import expand_sub_path_expr
from kubecore._kuberuntime.translate import container_mounts
from kubecore._model.v1 import Container, VolumeMount
from kubecore.manifest import load_pods_from_string
from kubecore.testing import FakeNode

ENV = {"POD_NAME": "web", "NS": "default", "EMPTY": "", "DOTS": "..", "ROOT": "/etc"}


# --- the expansion --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("$(POD_NAME)", "web"),
        ("logs/$(NS)/$(POD_NAME)", "logs/default/web"),
        ("$(NS)-$(POD_NAME).log", "default-web.log"),
        ("plain", "plain"),
        ("$$(POD_NAME)", "$(POD_NAME)"),  # $$ escapes: no reference
        ("cost$$", "cost$"),
        ("$POD_NAME", "$POD_NAME"),  # only round brackets reference
        ("${POD_NAME}", "${POD_NAME}"),
    ],
)
def test_sub_path_expr_expands_the_container_env(expression: str, expected: str) -> None:
    assert expand_sub_path_expr(expression, ENV) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("$(NODE_NAME)", "missing value for NODE_NAME"),
        ("$(EMPTY)/x", "missing value for EMPTY"),  # an empty value is as good as missing
        ("$(Z)/$(POD_NAME)/$(A)/$(Z)", "missing value for A, Z"),
        ("$(ROOT)/x", "error SubPath `/etc/x` must not be an absolute path"),
        ("a/$(DOTS)/b", "unable to provision SubPath `a/../b`: must not contain '..'"),
        ("$(DOTS)", "unable to provision SubPath `..`: must not contain '..'"),
    ],
)
def test_sub_path_expr_that_does_not_expand_is_a_config_error(
    expression: str, message: str
) -> None:
    with pytest.raises(CreateContainerConfigError) as refused:
        expand_sub_path_expr(expression, ENV)
    assert str(refused.value) == message


@given(
    st.text(
        alphabet=st.characters(categories=["L", "N"], include_characters="-_."), min_size=1
    ).filter(lambda value: value != "..")
)
@example("..x")
@example(".")
def test_a_single_reference_is_the_variable_value(value: str) -> None:
    assert expand_sub_path_expr("$(V)", {"V": value}) == value


def test_container_mounts_needs_the_expanded_sub_path() -> None:
    container = Container(
        name="app",
        image="busybox:1.35",
        volume_mounts=(VolumeMount("v", "/logs", sub_path_expr="$(POD_NAME)"),),
    )
    with pytest.raises(ValueError, match="subPathExpr '\\$\\(POD_NAME\\)'"):
        container_mounts(container, {"v": "/vol"})
    (mount,) = container_mounts(container, {"v": "/vol"}, {("v", "$(POD_NAME)"): "/vol/web"})
    assert (mount.host_path, mount.container_path) == ("/vol/web", "/logs")


def test_container_mounts_never_joins_a_sub_path_itself() -> None:
    """A path joined there could be swapped by a container before the engine resolves it."""
    container = Container(
        name="app", image="busybox:1.35", volume_mounts=(VolumeMount("v", "/d", sub_path="a"),)
    )
    with pytest.raises(ValueError, match="subPath 'a', which the agent has not prepared"):
        container_mounts(container, {"v": "/vol"})


# --- validation -----------------------------------------------------------------------------


def pod_text(
    mount: str,
    *,
    env: str = "[{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]",
    init: bool = False,
) -> str:
    containers = "initContainers" if init else "containers"
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: web}}
spec:
  {containers}:
  - name: app
    image: busybox:1.35
    command: [sh, -c, "sleep 3600"]
    env: {env}
    volumeMounts: [{mount}]
  {"containers: [{name: main, image: 'busybox:1.35', command: [sleep, '3600']}]" if init else ""}
  volumes: [{{name: logs, emptyDir: {{}}}}]
"""


def test_sub_path_expr_is_accepted() -> None:
    (pod,) = load_pods_from_string(pod_text("{name: logs, mountPath: /logs, subPathExpr: $(X)}"))
    assert pod.spec.containers[0].volume_mounts[0].sub_path_expr == "$(X)"


@pytest.mark.parametrize(
    ("mount", "problem"),
    [
        (
            "{name: logs, mountPath: /logs, subPath: a, subPathExpr: $(POD_NAME)}",
            "volumeMounts[0].subPathExpr: may not be set together with subPath",
        ),
        (
            "{name: logs, mountPath: /logs, subPathExpr: /$(POD_NAME)}",
            "volumeMounts[0].subPathExpr: must be a relative path",
        ),
        (
            "{name: logs, mountPath: /logs, subPathExpr: $(POD_NAME)/../x}",
            "volumeMounts[0].subPathExpr: must not contain '..'",
        ),
    ],
)
def test_sub_path_expr_as_written_is_checked(mount: str, problem: str) -> None:
    with pytest.raises(ValidationError) as refused:
        load_pods_from_string(pod_text(mount))
    assert problem in str(refused.value)


# --- on the node ------------------------------------------------------------------------------


def waiting_of(node: FakeNode, container: str = "app") -> tuple[str, str]:
    status = node.status("web")
    for cs in (*status.init_container_statuses, *status.container_statuses):
        if cs.name == container and cs.state.waiting is not None:
            return cs.state.waiting.reason, cs.state.waiting.message
    return "", ""


def logs_dir(node: FakeNode) -> Path:
    uid = node.pod("web").uid
    return node.root_dir / "pods" / uid / "volumes" / "kubernetes.io~empty-dir" / "logs"


def mount_source(node: FakeNode, container: str, container_path: str) -> str:
    (found,) = node.containers("web", container)
    mounts = node.runtime.container_config(found.id).mounts
    (mount,) = [m for m in mounts if m.container_path == container_path]
    return mount.host_path


def test_the_mount_binds_the_expanded_sub_directory(tmp_path: Path) -> None:
    node = FakeNode(tmp_path / "node")
    env = (
        "[{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}},"
        " {name: DIR, value: 'app-logs/$(POD_NAME)'}]"
    )
    node.apply(pod_text("{name: logs, mountPath: /logs, subPathExpr: $(DIR)}", env=env))
    node.run_until(lambda: node.status("web").phase == "Running", timeout=5)
    made = logs_dir(node) / "app-logs" / "web"
    assert made.is_dir()
    assert mount_source(node, "app", "/logs") == str(made.resolve())


def test_each_container_gets_its_own_expansion(tmp_path: Path) -> None:
    node = FakeNode(tmp_path / "node")
    node.apply(
        """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: a
    image: busybox:1.35
    command: [sleep, "3600"]
    env: [{name: WHO, value: first}]
    volumeMounts: [{name: logs, mountPath: /logs, subPathExpr: $(WHO)}]
  - name: b
    image: busybox:1.35
    command: [sleep, "3600"]
    env: [{name: WHO, value: second}]
    volumeMounts: [{name: logs, mountPath: /logs, subPathExpr: $(WHO)}]
  volumes: [{name: logs, emptyDir: {}}]
"""
    )
    node.run_until(lambda: node.status("web").phase == "Running", timeout=5)
    assert mount_source(node, "a", "/logs") == str((logs_dir(node) / "first").resolve())
    assert mount_source(node, "b", "/logs") == str((logs_dir(node) / "second").resolve())


def test_an_init_container_mounts_its_expansion(tmp_path: Path) -> None:
    node = FakeNode(tmp_path / "node")
    node.apply(pod_text("{name: logs, mountPath: /logs, subPathExpr: $(POD_NAME)}", init=True))
    node.run_until(lambda: bool(node.containers("web", "app")), timeout=5)
    assert mount_source(node, "app", "/logs") == str((logs_dir(node) / "web").resolve())


def test_an_unset_variable_waits_then_starts_when_its_config_map_appears(tmp_path: Path) -> None:
    node = FakeNode(tmp_path / "node")
    env = "[{name: SHARD, valueFrom: {configMapKeyRef: {name: shards, key: web, optional: true}}}]"
    node.apply(pod_text("{name: logs, mountPath: /logs, subPathExpr: shard-$(SHARD)}", env=env))
    node.run_until(lambda: waiting_of(node)[0] == "CreateContainerConfigError", timeout=5)
    assert waiting_of(node) == ("CreateContainerConfigError", "missing value for SHARD")
    assert node.status("web").phase == "Pending"
    node.advance(5)
    failed = node.events(reason="Failed", type="Warning")
    assert [e.message for e in failed] == ["Error: missing value for SHARD"]  # said once
    assert not node.containers("web", "app")
    assert list(logs_dir(node).iterdir()) == []

    node.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shards}\ndata: {web: '7'}\n")
    node.run_until(lambda: node.status("web").phase == "Running", timeout=5)
    assert mount_source(node, "app", "/logs") == str((logs_dir(node) / "shard-7").resolve())


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("/etc", "error SubPath `/etc` must not be an absolute path"),
        ("..", "unable to provision SubPath `..`: must not contain '..'"),
    ],
)
def test_an_expansion_leaving_the_volume_is_refused(
    tmp_path: Path, value: str, message: str
) -> None:
    node = FakeNode(tmp_path / "node")
    env = f"[{{name: WHERE, value: '{value}'}}]"
    node.apply(pod_text("{name: logs, mountPath: /logs, subPathExpr: $(WHERE)}", env=env))
    node.run_until(lambda: waiting_of(node)[0] == "CreateContainerConfigError", timeout=5)
    assert waiting_of(node)[1] == message
    assert not node.containers("web", "app")
