"""The Pod field table the decoding tables generate (the documentation site's Pod fields page
renders it at build time: tests/test_docs.py)."""

from __future__ import annotations

import pytest

from kubecore._manifest.field_table import (
    API_SERVER,
    HONOURED,
    SCHEDULER,
    field_rows,
    field_table,
    main,
)
from tests.paths import REPO

PAGE = REPO / "docs" / "reference" / "pod-fields.md"


def test_the_pod_fields_page_renders_the_generated_table() -> None:
    assert "<!-- generated: pod-fields -->" in PAGE.read_text()
    assert field_table().startswith("| Pod field | kubecore |\n| --- | --- |\n")


def test_every_field_says_what_kubecore_does() -> None:
    rows = dict(field_rows())
    assert rows["spec.containers[].image"] == HONOURED
    assert rows["spec.containers[].volumeDevices"].startswith("refused: raw block devices")
    assert rows["spec.runtimeClassName"].startswith("refused: ")
    assert rows["metadata.deletionTimestamp"].startswith("refused: set by the API server")
    assert rows["metadata.managedFields"] == API_SERVER
    assert rows["spec.tolerations[].key"] == SCHEDULER
    required = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    assert rows[f"{required}.nodeSelectorTerms[].matchExpressions[].key"] == HONOURED
    assert rows["spec.initContainers[]"] == "the fields of `spec.containers[]`"
    assert rows["spec.nodeName"] == HONOURED
    assert all(what for what in rows.values())
    assert len(rows) == len(field_rows()), "one row per field"


def test_accepted_scheduler_only_fields_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubecore._manifest import field_table as module

    monkeypatch.setattr(module, "SCHEDULER_ONLY", frozenset({"spec.restartPolicy"}))
    assert dict(field_rows())["spec.restartPolicy"] == SCHEDULER


def test_the_command_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0 and capsys.readouterr().out == field_table()


@pytest.mark.parametrize(
    ("where", "value", "path"),
    [
        (
            "container",
            {"securityContext": {"windowsOptions": {"runAsUserName": "x"}}},
            "windowsOptions",
        ),
        ("volume", {"image": {"reference": "busybox:1.35"}}, "image"),
    ],
)
def test_fields_the_table_calls_refused_are_refused(
    where: str, value: dict[str, object], path: str
) -> None:
    from kubecore import ValidationError
    from kubecore._manifest import pod_from_dict

    container: dict[str, object] = {"name": "c", "image": "busybox:1.35"}
    volume: dict[str, object] = {"name": "v"}
    (container if where == "container" else volume).update(value)
    spec = {"containers": [container], "volumes": [volume]}
    data = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    with pytest.raises(ValidationError) as refused:
        pod_from_dict(data)
    assert path in str(refused.value)
