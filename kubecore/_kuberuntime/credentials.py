"""Registry credentials: a Docker config file as a keyring, and pulls that use it.

``DockerKeyring`` reads the ``auths`` of a Docker client config (``$DOCKER_CONFIG/config.json``,
``~/.docker/config.json``, a file given by path, or a Kubernetes ``.dockerconfigjson`` /
legacy ``.dockercfg`` secret's data) and answers ``lookup(image)`` by the image's registry host,
as the ``docker`` command does: ``busybox`` and ``library/busybox`` are on ``docker.io``;
``localhost:5001`` and ``127.0.0.1:5001`` are different hosts. Credential stores and helpers
(``credsStore``, ``credHelpers``) are external programs and are not consulted.

``KeyringPuller`` wraps any ``Puller``: a pull without credentials gets the keyring's, so an
agent needs no change to pull from private registries. A pod's ``imagePullSecrets`` are resolved
by ``pod_registry_auth`` against a mapping ``(namespace, secret name) -> keyring`` given to the
agent (``Kubelet(..., pull_secrets=...)``); the pod's secrets win over the node's keyring.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs

from kubecore._contract.bases import PullerWrapper
from kubecore._contract.errors import RegistryConfigError as RegistryConfigError
from kubecore._contract.protocols import Puller
from kubecore._contract.values import PullProgress, RegistryAuth
from kubecore._model.imageref import registry_host as registry_host  # public through kubecore
from kubecore._model.imageref import registry_of
from kubecore._model.v1 import (
    SECRET_TYPE_DOCKER_CONFIG_JSON,
    SECRET_TYPE_DOCKERCFG,
    Pod,
    Secret,
)

logger = logging.getLogger(__name__)


class Keyring(Protocol):
    """Finds the registry credentials for an image (``DockerKeyring``, ``secret_keyring``,
    ``ChainKeyring``)."""

    def lookup(self, image: str) -> RegistryAuth | None:
        """Credentials for pulling ``image``, or None."""
        ...


def normalize_server(server: str) -> str:
    """A config file key (``https://index.docker.io/v1/``, ``http://localhost:5001``,
    ``quay.io``) as a registry host: scheme and path dropped, Docker Hub's aliases folded."""
    text = server.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    return registry_of(text.split("/", 1)[0])


def _decode_auth(server: str, value: object) -> tuple[str, str]:
    if not isinstance(value, str):
        raise RegistryConfigError(f"auths[{server!r}].auth: expected a base64 string")
    try:
        decoded = base64.b64decode(value.strip() + "=" * (-len(value.strip()) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, ValueError) as exc:
        raise RegistryConfigError(f"auths[{server!r}].auth: not base64 of 'user:password'") from exc
    username, sep, password = text.partition(":")
    if not sep:
        raise RegistryConfigError(f"auths[{server!r}].auth: decodes to no 'user:password' pair")
    return username, password


def _string(server: str, entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RegistryConfigError(f"auths[{server!r}].{key}: expected a string")
    return value


def auth_from_entry(server: str, entry: Mapping[str, Any]) -> RegistryAuth | None:
    """One ``auths`` entry as a ``RegistryAuth`` (None when it holds no credentials).

    ``auth`` (base64 ``user:password``) wins over ``username`` / ``password``, as in Docker.
    """
    username = _string(server, entry, "username")
    password = _string(server, entry, "password")
    token = _string(server, entry, "identitytoken")
    if entry.get("auth"):
        username, password = _decode_auth(server, entry["auth"])
    if not (username or password or token):
        return None
    return RegistryAuth(username=username, password=password, server=server, identity_token=token)


def _entries(data: Mapping[str, Any]) -> Mapping[str, Any]:
    if "auths" in data:
        auths = data["auths"]
        if auths is None:
            return {}
        if not isinstance(auths, Mapping):
            raise RegistryConfigError("auths: expected a mapping of registry -> credentials")
        return auths
    # The legacy ``.dockercfg`` form: registry -> entry at the top level.
    return {k: v for k, v in data.items() if isinstance(v, Mapping)}


@attrs.frozen
class DockerKeyring:
    """Registry host -> credentials, from Docker config files."""

    auths: Mapping[str, RegistryAuth] = attrs.field(factory=dict)
    """By normalized registry host (``docker.io``, ``localhost:5001``)."""
    source: str = ""
    """Where the entries came from (for messages)."""

    @classmethod
    def from_mapping(cls, data: object, source: str = "") -> DockerKeyring:
        """From a parsed config (``{"auths": {...}}``) or a legacy ``.dockercfg`` mapping.

        Raises ``RegistryConfigError`` on a malformed entry, naming it.
        """
        if not isinstance(data, Mapping):
            raise RegistryConfigError(f"{source or 'docker config'}: expected a JSON object")
        found: dict[str, RegistryAuth] = {}
        for server, entry in _entries(data).items():
            if not isinstance(entry, Mapping):
                raise RegistryConfigError(f"auths[{server!r}]: expected an object")
            try:
                auth = auth_from_entry(str(server), entry)
            except RegistryConfigError as exc:
                raise RegistryConfigError(f"{source}: {exc}" if source else str(exc)) from None
            if auth is not None:
                found[normalize_server(str(server))] = auth
        if isinstance(data.get("credsStore"), str) or data.get("credHelpers"):
            logger.info(
                "%s names credential helpers; kubecore reads only the credentials in the file",
                source or "docker config",
            )
        return cls(found, source)

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "") -> DockerKeyring:
        """A keyring from the text of a Docker ``config.json`` (or of a ``.dockerconfigjson``
        Secret). Raises ``RegistryConfigError`` naming ``source`` if it is not JSON or not a
        Docker config."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RegistryConfigError(f"{source or 'docker config'}: not JSON: {exc}") from None
        return cls.from_mapping(data, source)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> DockerKeyring:
        """Read a config file; raises ``RegistryConfigError`` if it is missing or malformed."""
        try:
            text = Path(path).read_bytes()
        except OSError as exc:
            raise RegistryConfigError(f"cannot read docker config {path}: {exc}") from None
        return cls.from_json(text, str(path))

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> DockerKeyring:
        """``$DOCKER_CONFIG/config.json``, else ``~/.docker/config.json``; empty if absent."""
        env = os.environ if environ is None else environ
        directory = env.get("DOCKER_CONFIG") or os.path.join(Path.home(), ".docker")
        path = os.path.join(directory, "config.json")
        if not os.path.isfile(path):
            return cls(source=path)
        return cls.from_file(path)

    def lookup(self, image: str) -> RegistryAuth | None:
        return self.auths.get(registry_host(image))


@attrs.frozen
class ChainKeyring:
    """The first keyring with credentials for the image wins."""

    keyrings: tuple[Keyring, ...] = ()

    def lookup(self, image: str) -> RegistryAuth | None:
        for keyring in self.keyrings:
            found = keyring.lookup(image)
            if found is not None:
                return found
        return None


_DOCKER_SECRET_KEYS = {
    SECRET_TYPE_DOCKER_CONFIG_JSON: ".dockerconfigjson",
    SECRET_TYPE_DOCKERCFG: ".dockercfg",
}


def secret_keyring(secret: Secret) -> DockerKeyring | None:
    """The keyring of a ``kubernetes.io/dockerconfigjson`` or ``kubernetes.io/dockercfg``
    Secret; None for another type or a malformed config (logged, without its values)."""
    key = _DOCKER_SECRET_KEYS.get(secret.type)
    if key is None or key not in secret.data:
        return None
    where = f"secret {secret.metadata.namespace}/{secret.metadata.name}"
    try:
        return DockerKeyring.from_json(secret.data[key], where)
    except RegistryConfigError as exc:
        logger.warning("pull secret unusable: %s", exc)
        return None


class SecretReader(Protocol):
    def get_secret(self, namespace: str, name: str) -> Secret | None: ...


class PullSecrets(Mapping[tuple[str, str], Keyring]):
    """``(namespace, name) -> keyring``: the keyrings given to the agent, then the Secret
    documents of a docker config type in ``secrets`` (read at each lookup, so an updated
    Secret is used by the next pull)."""

    def __init__(
        self, secrets: SecretReader, given: Mapping[tuple[str, str], Keyring] | None = None
    ) -> None:
        self._secrets = secrets
        self._given = given or {}

    def __getitem__(self, key: tuple[str, str]) -> Keyring:
        found = self._given.get(key)
        if found is not None:
            return found
        secret = self._secrets.get_secret(*key)
        keyring = secret_keyring(secret) if secret is not None else None
        if keyring is None:
            raise KeyError(key)
        return keyring

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._given)

    def __len__(self) -> int:
        return len(self._given)


def pod_registry_auth(
    pod: Pod, image: str, pull_secrets: Mapping[tuple[str, str], Keyring]
) -> RegistryAuth | None:
    """Credentials for ``image`` from the pod's ``imagePullSecrets`` (in their order).

    A secret the mapping does not hold is skipped (Kubernetes pulls without it, and warns).
    """
    namespace = pod.metadata.namespace
    for ref in pod.spec.image_pull_secrets:
        keyring = pull_secrets.get((namespace, ref.name))
        if keyring is None:
            logger.info(
                "pod %s/%s: pull secret %r is unknown to this node",
                namespace,
                pod.metadata.name,
                ref.name,
                extra={"pod": pod.full_name},
            )
            continue
        found = keyring.lookup(image)
        if found is not None:
            return found
    return None


class KeyringPuller(PullerWrapper):
    """A ``Puller`` that adds the keyring's credentials to each pull made without any."""

    def __init__(self, inner: Puller, keyring: Keyring) -> None:
        super().__init__(inner)
        self.keyring = keyring

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        if auth is None:
            auth = self.keyring.lookup(image)
        return self.inner.pull(image, auth, progress)
