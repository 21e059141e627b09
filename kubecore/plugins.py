"""The plugin machinery behind ``load_runtime``: the pluggy manager, the hook specification and
the plugins that failed to load."""

from kubecore._plugins.registry import (
    BrokenPlugin,
    KubecorePluginManager,
    broken_plugins,
    hookspec,
    plugin_manager,
)
from kubecore._util.clock import missing_clock_members
from kubecore._util.exports import publish as _publish

__all__ = [
    "BrokenPlugin",
    "KubecorePluginManager",
    "broken_plugins",
    "hookspec",
    "missing_clock_members",
    "plugin_manager",
]

_publish(__all__, globals(), __name__)
