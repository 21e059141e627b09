"""DockerPuller against a real engine and the local registries of scripts/test-engine.sh."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import tarfile
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kubecore._contract.errors import Conflict, ImagePullError
from kubecore._contract.protocols import Puller
from kubecore._contract.values import PullProgress, RegistryAuth
from kubecore_docker import DockerPuller, DockerRuntime
from tests.engines.docker.conftest import ContainerFactory, SandboxFactory, TestEngine

pytestmark = pytest.mark.docker


@pytest.fixture
def forget(raw: Any) -> Iterator[list[str]]:
    """References to untag after the test (the image itself stays: it is the test image)."""
    names: list[str] = []
    yield names
    for name in names:
        with contextlib.suppress(Exception):
            raw.remove_image(name)


def test_implements_the_protocol(puller: DockerPuller) -> None:
    assert isinstance(puller, Puller)


def test_pull_from_the_local_registry_with_progress(
    puller: DockerPuller, engine: TestEngine, forget: list[str]
) -> None:
    image = engine.registry_image
    forget.append(image)
    with contextlib.suppress(Exception):
        puller.remove_image(image)
    assert puller.image_status(image) is None
    seen: list[PullProgress] = []
    image_id = puller.pull(image, progress=seen.append)
    assert image_id.startswith("sha256:")
    assert seen, "progress reaches the callback"
    assert all(p.image == image for p in seen)
    assert any("Status" in p.status or "Pull" in p.status for p in seen)
    status = puller.image_status(image)
    assert status is not None
    assert status.id == image_id
    assert image in status.tags
    assert status.size > 0
    assert puller.pull(image) == image_id  # pulling again is harmless


def test_a_failing_progress_callback_does_not_fail_the_pull(
    puller: DockerPuller, engine: TestEngine, forget: list[str]
) -> None:
    forget.append(engine.registry_image)

    def broken(_: PullProgress) -> None:
        raise ValueError("callback bug")

    assert puller.pull(engine.registry_image, progress=broken).startswith("sha256:")


def test_pull_from_the_auth_registry_needs_credentials(
    puller: DockerPuller, engine: TestEngine, forget: list[str]
) -> None:
    image = engine.auth_registry_image
    forget.append(image)
    with contextlib.suppress(Exception):
        puller.remove_image(image)
    with pytest.raises(ImagePullError):
        puller.pull(image)
    with pytest.raises(ImagePullError):
        puller.pull(image, auth=RegistryAuth(username=engine.auth_user, password="wrong"))
    assert puller.image_status(image) is None
    auth = RegistryAuth(
        username=engine.auth_user,
        password=engine.auth_password,
        server=image.split("/")[0],
    )
    assert puller.pull(image, auth=auth).startswith("sha256:")
    assert puller.image_status(image) is not None


@pytest.mark.parametrize(
    "image",
    [
        "localhost:5000/kubecore/missing:1",
        "localhost:5000/kubecore/busybox:no-such-tag",
        "127.0.0.1:1/kubecore/busybox:1.35",
    ],
    ids=["missing-repository", "missing-tag", "registry-down"],
)
def test_pull_failures_are_image_pull_errors(puller: DockerPuller, image: str) -> None:
    with pytest.raises(ImagePullError):
        puller.pull(image)


def test_image_status_is_by_exact_reference(puller: DockerPuller, engine: TestEngine) -> None:
    status = puller.image_status(engine.image)
    assert status is not None
    assert engine.image in status.tags
    # The same image by its fully qualified Docker Hub name (library/ only for a bare name).
    hub = "docker.io/" if "/" in engine.image.rsplit(":", 1)[0] else "docker.io/library/"
    assert puller.image_status(hub + engine.image) == status
    assert puller.image_status(status.id) == status
    assert puller.image_status(status.id.removeprefix("sha256:")[:12]) == status
    assert puller.image_status(engine.image.split(":")[0] + ":no-such-tag") is None
    assert puller.image_status("kubecore-test/never-seen:1") is None


def test_list_images_with_sizes(puller: DockerPuller, engine: TestEngine) -> None:
    images = {tag: image for image in puller.list_images() for tag in image.tags}
    assert engine.image in images
    assert engine.pause_image in images
    mine = images[engine.image]
    assert mine.size > 0
    assert mine.created_at > 0
    assert mine.id == images[engine.pause_image].id


def test_remove_image(
    puller: DockerPuller,
    raw: Any,
    engine: TestEngine,
    test_uid: str,
    runtime: DockerRuntime,
    make_sandbox: SandboxFactory,
    make_container: ContainerFactory,
) -> None:
    # A separate image (not just a tag of the test image), built from it.
    tag = f"kubecore-test/removable:{test_uid}"
    dockerfile = f"FROM {engine.image}\nENV KUBECORE_TEST={test_uid}\n"
    for _ in raw.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, decode=True):
        pass
    try:
        found = puller.image_status(tag)
        assert found is not None
        config = make_sandbox()
        sandbox_id = runtime.run_sandbox(config)
        user = runtime.create_container(sandbox_id, make_container(image=tag), config)
        with pytest.raises(Conflict):
            puller.remove_image(found.id)
        runtime.remove_container(user)
        puller.remove_image(tag)
        assert puller.image_status(tag) is None
        assert found.id not in {image.id for image in puller.list_images()}
        puller.remove_image(tag)  # idempotent
    finally:
        with contextlib.suppress(Exception):
            raw.remove_image(tag, force=True)


def test_image_fs_usage(puller: DockerPuller) -> None:
    usage = puller.image_fs_usage()
    assert usage is not None
    assert 0 < usage.used_bytes <= usage.capacity_bytes


MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"


def _registry_put_blob(registry: str, repository: str, data: bytes) -> str:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    start = urllib.request.Request(
        f"http://{registry}/v2/{repository}/blobs/uploads/", method="POST", data=b""
    )
    with urllib.request.urlopen(start, timeout=10) as response:
        location = response.headers["Location"]
    if location.startswith("/"):
        location = f"http://{registry}{location}"
    separator = "&" if "?" in location else "?"
    upload = urllib.request.Request(
        f"{location}{separator}digest={digest}",
        method="PUT",
        data=data,
        headers={"Content-Type": "application/octet-stream"},
    )
    with urllib.request.urlopen(upload, timeout=10):
        pass
    return digest


def _push_broken_image(registry: str, repository: str, tag: str) -> None:
    """An image whose layer does not match its config: the registry serves it, the engine's pull
    then fails inside the progress stream (HTTP 200 already sent)."""
    layer_tar = io.BytesIO()
    with tarfile.open(fileobj=layer_tar, mode="w") as archive:
        payload = b"kubecore\n"
        info = tarfile.TarInfo("hello.txt")
        info.size = len(payload)
        archive.addfile(info, io.BytesIO(payload))
    layer = gzip.compress(layer_tar.getvalue())
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {},
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "0" * 64]},
        }
    ).encode()
    layer_digest = _registry_put_blob(registry, repository, layer)
    config_digest = _registry_put_blob(registry, repository, config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_V2,
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": len(config),
            "digest": config_digest,
        },
        "layers": [
            {
                "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "size": len(layer),
                "digest": layer_digest,
            }
        ],
    }
    put = urllib.request.Request(
        f"http://{registry}/v2/{repository}/manifests/{tag}",
        method="PUT",
        data=json.dumps(manifest).encode(),
        headers={"Content-Type": MANIFEST_V2},
    )
    with urllib.request.urlopen(put, timeout=10):
        pass


def test_an_error_inside_the_pull_stream_is_an_image_pull_error(
    puller: DockerPuller, engine: TestEngine, test_uid: str, forget: list[str]
) -> None:
    registry = engine.registry_image.split("/")[0].replace("localhost", "127.0.0.1")
    _push_broken_image(registry, "kubecore/broken", test_uid)
    image = f"{engine.registry_image.split('/')[0]}/kubecore/broken:{test_uid}"
    forget.append(image)
    seen: list[PullProgress] = []
    with pytest.raises(ImagePullError) as raised:
        puller.pull(image, progress=seen.append)
    assert seen, "the stream had started: the error came inside it"
    assert "pulling" in str(raised.value)
    assert "match" in str(raised.value) or "diff" in str(raised.value).lower(), raised.value
    assert puller.image_status(image) is None
