import os
import sys

# tests import their helpers (gradcheck, tables) by module name
sys.path.insert(0, os.path.dirname(__file__))
from worlds import world  # noqa: E402,F401  (one test body, two worlds: tests/worlds.py)
# verify every kernel's output dtype/shape against the graph while testing
os.environ.setdefault("COLLFLOW_CHECK_OUTPUTS", "1")
# sessions with device 'auto' run on the CPU, also where a GPU is visible: the suite states
# CPU behaviour (plans, BLAS paths, TF1's CPU errors); tests/test_gpu.py pins /gpu:0 itself.
# COLLFLOW_TEST_DEVICE=gpu runs the whole suite on the GPU instead (a diagnostic: benchmarks/gpu_check.sh);
# COLLFLOW_TEST_DEVICE=sim on a simulated GPU (tests/simulated_device.py), where there is none
if os.environ.get("COLLFLOW_TEST_DEVICE") == "gpu":
    os.environ.pop("COLLFLOW_DEVICE", None)
elif os.environ.get("COLLFLOW_TEST_DEVICE") == "sim":
    import simulated_device  # noqa: E402
    simulated_device.install()
    # 'auto' picks the simulated GPU in this process; a child process (a script the test runs)
    # has no simulator and so runs on the CPU instead of failing to find /gpu:0
    os.environ.pop("COLLFLOW_DEVICE", None)
else:
    os.environ.setdefault("COLLFLOW_DEVICE", "/cpu:0")

# TensorFlow (the differential tests' yardstick) on one thread: its threaded reductions
# (oneDNN's filter gradients) sum in an order that varies with the machine's load, which moved
# a 30-step float32 program's losses by 1.6e-4 relative in one run of the suite; set before any
# test imports TensorFlow
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")

import pytest  # noqa: E402
import collflow as _cf  # noqa: E402  (after the environment above)

ON_DEVICE = os.environ.get("COLLFLOW_TEST_DEVICE") in ("gpu", "sim")


def pytest_collection_modifyitems(config, items):
    """On a device run, tests marked host_only (CPU plans' structure: BLAS fusion, gradients
    computed into the bucket, buffer forwarding, constant folding; TF's CPU-only errors) are
    skipped with their reason; their values are checked on the device by the rest of the suite."""
    if not ON_DEVICE:
        return
    for item in items:
        m = item.get_closest_marker("host_only")
        if m is not None:
            why = m.args[0] if m.args else "states CPU-only behaviour"
            item.add_marker(pytest.mark.skip(reason=f"host_only on a device run: {why}"))


@pytest.fixture
def graph():
    """A fresh graph, the default one for the test's body."""
    g = _cf.Graph()
    with g.as_default():
        yield g
