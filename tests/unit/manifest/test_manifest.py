import json
import textwrap
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from kubecore._contract.errors import DocumentError, FieldError, ValidationError
from kubecore._manifest import (
    assign_uid,
    dump_pod_json,
    dump_pod_yaml,
    dump_pods_yaml,
    load_pods_from_dict,
    load_pods_from_file,
    load_pods_from_string,
    load_pods_lenient,
    pod_from_dict,
    pod_to_dict,
    stamp_source,
    validate_pod,
)
from kubecore._manifest.identity import SOURCE_ANNOTATION
from kubecore._model import v1 as m
from tests.paths import REPO
from tests.unit.manifest.support import base, problems_of

EXAMPLES = REPO / "examples" / "pods"


def paths_of(data: Any) -> list[str]:
    with pytest.raises(ValidationError) as info:
        pod_from_dict(data)
    return [p.path for p in info.value.problems]


def container(**fields: Any) -> dict[str, Any]:
    data = base()
    data["spec"]["containers"][0].update(fields)
    return data


# --- the happy path -------------------------------------------------------------------------


def test_minimal_pod_gets_kubernetes_defaults() -> None:
    pod = pod_from_dict(base())
    assert pod.metadata.namespace == "default"
    assert pod.spec.restart_policy == "Always"
    assert pod.spec.dns_policy == "ClusterFirst"
    assert pod.spec.termination_grace_period_seconds == 30
    c = pod.spec.containers[0]
    assert c.image_pull_policy == "IfNotPresent"
    assert c.termination_message_path == "/dev/termination-log"
    assert pod.status is None


def test_latest_image_defaults_to_always_pull() -> None:
    pod = pod_from_dict(container(image="busybox"))
    assert pod.spec.containers[0].image_pull_policy == "Always"


def test_full_pod_loads_every_field() -> None:
    text = """
    apiVersion: v1
    kind: Pod
    metadata:
      name: full.example
      namespace: team-a
      uid: 1234
      labels: {app: web, example.com/tier: front}
      annotations: {note: "2024-01-01"}
    spec:
      hostNetwork: false
      nodeName: node-1
      imagePullSecrets: [{name: regcred}]
      volumes:
      - {name: data, emptyDir: {medium: Memory, sizeLimit: 64Mi}}
      - {name: host, hostPath: {path: /var/log, type: Directory}}
      initContainers:
      - {name: init, image: busybox:1.35, command: [sh, -c, "true"]}
      containers:
      - name: app
        image: busybox:1.35
        workingDir: /work
        env: [{name: A, value: "1"}, {name: B}]
        ports: [{name: http, containerPort: 8080, hostPort: 18080, protocol: udp}]
        volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
        resources: {requests: {cpu: 0.5, memory: 64Mi}, limits: {cpu: 1, memory: 128Mi}}
        livenessProbe: {httpGet: {port: http, path: /healthz, httpHeaders: [{name: X, value: y}]}}
        readinessProbe: {tcpSocket: {port: 8080}, successThreshold: 2}
        startupProbe: {exec: {command: [cat, /tmp/ok]}, failureThreshold: 30}
        lifecycle: {preStop: {exec: {command: [sh, -c, "sleep 1"]}}}
        securityContext: {privileged: true}
    """
    text = text.replace("uid: 1234", 'uid: "1234"')
    (pod,) = load_pods_from_string(textwrap.dedent(text))
    assert pod.metadata.annotations == {"note": "2024-01-01"}  # a string, not a date
    c = pod.spec.containers[0]
    assert c.ports[0].protocol == "UDP"  # normalised to upper case
    assert c.resources.requests == {"cpu": "0.5", "memory": "64Mi"}
    assert c.resources.limits["cpu"] == "1"
    assert c.env == (m.EnvVar("A", "1"), m.EnvVar("B", ""))
    assert c.liveness_probe is not None and c.liveness_probe.http_get is not None
    assert c.liveness_probe.http_get.port == "http"
    assert c.liveness_probe.http_get.path == "/healthz"
    assert c.readiness_probe is not None and c.readiness_probe.success_threshold == 2
    assert c.privileged
    assert pod.spec.volumes[0].empty_dir == m.EmptyDirVolumeSource("Memory", "64Mi")
    assert pod.spec.volumes[1].host_path == m.HostPathVolumeSource("/var/log", "Directory")
    assert pod.spec.init_containers[0].command == ("sh", "-c", "true")
    assert load_pods_from_string(dump_pod_yaml(pod)) == [pod]


def test_creation_timestamp_null_and_empty_status_are_accepted() -> None:
    data = base()
    data["metadata"]["creationTimestamp"] = None
    data["status"] = {}
    data["spec"]["containers"][0]["resources"] = {}
    pod = pod_from_dict(data)
    assert pod.status is None


def test_null_means_unset() -> None:
    data = container(command=None, ports=None)
    data["spec"]["volumes"] = None
    pod = pod_from_dict(data)
    assert pod.spec.containers[0].command == ()
    assert pod.spec.volumes == ()


# --- single problems ------------------------------------------------------------------------


def test_required_image() -> None:
    data = base()
    data["spec"]["containers"].append({"name": "two"})
    assert problems_of(data) == ["spec.containers[1].image: required"]


def test_container_port_range() -> None:
    out = problems_of(container(ports=[{"containerPort": 70000}]))
    assert out == ["spec.containers[0].ports[0].containerPort: must be 1-65535, got 70000"]


def test_wrong_type() -> None:
    out = problems_of(container(ports=[{"containerPort": "abc"}]))
    assert out == ["spec.containers[0].ports[0].containerPort: expected an integer, got 'abc'"]


@pytest.mark.parametrize(
    ("data_path", "value", "message"),
    [
        ("spec.terminationGracePeriodSeconds", "30", "expected an integer, got '30'"),
        ("spec.terminationGracePeriodSeconds", True, "expected an integer, got true"),
        ("spec.terminationGracePeriodSeconds", 1.5, "expected an integer, got 1.5"),
        ("spec.hostNetwork", "yes", "expected true or false, got 'yes'"),
        ("spec.containers", {"name": "x"}, "expected a list, got a mapping"),
        ("metadata.labels", ["a"], "expected a mapping, got a list"),
        ("metadata.name", 5, "expected a string, got 5"),
        ("spec", "oops", "expected a mapping, got 'oops'"),
    ],
)
def test_type_errors(data_path: str, value: object, message: str) -> None:
    data = base()
    target = data
    *parents, last = data_path.split(".")
    for key in parents:
        target = target[key]
    target[last] = value
    assert problems_of(data) == [f"{data_path}: {message}"]


def test_unknown_field_with_suggestion() -> None:
    out = problems_of(container(imagee="x"))
    assert out == ["spec.containers[0].imagee: unknown field (did you mean 'image'?)"]
    assert problems_of(container(flavour="x")) == ["spec.containers[0].flavour: unknown field"]


@pytest.mark.parametrize(
    ("where", "key", "value", "named"),
    [
        ("spec", "runtimeClassName", "gvisor", "spec.runtimeClassName"),
        ("spec", "resourceClaims", [], "spec.resourceClaims"),
        ("container", "volumeDevices", [], "spec.containers[0].volumeDevices"),
    ],
)
def test_known_but_unsupported_fields(where: str, key: str, value: object, named: str) -> None:
    data = base()
    target = data["spec"]["containers"][0] if where == "container" else data[where]
    target[key] = value
    (problem,) = problems_of(data)
    assert problem.startswith(f"{named}: not supported by kubecore")


def test_env_value_from_and_config_map_volume_are_unsupported() -> None:
    data = container(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}])
    data["spec"]["volumes"] = [{"name": "cfg", "nfs": {"server": "h", "path": "/"}}]
    assert problems_of(data) == [
        "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: unsupported value 'x': use one of"
        " metadata.name, metadata.namespace, metadata.uid, spec.nodeName,"
        " spec.serviceAccountName, status.hostIP, status.hostIPs, status.podIP, status.podIPs,"
        " metadata.labels['<key>'] or metadata.annotations['<key>']",
        "spec.volumes[0].nfs: not supported by kubecore",
    ]


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("apps/v1", "Pod", "apiVersion: must be 'v1', got 'apps/v1'"),
        ("v1", "Podd", "kind: must be 'Pod', got 'Podd'"),
        (
            "apps/v1",
            "Deployment",
            "kind: a Deployment is not run by kubecore: a node agent runs Pods, and a Deployment"
            " becomes Pods through a controller of the Kubernetes control plane; to run its pods"
            " here, write its pod template (spec.template) as a Pod",
        ),
        (
            "batch/v1",
            "CronJob",
            "kind: a CronJob is not run by kubecore: a node agent runs Pods, and a CronJob becomes"
            " Pods through a controller of the Kubernetes control plane; to run its pods here,"
            " write its pod template (spec.jobTemplate.spec.template) as a Pod",
        ),
        (
            "v1",
            "Service",
            "kind: a Service is not read by kubecore: a node agent reads Pods and the ConfigMaps"
            " and Secrets they use, and other Kubernetes components handle a Service",
        ),
    ],
)
def test_api_version_and_kind(api_version: str, kind: str, expected: str) -> None:
    data = base()
    data["apiVersion"] = api_version
    data["kind"] = kind
    assert problems_of(data) == [expected]


def test_missing_api_version_kind_metadata() -> None:
    out = problems_of({"spec": base()["spec"]})
    assert out == ["apiVersion: required", "kind: required", "metadata: required"]


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d: d["metadata"].update(name="Web_1"), "metadata.name"),
        (lambda d: d["metadata"].update(name="a" * 254), "metadata.name"),
        (lambda d: d["metadata"].update(namespace="team.a"), "metadata.namespace"),
        (lambda d: d["metadata"].update(labels={"bad key!": "v"}), "metadata.labels[bad key!]"),
        (lambda d: d["metadata"].update(labels={"k": "bad value!"}), "metadata.labels[k]"),
        (lambda d: d["spec"]["containers"][0].update(name="App"), "spec.containers[0].name"),
        (lambda d: d["spec"]["containers"][0].update(name="a.b"), "spec.containers[0].name"),
    ],
)
def test_name_rules(mutate: Any, path: str) -> None:
    data = base()
    mutate(data)
    assert paths_of(data) == [path]


def test_dotted_pod_name_is_a_valid_subdomain() -> None:
    data = base()
    data["metadata"]["name"] = "web.example-1"
    assert pod_from_dict(data).metadata.name == "web.example-1"


def test_duplicate_container_names_across_init_and_app() -> None:
    data = base()
    data["spec"]["initContainers"] = [{"name": "app", "image": "busybox:1.35"}]
    data["spec"]["containers"].append({"name": "app", "image": "busybox:1.35"})
    assert problems_of(data) == [
        "spec.containers[0].name: duplicate container name 'app' (also spec.initContainers[0])",
        "spec.containers[1].name: duplicate container name 'app' (also spec.initContainers[0])",
    ]


def test_volume_rules() -> None:
    data = container(
        volumeMounts=[
            {"name": "a", "mountPath": "/a"},
            {"name": "ghost", "mountPath": "/g"},
            {"name": "a", "mountPath": "relative"},
            {"name": "a", "mountPath": "/a"},
        ]
    )
    data["spec"]["volumes"] = [
        {"name": "a", "emptyDir": {}},
        {"name": "a", "emptyDir": {}},
        {"name": "none"},
        {"name": "two", "emptyDir": {}, "hostPath": {"path": "/x"}},
    ]
    assert problems_of(data) == [
        "spec.containers[0].volumeMounts[1].name: no volume named 'ghost' in the pod",
        "spec.containers[0].volumeMounts[2].mountPath: must be an absolute path, got 'relative'",
        "spec.containers[0].volumeMounts[3].mountPath: duplicate mount path '/a' "
        "(also volumeMounts[0])",
        "spec.volumes[1].name: duplicate volume name 'a' (also volumes[0])",
        "spec.volumes[2]: must have a volume source (emptyDir, hostPath, configMap, secret,"
        " downwardAPI, projected, persistentVolumeClaim, image); got none",
        "spec.volumes[3]: must have exactly one volume source, got emptyDir and hostPath",
    ]


def test_port_rules_and_protocol_normalisation() -> None:
    data = container(
        ports=[
            {"name": "http", "containerPort": 80, "hostPort": 8080, "protocol": "tcp"},
            {"name": "http", "containerPort": 81, "hostPort": 70000},
            {"containerPort": 0, "protocol": "ICMP"},
            {"name": "Bad_Name", "containerPort": 82},
        ]
    )
    assert problems_of(data) == [
        "spec.containers[0].ports[1].hostPort: must be 0-65535, got 70000",
        "spec.containers[0].ports[1].name: duplicate port name 'http' (also ports[0])",
        "spec.containers[0].ports[2].containerPort: must be 1-65535, got 0",
        "spec.containers[0].ports[2].protocol: unsupported value 'ICMP': must be one of "
        "TCP, UDP, SCTP",
        "spec.containers[0].ports[3].name: invalid port name 'Bad_Name': must be at most 15 "
        "lowercase letters, digits and '-', with at least one letter, no '--', starting and "
        "ending with a letter or digit",
    ]
    ok = container(ports=[{"containerPort": 80, "protocol": "sctp"}])
    assert pod_from_dict(ok).spec.containers[0].ports[0].protocol == "SCTP"


def test_duplicate_host_ports_in_a_pod() -> None:
    data = base()
    data["spec"]["containers"] = [
        {"name": "a", "image": "x:1", "ports": [{"containerPort": 80, "hostPort": 8080}]},
        {"name": "b", "image": "x:1", "ports": [{"containerPort": 81, "hostPort": 8080}]},
    ]
    assert paths_of(data) == ["spec.containers[1].ports[0].hostPort"]


def test_enums() -> None:
    data = container(imagePullPolicy="Sometimes")
    data["spec"]["restartPolicy"] = "Maybe"
    data["spec"]["dnsPolicy"] = "clusterfirst"
    assert problems_of(data) == [
        "spec.containers[0].imagePullPolicy: unsupported value 'Sometimes': must be one of "
        "Always, IfNotPresent, Never",
        "spec.dnsPolicy: unsupported value 'clusterfirst': must be one of ClusterFirst, "
        "ClusterFirstWithHostNet, Default, None",
        "spec.restartPolicy: unsupported value 'Maybe': must be one of Always, OnFailure, Never",
    ]


def test_probe_rules() -> None:
    data = container(
        ports=[{"name": "http", "containerPort": 8080}],
        livenessProbe={
            "httpGet": {"port": "http"},
            "tcpSocket": {"port": 8080},
            "successThreshold": 2,
            "periodSeconds": 0,
            "initialDelaySeconds": -1,
        },
        readinessProbe={"httpGet": {"port": "admin"}, "timeoutSeconds": 0, "failureThreshold": 0},
        startupProbe={"exec": {"command": []}},
    )
    assert problems_of(data) == [
        "spec.containers[0].livenessProbe: must have exactly one of exec, httpGet, tcpSocket, "
        "grpc; got httpGet and tcpSocket",
        "spec.containers[0].livenessProbe.initialDelaySeconds: must be at least 0, got -1",
        "spec.containers[0].livenessProbe.periodSeconds: must be at least 1, got 0",
        "spec.containers[0].livenessProbe.successThreshold: must be 1 for a livenessProbe, got 2",
        "spec.containers[0].readinessProbe.failureThreshold: must be at least 1, got 0",
        "spec.containers[0].readinessProbe.httpGet.port: no port named 'admin' in this "
        "container's ports",
        "spec.containers[0].readinessProbe.timeoutSeconds: must be at least 1, got 0",
        "spec.containers[0].startupProbe.exec.command: required",
    ]


def test_probe_without_handler_and_missing_port() -> None:
    data = container(livenessProbe={"periodSeconds": 5}, readinessProbe={"httpGet": {}})
    assert problems_of(data) == [
        "spec.containers[0].livenessProbe: must have exactly one of exec, httpGet, tcpSocket, "
        "grpc; got none",
        "spec.containers[0].readinessProbe.httpGet.port: required",
    ]


def test_a_second_probe_kind_is_reported_once() -> None:
    data = container(livenessProbe={"grpc": {"port": 9000}, "exec": {"command": ["true"]}})
    assert problems_of(data) == [
        "spec.containers[0].livenessProbe: must have exactly one of exec, httpGet, tcpSocket, "
        "grpc; got exec and grpc"
    ]


def test_init_containers_may_not_have_probes_or_lifecycle() -> None:
    data = base()
    data["spec"]["initContainers"] = [
        {
            "name": "init",
            "image": "busybox:1.35",
            "readinessProbe": {"exec": {"command": ["true"]}},
            "lifecycle": {"postStart": {"exec": {"command": ["true"]}}},
        }
    ]
    assert paths_of(data) == [
        "spec.initContainers[0].lifecycle",
        "spec.initContainers[0].readinessProbe",
    ]


def test_lifecycle_handler_needs_exactly_one_action() -> None:
    data = container(lifecycle={"preStop": {}})
    assert paths_of(data) == ["spec.containers[0].lifecycle.preStop"]


def test_resource_rules() -> None:
    data = container(
        resources={
            "requests": {"cpu": "2", "memory": "1Gx", "gpu": "1", "hugepages-2Mi": "4Mi"},
            "limits": {"cpu": "500m", "memory": "-1", "ephemeral-storage": "1Gi"},
        }
    )
    assert problems_of(data) == [
        "spec.containers[0].resources.limits[hugepages-2Mi]: required: hugepages-2Mi cannot be "
        "overcommitted, so its request needs a limit",
        "spec.containers[0].resources.limits[memory]: must not be negative, got '-1'",
        "spec.containers[0].resources.requests[cpu]: must be less than or equal to the cpu "
        "limit (500m), got 2",
        "spec.containers[0].resources.requests[gpu]: unsupported resource name 'gpu': expected "
        "cpu, memory, ephemeral-storage, hugepages-<size> or an extended resource such as "
        "example.com/dongle",
        "spec.containers[0].resources.requests[memory]: invalid quantity '1Gx': unknown suffix "
        "'Gx' (use m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like e3)",
    ]


def test_equal_request_and_limit_in_different_units_is_fine() -> None:
    data = container(resources={"requests": {"cpu": "1"}, "limits": {"cpu": "1000m"}})
    pod_from_dict(data)


def test_grace_period_env_and_image() -> None:
    data = container(
        image="busybox: 1.35",
        env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}, {"name": "1BAD"}],
    )
    data["spec"]["terminationGracePeriodSeconds"] = -1
    assert problems_of(data) == [
        "spec.containers[0].env[1].name: duplicate name 'A' (also env[0])",
        "spec.containers[0].env[2].name: invalid environment variable name '1BAD': use "
        "letters, digits, '_', '-' and '.', not starting with a digit",
        "spec.containers[0].image: must not contain whitespace, got 'busybox: 1.35'",
        "spec.terminationGracePeriodSeconds: must be 0 or more, got -1",
    ]


def test_three_mistakes_are_all_reported() -> None:
    text = """
    apiVersion: v1
    kind: Pod
    metadata:
      name: three
    spec:
      containers:
      - name: ok
        image: busybox:1.35
        ports:
        - containerPort: 99999
      - name: bad
        imagee: busybox:1.35
    """
    with pytest.raises(ValidationError) as info:
        load_pods_from_string(textwrap.dedent(text), source_name="three.yaml")
    assert info.value.source == "three.yaml"
    assert [str(p) for p in info.value.problems] == [
        "spec.containers[0].ports[0].containerPort: must be 1-65535, got 99999",
        "spec.containers[1].image: required",
        "spec.containers[1].imagee: unknown field (did you mean 'image'?)",
    ]
    assert "three.yaml" in str(info.value) and "3 problem(s)" in str(info.value)


def test_not_a_mapping() -> None:
    assert problems_of(["a"]) == ["expected a mapping, got a list"]


# --- streams --------------------------------------------------------------------------------

TWO_PODS = """
---
apiVersion: v1
kind: Pod
metadata: {name: one}
spec:
  containers: [{name: c, image: busybox:1.35}]
---
# an empty document is skipped
---
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  containers: [{name: c, image: busybox:1.35}]
"""


def test_multi_document_yaml_skips_empty_documents() -> None:
    pods = load_pods_from_string(TWO_PODS)
    assert [p.metadata.name for p in pods] == ["one", "two"]


def test_empty_text_gives_no_pods() -> None:
    assert load_pods_from_string("") == []
    assert load_pods_from_string("---\n# nothing\n") == []


def test_json_document() -> None:
    (pod,) = load_pods_from_string(json.dumps(base()))
    assert pod.metadata.name == "web"


def test_json_syntax_error() -> None:
    with pytest.raises(ValidationError, match="invalid JSON at line 1"):
        load_pods_from_string('{"apiVersion": "v1",')


def test_yaml_syntax_error_names_the_line() -> None:
    with pytest.raises(ValidationError, match="invalid YAML at line 3, column 19"):
        load_pods_from_string("apiVersion: v1\nkind: Pod\nmetadata: {name: x]\nspec: {}\n")


@pytest.mark.parametrize("kind", ["List", "PodList"])
def test_kind_list(kind: str) -> None:
    second = base()
    second["metadata"]["name"] = "web2"
    data = {"apiVersion": "v1", "kind": kind, "items": [base(), second]}
    pods = load_pods_from_string(yaml.safe_dump(data))
    assert [p.metadata.name for p in pods] == ["web", "web2"]
    assert load_pods_from_dict(data) == pods


def test_list_item_errors_carry_the_item_path() -> None:
    bad = base()
    del bad["spec"]["containers"][0]["image"]
    data = {"apiVersion": "v1", "kind": "List", "items": [base(), bad]}
    with pytest.raises(DocumentError) as info:
        load_pods_from_dict(data)
    assert [str(p) for p in info.value.problems] == ["items[1].spec.containers[0].image: required"]
    assert info.value.item == 1 and info.value.pod_name == "web"


def test_strict_multi_document_raises_every_problem_with_document_paths() -> None:
    text = TWO_PODS.replace("image: busybox:1.35}]\n---\n#", "imag: x}]\n---\n#").replace(
        "name: two", "name: Two"
    )
    with pytest.raises(ValidationError) as info:
        load_pods_from_string(text, source_name="pods.yaml")
    assert info.value.source == "pods.yaml"
    assert [p.path for p in info.value.problems] == [
        "documents[0].spec.containers[0].imag",
        "documents[0].spec.containers[0].image",
        "documents[1].metadata.name",
    ]


def test_lenient_loading_keeps_the_good_pods(tmp_path: Path) -> None:
    bad = base()
    bad["metadata"]["name"] = "broken"
    bad["spec"]["containers"][0]["ports"] = [{"containerPort": -1}]
    docs = [base(), bad, {**base(), "metadata": {"name": "third"}}]
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all(docs))

    pods, errors = load_pods_lenient(path)
    assert [p.metadata.name for p in pods] == ["web", "third"]
    (error,) = errors
    assert isinstance(error, DocumentError)
    assert error.source == str(path)
    assert error.document == 1 and error.pod_name == "broken"
    assert [p.path for p in error.problems] == [
        "documents[1].spec.containers[0].ports[0].containerPort"
    ]
    assert "document 1" in str(error) and "'broken'" in str(error)

    with pytest.raises(ValidationError):
        load_pods_from_file(path)


def test_lenient_loading_survives_a_yaml_error_in_a_later_document() -> None:
    text = yaml.safe_dump(base()) + "---\nkind: [\n"
    pods, errors = load_pods_lenient(text)
    assert [p.metadata.name for p in pods] == ["web"]
    assert len(errors) == 1 and "invalid YAML" in str(errors[0])


def test_lenient_with_a_document_that_is_not_a_mapping() -> None:
    pods, errors = load_pods_lenient(yaml.safe_dump(base()) + "---\n- a\n- b\n")
    assert len(pods) == 1
    assert [str(p) for p in errors[0].problems] == [
        "documents[1]: expected a mapping (a Pod or a List), got a list"
    ]


def test_duplicate_pods_in_one_load() -> None:
    pods, errors = load_pods_lenient(yaml.safe_dump_all([base(), base()]))
    assert len(pods) == 1
    assert [str(p) for p in errors[0].problems] == [
        "documents[1].metadata.name: duplicate pod default/web (also documents[0])"
    ]


def test_duplicate_yaml_keys_are_a_problem() -> None:
    text = textwrap.dedent(
        """
        apiVersion: v1
        kind: Pod
        metadata: {name: a}
        spec:
          containers:
          - name: c
            image: busybox:1.35
            image: busybox:1.36
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: b}
        spec:
          containers: [{name: c, image: "x:1"}]
        """
    )
    pods, errors = load_pods_lenient(text)
    assert [p.metadata.name for p in pods] == ["b"]
    assert [str(p) for p in errors[0].problems] == [
        "documents[0]: duplicate key 'image' at line 9, column 5"
    ]


def test_duplicate_json_keys_are_a_problem_as_yaml_ones_are() -> None:
    # Python's JSON decoder kept the last value silently.
    text = (
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers":'
        ' [{"name": "c", "image": "busybox:1.35", "image": "busybox:1.36"}]}}\n'
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}, "spec": {"containers":'
        ' [{"name": "c", "image": "x:1"}]}}'
    )
    pods, errors = load_pods_lenient(text)
    assert [p.metadata.name for p in pods] == ["b"]
    assert [str(p) for p in errors[0].problems] == [
        "documents[0]: duplicate key 'image' in spec.containers[0]"
    ]


def test_file_source_name_and_encoding(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ValidationError) as info:
        load_pods_from_file(path)
    assert info.value.source == str(path)
    assert "not UTF-8" in str(info.value)


# --- dumping --------------------------------------------------------------------------------


def test_dump_shape_keeps_defaults_and_omits_empties() -> None:
    pod = pod_from_dict(
        container(ports=[{"containerPort": 80}], livenessProbe={"tcpSocket": {"port": 80}})
    )
    data = pod_to_dict(pod)
    assert list(data) == ["apiVersion", "kind", "metadata", "spec"]
    assert data["metadata"] == {"name": "web", "namespace": "default"}
    c = data["spec"]["containers"][0]
    assert c == {
        "name": "app",
        "image": "busybox:1.35",
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "resources": {},
        "livenessProbe": {
            "tcpSocket": {"port": 80},
            "initialDelaySeconds": 0,
            "timeoutSeconds": 1,
            "periodSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "terminationMessagePath": "/dev/termination-log",
        "imagePullPolicy": "IfNotPresent",
    }
    assert data["spec"]["restartPolicy"] == "Always"
    assert data["spec"]["dnsPolicy"] == "ClusterFirst"
    assert data["spec"]["terminationGracePeriodSeconds"] == 30


def test_dump_status() -> None:
    pod = pod_from_dict(base())
    status = m.PodStatus(
        phase="Running",
        container_statuses=(
            m.ContainerStatus(
                name="app",
                image="busybox:1.35",
                state=m.ContainerState(terminated=m.ContainerStateTerminated(exit_code=0)),
            ),
        ),
    )
    pod = attrs.evolve(pod, status=status)
    data = pod_to_dict(pod)
    assert data["status"]["phase"] == "Running"
    cs = data["status"]["containerStatuses"][0]
    assert cs["state"] == {"terminated": {"exitCode": 0}}
    assert cs["lastState"] == {}
    assert cs["ready"] is False and cs["restartCount"] == 0
    assert load_pods_from_string(dump_pod_json(pod)) == [pod]
    assert load_pods_from_string(dump_pod_yaml(pod)) == [pod]


def test_multiline_strings_dump_as_blocks() -> None:
    pod = pod_from_dict(container(args=["echo one\necho two\n"]))
    text = dump_pod_yaml(pod)
    assert "- |\n" in text
    assert load_pods_from_string(text) == [pod]


def test_dump_pods_yaml_is_a_stream() -> None:
    pods = load_pods_from_string(TWO_PODS)
    assert load_pods_from_string(dump_pods_yaml(pods)) == pods


def test_every_model_field_is_in_the_manifest_tables() -> None:
    """A field added to _model.py must be in the decoding tables too, or dumps would drop it."""
    from kubecore._manifest import decoding

    seen: set[type] = set()

    def walk(spec: Any) -> None:
        if spec.cls in seen:
            return
        seen.add(spec.cls)
        assert {f.attr for f in spec.fields} == set(attrs.fields_dict(spec.cls)), spec.cls
        for field in spec.fields:
            nested = getattr(field.kind, "spec", None)
            if nested is not None:
                walk(nested)

    walk(decoding._POD)
    for spec in decoding.OBJECT_KINDS.values():
        walk(spec)
    model_classes = {obj for obj in vars(m).values() if isinstance(obj, type) and attrs.has(obj)}
    assert model_classes == seen


# --- validate_pod on pods built in code -----------------------------------------------------


def test_validate_pod_built_in_code() -> None:
    good = m.Pod(
        metadata=m.ObjectMeta(name="p"),
        spec=m.PodSpec(containers=(m.Container(name="c", image="busybox:1.35"),)),
    )
    assert validate_pod(good) == []
    bad = attrs.evolve(
        good,
        spec=m.PodSpec(
            containers=(
                m.Container(
                    name="c",
                    image="",
                    ports=(m.ContainerPort(container_port=80, protocol="tcp"),),  # type: ignore[arg-type]
                ),
            )
        ),
    )
    assert validate_pod(bad) == [
        FieldError("spec.containers[0].image", "required"),
        FieldError(
            "spec.containers[0].ports[0].protocol",
            "unsupported value 'tcp': must be one of TCP, UDP, SCTP",
        ),
    ]
    assert validate_pod(attrs.evolve(good, spec=m.PodSpec(containers=()))) == [
        FieldError("spec.containers", "required: at least one container")
    ]


# --- identity -------------------------------------------------------------------------------


def test_assign_uid_is_deterministic() -> None:
    pod = pod_from_dict(base())
    web = "file:/etc/pods/web.yaml"
    a = assign_uid(pod, web, node_name="node-a")
    b = assign_uid(pod, web, node_name="node-a")
    assert a.uid and a.uid == b.uid  # an agent restarted with its node name finds its pods
    assert len(a.uid) == 36 and a.uid.count("-") == 4
    assert assign_uid(pod, web, node_name="node-b").uid != a.uid
    assert assign_uid(pod, "http://x", node_name="node-a").uid != a.uid
    other_ns = attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, namespace="other"))
    assert assign_uid(other_ns, web, node_name="node-a").uid != a.uid
    other_name = attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, name="web2"))
    assert assign_uid(other_name, web, node_name="node-a").uid != a.uid
    assert a.spec == pod.spec


def test_assign_uid_keeps_an_existing_uid() -> None:
    data = base()
    data["metadata"]["uid"] = "given-uid"
    pod = pod_from_dict(data)
    assert assign_uid(pod, "anything", node_name="node-a") is pod


def test_stamp_source() -> None:
    data = base()
    data["metadata"]["annotations"] = {"keep": "me"}
    pod = pod_from_dict(data)
    stamped = stamp_source(pod, "file")
    assert stamped.metadata.annotations == {"keep": "me", SOURCE_ANNOTATION: "file"}
    assert pod.metadata.annotations == {"keep": "me"}  # the original is untouched
    assert stamp_source(stamped, "file") is stamped
    assert stamp_source(stamped, "http").metadata.annotations[SOURCE_ANNOTATION] == "http"
    assert validate_pod(stamped) == []


# --- the shipped examples -------------------------------------------------------------------

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


def test_the_five_examples_exist() -> None:
    names = {p.name for p in EXAMPLE_FILES}
    assert {"web.yaml", "shared-volume.yaml", "job.yaml", "init.yaml", "crashloop.yaml"} <= names


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_example_loads_and_round_trips(path: Path) -> None:
    pods = load_pods_from_file(path)
    assert pods
    for pod in pods:
        assert validate_pod(pod) == []
        assert load_pods_from_string(dump_pod_yaml(pod)) == [pod]
        for c in (*pod.spec.init_containers, *pod.spec.containers):
            assert c.image == "busybox:1.35"
            script = " ".join((*c.command, *c.args))
            if "while true" in script or "httpd" in script:
                assert "trap" in script and "TERM" in script, f"{c.name} must exit on SIGTERM"


def test_example_specifics() -> None:
    (web,) = load_pods_from_file(EXAMPLES / "web.yaml")
    httpd = web.spec.containers[0]
    assert httpd.ports[0].host_port == 18080 and httpd.ports[0].container_port == 8080
    assert httpd.liveness_probe is not None and httpd.liveness_probe.http_get is not None
    assert httpd.readiness_probe is not None and httpd.readiness_probe.http_get is not None
    (job,) = load_pods_from_file(EXAMPLES / "job.yaml")
    assert job.spec.restart_policy == "OnFailure"
    (init,) = load_pods_from_file(EXAMPLES / "init.yaml")
    assert init.spec.init_containers and init.spec.volumes[0].empty_dir is not None
    (shared,) = load_pods_from_file(EXAMPLES / "shared-volume.yaml")
    assert len(shared.spec.containers) == 2
    assert all(c.volume_mounts for c in shared.spec.containers)
    (crash,) = load_pods_from_file(EXAMPLES / "crashloop.yaml")
    assert "exit 1" in " ".join(crash.spec.containers[0].command)
