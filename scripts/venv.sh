# Sourced by scripts/run and scripts/test: the project's virtualenv, installed again only when
# what the install reads has changed.
#
#   venv_install NAME FILE... -- PIP-INSTALL-ARGS...
#
# runs `pip install PIP-INSTALL-ARGS` unless .venv/.installed-NAME holds the hash of the FILEs
# (the package metadata: setup.cfg, pyproject.toml) and of the arguments, as the last install
# that succeeded left it. Sources are not hashed: the install is editable.

venv_create() {
  local python=${PYTHON:-python3}
  if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
  fi
}

venv_install() {
  local name=$1 files=() stamp digest
  shift
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
    files+=("$1")
    shift
  done
  shift
  stamp=".venv/.installed-$name"
  digest=$({ cat "${files[@]}"; printf '%s\n' "$@"; } | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
    return 0
  fi
  rm -f "$stamp"
  .venv/bin/python -m pip install --quiet "$@"
  echo "$digest" >"$stamp"
}
