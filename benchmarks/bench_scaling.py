"""Data-parallel scaling: training throughput (samples/s) at np = 1, 2, 3, 4 ranks (launches
itself under mpiexec once per np; OMP_NUM_THREADS=1 per rank, so one rank is one core's work).

Model: MLP 784-1024-1024-10 (ReLU), float32, SGD through SyncReplicasOptimizer (4 MiB fusion
buckets), the same program at every np (at np=1 cf.comm.init() gives the local communicator).
For plain SGD the optimizer steps on each rank and averages the updated variables in place
(its default, average_parameters); the gradient path (average_parameters=False: all-reduce
the gradients, then apply them) is timed too, for the record.  On one host collflow's
all-reduces run through shared memory (collflow/comm/shm.py; the run says which transport).
  - weak scaling:   fixed per-rank batch (default 256): global batch = 256 x np;
  - strong scaling: fixed global batch (default 768): per-rank batch = 768 / np.
Throughput = global batch / step time, the step time being the median over `--steps` steps
of the slower rank, then the median over repeats and over `--rounds` launches per np (the
launches cycle np = 1, 2, 3, 4, 1, 2, ... so slow drifts in other load hit every np alike).
Efficiency at np = n: throughput(n) / (n x throughput(1)) (for both modes).  On a machine with
fewer cores than ranks the extra ranks share cores: those rows are labelled oversubscribed and
their efficiency is also shown against the cores they really have (min(n, cores)).
Target: weak-scaling efficiency at np=2 >= 95%.
For the record, every launch also times the plain per-rank step (no SyncReplicasOptimizer, no
all-reduce) on all ranks at once: at np=1 the wrapper's cost, at np > 1 what the ranks' compute
alone loses to sharing the machine (cores, memory bandwidth), i.e. the efficiency ceiling of
any communication scheme here, and how much the all-reduce adds on top; and raw mpi4py
Allreduce calls of the same gradients without compute (what the transport itself costs).

Results: benchmarks/results/bench_scaling.json and bench_scaling.png (needs matplotlib).

    python benchmarks/bench_scaling.py [--nps 1,2,3,4] [--rounds 2] [--repeats 5] [--steps 10]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402  (sets sys.path, disables output checking before collflow loads)

SIZES = (784, 1024, 1024, 10)
LR = 1e-3


def worker(args: argparse.Namespace) -> None:
    import collflow as cf
    comm = cf.comm.init(timeout=300)
    r, n = comm.rank, comm.size
    rng = np.random.default_rng(100 + r)
    per_rank = {"weak": args.per_rank, "strong": args.global_batch // n}
    if args.global_batch % n:
        raise SystemExit(f"--global-batch {args.global_batch} is not divisible by np={n}")

    def build(batch: int, sync: bool, average_parameters: Any = None) -> Any:
        sess, m, _ = common.mlp_session(cf, comm, SIZES, LR, args.fusion_mb << 20, sync, average_parameters)
        # a few distinct batches of this rank's data, cycled
        xs = [rng.random((batch, SIZES[0]), dtype=np.float32) for _ in range(4)]
        ys = [rng.integers(0, SIZES[-1], batch).astype(np.int32) for _ in range(4)]
        feeds = [{m.x: a, m.y: b} for a, b in zip(xs, ys)]
        fetches = [m.loss, m.train_op]
        k = [0]

        def step() -> None:
            sess.run(fetches, feeds[k[0] & 3])
            k[0] += 1
        return sess, step

    runs = {mode: build(b, True) for mode, b in per_rank.items()}
    # for the record: the gradient path (all-reduce the gradients, then apply them), which
    # plain SGD leaves for averaging the updated variables and every other optimizer takes
    runs["weak_grad"] = build(per_rank["weak"], True, average_parameters=False)
    # for the record: the same per-rank step without the SyncReplicasOptimizer wrapper (no
    # all-reduce).  At np=1 it is the wrapper's cost; at np > 1 every rank runs it at once, so
    # it measures what the ranks' compute alone loses to sharing the machine (cores, memory
    # bandwidth): the ceiling of any communication scheme on this machine
    runs["weak_plain"] = build(per_rank["weak"], False)
    if n > 1 and comm.backend == "mpi":
        # and raw mpi4py Allreduce calls moving the same gradients (one per variable, as the
        # step's large ones go): what the transport itself costs next to what the step adds
        from mpi4py import MPI
        sizes = [int(np.prod(v.shape.as_list())) for v in runs["weak_plain"][0].graph.get_collection(
            cf.GraphKeys.TRAINABLE_VARIABLES)]
        bufs = [(rng.random(k, dtype=np.float32), np.empty(k, np.float32)) for k in sizes]

        def raw_step() -> None:
            for a, o in bufs:
                MPI.COMM_WORLD.Allreduce(a, o, op=MPI.SUM)
        runs["raw_allreduce"] = (None, raw_step)
    for _, step in runs.values():
        for _ in range(args.warmup):
            step()

    def slower(v: float) -> float:
        return float(comm.allreduce(np.array([v]), op="max")[0]) if n > 1 else v

    load_before = common.load_average()
    per: Dict[str, List[float]] = {k: [] for k in runs}
    for _ in range(args.repeats):
        for mode, (_, step) in runs.items():
            if n > 1:
                comm.barrier()
            per[mode].append(slower(common.median(common.time_calls(step, args.steps))))
    load_after = common.load_average()
    for sess, _ in runs.values():
        if sess is not None:
            sess.close()
    if r == 0:
        transport = ("shared memory (collflow.comm.shm)" if getattr(comm, "shm_active", False)
                     else "MPI" if comm.backend == "mpi" else comm.backend)
        print("RESULT " + json.dumps(dict(np=n, per_rank=per_rank, step_s=per, load_before=load_before,
                                          load_after=load_after, backend=comm.backend, transport=transport)),
              flush=True)


# -- the driver ---------------------------------------------------------------------------------

def plot(path: str, nps: List[int], cores: int, thr: Dict[str, Dict[int, float]],
         eff: Dict[str, Dict[int, float]], title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    xs = np.array(nps)
    for mode, color in (("weak", "tab:blue"), ("strong", "tab:orange")):
        t1 = thr[mode][1]
        ax1.plot(xs, [thr[mode][k] for k in nps], "o-", color=color, label=f"{mode} scaling")
        ax1.plot(xs, t1 * xs, ":", color=color, alpha=0.6, label=f"{mode}: ideal (n x np=1)")
        ax1.plot(xs, t1 * np.minimum(xs, cores), "--", color=color, alpha=0.35,
                 label=f"{mode}: ideal on {cores} cores")
        ax2.plot(xs, [100 * eff[mode][k] for k in nps], "o-", color=color, label=f"{mode} scaling")
    ax2.axhline(95, color="tab:green", lw=1, ls="--", label="target 95% (weak, np=2)")
    for ax in (ax1, ax2):
        if max(nps) > cores:
            ax.axvspan(cores + 0.5, max(nps) + 0.5, color="grey", alpha=0.15, lw=0)
            lo, hi = ax.get_ylim()
            ax.text(cores + 0.55, lo + 0.03 * (hi - lo), f"oversubscribed\n(np > {cores} cores)",
                    va="bottom", fontsize=8, color="dimgray")
        ax.set_xticks(nps)
        ax.set_xlabel("MPI ranks (np), 1 thread each")
        ax.grid(alpha=0.3)
    ax1.set_ylabel("throughput (samples/s)")
    ax1.set_ylim(bottom=0)
    ax1.legend(fontsize=7, loc="upper left")
    ax2.set_ylabel("efficiency: thr(n) / (n x thr(1))  [%]")
    ax2.set_ylim(0, 110)
    ax2.legend(fontsize=8, loc="lower left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nps", default="1,2,3,4")
    ap.add_argument("--rounds", type=int, default=2, help="launches per np (cycled over the nps)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10, help="timed steps per repeat (median taken)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--per-rank", type=int, default=256, help="weak scaling: batch per rank")
    ap.add_argument("--global-batch", type=int, default=768, help="strong scaling: global batch")
    ap.add_argument("--fusion-mb", type=int, default=4)
    ap.add_argument("--max-load", type=float, default=1.0,
                    help="wait until the 1-minute load average is below this before each launch")
    ap.add_argument("--max-wait", type=float, default=120.0, help="seconds to wait for a quiet machine")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    nps = sorted({int(v) for v in args.nps.split(",")})
    if 1 not in nps:
        raise SystemExit("--nps must include 1 (the baseline of the efficiencies)")
    cores = os.cpu_count() or 1
    extra = ["--repeats", str(args.repeats), "--steps", str(args.steps), "--warmup", str(args.warmup),
             "--per-rank", str(args.per_rank), "--global-batch", str(args.global_batch),
             "--fusion-mb", str(args.fusion_mb)]
    notes: List[str] = []
    step_s: Dict[int, Dict[str, List[float]]] = {k: {} for k in nps}
    launches = []
    for rnd in range(args.rounds):
        for k in nps:
            waited = common.wait_for_quiet(args.max_load, args.max_wait)
            notes += [f"round {rnd}, np={k}: {w}" for w in waited]
            res = common.launch_mpi(__file__, k, extra)
            for mode, v in res["step_s"].items():
                step_s[k].setdefault(mode, []).extend(v)
            launches.append(dict(round=rnd, np=k, load_before=res["load_before"], load_after=res["load_after"],
                                 backend=res["backend"], transport=res.get("transport"), per_rank=res["per_rank"]))
            print(f"round {rnd} np={k} ({res['backend']}): " + ", ".join(
                f"{mode} {common.median(v) * 1e3:.1f} ms/step" for mode, v in res["step_s"].items())
                + f"; load {res['load_before']} -> {res['load_after']}", flush=True)

    batch = {"weak": {k: args.per_rank * k for k in nps}, "strong": {k: args.global_batch for k in nps}}
    thr: Dict[str, Dict[int, float]] = {"weak": {}, "strong": {}}
    eff: Dict[str, Dict[int, float]] = {"weak": {}, "strong": {}}
    eff_cores: Dict[str, Dict[int, float]] = {"weak": {}, "strong": {}}
    table: Dict[str, Any] = {}
    for mode in ("weak", "strong"):
        for k in nps:
            s = common.summarize(step_s[k][mode])
            thr[mode][k] = batch[mode][k] / s["median"]
        for k in nps:
            eff[mode][k] = thr[mode][k] / (k * thr[mode][1])
            eff_cores[mode][k] = thr[mode][k] / (min(k, cores) * thr[mode][1])
            table[f"{mode}_np{k}"] = dict(common.summarize(step_s[k][mode]), np=k, oversubscribed=k > cores,
                                          global_batch=batch[mode][k], per_rank_batch=batch[mode][k] // k,
                                          samples_per_s=thr[mode][k], efficiency=eff[mode][k],
                                          efficiency_vs_cores=eff_cores[mode][k],
                                          per_repeat_step_s=step_s[k][mode])
    plain = step_s[1].get("weak_plain")
    if plain:
        t_plain = common.median(plain)
        thr_plain = args.per_rank / t_plain
        table["np1_plain_optimizer"] = dict(
            common.summarize(plain), samples_per_s=thr_plain,
            weak_efficiency_vs_plain={k: thr["weak"][k] / (k * thr_plain) for k in nps},
            note="np=1 weak step without the SyncReplicasOptimizer wrapper; weak_efficiency_vs_plain = "
                 "thr(n) / (n x this)")
    # the machine's own ceiling: n ranks computing at once with no communication
    ceiling = {}
    for k in nps:
        p = step_s[k].get("weak_plain")
        if p and plain:
            ceiling[k] = dict(common.summarize(p), efficiency=t_plain / common.median(p),
                              comm_overhead_s=common.median(step_s[k]["weak"]) - common.median(p))
            raw = step_s[k].get("raw_allreduce")
            if raw:
                ceiling[k]["raw_allreduce_s"] = common.median(raw)
    if ceiling:
        table["weak_no_communication"] = dict(
            per_np=ceiling, note="every rank runs the plain per-rank step (no all-reduce) at the same time: "
                                 "efficiency = plain step at np=1 / plain step at np=n, the most any "
                                 "data-parallel scheme can reach on this machine; comm_overhead_s = weak "
                                 "step minus this step at the same np; raw_allreduce_s = raw mpi4py "
                                 "Allreduce calls of the same gradients (one per variable), no compute")
    grad_path = {}
    for k in nps:
        gp = step_s[k].get("weak_grad")
        if gp:
            grad_path[k] = dict(common.summarize(gp), efficiency=(args.per_rank * k / common.median(gp))
                                / (k * thr["weak"][1]))
    if grad_path:
        table["weak_gradient_path"] = dict(
            per_np=grad_path, note="SGD with average_parameters=False: gradients all-reduced, then applied "
                                   "(the road of every optimizer but plain SGD); efficiency against the "
                                   "default weak step at np=1")
    eff2 = eff["weak"].get(2)
    targets = {"weak_efficiency_np2": {"value": eff2, "target": ">= 0.95", "met": eff2 is not None and eff2 >= 0.95,
                                       "baseline": "np=1 running the same program (SyncReplicasOptimizer, "
                                                   "local communicator)"}}
    png = os.path.join(common.RESULTS_DIR, "bench_scaling.png")
    plot_note = None
    try:
        title = (f"collflow data-parallel MLP {'-'.join(map(str, SIZES))} on {cores} cores "
                 f"(weak: {args.per_rank}/rank, strong: {args.global_batch} global)")
        os.makedirs(common.RESULTS_DIR, exist_ok=True)
        plot(png, nps, cores, thr, eff, title)
    except ImportError as e:
        plot_note = f"no plot: {e} (pip install matplotlib)"
        png = None
    if plot_note:
        notes.append(plot_note)
    try:
        import matplotlib
        mpl = matplotlib.__version__
    except ImportError:
        mpl = None
    payload = {
        "config": dict(nps=nps, cores=cores, sizes=list(SIZES), dtype="float32", optimizer=f"SGD lr={LR}",
                       fusion_mb=args.fusion_mb, weak_per_rank_batch=args.per_rank,
                       strong_global_batch=args.global_batch, rounds=args.rounds, repeats=args.repeats,
                       steps=args.steps, warmup=args.warmup, threads_per_rank=1, matplotlib=mpl,
                       launch="mpiexec -n N --oversubscribe --bind-to none, OMP_NUM_THREADS=1"),
        "launches": launches, "results": table, "targets": targets, "plot": png, "notes": notes,
    }
    path = common.save_results("bench_scaling", payload)
    for nt in notes:
        print("note:", nt)
    print(f"results: {path}" + (f", plot: {png}" if png else ""))
    if plain:
        ev = table["np1_plain_optimizer"]["weak_efficiency_vs_plain"]
        print(f"np=1 without the SyncReplicasOptimizer wrapper: {thr_plain:,.0f} samples/s "
              f"(with it: {thr['weak'][1]:,.0f}); weak efficiency against that plain step: "
              + ", ".join(f"np={k} {100 * e:.1f}%" for k, e in ev.items()))
    rows = []
    for mode in ("weak", "strong"):
        for k in nps:
            e = table[f"{mode}_np{k}"]
            label = f"{mode}, np={k}" + (f" (oversubscribed: {k} ranks on {cores} cores)" if k > cores else "")
            rows.append([label, e["global_batch"], e["per_rank_batch"], e["median"] * 1e3, e["samples_per_s"],
                         f"{100 * e['efficiency']:.1f}%", f"{100 * e['efficiency_vs_cores']:.1f}%"])
    print(f"\nMLP {'-'.join(map(str, SIZES))}, OMP_NUM_THREADS=1 per rank, {cores} cores "
          f"(median over {args.rounds} launches x {args.repeats} repeats x {args.steps} steps, slower rank)")
    print(common.fmt_table(["mode, ranks", "global batch", "per rank", "step ms", "samples/s",
                            "efficiency", "eff. vs cores"], rows))
    if ceiling:
        print("\nfor the record, every rank running the step with no all-reduce at the same time "
              "(what the machine itself allows):")
        print(common.fmt_table(["ranks", "plain step ms", "efficiency ceiling", "all-reduce adds ms",
                                "raw MPI of the gradients ms"],
                               [[f"np={k}" + (" (oversubscribed)" if k > cores else ""), c["median"] * 1e3,
                                 f"{100 * c['efficiency']:.1f}%", c["comm_overhead_s"] * 1e3,
                                 c["raw_allreduce_s"] * 1e3 if "raw_allreduce_s" in c else "-"]
                                for k, c in ceiling.items()]))
    if grad_path:
        print("\nfor the record, the gradient path (average_parameters=False: all-reduce gradients, then apply): "
              + ", ".join(f"np={k} {g['median'] * 1e3:.2f} ms ({100 * g['efficiency']:.1f}%)"
                          for k, g in grad_path.items()))
    tr = sorted({ln.get("transport") for ln in launches if ln["np"] > 1 and ln.get("transport")})
    if tr:
        print("collflow's all-reduces at np > 1: " + ", ".join(tr))
    t = targets["weak_efficiency_np2"]
    if t["value"] is not None:
        print(f"\ntarget: weak-scaling efficiency at np=2 {100 * t['value']:.1f}% (want >= 95%) -> "
              f"{'MET' if t['met'] else 'MISSED'}")


if __name__ == "__main__":
    main()
