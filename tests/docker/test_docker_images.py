"""DockerPuller against a real engine and the local registries of scripts/test-engine.sh."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import pytest

from kubecore._errors import Conflict, ImagePullError
from kubecore._runtime import Puller, PullProgress, RegistryAuth
from kubecore_docker import DockerPuller, DockerRuntime
from tests.docker.conftest import ContainerFactory, SandboxFactory, TestEngine

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
    assert puller.image_status("docker.io/library/" + engine.image) == status
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
