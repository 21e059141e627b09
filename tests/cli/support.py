"""Running the ``kubecore`` command in-process, for the tests of the command and of what it
reports: ``run_cli`` (exit code, stdout, stderr) and ``run_args`` (a quiet ``run`` on a root
dir of its own), ``parsed_flags`` (``kubecore run``'s parsed flags)."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

from kubecore._cli import build_parser, main


def run_cli(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``kubecore ARGV`` in this process, with ``env`` added to the environment for the call:
    its exit code, stdout and stderr."""
    out = io.StringIO()
    err = io.StringIO()
    old_err, sys.stderr = sys.stderr, err
    old_env = dict(os.environ)
    try:
        if env is not None:
            os.environ.update(env)
        code = main(list(argv), out=out)
    finally:
        sys.stderr = old_err
        os.environ.clear()
        os.environ.update(old_env)
    return code, out.getvalue(), err.getvalue()


def run_args(tmp_path: Path, *extra: str) -> list[str]:
    """``kubecore run EXTRA`` rooted in ``tmp_path``, logging errors only."""
    return ["run", *extra, "--root-dir", str(tmp_path / "root"), "--log-level", "error"]


def parsed_flags(*argv: str) -> dict[str, Any]:
    """``kubecore run ARGV``'s flags as the parser reads them."""
    return {k: v for k, v in vars(build_parser().parse_args(["run", *argv])).items()}
