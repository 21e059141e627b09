"""The bare CRI client: the floor of a pod start on a CRI runtime, with no agent.

It makes the CRI calls kubecore makes to start a pod, by hand on ``kubecore_cri``'s generated
stubs: per pod ``RunPodSandbox``, ``PodSandboxStatus`` (its IP, for the pod's status and its
hosts file), ``ImageStatus`` (the image is present), ``CreateContainer``, ``StartContainer``,
with what kubecore (as the kubelet) puts in them that makes the engine work: metadata, hostname,
log directory and path, the DNS of the host's ``resolv.conf``, the pod's own network and IPC
namespaces, and two bind mounts per container (``/etc/hosts`` and ``/dev/termination-log``, files
it writes); ``running`` lists once to see the containers running.

It imports only ``grpc`` and the generated code (never kubecore or the benchmarks), so that run
as a script (``python benchmarks/_bare_cri.py ENDPOINT IMAGE LABEL=VALUE PREFIX COUNT
COMMAND...``) it is the floor of ``kubecore run --once`` too: a process that starts, makes those
calls on 8 threads, and exits once every container runs.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

THREADS = 8
BARE_NAMESPACE = "kubecore-bench-bare"
"""The pod namespace in the metadata of the bare client's sandboxes."""


def host_dns(path: str = "/etc/resolv.conf") -> tuple[list[str], list[str]]:
    """The name servers and search domains of the host (what a pod without cluster DNS gets)."""
    servers: list[str] = []
    searches: list[str] = []
    try:
        with open(path, encoding="utf-8") as conf:
            for line in conf:
                key, _, rest = line.partition(" ")
                if key == "nameserver":
                    servers.append(rest.strip())
                elif key == "search":
                    searches = rest.split()
    except OSError:
        pass
    return servers, searches


def channel_to(endpoint: str, interceptors: Sequence[Any] = ()) -> Any:
    """A gRPC channel to ``endpoint`` (through ``interceptors`` when given)."""
    import grpc

    channel = grpc.insecure_channel(
        endpoint, options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)]
    )
    return grpc.intercept_channel(channel, *interceptors) if interceptors else channel


class BareCri:
    """The runtime and image service stubs on one channel of their own (``close`` it)."""

    def __init__(self, endpoint: str, interceptors: Sequence[Any] = ()) -> None:
        from kubecore_cri._pb import api_pb2 as pb
        from kubecore_cri._stubs import IMAGE_SERVICE, RUNTIME_SERVICE, service_stub

        self.pb: Any = pb
        self._channel = channel_to(endpoint, interceptors)
        self.runtime = service_stub(self._channel, RUNTIME_SERVICE)
        self.images = service_stub(self._channel, IMAGE_SERVICE)

    def close(self) -> None:
        self._channel.close()

    def start_pod(
        self,
        name: str,
        image: str,
        command: Sequence[str],
        labels: Mapping[str, str],
        root: str,
    ) -> str:
        """One pod: a sandbox and one container running ``command`` (its files under
        ``root``); the sandbox's id."""
        pb = self.pb
        uid = f"uid-{name}"
        own = pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
        servers, searches = host_dns()
        config = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace=BARE_NAMESPACE),
            hostname=name,
            log_directory=os.path.join(root, f"{BARE_NAMESPACE}_{name}_{uid}"),
            dns_config=pb.DNSConfig(servers=servers, searches=searches),
            labels=dict(labels),
            linux=pb.LinuxPodSandboxConfig(
                security_context=pb.LinuxSandboxSecurityContext(namespace_options=own)
            ),
        )
        sandbox_id = self.runtime.RunPodSandbox(
            pb.RunPodSandboxRequest(config=config), timeout=60
        ).pod_sandbox_id
        status = self.runtime.PodSandboxStatus(
            pb.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id), timeout=30
        ).status
        files = os.path.join(root, uid)
        os.makedirs(files)
        hosts = os.path.join(files, "etc-hosts")
        with open(hosts, "w", encoding="utf-8") as out:
            out.write(f"127.0.0.1\tlocalhost\n::1\tlocalhost\n{status.network.ip}\t{name}\n")
        termination_log = os.path.join(files, "termination-log")
        open(termination_log, "w").close()
        spec = pb.ImageSpec(image=image)
        self.images.ImageStatus(pb.ImageStatusRequest(image=spec), timeout=30)
        container = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name="c0"),
            image=spec,
            command=list(command),
            mounts=[
                pb.Mount(container_path="/dev/termination-log", host_path=termination_log),
                pb.Mount(container_path="/etc/hosts", host_path=hosts),
            ],
            labels=dict(labels),
            log_path="c0/0.log",
            linux=pb.LinuxContainerConfig(
                security_context=pb.LinuxContainerSecurityContext(namespace_options=own)
            ),
        )
        request = pb.CreateContainerRequest(
            pod_sandbox_id=sandbox_id, config=container, sandbox_config=config
        )
        container_id = self.runtime.CreateContainer(request, timeout=60).container_id
        self.runtime.StartContainer(pb.StartContainerRequest(container_id=container_id), timeout=60)
        return str(sandbox_id)

    def running(self, labels: Mapping[str, str]) -> int:
        """How many containers carrying ``labels`` run (one ``ListContainers``)."""
        pb = self.pb
        only = pb.ContainerFilter(
            label_selector=dict(labels), state=pb.ContainerStateValue(state=pb.CONTAINER_RUNNING)
        )
        listed = self.runtime.ListContainers(pb.ListContainersRequest(filter=only), timeout=30)
        return len(listed.containers)

    def start_pods(
        self, names: Sequence[str], image: str, command: Sequence[str], labels: Mapping[str, str]
    ) -> int:
        """The pods of ``names`` started on ``THREADS`` threads; how many containers run then.
        Their files (logs, hosts files) are removed afterwards: the engine keeps the pods."""
        root = tempfile.mkdtemp(prefix="kubecore-bench-bare-")
        try:
            with ThreadPoolExecutor(max_workers=THREADS) as pool:
                list(
                    pool.map(lambda name: self.start_pod(name, image, command, labels, root), names)
                )
            return self.running(labels)
        finally:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str]) -> int:
    endpoint, image, label, prefix, count, *command = argv
    key, _, value = label.partition("=")
    names = [f"{prefix}-{i:05d}" for i in range(int(count))]
    client = BareCri(endpoint)
    try:
        seen = client.start_pods(names, image, command, {key: value})
    finally:
        client.close()
    if seen < len(names):
        print(f"{seen}/{len(names)} containers running", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
