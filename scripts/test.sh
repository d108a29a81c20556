#!/usr/bin/env bash
# Installs collflow with its test extra and runs the whole suite: the serial tests, then
# the MPI tests under mpiexec -n 2 and -n 3 (tests/mpi, and the tests written once for both
# worlds, tests/worlds.py: tests/test_*_two_worlds.py).  Every pytest and mpiexec
# runs under a timeout.
source "$(dirname "$0")/setup_env.sh" test
unset OMP_NUM_THREADS   # serial tests may use both cores
status=0
summary=()
run() {  # run LABEL CMD...: runs a pytest command, remembers its closing line
  local label="$1"; shift
  local log; log="$(mktemp)"
  echo "=== $label"
  set +e
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  set -e
  # pytest exit 5 = nothing collected (e.g. no MPI test for this size): not a failure
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then status=1; echo "=== $label FAILED (exit $rc)"; fi
  summary+=("$label: $(grep -aE '^=*.*(passed|failed|error|no tests ran).*' "$log" | tail -n 1 | tr -d '=')")
  rm -f "$log"
}

run "serial" timeout 1800 "$PY" -m pytest -q --color=no -p no:cacheprovider tests --ignore=tests/mpi "$@"
if [ -d tests/mpi ]; then
  # --timeout-method=thread: a rank stuck inside an MPI call (its peers diverged) is not
  # reached by SIGALRM; the timer thread ends the process, and mpiexec then ends the rest
  # rank 0 prints to the console; the other ranks write per-rank logs (mpi_rank_output.sh),
  # reported below rank by rank, the failing ones' tails included
  for n in 2 3; do
    logs="$(mktemp -d)"
    run "mpi n=$n, rank 0" timeout 900 env COLLFLOW_MPI_LOG_DIR="$logs" mpiexec -n "$n" --oversubscribe \
      --bind-to none -x COLLFLOW_MPI_LOG_DIR bash scripts/mpi_rank_output.sh "$PY" -m pytest -q --color=no \
      -p no:cacheprovider --with-mpi tests/mpi tests/test_*_two_worlds.py -x --timeout 120 --timeout-method=thread
    for ((r = 1; r < n; r++)); do
      f="$logs/rank$r.log"
      line="$( (grep -aE '^=*.*(passed|failed|error|no tests ran).*' "$f" 2>/dev/null || true) | tail -n 1 | tr -d '=')"
      summary+=("mpi n=$n, rank $r: ${line:-no result (see $f)}")
      if ! echo "$line" | grep -q "passed" || echo "$line" | grep -qE "failed|error"; then
        status=1
        echo "=== mpi n=$n, rank $r FAILED; the end of its output ($f):"
        tail -n 60 "$f" 2>/dev/null || true
      fi
    done
  done
fi
# the serial suite again on the oldest versions pyproject.toml allows (skip: COLLFLOW_SKIP_FLOOR=1)
if [ "${COLLFLOW_SKIP_FLOOR:-0}" != "1" ] && [ -z "${COLLFLOW_PYTHON:-}" ]; then
  if [ ! -x .venv-floor/bin/python ]; then
    python3 -m venv .venv-floor
  fi
  FPY="$ROOT/.venv-floor/bin/python"
  if "$FPY" -m pip install -q --disable-pip-version-check -r scripts/floor-requirements.txt -e ".[test]" \
      -c scripts/floor-requirements.txt; then
    run "serial, floor versions" timeout 1800 env PATH="$(dirname "$FPY"):$PATH" "$FPY" -m pytest -q --color=no \
      -p no:cacheprovider tests --ignore=tests/mpi
  else
    status=1; summary+=("serial, floor versions: could not install scripts/floor-requirements.txt")
  fi
fi
echo
echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $status
