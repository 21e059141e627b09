#!/usr/bin/env bash
# The unit tests on the other supported Pythons (setup.cfg's classifiers; the main one is the
# project's .venv, which scripts/test runs everything on). For each of 3.12 and 3.13 found on
# PATH or under pyenv: a virtualenv of its own (.venv-py3.X, installed again only when
# setup.cfg or pyproject.toml changed), the package with its test extra, an import from outside
# the tree, and tests/unit with a few hypothesis examples each (the main run is the thorough
# one). A Python that is not found is named and skipped.
# Usage: bash scripts/test-pythons.sh [VERSION...]   (default: 3.12 3.13)
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/venv.sh

versions=("$@")
[ "${#versions[@]}" -gt 0 ] || versions=(3.12 3.13)
for version in "${versions[@]}"; do
  python=$(find_python "python$version")
  if [ -z "$python" ]; then
    echo "== Python $version: not found on PATH nor under pyenv; its unit tests are not run"
    continue
  fi
  echo "== unit tests on Python $version ($python)"
  venv=.venv-py$version
  VENV=$venv PYTHON=$python venv_create
  VENV=$venv venv_install test setup.cfg pyproject.toml -- -e '.[test]'
  (cd / && "$OLDPWD/$venv/bin/python" -c 'import kubecore.v1, kubecore_fake, kubecore_cri')
  HYPOTHESIS_PROFILE=quick "$venv/bin/python" -m pytest -p no:cacheprovider -q tests/unit
done
