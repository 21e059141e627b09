"""kubecore's performance harness: ``python -m benchmarks`` prints every figure with its baseline.

Each benchmark is a module here with ``NAME``, ``TITLE`` and ``run(ctx) -> list[Row]``; its
baseline runs in the same process (or the same run, for engine peers) so every ratio compares
like with like on this machine. ``--quick`` only proves each benchmark still runs (small N);
a figure never fails a run, a crash does.
"""

from benchmarks._common import Context, Row, Skip

__all__ = ["Context", "Row", "Skip"]
