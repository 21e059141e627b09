"""Refusals name the offending sub-field, never a whole block, and say why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubecore._manifest.fields import DEFAULT_REASON, REASONS, field_pattern, refusal_message
from tests.test_cli import run_cli
from tests.test_manifest import base, problems_of


def with_spec(**fields: Any) -> dict[str, Any]:
    data = base()
    data["spec"].update(fields)
    return data


def test_a_pod_security_context_is_refused_by_sub_field() -> None:
    data = with_spec(securityContext={"runAsUser": 1000, "fsGroup": 2000, "sysctls": None})
    assert sorted(problems_of(data)) == [
        f"spec.securityContext.fsGroup: {DEFAULT_REASON}",
        f"spec.securityContext.runAsUser: {DEFAULT_REASON}",
    ]


def test_each_entry_of_a_refused_list_block_is_named() -> None:
    data = with_spec(
        tolerations=[{"key": "a", "operator": "Exists"}, {"effect": "NoSchedule"}],
    )
    assert [p.split(":")[0] for p in problems_of(data)] == [
        "spec.tolerations[0].key",
        "spec.tolerations[0].operator",
        "spec.tolerations[1].effect",
    ]


def test_an_init_containers_value_from_names_its_source() -> None:
    data = with_spec(
        initContainers=[
            {
                "name": "i",
                "image": "busybox:1.35",
                "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
            }
        ]
    )
    assert problems_of(data) == [
        f"spec.initContainers[0].env[0].valueFrom.secretKeyRef: {DEFAULT_REASON}"
    ]


def test_a_whole_volume_source_is_refused_with_its_reason() -> None:
    data = with_spec(volumes=[{"name": "v", "gitRepo": {"repository": "https://x"}}])
    assert problems_of(data) == [
        f"spec.volumes[0].gitRepo: {DEFAULT_REASON}: {REASONS['spec.volumes[].gitRepo']}"
    ]


def test_an_empty_refused_block_is_named_itself() -> None:
    assert problems_of(with_spec(securityContext={"sysctls": None})) == [
        f"spec.securityContext: {DEFAULT_REASON}"
    ]


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("documents[2].spec.initContainers[0].volumeDevices", "spec.containers[].volumeDevices"),
        ("items[0].metadata.finalizers", "metadata.finalizers"),
        ("spec.volumes[3].csi", "spec.volumes[].csi"),
    ],
)
def test_paths_read_as_table_keys(path: str, pattern: str) -> None:
    assert field_pattern(path) == pattern
    assert refusal_message(path).startswith(DEFAULT_REASON)


def test_kubecore_validate_prints_the_sub_field(tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec:\n  securityContext: {runAsNonRoot: true}\n"
        "  containers: [{name: c, image: busybox:1.35}]\n"
    )
    code, out, _ = run_cli("validate", str(manifest))
    assert code == 1
    assert f"{manifest}: spec.securityContext.runAsNonRoot: {DEFAULT_REASON}" in out
