#!/usr/bin/env bash
# Installs collflow and runs the main job: data-parallel training of the digits MLP on the
# CPU under mpirun (2 ranks by default; NP=4 scripts/run.sh for more).  Extra arguments go to
# scripts/train.py.
source "$(dirname "$0")/setup_env.sh" ""  # no extras (and not this script's arguments)
NP="${NP:-2}"
# collflowrun (collflow/launcher.py) adds what this machine needs: root consent, --oversubscribe
exec timeout 1800 "$(dirname "$PY")/collflowrun" -np "$NP" --verbose "$PY" scripts/train.py --model mlp --dataset digits "$@"
