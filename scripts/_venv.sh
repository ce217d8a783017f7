# Sourced by scripts/test and scripts/demo: creates .venv (once) and installs into it.
# Usage: ensure_venv "<pip install arguments>"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TFRECORDKIT_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

ensure_venv() {
  if [ ! -x "$PY" ]; then
    echo "creating $VENV" >&2
    "${PYTHON:-python3}" -m venv "$VENV"
  fi
  # pip >= 25.1 understands dependency groups (--group).
  echo "installing into $VENV: $1 (a few minutes on a fresh machine; nothing to do if present)" >&2
  "$PY" -m pip install --quiet --disable-pip-version-check --upgrade "pip>=25.1"
  # shellcheck disable=SC2086
  "$PY" -m pip install --quiet --disable-pip-version-check $1
}
