"""The one image-reference parser (``kubecore._model.imageref``), against Docker's reading of
names."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._model.imageref import (
    DOCKER_HUB,
    ImageRef,
    parse_image_ref,
    registry_host,
    same_image,
)
from kubecore_docker._convert import normalize_reference
from kubecore_fake import FakeRuntime, normalize_image

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("reference", "parsed"),
    [
        ("busybox", ImageRef(DOCKER_HUB, "library/busybox", "latest")),
        ("busybox:1.35", ImageRef(DOCKER_HUB, "library/busybox", "1.35")),
        ("library/busybox", ImageRef(DOCKER_HUB, "library/busybox", "latest")),
        ("docker.io/library/busybox:latest", ImageRef(DOCKER_HUB, "library/busybox", "latest")),
        ("index.docker.io/busybox", ImageRef(DOCKER_HUB, "library/busybox", "latest")),
        ("user/app:v1", ImageRef(DOCKER_HUB, "user/app", "v1")),
        ("localhost:5000/x/y:tag", ImageRef("localhost:5000", "x/y", "tag")),
        ("localhost/app", ImageRef("localhost", "app", "latest")),
        ("Registry.Example.COM/app", ImageRef("registry.example.com", "app", "latest")),
        ("Upper/app", ImageRef("upper", "app", "latest")),  # an upper-case host, as Docker
        (f"repo@{DIGEST}", ImageRef(DOCKER_HUB, "library/repo", "", DIGEST)),
        (f"quay.io/o/r:1@{DIGEST}", ImageRef("quay.io", "o/r", "1", DIGEST)),
    ],
)
def test_parse(reference: str, parsed: ImageRef) -> None:
    assert parse_image_ref(reference) == parsed


@pytest.mark.parametrize(
    ("reference", "familiar", "canonical"),
    [
        ("busybox", "busybox:latest", "docker.io/library/busybox:latest"),
        ("docker.io/library/busybox:1.35", "busybox:1.35", "docker.io/library/busybox:1.35"),
        ("docker.io/user/app", "user/app:latest", "docker.io/user/app:latest"),
        ("docker.io/my.org/app", "docker.io/my.org/app:latest", "docker.io/my.org/app:latest"),
        ("localhost:5000/x/y:tag", "localhost:5000/x/y:tag", "localhost:5000/x/y:tag"),
        (f"repo:1@{DIGEST}", f"repo@{DIGEST}", f"docker.io/library/repo@{DIGEST}"),
    ],
)
def test_familiar_and_canonical_forms(reference: str, familiar: str, canonical: str) -> None:
    ref = parse_image_ref(reference)
    assert (ref.familiar(), ref.canonical()) == (familiar, canonical)


_COMPONENT = st.from_regex(r"[a-z0-9]+([._-][a-z0-9]+)?", fullmatch=True)
_TAG = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True)
_HOSTS = {
    "": DOCKER_HUB,
    "docker.io/": DOCKER_HUB,
    "index.docker.io/": DOCKER_HUB,
    "registry-1.docker.io/": DOCKER_HUB,
    "localhost/": "localhost",
    "localhost:5000/": "localhost:5000",
    "127.0.0.1:5001/": "127.0.0.1:5001",
    "quay.io/": "quay.io",
    "Registry.Example.COM/": "registry.example.com",
}


@given(
    host=st.sampled_from(sorted(_HOSTS)),
    path=st.lists(_COMPONENT, min_size=1, max_size=3),
    tag=st.none() | _TAG,
    digest=st.none() | st.just(DIGEST),
)
@example(host="", path=["localhost"], tag=None, digest=None)  # a Hub image named localhost
@example(host="", path=["a.b"], tag="1", digest=None)  # a dotted single name stays on the Hub
@example(host="docker.io/", path=["0.0", "0"], tag=None, digest=None)  # a Hub path like a host
def test_parse_reads_each_part(
    host: str, path: list[str], tag: str | None, digest: str | None
) -> None:
    reference = host + "/".join(path)
    if tag is not None:
        reference += f":{tag}"
    if digest is not None:
        reference += f"@{digest}"
    if not host and len(path) > 1 and ("." in path[0] or path[0] == "localhost"):
        return  # the first component then names a registry (covered by the table above)
    ref = parse_image_ref(reference)
    assert ref.registry == _HOSTS[host]
    repository = "/".join(path)
    if ref.registry == DOCKER_HUB and len(path) == 1:
        repository = "library/" + repository
    assert ref.repository == repository
    assert ref.digest == (digest or "")
    assert ref.tag == (tag if tag is not None else ("" if digest else "latest"))
    # Every spelling of the reference names the same image, and the forms are fixed points.
    for form in (ref.familiar(), ref.canonical()):
        assert same_image(form, reference)
        assert parse_image_ref(form).familiar() == ref.familiar()
        assert parse_image_ref(form).canonical() == ref.canonical()
    assert registry_host(reference) == ref.registry


@given(st.text(max_size=40))
def test_parse_never_raises_and_is_idempotent(text: str) -> None:
    familiar = parse_image_ref(text).familiar()
    assert parse_image_ref(familiar).familiar() == familiar


def test_the_runtimes_and_credentials_read_names_alike() -> None:
    for reference in ("busybox", "docker.io/library/busybox:latest", "localhost:5000/x/y:tag"):
        assert normalize_image(reference) == normalize_reference(reference)
    assert normalize_image("docker.io/library/busybox:latest") == normalize_image("busybox")


def test_the_fake_stores_a_short_and_a_qualified_name_as_one_image() -> None:
    runtime = FakeRuntime()
    runtime.pull("busybox")
    found = runtime.image_status("docker.io/library/busybox:latest")
    assert found is not None and found.tags == ("busybox:latest",)
    assert len(runtime.list_images()) == 1
    runtime.pull("index.docker.io/library/busybox:latest")
    assert len(runtime.list_images()) == 1
