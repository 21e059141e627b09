"""ConfigMaps and Secrets through the sources into the object store; env resolution at container
start (valueFrom, envFrom, ``$(VAR)``); CreateContainerConfigError; secret redaction; pull
secrets from Secret documents."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._config.file import FileSource
from kubecore._config.http import FetchResult, HTTPSource
from kubecore._config.objects import ObjectStore
from kubecore._config.static import StaticSource
from kubecore._config.updates import Operation, PodUpdate
from kubecore._contract.errors import ValidationError
from kubecore._kuberuntime.credentials import PullSecrets, secret_keyring
from kubecore._kuberuntime.env import NodeInfo, container_environment, expand
from kubecore._manifest import load_manifest_lenient, object_to_dict, pod_to_dict
from kubecore._model.v1 import ConfigMap, ObjectMeta, Secret
from kubecore.runtime import RegistryAuth
from kubecore.testing import FakeNode
from tests.paths import CORPUS

SECRET_VALUE = "hunter2-do-not-print"


def load(text: str) -> tuple[list[Any], list[Any]]:
    pods, objects, errors = load_manifest_lenient(text)
    if errors:
        raise ValidationError([p for e in errors for p in e.problems])
    return pods, objects


def problems(text: str) -> list[str]:
    _, _, errors = load_manifest_lenient(text)
    return [str(p) for e in errors for p in e.problems]


# --- $(VAR) expansion -----------------------------------------------------------------------

VARS = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(VAR_A)", "A"),
        ("___$(VAR_B)___", "___B___"),
        ("$(VAR_A)-$(VAR_A)", "A-A"),
        ("$(VAR_A)$(VAR_B)$(VAR_C)", "ABC"),
        ("$(VAR_REF)", "$(VAR_A)"),  # no recursion
        ("$(VAR_EMPTY)", ""),
        ("$(UNKNOWN)", "$(UNKNOWN)"),
        ("$$(VAR_A)", "$(VAR_A)"),
        ("$$$(VAR_A)", "$A"),
        ("$$$$(VAR_A)", "$$(VAR_A)"),
        ("$(VAR_A", "$(VAR_A"),
        ("$VAR_A", "$VAR_A"),
        ("$", "$"),
        ("foo$", "foo$"),
        ("$()", "$()"),
        ("$(VAR_A)$", "A$"),
        ("f000-$$VAR_A", "f000-$VAR_A"),
        ("$(VAR_A)))", "A))"),
        ("((($(VAR_A)", "(((A"),
        ("$(VAR_A)$$", "A$"),
        ("$(VAR_A $(VAR_B))", "$(VAR_A $(VAR_B))"),
    ],
)
def test_expand_follows_kubernetes_rules(text: str, expected: str) -> None:
    assert expand(text, VARS.get) == expected


@given(st.text(alphabet=st.characters(blacklist_characters="$")))
@example("")
def test_expand_leaves_text_without_dollars_alone(text: str) -> None:
    assert expand(text, VARS.get) == text


@given(st.text(alphabet="$()AB_"))
@example("$$(")
def test_expand_with_nothing_defined_only_folds_double_dollars(text: str) -> None:
    # With no variable known, every reference stays; only "$$" shrinks to "$".
    assert len(expand(text, lambda name: None)) <= len(text)


# --- documents ------------------------------------------------------------------------------

OBJECTS = f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: game-config
data:
  player_initial_lives: "3"
  ui.properties: |
    color.good=purple
binaryData:
  blob: AAEC
---
apiVersion: v1
kind: Secret
metadata: {{name: creds, namespace: team}}
type: Opaque
data:
  username: {base64.b64encode(b"admin").decode()}
stringData:
  password: {SECRET_VALUE}
"""


def test_configmap_and_secret_documents_load_beside_pods() -> None:
    pods, objects = load(OBJECTS)
    assert pods == []
    config_map, secret = objects
    assert isinstance(config_map, ConfigMap)
    assert config_map.data["player_initial_lives"] == "3"
    assert config_map.binary_data == {"blob": b"\x00\x01\x02"}
    assert isinstance(secret, Secret)
    assert secret.metadata.namespace == "team"
    assert secret.data == {"username": b"admin", "password": SECRET_VALUE.encode()}
    assert secret.string_data == {}
    assert SECRET_VALUE not in repr(secret)
    assert object_to_dict(secret)["data"]["password"] == base64.b64encode(
        SECRET_VALUE.encode()
    ).decode("ascii")


def test_bad_secret_values_are_reported_without_the_value() -> None:
    text = f"""
apiVersion: v1
kind: Secret
metadata: {{name: s}}
data: {{token: "{SECRET_VALUE}!"}}
stringData: {{n: 12345678}}
"""
    found = problems(text)
    assert found == [
        "data[token]: not valid base64 (value not shown)",
        "stringData[n]: expected a string (value not shown)",
    ]
    assert not any(SECRET_VALUE in p or "12345678" in p for p in found)


def test_object_documents_are_checked() -> None:
    text = """
apiVersion: v1
kind: ConfigMap
metadata: {name: Bad_Name}
data: {"a b": x, ok: y}
binaryData: {ok: AA==}
---
apiVersion: v1
kind: Secret
metadata: {name: reg}
type: kubernetes.io/dockerconfigjson
data: {}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: twice}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: twice}
"""
    found = problems(text)
    assert any(p.startswith("documents[0].metadata.name:") for p in found)
    assert any(p.startswith("documents[0].data[a b]: invalid key") for p in found)
    assert "documents[0].binaryData[ok]: duplicate of a key in data" in found
    assert (
        "documents[1].data[.dockerconfigjson]: required for a Secret of type"
        " kubernetes.io/dockerconfigjson" in found
    )
    assert any("duplicate ConfigMap default/twice" in p for p in found)


def test_validate_cli_never_prints_secret_values(tmp_path: Path) -> None:
    from kubecore._cli import validate_paths

    manifest = tmp_path / "s.yaml"
    manifest.write_text(
        f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\n"
        f"data: {{k: '{SECRET_VALUE}'}}\nstringData: {{x: [{SECRET_VALUE}]}}\n"
    )
    lines, files, _ = validate_paths([str(manifest)])
    assert files == 1 and len(lines) == 2
    assert not any(SECRET_VALUE in line for line in lines)


# --- the object store -----------------------------------------------------------------------


def config_map(name: str, namespace: str = "default", **data: str) -> ConfigMap:
    return ConfigMap(ObjectMeta(name=name, namespace=namespace), data=data)


def test_store_merges_sources_and_counts_revisions() -> None:
    store = ObjectStore()
    calls: list[int] = []
    store.subscribe(lambda: calls.append(store.revision))
    assert store.apply(PodUpdate(Operation.SET, (), "file", (config_map("a", k="1"),)))
    assert store.get_config_map("default", "a") == config_map("a", k="1")
    assert store.get_config_map("other", "a") is None
    assert store.get_secret("default", "a") is None
    # Another source naming the same object loses to the first source.
    assert not store.apply(PodUpdate(Operation.ADD, (), "http", (config_map("a", k="2"),)))
    assert store.get_config_map("default", "a") == config_map("a", k="1")
    # A SET of pods alone (objects None) keeps the source's objects; NOT_READY too.
    assert not store.apply(PodUpdate(Operation.SET, (), "file"))
    assert not store.apply(PodUpdate(Operation.NOT_READY, (), "file"))
    assert store.get_config_map("default", "a") is not None
    # The first source lets go: the second's object shows.
    assert store.apply(PodUpdate(Operation.SET, (), "file", ()))
    assert store.get_config_map("default", "a") == config_map("a", k="2")
    assert store.remove(config_map("a"), source="http")
    assert store.get_config_map("default", "a") is None
    assert calls == [1, 2, 3]


def test_file_source_sends_objects_and_their_changes(tmp_path: Path) -> None:
    manifest = tmp_path / "all.yaml"
    manifest.write_text(OBJECTS)
    source = FileSource(tmp_path, settle=0)
    first = source.poll(0.0)
    assert first is not None and first.op is Operation.SET
    assert first.objects is not None and len(first.objects) == 2
    assert source.poll(100.0) is None  # unchanged
    manifest.write_text(OBJECTS.replace('"3"', '"4"'))
    changed = source.refresh()
    assert changed is not None and changed.objects is not None
    (game,) = [o for o in changed.objects if o.kind == "ConfigMap"]
    assert isinstance(game, ConfigMap) and game.data["player_initial_lives"] == "4"


def test_http_source_sends_objects() -> None:
    def fetch(url: str, headers: dict[str, str], timeout: float) -> FetchResult:
        return FetchResult(200, OBJECTS.encode())

    update = HTTPSource("http://manifests.invalid/", fetch=fetch).poll(0.0)
    assert update is not None and update.objects is not None and len(update.objects) == 2


def test_static_source_objects_reach_the_kubelet(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    source = StaticSource(name="embedder", sink=node.kubelet.update)
    source.put_objects(config_map("cfg", k="v"))
    assert node.kubelet.views.objects.get_config_map("default", "cfg") is not None
    assert "embedder" not in node.kubelet._rooms.pod_config.sources  # objects alone: no pod report
    source.set([], objects=())
    assert node.kubelet.views.objects.get_config_map("default", "cfg") is None


# --- env on the in-memory runtime -----------------------------------------------------------

APP = """
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: shop}
  annotations: {build: "42"}
spec:
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "echo '$(GREETING) $$(HOME) $(UNDEFINED)'; sleep 3600"]
    args: ["$(POD_NAME)"]
    resources:
      limits: {cpu: 250m, memory: 64Mi}
    envFrom:
    - configMapRef: {name: settings}
    - prefix: DB_
      secretRef: {name: db}
    - configMapRef: {name: absent, optional: true}
    env:
    - {name: GREETING, value: "hello $(LEVEL) from $(POD_NAME)"}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - {name: LATE, value: "$(POD_NAME)"}
    - name: NS
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
    - name: UID
      valueFrom: {fieldRef: {fieldPath: metadata.uid}}
    - name: APP
      valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}
    - name: BUILD
      valueFrom: {fieldRef: {fieldPath: "metadata.annotations['build']"}}
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    - name: HOST_IP
      valueFrom: {fieldRef: {fieldPath: status.hostIP}}
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    - name: CPU_LIMIT
      valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}
    - name: CPU_CORES
      valueFrom: {resourceFieldRef: {resource: limits.cpu}}
    - name: MEM_MI
      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
    - name: MEM_REQUEST
      valueFrom: {resourceFieldRef: {resource: requests.memory}}
    - name: STORAGE_LIMIT
      valueFrom: {resourceFieldRef: {resource: limits.ephemeral-storage, divisor: 1Gi}}
    - name: LIVES
      valueFrom: {configMapKeyRef: {name: settings, key: LEVEL}}
    - name: OPTIONAL_KEY
      valueFrom: {configMapKeyRef: {name: settings, key: nope, optional: true}}
    - name: PASSWORD
      valueFrom: {secretKeyRef: {name: db, key: password}}
"""

SETTINGS = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {LEVEL: debug, 1bad: skipped}
"""

DB_SECRET = f"""
apiVersion: v1
kind: Secret
metadata: {{name: db}}
stringData: {{password: {SECRET_VALUE}, user: shop}}
"""


def app_env(node: FakeNode) -> tuple[dict[str, str], Any]:
    (container,) = node.containers("web", "app")
    config = node.runtime.container_config(container.id)
    return dict(config.env), config


def waiting(node: FakeNode) -> tuple[str, str]:
    statuses = node.status("web").container_statuses
    state = statuses[0].state.waiting if statuses else None
    return (state.reason, state.message) if state else ("", "")


def test_env_is_resolved_at_start(tmp_path: Path) -> None:
    from kubecore import KubeletConfig

    config = KubeletConfig(node_name="node-1", host_ip="192.0.2.10")
    node = FakeNode(tmp_path, config=config)
    node.apply(SETTINGS + "---" + DB_SECRET + "---" + APP)
    node.run_until(lambda: node.status("web").phase == "Running", timeout=5)
    env, config_ = app_env(node)
    pod = node.pod("web")
    assert env["LEVEL"] == "debug"
    assert "1bad" not in env
    assert env["DB_password"] == SECRET_VALUE and env["DB_user"] == "shop"
    assert env["GREETING"] == "hello debug from $(POD_NAME)"  # POD_NAME is defined later
    assert env["LATE"] == "web"
    assert env["POD_NAME"] == "web" and env["NS"] == "default" and env["UID"] == pod.uid
    assert env["APP"] == "shop" and env["BUILD"] == "42"
    assert env["NODE"] == "node-1" and env["HOST_IP"] == "192.0.2.10"
    sandbox_ip = node.runtime.sandbox_status(node.containers("web", "app")[0].sandbox_id).ip
    assert sandbox_ip and env["POD_IP"] == sandbox_ip
    assert env["CPU_LIMIT"] == "250" and env["CPU_CORES"] == "1"  # rounded up
    assert env["MEM_MI"] == "64"
    assert env["MEM_REQUEST"] == str(64 * 1024 * 1024)  # the request defaults to the limit
    assert int(env["STORAGE_LIMIT"]) >= 1  # no limit: the node's capacity
    assert env["LIVES"] == "debug"
    assert "OPTIONAL_KEY" not in env
    assert env["PASSWORD"] == SECRET_VALUE
    assert config_.command == (
        "sh",
        "-c",
        "echo 'hello debug from $(POD_NAME) $(HOME) $(UNDEFINED)'; sleep 3600",
    )
    assert config_.args == ("web",)
    (skipped,) = node.events(reason="InvalidEnvironmentVariableNames")
    assert skipped.message == (
        "Keys [1bad] from the EnvFrom configMap default/settings were skipped since they are"
        " considered invalid environment variable names."
    )


def test_missing_object_waits_and_starts_when_it_appears(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    node = FakeNode(tmp_path)
    node.apply(SETTINGS + "---" + APP)  # no Secret "db" yet
    node.run_until(lambda: waiting(node)[0] == "CreateContainerConfigError", timeout=5)
    assert waiting(node) == ("CreateContainerConfigError", 'secret "db" not found')
    assert node.status("web").phase == "Pending"
    node.advance(5)
    failed = node.events(reason="Failed", type="Warning")
    assert [e.message for e in failed] == ['Error: secret "db" not found']  # said once
    assert not node.containers("web", "app")

    node.apply(DB_SECRET)
    took = node.run_until(lambda: node.status("web").phase == "Running", timeout=5)
    assert took <= node.step  # no back-off: the change wakes the pod
    # Nothing the agent showed or logged holds the secret's value.
    shown = json.dumps(pod_to_dict(node.pod("web"))) + node.describe()
    shown += "".join(e.message for e in node.kubelet.views.recent_events())
    shown += caplog.text
    assert SECRET_VALUE not in shown


def test_missing_key_names_the_key(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.apply(SETTINGS.replace("LEVEL: debug, ", "") + "---" + DB_SECRET + "---" + APP)
    node.run_until(lambda: waiting(node)[0] == "CreateContainerConfigError", timeout=5)
    assert waiting(node)[1] == "couldn't find key LEVEL in ConfigMap default/settings"


def test_env_changes_need_a_restart(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.apply(SETTINGS + "---" + DB_SECRET + "---" + APP)
    node.run_until(lambda: node.status("web").phase == "Running", timeout=5)
    first = node.containers("web", "app")[0].id
    node.apply(SETTINGS.replace("debug", "info"))
    node.advance(3)
    (same,) = node.containers("web", "app")
    assert same.id == first and app_env(node)[0]["LEVEL"] == "debug"
    node.runtime.crash(first)
    node.run_until(lambda: len(node.containers("web", "app", running=True)) == 1, timeout=60)
    (restarted,) = node.containers("web", "app", running=True)
    assert restarted.id != first
    assert dict(node.runtime.container_config(restarted.id).env)["LEVEL"] == "info"


def test_container_environment_is_pure() -> None:
    (pod,), _ = load(APP)
    store = ObjectStore()
    _, objects = load(SETTINGS + "---" + DB_SECRET)
    for obj in objects:
        store.put(obj)
    node = NodeInfo("n", "10.0.0.1", {"ephemeral-storage": __import__("decimal").Decimal(2**31)})
    one = container_environment(pod, pod.spec.containers[0], store, node, ("10.1.0.5",))
    two = container_environment(pod, pod.spec.containers[0], store, node, ("10.1.0.5",))
    assert one == two
    env = dict(one.env)
    assert env["POD_IP"] == "10.1.0.5" and env["STORAGE_LIMIT"] == "2"


# --- pull secrets from Secret documents ---------------------------------------------------


def docker_secret(user: str, *, kind: str = "kubernetes.io/dockerconfigjson") -> str:
    auth = base64.b64encode(f"{user}:pw".encode()).decode()
    config: dict[str, Any] = {"auths": {"private.example": {"auth": auth}}}
    key = ".dockerconfigjson"
    if kind == "kubernetes.io/dockercfg":
        config, key = config["auths"], ".dockercfg"
    return f"""
apiVersion: v1
kind: Secret
metadata: {{name: regcred}}
type: {kind}
stringData:
  {key}: '{json.dumps(config)}'
"""


PRIVATE_POD = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  imagePullSecrets: [{name: regcred}]
  containers:
  - {name: app, image: "private.example/team/app:1", command: [sleep, "3600"]}
"""


@pytest.mark.parametrize("kind", ["kubernetes.io/dockerconfigjson", "kubernetes.io/dockercfg"])
def test_pull_secret_from_a_secret_document(tmp_path: Path, kind: str) -> None:
    node = FakeNode(tmp_path)
    node.runtime.require_auth("private.example/team/app:1", RegistryAuth("robot", "pw"))
    node.apply(docker_secret("robot", kind=kind) + "---" + PRIVATE_POD)
    node.run_until(lambda: node.status("web").phase == "Running", timeout=5)


def test_pull_fails_until_the_pull_secret_appears(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.runtime.require_auth("private.example/team/app:1", RegistryAuth("robot", "pw"))
    node.apply(PRIVATE_POD)
    node.run_until(lambda: waiting(node)[0] in ("ErrImagePull", "ImagePullBackOff"), timeout=5)
    node.apply(docker_secret("robot"))
    node.run_until(lambda: node.status("web").phase == "Running", timeout=400)


def test_pull_secrets_mapping() -> None:
    store = ObjectStore()
    _, objects = load(docker_secret("robot"))
    store.put(objects[0])
    secrets = PullSecrets(store)
    keyring = secrets.get(("default", "regcred"))
    assert keyring is not None
    found = keyring.lookup("private.example/x:1")
    assert found is not None and found.username == "robot"
    assert secrets.get(("default", "other")) is None
    opaque = Secret(ObjectMeta("o"), data={".dockerconfigjson": b"{}"})
    assert secret_keyring(opaque) is None  # wrong type


# --- the corpus files of this part (tests/corpus/test_corpus.py checks their expectations) ---


def test_corpus_command_args_expand_as_the_docs_say(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.apply((CORPUS / "envobjs-command-args.yaml").read_text())
    node.run_until(lambda: node.status("command-demo").phase == "Succeeded", timeout=60)
    (container,) = node.containers("command-demo")
    config = node.runtime.container_config(container.id)
    assert config.args == (
        "hello world",
        "Warm greetings to The Most Honorable Kubernetes",
        "costs $5",
    )


# --- kubecore run --once ----------------------------------------------------------------------


def test_run_once_reads_objects_from_the_manifest_directory(tmp_path: Path) -> None:
    from tests.cli.support import run_args, run_cli

    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "objects.yaml").write_text(SETTINGS + "---" + DB_SECRET)
    (manifests / "web.yaml").write_text(APP)
    code, out, err = run_cli(*run_args(tmp_path, str(manifests), "--runtime", "fake", "--once"))
    assert code == 0, out + err
    assert out.splitlines()[1].split()[:3] == ["web", "1/1", "Running"]

    (manifests / "objects.yaml").write_text(SETTINGS)  # the Secret is gone
    code, out, err = run_cli(
        *run_args(tmp_path / "again", str(manifests), "--runtime", "fake", "--once")
    )
    assert code == 1
    assert (
        'pod default/web failed: container app: CreateContainerConfigError (secret "db" not found)'
        in out
    )
    assert SECRET_VALUE not in out + err


@pytest.mark.parametrize(
    ("resource", "divisor", "ok"),
    [
        ("limits.cpu", "1m", True),
        ("limits.cpu", "1000m", True),
        ("limits.cpu", "2", False),
        ("requests.memory", "1Mi", True),
        ("limits.ephemeral-storage", "1G", True),
        ("limits.memory", "3Mi", False),
        ("limits.memory", "lots", False),
    ],
)
def test_resource_field_ref_divisors(resource: str, divisor: str, ok: bool) -> None:
    text = f"""
apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  containers:
  - name: c
    image: busybox:1.35
    env:
    - name: V
      valueFrom: {{resourceFieldRef: {{resource: {resource}, divisor: "{divisor}"}}}}
"""
    found = problems(text)
    assert (found == []) is ok, found
    if not ok:
        assert found[0].startswith("spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor:")


def test_env_source_rules() -> None:
    text = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: busybox:1.35
    envFrom:
    - {prefix: "1x", configMapRef: {name: a}}
    - {configMapRef: {name: a}, secretRef: {name: b}}
    - {}
    env:
    - {name: A, value: v, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - name: B
      valueFrom: {}
    - name: C
      valueFrom: {configMapKeyRef: {key: "bad key"}}
    - name: D
      valueFrom: {resourceFieldRef: {resource: limits.cpu, containerName: other}}
    - name: E
      valueFrom: {fieldRef: {fieldPath: metadata.name}, secretKeyRef: {name: s, key: k}}
"""
    assert problems(text) == [
        "spec.containers[0].env[0].valueFrom: may not be specified when `value` is not empty",
        "spec.containers[0].env[1].valueFrom: must specify one of fieldRef, resourceFieldRef,"
        " configMapKeyRef, secretKeyRef, fileKeyRef",
        "spec.containers[0].env[2].valueFrom.configMapKeyRef.key: invalid key 'bad key': must be"
        " at most 253 characters of letters, digits, '-', '_' or '.', and not '.', '..' or"
        " start with '..'",
        "spec.containers[0].env[2].valueFrom.configMapKeyRef.name: required",
        "spec.containers[0].env[3].valueFrom.resourceFieldRef.containerName: no container named"
        " 'other' in the pod",
        "spec.containers[0].env[4].valueFrom: may not have more than one source, got fieldRef,"
        " secretKeyRef",
        "spec.containers[0].envFrom[0].prefix: invalid environment variable prefix '1x': use"
        " letters, digits, '_', '-' and '.', not starting with a digit",
        "spec.containers[0].envFrom[1]: may not have more than one field specified at a time",
        "spec.containers[0].envFrom[2]: must specify one of configMapRef or secretRef",
    ]


def test_secret_types_need_their_keys() -> None:
    def secret(kind: str, data: str) -> str:
        return f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\ntype: {kind}\n{data}\n"

    assert problems(secret("kubernetes.io/tls", "stringData: {tls.crt: x}")) == [
        "data[tls.key]: required for a Secret of type kubernetes.io/tls"
    ]
    assert problems(secret("kubernetes.io/basic-auth", "stringData: {user: x}")) == [
        "data: a Secret of type kubernetes.io/basic-auth needs a username or a password"
    ]
    assert problems(secret("kubernetes.io/ssh-auth", "stringData: {ssh-privatekey: k}")) == []
    assert problems(secret("kubernetes.io/dockercfg", "stringData: {.dockercfg: '[1]'}")) == [
        "data[.dockercfg]: must be a JSON object (value not shown)"
    ]


def test_a_list_holds_config_maps_beside_pods() -> None:
    text = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: v}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p}
  spec: {containers: [{name: c, image: busybox:1.35}]}
"""
    pods, objects = load(text)
    assert [p.metadata.name for p in pods] == ["p"]
    assert [(o.kind, o.metadata.name) for o in objects] == [("ConfigMap", "c")]


def test_a_file_turned_bad_keeps_its_last_good_objects(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manifest = tmp_path / "secret.yaml"
    manifest.write_text(DB_SECRET)
    source = FileSource(tmp_path, settle=0)
    first = source.poll(0.0)
    assert first is not None and first.objects is not None and len(first.objects) == 1
    manifest.write_text(DB_SECRET.replace("user: shop", f"user: [{SECRET_VALUE}]"))
    assert source.refresh() is None  # nothing changes for the agent
    assert source.objects == first.objects
    (problem,) = source.problems
    assert "stringData[user]: expected a string (value not shown)" in str(problem)
    assert SECRET_VALUE not in caplog.text + str(problem)


@given(
    st.dictionaries(
        st.from_regex(r"[A-Z_][A-Z0-9_]{0,5}", fullmatch=True),
        st.text(alphabet=st.characters(blacklist_characters="$")),
        max_size=4,
    )
)
def test_plain_values_pass_through_unchanged(values: dict[str, str]) -> None:
    from kubecore._model.v1 import Container, EnvVar, Pod, PodSpec

    container = Container(
        name="c", image="busybox", env=tuple(EnvVar(k, v) for k, v in values.items())
    )
    pod = Pod(ObjectMeta(name="p"), PodSpec(containers=(container,)))
    resolved = container_environment(pod, container, ObjectStore(), NodeInfo())
    assert dict(resolved.env) == values
