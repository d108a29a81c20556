"""Per-op dispatch cost: a chain of 1000 tiny adds (x = x + 1.0 on a float32 of shape (1,))
run by one collflow `sess.run`, vs the same 1000 `np.add` calls in a Python loop, vs 1000
PyTorch eager adds.

    python benchmarks/bench_dispatch.py [--ops 1000] [--repeats 7] [--runs 20]

The arrays are so small that the arithmetic is negligible: what is measured is the cost of
getting from one op to the next.  Rows:
- collflow sess.run: the whole user-level call (fetch/feed handling included) divided by
  the number of Add ops; the chain shares one Const 1.0 so the plan is 1000 Adds + 1 Const.
- collflow make_callable: the same plan through Session.make_callable (less per-call work).
- collflow x + 1.0 literal: each add converts its own 1.0, so the plan runs 1000 Const ops
  too; per Add op (i.e. two plan ops each).
- numpy: `x = np.add(x, one)` 1000 times in a Python loop (the floor for any NumPy-kernel
  executor driven from Python).
- torch eager: `x = x + one` 1000 times on a torch tensor (no autograd).
Each repeat times `--runs` runs and takes the median; the table shows the median over
repeats in microseconds per op, and the overhead above NumPy.
Results go to benchmarks/results/bench_dispatch.json.
"""
from __future__ import annotations

import argparse
from typing import Any, Callable, Dict, List

import common  # sets sys.path and disables output checking before collflow loads
import numpy as np

import collflow as cf


def build_chain(n: int, literal: bool) -> tuple:
    g = cf.Graph()
    with g.as_default():
        x0 = cf.placeholder(cf.float32, (1,), name="x")
        one = cf.constant(1.0, dtype=cf.float32, name="one")
        x = x0
        for _ in range(n):
            x = x + 1.0 if literal else x + one
    return g, x0, x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--runs", type=int, default=20, help="timed runs per repeat (median taken)")
    args = ap.parse_args()
    n = args.ops
    notes: List[str] = []
    busy = common.load_note()
    if busy:
        notes.append("at start: " + busy)
    x_np = np.zeros((1,), np.float32)

    g, x0, out = build_chain(n, literal=False)
    sess = cf.Session(graph=g, config={"check_outputs": False})
    feed = {x0: x_np}
    plan = sess.plan_for(out, feed)
    call = sess.make_callable(out, [x0])
    g2, x0b, outb = build_chain(n, literal=True)
    sess2 = cf.Session(graph=g2, config={"check_outputs": False})
    feed2 = {x0b: x_np}
    plan2 = sess2.plan_for(outb, feed2)

    one = np.asarray(np.float32(1.0))

    def np_chain() -> Any:
        x = x_np
        add = np.add
        for _ in range(n):
            x = add(x, one)
        return x

    impls: Dict[str, Callable[[], Any]] = {
        "collflow sess.run": lambda: sess.run(out, feed),
        "collflow make_callable": lambda: call(x_np),
        "collflow x + 1.0 literal": lambda: sess2.run(outb, feed2),
        "numpy loop (np.add)": np_chain,
    }
    torch = common.try_import_torch()
    if torch is None:
        notes.append("PyTorch is not installed: its row is skipped (pip install -e '.[bench]').")
    else:
        torch.set_num_threads(common.blas_threads() or 1)
        xt0 = torch.zeros(1, dtype=torch.float32)
        one_t = torch.tensor(1.0, dtype=torch.float32)

        def torch_chain() -> Any:
            x = xt0
            for _ in range(n):
                x = x + one_t
            return x

        def torch_run() -> Any:
            with torch.inference_mode():
                return torch_chain()
        impls["torch eager"] = torch_run

    # every implementation computes the same thing
    results = {k: float(np.asarray(fn()).reshape(-1)[0]) for k, fn in impls.items()}
    assert all(v == float(n) for v in results.values()), results
    notes.append(f"plans: {len(plan.ops)} ops (shared Const), {len(plan2.ops)} ops (literal 1.0 per add)")

    for fn in impls.values():
        for _ in range(3):
            fn()
    per_repeat: Dict[str, List[float]] = {k: [] for k in impls}
    for _ in range(args.repeats):
        for name, fn in impls.items():
            per_repeat[name].append(common.median(common.time_calls(fn, args.runs)))
    sess.close()
    sess2.close()

    busy = common.load_note()
    if busy:
        notes.append("at end: " + busy)
    res = {k: common.summarize(v) for k, v in per_repeat.items()}
    us = {k: r["median"] / n * 1e6 for k, r in res.items()}
    base = us["numpy loop (np.add)"]
    rows = [[k, us[k], res[k]["min"] / n * 1e6, res[k]["max"] / n * 1e6, us[k] - base, us[k] / base]
            for k in res]
    payload = {"config": {"ops": n, "repeats": args.repeats, "runs_per_repeat": args.runs, "shape": [1],
                          "dtype": "float32"},
               "seconds_per_run": res, "us_per_op": us, "notes": notes,
               "collflow_overhead_us_per_op": us["collflow sess.run"] - base}
    path = common.save_results("bench_dispatch", payload)

    print(f"chain of {n} adds on a float32 of shape (1,), one run each; {args.repeats} repeats x median of "
          f"{args.runs} runs")
    for s in notes:
        print("note:", s)
    print(f"results: {path}")
    print()
    print(common.fmt_table(["chain of adds", "us/op", "min", "max", "over numpy", "x numpy"], rows))
    print(f"\ncollflow sess.run: {us['collflow sess.run']:.3f} us/op (target <= 2 us/op); "
          f"numpy {base:.3f} us/op" + (f"; torch {us['torch eager']:.3f} us/op" if "torch eager" in us else ""))


if __name__ == "__main__":
    main()
