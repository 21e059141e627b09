"""A griffe extension (mkdocs.yml, ``extensions:`` of the python handler): the bases a plugin
builds on (``kubecore._contract.bases.CONTRACTS``) take their protocol's contract text at import
time, which griffe, reading the source, does not see; this gives the reference the same text
``help()`` shows."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import griffe

BASES_MODULE = "kubecore._contract.bases"


class ContractDocstrings(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **_: Any) -> None:
        if pkg.name != "kubecore":
            return
        bases = importlib.import_module(BASES_MODULE)
        module = pkg.modules_collection[BASES_MODULE]
        for base in bases.CONTRACTS:
            documented = module[base.__name__]
            for name, member in documented.members.items():
                if member.is_alias or member.docstring is not None or not member.is_function:
                    continue
                text = inspect.getdoc(getattr(base, name, None))
                if text:
                    member.docstring = griffe.Docstring(text, parent=member)
