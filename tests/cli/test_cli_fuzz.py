"""No input to any command ends in a Python traceback: random argument lists (flags, values,
junk), ``KUBECORE_*`` variables and config files through ``main`` in-process exit 0, 1 or 2 with
a message. ``run`` always gets ``--once`` on an empty directory last: it finishes at once."""

from __future__ import annotations

import io
import os
import sys
import tempfile
from pathlib import Path

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from kubecore._cli import RUN_SETTINGS, main

FLAGS = sorted(
    {s.option for s in RUN_SETTINGS if s.kind != "list"}
    | {"--no-" + s.option[2:] for s in RUN_SETTINGS if s.kind == "bool"}
    | {"--config", "--help", "-h", "--resyn", "--por", "--", "-", "---", "--=1"}
)
VALUES = [
    "0",
    "1",
    "-1",
    "5",
    "1.5",
    "99999",
    "1e400",
    "-1e400",
    "nan",
    "inf",
    "9" * 5000,
    "",
    " ",
    "true",
    "perhaps",
    "x=y",
    "=",
    "clock=manual",
    "events=maybe",
    "images=",
    "debug",
    "LEVEL",
    "ftp://x/pods",
    "http://[::1",
    "10.0.0.1",
    "\udcff",
]
# No '/' or '.': a word that names an existing path (/, ..) would make `run` read it.
JUNK = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc"), blacklist_characters="/.\\", max_codepoint=0x2FF
    ),
    max_size=12,
)
TOKENS = st.lists(st.one_of(st.sampled_from(FLAGS), st.sampled_from(VALUES), JUNK), max_size=8)
ENVIRONMENT = st.dictionaries(
    st.sampled_from(sorted({s.env for s in RUN_SETTINGS} | {"KUBECORE_CONFIG"})),
    st.one_of(st.sampled_from(VALUES), JUNK),
    max_size=3,
)
CONFIG_VALUES = st.one_of(
    st.integers(),
    st.sampled_from([10**400, -(10**400), 1e308, float("inf"), float("nan")]),
    st.floats(),
    st.booleans(),
    st.none(),
    st.sampled_from(VALUES),
    JUNK,
    st.lists(JUNK, max_size=2),
    st.dictionaries(JUNK, st.one_of(JUNK, st.integers()), max_size=2),
)
CONFIG_FILE = st.dictionaries(
    st.one_of(
        st.sampled_from(
            sorted({s.dest for s in RUN_SETTINGS} | {s.option[2:] for s in RUN_SETTINGS})
        ),
        JUNK,
    ),
    CONFIG_VALUES,
    max_size=3,
)
COMMANDS = st.sampled_from(["run", "validate", "runtimes", "version", "rn", "", "--version"])


def run_in(directory: Path, argv: list[str], environ: dict[str, str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr, os.getcwd(), dict(os.environ)
    sys.stdout, sys.stderr = out, err
    os.chdir(directory)
    os.environ.update(environ)
    try:
        code = main(argv, out=out)
    finally:
        sys.stdout, sys.stderr = old[0], old[1]
        os.chdir(old[2])
        os.environ.clear()
        os.environ.update(old[3])
    return code, out.getvalue() + err.getvalue()


def finishing(command: str, tokens: list[str], root: Path, config: Path) -> list[str]:
    if command != "run":
        return [command, *tokens] if command else tokens
    # after "--" the settling flags would be manifest names, and the agent would run on
    settle = ["--once", "--runtime", "fake", "--deadline", "5", "--root-dir", str(root)]
    options = [token for token in tokens if token != "--"]
    return [
        "run",
        "--config",
        str(config),
        *options,
        *settle,
        "--no-enable-exec",
        "--log-level",
        "error",
    ]


@given(COMMANDS, TOKENS, ENVIRONMENT, CONFIG_FILE)
@example("run", ["--port", "99999"], {}, {})
@example("run", ["--deadline", "-1"], {}, {})
@example("run", ["--resyn", "5"], {}, {})
@example("run", ["--runtime-option", "clock=manual"], {}, {})
@example("run", ["--registry-config", "x=y"], {}, {})
@example("run", ["--manifest-url", "http://[::1"], {}, {})
@example("run", ["--cluster-dns", ""], {}, {})
@example("validate", ["", "\udcff"], {}, {})
@example("runtimes", ["--=1"], {}, {})
@example("run", [], {"KUBECORE_PORT": "99999", "KUBECORE_DEADLINE": "nan"}, {})
@example("run", [], {"KUBECORE_CLUSTER_DNS": "", "KUBECORE_MANIFEST_URL": "http://[::1"}, {})
@example("run", [], {}, {"resync": 10**400, "port": 10**400})
@example("run", [], {}, {"runtime-option": {"clock": 3}, "cluster-dns": [""]})
def test_no_input_ends_in_a_traceback(
    command: str, tokens: list[str], environ: dict[str, str], config: dict[object, object]
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(scratch) / "cwd"
        cwd.mkdir()
        config_file = Path(scratch) / "config.yaml"
        config_file.write_text(yaml.safe_dump(config), encoding="utf-8", errors="surrogateescape")
        argv = finishing(command, tokens, Path(scratch) / "root", config_file)
        code, text = run_in(cwd, argv, environ)
    assert code in (0, 1, 2), text
    assert "Traceback" not in text and "unexpected error" not in text, text
    if code == 2:
        assert text.strip(), "a usage error says what is wrong"
