"""GPU step time of collflow vs PyTorch eager on the same GPU, and GEMM TFLOP/s vs cuBLAS.

MLP 784-1024-1024-10 at batch 256 and 4096, and a small CNN (two conv3x3 + pool blocks on
28x28x1, batch 256), SGD; median of >= 50 steps after warm-up, timed with CUDA events.
Target: collflow <= 1.0x PyTorch eager.  Needs CuPy and a GPU (and torch with CUDA for the peer).

    python benchmarks/bench_gpu.py [--steps 50]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def cuda_time(fn, steps: int, warmup: int = 10, stream=None) -> float:
    """Median seconds of fn() between two CUDA events on `stream` (default: the current one)."""
    import cupy as cp
    stream = stream if stream is not None else cp.cuda.get_current_stream()
    for _ in range(warmup):
        fn()
    stream.synchronize()
    ts = []
    for _ in range(steps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(stream)
        fn()
        b.record(stream)
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
    return float(np.median(ts))


def graph_time(make_step, steps: int):
    """(seconds, None) for the step captured once into a CUDA graph and replayed, or
    (None, reason) when the step cannot be captured (a host synchronisation inside it, say).
    The step is built and warmed up on the capture stream so its buffers come from the pool."""
    import cupy as cp
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        fn = make_step()
        for _ in range(5):
            fn()
        s.synchronize()
        try:
            from collflow.kernels import gpu
            graph = gpu.capture_graph(fn, s)
        except Exception as e:  # the reason is the result: report it, do not hide it
            return None, f"{type(e).__name__}: {e}"[:300]
        return cuda_time(lambda: graph.launch(stream=s), steps, 5, stream=s), None


def collflow_step(model: str, batch: int):
    import collflow as cf
    from collflow import models
    g = cf.Graph()
    with g.as_default():
        opt = cf.train.GradientDescentOptimizer(0.01)
        m = (models.build_mlp(784, (1024, 1024), 10, optimizer=opt) if model == "mlp"
             else models.build_cnn((28, 28, 1), 10, filters=(16, 32), optimizer=opt))
        init = cf.global_variables_initializer()
    sess = cf.Session(graph=g, config={"device": "/gpu:0"})
    sess.run(init)
    rng = np.random.default_rng(0)
    shape = (batch, 784) if model == "mlp" else (batch, 28, 28, 1)
    import cupy as cp
    x = cp.asarray(rng.normal(size=shape).astype(np.float32))
    y = cp.asarray(rng.integers(0, 10, batch).astype(np.int32))
    run = sess.make_callable(m.train_op, [m.x, m.y])
    return lambda: run(x, y)


def torch_step(model: str, batch: int):
    import torch
    dev = "cuda"
    if model == "mlp":
        net = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                  torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
        x = torch.randn(batch, 784, device=dev)
    else:
        net = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                  torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                  torch.nn.Flatten(), torch.nn.Linear(32 * 7 * 7, 64), torch.nn.ReLU(),
                                  torch.nn.Linear(64, 10)).to(dev)
        x = torch.randn(batch, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    from collflow.kernels import gpu
    dev = gpu.setup()
    if dev is None:
        raise SystemExit("bench_gpu: no CuPy or no GPU on this machine; nothing to measure")
    import cupy as cp
    torch = common.try_import_torch()
    have_torch = torch is not None and torch.cuda.is_available()
    rows, res = [], {}
    for model, batch in (("mlp", 256), ("mlp", 4096), ("cnn", 256)):
        c = cuda_time(collflow_step(model, batch), args.steps)
        t = cuda_time(torch_step(model, batch), args.steps) if have_torch else None
        cg, why = graph_time(lambda: collflow_step(model, batch), args.steps)
        res[f"{model}_b{batch}"] = {"collflow_s": c, "torch_s": t, "ratio": (c / t) if t else None,
                                    "collflow_cuda_graph_s": cg, "cuda_graph_error": why,
                                    "graph_ratio": (cg / t) if (cg and t) else None}
        rows.append([f"{model} batch {batch}", f"{c * 1e3:.3f}", f"{t * 1e3:.3f}" if t else "n/a",
                     f"{c / t:.2f}" if t else "n/a", f"{cg * 1e3:.3f}" if cg else "failed",
                     f"{cg / t:.2f}" if (cg and t) else "n/a"])
        if why:
            print(f"{model} batch {batch}: CUDA graph capture failed: {why}")
    n = 8192
    a = cp.random.standard_normal((n, n), dtype=cp.float32)
    cf_gemm = cuda_time(lambda: cp.matmul(a, a), 20, 3)
    flops = 2 * n ** 3
    res["gemm_8192_f32"] = {"collflow_cupy_tflops": flops / cf_gemm / 1e12}
    if have_torch:
        ta = torch.randn(n, n, device="cuda")
        tt = cuda_time(lambda: ta @ ta, 20, 3)
        res["gemm_8192_f32"]["torch_cublas_tflops"] = flops / tt / 1e12
    name = cp.cuda.runtime.getDeviceProperties(dev.index)["name"].decode()
    slug = "".join(ch if ch.isalnum() else "_" for ch in name.lower().replace("nvidia ", "")).strip("_")
    payload = {"device": name, "cupy": cp.__version__, "torch": getattr(torch, "__version__", None),
               "steps": args.steps, "results": res}
    path = common.save_results(f"bench_gpu_{slug}", payload)
    g = res["gemm_8192_f32"]
    print(f"GEMM 8192^2 f32: collflow (CuPy) {g['collflow_cupy_tflops']:.1f} TFLOP/s, "
          f"cuBLAS via torch {g.get('torch_cublas_tflops', float('nan')):.1f} TFLOP/s")
    print(f"results: {path}")
    print(common.fmt_table(["step", "collflow ms", "torch ms", "x torch", "graph ms", "graph x torch"], rows))


if __name__ == "__main__":
    main()
