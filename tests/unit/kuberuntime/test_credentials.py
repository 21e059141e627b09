"""Registry credentials: Docker config parsing, host matching, KeyringPuller, pod pull secrets."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubecore._agent.kubelet import Kubelet, KubeletConfig
from kubecore._contract.errors import RegistryConfigError
from kubecore._contract.protocols import Puller
from kubecore._contract.values import Image, ImageFsUsage, PullProgress, RegistryAuth
from kubecore._kuberuntime.credentials import (
    ChainKeyring,
    DockerKeyring,
    KeyringPuller,
    normalize_server,
    pod_registry_auth,
    registry_host,
)
from kubecore._model.imageref import DOCKER_HUB
from kubecore._model.v1 import Container, LocalObjectReference, ObjectMeta, Pod, PodSpec
from kubecore._util.clock import ManualClock
from kubecore_fake import FakeHealthChecker, FakeRuntime


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def config(**auths: Any) -> dict[str, Any]:
    return {"auths": auths}


# --- registry hosts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "host"),
    [
        ("busybox", DOCKER_HUB),
        ("busybox:1.35", DOCKER_HUB),
        ("library/busybox", DOCKER_HUB),
        ("user/app:v1", DOCKER_HUB),
        ("docker.io/library/busybox", DOCKER_HUB),
        ("index.docker.io/user/app", DOCKER_HUB),
        ("registry-1.docker.io/user/app", DOCKER_HUB),
        ("localhost/app", "localhost"),
        ("localhost:5001/kubecore/busybox:1.35", "localhost:5001"),
        ("127.0.0.1:5001/kubecore/busybox:1.35", "127.0.0.1:5001"),
        ("quay.io/org/app@sha256:" + "a" * 64, "quay.io"),
        ("Registry.Example.COM/app", "registry.example.com"),
        ("registry.k8s.io/pause:3.9", "registry.k8s.io"),
    ],
)
def test_registry_host(image: str, host: str) -> None:
    assert registry_host(image) == host


@pytest.mark.parametrize(
    ("server", "host"),
    [
        ("https://index.docker.io/v1/", DOCKER_HUB),
        ("index.docker.io", DOCKER_HUB),
        ("docker.io", DOCKER_HUB),
        ("http://localhost:5001", "localhost:5001"),
        ("localhost:5001", "localhost:5001"),
        ("https://quay.io/v2/", "quay.io"),
        (" 127.0.0.1:5001/ ", "127.0.0.1:5001"),
    ],
)
def test_normalize_server(server: str, host: str) -> None:
    assert normalize_server(server) == host


@settings(max_examples=50)
@given(
    host=st.from_regex(r"[a-z][a-z0-9]{0,8}\.[a-z]{2,5}(:[1-9][0-9]{0,4})?", fullmatch=True),
    path=st.from_regex(r"[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,2}", fullmatch=True),
    tag=st.from_regex(r"(:[a-z0-9]{1,8})?", fullmatch=True),
)
def test_a_login_for_a_host_covers_every_image_on_it(host: str, path: str, tag: str) -> None:
    keyring = DockerKeyring.from_mapping(config(**{f"https://{host}/v1/": {"auth": b64("u:p")}}))
    found = keyring.lookup(f"{host}/{path}{tag}")
    assert found is not None and (found.username, found.password) == ("u", "p")
    assert keyring.lookup(f"{path}{tag}") is None  # Docker Hub, not this host


# --- parsing -------------------------------------------------------------------------------


def test_auth_field_is_base64_user_password() -> None:
    keyring = DockerKeyring.from_mapping(
        config(**{"localhost:5001": {"auth": b64("kubecore:pa:ss")}})
    )
    auth = keyring.lookup("localhost:5001/kubecore/busybox:1.35")
    assert auth == RegistryAuth(username="kubecore", password="pa:ss", server="localhost:5001")


def test_unpadded_base64_is_accepted() -> None:
    raw = b64("ab:c").rstrip("=")
    keyring = DockerKeyring.from_mapping(config(**{"r.io": {"auth": raw}}))
    assert keyring.lookup("r.io/x") == RegistryAuth(username="ab", password="c", server="r.io")


def test_username_and_password_fields() -> None:
    keyring = DockerKeyring.from_mapping(
        config(**{"r.io": {"username": "me", "password": "secret", "email": "x@y"}})
    )
    assert keyring.lookup("r.io/app") == RegistryAuth("me", "secret", "r.io")


def test_auth_wins_over_username_and_password() -> None:
    keyring = DockerKeyring.from_mapping(
        config(**{"r.io": {"auth": b64("a:b"), "username": "c", "password": "d"}})
    )
    found = keyring.lookup("r.io/app")
    assert found is not None and (found.username, found.password) == ("a", "b")


def test_identity_token() -> None:
    keyring = DockerKeyring.from_mapping(config(**{"r.io": {"identitytoken": "tok"}}))
    assert keyring.lookup("r.io/app") == RegistryAuth(server="r.io", identity_token="tok")


def test_docker_hub_login_matches_short_names() -> None:
    keyring = DockerKeyring.from_mapping(
        config(**{"https://index.docker.io/v1/": {"auth": b64("hub:pw")}})
    )
    for image in ("busybox", "library/busybox:1.35", "docker.io/user/app"):
        found = keyring.lookup(image)
        assert found is not None and found.username == "hub"
        assert found.server == "https://index.docker.io/v1/"


def test_localhost_and_loopback_address_are_different_hosts() -> None:
    keyring = DockerKeyring.from_mapping(config(**{"localhost:5001": {"auth": b64("u:p")}}))
    assert keyring.lookup("localhost:5001/app") is not None
    assert keyring.lookup("127.0.0.1:5001/app") is None
    assert keyring.lookup("localhost:5000/app") is None
    assert keyring.lookup("localhost/app") is None


def test_entries_without_credentials_are_skipped() -> None:
    keyring = DockerKeyring.from_mapping(
        {"auths": {"r.io": {}, "s.io": {"auth": ""}}, "credsStore": "desktop"}
    )
    assert keyring.auths == {}
    assert keyring.lookup("r.io/app") is None


def test_legacy_dockercfg_form() -> None:
    keyring = DockerKeyring.from_mapping({"https://r.io": {"auth": b64("old:pw")}})
    found = keyring.lookup("r.io/app")
    assert found is not None and found.username == "old"


def test_config_without_auths_is_empty() -> None:
    assert DockerKeyring.from_mapping({"auths": None}).auths == {}
    assert DockerKeyring.from_mapping({"credsStore": "pass"}).auths == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "expected a JSON object"),
        ({"auths": []}, "auths: expected a mapping"),
        ({"auths": {"r.io": "x"}}, "auths['r.io']: expected an object"),
        ({"auths": {"r.io": {"auth": 3}}}, "auths['r.io'].auth: expected a base64"),
        ({"auths": {"r.io": {"auth": "!!!"}}}, "not base64"),
        ({"auths": {"r.io": {"auth": b64("nocolon")}}}, "no 'user:password' pair"),
        ({"auths": {"r.io": {"username": 7}}}, "auths['r.io'].username: expected a string"),
    ],
)
def test_malformed_config_names_the_entry(data: object, message: str) -> None:
    with pytest.raises(RegistryConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        DockerKeyring.from_mapping(data)


def test_from_file_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config(**{"localhost:5001": {"auth": b64("u:p")}})))
    keyring = DockerKeyring.from_file(path)
    assert keyring.source == str(path)
    assert keyring.lookup("localhost:5001/a") is not None
    with pytest.raises(RegistryConfigError, match="cannot read docker config"):
        DockerKeyring.from_file(tmp_path / "missing.json")
    path.write_text("{not json")
    with pytest.raises(RegistryConfigError, match="not JSON"):
        DockerKeyring.from_file(path)


def test_from_environment(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config(**{"r.io": {"auth": b64("e:v")}})))
    keyring = DockerKeyring.from_environment({"DOCKER_CONFIG": str(tmp_path)})
    found = keyring.lookup("r.io/app")
    assert found is not None and found.username == "e"
    empty = DockerKeyring.from_environment({"DOCKER_CONFIG": str(tmp_path / "none")})
    assert empty.auths == {}


def test_chain_keyring_first_match_wins() -> None:
    first = DockerKeyring.from_mapping(config(**{"a.io": {"auth": b64("one:1")}}))
    second = DockerKeyring.from_mapping(
        config(**{"a.io": {"auth": b64("two:2")}, "b.io": {"auth": b64("three:3")}})
    )
    chain = ChainKeyring((first, second))
    assert chain.lookup("a.io/x").username == "one"  # type: ignore[union-attr]
    assert chain.lookup("b.io/x").username == "three"  # type: ignore[union-attr]
    assert chain.lookup("c.io/x") is None


# --- KeyringPuller -------------------------------------------------------------------------


class RecordingPuller:
    def __init__(self) -> None:
        self.pulls: list[tuple[str, RegistryAuth | None]] = []
        self.removed: list[str] = []

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Any = None,
    ) -> str:
        self.pulls.append((image, auth))
        if progress is not None:
            progress(PullProgress(image, "done"))
        return "sha256:1"

    def image_status(self, image: str) -> Image | None:
        return Image(id="sha256:1", tags=(image,))

    def list_images(self) -> list[Image]:
        return [Image(id="sha256:1")]

    def remove_image(self, image: str) -> None:
        self.removed.append(image)

    def image_fs_usage(self) -> ImageFsUsage | None:
        return ImageFsUsage(1, 2)


def test_keyring_puller_adds_auth_only_when_the_call_has_none() -> None:
    inner = RecordingPuller()
    keyring = DockerKeyring.from_mapping(config(**{"r.io": {"auth": b64("k:v")}}))
    puller = KeyringPuller(inner, keyring)
    assert isinstance(puller, Puller)
    explicit = RegistryAuth("pod", "secret", "r.io")
    seen: list[PullProgress] = []
    assert puller.pull("r.io/app", progress=seen.append) == "sha256:1"
    puller.pull("r.io/app", explicit)
    puller.pull("other.io/app")
    assert inner.pulls == [
        ("r.io/app", RegistryAuth("k", "v", "r.io")),
        ("r.io/app", explicit),
        ("other.io/app", None),
    ]
    assert seen == [PullProgress("r.io/app", "done")]


def test_keyring_puller_delegates_the_rest() -> None:
    inner = RecordingPuller()
    puller = KeyringPuller(inner, DockerKeyring())
    assert puller.image_status("x") == Image(id="sha256:1", tags=("x",))
    assert puller.list_images() == [Image(id="sha256:1")]
    assert puller.image_fs_usage() == ImageFsUsage(1, 2)
    puller.remove_image("x")
    assert inner.removed == ["x"]


# --- pod pull secrets ----------------------------------------------------------------------

PRIVATE = "private.example/team/app:1"


def pod(*secrets: str, namespace: str = "team", image: str = PRIVATE) -> Pod:
    return Pod(
        ObjectMeta(name="web", namespace=namespace, uid=f"uid-{namespace}-web"),
        PodSpec(
            containers=(Container(name="app", image=image, command=("server",)),),
            image_pull_secrets=tuple(LocalObjectReference(s) for s in secrets),
        ),
    )


def keyring_for(user: str, host: str = "private.example") -> DockerKeyring:
    return DockerKeyring.from_mapping(config(**{host: {"auth": b64(f"{user}:pw")}}))


def test_pod_registry_auth_follows_the_pods_secrets_in_order() -> None:
    secrets = {
        ("team", "other-host"): keyring_for("nope", host="elsewhere.example"),
        ("team", "first"): keyring_for("first"),
        ("team", "second"): keyring_for("second"),
        ("other", "first"): keyring_for("wrong-namespace"),
    }
    found = pod_registry_auth(pod("missing", "other-host", "first", "second"), PRIVATE, secrets)
    assert found is not None and found.username == "first"
    assert pod_registry_auth(pod("second"), PRIVATE, secrets).username == "second"  # type: ignore[union-attr]
    assert pod_registry_auth(pod(), PRIVATE, secrets) is None
    assert pod_registry_auth(pod("first", namespace="nobody"), PRIVATE, secrets) is None


def node(
    tmp_path: Path, *, keyring: DockerKeyring | None = None, **kwargs: Any
) -> tuple[FakeRuntime, Kubelet]:
    clock = ManualClock()
    runtime = FakeRuntime(clock=clock, images=[PRIVATE])
    runtime.require_auth(PRIVATE, RegistryAuth("robot", "pw"))
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "resolv.conf").write_text("nameserver 192.0.2.53\n")
    puller: Puller = runtime if keyring is None else KeyringPuller(runtime, keyring)
    kubelet = Kubelet(
        runtime,
        puller,
        config=KubeletConfig(
            root_dir=str(tmp_path / "root"), resolv_conf=str(tmp_path / "resolv.conf")
        ),
        health_checker=FakeHealthChecker(runtime),
        clock=clock,
        **kwargs,
    )
    return runtime, kubelet


def waiting_reason(kubelet: Kubelet) -> str:
    found = kubelet.get_pod("team", "web")
    assert found is not None and found.status is not None
    (status,) = found.status.container_statuses
    return status.state.waiting.reason if status.state.waiting else "running"


def test_agent_pulls_with_the_pods_pull_secret(tmp_path: Path) -> None:
    secrets = {("team", "regcred"): keyring_for("robot")}
    _, kubelet = node(tmp_path, pull_secrets=secrets)
    kubelet.set_pods([pod("regcred")])
    assert kubelet.sync_until_converged(max_syncs=10)
    assert waiting_reason(kubelet) == "running"
    assert "Pulled" in kubelet._rooms.events.reasons()


def test_agent_without_the_secret_cannot_pull(tmp_path: Path) -> None:
    runtime, kubelet = node(tmp_path, pull_secrets={("team", "regcred"): keyring_for("robot")})
    kubelet.set_pods([pod()])  # names no secret
    kubelet.sync_until_converged(max_syncs=3)
    assert waiting_reason(kubelet) in ("ErrImagePull", "ImagePullBackOff")
    assert not runtime.find_containers("app")


def test_node_keyring_through_keyring_puller(tmp_path: Path) -> None:
    runtime, kubelet = node(tmp_path, keyring=keyring_for("robot"))
    kubelet.set_pods([pod()])
    assert kubelet.sync_until_converged(max_syncs=10)
    assert waiting_reason(kubelet) == "running"
    assert len(runtime.find_containers("app")) == 1


def test_pod_secret_wins_over_the_node_keyring(tmp_path: Path) -> None:
    secrets = {("team", "regcred"): keyring_for("robot")}
    _, kubelet = node(tmp_path, keyring=keyring_for("stale"), pull_secrets=secrets)
    kubelet.set_pods([pod("regcred")])
    assert kubelet.sync_until_converged(max_syncs=10)
    assert waiting_reason(kubelet) == "running"


def test_wrong_node_credentials_fail_the_pull(tmp_path: Path) -> None:
    _, kubelet = node(tmp_path, keyring=keyring_for("stale"))
    kubelet.set_pods([pod()])
    kubelet.sync_until_converged(max_syncs=3)
    assert waiting_reason(kubelet) in ("ErrImagePull", "ImagePullBackOff")
    assert "Failed" in kubelet._rooms.events.reasons()


# --- the command line ----------------------------------------------------------------------


def test_cli_registry_config_reads_the_file(tmp_path: Path) -> None:
    from kubecore._cli import read_registry_config

    assert read_registry_config("") is None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config(**{"localhost:5001": {"auth": b64("u:p")}})))
    keyring = read_registry_config(str(path))
    assert keyring is not None and keyring.lookup("localhost:5001/x") is not None


@pytest.mark.parametrize("content", [None, "{broken", '{"auths": {"r.io": {"auth": "%%"}}}'])
def test_cli_bad_registry_config_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None
) -> None:
    from kubecore._cli import main

    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    manifests = tmp_path / "pods"
    manifests.mkdir()
    code = main(
        ["run", str(manifests), "--once", "--port", "0", "--registry-config", str(path)],
        out=io.StringIO(),
    )
    assert code == 2
    assert "--registry-config" in capsys.readouterr().err
