"""The Pod fields table, rendered by ``kubecore._manifest.field_table`` from the decoding
tables (without the begin and end comments it carries for files it rewrites)."""

from __future__ import annotations


def render() -> str:
    from kubecore._manifest.field_table import BEGIN, END, field_table

    lines = [line for line in field_table().splitlines() if line not in (BEGIN, END)]
    return "\n".join(lines) + "\n"
