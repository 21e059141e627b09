"""What anybody who can write to etcd may store, and an etcd that does not answer: the agent
reading a key neither blows up nor lies, and a cluster that is down is not a log flood. No
cluster needed: the values are decoded directly, and the outage is a closed port on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import socket
import time

import pytest

from kubecore import ValidationError

# 587 bytes that expand to 9**9 strings: it took every agent reading the key to 674 MB.
ALIAS_BOMB = (
    b"apiVersion: v1\nkind: ConfigMap\ndata:\n"
    b'  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    b"  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    b"  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    b"  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    b"  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    b"  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
)
"""Six levels (531,441 strings, 3 MB of JSON once expanded): the nine of the report would take
the test to 674 MB on a reader without the bound."""


def test_an_alias_bomb_stored_as_a_configmap_is_refused_before_it_expands() -> None:
    from kubecore_etcd import decode_object

    started = time.monotonic()
    with pytest.raises(ValidationError) as info:
        decode_object(ALIAS_BOMB, "/k/configmaps/default/bomb", "ConfigMap", "default", "bomb")
    assert [p.message for p in info.value.problems] == [
        "not a YAML or JSON document: invalid YAML: aliases expand to more values than the text"
        " could hold"
    ]
    assert time.monotonic() - started < 5.0


def test_an_alias_bomb_stored_as_a_pod_is_refused_too() -> None:
    from kubecore_etcd import decode_pod

    bomb = ALIAS_BOMB.replace(b"ConfigMap\ndata:", b"Pod\nmetadata:\n  labels:")
    with pytest.raises(ValidationError, match="aliases expand"):
        decode_pod(bomb, "/k/pods/n1/default/bomb", "default", "bomb")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (b"data: {a: x, a: y}\n", "duplicate key"),
        (b'{"data": {"a": ' + b"[" * 101 + b"]" * 101 + b"}}", "nested more than 100 levels"),
        (b"data:\n  a: " + b"9" * 700 + b"\n", "number of 700 characters"),
        (b'{"data": {"a": "' + b"x" * (1024 * 1024) + b'"}}', "larger than the 1048576 bytes"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_stored_value_has_the_bounds_of_a_manifest_file(value: bytes, problem: str) -> None:
    from kubecore_etcd import decode_object

    with pytest.raises(ValidationError) as info:
        decode_object(value, "/k/configmaps/default/c", "ConfigMap", "default", "c")
    assert problem in "; ".join(p.message for p in info.value.problems)


def test_the_etcd_command_reads_stored_values_with_the_same_bounds() -> None:
    from kubecore_etcd._cli import _document

    assert _document(json.dumps({"spec": {"a": 1}}).encode()) == {"spec": {"a": 1}}
    assert _document(ALIAS_BOMB) == {}
    assert _document(b"a: 1\na: 2\n") == {}


# --- an etcd that does not answer --------------------------------------------------------------


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_etcd_that_is_down_is_logged_once_and_tried_with_a_growing_pause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pytest.importorskip("aetcd", reason="the etcd extra is not installed")
    from kubecore_etcd import EtcdClient, EtcdConfig, EtcdUnavailable

    endpoints = tuple(f"http://127.0.0.1:{closed_port()}" for _ in range(3))
    caplog.set_level(logging.INFO, logger="kubecore_etcd")
    calls = 0
    with EtcdClient(EtcdConfig(endpoints, timeout=0.3)) as client:
        started = time.monotonic()
        while calls < 40 and time.monotonic() - started < 4.0:  # callers retrying at once
            with pytest.raises(EtcdUnavailable):
                client.get("/kubecore-test/down")
            calls += 1
        elapsed = time.monotonic() - started
        requests = client.requests
    # A full round of the endpoints, then a pause of 0.05 s doubling: rounds at 0, 0.05, 0.15,
    # 0.35, ... (2**k - 1) * 0.05 s, the same for every caller.
    rounds = 1
    while (2**rounds - 1) * 0.05 <= elapsed:
        rounds += 1
    assert requests <= len(endpoints) * (rounds + 1), (requests, calls, elapsed)
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len(lines) == 1, lines
    assert lines[0].startswith("etcd: no endpoint answers (")
