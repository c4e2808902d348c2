# Shared by scripts/demo, scripts/docs and scripts/test: make .venv hold purra-jupyter with the given extras.
# Idempotent and fast when nothing changed: a stamp records what was installed.
set -euo pipefail

ensure_env() {
  local extras="$1"
  local python="${PYTHON:-python3}"
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "purra-jupyter needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    return 1
  fi
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  local stamp=".venv/.purra-jupyter-setup"
  local want
  want="$extras $(sha256sum pyproject.toml | cut -c1-16)"
  # The test extra includes lab and docs, so a test setup serves the demo and the docs too.
  if [ -f "$stamp" ] && { grep -qxF "$want" "$stamp" || grep -qxF "test ${want#* }" "$stamp"; }; then
    return 0
  fi
  echo "Setting up .venv with purra-jupyter[$extras] ..." >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]"
  echo "$want" > "$stamp"
}
