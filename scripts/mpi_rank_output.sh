#!/usr/bin/env bash
# Run under mpiexec: rank 0 keeps the console, every other rank's stdout and stderr go to
# $COLLFLOW_MPI_LOG_DIR/rank<R>.log, so the ranks' lines never interleave (scripts/test.sh
# reports each rank's result from those files).
r="${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-0}}}"
if [ "$r" != "0" ] && [ -n "${COLLFLOW_MPI_LOG_DIR:-}" ]; then
  exec >"$COLLFLOW_MPI_LOG_DIR/rank$r.log" 2>&1
fi
exec "$@"
