"""Backup ranks vs stragglers at np = 3 (launches itself under mpirun).

Measures the median step time of a data-parallel MLP step (OMP_NUM_THREADS=1 per rank):
  1. no straggler, b = 0                       (the baseline)
  2. rank 2 made 4x slow, b = 0               (everyone waits for it)
  3. rank 2 made 4x slow, b = 1               (the quorum of 2 goes on without it)
and, in the random-straggler mode (each step a rank drawn from a seeded RNG is slowed by a
delay drawn from [2, 6] x the baseline step), the wall time to reach a target training loss
with b = 0 and b = 1.  The slowdown is a real delay inside the step (a cancellable Delay op
on the forward path), not a skipped computation.  Target: case 3 <= 1.2 x case 1.

    python benchmarks/bench_stragglers.py [--np 3] [--steps 30]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def worker(args: argparse.Namespace) -> None:
    import common  # before collflow loads (it turns off output checking)
    import collflow as cf
    comm = cf.comm.init(backend="mpi", timeout=120)
    r, n = comm.rank, comm.size
    # big enough that a step (tens of ms) dwarfs the quorum messages' latency on a loaded machine
    per_rank, din, hid, classes = 256, 512, 1024, 10
    rng = np.random.default_rng(0)
    w_true = rng.normal(size=(din, classes))
    steps_data = args.steps * 4 + 50
    xs = rng.normal(size=(steps_data, per_rank * n, din)).astype(np.float32)
    ys = np.argmax(xs @ w_true, axis=-1).astype(np.int32)

    def build(b: int):
        g, x, y, slow, loss, opt, _train, init, bcast = common.straggler_graph(cf, comm, din, hid, classes, 0.05, b)
        return g, x, y, slow, loss, opt, init, bcast

    def run(b: int, delay_fn, steps: int, target: float = None):
        g, x, y, slow, loss, opt, init, bcast = build(b)
        times, losses = [], []
        t_start = None
        reached = None
        with cf.Session(graph=g, config={"comm": comm}) as s:
            s.run(init)
            s.run(bcast)
            for k in range(steps + 3):
                sl = slice(r * per_rank, (r + 1) * per_rank)
                comm.barrier()
                if k == 3:
                    t_start = time.perf_counter()
                t0 = time.perf_counter()
                lv = opt.run_step(s, loss, {x: xs[k, sl], y: ys[k, sl], slow: delay_fn(k)})
                if k >= 3:
                    times.append(time.perf_counter() - t0)
                # the step's mean loss over the ranks that computed one
                got = np.array([np.nan if lv is None else float(lv)], dtype=np.float64)
                allv = comm.allgather(got)
                lm = float(np.nanmean(allv))
                losses.append(lm)
                if target is not None and k >= 3 and reached is None and lm <= target:
                    reached = time.perf_counter() - t_start
                    break
            late = [h["late"] for h in opt.quorum_history(s)]
            opt.close(s)
        return float(np.median(times)), reached, losses, late

    base, _, _, _ = run(0, lambda k: 0.0, args.steps)
    slow_delay = 3.0 * base  # compute + 3x compute = 4x slow
    t_b0, _, _, _ = run(0, lambda k: slow_delay if r == 2 else 0.0, args.steps)
    t_b1, _, _, late1 = run(1, lambda k: slow_delay if r == 2 else 0.0, args.steps)

    pick = np.random.default_rng(42)
    plan = [(int(pick.integers(0, n)), float(pick.uniform(2, 6)) * base) for _ in range(steps_data)]

    def rand_delay(k: int) -> float:
        who, d = plan[k]
        return d if r == who else 0.0
    _, _, losses_ref, _ = run(0, lambda k: 0.0, args.steps * 2)
    target = float(np.mean(losses_ref[-5:])) * 1.05
    limit = args.steps * 4
    _, ttt_b0, l0, _ = run(0, rand_delay, limit, target)
    _, ttt_b1, l1, late_r = run(1, rand_delay, limit, target)
    if r == 0:
        out = dict(np=n, base_step_s=base, straggler_delay_s=slow_delay,
                   step_no_straggler_b0=base, step_straggler_b0=t_b0, step_straggler_b1=t_b1,
                   ratio_b1_vs_none=t_b1 / base, ratio_b0_vs_none=t_b0 / base,
                   late_ranks_b1=late1[:10], target_loss=target,
                   time_to_target_b0=ttt_b0, time_to_target_b1=ttt_b1,
                   steps_to_target_b0=len(l0) - 3, steps_to_target_b1=len(l1) - 3)
        print("RESULT " + json.dumps(out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--np", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    from common import fmt_table, launch_mpi, machine_info, save_results
    res = launch_mpi(__file__, args.np, ["--steps", str(args.steps)])
    payload = {"benchmark": "bench_stragglers", "machine": machine_info(), "results": res,
               "note": f"np={args.np} on a {os.cpu_count()}-core machine (oversubscribed when np > cores)"}
    path = save_results("bench_stragglers", payload)
    rows = [["no straggler, b=0", f"{res['step_no_straggler_b0'] * 1e3:.1f}", "1.00"],
            ["rank 2 4x slow, b=0", f"{res['step_straggler_b0'] * 1e3:.1f}", f"{res['ratio_b0_vs_none']:.2f}"],
            ["rank 2 4x slow, b=1", f"{res['step_straggler_b1'] * 1e3:.1f}", f"{res['ratio_b1_vs_none']:.2f}"]]
    print(f"random stragglers, time to loss {res['target_loss']:.3f}: "
          f"b=0 {res['time_to_target_b0']} s ({res['steps_to_target_b0']} steps), "
          f"b=1 {res['time_to_target_b1']} s ({res['steps_to_target_b1']} steps)")
    print(f"results: {path}")
    print(fmt_table(["case (np=%d)" % args.np, "median step ms", "x no-straggler"], rows))
    print(f"target: b=1 with a 4x-slow rank <= 1.2x the no-straggler step -> "
          f"{'MET' if res['ratio_b1_vs_none'] <= 1.2 else 'MISSED'} ({res['ratio_b1_vs_none']:.2f}x)")


if __name__ == "__main__":
    main()
