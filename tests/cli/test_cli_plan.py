"""``kubecore plan``: exit 0 / 2 / 1 as ``terraform plan -detailed-exitcode``; table, JSON and
YAML; nothing written (not even the root directory); past an agent's root-dir lock it reads,
says so, and leaves the lock with the agent."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from kubecore._cli import main
from kubecore._contract.errors import RootDirInUse
from kubecore._volumes.pod_dirs import root_dir_holder
from kubecore.testing import FakeNode

POD = """apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - {name: app, image: nginx:1}
"""


def manifests(tmp_path: Path, text: str = POD) -> Path:
    directory = tmp_path / "pods"
    directory.mkdir(exist_ok=True)
    (directory / "web.yaml").write_text(text)
    return directory


def plan(*words: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["plan", *words], out)
    return code, out.getvalue()


def test_a_change_exits_2_with_a_table_json_and_yaml(tmp_path: Path) -> None:
    pods, root = manifests(tmp_path), tmp_path / "root"
    code, table = plan(str(pods), "--runtime", "fake", "--root-dir", str(root))
    assert code == 2
    assert table.splitlines()[0].split() == ["POD", "ACTION", "CONTAINER", "REASON"]
    assert "default/web  create-sandbox" in table
    assert table.rstrip().endswith("1 of 1 pod(s) would change.")
    code, text = plan(str(pods), "--runtime", "fake", "--root-dir", str(root), "-o", "json")
    document = json.loads(text)
    assert code == 2 and document["changes"] is True
    actions = [s["action"] for s in document["pods"][0]["steps"]]
    assert actions == ["create-sandbox", "pull", "start"]
    code, text = plan(str(pods), "--runtime", "fake", "--root-dir", str(root), "-o", "yaml")
    assert code == 2 and yaml.safe_load(text) == document | {
        "takenAt": yaml.safe_load(text)["takenAt"]
    }
    assert not root.exists()  # nothing written: not even the root directory


def test_nothing_to_do_exits_0(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, table = plan(str(tmp_path / "empty"), "--runtime", "fake", "--root-dir", str(tmp_path))
    assert code == 0, table
    assert "0 of 0 pod(s) would change." in table


def test_errors_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = manifests(tmp_path, "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n")
    assert plan(str(bad), "--runtime", "fake", "--root-dir", str(tmp_path / "r"))[0] == 1
    assert "containers" in capsys.readouterr().err
    assert plan(str(tmp_path / "missing"), "--runtime", "fake")[0] == 1
    assert plan(str(bad), "--runtime", "nosuch", "--root-dir", str(tmp_path / "r"))[0] == 1
    assert plan("--no-such-flag")[0] == 1  # a usage error is not "changes"


def test_past_an_agents_lock_it_reads_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    with FakeNode(root) as node:
        node.apply(POD)
        node.sync()
        node.kubelet.plan()  # the agent holds its root dir from its first change on
        holder = root_dir_holder(str(root))
        assert holder is not None and "pid" in holder
        code, _table = plan(str(manifests(tmp_path)), "--runtime", "fake", "--root-dir", str(root))
        err = capsys.readouterr().err
        assert code == 2  # the fake runtime of this process is not the agent's
        assert f"an agent holds {root} ({holder}): planning without its lock" in err
        assert root_dir_holder(str(root)) == holder  # still the agent's
        with pytest.raises(RootDirInUse):
            FakeNode(root).kubelet.update  # noqa: B018 - a second agent is refused
    assert root_dir_holder(str(root)) is None
