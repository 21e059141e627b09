"""Volume sources and mounts on the in-memory runtime: emptyDir medium and sizeLimit (eviction),
ephemeral-storage, hostPath types, configMap / secret / downwardAPI / projected volumes through
the atomic writer, subPath, mountPropagation, persistentVolumeClaim with --pvc-dir."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path
from typing import Any

import attrs
import pytest

from kubecore import ValidationError
from kubecore._agent.admission.features import UNBOUND_CLAIM
from kubecore._contract.values import MountPropagation
from kubecore._housekeeping.eviction import local_storage_eviction
from kubecore._model.v1 import Pod
from kubecore._volumes.atomic_writer import DATA_DIR, FileProjection, write_atomically
from kubecore._volumes.pod_dirs import empty_dir_mode
from kubecore._volumes.sources import DictObjects, check_host_path
from kubecore.manifest import load_pods_from_string
from kubecore_fake import Behaviour
from tests.agent.support import Node, make_node

BUSYBOX = "busybox:1.36"


def node_with(tmp: Path, objects: DictObjects | None = None, **config: Any) -> Node:
    node = make_node(tmp, **config)
    if objects is not None:
        node.kubelet._rooms.volumes.objects = objects
    return node


def pod_of(text: str) -> Pod:
    (pod,) = load_pods_from_string(text)
    return pod


def pod_with_volume(volume: str, mount: str = "{name: v, mountPath: /v}", **extra: str) -> Pod:
    return pod_of(
        f"""
apiVersion: v1
kind: Pod
metadata: {{name: web, uid: uid-web, labels: {{app: web}}, annotations: {{note: "a \\"b\\""}}}}
spec:
  containers:
  - name: app
    image: {BUSYBOX}
    command: [server]
    volumeMounts: [{mount}]
    resources: {extra.get("resources", "{}")}
  volumes:
  - {volume}
"""
    )


def mounts_of(node: Node, container: str = "app") -> dict[str, Any]:
    (found,) = node.running(None, container)
    return {m.container_path: m for m in node.runtime.container_config(found.id).mounts}


def waiting_reason(node: Node) -> str:
    status = node.status()
    (cs,) = status.container_statuses
    return cs.state.waiting.reason if cs.state.waiting else ""


def events_of(node: Node, reason: str) -> list[str]:
    return [e.message for e in node.kubelet.views.recent_events(reason=reason)]


# --- atomic writer --------------------------------------------------------------------------


def test_atomic_writer_swaps_the_data_link_and_keeps_modes(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    first = {"a": FileProjection(b"1", 0o644), "dir/b": FileProjection(b"2", 0o400)}
    assert write_atomically(str(target), first)
    assert os.path.islink(target / DATA_DIR)
    version = os.readlink(target / DATA_DIR)
    assert version.startswith("..")
    assert os.readlink(target / "a") == f"{DATA_DIR}/a"
    assert (target / "a").read_bytes() == b"1"
    assert (target / "dir" / "b").read_bytes() == b"2"
    assert stat.S_IMODE(os.stat(target / "dir" / "b").st_mode) == 0o400
    assert not write_atomically(str(target), first)  # the same set writes nothing
    assert os.readlink(target / DATA_DIR) == version

    second = {"a": FileProjection(b"changed", 0o600)}
    assert write_atomically(str(target), second)
    assert (target / "a").read_bytes() == b"changed"
    assert stat.S_IMODE(os.stat(target / "a").st_mode) == 0o600
    assert not os.path.lexists(target / "dir")  # gone with the key
    assert not (target / version).exists()  # the old version is removed
    assert sorted(os.listdir(target)) == sorted(["a", DATA_DIR, os.readlink(target / DATA_DIR)])


def test_atomic_writer_gives_files_the_group(tmp_path: Path) -> None:
    gid = os.getgid()
    target = tmp_path / "vol"
    write_atomically(str(target), {"d/f": FileProjection(b"x", 0o440)}, gid=gid)
    version = target / os.readlink(target / DATA_DIR)
    assert os.stat(version / "d" / "f").st_gid == gid
    assert os.stat(version).st_mode & stat.S_ISGID


@pytest.mark.parametrize("bad", ["/abs", "../up", "a/../b", "..hidden"])
def test_atomic_writer_refuses_paths_outside_the_volume(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        write_atomically(str(tmp_path / "vol"), {bad: FileProjection(b"", 0o644)})


# --- hostPath types -------------------------------------------------------------------------


def test_directory_or_create_makes_0755(tmp_path: Path) -> None:
    path = tmp_path / "made" / "here"
    check_host_path(str(path), "DirectoryOrCreate")
    assert path.is_dir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_file_or_create_makes_0644_but_not_its_parent(tmp_path: Path) -> None:
    path = tmp_path / "f"
    check_host_path(str(path), "FileOrCreate")
    assert path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    with pytest.raises(ValueError, match="could not create"):
        check_host_path(str(tmp_path / "no-parent" / "f"), "FileOrCreate")
    assert not (tmp_path / "no-parent").exists()


@pytest.mark.parametrize(
    ("type_", "expected"),
    [
        ("Directory", "is not a directory"),
        ("File", "is not a file"),
        ("Socket", "is not a socket file"),
        ("CharDevice", "is not a character device"),
        ("BlockDevice", "is not a block device"),
    ],
)
def test_types_that_must_exist_create_nothing(tmp_path: Path, type_: str, expected: str) -> None:
    path = tmp_path / "missing"
    with pytest.raises(ValueError, match=f"{path} {expected} \\(type {type_}\\)"):
        check_host_path(str(path), type_)
    assert not path.exists()


def test_each_type_accepts_its_kind(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "s"))
    try:
        check_host_path(str(tmp_path / "d"), "Directory")
        check_host_path(str(tmp_path / "f"), "File")
        check_host_path(str(tmp_path / "s"), "Socket")
        check_host_path("/dev/null", "CharDevice")
        check_host_path(str(tmp_path / "nothing-checked"), "")
        with pytest.raises(ValueError, match="is not a block device"):
            check_host_path("/dev/null", "BlockDevice")
        with pytest.raises(ValueError, match="is not a file"):
            check_host_path(str(tmp_path / "d"), "File")
        with pytest.raises(ValueError, match="is not a directory"):
            check_host_path(str(tmp_path / "f"), "DirectoryOrCreate")
    finally:
        sock.close()


def test_a_failed_host_path_check_waits_in_container_creating(tmp_path: Path) -> None:
    node = node_with(tmp_path, allowed_host_paths=(str(tmp_path),))
    path = tmp_path / "later"
    node.kubelet.set_pods(
        [pod_with_volume(f"{{name: v, hostPath: {{path: {path}, type: Directory}}}}")]
    )
    for _ in range(3):
        node.kubelet.sync()
        node.clock.advance(1)
    assert node.status().phase == "Pending"
    assert waiting_reason(node) == "ContainerCreating"
    assert not node.runtime.find_containers()
    assert not node.runtime.list_sandboxes()  # volumes come before the sandbox
    (message,) = events_of(node, "FailedMount")  # once, not at every retry
    assert message == (
        'MountVolume.SetUp failed for volume "v" : hostPath type check failed:'
        f" {path} is not a directory (type Directory)"
    )
    assert not path.exists()
    path.mkdir()
    node.run_until(lambda: node.status().phase == "Running")
    assert mounts_of(node)["/v"].host_path == str(path)


# --- emptyDir ---------------------------------------------------------------------------------


def test_memory_empty_dir_is_a_sized_tmpfs_and_disk_is_a_0777_bind(tmp_path: Path) -> None:
    node = node_with(tmp_path)
    pod = pod_of(f"""
apiVersion: v1
kind: Pod
metadata: {{name: web, uid: uid-web}}
spec:
  containers:
  - name: app
    image: {BUSYBOX}
    command: [server]
    volumeMounts: [{{name: shm, mountPath: /dev/shm}}, {{name: scratch, mountPath: /scratch}}]
  volumes:
  - {{name: shm, emptyDir: {{medium: Memory, sizeLimit: 64Mi}}}}
  - {{name: scratch, emptyDir: {{}}}}
""")
    node.kubelet.set_pods([pod])
    node.converge()
    mounts = mounts_of(node)
    assert mounts["/dev/shm"].memory_backed
    assert mounts["/dev/shm"].size_limit_bytes == 64 * 2**20
    assert not mounts["/scratch"].memory_backed
    (sandbox,) = node.runtime.list_sandboxes()
    (held,) = node.runtime.sandbox_config(sandbox.id).mounts  # keeps the tmpfs for the pod
    assert (held.host_path, held.memory_backed) == (mounts["/dev/shm"].host_path, True)
    assert stat.S_IMODE(os.stat(mounts["/scratch"].host_path).st_mode) == 0o777


def test_empty_dir_mode_sets_the_directory_and_tmpfs_bits(tmp_path: Path) -> None:
    """The docs' ``emptyDir: {mode: 01777}`` (a shared /tmp with the sticky bit)."""
    node = node_with(tmp_path)
    pod = pod_of(f"""
apiVersion: v1
kind: Pod
metadata: {{name: web, uid: uid-web}}
spec:
  containers:
  - name: app
    image: {BUSYBOX}
    command: [server]
    volumeMounts: [{{name: tmp, mountPath: /tmp}}, {{name: shm, mountPath: /dev/shm}}]
  volumes:
  - {{name: tmp, emptyDir: {{mode: 01777}}}}
  - {{name: shm, emptyDir: {{medium: Memory, mode: 0700}}}}
""")
    node.kubelet.set_pods([pod])
    node.converge()
    mounts = mounts_of(node)
    assert stat.S_IMODE(os.stat(mounts["/tmp"].host_path).st_mode) == 0o1777
    assert mounts["/tmp"].mode is None  # a bind: the directory carries the bits
    assert mounts["/dev/shm"].mode == 0o700
    (sandbox,) = node.runtime.list_sandboxes()
    (held,) = node.runtime.sandbox_config(sandbox.id).mounts
    assert held.mode == 0o700


def test_the_pods_fs_group_decides_an_empty_dirs_mode() -> None:
    (volume,) = pod_with_volume("{name: v, emptyDir: {mode: 0700}}").spec.volumes
    assert empty_dir_mode(volume, None) == 0o700
    assert empty_dir_mode(volume, 2000) == 0o2777  # fsGroup: group-writable, setgid
    (default,) = pod_with_volume("{name: v, emptyDir: {}}").spec.volumes
    assert empty_dir_mode(default, None) == 0o777


@pytest.mark.parametrize("mode", ["-1", "02000", "4096"])
def test_an_empty_dir_mode_out_of_range_is_refused(mode: str) -> None:
    with pytest.raises(
        ValidationError, match=r"emptyDir\.mode: must be a mode between 0 and 01777"
    ):
        pod_with_volume(f"{{name: v, emptyDir: {{mode: {mode}}}}}")


def test_a_huge_pages_empty_dir_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"emptyDir\.medium: not supported: HugePages"):
        pod_with_volume("{name: v, emptyDir: {medium: HugePages}}")


def test_a_disk_empty_dir_over_its_size_limit_evicts_the_pod(tmp_path: Path) -> None:
    node = node_with(tmp_path)
    node.kubelet.set_pods([pod_with_volume("{name: v, emptyDir: {sizeLimit: 1Mi}}")])
    node.converge()
    host = Path(mounts_of(node)["/v"].host_path)
    (host / "small").write_bytes(b"x" * 1000)
    node.clock.advance(5)
    node.kubelet.sync()
    assert node.status().phase == "Running"
    (host / "big").write_bytes(os.urandom(2 * 2**20))
    node.run_until(lambda: node.status().phase == "Failed")
    status = node.status()
    assert status.reason == "Evicted"
    assert status.message == 'Usage of EmptyDir volume "v" exceeds the limit "1Mi". '
    assert events_of(node, "Evicted") == [status.message]
    node.run_until(lambda: not node.running())
    node.clock.advance(30)
    node.kubelet.sync()
    assert node.status().phase == "Failed"  # final for this UID


def test_ephemeral_storage_limit_counts_the_writable_layer(tmp_path: Path) -> None:
    node = node_with(tmp_path)
    node.runtime.script(command="server", behaviour=Behaviour(writable_layer_bytes=3 * 2**20))
    pod = pod_with_volume("{name: v, emptyDir: {}}", resources="{limits: {ephemeral-storage: 2Mi}}")
    node.kubelet.set_pods([pod])
    node.run_until(lambda: node.status().phase == "Failed")
    assert node.status().reason == "Evicted"
    assert node.status().message == (
        "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. "
    )


def test_ephemeral_storage_counts_the_logs(tmp_path: Path) -> None:
    node = node_with(tmp_path)
    node.runtime.script(command="server", behaviour=Behaviour(logs=("x" * 1024,) * 2048))
    node.kubelet.set_pods(
        [pod_with_volume("{name: v, emptyDir: {}}", resources="{limits: {ephemeral-storage: 1Mi}}")]
    )
    node.run_until(lambda: node.status().phase == "Failed")
    assert node.status().reason == "Evicted"


def test_container_limit_is_checked_after_the_pods_total() -> None:
    pod = pod_of(f"""
apiVersion: v1
kind: Pod
metadata: {{name: web}}
spec:
  containers:
  - {{name: a, image: {BUSYBOX}, resources: {{limits: {{ephemeral-storage: 1Mi}}}}}}
  - {{name: b, image: {BUSYBOX}, resources: {{limits: {{ephemeral-storage: 10Mi}}}}}}
""")
    assert local_storage_eviction(pod, {}, {"a": 2**20}) is None
    evicted = local_storage_eviction(pod, {}, {"a": 2**20 + 1})
    assert evicted is not None
    assert evicted[0].message == 'Container a exceeded its local ephemeral storage limit "1Mi". '
    assert evicted[1] == "ephemeralcontainerfs.limit"


# --- configMap, secret, downwardAPI, projected ------------------------------------------------


def test_config_map_volume_waits_for_its_object_and_follows_edits(tmp_path: Path) -> None:
    objects = DictObjects()
    node = node_with(tmp_path, objects)
    node.kubelet.set_pods([pod_with_volume("{name: v, configMap: {name: settings}}")])
    for _ in range(3):
        node.kubelet.sync()
        node.clock.advance(1)
    assert waiting_reason(node) == "ContainerCreating"
    assert events_of(node, "FailedMount") == [
        'MountVolume.SetUp failed for volume "v" : configmap "settings" not found'
    ]
    objects.config_maps[("default", "settings")] = {"mode": b"fast", "level": b"3"}
    node.run_until(lambda: node.status().phase == "Running")
    host = Path(mounts_of(node)["/v"].host_path)
    assert (host / "mode").read_bytes() == b"fast"
    assert stat.S_IMODE(os.stat(host / "mode").st_mode) == 0o644
    objects.config_maps[("default", "settings")] = {"mode": b"slow"}
    node.run_until(lambda: (host / "mode").read_bytes() == b"slow", step=2.0)
    assert not os.path.lexists(host / "level")


def test_config_map_items_modes_and_optional(tmp_path: Path) -> None:
    objects = DictObjects(config_maps={("default", "c"): {"k": b"v", "other": b"o"}})
    node = node_with(tmp_path, objects)
    node.kubelet.set_pods(
        [
            pod_with_volume(
                "{name: v, configMap: {name: c, defaultMode: 0600,"
                " items: [{key: k, path: sub/file}, {key: other, path: o, mode: 0444}]}}"
            )
        ]
    )
    node.converge()
    host = Path(mounts_of(node)["/v"].host_path)
    assert (host / "sub" / "file").read_bytes() == b"v"
    assert stat.S_IMODE(os.stat(host / "sub" / "file").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(host / "o").st_mode) == 0o444
    assert not os.path.lexists(host / "k")


def test_an_optional_missing_config_map_is_an_empty_volume(tmp_path: Path) -> None:
    node = node_with(tmp_path)
    node.kubelet.set_pods([pod_with_volume("{name: v, configMap: {name: absent, optional: true}}")])
    node.converge()
    assert node.status().phase == "Running"
    host = Path(mounts_of(node)["/v"].host_path)
    assert sorted(p for p in os.listdir(host) if not p.startswith("..")) == []


def test_a_missing_key_is_a_failed_mount(tmp_path: Path) -> None:
    objects = DictObjects(config_maps={("default", "c"): {"k": b"v"}})
    node = node_with(tmp_path, objects)
    node.kubelet.set_pods(
        [pod_with_volume("{name: v, configMap: {name: c, items: [{key: nope, path: x}]}}")]
    )
    node.kubelet.sync()
    assert events_of(node, "FailedMount") == [
        'MountVolume.SetUp failed for volume "v" :'
        " configmap references non-existent configmap key: nope"
    ]


def test_secret_files_keep_their_mode_and_the_plugin_dir_is_private(tmp_path: Path) -> None:
    objects = DictObjects(secrets={("default", "creds"): {"password": b"s3cret"}})
    node = node_with(tmp_path, objects)
    node.kubelet.set_pods(
        [pod_with_volume("{name: v, secret: {secretName: creds, defaultMode: 0400}}")]
    )
    node.converge()
    host = Path(mounts_of(node)["/v"].host_path)
    assert (host / "password").read_bytes() == b"s3cret"
    assert stat.S_IMODE(os.stat(host / "password").st_mode) == 0o400
    assert stat.S_IMODE(os.stat(host.parent).st_mode) == 0o700
    assert host.parent.name == "kubernetes.io~secret"


def test_downward_api_files_and_labels_updated_in_place(tmp_path: Path) -> None:
    node = node_with(tmp_path)
    pod = pod_with_volume(
        "{name: v, downwardAPI: {items: ["
        "{path: name, fieldRef: {fieldPath: metadata.name}},"
        "{path: labels, fieldRef: {fieldPath: metadata.labels}},"
        "{path: annotations, fieldRef: {fieldPath: metadata.annotations}},"
        "{path: app, fieldRef: {fieldPath: \"metadata.labels['app']\"}},"
        "{path: mem, resourceFieldRef: {containerName: app, resource: limits.memory,"
        " divisor: 1Mi}},"
        "{path: cpu, resourceFieldRef: {containerName: app, resource: requests.cpu,"
        " divisor: 1m}}]}}",
        resources="{limits: {memory: 64Mi}, requests: {cpu: 250m}}",
    )
    node.kubelet.set_pods([pod])
    node.converge()
    host = Path(mounts_of(node)["/v"].host_path)
    assert (host / "name").read_text() == "web"
    assert (host / "labels").read_text() == 'app="web"'
    # every annotation, the agent's own source annotation too (as a static pod's shows it)
    assert 'note="a \\"b\\""' in (host / "annotations").read_text().splitlines()
    assert (host / "app").read_text() == "web"
    assert (host / "mem").read_text() == "64"
    assert (host / "cpu").read_text() == "250"
    relabelled = attrs.evolve(
        pod, metadata=attrs.evolve(pod.metadata, labels={"app": "web", "tier": "front"})
    )
    node.kubelet.set_pods([relabelled])
    node.run_until(lambda: "tier" in (host / "labels").read_text(), step=2.0)
    assert (host / "labels").read_text() == 'app="web"\ntier="front"'
    assert len(node.all()) == 1  # the container was not restarted


def test_projected_volume_merges_its_sources(tmp_path: Path) -> None:
    objects = DictObjects(
        config_maps={("default", "c"): {"conf": b"c"}},
        secrets={("default", "s"): {"token": b"t"}},
    )
    node = node_with(tmp_path, objects)
    node.kubelet.set_pods(
        [
            pod_with_volume(
                "{name: v, projected: {defaultMode: 0440, sources: ["
                "{configMap: {name: c}}, {secret: {name: s, items: [{key: token, path: t}]}},"
                "{downwardAPI: {items: [{path: ns, fieldRef: {fieldPath: metadata.namespace}}]}}"
                "]}}"
            )
        ]
    )
    node.converge()
    host = Path(mounts_of(node)["/v"].host_path)
    assert {n: (host / n).read_text() for n in ("conf", "t", "ns")} == {
        "conf": "c",
        "t": "t",
        "ns": "default",
    }
    assert stat.S_IMODE(os.stat(host / "t").st_mode) == 0o440


def test_service_account_token_projection_is_refused() -> None:
    with pytest.raises(ValidationError) as info:
        pod_with_volume("{name: v, projected: {sources: [{serviceAccountToken: {path: token}}]}}")
    assert "spec.volumes[0].projected.sources[0].serviceAccountToken: not supported" in str(
        info.value
    )


# --- mounts -----------------------------------------------------------------------------------


def test_sub_path_of_a_config_map_key_binds_the_file(tmp_path: Path) -> None:
    objects = DictObjects(config_maps={("default", "c"): {"app.conf": b"one"}})
    node = node_with(tmp_path, objects)
    node.kubelet.set_pods(
        [
            pod_with_volume(
                "{name: v, configMap: {name: c}}",
                mount="{name: v, mountPath: /etc/app.conf, subPath: app.conf}",
            )
        ]
    )
    node.converge()
    source = mounts_of(node)["/etc/app.conf"].host_path
    assert Path(source).read_bytes() == b"one"
    assert DATA_DIR not in source and not os.path.islink(source)  # today's file, resolved


def test_sub_path_in_an_empty_dir_is_made(tmp_path: Path) -> None:
    node = node_with(tmp_path)
    node.kubelet.set_pods(
        [pod_with_volume("{name: v, emptyDir: {}}", mount="{name: v, mountPath: /d, subPath: a/b}")]
    )
    node.converge()
    source = Path(mounts_of(node)["/d"].host_path)
    assert source.is_dir()
    assert source.parts[-2:] == ("a", "b")


def test_sub_path_leaving_the_volume_fails_the_container(tmp_path: Path) -> None:
    node = node_with(tmp_path)
    node.kubelet.set_pods([pod_with_volume("{name: v, emptyDir: {}}")])
    node.kubelet.sync()
    empty = tmp_path / "root" / "pods" / "uid-web" / "volumes" / "kubernetes.io~empty-dir" / "v"
    (empty / "l").symlink_to("/etc")
    node.kubelet.set_pods(
        [pod_with_volume("{name: v, emptyDir: {}}", mount="{name: v, mountPath: /e, subPath: l}")]
    )
    node.run_until(lambda: waiting_reason(node) == "CreateContainerConfigError")


def test_mount_propagation_reaches_the_runtime(tmp_path: Path) -> None:
    node = node_with(tmp_path, allowed_host_paths=(str(tmp_path),))
    node.kubelet.set_pods(
        [
            pod_with_volume(
                f"{{name: v, hostPath: {{path: {tmp_path}}}}}",
                mount="{name: v, mountPath: /host, mountPropagation: HostToContainer}",
            )
        ]
    )
    node.converge()
    assert mounts_of(node)["/host"].propagation is MountPropagation.HOST_TO_CONTAINER


def test_bidirectional_propagation_needs_privileged() -> None:
    with pytest.raises(ValidationError, match="only to privileged containers"):
        pod_with_volume(
            "{name: v, emptyDir: {}}",
            mount="{name: v, mountPath: /d, mountPropagation: Bidirectional}",
        )


# --- persistentVolumeClaim and image ------------------------------------------------------------

CLAIM = "{name: v, persistentVolumeClaim: {claimName: data, readOnly: true}}"


def test_a_claim_is_refused_without_pvc_dir(tmp_path: Path) -> None:
    node = node_with(tmp_path)
    node.kubelet.set_pods([pod_with_volume(CLAIM)])
    node.kubelet.sync()
    status = node.status()
    assert (status.phase, status.reason) == ("Failed", UNBOUND_CLAIM)
    assert "spec.volumes[0].persistentVolumeClaim" in status.message
    assert "--pvc-dir" in status.message


def test_pvc_dir_maps_the_claim_and_honours_read_only(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    node = node_with(tmp_path, pvc_dir=str(claims))
    node.kubelet.set_pods([pod_with_volume(CLAIM)])
    node.kubelet.sync()
    assert events_of(node, "FailedMount")  # the directory must exist
    (claims / "default" / "data").mkdir(parents=True)
    node.run_until(lambda: node.status().phase == "Running")
    mount = mounts_of(node)["/v"]
    assert mount.host_path == str(claims / "default" / "data")
    assert mount.read_only


def test_image_volumes_are_refused_with_the_reason() -> None:
    with pytest.raises(ValidationError, match=r"spec\.volumes\[0\]\.image: not supported"):
        pod_with_volume("{name: v, image: {reference: busybox:1.36}}")
