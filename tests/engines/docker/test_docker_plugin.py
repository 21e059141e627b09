"""The ``docker`` runtime as the core finds it: through the pluggy entry point."""

from __future__ import annotations

import pytest

from kubecore._contract.errors import InvalidConfig, PluginError, RuntimeUnavailable
from kubecore._plugins.registry import load_runtime, runtimes
from kubecore_docker import DockerOptions, DockerPuller, DockerRuntime
from tests.engines.docker.conftest import TestEngine

pytestmark = pytest.mark.docker


def test_listed_among_the_installed_runtimes() -> None:
    infos = {info.name: info for info in runtimes()}
    assert "docker" in infos
    assert infos["docker"].description == "Docker Engine via docker-py"


def test_load_runtime_builds_a_working_bundle(engine: TestEngine) -> None:
    bundle = load_runtime(
        "docker",
        base_url=engine.base_url,
        timeout="30",
        max_pool_size="4",
        sandbox_image=engine.pause_image,
    )
    assert bundle.name == "docker"
    assert bundle.health_checker is None
    assert isinstance(bundle.runtime, DockerRuntime)
    assert isinstance(bundle.puller, DockerPuller)
    assert bundle.runtime.options == DockerOptions(
        base_url=engine.base_url, timeout=30.0, max_pool_size=4, sandbox_image=engine.pause_image
    )
    assert bundle.runtime.version().runtime_name == "docker"
    assert bundle.puller.image_status(engine.image) is not None
    bundle.runtime.close()


def test_building_does_not_need_a_running_engine(tmp_path: object) -> None:
    bundle = load_runtime("docker", base_url=f"unix://{tmp_path}/absent.sock", timeout=1)
    with pytest.raises(RuntimeUnavailable):
        bundle.runtime.version()
    bundle.runtime.close()


@pytest.mark.parametrize(
    "options",
    [{"no_such_option": 1}, {"timeout": "-1"}, {"max_pool_size": "many"}],
    ids=["unknown", "negative-timeout", "not-a-number"],
)
def test_bad_options_are_reported_with_their_name(options: dict[str, object]) -> None:
    with pytest.raises(PluginError) as raised:
        load_runtime("docker", **options)
    assert next(iter(options)) in str(raised.value)
    with pytest.raises(InvalidConfig):
        DockerOptions.from_mapping(options)
