#!/usr/bin/env bash
# Installs collflow with its test extra and runs the whole suite: the serial tests, then
# the MPI tests under mpiexec -n 2 and -n 3.  Every pytest and mpiexec runs under a timeout.
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
  for n in 2 3; do
    run "mpi n=$n" timeout 900 mpiexec -n "$n" --oversubscribe --bind-to none \
      "$PY" -m pytest -q --color=no -p no:cacheprovider --with-mpi tests/mpi -x \
      --timeout 120 --timeout-method=thread
  done
fi
echo
echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $status
