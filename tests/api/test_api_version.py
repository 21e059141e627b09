"""The API level ``/version`` reports is the one the node's Pod follows: its newest fields are
those of Kubernetes 1.34, and a field of a later version would have to move the version too."""

from __future__ import annotations

import attrs

from kubecore._api.discovery import KUBERNETES_VERSION, version
from kubecore._model.v1 import Container, EnvVarSource


def test_the_version_is_the_level_of_the_pod_model() -> None:
    assert KUBERNETES_VERSION == (1, 34)
    # 1.34's newest Pod fields are there: the version is not older than the model.
    assert "restart_policy_rules" in attrs.fields_dict(Container)
    assert "file_key_ref" in attrs.fields_dict(EnvVarSource)
    served = version()
    assert (served["major"], served["minor"]) == ("1", "34")
    assert served["gitVersion"].startswith("v1.34.0+kubecore-")
