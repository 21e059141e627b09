"""The package as a user gets it: its license, changelog and metadata, an sdist that ships what
its tests need, and classifiers for exactly the Pythons the test command runs on."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.paths import REPO


def metadata() -> configparser.SectionProxy:
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    return parser["metadata"]


def test_the_license_file_is_the_license_declared() -> None:
    """An SPDX expression (PEP 639), and no license classifier beside it (setuptools warns of
    one as deprecated at every install)."""
    assert metadata()["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "License ::" not in metadata()["classifiers"]


def test_the_changelog_starts_at_the_current_version() -> None:
    version = metadata()["version"]
    changelog = (REPO / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[([^\]]+)\]", changelog, re.M)
    assert releases[:2] == ["Unreleased", version]


def test_the_sdist_ships_what_the_tests_need() -> None:
    manifest = (REPO / "MANIFEST.in").read_text().split("\n")
    grafted = {line.split()[1] for line in manifest if line.startswith("graft ")}
    assert {"examples", "benchmarks", "tests", "scripts"} <= grafted
    included = {word for line in manifest if line.startswith("include ") for word in line.split()}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "setup.cfg"} <= included


def test_the_python_classifiers_are_the_pythons_tested() -> None:
    classified = set(re.findall(r"Python :: (3\.\d+)$", metadata()["classifiers"], re.M))
    script = (REPO / "scripts" / "test-pythons.sh").read_text()
    (others,) = re.findall(r"versions=\(([\d. ]+)\)", script)
    main = re.search(r"python_requires = >=(3\.\d+)", (REPO / "setup.cfg").read_text())
    assert main is not None
    assert classified == {main.group(1), *others.split()}


def test_the_long_description_is_the_readme() -> None:
    assert metadata()["long_description"] == "file: README.md"


def tracked_files() -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout (an unpacked sdist): nothing to compare the sdist with")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return [path for path in listed.split("\0") if path and (REPO / path).is_file()]


LEFT_BY_WORK = (
    "kubecore/__pycache__/x.cpython-311.pyc",
    "examples/process_runtime/kubecore_process.egg-info/PKG-INFO",
    "kubecore.egg-info/SOURCES.txt",
    "tests/.hypothesis/examples/x",
    "tests/.pytest_cache/v/x",
    "benchmarks/.benchmarks/x.json",
    "docs/.mypy_cache/x.json",
    ".venv/bin/python",
    ".kubecore-state/x",
    "site/index.html",
    "build/lib/x.py",
)
"""Files a developer's checkout holds beside the tracked ones (git ignores them all)."""


def test_the_sdist_holds_the_tracked_files_and_nothing_left_by_work(tmp_path: Path) -> None:
    """Built from a checkout holding what work leaves behind (caches, egg-info of editable
    installs, a virtualenv, the site), the sdist holds every tracked file the package and its
    tests need, and none of the ignored ones; only setuptools' own metadata is added."""
    tracked = tracked_files()
    tree = tmp_path / "tree"
    for path in tracked:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / path, tree / path)
    for path in LEFT_BY_WORK:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text("left by work\n")
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"], cwd=REPO, input="\n".join(LEFT_BY_WORK),
        capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    assert sorted(ignored) == sorted(LEFT_BY_WORK), "every file left by work is git-ignored"
    build = (
        "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", build, str(tmp_path / "dist")], cwd=tree, capture_output=True,
        text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr
    with tarfile.open(tmp_path / "dist" / result.stdout.split()[-1]) as sdist:
        members = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    shipped = {m for m in members if not (tree / m).is_dir()}
    added = {m for m in shipped if m.startswith("kubecore.egg-info/") or m == "PKG-INFO"}
    untracked = sorted(shipped - added - set(tracked))
    assert not untracked, f"shipped but not tracked: {untracked}"
    needed = {p for p in tracked if not p.startswith((".gitignore", ".ci/")) or p == ".ci/run"}
    missing = sorted(needed - shipped)
    assert not missing, f"tracked but not shipped: {missing}"
