"""The manifest tests' shared pieces: ``base`` (the smallest valid pod document) and
``problems_of`` (what reading a document refuses, as the messages say it)."""

from __future__ import annotations

from typing import Any

import pytest

from kubecore._contract.errors import ValidationError
from kubecore._manifest import pod_from_dict


def base() -> dict[str, Any]:
    """A valid pod document: one container ``app`` of ``busybox:1.35``, pod ``web``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "app", "image": "busybox:1.35"}]},
    }


def problems_of(data: Any) -> list[str]:
    """The problems reading ``data`` as a pod raises, as text (it must raise)."""
    with pytest.raises(ValidationError) as info:
        pod_from_dict(data)
    return [str(p) for p in info.value.problems]
