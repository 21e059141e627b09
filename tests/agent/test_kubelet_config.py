"""``KubeletConfig`` refuses what the command's flags refuse, naming the field and why: an
embedder's typo is caught where it is made, not as a busy loop or a crash later."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from kubecore import InvalidKubeletConfig, KubeletConfig
from kubecore._agent.config_bounds import FIELD_BOUNDS
from tests.cli.support import run_cli


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"resync_interval": -1}, "resync_interval: must be a number greater than 0"),
        ({"relist_interval": 0}, "relist_interval: must be a number greater than 0"),
        ({"max_pods": "x"}, "max_pods: must be an integer, got x"),
        ({"max_pods": 0}, "max_pods: must be an integer from 1 to 1e+06, got 0"),
        ({"workers": True}, "workers: must be an integer, got True"),
        ({"pull_qps": float("nan")}, "pull_qps: must be a finite number"),
        ({"node_name": "Bad_Name"}, "node_name: invalid name 'Bad_Name': must be a DNS-1123"),
        ({"node_name": 7}, "node_name: must be a string, got 7"),
        ({"allow_privileged": "yes"}, "allow_privileged: must be true or false"),
        ({"cluster_dns": "10.0.0.10"}, "cluster_dns: must be a tuple of strings"),
        ({"node_labels": ("disk",)}, "node_labels: node label 'disk': expected key=value"),
        (
            {"image_gc_low": 90, "image_gc_high": 85},
            "image_gc_low: must not be above image_gc_high",
        ),
        ({"backoff_initial": 600.0}, "backoff_initial: must not be above backoff_max"),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(values: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidKubeletConfig) as raised:
        KubeletConfig(**values)
    assert message in str(raised.value)
    assert isinstance(raised.value, ValueError)  # what a caller catching ValueError expects


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(InvalidKubeletConfig) as raised:
        KubeletConfig(resync_interval=-1, max_pods="x", node_name="Bad_Name")
    fields = [problem.split(":")[0] for problem in raised.value.problems]
    assert fields == ["resync_interval", "max_pods", "node_name"]


def test_evolving_a_good_config_into_a_bad_one_is_refused() -> None:
    with pytest.raises(InvalidKubeletConfig, match="workers"):
        attrs.evolve(KubeletConfig(), workers=-3)


def test_the_defaults_and_the_bounds_agree() -> None:
    config = KubeletConfig(node_name="", resync_interval=5, node_labels=("disk=ssd",))
    assert config.resync_interval == 5  # an int where a float is asked is a number
    for name, bounds in FIELD_BOUNDS.items():
        assert bounds.contains(getattr(KubeletConfig(), name)), name


def test_the_command_names_the_flag(tmp_path: Path) -> None:
    code, out, err = run_cli(
        "run", "--once", "--node-name", "Bad_Name", "--root-dir", str(tmp_path)
    )
    assert code == 2
    assert "--node-name: invalid name 'Bad_Name'" in out + err
