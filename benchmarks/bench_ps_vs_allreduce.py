"""wide_deep under MPI: sparse embeddings on the sharded parameter server ("ps") vs all-reduce.

    python benchmarks/bench_ps_vs_allreduce.py [--np 2,3] [--steps 6] [--quick] [--no-sweep]

The same wide_deep training step (collflow/models/wide_deep.py: 16 categorical fields into
one embedding table and one wide table, 4 numeric features, MLP 128-64, Adam, float32) in
three ways of combining the tables' gradients, at np = 2 and 3 (`mpiexec`, one process per
rank, OMP_NUM_THREADS=1 so ranks do not fight over cores):

  ps          tables sharded over the ranks: Alltoallv lookups, gradient rows pushed to the
              owners, lazy Adam on the owners' rows; MLP through the fused all-reduce
  allreduce   tables replicated, their gradients densified and all-reduced (sparse_as_dense):
              the classic dense all-reduce of data-parallel training
  allgather   tables replicated, gradient rows allgathered (Horovod's sparse path)

Tables: 1M x 64 float32 (256 MB) and 100k x 64; Zipf ids (exponent 1.0) with a global batch of
1024 examples x 16 fields, which touches ~1% of the 1M rows per step.  Per configuration:
bytes sent per rank per step (the communicator's own counters: what this rank hands to
collectives), step time (median over the timed steps of the slowest rank's time), peak memory
(the largest ru_maxrss over the ranks, each configuration in fresh processes), and the
fraction of rows touched.  A sweep over the Zipf exponent (40k x 64 table, global batch 4096, np=2)
gives step time vs fraction of rows touched for each mode: the PNG shows where each wins.
Results: benchmarks/results/bench_ps_vs_allreduce.json and .png.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402  (sets sys.path and disables output checking before collflow loads)

import numpy as np  # noqa: E402

NAME = "bench_ps_vs_allreduce"
MODES = ("ps", "allreduce", "allgather")
FIELDS, DENSE, HIDDEN = 16, 4, (128, 64)
SWEEP_BATCH = 4096
# small enough that the sweep's uniform ids touch most rows (where dense all-reduce wins)
SWEEP_TABLE = (40_000, 64)


# -- one configuration, on every rank (run under mpiexec) ------------------------------------------


def worker(a: argparse.Namespace) -> None:
    import collflow as cf
    from collflow.models.wide_deep import build_wide_deep

    comm = cf.comm.init(backend="mpi", timeout=600)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    per_rank = a.global_batch // comm.size
    t0 = time.perf_counter()
    m = build_wide_deep(vocab_size=a.vocab, embedding_dim=a.dim, mode="ps" if a.mode == "ps" else "allreduce",
                        num_fields=FIELDS, num_dense=DENSE, hidden=HIDDEN, optimizer="adam", learning_rate=1e-3,
                        comm=comm, sync=True, sparse_as_dense=(a.mode == "allreduce"), batch_size=per_rank,
                        zipf_exponent=a.zipf, seed=0)
    total = a.warmup + a.steps
    feeds = list(m.batches(total))
    fractions = [m.data.fraction_touched(k, per_rank * comm.size) for k in range(a.warmup, total)]
    sess = cf.Session(graph=m.graph, config={"comm": comm})
    sess.run(m.init_op)
    sess.run(m.bcast_op)
    build_s = time.perf_counter() - t0
    step = sess.make_callable([m.loss, m.train_op], [m.ids, m.dense, m.labels])
    losses = []
    for k in range(a.warmup):
        fd = feeds[k]
        losses.append(float(step(fd[m.ids], fd[m.dense], fd[m.labels])[0]))
    comm.barrier()
    comm.reset_stats()
    times = []
    for k in range(a.warmup, total):
        fd = feeds[k]
        t = time.perf_counter()
        losses.append(float(step(fd[m.ids], fd[m.dense], fd[m.labels])[0]))
        times.append(time.perf_counter() - t)
    stats = dict(comm.stats)
    comm.barrier()
    mine = {
        "rank": comm.rank,
        "times": times,
        "bytes_sent_per_step": stats["bytes_sent"] / a.steps,
        "bytes_by_kind_per_step": {k[:-len("_bytes_sent")]: v / a.steps for k, v in stats.items()
                                   if k.endswith("_bytes_sent") and k != "bytes_sent" and v},
        "calls_per_step": stats["calls"] / a.steps,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "rss_after_import_mb": rss0 / 1024.0,
        "losses": losses,
        "build_and_init_s": build_s,
    }
    everyone = comm.mpi_comm.gather(mine, root=0)
    sess.close()
    if comm.rank != 0:
        return
    per_step = np.max(np.array([r["times"] for r in everyone]), axis=0)  # the slowest rank sets the pace
    out = {
        "mode": a.mode, "np": comm.size, "vocab": a.vocab, "dim": a.dim, "zipf": a.zipf,
        "global_batch": per_rank * comm.size, "steps": a.steps,
        "step_time_s": float(np.median(per_step)),
        "step_times_s": per_step.tolist(),
        "bytes_sent_per_rank_per_step": float(np.mean([r["bytes_sent_per_step"] for r in everyone])),
        "bytes_sent_max_rank_per_step": float(np.max([r["bytes_sent_per_step"] for r in everyone])),
        "bytes_by_kind_rank0": everyone[0]["bytes_by_kind_per_step"],
        "collectives_per_step": everyone[0]["calls_per_step"],
        "peak_rss_mb": float(np.max([r["peak_rss_mb"] for r in everyone])),
        "rss_after_import_mb": float(np.max([r["rss_after_import_mb"] for r in everyone])),
        "fraction_touched": float(np.mean(fractions)),
        "losses_rank0": everyone[0]["losses"],
    }
    with open(a.json, "w") as f:
        json.dump(out, f)


# -- the driver ---------------------------------------------------------------------------------------


_GATE: Dict[str, float] = {}


def cpu_busy(interval: float = 2.0) -> Optional[float]:
    """Fraction of the machine's CPU time spent busy over the next `interval` seconds (Linux)."""
    def snap() -> Optional[List[int]]:
        try:
            with open("/proc/stat") as f:
                return [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
    a0 = snap()
    time.sleep(interval)
    a1 = snap()
    if a0 is None or a1 is None:
        return None
    d = [y - x for x, y in zip(a0, a1)]
    total = sum(d)
    idle = d[3] + (d[4] if len(d) > 4 else 0)
    return 1.0 - idle / total if total > 0 else None


def _wait_for_quiet() -> Optional[float]:
    """With --max-busy, waits (up to --max-wait s) until other work leaves the CPUs nearly idle;
    returns the busy fraction measured last."""
    limit = _GATE.get("max_busy")
    busy = cpu_busy(1.0)
    if limit is None:
        return busy
    end = time.time() + _GATE.get("max_wait", 600.0)
    while busy is not None and busy > limit and time.time() < end:
        busy = cpu_busy(2.0)
    return busy


def launch(np_: int, mode: str, vocab: int, dim: int, zipf: float, global_batch: int, steps: int, warmup: int,
           timeout: int) -> Optional[Dict[str, Any]]:
    busy = _wait_for_quiet()
    fd, path = tempfile.mkstemp(suffix=".json", prefix="bench_ps_")
    os.close(fd)
    mpiexec, env = common.mpi_launch_env()
    cmd = [mpiexec, "-n", str(np_), "--oversubscribe", sys.executable, os.path.abspath(__file__), "--worker",
           "--mode", mode, "--vocab", str(vocab), "--dim", str(dim), "--zipf", str(zipf),
           "--global-batch", str(global_batch), "--steps", str(steps), "--warmup", str(warmup), "--json", path]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            print(f"  FAILED (rc {p.returncode}): {' '.join(cmd[-18:])}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}",
                  flush=True)
            return None
        with open(path) as f:
            res = json.load(f)
        res["wall_s"] = time.perf_counter() - t
        # other work on the machine skews step times: recorded with every configuration
        res["cpu_busy_before"] = busy
        return res
    except subprocess.TimeoutExpired:
        print(f"  TIMED OUT after {timeout} s: {mode} np={np_} vocab={vocab}", flush=True)
        return None
    finally:
        os.remove(path)


def _mb(b: float) -> float:
    return b / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--json", help=argparse.SUPPRESS)
    p.add_argument("--mode", choices=MODES, default="ps", help=argparse.SUPPRESS)
    p.add_argument("--vocab", type=int, default=1_000_000, help=argparse.SUPPRESS)
    p.add_argument("--dim", type=int, default=64, help=argparse.SUPPRESS)
    p.add_argument("--zipf", type=float, default=1.0, help=argparse.SUPPRESS)
    p.add_argument("--global-batch", type=int, default=1024, help="examples per step over all ranks (default 1024)")
    p.add_argument("--np", default="2,3", help="numbers of ranks (default 2,3)")
    p.add_argument("--steps", type=int, default=8, help="timed steps per configuration (default 8)")
    p.add_argument("--warmup", type=int, default=4, help="untimed steps first (default 4)")
    p.add_argument("--quick", action="store_true", help="small tables only (a smoke run)")
    p.add_argument("--no-sweep", action="store_true", help="skip the step time vs fraction touched sweep")
    p.add_argument("--no-table", action="store_true",
                   help="run only the sweep, keeping the table of the last saved results")
    p.add_argument("--timeout", type=int, default=900, help="seconds per configuration (default 900)")
    p.add_argument("--max-busy", type=float, default=None,
                   help="before each configuration, wait until the CPUs are busier than this fraction no more")
    p.add_argument("--max-wait", type=float, default=600.0, help="seconds to wait for that (default 600)")
    a = p.parse_args()
    if a.worker:
        worker(a)
        return

    if a.max_busy is not None:
        _GATE.update(max_busy=a.max_busy, max_wait=a.max_wait)
    nps = [int(x) for x in a.np.split(",")]
    tables = [(100_000, 64), (20_000, 16)] if a.quick else [(1_000_000, 64), (100_000, 64)]
    rows: List[Dict[str, Any]] = []
    if a.no_table:
        with open(os.path.join(common.RESULTS_DIR, NAME + ".json")) as f:
            rows = json.load(f)["results"]
        nps = sorted({r["np"] for r in rows})
    for vocab, dim in ([] if a.no_table else tables):
        for n in nps:
            # the same global batch at every np (rounded to a multiple of np)
            gb = (a.global_batch // n) * n
            for mode in MODES:
                print(f"running {mode:9s} np={n} table {vocab}x{dim} ...", flush=True)
                r = launch(n, mode, vocab, dim, 1.0, gb, a.steps, a.warmup, a.timeout)
                if r is not None:
                    rows.append(r)
                    print(f"  {r['step_time_s'] * 1e3:9.1f} ms/step  {_mb(r['bytes_sent_per_rank_per_step']):9.2f} MB/rank"
                          f"/step  peak {r['peak_rss_mb']:7.0f} MB  touched {100 * r['fraction_touched']:.2f}%",
                          flush=True)

    sweep: List[Dict[str, Any]] = []
    if not a.no_sweep:
        sv, sd = (20_000, 16) if a.quick else SWEEP_TABLE
        for zipf in (1.6, 1.3, 1.0, 0.7, 0.4, 0.0):
            for mode in MODES:
                print(f"sweep {mode:9s} zipf={zipf} ...", flush=True)
                r = launch(2, mode, sv, sd, zipf, SWEEP_BATCH, a.steps, a.warmup, a.timeout)
                if r is not None:
                    sweep.append(r)
                    print(f"  touched {100 * r['fraction_touched']:6.2f}%  {r['step_time_s'] * 1e3:8.1f} ms/step", flush=True)

    # -- the table (printed last) and the ratios the issue asks for ------------------------------
    headers = ["table", "np", "mode", "touched %", "MB sent/rank/step", "step ms", "peak MB", "collectives/step",
               "busy before"]
    trows = []
    for r in rows:
        trows.append([f"{r['vocab'] // 1000}k x {r['dim']}", r["np"], r["mode"], 100 * r["fraction_touched"],
                      _mb(r["bytes_sent_per_rank_per_step"]), r["step_time_s"] * 1e3, r["peak_rss_mb"],
                      r["collectives_per_step"], r.get("cpu_busy_before")])
    ratios = []
    for vocab, dim in tables:
        for n in nps:
            by = {r["mode"]: r for r in rows if r["vocab"] == vocab and r["dim"] == dim and r["np"] == n}
            ps = by.get("ps")
            if ps is None:
                continue
            for other in ("allreduce", "allgather"):
                o = by.get(other)
                if o is None:
                    continue
                ratios.append({"table": f"{vocab}x{dim}", "np": n, "vs": other,
                               "bytes_ratio": o["bytes_sent_per_rank_per_step"] / max(1.0, ps["bytes_sent_per_rank_per_step"]),
                               "speedup": o["step_time_s"] / ps["step_time_s"],
                               "memory_ratio": o["peak_rss_mb"] / ps["peak_rss_mb"]})
    plot_path = None
    if sweep:
        plot_path = _plot(sweep, os.path.join(common.RESULTS_DIR, NAME + ".png"))
    notes = [
        f"{os.cpu_count()} logical CPUs; np=3 on fewer than 3 cores is oversubscribed (ranks share cores), "
        "so its step times include time-slicing; 'busy before' is the fraction of CPU time other work took "
        "in the second before each configuration (other jobs on the machine slow every mode)",
        "bytes: what each rank hands to collectives per step (Communicator.stats), averaged over ranks; "
        "allreduce counts the whole buffer each rank contributes, alltoallv only rows for other ranks",
        "allreduce (dense) runs dense Adam over the whole table; ps and allgather run lazy (sparse) Adam",
    ]
    common.save_results(NAME, {
        "config": {"fields": FIELDS, "dense_features": DENSE, "hidden": HIDDEN, "optimizer": "adam",
                   "dtype": "float32", "zipf_exponent": 1.0, "global_batch": a.global_batch, "steps": a.steps,
                   "warmup": a.warmup, "omp_num_threads": 1,
                   "sweep_global_batch": SWEEP_BATCH, "sweep_table": SWEEP_TABLE},
        "results": rows, "ratios_vs_ps": ratios, "sweep": sweep, "plot": plot_path, "notes": notes})
    print()
    print(common.fmt_table(headers, trows))
    print()
    for q in ratios:
        print(f"{q['table']:>12s} np={q['np']}: {q['vs']:9s} sends {q['bytes_ratio']:8.1f}x the bytes of ps, "
              f"steps {q['speedup']:6.1f}x slower, peak memory {q['memory_ratio']:.2f}x")
    if plot_path:
        print(f"plot: {plot_path}")


def _plot(sweep: List[Dict[str, Any]], path: str) -> Optional[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    style = {"ps": ("o-", "PS (Alltoallv, sharded)"), "allreduce": ("s-", "dense all-reduce"),
             "allgather": ("^-", "sparse allgather")}
    for mode in MODES:
        pts = sorted((r["fraction_touched"], r["step_time_s"]) for r in sweep if r["mode"] == mode)
        if pts:
            ax.plot([100 * x for x, _ in pts], [1e3 * y for _, y in pts], style[mode][0], label=style[mode][1])
    r0 = sweep[0]
    ax.set_xscale("log")
    ax.set_xlabel("rows of the table touched per step (%)")
    ax.set_ylabel("step time (ms)")
    ax.set_title(f"wide_deep, table {r0['vocab'] // 1000}k x {r0['dim']} float32, np={r0['np']}, "
                 f"global batch {r0['global_batch']}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
