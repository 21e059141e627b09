"""``Kubelet`` keeps a small surface (as httpx's ``Client``): its live I/O is grouped under
``streams`` and its read-only reports under ``views``; the names they had on ``Kubelet`` itself
still answer, with a ``DeprecationWarning`` naming the new home."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import kubecore
from kubecore._agent.facets import MOVED
from kubecore.server import KubeletStreams, KubeletViews
from kubecore.testing import FakeNode

MAX_PUBLIC_ATTRIBUTES = 29
"""The 28 of the façade, and ``plan``/``explain`` (preview and explain) less ``pod_terminating``,
which joined the views."""

POD = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: app, image: busybox}
"""


def test_the_kubelet_keeps_a_small_public_surface() -> None:
    public = [name for name in dir(kubecore.Kubelet) if not name.startswith("_")]
    assert len(public) <= MAX_PUBLIC_ATTRIBUTES, sorted(public)
    assert {"streams", "views"} <= set(public)
    assert not set(MOVED) & set(public)


def test_every_moved_name_lives_in_its_group() -> None:
    for group, name in MOVED.values():
        home = {"streams": KubeletStreams, "views": KubeletViews}[group]
        assert hasattr(home, name), (group, name)


def test_the_groups_answer_and_the_old_names_warn_with_the_new_home(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        node.apply(POD)
        node.run_until(lambda: node.status("web").phase == "Running")
        kubelet = node.kubelet
        (app,) = node.containers("web")
        node.runtime.write_log(app.id, "hello")
        assert isinstance(kubelet.streams, KubeletStreams)
        assert b"".join(kubelet.streams.logs("default", "web", "app")) == b"hello\n"
        assert kubelet.views.healthz()[0] is True
        assert kubelet.views.runtime_version().runtime_name
        with pytest.warns(
            DeprecationWarning, match=r"Kubelet\.container_logs is Kubelet\.streams\.logs"
        ):
            old = kubelet.container_logs  # type: ignore[attr-defined]
        assert b"".join(old("default", "web", "app")) == b"hello\n"
        with pytest.warns(DeprecationWarning, match=r"Kubelet\.recent_events is Kubelet\.views"):
            events = kubelet.recent_events(name="web")  # type: ignore[attr-defined]
        assert events == kubelet.views.recent_events(name="web")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(AttributeError, match="no attribute 'not_there'"):
                kubelet.not_there  # type: ignore[attr-defined]  # noqa: B018
