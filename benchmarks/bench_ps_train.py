"""The PS headline, end to end: `train.py --model wide_deep` in PS mode against allgather.

    python benchmarks/bench_ps_train.py [--np 2] [--repeats 7] [--steps 500] [--save]

Runs the user's command itself, `mpiexec -n NP python scripts/train.py --model wide_deep
--vocab-size 1000000 --embedding-dim 64 --mode {ps,allreduce}` (train.py's defaults otherwise:
batch 64 per rank, Adam, 8 fields), in fresh processes, the modes interleaved (their order
rotating from one round to the next, so drifting load falls on all alike). `--mode ps` shards
both tables over the ranks; `--mode allreduce` replicates them and allgathers their sparse
gradients: Horovod's sparse path and the strongest peer for this model (a dense all-reduce of a
1M-row table is 10-20x slower, bench_ps_vs_allreduce.py). Per run: train.py's samples/s (all
ranks, the training loop only) and its peak resident memory per rank (the larger rank's
ru_maxrss). Reported: the median over the rounds of each mode, and the median of the per-round
ratios (PS / allgather). Targets (issue 20): samples/s >= 1.0x allgather, peak memory <= 0.65x.
A third job per round runs PS mode with `--ps-prefetch` (the next batch's route carried in this
step's gradient push: one all-to-all a step fewer, the same parameters), reported against
plain PS mode the same way.
Results: benchmarks/results/bench_ps_train.json (benchmarks/results/local/ without --save).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402  (results directory, machine description)

NAME = "bench_ps_train"
MODES = ("ps", "allreduce", "ps-prefetch")  # "allreduce": train.py's replicated tables, sparse allgather
FLAGS = {"ps": ["--mode", "ps"], "allreduce": ["--mode", "allreduce"], "ps-prefetch": ["--mode", "ps", "--ps-prefetch"]}
TRAIN = os.path.join(common.ROOT, "scripts", "train.py")


def run_once(np_: int, mode: str, vocab: int, dim: int, steps: int, timeout: int) -> Optional[Dict[str, Any]]:
    """One train.py job; its metrics line, or None (said on stdout) when it failed."""
    fd, path = tempfile.mkstemp(suffix=".json", prefix="bench_ps_train_")
    os.close(fd)
    mpiexec, env = common.mpi_launch_env()
    cmd = [mpiexec, "-n", str(np_), "--oversubscribe", "--bind-to", "none", sys.executable, TRAIN,
           "--model", "wide_deep", "--vocab-size", str(vocab), "--embedding-dim", str(dim), *FLAGS[mode],
           "--steps", str(steps), "--metrics-out", path]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            print(f"  FAILED (rc {p.returncode}): {' '.join(cmd[1:])}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}",
                  flush=True)
            return None
        with open(path) as f:
            res = json.loads(f.read())
        res["job_wall_s"] = time.perf_counter() - t
        res["variant"] = mode
        res["load_before"] = load
        return res
    except subprocess.TimeoutExpired:
        print(f"  TIMED OUT after {timeout} s: {mode} np={np_}", flush=True)
        return None
    finally:
        os.remove(path)


load: Optional[float] = None


def main() -> None:
    global load
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--repeats", type=int, default=7, help="rounds, each running both modes (default 7)")
    p.add_argument("--steps", type=int, default=500, help="train.py --steps (default 500)")
    p.add_argument("--vocab", type=int, default=1_000_000, help="train.py --vocab-size (default 1000000)")
    p.add_argument("--dim", type=int, default=64, help="train.py --embedding-dim (default 64)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per job (default 900)")
    p.add_argument("--max-load", type=float, default=None,
                   help="before each round, wait until the 1-minute load average is below this")
    p.add_argument("--max-wait", type=float, default=300.0, help="seconds to wait for that (default 300)")
    a = p.parse_args()

    runs: List[Dict[str, Any]] = []
    notes: List[str] = []
    for r in range(a.repeats):
        if a.max_load is not None:
            notes += common.wait_for_quiet(a.max_load, a.max_wait)
        la = common.load_average()
        load = la[0] if la else None
        order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]  # each variant leads a round in turn
        for mode in order:
            res = run_once(a.np, mode, a.vocab, a.dim, a.steps, a.timeout)
            if res is None:
                continue
            res["round"] = r
            runs.append(res)
            print(f"round {r} {mode:9s}: {res['samples_per_sec']:9,.0f} samples/s  peak {res['peak_rss_mb']:7.0f} MB"
                  f"  loss {res['initial_loss']:.4f} -> {res['final_loss']:.4f}", flush=True)

    def med(xs: List[float]) -> Optional[float]:
        return common.median(xs) if xs else None

    by = {m: [x for x in runs if x["variant"] == m] for m in MODES}
    paired = []
    for r in range(a.repeats):
        one = {m: next((x for x in by[m] if x["round"] == r), None) for m in MODES}
        if one["ps"] and one["allreduce"]:
            paired.append({"round": r,
                           "speed_ratio": one["ps"]["samples_per_sec"] / one["allreduce"]["samples_per_sec"],
                           "memory_ratio": one["ps"]["peak_rss_mb"] / one["allreduce"]["peak_rss_mb"]})
            if one["ps-prefetch"]:
                paired[-1]["prefetch_vs_ps"] = one["ps-prefetch"]["samples_per_sec"] / one["ps"]["samples_per_sec"]
                paired[-1]["prefetch_same_loss"] = one["ps-prefetch"]["final_loss"] == one["ps"]["final_loss"]
    summary = {
        "np": a.np, "vocab_size": a.vocab, "embedding_dim": a.dim, "steps": a.steps, "rounds": a.repeats,
        "ps_samples_per_sec": med([x["samples_per_sec"] for x in by["ps"]]),
        "allgather_samples_per_sec": med([x["samples_per_sec"] for x in by["allreduce"]]),
        "ps_peak_rss_mb": med([x["peak_rss_mb"] for x in by["ps"]]),
        "allgather_peak_rss_mb": med([x["peak_rss_mb"] for x in by["allreduce"]]),
        "speed_ratio_median": med([x["speed_ratio"] for x in paired]),
        "speed_ratio_range": [min(x["speed_ratio"] for x in paired), max(x["speed_ratio"] for x in paired)]
        if paired else None,
        "memory_ratio_median": med([x["memory_ratio"] for x in paired]),
        "ps_prefetch_samples_per_sec": med([x["samples_per_sec"] for x in by["ps-prefetch"]]),
        "ps_prefetch_peak_rss_mb": med([x["peak_rss_mb"] for x in by["ps-prefetch"]]),
        "prefetch_vs_ps_median": med([x["prefetch_vs_ps"] for x in paired if "prefetch_vs_ps" in x]),
        "prefetch_same_final_loss": all(x.get("prefetch_same_loss", True) for x in paired),
    }
    s, m = summary["speed_ratio_median"], summary["memory_ratio_median"]
    summary["speed_target_met"] = None if s is None else bool(s >= 1.0)
    summary["memory_target_met"] = None if m is None else bool(m <= 0.65)
    rows = [[mode_name, len(by[mode]), summary[f"{key}_samples_per_sec"], summary[f"{key}_peak_rss_mb"]]
            for mode, mode_name, key in (("ps", "ps (sharded)", "ps"),
                                         ("allreduce", "allgather (replicated)", "allgather"),
                                         ("ps-prefetch", "ps, routes prefetched", "ps_prefetch"))]
    print()
    print(common.fmt_table(["mode", "runs", "samples/s (median)", "peak MB/rank (median)"], rows))
    if s is not None:
        lo, hi = summary["speed_ratio_range"]
        print(f"\nPS / allgather: samples/s {s:.2f}x (rounds {lo:.2f}-{hi:.2f}x; target >= 1.0x: "
              f"{'met' if s >= 1.0 else 'NOT met'}), peak memory {m:.2f}x (target <= 0.65x: "
              f"{'met' if m <= 0.65 else 'NOT met'})")
    if summary["prefetch_vs_ps_median"] is not None:
        print(f"PS with --ps-prefetch / PS: samples/s {summary['prefetch_vs_ps_median']:.3f}x; the same final loss in "
              f"every round: {summary['prefetch_same_final_loss']}")
    path = common.save_results(NAME, {
        "config": {"np": a.np, "vocab_size": a.vocab, "embedding_dim": a.dim, "steps": a.steps,
                   "repeats": a.repeats, "command": f"mpiexec -n {a.np} python scripts/train.py --model wide_deep "
                   f"--vocab-size {a.vocab} --embedding-dim {a.dim} --mode MODE --steps {a.steps}",
                   "omp_num_threads": 1},
        "summary": summary, "paired": paired, "runs": runs, "notes": sorted(set(notes)) + [
            "mode 'allreduce' of train.py replicates the tables and allgathers their sparse gradients "
            "(Horovod's sparse path)",
            "samples/s: train.py's own figure (the training loop, all ranks); peak memory: the larger rank's "
            "ru_maxrss"]})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
