"""Properties of the manifest layer over hypothesis-generated pods."""

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubecore._contract.errors import ValidationError
from kubecore._manifest import (
    assign_uid,
    dump_pod_json,
    dump_pod_yaml,
    dump_pods_yaml,
    load_pods_from_string,
    load_pods_lenient,
    pod_from_dict,
    pod_to_dict,
    validate_pod,
)
from kubecore._model import v1 as m
from kubecore.testing.strategies import containers, pods

EXAMPLES = settings(max_examples=40)


@EXAMPLES
@given(pods())
def test_generated_pods_are_valid(pod: m.Pod) -> None:
    assert validate_pod(pod) == []


@EXAMPLES
@given(pods())
def test_yaml_round_trip_is_lossless(pod: m.Pod) -> None:
    text = dump_pod_yaml(pod)
    assert load_pods_from_string(text) == [pod]
    assert dump_pod_yaml(load_pods_from_string(text)[0]) == text


@EXAMPLES
@given(pods())
def test_json_round_trip_is_lossless(pod: m.Pod) -> None:
    text = dump_pod_json(pod)
    assert load_pods_from_string(text) == [pod]
    assert pod_from_dict(json.loads(text)) == pod


@settings(max_examples=15)
@given(st.lists(pods(with_status=False), min_size=1, max_size=3))
def test_multi_document_round_trip(generated: list[m.Pod]) -> None:
    unique = list({(p.metadata.namespace, p.metadata.name): p for p in generated}.values())
    assert load_pods_from_string(dump_pods_yaml(unique)) == unique


@EXAMPLES
@given(containers())
def test_generated_containers_fit_in_a_pod(container: m.Container) -> None:
    pod = m.Pod(metadata=m.ObjectMeta(name="p"), spec=m.PodSpec(containers=(container,)))
    assert validate_pod(pod) == []


@EXAMPLES
@given(pods(), st.text(max_size=20), st.text(max_size=20))
def test_assign_uid_is_a_pure_function_of_node_source_namespace_name(
    pod: m.Pod, source: str, node: str
) -> None:
    no_uid = m.Pod(
        metadata=m.ObjectMeta(
            name=pod.metadata.name, namespace=pod.metadata.namespace, labels={"x": "y"}
        ),
        spec=pod.spec,
    )
    bare = m.Pod(
        metadata=m.ObjectMeta(name=pod.metadata.name, namespace=pod.metadata.namespace),
        spec=m.PodSpec(containers=(m.Container(name="c", image="i:1"),)),
    )
    uid = assign_uid(no_uid, source, node_name=node).uid
    assert uid == assign_uid(bare, source, node_name=node).uid != ""
    assert assign_uid(bare, source, node_name=node + "-other").uid != uid


# --- mutations: break one field, expect its path among the problems -------------------------

Mutation = Callable[[dict[str, Any], st.DataObject], "str | None"]


def _pick_container(data: dict[str, Any], draw: st.DataObject) -> tuple[str, dict[str, Any]]:
    i = draw.draw(st.integers(0, len(data["spec"]["containers"]) - 1))
    return f"spec.containers[{i}]", data["spec"]["containers"][i]


def delete_image(data: dict[str, Any], draw: st.DataObject) -> str:
    path, c = _pick_container(data, draw)
    del c["image"]
    return f"{path}.image"


def image_with_space(data: dict[str, Any], draw: st.DataObject) -> str:
    path, c = _pick_container(data, draw)
    c["image"] = "busybox 1.35"
    return f"{path}.image"


def bad_container_port(data: dict[str, Any], draw: st.DataObject) -> str:
    path, c = _pick_container(data, draw)
    c.setdefault("ports", []).append(
        {"containerPort": draw.draw(st.sampled_from([0, -5, 65536, 10**6]))}
    )
    return f"{path}.ports[{len(c['ports']) - 1}].containerPort"


def port_of_wrong_type(data: dict[str, Any], draw: st.DataObject) -> str:
    path, c = _pick_container(data, draw)
    c.setdefault("ports", []).append(
        {"containerPort": draw.draw(st.sampled_from(["80", 1.5, True, None, []]))}
    )
    return f"{path}.ports[{len(c['ports']) - 1}].containerPort"


def unknown_key(data: dict[str, Any], draw: st.DataObject) -> str:
    where = draw.draw(st.sampled_from(["pod", "metadata", "spec", "container"]))
    key = draw.draw(st.sampled_from(["imagee", "colour", "specc", "x-extra"]))
    if where == "pod":
        data[key] = 1
        return key
    if where == "container":
        path, c = _pick_container(data, draw)
        c[key] = "x"
        return f"{path}.{key}"
    data[where][key] = {}
    return f"{where}.{key}"


def bad_quantity(data: dict[str, Any], draw: st.DataObject) -> str:
    path, c = _pick_container(data, draw)
    side = draw.draw(st.sampled_from(["requests", "limits"]))
    name = draw.draw(st.sampled_from(["cpu", "memory"]))
    c.setdefault("resources", {}).setdefault(side, {})[name] = draw.draw(
        st.sampled_from(["abc", "1K", "-1", "1 Gi", "", "1e"])
    )
    return f"{path}.resources.{side}[{name}]"


def bad_container_name(data: dict[str, Any], draw: st.DataObject) -> str:
    path, c = _pick_container(data, draw)
    c["name"] = draw.draw(st.sampled_from(["Upper", "under_score", "-lead", "a" * 64, ""]))
    return f"{path}.name"


def relative_mount(data: dict[str, Any], draw: st.DataObject) -> str | None:
    for i, c in enumerate(data["spec"]["containers"]):
        if c.get("volumeMounts"):
            c["volumeMounts"][0]["mountPath"] = "relative/path"
            return f"spec.containers[{i}].volumeMounts[0].mountPath"
    return None


def mount_of_missing_volume(data: dict[str, Any], draw: st.DataObject) -> str:
    path, c = _pick_container(data, draw)
    c.setdefault("volumeMounts", []).append({"name": "no-such-volume", "mountPath": "/nowhere"})
    return f"{path}.volumeMounts[{len(c['volumeMounts']) - 1}].name"


def bad_enum(data: dict[str, Any], draw: st.DataObject) -> str:
    field = draw.draw(st.sampled_from(["restartPolicy", "dnsPolicy"]))
    data["spec"][field] = draw.draw(st.sampled_from(["always", "Sometimes", ""]))
    return f"spec.{field}"


def negative_grace(data: dict[str, Any], draw: st.DataObject) -> str:
    data["spec"]["terminationGracePeriodSeconds"] = draw.draw(st.integers(-1000, -1))
    return "spec.terminationGracePeriodSeconds"


def bad_protocol(data: dict[str, Any], draw: st.DataObject) -> str:
    path, c = _pick_container(data, draw)
    c.setdefault("ports", []).append({"containerPort": 80, "protocol": "ICMP"})
    return f"{path}.ports[{len(c['ports']) - 1}].protocol"


def probe_without_handler(data: dict[str, Any], draw: st.DataObject) -> str:
    path, c = _pick_container(data, draw)
    kind = draw.draw(st.sampled_from(["livenessProbe", "readinessProbe", "startupProbe"]))
    c[kind] = {"periodSeconds": 5}
    return f"{path}.{kind}"


def bad_pod_name(data: dict[str, Any], draw: st.DataObject) -> str:
    data["metadata"]["name"] = draw.draw(st.sampled_from(["Web", "web_1", "", "-x", "a..b"]))
    return "metadata.name"


def duplicate_volume(data: dict[str, Any], draw: st.DataObject) -> str | None:
    volumes = data["spec"].get("volumes")
    if not volumes:
        return None
    volumes.append(copy.deepcopy(volumes[0]))
    return f"spec.volumes[{len(volumes) - 1}].name"


MUTATIONS: list[Mutation] = [
    delete_image,
    image_with_space,
    bad_container_port,
    port_of_wrong_type,
    unknown_key,
    bad_quantity,
    bad_container_name,
    relative_mount,
    mount_of_missing_volume,
    bad_enum,
    negative_grace,
    bad_protocol,
    probe_without_handler,
    bad_pod_name,
    duplicate_volume,
]


@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda f: f.__name__)
@settings(max_examples=10)
@given(pod=pods(), data=st.data())
def test_a_mutation_is_reported_at_its_path(
    mutate: Mutation, pod: m.Pod, data: st.DataObject
) -> None:
    manifest = pod_to_dict(pod)
    expected = mutate(manifest, data)
    if expected is None:
        return  # this pod has nothing to break in that way
    with pytest.raises(ValidationError) as info:
        pod_from_dict(manifest)
    paths = [p.path for p in info.value.problems]
    assert expected in paths, (expected, paths)


@settings(max_examples=15)
@given(
    st.lists(pods(with_status=False), min_size=2, max_size=4, unique_by=lambda p: p.metadata.name),
    st.data(),
)
def test_lenient_loading_keeps_every_good_pod(generated: list[m.Pod], data: st.DataObject) -> None:
    generated = [
        m.Pod(
            metadata=m.ObjectMeta(name=f"{p.metadata.name}-{i}"),
            spec=p.spec,
        )
        for i, p in enumerate(generated)
    ]
    bad_index = data.draw(st.integers(0, len(generated) - 1))
    docs = [pod_to_dict(p) for p in generated]
    del docs[bad_index]["spec"]["containers"][0]["image"]
    text = "\n".join(json.dumps(d, indent=1) for d in docs)  # a stream of JSON documents
    good, errors = load_pods_lenient(text)
    assert good == [p for i, p in enumerate(generated) if i != bad_index]
    assert len(errors) == 1
    assert [p.path for p in errors[0].problems] == [
        f"documents[{bad_index}].spec.containers[0].image"
    ]
