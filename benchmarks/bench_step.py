"""One SGD training step of an MLP 784-1024-1024-10 (ReLU), batch 256, float32, sparse softmax
cross-entropy: collflow vs PyTorch CPU eager vs a hand-written NumPy step, plus the GEMM floor.

    python benchmarks/bench_step.py [--repeats 7] [--steps 20] [--batch 256]

- collflow: `sess.run([loss, train_op], feed_dict)` with GradientDescentOptimizer (the plan is
  compiled in the warm-up; every timed step is a full user-level run call).
- PyTorch: nn.Sequential of Linear/ReLU, CrossEntropyLoss, optim.SGD, zero_grad/backward/step,
  with torch.set_num_threads set to NumPy's BLAS thread count so both use the same cores.
- NumPy: forward, backward and update written out by hand (the best a NumPy program does).
- GEMM floor: only the 8 matrix products of the step (3 forward, 3 weight gradients, 2 input
  gradients; no gradient for x), as np.matmul calls with preallocated outputs.  The same 8
  products in torch show how much of any gap is the GEMM library.  It is a reference, not a
  strict bound: where collflow fuses the SGD update into a weight-gradient product it calls
  the same BLAS with beta = 1, which skips the pass that zeroes a beta = 0 output.
- Per product: each of the 8 products alone (NumPy, torch, and the exact BLAS call collflow
  makes for it), to show which shapes the GEMM libraries differ on.
- Diagnostic row: the same collflow model in a session with fuse_ops off (no plan-level
  fusion), so the table shows what the fusion buys.

Each repeat times `--steps` consecutive steps of each implementation (interleaved, after a
warm-up) and takes their median; the table shows the median over repeats.  Before each
block of steps the process sleeps QUIET_S and then runs two untimed steps of the block's own
implementation: NumPy's OpenBLAS keeps its worker threads spinning for about 0.1-0.2 s after
its last call, and torch's OpenMP threads spin too, so a block timed right after another
library's block would share the cores with those spinners (measured here: a 256x1024x1024
torch GEMM ran up to 4x slower within 100 ms of a NumPy GEMM, a NumPy one 2x slower within
5 ms of a torch one).  Also reported: the peak memory of one collflow step (tracemalloc)
against the plan's live-set analysis.  Results go to benchmarks/results/bench_step.json.
"""
from __future__ import annotations

import argparse
import gc
import tracemalloc
from typing import Any, Callable, Dict, List, Optional, Tuple

import common  # sets sys.path and disables output checking before collflow loads
import numpy as np

import collflow as cf
from collflow import models

LR = 0.01
SIZES = (784, 1024, 1024, 10)
# idle time before each timed block: longer than any thread pool's spin-wait (see the docstring)
QUIET_S = 0.3
# the 8 products of a step, in order (dz: the logits' gradient; d2, d1: the hidden layers')
PRODUCTS = ("x @ W1", "h1 @ W2", "h2 @ W3", "h2^T @ dz  (gW3)", "dz @ W3^T  (d2)", "h1^T @ d2  (gW2)",
            "d2 @ W2^T  (d1)", "x^T @ d1  (gW1)")


# -- collflow ----------------------------------------------------------------------------

def build_collflow(batch: int, seed: int,
                   config: Optional[Dict[str, Any]] = None) -> Tuple[Any, Any, Any, List[np.ndarray]]:
    g = cf.Graph()
    with g.as_default():
        m = models.build_mlp(SIZES[0], SIZES[1:-1], SIZES[-1], optimizer=cf.train.GradientDescentOptimizer(LR),
                             seed=seed, global_step=False)
        init = cf.global_variables_initializer()
    sess = cf.Session(graph=g, config={"check_outputs": False, **(config or {})})
    sess.run(init)
    weights = sess.run(m.variables)  # the same start point for every implementation
    return g, m, sess, weights


# -- NumPy, by hand ----------------------------------------------------------------------

class NumpyMLP:
    """The step written directly in NumPy: in-place where the arrays are ours."""

    def __init__(self, weights: List[np.ndarray]):
        self.p = [w.copy() for w in weights]  # W1, b1, W2, b2, W3, b3

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        W1, b1, W2, b2, W3, b3 = self.p
        n = x.shape[0]
        h1 = x @ W1
        h1 += b1
        np.maximum(h1, 0, out=h1)
        h2 = h1 @ W2
        h2 += b2
        np.maximum(h2, 0, out=h2)
        z = h2 @ W3
        z += b3
        # softmax cross-entropy: d = (softmax(z) - onehot(y)) / n
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        rows = np.arange(n)
        loss = float(np.mean(np.log(s[:, 0]) - z[rows, y]))
        e /= s
        e[rows, y] -= 1.0
        e *= np.float32(1.0 / n)
        d3 = e
        gW3 = h2.T @ d3
        gb3 = d3.sum(axis=0)
        d2 = d3 @ W3.T
        d2 *= h2 > 0
        gW2 = h1.T @ d2
        gb2 = d2.sum(axis=0)
        d1 = d2 @ W2.T
        d1 *= h1 > 0
        gW1 = x.T @ d1
        gb1 = d1.sum(axis=0)
        lr = np.float32(LR)
        for p_, g_ in zip(self.p, (gW1, gb1, gW2, gb2, gW3, gb3)):
            g_ *= lr
            p_ -= g_
        return loss


class GemmFloor:
    """Just the 8 matrix products of one step, into preallocated outputs."""

    def __init__(self, weights: List[np.ndarray], x: np.ndarray):
        W1, _, W2, _, W3, _ = weights
        n = x.shape[0]
        f = np.float32
        self.x, self.W1, self.W2, self.W3 = x, W1, W2, W3
        self.h1 = np.empty((n, W1.shape[1]), f)
        self.h2 = np.empty((n, W2.shape[1]), f)
        self.z = np.empty((n, W3.shape[1]), f)
        self.gW1, self.gW2, self.gW3 = np.empty_like(W1), np.empty_like(W2), np.empty_like(W3)
        self.d2, self.d1 = np.empty_like(self.h2), np.empty_like(self.h1)
        self.flops = 2 * n * (SIZES[0] * SIZES[1] + SIZES[1] * SIZES[2] + SIZES[2] * SIZES[3]) * 3 \
            - 2 * n * SIZES[0] * SIZES[1]  # no input gradient for x

    def step(self) -> None:
        mm = np.matmul
        mm(self.x, self.W1, out=self.h1)
        mm(self.h1, self.W2, out=self.h2)
        mm(self.h2, self.W3, out=self.z)
        mm(self.h2.T, self.z, out=self.gW3)
        mm(self.z, self.W3.T, out=self.d2)
        mm(self.h1.T, self.d2, out=self.gW2)
        mm(self.d2, self.W2.T, out=self.d1)
        mm(self.x.T, self.d1, out=self.gW1)

    def products(self) -> List[Tuple[str, Callable[[], Any]]]:
        """The 8 products of step(), one callable each (for the per-product table)."""
        mm = np.matmul
        return [(name, (lambda a=a, b=b, o=o: mm(a, b, out=o))) for name, a, b, o in (
            (PRODUCTS[0], self.x, self.W1, self.h1), (PRODUCTS[1], self.h1, self.W2, self.h2),
            (PRODUCTS[2], self.h2, self.W3, self.z), (PRODUCTS[3], self.h2.T, self.z, self.gW3),
            (PRODUCTS[4], self.z, self.W3.T, self.d2), (PRODUCTS[5], self.h1.T, self.d2, self.gW2),
            (PRODUCTS[6], self.d2, self.W2.T, self.d1), (PRODUCTS[7], self.x.T, self.d1, self.gW1))]

    def collflow_calls(self) -> List[Tuple[str, Callable[[], Any]]]:
        """The BLAS call collflow's plan makes for each product: a plain matmul, except the
        weight gradients, accumulated into the weight with alpha = -lr, beta = 1 (the
        MatMul+ApplyGradientDescent node of kernels/fused_kernels.py; into copies here).
        [] when NumPy's BLAS cannot be called directly (collflow then runs plain matmuls)."""
        from collflow.kernels import blas
        if not blas.available():
            return []
        lr = -LR
        W = [self.W1.copy(), self.W2.copy(), self.W3.copy()]
        prods = dict(self.products())
        return [(name, prods[name]) for name in PRODUCTS[:3]] + [
            (PRODUCTS[3], lambda: blas.gemm(self.h2, True, self.z, False, W[2], lr, 1.0)),
            (PRODUCTS[4], prods[PRODUCTS[4]]),
            (PRODUCTS[5], lambda: blas.gemm(self.h1, True, self.d2, False, W[1], lr, 1.0)),
            (PRODUCTS[6], prods[PRODUCTS[6]]),
            (PRODUCTS[7], lambda: blas.gemm(self.x, True, self.d1, False, W[0], lr, 1.0)),
        ]


# -- PyTorch ---------------------------------------------------------------------------------

def build_torch(torch: Any, weights: List[np.ndarray], x: np.ndarray, y: np.ndarray) -> Callable[[], float]:
    nn = torch.nn
    layers = []
    for i in range(3):
        lin = nn.Linear(SIZES[i], SIZES[i + 1])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(weights[2 * i].T.copy()))
            lin.bias.copy_(torch.from_numpy(weights[2 * i + 1]))
        layers.append(lin)
        if i < 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    crit = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    xt = torch.from_numpy(x)
    yt = torch.from_numpy(y.astype(np.int64))

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        loss = crit(model(xt), yt)
        loss.backward()
        opt.step()
        return loss

    return step


def build_torch_floor(torch: Any, weights: List[np.ndarray], x: np.ndarray) -> Callable[[], None]:
    """The same 8 matrix products in torch (its GEMM library, not NumPy's), outputs preallocated."""
    W1, _, W2, _, W3, _ = [torch.from_numpy(w) for w in weights]
    xt = torch.from_numpy(x)
    n = x.shape[0]
    h1, h2, z = torch.empty(n, SIZES[1]), torch.empty(n, SIZES[2]), torch.empty(n, SIZES[3])
    gW1, gW2, gW3 = torch.empty_like(W1), torch.empty_like(W2), torch.empty_like(W3)
    d2, d1 = torch.empty_like(h2), torch.empty_like(h1)
    mm = torch.mm
    prods = [(name, (lambda a=a, b=b, o=o: mm(a, b, out=o))) for name, a, b, o in (
        (PRODUCTS[0], xt, W1, h1), (PRODUCTS[1], h1, W2, h2), (PRODUCTS[2], h2, W3, z), (PRODUCTS[3], h2.T, z, gW3),
        (PRODUCTS[4], z, W3.T, d2), (PRODUCTS[5], h1.T, d2, gW2), (PRODUCTS[6], d2, W2.T, d1),
        (PRODUCTS[7], xt.T, d1, gW1))]

    def step() -> None:
        mm(xt, W1, out=h1)
        mm(h1, W2, out=h2)
        mm(h2, W3, out=z)
        mm(h2.T, z, out=gW3)
        mm(z, W3.T, out=d2)
        mm(h1.T, d2, out=gW2)
        mm(d2, W2.T, out=d1)
        mm(xt.T, d1, out=gW1)
    step.products = prods  # type: ignore[attr-defined]
    return step


# -- memory ------------------------------------------------------------------------------

_NO_ALLOC = {"VarHandle", "ReadVariable", "Const", "Placeholder", "PlaceholderWithDefault", "NoOp",
             "Identity", "Reshape", "StopGradient", "ExpandDims", "Squeeze"}


def _allocates(op: Any) -> bool:
    """Whether an op's outputs are fresh arrays (not views of variables, feeds or constants)."""
    t = op.type
    return not (t in _NO_ALLOC or t.startswith(("Assign", "Apply", "ResourceApply", "Scatter")))


def live_set_analysis(plan: Any, batch: int) -> Dict[str, Any]:
    """Bytes of the largest set of intermediates alive at once, following the plan's order and
    its free-after-last-use rule, vs the sum of all intermediates (what keeping every value
    would cost).  Unknown (batch) dims count as `batch`."""
    order = plan.ops
    fetched = {t for t in plan.fetches if t is not None}
    fed = set(plan.feeds)

    def nbytes(t: Any) -> int:
        if t.dtype.name == "resource" or t.shape.rank is None:
            return 0
        n = 1
        for d in t.shape.dims:
            n *= batch if d is None else int(d)
        return n * t.dtype.np.itemsize

    last_use: Dict[Any, int] = {}
    for i, op in enumerate(order):
        for t in op.inputs:
            last_use[t] = i
    live: Dict[Any, int] = {}
    peak, peak_at, total = 0, None, 0
    for i, op in enumerate(order):
        outs = {t: nbytes(t) for t in op.outputs if t not in fed} if _allocates(op) else {}
        total += sum(outs.values())
        cur = sum(live.values()) + sum(outs.values())
        if cur > peak:
            peak, peak_at = cur, op
        for t, b in outs.items():
            if t in last_use and last_use[t] > i or t in fetched:
                live[t] = b
        for t in op.inputs:
            if last_use.get(t) == i and t not in fetched:
                live.pop(t, None)
    return {"ops": len(order), "live_set_peak_bytes": peak,
            "live_set_peak_at": f"{peak_at.name} ({peak_at.type})" if peak_at is not None else None,
            "sum_of_intermediates_bytes": total}


def traced_peak(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated (above what was live before) while fn() runs."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


# -- where the time goes ---------------------------------------------------------------------

def op_time_breakdown(plan: Any, run: Callable[[], Any], steps: int) -> Dict[str, Dict[str, float]]:
    """Seconds per step spent in each op type's kernels (plus 'executor' for the rest of the
    run call), by timing every kernel of the compiled plan for `steps` runs.  Relies on the
    generated plan calling its kernels through globals k0..kN; {} if that ever changes."""
    import time
    glb = getattr(plan.fn, "__globals__", {})
    names = [f"k{i}" for i in range(len(plan.ops))]
    if not all(n in glb for n in names):
        return {}
    acc: Dict[str, List[float]] = {}
    orig = {n: glb[n] for n in names}

    def timed(fn: Callable, key: str) -> Callable:
        pc = time.perf_counter
        slot = acc.setdefault(key, [0.0, 0])

        def call(*a: Any) -> Any:
            t0 = pc()
            try:
                return fn(*a)
            finally:
                slot[0] += pc() - t0
                slot[1] += 1
        return call
    try:
        for n, op in zip(names, plan.ops):
            glb[n] = timed(orig[n], op.type)
        t0 = time.perf_counter()
        for _ in range(steps):
            run()
        total = time.perf_counter() - t0
    finally:
        glb.update(orig)
    out = {k: {"s_per_step": v[0] / steps, "calls_per_step": v[1] / steps} for k, v in acc.items()}
    in_kernels = sum(v[0] for v in acc.values())
    out["executor + session (rest)"] = {"s_per_step": (total - in_kernels) / steps, "calls_per_step": 1.0}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["s_per_step"]))


def quiesce(fn: Callable[[], Any]) -> None:
    """Lets every thread pool's spinning workers go to sleep, then warms `fn`'s own up."""
    import time
    time.sleep(QUIET_S)
    fn()
    fn()


# -- main ---------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20, help="timed steps per repeat (median taken)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    x = rng.random((args.batch, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, SIZES[-1], args.batch).astype(np.int32)
    threads = common.blas_threads() or 1
    notes: List[str] = []
    busy = common.load_note()
    if busy:
        notes.append("at start: " + busy)

    g, m, sess, weights = build_collflow(args.batch, args.seed)
    feed = {m.x: x, m.y: y}
    fetches = [m.loss, m.train_op]

    def cf_step() -> Any:
        return sess.run(fetches, feed)

    npm = NumpyMLP(weights)
    floor = GemmFloor(weights, x)

    torch = common.try_import_torch()
    torch_step = None
    if torch is None:
        notes.append("PyTorch is not installed: its column is skipped (pip install -e '.[bench]').")
    else:
        torch.set_num_threads(threads)
        torch_step = build_torch(torch, weights, x, y)
        notes.append(f"torch.set_num_threads({threads}) to match NumPy's BLAS threads ({threads}).")

    # correctness first: one step from the same weights gives the same loss everywhere
    first = {"collflow": float(cf_step()[0]), "numpy": npm.step(x, y)}
    if torch_step is not None:
        first["torch"] = float(torch_step().item())
    spread = max(first.values()) - min(first.values())
    notes.append("first-step losses agree: " + ", ".join(f"{k} {v:.6f}" for k, v in first.items())
                 + f" (spread {spread:.2e})")

    impls: Dict[str, Callable[[], Any]] = {"collflow": cf_step}
    # diagnostic, not the headline: the same model in a session without plan-level fusion
    _, m_nf, sess_nf, _ = build_collflow(args.batch, args.seed, {"fuse_ops": False})
    feed_nf, fetches_nf = {m_nf.x: x, m_nf.y: y}, [m_nf.loss, m_nf.train_op]
    first_nf = float(sess_nf.run(fetches_nf, feed_nf)[0])
    impls["collflow, fuse_ops off (diagnostic)"] = lambda: sess_nf.run(fetches_nf, feed_nf)
    from collflow.kernels import blas
    notes.append("row 'collflow, fuse_ops off (diagnostic)': the same model in a Session with config "
                 f"{{'fuse_ops': False}} (first-step loss {first_nf:.6f}); NumPy's BLAS called directly: "
                 f"{blas.library_path() or 'not available (fused updates fall back to NumPy)'}")
    impls["numpy (by hand)"] = lambda: npm.step(x, y)
    impls["GEMM floor, numpy (8 mm)"] = floor.step
    if torch_step is not None:
        impls["pytorch eager"] = torch_step
        impls["GEMM floor, torch (8 mm)"] = build_torch_floor(torch, weights, x)
    for fn in impls.values():
        for _ in range(args.warmup):
            fn()
    per_repeat: Dict[str, List[float]] = {k: [] for k in impls}
    names = list(impls)
    for r in range(args.repeats):
        # rotate the order each repeat so no implementation always runs right after the same one
        for name in names[r % len(names):] + names[:r % len(names)]:
            quiesce(impls[name])
            per_repeat[name].append(common.median(common.time_calls(impls[name], args.steps)))

    # memory of one collflow step vs what the plan's order says it needs
    plan = sess.plan_for(fetches, feed)
    ls = live_set_analysis(plan, args.batch)
    cf_peak = traced_peak(cf_step)
    breakdown = op_time_breakdown(plan, cf_step, args.steps)
    np_peak = traced_peak(lambda: npm.step(x, y))
    param_bytes = sum(w.nbytes for w in weights)
    sess.close()
    sess_nf.close()

    # each product alone: NumPy, torch, and the call collflow makes for it
    cols: Dict[str, List[Tuple[str, Callable[[], Any]]]] = {"numpy": floor.products()}
    if torch_step is not None:
        cols["torch"] = impls["GEMM floor, torch (8 mm)"].products  # type: ignore[attr-defined]
    cf_calls = floor.collflow_calls()
    if cf_calls:
        cols["collflow's call"] = cf_calls
    per_product: Dict[str, Dict[str, float]] = {name: {} for name in PRODUCTS}
    for k, (name, _) in enumerate(cols["numpy"]):
        reps: Dict[str, List[float]] = {c: [] for c in cols}
        for c in cols.values():
            for _ in range(3):
                c[k][1]()
        for _ in range(args.repeats):
            for c, calls in cols.items():
                quiesce(calls[k][1])
                reps[c].append(common.median(common.time_calls(calls[k][1], 10)))
        per_product[name] = {c: common.median(v) for c, v in reps.items()}

    busy = common.load_note()
    if busy:
        notes.append("at end: " + busy)
    res = {k: common.summarize(v) for k, v in per_repeat.items()}
    t_cf = res["collflow"]["median"]
    t_floor = res["GEMM floor, numpy (8 mm)"]["median"]
    t_torch = res["pytorch eager"]["median"] if "pytorch eager" in res else None
    rows = []
    for name, r in res.items():
        rows.append([name, r["median"] * 1e3, r["min"] * 1e3, r["max"] * 1e3,
                     floor.flops / r["median"] / 1e9, r["median"] / t_floor,
                     (r["median"] / t_torch) if t_torch else None])

    mem = {"collflow_step_traced_peak_bytes": cf_peak, "numpy_step_traced_peak_bytes": np_peak,
           "parameter_bytes": param_bytes, **ls}
    mb = 1 / 2 ** 20
    payload = {
        "config": {"sizes": SIZES, "batch": args.batch, "dtype": "float32", "lr": LR, "repeats": args.repeats,
                   "steps_per_repeat": args.steps, "warmup": args.warmup, "threads": threads},
        "seconds_per_step": res, "first_step_losses": first, "memory": mem,
        "ratio_collflow_over_torch": (t_cf / t_torch) if t_torch else None,
        "ratio_collflow_over_gemm_floor": t_cf / t_floor, "collflow_time_by_op_type": breakdown,
        "seconds_per_product": per_product,
        "notes": notes,
    }
    path = common.save_results("bench_step", payload)

    print(f"MLP {'-'.join(map(str, SIZES))} (ReLU), batch {args.batch}, float32, SGD lr {LR}, "
          f"{threads} BLAS threads; {args.repeats} repeats x median of {args.steps} steps")
    for n in notes:
        print("note:", n)
    print()
    print(f"peak memory of one collflow step (tracemalloc): {cf_peak * mb:.2f} MiB "
          f"(hand NumPy step: {np_peak * mb:.2f} MiB; parameters {param_bytes * mb:.2f} MiB)")
    print(f"  live-set analysis of the plan ({ls['ops']} ops, free after last use): largest live set "
          f"{ls['live_set_peak_bytes'] * mb:.2f} MiB at {ls['live_set_peak_at']}; "
          f"sum of all intermediates {ls['sum_of_intermediates_bytes'] * mb:.2f} MiB")
    print("  (the largest live set is what freeing each intermediate after its last consumer costs; the sum is "
          "what keeping every value would cost; tracemalloc above the live set is kernel scratch and "
          "copy-on-write copies of variables.)")
    if breakdown:
        print()
        print(f"where a collflow step's time goes ({args.steps} steps, every kernel timed; 'A+B': a fused node):")
        tot = sum(w["s_per_step"] for w in breakdown.values())
        print(common.fmt_table(["op type", "calls/step", "ms/step", "share"],
                               [[k, v["calls_per_step"], v["s_per_step"] * 1e3, f"{v['s_per_step'] / tot:.0%}"]
                                for k, v in breakdown.items()]))
    print()
    print(f"each product alone (ms, median of {args.repeats} x median of 10 calls, operands hot in cache):")
    names_c = list(cols)
    print(common.fmt_table(["product"] + names_c,
                           [[p] + [per_product[p].get(c, float("nan")) * 1e3 for c in names_c] for p in PRODUCTS]
                           + [["sum"] + [sum(per_product[p].get(c, 0.0) for p in PRODUCTS) * 1e3 for c in names_c]]))
    print(f"results: {path}")
    print()
    print(common.fmt_table(["step", "median ms", "min ms", "max ms", "GFLOP/s", "x floor", "x torch"], rows))
    if t_torch:
        print(f"\ncollflow / torch = {t_cf / t_torch:.3f}  (target <= 1.0)")
    else:
        print(f"\ncollflow / GEMM floor = {t_cf / t_floor:.3f}  (torch not installed)")


if __name__ == "__main__":
    main()
