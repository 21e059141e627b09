"""``env[].valueFrom.fileKeyRef`` (Kubernetes' EnvFiles, stable in 1.37): a variable read from an
env file a container wrote into one of the pod's emptyDir volumes."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._config.objects import ObjectStore
from kubecore._contract.errors import CreateContainerConfigError, ValidationError
from kubecore._kuberuntime.env import NodeInfo, container_environment
from kubecore._kuberuntime.envfile import EnvFileError, parse_env_file
from kubecore._model.v1 import Pod
from kubecore._volumes.pod_dirs import MAX_ENV_FILE_BYTES, read_volume_file
from kubecore.manifest import load_pods_from_string
from kubecore.testing import FakeNode
from tests.paths import CORPUS

# --- the env file syntax --------------------------------------------------------------------


def test_the_docs_examples_parse() -> None:
    text = "# comment\nDB_ADDRESS='address'\n\nMULTI='line1\nline2'\n"
    assert parse_env_file(text) == {"DB_ADDRESS": "address", "MULTI": "line1\nline2"}


def test_spaces_around_equals_and_before_a_name_are_ignored() -> None:
    assert parse_env_file("  A = 'x'\n\tB=  'y'  \n") == {"A": "x", "B": "y"}


def test_a_quoted_value_is_taken_literally() -> None:
    text = "A='# not a comment $HOME \\n \"q\" =='\n"
    assert parse_env_file(text) == {"A": '# not a comment $HOME \\n "q" =='}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("A=value\n", "line 1: the value of A must be in single quotes"),
        ('A="value"\n', "line 1: the value of A must be in single quotes"),
        ("A='val1''val2'\n", "line 1: unexpected \"'val2'\" after the value of A"),
        ("A='a'$OTHER\n", "line 1: unexpected '$OTHER' after the value of A"),
        ("\nA='unclosed\n", "line 2: the value of A has no closing quote"),
        ("just words\n", "line 1: expected NAME='value'"),
        ("export A='x'\n", "line 1: invalid name 'export A'"),
        ("A='x'\nM='a\nb' junk\n", "line 3: unexpected 'junk' after the value of M"),
    ],
)
def test_forms_outside_the_syntax_are_refused_with_their_line(text: str, problem: str) -> None:
    with pytest.raises(EnvFileError, match="^" + problem.replace("$", r"\$")):
        parse_env_file(text)


_names = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="='#"),
    min_size=1,
    max_size=12,
)
_values = st.text(st.characters(exclude_characters="'\r", exclude_categories=("Cs",)), max_size=20)


@given(st.dictionaries(_names, _values, max_size=6))
@example({"A": "line1\nline2", "B": ""})
def test_what_a_writer_renders_reads_back(declared: dict[str, str]) -> None:
    text = "".join(f"{name}='{value}'\n" for name, value in declared.items())
    assert parse_env_file(text) == declared


# --- validation -----------------------------------------------------------------------------

POD = """
apiVersion: v1
kind: Pod
metadata: {{name: envfile-test-pod}}
spec:
  restartPolicy: Never
  containers:
  - name: use-envfile
    image: busybox
    command: [sh, -c, env]
    env:
    - name: DB_ADDRESS
      valueFrom:
        fileKeyRef: {ref}
  volumes:
  - {volume}
"""


def pod_of(ref: str, volume: str = "{name: config, emptyDir: {}}") -> Pod:
    (pod,) = load_pods_from_string(POD.format(ref=ref, volume=volume))
    return pod


@pytest.mark.parametrize(
    ("ref", "volume", "problem"),
    [
        (
            "{volumeName: nope, path: config.env, key: DB_ADDRESS}",
            "{name: config, emptyDir: {}}",
            "fileKeyRef.volumeName: no volume named 'nope' in the pod",
        ),
        (
            "{volumeName: config, path: config.env, key: DB_ADDRESS}",
            "{name: config, hostPath: {path: /tmp}}",
            "fileKeyRef.volumeName: volume 'config' must be an emptyDir volume",
        ),
        (
            "{volumeName: config, path: config.env, key: DB_ADDRESS}",
            "{name: config, emptyDir: {medium: Memory}}",
            "fileKeyRef.volumeName: not supported by kubecore: volume 'config' is an emptyDir of"
            " medium Memory",
        ),
        (
            "{volumeName: config, path: ../config.env, key: DB_ADDRESS}",
            "{name: config, emptyDir: {}}",
            "fileKeyRef.path: must not contain '..'",
        ),
        (
            "{volumeName: config, path: /data/config.env, key: DB_ADDRESS}",
            "{name: config, emptyDir: {}}",
            "fileKeyRef.path: must be a relative path",
        ),
        (
            "{volumeName: config, path: config.env, key: 'A=B'}",
            "{name: config, emptyDir: {}}",
            "fileKeyRef.key: invalid key 'A=B': use printable ASCII characters other than '='",
        ),
        (
            "{volumeName: config, key: DB_ADDRESS}",
            "{name: config, emptyDir: {}}",
            "fileKeyRef.path: required",
        ),
    ],
)
def test_a_bad_file_key_ref_is_refused_with_its_field(ref: str, volume: str, problem: str) -> None:
    with pytest.raises(ValidationError) as info:
        pod_of(ref, volume)
    assert f"spec.containers[0].env[0].valueFrom.{problem}" in str(info.value)


# --- resolution -------------------------------------------------------------------------------


def resolve(pod: Pod, volume_dir: Path) -> dict[str, str]:
    def read(volume: str, path: str) -> str | None:
        return read_volume_file(str(volume_dir), path) if volume == "config" else None

    resolved = container_environment(
        pod, pod.spec.containers[0], ObjectStore(), NodeInfo("node"), (), read
    )
    return dict(resolved.env)


def test_the_key_is_read_from_the_file_in_the_volume(tmp_path: Path) -> None:
    (tmp_path / "config.env").write_text("DB_ADDRESS='address'\nREST_ENDPOINT='endpoint'\n")
    pod = pod_of("{volumeName: config, path: config.env, key: DB_ADDRESS}")
    assert resolve(pod, tmp_path) == {"DB_ADDRESS": "address"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, 'couldn\'t read env file "config.env" in volume "config": no such file'),
        (
            "OTHER='x'\n",
            'couldn\'t find key DB_ADDRESS in env file "config.env" in volume "config"',
        ),
        ("DB_ADDRESS=address\n", 'couldn\'t parse env file "config.env" in volume "config":'),
    ],
)
def test_a_missing_file_or_key_or_a_bad_file_stops_the_container(
    tmp_path: Path, content: str | None, message: str
) -> None:
    if content is not None:
        (tmp_path / "config.env").write_text(content)
    pod = pod_of("{volumeName: config, path: config.env, key: DB_ADDRESS}")
    with pytest.raises(CreateContainerConfigError) as info:
        resolve(pod, tmp_path)
    assert str(info.value).startswith(message)
    assert "address" not in str(info.value)  # never a value


@pytest.mark.parametrize("content", [None, "OTHER='x'\n"])
def test_an_optional_missing_file_or_key_leaves_the_variable_unset(
    tmp_path: Path, content: str | None
) -> None:
    if content is not None:
        (tmp_path / "config.env").write_text(content)
    pod = pod_of("{volumeName: config, path: config.env, key: DB_ADDRESS, optional: true}")
    assert resolve(pod, tmp_path) == {}


def test_a_link_out_of_the_volume_is_not_followed(tmp_path: Path) -> None:
    volume, outside = tmp_path / "volume", tmp_path / "outside.env"
    volume.mkdir()
    outside.write_text("DB_ADDRESS='from the node'\n")
    os.symlink(outside, volume / "config.env")
    pod = pod_of("{volumeName: config, path: config.env, key: DB_ADDRESS}")
    with pytest.raises(CreateContainerConfigError, match="leads out of its volume"):
        resolve(pod, volume)


def test_an_oversized_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.env").write_text("A='" + "x" * MAX_ENV_FILE_BYTES + "'\n")
    with pytest.raises(ValueError, match="larger than"):
        read_volume_file(str(tmp_path), "config.env")


# --- on a node ---------------------------------------------------------------------------------


def test_the_docs_pod_prints_the_variable_its_init_container_wrote(tmp_path: Path) -> None:
    """pods/inject/envars-file-container.yaml: ``kubectl logs ... | grep DB_ADDRESS`` gives
    ``DB_ADDRESS=address``."""
    text = (CORPUS / "envfiles-init-container.yaml").read_text()
    with FakeNode(tmp_path) as node:
        node.apply(text)
        node.run_until(lambda: node.status("envfile-test-pod").phase == "Succeeded", timeout=60)
        runtime = node.kubelet._rooms.runtime
        (app,) = [c for c in runtime.list_containers() if c.name.endswith("use-envfile")]
        lines = b"".join(runtime.logs(app.id)).decode().splitlines()
        assert [line for line in lines if line.startswith("DB_ADDRESS")] == ["DB_ADDRESS=address"]


def test_a_fifo_in_place_of_the_file_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "config.env")
    answer: list[object] = []

    def read() -> None:
        try:
            answer.append(read_volume_file(str(tmp_path), "config.env"))
        except ValueError as exc:
            answer.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # blocked on the FIFO: a writer frees it
        os.close(os.open(tmp_path / "config.env", os.O_WRONLY | os.O_NONBLOCK))
        reader.join(5)
    (found,) = answer
    assert isinstance(found, ValueError) and "not a regular file" in str(found)


def test_a_directory_linked_out_of_the_volume_is_not_followed(tmp_path: Path) -> None:
    volume, outside = tmp_path / "volume", tmp_path / "outside"
    volume.mkdir()
    outside.mkdir()
    (outside / "config.env").write_text("DB_ADDRESS='from the node'\n")
    os.symlink(outside, volume / "sub")
    with pytest.raises(ValueError, match="leads out of its volume"):
        read_volume_file(str(volume), "sub/config.env")
