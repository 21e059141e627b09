"""The MkDocs hook (``hooks:`` in mkdocs.yml): fills each page's generated sections."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # mkdocs loads this file by path: make the tree importable
    sys.path.insert(0, str(ROOT))

# MkDocs gives sys.path back as it was once this file is loaded: what the generators import from
# the tree (the benchmark figures read ``benchmarks``) is imported now, while the tree is on it.
from scripts.docgen import benchmark_figures, expand  # noqa: E402,F401


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    return expand(markdown, page.file.src_uri)
