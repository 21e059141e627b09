"""Writing CRI log files in tests, as a runtime writes them."""

from __future__ import annotations

from kubecore.runtime import encode_output

BASE_NANOS = 1_796_000_000_000_000_000
"""A moment in December 2026, in nanoseconds since the epoch."""


def append(path: str, data: bytes, *, stream: str = "stdout", at: float = 0.0) -> None:
    """Append ``data`` written ``at`` seconds after ``BASE_NANOS`` to the log ``path``."""
    with open(path, "ab") as handle:
        handle.write(encode_output(BASE_NANOS + int(at * 1e9), stream, data))


def seconds(at: float) -> float:
    """``at`` seconds after ``BASE_NANOS``, in seconds since the epoch."""
    return BASE_NANOS / 1e9 + at
