"""What ``pip install kubecore`` gives and what needs an extra: the strategies need hypothesis
and the conformance suite pytest (both ``kubecore[testing]``), and each says so when it is
missing; the library itself needs nothing that only tests use; the ``docs`` extra builds the
site."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO

WITHOUT_HYPOTHESIS = """
import sys
sys.modules["hypothesis"] = None  # as if it were not installed
try:
    import kubecore.testing.strategies
except ImportError as error:
    print(error)
else:
    raise SystemExit("imported without hypothesis")
"""

WITHOUT_PYTEST = """
import sys
sys.modules["pytest"] = None  # as if it were not installed
try:
    import kubecore.testing.conformance
except ImportError as error:
    print(error)
else:
    raise SystemExit("imported without pytest")
"""

LOADED_BY_A_ONCE_RUN = """
import sys
from kubecore._cli import main
import kubecore, kubecore.runtime
kubecore.Kubelet, kubecore.load_runtime
code = main(["run", "examples/pods", "--runtime", "fake", "--once", "--log-level", "error",
             "--root-dir", sys.argv[1]])
print(sorted({name.split(".")[0] for name in sys.modules} & {"watchfiles", "wsproto"}))
"""

TEST_ONLY = {"pytest", "hypothesis", "pytest-timeout", "pytest-benchmark", "requests"}


def extras() -> dict[str, list[str]]:
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    return {
        name: [line.strip() for line in value.splitlines() if line.strip()]
        for name, value in parser["options.extras_require"].items()
    }


def requirement_names(lines: list[str]) -> set[str]:
    return {line.split(";")[0].split("[")[0].split(">")[0].split("=")[0].strip() for line in lines}


def test_the_strategies_say_which_extra_they_need() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_HYPOTHESIS],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    assert "needs hypothesis" in done.stdout
    assert "pip install kubecore[testing]" in done.stdout


def test_the_conformance_suite_says_which_extra_it_needs() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PYTEST],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    assert "pytest is not installed" in done.stdout
    assert "pip install kubecore[testing]" in done.stdout


def test_the_docs_extra_brings_the_site_builder_and_what_its_pages_read() -> None:
    """mkdocs and its plugins (mkdocs.yml), and the test kit the generated pages import (the
    conformance checks, the strategies): ``pip install -e '.[docs]'`` is enough to build."""
    docs = requirement_names(extras()["docs"])
    assert {"mkdocs", "mkdocs-material", "mkdocstrings-python"} <= docs
    assert requirement_names(extras()["testing"]) <= docs


def test_a_plain_install_pulls_nothing_test_only() -> None:
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    required = parser["options"]["install_requires"].splitlines()
    assert requirement_names([r for r in required if r.strip()]) & TEST_ONLY == set()


def test_the_testing_extra_brings_what_the_test_kit_imports() -> None:
    assert {"hypothesis", "pytest"} <= requirement_names(extras()["testing"])


def test_the_watcher_and_websocket_libraries_load_only_when_used(tmp_path: Path) -> None:
    """Why watchfiles and wsproto stay core dependencies (setup.cfg): the file source's
    watcher and the API's streams need them, and nothing else loads them, so neither
    ``import kubecore`` nor a ``--once`` run (no API, no watcher) pays their import time."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED_BY_A_ONCE_RUN, str(tmp_path / "root")],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=True,
    )  # fmt: skip
    assert done.stdout.splitlines()[-1] == "[]", done.stdout + done.stderr
