"""Fixtures for the tests against a real etcd cluster (scripts/test-etcd.sh up): they skip, saying
why, when ``KUBECORE_TEST_ETCD_ENDPOINTS`` is unset or nothing answers there. Each test gets a
key ``prefix`` of its own and ``agents`` on it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engines.availability import engine_unavailable
from tests.engines.etcd.helpers import Agent


@pytest.fixture(scope="session")
def etcd_endpoints() -> tuple[str, ...]:
    text = os.environ.get("KUBECORE_TEST_ETCD_ENDPOINTS", "")
    if not text:
        engine_unavailable(
            "no etcd cluster: KUBECORE_TEST_ETCD_ENDPOINTS is unset (scripts/test-etcd.sh)"
        )
    pytest.importorskip("aetcd", reason="the etcd extra is not installed (pip install .[etcd])")
    from kubecore_etcd import EtcdClient, EtcdConfig, EtcdUnavailable, parse_endpoints

    endpoints = parse_endpoints(text)
    with EtcdClient(EtcdConfig(endpoints, timeout=2.0)) as client:
        try:
            client.revision()
        except EtcdUnavailable as error:
            engine_unavailable(f"no etcd cluster answers at {text}: {error}")
    return endpoints


@pytest.fixture
def client(etcd_endpoints: tuple[str, ...]) -> Iterator[Any]:
    from kubecore_etcd import EtcdClient, EtcdConfig

    with EtcdClient(EtcdConfig(etcd_endpoints)) as client:
        yield client


@pytest.fixture
def prefix(client: Any) -> Iterator[str]:
    """A prefix of this test's own: tests never see each other's keys."""
    prefix = f"/kubecore-test/{uuid.uuid4().hex[:12]}"
    yield prefix
    client.delete_prefix(prefix + "/")


@pytest.fixture
def agents(client: Any, prefix: str, tmp_path: Path) -> Iterator[Callable[..., Agent]]:
    started: list[Agent] = []

    def start(node: str = "n1", **sink: Any) -> Agent:
        agent = Agent(client, prefix, node, tmp_path, **sink)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.stop()
