"""A restart while a manifest source blinks kills nothing, on the real Docker engine.

Two agents in turn (the second one is the restart) on one root directory, each with a
``FileSource`` remembering its last good state under the root directory, as ``kubecore run``
builds it. Between them the manifests are broken as the issue found them: one document of a
file malformed, a file cut inside a document by a writer that stopped, the directory replaced
by another, empty one, or the manifest directory a mount point that is not there yet. The
containers and the ``emptyDir`` data of every pod must outlive the restart and the repair.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._config.file import FileSource
from kubecore._config.memory import LAST_GOOD_DIR
from kubecore._config.poller import SourcePoller
from kubecore._contract.labels import POD_NAMESPACE_LABEL
from kubecore._util.clock import SystemClock
from kubecore_docker import DockerConnection, DockerOptions, DockerPuller, DockerRuntime
from tests.engines.docker.conftest import TestEngine, remove_labelled
from tests.engines.docker.e2e_helpers import SERVER, all_running, engine_containers, wait_pod

pytestmark = pytest.mark.docker


def pod_doc(name: str, namespace: str, image: str, broken: bool = False) -> str:
    command = ", ".join(f'"{part}"' for part in SERVER)
    ports = "    ports:\n    - containerPort: 70000\n" if broken else ""
    return (
        "apiVersion: v1\nkind: Pod\n"
        f"metadata:\n  name: {name}\n  namespace: {namespace}\n"
        "spec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n"
        f"    image: {image}\n    command: [{command}]\n{ports}"
        "    volumeMounts:\n    - name: cache\n      mountPath: /cache\n"
        "  volumes:\n  - name: cache\n    emptyDir: {}\n"
    )


Agent = tuple[Kubelet, SourcePoller, DockerRuntime]


@pytest.fixture
def namespace(raw: Any, test_uid: str) -> Iterator[str]:
    ns = f"blink-{test_uid}"
    yield ns
    remove_labelled(raw, f"{POD_NAMESPACE_LABEL}={ns}")


@pytest.fixture
def start_agent(
    engine: TestEngine, namespace: str, tmp_path: Path
) -> Iterator[Callable[[Path], Agent]]:
    running: list[Agent] = []
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 192.0.2.53\n")
    root = tmp_path / "root"

    def start(manifests: Path) -> Agent:
        connection = DockerConnection(
            DockerOptions(
                base_url=engine.base_url,
                timeout=30,
                sandbox_image=engine.pause_image,
                sandbox_stop_timeout=2,
            )
        )
        runtime = DockerRuntime(connection)
        source = FileSource(manifests, interval=1.0, state_dir=root / LAST_GOOD_DIR)
        kubelet = Kubelet(
            runtime,
            DockerPuller(connection),
            config=KubeletConfig(
                node_name=f"{namespace}-node",  # the test's own: tests run side by side
                root_dir=str(root),
                resolv_conf=str(resolv),
                relist_interval=0.3,
                housekeeping_interval=0.5,
                resync_interval=5.0,
            ),
            clock=SystemClock(),
            sources=(source.name,),
        )
        poller = SourcePoller([source], kubelet.update, tick=0.2)
        kubelet.start()
        poller.start()
        running.append((kubelet, poller, runtime))
        return kubelet, poller, runtime

    yield start
    for agent in reversed(running):
        stop(agent)


def stop(agent: Agent) -> None:
    kubelet, poller, runtime = agent
    poller.stop()
    kubelet.stop(timeout=10)
    with contextlib.suppress(Exception):
        runtime.close()


@pytest.mark.parametrize("blink", ["malformed", "unmounted", "half-written", "replaced"])
def test_a_restart_while_the_manifests_blink_keeps_every_container_and_its_data(
    start_agent: Callable[[Path], Agent],
    engine: TestEngine,
    raw: Any,
    namespace: str,
    tmp_path: Path,
    blink: str,
) -> None:
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    manifests = tmp_path / "pods"
    manifests.symlink_to(mounted)
    two = pod_doc("alpha", namespace, engine.image) + "---\n"
    (mounted / "a.yaml").write_text(two + pod_doc("beta", namespace, engine.image))
    first = start_agent(manifests)
    precious: dict[Path, str] = {}
    for name in ("alpha", "beta"):
        pod = wait_pod(first[0], namespace, name, all_running, timeout=60)
        cache = tmp_path / "root" / "pods" / pod.uid / "volumes" / "kubernetes.io~empty-dir"
        (cache / "cache" / "precious").write_text(name)
        precious[cache / "cache" / "precious"] = name
    assert first[0].wait_idle(15)
    before = {c["Id"] for c in engine_containers(raw, namespace)}
    stop(first)

    whole = (mounted / "a.yaml").read_text()
    if blink == "malformed":  # beta's document broken while the agent is down
        (mounted / "a.yaml").write_text(two + pod_doc("beta", namespace, engine.image, True))
    elif blink == "half-written":  # its writer stopped inside beta's document
        (mounted / "a.yaml").write_text(whole[: len(two) + 60])
    elif blink == "replaced":  # another directory, empty, where it was (files removed: meant)
        mounted.rename(tmp_path / "mounted.away")
        mounted.mkdir()
    else:  # the manifest directory is a mount point not mounted yet
        manifests.unlink()
        manifests.symlink_to(tmp_path / "not-mounted-yet")
    second = start_agent(manifests)
    time.sleep(6.0)  # past the settle and the loss settle
    assert {c["Id"] for c in engine_containers(raw, namespace)} == before
    if blink in ("malformed", "half-written"):
        (mounted / "a.yaml").write_text(whole)
    elif blink == "replaced":
        mounted.rmdir()
        (tmp_path / "mounted.away").rename(mounted)
    else:
        manifests.unlink()
        manifests.symlink_to(mounted)
    for name in ("alpha", "beta"):
        wait_pod(second[0], namespace, name, all_running, timeout=30)
    time.sleep(2.0)
    assert second[0].wait_idle(15)
    after = engine_containers(raw, namespace)
    assert {c["Id"] for c in after} == before
    assert {c["State"] for c in after} == {"running"}
    for path, text in precious.items():
        assert path.read_text() == text
    assert second[0].sources_ready()
