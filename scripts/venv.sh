# Sourced by scripts/run and scripts/test: the project's virtualenvs, installed again only when
# what the install reads has changed.
#
#   venv_create                            .venv, with $PYTHON (python3 unless set)
#   venv_install NAME FILE... -- PIP-INSTALL-ARGS...
#
# runs `pip install PIP-INSTALL-ARGS` unless $VENV/.installed-NAME holds the hash of the FILEs
# (the package metadata: setup.cfg, pyproject.toml) and of the arguments, as the last install
# that succeeded left it. Sources are not hashed: the install is editable. $VENV is the
# virtualenv's directory (.venv unless set): `VENV=.venv-py3.12 PYTHON=... venv_create` makes
# another, for another Python.
#
#   find_python NAME                       the path of a working NAME (python3.12), or nothing

venv_create() {
  local python=${PYTHON:-python3} venv=${VENV:-.venv}
  if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
  fi
}

venv_install() {
  local name=$1 files=() stamp digest venv=${VENV:-.venv}
  shift
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
    files+=("$1")
    shift
  done
  shift
  stamp="$venv/.installed-$name"
  digest=$({ cat "${files[@]}"; printf '%s\n' "$@"; } | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
    return 0
  fi
  rm -f "$stamp"
  "$venv/bin/python" -m pip install --quiet "$@"
  echo "$digest" >"$stamp"
}

# A Python on PATH, else one pyenv installed (its shims answer only for the selected versions).
find_python() {
  local name=$1 candidate
  for candidate in "$(command -v "$name" 2>/dev/null)" \
    "${PYENV_ROOT:-$HOME/.pyenv}"/versions/*/bin/"$name" /root/.pyenv/versions/*/bin/"$name"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c '' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 0
}
