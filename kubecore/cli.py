"""What a plugin's subcommands of the ``kubecore`` command use: the ``CommandSet`` its
``kubecore_add_commands`` hook adds them to, the ``CommandHandler`` each sets, the exit statuses,
and the tables and ages they print as kubectl does (``docs/guides/plugins.md``)."""

import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore._plugins.commands import (
        EXIT_FAILED as EXIT_FAILED,
    )
    from kubecore._plugins.commands import (
        EXIT_OK as EXIT_OK,
    )
    from kubecore._plugins.commands import (
        EXIT_USAGE as EXIT_USAGE,
    )
    from kubecore._plugins.commands import (
        CommandHandler as CommandHandler,
    )
    from kubecore._plugins.commands import (
        CommandSet as CommandSet,
    )
    from kubecore._util.tables import (
        ready_and_restarts as ready_and_restarts,
    )
    from kubecore._util.tables import (
        text_table as text_table,
    )
    from kubecore._util.timefmt import (
        age as age,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)
