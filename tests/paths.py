"""Where the tests find the repository's files, wherever a test module sits."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus"
