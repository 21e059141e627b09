"""Registry credentials: keyrings read from Docker config files and pull secrets, and a puller
that looks them up for every pull."""

from kubecore._kuberuntime.credentials import (
    ChainKeyring,
    DockerKeyring,
    Keyring,
    KeyringPuller,
    PullSecrets,
    pod_registry_auth,
    secret_keyring,
)
from kubecore._util.exports import publish as _publish

__all__ = [
    "ChainKeyring",
    "DockerKeyring",
    "Keyring",
    "KeyringPuller",
    "PullSecrets",
    "pod_registry_auth",
    "secret_keyring",
]

_publish(__all__, globals(), __name__)
