"""The manifest reader takes YAML as kubectl does (sigs.k8s.io/yaml on go-yaml v2), where that
differs from PyYAML's YAML 1.1 in ways a manifest notices."""

from __future__ import annotations

import pytest

from kubecore.manifest import load_pods_from_string

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels:
    {labels}
spec:
  containers:
  - name: c
    image: busybox:1.35
    command: {command}
"""


def command_of(command: str, labels: str = "app: x") -> tuple[str, ...]:
    (pod,) = load_pods_from_string(POD.format(command=command, labels=labels))
    return pod.spec.containers[0].command


def labels_of(labels: str) -> dict[str, str]:
    (pod,) = load_pods_from_string(POD.format(command="[sh]", labels=labels))
    return pod.metadata.labels


def test_a_single_quote_escape_in_a_double_quoted_string() -> None:
    assert command_of('["sh", "-c", "echo it\\\'s here"]') == ("sh", "-c", "echo it's here")


def test_other_escapes_still_read_alike_in_a_text_with_one() -> None:
    text = '["a\\tb", "\\u00e9", "it\\\'s", "x\\/y"]'
    assert command_of(text) == ("a\tb", "é", "it's", "x/y")


@pytest.mark.parametrize("word", ["1:30", "12:00:00", "=", "2024-01-01", "1_2:3"])
def test_words_go_yaml_keeps_as_strings(word: str) -> None:
    assert command_of(f"[echo, {word}]") == ("echo", word)


def test_go_octal_is_a_number() -> None:
    text = POD.format(command="[sh]", labels="app: x") + (
        "    ports:\n    - containerPort: 0o120\n"
    )
    (pod,) = load_pods_from_string(text)
    assert pod.spec.containers[0].ports[0].container_port == 80


def test_number_and_boolean_keys_become_strings() -> None:
    assert labels_of("{1: a, true: b, 2.5: c}") == {"1": "a", "true": "b", "2.5": "c"}


def test_yaml_1_1_booleans_stay_booleans_as_in_go_yaml() -> None:
    with pytest.raises(Exception, match="expected a string, got true"):
        labels_of("enabled: yes")


def test_duplicate_keys_are_still_refused_in_a_text_with_an_escape() -> None:
    with pytest.raises(Exception, match="duplicate key 'app'"):
        labels_of('app: "it\\\'s"\n    app: y')
