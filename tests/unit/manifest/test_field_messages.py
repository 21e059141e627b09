"""Refusals name the refused field and say why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubecore._manifest.fields import DEFAULT_REASON, REASONS, field_pattern, refusal_message
from tests.cli.support import run_cli
from tests.unit.manifest.support import base, problems_of


def with_spec(**fields: Any) -> dict[str, Any]:
    data = base()
    data["spec"].update(fields)
    return data


def test_a_whole_volume_source_is_refused_with_its_reason() -> None:
    data = with_spec(volumes=[{"name": "v", "gitRepo": {"repository": "https://x"}}])
    assert problems_of(data) == [
        f"spec.volumes[0].gitRepo: {DEFAULT_REASON}: {REASONS['spec.volumes[].gitRepo']}"
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


def test_kubecore_validate_prints_the_field_and_its_reason(tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec:\n  runtimeClassName: gvisor\n"
        "  containers: [{name: c, image: busybox:1.35}]\n"
    )
    code, out, _ = run_cli("validate", str(manifest))
    assert code == 1
    reason = REASONS["spec.runtimeClassName"]
    assert f"{manifest}: spec.runtimeClassName: {DEFAULT_REASON}: {reason}" in out
