"""The runtime contract, method by method: each protocol a plugin implements
(``kubecore.runtime``), with every method's signature and its docstring, which says what the
method must do, when it may be called again and which error it raises in which case."""

from __future__ import annotations

import inspect

from scripts.docgen.markdown import rst_to_md

REQUIRED = (
    "RuntimeVersioner",
    "PodSandboxManager",
    "ContainerManager",
    "ContainerStatsManager",
    "RuntimeEventSource",
    "Puller",
)
OPTIONAL = (
    "StreamingRuntime",
    "PortForwarder",
    "ResourceUpdater",
    "NodeClaims",
    "ContainerLogReopener",
)


def _methods(protocol: type) -> list[tuple[str, object]]:
    return [
        (name, member)
        for name, member in vars(protocol).items()
        if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))
    ]


def _protocol(name: str) -> list[str]:
    import kubecore.runtime

    protocol = getattr(kubecore.runtime, name)
    parts = [f"### `{name}`", ""]
    doc = inspect.getdoc(protocol)
    if doc:
        parts += [rst_to_md(doc), ""]
    bases = [b.__name__ for b in protocol.__bases__ if b.__name__ not in ("Protocol", "object")]
    if bases:
        parts += ["Includes: " + ", ".join(f"`{b}`" for b in bases) + ".", ""]
    for method, member in _methods(protocol):
        if isinstance(member, property):
            heading = f"`{method}` (attribute)"
        else:
            signature = str(inspect.signature(member)).replace("'", "")
            heading = f"`{method}{signature.replace('(self, ', '(').replace('(self)', '()')}`"
        text = rst_to_md(inspect.getdoc(member) or "(no docstring)")
        parts += [f"- **{heading}**", "", "    " + text.replace("\n", "\n    "), ""]
    return parts


def render() -> str:
    parts = ["## Required", ""]
    for name in REQUIRED:
        parts += _protocol(name)
    parts += ["## Optional (found by type)", ""]
    for name in OPTIONAL:
        parts += _protocol(name)
    return "\n".join(parts)
