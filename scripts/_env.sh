# Shared by scripts/demo, scripts/test and scripts/docs: check what must be on the machine, then make .venv hold
# purra-jupyter with the given extras. Idempotent and fast when nothing changed: a stamp records what was installed.
set -euo pipefail

NODE_MAJOR=20  # what building the JupyterLab extension needs (@jupyterlab/builder 4)

# One line each, saying what is missing and how to get it; nothing is installed before both hold.
check_prerequisites() {
  local python="${PYTHON:-python3}"
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "purra-jupyter needs Python 3.11 or newer ('$python' is missing or older): install it, or set PYTHON=/path/to/python3.11." >&2
    return 1
  fi
  if [ -f purra_jupyter/labextension/package.json ] && [ "${1:-}" != "node" ]; then
    return 0  # the JupyterLab extension is built already: no Node.js needed
  fi
  local version
  version="$(node --version 2>/dev/null || true)"
  if [ -z "$version" ]; then
    echo "A source checkout needs Node.js $NODE_MAJOR or newer to build its JupyterLab extension, and there is no 'node' on PATH: install it (https://nodejs.org, or your system's nodejs package) and run this again; 'pip install purra-jupyter' needs no Node.js." >&2
    return 1
  fi
  local major="${version#v}"
  major="${major%%.*}"
  if ! [ "$major" -ge "$NODE_MAJOR" ] 2>/dev/null; then
    echo "A source checkout needs Node.js $NODE_MAJOR or newer to build its JupyterLab extension; 'node' on PATH is $version: install a newer one (https://nodejs.org) and run this again." >&2
    return 1
  fi
}

# The extras of a setup that holds everything the given one does (the test extra includes lab and docs).
_covers() {
  case "$1" in
    test) echo "test" ;;
    *) echo "$1 test" ;;
  esac
}

ensure_env() {
  local extras="$1"
  local python="${PYTHON:-python3}"
  local stamp=".venv/.purra-jupyter-setup"
  local hash
  hash="$(sha256sum pyproject.toml | cut -c1-16)"
  local covering
  for covering in $(_covers "$extras"); do
    if [ -f "$stamp" ] && grep -qxF "$covering $hash" "$stamp"; then
      return 0
    fi
  done
  if [ ! -x .venv/bin/python ]; then
    echo "[setup 1/3] creating .venv with $("$python" --version)" >&2
    "$python" -m venv .venv
  fi
  echo "[setup 2/3] updating pip" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  echo "[setup 3/3] installing purra-jupyter[$extras] and its dependencies, then building its JupyterLab extension (the first time: a few minutes)" >&2
  local log=".venv/setup.log" status
  set +e  # pip's own status decides, not the filter's
  PYTHONUNBUFFERED=1 .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off -e ".[$extras]" 2>&1 | tee "$log" \
    | grep --line-buffered -E '^(Collecting|Building|Installing|Successfully)' >&2
  status="${PIPESTATUS[0]}"
  set -e
  if [ "$status" != 0 ]; then
    tail -n 40 "$log" >&2
    echo "The setup failed: pip's last lines are above, its whole output is in .venv/setup.log." >&2
    return 1
  fi
  echo "$extras $hash" > "$stamp"
  echo "[setup] done" >&2
}
