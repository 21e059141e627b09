"""Pod-level options on the real Docker engine, each checked with ``docker inspect`` and from
inside the container: the shared PID namespace, hostPID/hostIPC, and a host-network pod's hosts
file. (The managed /etc/hosts, setHostnameAsFQDN, dnsConfig and pod-level limits, on every
engine: tests/engines/scenarios.)"""

from __future__ import annotations

from typing import Any

import pytest

from tests.engines.docker.conftest import TestEngine
from tests.engines.docker.e2e_helpers import (
    AgentFactory,
    all_running,
    container,
    engine_containers,
    exec_until,
    forever,
    make_pod,
    running_ids,
    wait_pod,
)

pytestmark = pytest.mark.docker


def sandbox_id(raw: Any, namespace: str) -> str:
    (sandbox,) = engine_containers(raw, namespace, "POD")
    return str(sandbox["Id"])


def text(result: Any) -> str:
    return str(result.stdout.decode())


def test_share_process_namespace_lets_a_container_see_the_others_processes(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "shared",
        namespace,
        [
            container("marked", engine.image, forever("echo started")),
            container("looker", engine.image),
        ],
        shareProcessNamespace=True,
    )
    kubelet = make_agent([pod])
    running = wait_pod(kubelet, namespace, "shared", all_running, what="shared running")
    ids = running_ids(running)
    sandbox = sandbox_id(raw, namespace)
    for name in ("marked", "looker"):
        assert raw.inspect_container(ids[name])["HostConfig"]["PidMode"] == f"container:{sandbox}"
    result = exec_until(
        kubelet,
        namespace,
        "shared",
        "looker",
        ["ps"],
        ok=lambda r: r.exit_code == 0 and b"echo started" in r.stdout,
    )
    assert "echo started" in text(result), text(result)


def test_without_share_process_namespace_each_container_has_its_own(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "apart",
        namespace,
        [
            container("marked", engine.image, forever("echo started")),
            container("looker", engine.image),
        ],
    )
    kubelet = make_agent([pod])
    running = wait_pod(kubelet, namespace, "apart", all_running, what="apart running")
    assert raw.inspect_container(running_ids(running)["looker"])["HostConfig"]["PidMode"] == ""
    result = exec_until(kubelet, namespace, "apart", "looker", ["ps"])
    assert "echo started" not in text(result)


def test_host_pid_and_host_ipc_when_the_node_allows_them(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "hostns", namespace, [container("app", engine.image)], hostPID=True, hostIPC=True
    )
    kubelet = make_agent([pod], allow_privileged=True)
    running = wait_pod(kubelet, namespace, "hostns", all_running, what="hostns running")
    app = raw.inspect_container(running_ids(running)["app"])["HostConfig"]
    assert (app["PidMode"], app["IpcMode"]) == ("host", "host")
    sandbox = raw.inspect_container(sandbox_id(raw, namespace))["HostConfig"]
    assert (sandbox["PidMode"], sandbox["IpcMode"]) == ("host", "host")
    # The node's PID 1 is not the container's command.
    result = exec_until(kubelet, namespace, "hostns", "app", ["cat", "/proc/1/cmdline"])
    assert b"trap" not in result.stdout


def test_a_host_network_pod_with_host_aliases_sees_the_nodes_hosts_and_its_aliases(
    make_agent: AgentFactory, engine: TestEngine, namespace: str, raw: Any
) -> None:
    pod = make_pod(
        "hn",
        namespace,
        [container("app", engine.image)],
        hostNetwork=True,
        hostAliases=[{"ip": "10.9.8.7", "hostnames": ["alias.example"]}],
    )
    kubelet = make_agent([pod], allow_privileged=True)  # hostNetwork is a host namespace
    running = wait_pod(kubelet, namespace, "hn", all_running, what="hn running")
    inspected = raw.inspect_container(running_ids(running)["app"])
    assert {m["Destination"] for m in inspected["Mounts"]} >= {"/etc/hosts"}
    hosts = text(exec_until(kubelet, namespace, "hn", "app", ["cat", "/etc/hosts"]))
    assert hosts.startswith("# Kubernetes-managed hosts file (host network).\n")
    assert hosts.endswith("# Entries added by HostAliases.\n10.9.8.7\talias.example\n")
