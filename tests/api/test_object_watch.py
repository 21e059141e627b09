"""ConfigMaps and Secrets are watched as pods are (``?watch=1`` on the same machinery:
``kubecore._api.watch.ChangeLog``): from a list's resourceVersion, with the initial state first
and a bookmark ending it (``sendInitialEvents``), bookmarks of a quiet watch
(``allowWatchBookmarks``), with selectors, bounded by
``timeoutSeconds``, and a 410 Expired for a version older than the kept history; discovery lists
the ``watch`` verb, so that client-go's and the Python client's informers watch instead of
relisting. Each watch here is bounded by its ``timeoutSeconds``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from kubecore._api import watch
from kubecore._api.watch import INITIAL_EVENTS_END, ChangeLog
from tests.api.client_support import CONFIG_MAP, SECRET, TlsNode, tls_node

CONFIG_MAPS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[TlsNode]:
    with tls_node(tmp_path) as node:
        yield node


def _create(served: TlsNode, path: str, body: dict[str, Any], name: str = "") -> str:
    if name:
        body = {**body, "metadata": {**body["metadata"], "name": name}}
    created = served.request("POST", path, json=body)
    assert created.status_code == 201, created.text
    version: str = created.json()["metadata"]["resourceVersion"]
    return version


def _patch(served: TlsNode, path: str, data: dict[str, str]) -> None:
    answer = served.request(
        "PATCH",
        path,
        json={"data": data},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert answer.status_code == 200, answer.text


def _watch(served: TlsNode, path: str, count: int, **query: str) -> list[dict[str, Any]]:
    """The first ``count`` events of a watch of ``path`` (fewer when it ends first: its
    ``timeoutSeconds``, 5 unless given)."""
    query = {"watch": "1", "timeoutSeconds": "5", **query}
    answer = served.request("GET", path, params=query, stream=True)
    assert answer.status_code == 200, answer.text
    events: list[dict[str, Any]] = []
    with answer:
        for line in answer.iter_lines():
            if line:
                events.append(json.loads(line))
            if len(events) == count:
                break
    return events


def test_discovery_lists_the_watch_of_config_maps_and_secrets(served: TlsNode) -> None:
    resources = {r["name"]: r for r in served.get("/api/v1")["resources"]}
    assert "watch" in resources["configmaps"]["verbs"]
    assert "watch" in resources["secrets"]["verbs"]


def test_a_watch_from_a_lists_version_sees_each_change_once(served: TlsNode) -> None:
    _create(served, CONFIG_MAPS, CONFIG_MAP)
    listed = served.get(CONFIG_MAPS)
    version = listed["metadata"]["resourceVersion"]
    assert listed["items"][0]["metadata"]["resourceVersion"] == version
    _patch(served, CONFIG_MAPS + "/settings", {"mode": "slow"})
    assert served.request("DELETE", CONFIG_MAPS + "/settings").status_code == 200
    events = _watch(served, CONFIG_MAPS, 2, resourceVersion=version)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "settings"),
        ("DELETED", "settings"),
    ]
    assert events[0]["object"]["data"] == {"mode": "slow"}
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert int(version) < versions[0] < versions[1]
    assert "_object" not in events[0]["object"]


def test_a_watch_sees_a_change_made_while_it_waits(served: TlsNode) -> None:
    version = _create(served, CONFIG_MAPS, CONFIG_MAP)
    answer = served.request(
        "GET",
        CONFIG_MAPS,
        params={"watch": "1", "resourceVersion": version, "timeoutSeconds": "10"},
        stream=True,
    )
    with answer:
        lines = answer.iter_lines()
        _patch(served, CONFIG_MAPS + "/settings", {"mode": "slow"})
        event = json.loads(next(line for line in lines if line))
    assert event["type"] == "MODIFIED" and event["object"]["data"] == {"mode": "slow"}


def test_send_initial_events_sends_the_state_then_a_bookmark(served: TlsNode) -> None:
    _create(served, CONFIG_MAPS, CONFIG_MAP)
    _create(served, CONFIG_MAPS, CONFIG_MAP, name="other")
    events = _watch(
        served,
        CONFIG_MAPS,
        3,
        sendInitialEvents="true",
        allowWatchBookmarks="true",
        resourceVersionMatch="NotOlderThan",
    )
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "BOOKMARK"]
    assert {e["object"]["metadata"]["name"] for e in events[:2]} == {"settings", "other"}
    bookmark = events[2]["object"]
    assert bookmark["kind"] == "ConfigMap"
    assert bookmark["metadata"]["annotations"] == {INITIAL_EVENTS_END: "true"}
    assert (
        bookmark["metadata"]["resourceVersion"]
        == served.get(CONFIG_MAPS)["metadata"]["resourceVersion"]
    )


def test_a_watch_follows_its_label_selector(served: TlsNode) -> None:
    version = _create(served, CONFIG_MAPS, CONFIG_MAP)
    other = {**CONFIG_MAP, "metadata": {"name": "other", "labels": {"app": "else"}}}
    _create(served, CONFIG_MAPS, other)
    _patch(served, CONFIG_MAPS + "/other", {"mode": "slow"})
    _patch(served, CONFIG_MAPS + "/settings", {"mode": "slow"})
    events = _watch(served, CONFIG_MAPS, 1, resourceVersion=version, labelSelector="app=clients")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "settings")
    ]


def test_a_version_older_than_the_history_is_gone(served: TlsNode) -> None:
    served.node.api.registries["configmaps"].resource.log = ChangeLog(history=1)
    version = _create(served, CONFIG_MAPS, CONFIG_MAP)
    for mode in ("one", "two", "three"):
        _patch(served, CONFIG_MAPS + "/settings", {"mode": mode})
    (event,) = _watch(served, CONFIG_MAPS, 1, resourceVersion=version)
    assert event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")


def test_a_watch_ends_at_its_timeout(served: TlsNode) -> None:
    version = _create(served, CONFIG_MAPS, CONFIG_MAP)
    assert _watch(served, CONFIG_MAPS, 10, resourceVersion=version, timeoutSeconds="1") == []


def test_secrets_are_watched_with_the_token_only(served: TlsNode) -> None:
    version = _create(served, SECRETS, SECRET)
    _patch(served, SECRETS + "/password", {"password": "aHVudGVyMw=="})
    (event,) = _watch(served, SECRETS, 1, resourceVersion=version)
    assert event["type"] == "MODIFIED" and event["object"]["data"]["password"] == "aHVudGVyMw=="
    anonymous = requests.get(
        served.node.http.url + SECRETS, params={"watch": "1", "timeoutSeconds": "1"}, timeout=10
    )
    assert anonymous.status_code in (401, 403), anonymous.text


def test_a_quiet_watch_that_allows_bookmarks_gets_one_of_its_version(
    served: TlsNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watch, "BOOKMARK_SECONDS", 0.3)
    version = _create(served, CONFIG_MAPS, CONFIG_MAP)
    _patch(served, CONFIG_MAPS + "/settings", {"mode": "slow"})
    events = _watch(served, CONFIG_MAPS, 2, resourceVersion=version, allowWatchBookmarks="true")
    assert [e["type"] for e in events] == ["MODIFIED", "BOOKMARK"]
    assert events[1]["object"] == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": events[0]["object"]["metadata"]["resourceVersion"]},
    }
    quiet = _watch(served, CONFIG_MAPS, 2, resourceVersion=version, timeoutSeconds="1")
    assert [e["type"] for e in quiet] == ["MODIFIED"]  # no bookmark unless allowed
