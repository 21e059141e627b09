"""The v1 Node the agent publishes under ``<prefix>/nodes/<node>``."""

from __future__ import annotations

import socket
from typing import Any

import kubecore
from kubecore import Kubelet
from kubecore.server import host_capacity, machine_arch


def node_document(kubelet: Kubelet, node: str, *, ready: bool, reason: str) -> dict[str, Any]:
    """The v1 Node the agent publishes under ``<prefix>/nodes/<node>``."""
    host = host_capacity(kubelet.config.root_dir)
    capacity = {"cpu": str(host["cpu"]), "pods": str(kubelet.config.max_pods)}
    memory = int(host.get("memory", 0))
    if memory:
        capacity["memory"] = f"{memory // 1024}Ki"
    addresses = [{"type": "Hostname", "address": socket.gethostname()}]
    if kubelet.config.host_ip:
        addresses.insert(0, {"type": "InternalIP", "address": kubelet.config.host_ip})
    runtime_version = ""
    try:
        version = kubelet.runtime_version()
        runtime_version = f"{version.runtime_name}://{version.runtime_version}"
    except Exception:  # a runtime that is down: the Ready condition says so
        pass
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node,
            "labels": kubelet.config.labels(),
        },
        "status": {
            "addresses": addresses,
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": reason or ("kubelet is ready" if ready else ""),
                }
            ],
            "nodeInfo": {
                "kubeletVersion": f"kubecore/{kubecore.__version__}",
                "containerRuntimeVersion": runtime_version,
                "operatingSystem": "linux",
                "architecture": machine_arch(),
            },
        },
    }
