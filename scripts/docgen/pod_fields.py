"""The Pod fields table, rendered by ``kubecore._manifest.field_table`` from the decoding
tables."""

from __future__ import annotations


def render() -> str:
    from kubecore._manifest.field_table import field_table

    return field_table()
