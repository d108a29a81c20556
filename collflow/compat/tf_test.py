"""TF1's `tf.test` namespace: TestCase, main, the GPU queries, the gradient checker,
Benchmark and mock."""
from __future__ import annotations

import os
import sys
import time
import unittest
from typing import Any, Dict, List, Optional
from unittest import mock  # noqa: F401  (tf.test.mock)

import numpy as np

from collflow.compat.gradient_checker import compute_gradient, compute_gradient_error  # noqa: F401
from collflow.compat.test_case import TestCase, get_temp_dir  # noqa: F401
from collflow.kernels import gpu as _gpu
from collflow.platform import tf_logging as _logging

__all__ = ["TestCase", "main", "get_temp_dir", "test_src_dir_path", "is_gpu_available", "gpu_device_name",
           "is_built_with_cuda", "is_built_with_gpu_support", "is_built_with_rocm", "is_built_with_xla",
           "compute_gradient", "compute_gradient_error", "Benchmark", "mock", "benchmark_config"]


def main(argv: Optional[List[str]] = None) -> None:
    """Runs the calling module's tests (unittest.main; pytest collects the same TestCases)."""
    unittest.main(module="__main__", argv=argv if argv is not None else sys.argv)


def test_src_dir_path(relative_path: str) -> str:
    """`relative_path` under the source tree's root (the directory holding the collflow package)."""
    import collflow
    root = os.path.dirname(os.path.dirname(os.path.abspath(collflow.__file__)))
    return os.path.join(root, relative_path)


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: Any = None) -> bool:
    """Whether collflow can run kernels on a GPU here (CuPy and a visible device)."""
    cp = _gpu.cupy_or_none()
    if cp is None:
        return False
    if min_cuda_compute_capability is not None:
        try:
            cc = cp.cuda.Device(0).compute_capability  # e.g. "90"
            have = (int(cc[:-1]), int(cc[-1]))
        except Exception:  # noqa: BLE001  (unknown: not good enough)
            return False
        return have >= tuple(min_cuda_compute_capability)
    return True


def gpu_device_name() -> str:
    """'/device:GPU:0' with a GPU, else ''."""
    return "/device:GPU:0" if is_gpu_available() else ""


def is_built_with_cuda() -> bool:
    """collflow is "built with CUDA" where CuPy imports (its GPU kernels come from CuPy)."""
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


is_built_with_gpu_support = is_built_with_cuda


def is_built_with_rocm() -> bool:
    return False


def is_built_with_xla() -> bool:
    return False


def benchmark_config() -> Any:
    """A ConfigProto for benchmarks (collflow has no graph rewrites to turn off)."""
    from collflow.runtime.config import ConfigProto
    return ConfigProto()


class Benchmark:
    """tf.test.Benchmark: `report_benchmark` records each report (in `self.reports`, and as a
    log line); `run_op_benchmark` times a fetch in a session and reports it."""

    def __init__(self) -> None:
        self.reports: List[Dict[str, Any]] = []

    def _get_name(self, overwrite_name: Optional[str] = None) -> str:
        if overwrite_name:
            return overwrite_name
        frame = sys._getframe(2)  # the benchmark method that called report_benchmark
        return f"{type(self).__name__}.{frame.f_code.co_name}"

    def report_benchmark(self, iters: Optional[int] = None, cpu_time: Optional[float] = None,
                         wall_time: Optional[float] = None, throughput: Optional[float] = None,
                         extras: Optional[Dict[str, Any]] = None, name: Optional[str] = None,
                         metrics: Optional[List[Dict[str, Any]]] = None) -> None:
        entry = {"name": self._get_name(name), "iters": iters, "cpu_time": cpu_time, "wall_time": wall_time,
                 "throughput": throughput, "extras": dict(extras or {}), "metrics": list(metrics or [])}
        self.reports.append(entry)
        _logging.info("Benchmark [%s] iters: %s, wall_time: %s, cpu_time: %s, throughput: %s, extras: %s",
                      entry["name"], iters, wall_time, cpu_time, throughput, entry["extras"])

    def run_op_benchmark(self, sess: Any, op_or_tensor: Any, feed_dict: Any = None, burn_iters: int = 2,
                         min_iters: int = 10, store_trace: bool = False, store_memory_usage: bool = True,
                         name: Optional[str] = None, extras: Optional[Dict[str, Any]] = None,
                         mbs: int = 0) -> Dict[str, Any]:
        """Runs op_or_tensor burn_iters times, then min_iters timed times; reports the median
        wall time per run and returns the report."""
        for _ in range(burn_iters):
            sess.run(op_or_tensor, feed_dict=feed_dict)
        deltas = []
        for _ in range(min_iters):
            t0 = time.time()
            sess.run(op_or_tensor, feed_dict=feed_dict)
            deltas.append(time.time() - t0)
        median = float(np.median(deltas)) if deltas else 0.0
        throughput = mbs / median if mbs and median > 0 else None
        extras = dict(extras or {})
        self.report_benchmark(iters=min_iters, wall_time=median, throughput=throughput, extras=extras,
                              name=self._get_name(name))
        out: Dict[str, Any] = {"iters": min_iters, "wall_time": median, "extras": extras, "name": name}
        if throughput is not None:
            out["throughput"] = throughput
        return out

    def evaluate(self, tensors: Any) -> Any:
        from collflow.runtime.session import Session, get_default_session
        sess = get_default_session()
        if sess is not None:
            return sess.run(tensors)
        with Session() as s:
            return s.run(tensors)
