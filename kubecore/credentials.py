"""Registry credentials: keyrings read from Docker config files and pull secrets, and a puller
that looks them up for every pull."""

import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore._contract.errors import (
        RegistryConfigError as RegistryConfigError,
    )
    from kubecore._kuberuntime.credentials import (
        ChainKeyring as ChainKeyring,
    )
    from kubecore._kuberuntime.credentials import (
        DockerKeyring as DockerKeyring,
    )
    from kubecore._kuberuntime.credentials import (
        Keyring as Keyring,
    )
    from kubecore._kuberuntime.credentials import (
        KeyringPuller as KeyringPuller,
    )
    from kubecore._kuberuntime.credentials import (
        PullSecrets as PullSecrets,
    )
    from kubecore._kuberuntime.credentials import (
        pod_registry_auth as pod_registry_auth,
    )
    from kubecore._kuberuntime.credentials import (
        secret_keyring as secret_keyring,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)
