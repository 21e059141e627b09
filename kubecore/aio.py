"""The agent for async programs: ``AsyncKubelet`` wraps a ``kubecore.Kubelet`` so that asyncio
and trio code (through anyio) can start and stop it, apply pods, iterate its changes with
``async for`` and ``await`` a condition on its pods, with no second copy of any rule."""

import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore._agent.aio import (
        AsyncKubelet as AsyncKubelet,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)
