"""The documentation: its examples run as written, its generated sections render from the code,
every page is in the site's navigation, and the README stays a short front door whose links
lead somewhere. (The strict build of the whole site runs in scripts/test.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.docgen import expand, markers
from tests.paths import REPO

DOCS = REPO / "docs"
README = REPO / "README.md"
PAGES = sorted(DOCS.rglob("*.md"))
TESTED_BLOCK = re.compile(r"<!-- test: (pytest|python) -->\n```python\n(.*?)```", re.DOTALL)
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
MARKDOWN_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")
DEVELOPMENT_WORDING = re.compile(
    r"\b(?:this|that|the previous|a previous|the next|other|another|the first|the second) "
    r"sessions?\b|\bsessions? of\b|\bissues? \d|\bhelpers?\b(?! program)|shared/DESIGN|/work/",
    re.IGNORECASE,
)
"""How the project is developed is no part of what it does: no page speaks of it."""


def documented_examples() -> list[tuple[str, str, str]]:
    """(page, how, code) of every block a page marks as run by the test suite."""
    return [
        (page.relative_to(REPO).as_posix(), how, code)
        for page in PAGES
        for how, code in TESTED_BLOCK.findall(page.read_text())
    ]


def run(how: str, path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    args = (
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)]
        if how == "pytest"
        else [str(path)]
    )
    return subprocess.run(
        [sys.executable, *args], cwd=path.parent, env=env, capture_output=True, text=True,
        timeout=240,
    )  # fmt: skip


def explain(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def test_the_guides_have_their_examples_run() -> None:
    pages = {page for page, _, _ in documented_examples()}
    assert {"docs/guides/testing.md", "docs/guides/embedding.md"} <= pages


@pytest.mark.parametrize(
    ("page", "how", "code"), documented_examples(), ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(
        documented_examples())]
)  # fmt: skip
def test_a_documented_example_runs_as_written(
    page: str, how: str, code: str, tmp_path: Path
) -> None:
    path = tmp_path / ("test_example.py" if how == "pytest" else "example.py")
    path.write_text(code)
    result = run(how, path)
    assert result.returncode == 0, f"{page}: {explain(result)}"
    if how == "pytest":
        assert " passed" in result.stdout and "failed" not in result.stdout, explain(result)


def test_the_readme_test_runs_as_written(tmp_path: Path) -> None:
    (code,) = [block for block in PYTHON_BLOCK.findall(README.read_text()) if "def test_" in block]
    path = tmp_path / "test_readme.py"
    path.write_text(code)
    result = run("pytest", path)
    assert result.returncode == 0 and "1 passed" in result.stdout, explain(result)


def test_the_embedding_examples_type_check_strictly(tmp_path: Path) -> None:
    """The README's embedding snippet and the embedding guide's programs pass ``mypy --strict``
    as written: what a typed embedder copies type-checks."""
    from mypy import api

    readme = [block for block in PYTHON_BLOCK.findall(README.read_text()) if "Kubelet." in block]
    guide = PYTHON_BLOCK.findall((DOCS / "guides" / "embedding.md").read_text())
    blocks = [block for block in (*readme, *guide) if "--8<--" not in block]
    assert len(readme) == 1 and len(blocks) >= 4
    paths = []
    for index, block in enumerate(blocks):
        path = tmp_path / f"example_{index}.py"
        path.write_text(block)
        paths.append(str(path))
    out, err, status = api.run(
        ["--strict", "--no-incremental", "--config-file", os.devnull, "--follow-imports", "silent",
         "--python-version", "3.11", *paths]
    )  # fmt: skip
    assert status == 0, out + err


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_every_generated_section_renders(page: Path) -> None:
    text = page.read_text()
    expanded = expand(text, page.name)
    assert "<!-- generated:" not in expanded
    for name in markers(text):
        assert len(expanded) > len(text), f"{page.name}: {name} rendered nothing"


def test_an_unknown_generated_section_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown generated section 'nope'"):
        expand("<!-- generated: nope -->", "page.md")


def test_the_cli_reference_has_every_command_and_flag() -> None:
    from kubecore._cli.settings import RUN_SETTINGS

    text = expand("<!-- generated: cli -->")
    for command in ("run", "validate", "runtimes", "version", "kubeconfig", "etcd"):
        assert f"## `kubecore {command}`" in text
    assert "`kubecore etcd apply`" in text
    for setting in RUN_SETTINGS:
        assert f"`{setting.option}" in text or setting.kind == "list", setting.option
    assert "`--config FILE`" in text and "`MANIFEST...`" in text


def test_the_endpoint_references_have_every_route_and_resource() -> None:
    from kubecore._api.discovery import API_RESOURCES
    from kubecore._http.server import ROUTES

    kubelet = expand("<!-- generated: kubelet-endpoints -->")
    for segment in ROUTES:
        assert f"| `/{segment}` |" in kubelet
    assert "`tailLines`" in kubelet and "401 Unauthorized" in kubelet
    api = expand("<!-- generated: kubernetes-api -->")
    for resource in API_RESOURCES["resources"]:
        assert f"| `{resource['name']}` |" in api
    assert "`labelSelector`" in api and "`dryRun`" in api and "422 Unprocessable Entity" in api


def test_the_metrics_and_events_references_have_every_name() -> None:
    from kubecore.events import EventReason
    from kubecore.server import Metrics

    metrics = expand("<!-- generated: metrics -->")
    registry = Metrics()
    for family in [*registry.registry.collect(), *registry.probe_registry.collect()]:
        assert f"`{family.name}" in metrics, family.name
    events = expand("<!-- generated: events -->")
    for name, reason in EventReason.__members__.items():
        assert f"| `{reason.value}` | `EventReason.{name}` |" in events


def test_the_pod_fields_page_is_the_generated_table() -> None:
    from kubecore._manifest.field_table import field_rows

    text = expand((DOCS / "reference" / "pod-fields.md").read_text())
    for field, what in field_rows():
        assert f"| `{field}` |" in text, field
        assert what.split("`")[0].strip() in text


def test_every_page_is_in_the_navigation() -> None:
    config = (REPO / "mkdocs.yml").read_text()
    for page in PAGES:
        assert page.relative_to(DOCS).as_posix() in config, f"{page} is not in mkdocs.yml's nav"


def test_the_readme_is_a_short_front_door() -> None:
    text = README.read_text()
    words = len(text.split())
    assert words <= 1500, f"README.md has {words} words: keep it a front door, move detail to docs/"
    assert "bash scripts/run" in text and "bash scripts/test" in text


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_lead_to_files(page: Path) -> None:
    for target, _ in MARKDOWN_LINK.findall(page.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (page.parent / target).resolve().exists(), f"{page.name}: {target} does not exist"


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_page_speaks_of_how_the_project_is_developed(page: Path) -> None:
    found = [m.group(0) for m in DEVELOPMENT_WORDING.finditer(page.read_text())]
    assert not found, f"{page.name}: {found}"


def test_the_readme_tour_shows_what_once_prints(tmp_path: Path) -> None:
    """The tour's ``--once`` block is the command's output as it is: the table, the failure
    line and the exit code."""
    text = README.read_text()
    prompt = (
        "$ bash scripts/run run examples/pods --runtime fake --once --log-level error;"
        ' echo "exit $?"\n'
    )
    shown = text.split(prompt, 1)[1].split("```", 1)[0]
    result = subprocess.run(
        [sys.executable, "-m", "kubecore", "run", "examples/pods", "--runtime", "fake", "--once",
         "--log-level", "error", "--root-dir", str(tmp_path / "root")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.stdout + f"exit {result.returncode}\n" == shown, explain(result)
