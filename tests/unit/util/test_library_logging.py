"""kubecore is a library: it prints nothing on its host's stderr unless the host configures
logging (its ``NullHandler``); the ``kubecore`` command configures logging itself."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import REPO

EMBEDDED_AGENT = """
import logging, sys, tempfile
import kubecore
if sys.argv[1:] == ["without-null-handler"]:
    logging.getLogger("kubecore").handlers.clear()
bundle = kubecore.load_runtime("fake")  # cannot adopt: the Kubelet warns about it
config = kubecore.KubeletConfig(root_dir=tempfile.mkdtemp())
with kubecore.Kubelet.from_bundle(bundle, config=config) as kubelet:
    kubelet.sync()
print("done")
"""


def run_agent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", EMBEDDED_AGENT, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )


def test_an_embedded_kubelet_that_warns_prints_nothing_on_stderr() -> None:
    quiet = run_agent()
    assert quiet.stdout == "done\n"
    assert quiet.stderr == ""


def test_without_its_null_handler_the_same_warning_reaches_stderr() -> None:
    """The check above can fail: the warning is there, the handler is what keeps it quiet."""
    loud = run_agent("without-null-handler")
    assert "cannot adopt" in loud.stderr


def test_every_package_installs_a_null_handler() -> None:
    code = (
        "import logging, kubecore, kubecore_fake, kubecore_docker, kubecore_cri\n"
        "for name in ('kubecore', 'kubecore_fake', 'kubecore_docker', 'kubecore_cri'):\n"
        "    handlers = logging.getLogger(name).handlers\n"
        "    assert any(isinstance(h, logging.NullHandler) for h in handlers), name\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, timeout=60)


def test_the_command_shows_its_warnings_on_stderr() -> None:
    """``kubecore`` configures logging for its process: a warning before ``run`` has set its
    level (any command) still reaches stderr."""
    code = (
        "import logging, sys\n"
        "from kubecore._cli import parser\n"
        "parser.main = lambda: logging.getLogger('kubecore.x').warning('seen') or 0\n"
        "parser.console_main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0
    assert "WARNING kubecore.x: seen" in done.stderr
