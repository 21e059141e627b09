"""The etcd plugin (entry point ``kubecore: etcd = kubecore_etcd._plugin``): the ``kubecore etcd``
commands. Importing it imports neither the commands nor the etcd client: the hook imports the
commands when the command line may need them."""

from __future__ import annotations

from kubecore import hookimpl
from kubecore.cli import CommandSet


@hookimpl
def kubecore_add_commands(commands: CommandSet) -> None:
    """``kubecore etcd apply|delete|get`` (``kubecore_etcd._cli``)."""
    from kubecore_etcd._cli import add_etcd_commands

    add_etcd_commands(commands)
