"""Checks of the image service: status, lists, pulls, removal, short and qualified names."""

from __future__ import annotations

import pytest

from kubecore._contract.errors import (
    Conflict,
    ImagePullError,
)
from kubecore._model.imageref import parse_image_ref
from kubecore.testing.conformance._fixtures import PluginFixtures
from kubecore.testing.conformance._harness import Harness


class ImageChecks(PluginFixtures):
    """Images pulled, used, listed and removed."""

    # -- images --------------------------------------------------------------------------------

    def test_image_status_and_list(self, harness: Harness) -> None:
        image = harness.puller.image_status(harness.workloads.image)
        assert image is not None and image.id
        assert image.id in {i.id for i in harness.puller.list_images()}
        usage = harness.puller.image_fs_usage()
        if usage is not None:
            assert usage.used_bytes >= 0
            assert usage.capacity_bytes == 0 or usage.used_bytes <= usage.capacity_bytes
        assert harness.puller.image_status(harness.workloads.absent_image) is None

    def test_pull_of_a_missing_image_fails(self, harness: Harness) -> None:
        with pytest.raises(ImagePullError):
            harness.puller.pull(harness.workloads.absent_image)

    def test_pull_use_and_remove_an_image(self, harness: Harness) -> None:
        reference = harness.workloads.pullable_image
        if reference is None:
            harness.unseen("the workloads have no pullable_image")
        puller = harness.puller
        image_id = puller.pull(reference)
        assert image_id
        status = puller.image_status(reference)
        assert status is not None and status.id == image_id
        assert image_id in {i.id for i in puller.list_images()}

        sandbox = harness.run_sandbox()
        container_id = harness.create(sandbox, harness.workloads.run_forever, image=reference)
        # Removing one of several tags only untags (as Docker does); by id it must refuse.
        with pytest.raises(Conflict):
            puller.remove_image(reference if len(status.tags) <= 1 else image_id)
        harness.runtime.remove_container(container_id)

        puller.remove_image(reference)
        assert puller.image_status(reference) is None
        puller.remove_image(reference)

    # -- image names ------------------------------------------------------------------------------

    def test_short_and_qualified_names_are_one_image(self, harness: Harness) -> None:
        """``busybox`` and ``docker.io/library/busybox:latest`` name one image (as on Docker)."""
        puller = harness.puller
        ref = parse_image_ref(harness.workloads.image)
        short, qualified = puller.image_status(ref.familiar()), puller.image_status(ref.canonical())
        assert short is not None and qualified is not None and short.id == qualified.id
        assert [i.id for i in puller.list_images()].count(short.id) == 1

        reference = harness.workloads.pullable_image
        if reference is None:
            return
        pullable = parse_image_ref(reference)
        was_present = puller.image_status(reference) is not None
        image_id = puller.pull(pullable.canonical())
        try:
            found = puller.image_status(pullable.familiar())
            assert found is not None and found.id == image_id
            assert [i.id for i in puller.list_images()].count(image_id) == 1
        finally:
            if not was_present:
                puller.remove_image(pullable.familiar())
        if not was_present:
            assert puller.image_status(pullable.canonical()) is None
