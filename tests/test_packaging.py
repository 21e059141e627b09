"""The package as a user gets it: its license, changelog and metadata, an sdist that ships what
its tests need, and classifiers for exactly the Pythons the test command runs on."""

from __future__ import annotations

import configparser
import re

from tests.paths import REPO


def metadata() -> configparser.SectionProxy:
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    return parser["metadata"]


def test_the_license_file_is_the_license_declared() -> None:
    assert metadata()["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "License :: OSI Approved :: Apache Software License" in metadata()["classifiers"]


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
