#!/usr/bin/env bash
# Installs collflow's GPU extra built for this machine's CUDA driver: CuPy wheels are per CUDA
# major version (cupy-cuda12x, cupy-cuda13x), so the extra is chosen from what nvidia-smi says
# the driver supports.  COLLFLOW_CUDA=12|13 overrides the detection.
#   bash scripts/install_gpu.sh            # into .venv (made by setup_env.sh) or $COLLFLOW_PYTHON
set -euo pipefail
source "$(dirname "$0")/setup_env.sh" test
major="${COLLFLOW_CUDA:-}"
if [ -z "$major" ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "install_gpu.sh: no nvidia-smi on PATH: this machine has no NVIDIA driver (set COLLFLOW_CUDA=12 or 13 to install anyway)" >&2
    exit 2
  fi
  ver="$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\)\..*/\1/p' | head -n 1)"
  if [ -z "$ver" ]; then
    echo "install_gpu.sh: could not read the CUDA version from nvidia-smi; set COLLFLOW_CUDA=12 or 13" >&2
    exit 2
  fi
  major="$ver"
fi
case "$major" in
  12) extra="gpu-cuda12" ;;
  13|14) extra="gpu-cuda13" ;;
  *) echo "install_gpu.sh: CUDA $major is not supported (CuPy wheels exist for 12 and 13)" >&2; exit 2 ;;
esac
echo "install_gpu.sh: the driver supports CUDA $major: installing .[$extra]"
"$PY" -m pip install -q --disable-pip-version-check -e ".[$extra]"
"$PY" -c "import cupy; print('CuPy', cupy.__version__, 'on', cupy.cuda.runtime.getDeviceCount(), 'GPU(s)')"
