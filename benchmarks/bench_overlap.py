"""Overlap of gradient all-reduces with the backward pass: step time of a data-parallel MLP at
2 ranks with overlap on vs off (launches itself under mpiexec, OMP_NUM_THREADS=1 per rank).

Model: MLP 784-2048-2048-2048-10 (ReLU), float32, batch 128 per rank, SGD through
SyncReplicasOptimizer with 4 MiB fusion buckets (about 38 MB of gradients in several buckets),
gradients all-reduced (average_parameters=False: this measures the gradient path, which
every optimizer but plain SGD takes).

  - overlap on:  each bucket's FusedAllReduce is issued as soon as its gradients exist (the
                 optimizer's normal graph) and posted to MPI at once (comm.overlap, the
                 default), so later layers' all-reduces run while earlier layers' gradients are still
                 being computed;
  - deferred:    the same graph as "on" with comm.overlap=False: each collective is posted
                 only when the plan waits for it, as MPI's blocking call;
  - with a cond: the graph of "on" plus a cf.cond on an is-training flag (fetched with the
                 loss), which makes the step a control-flow plan (runtime/control_plan.py);
                 such plans issue collectives early and wait late like static ones;
  - overlap off: the same buckets, but every gradient reaches the collectives through an
                 identity with control dependencies on ALL gradients (built here, in the
                 benchmark: no collflow option), so no all-reduce starts before the whole
                 backward pass is done;
and, for the record:
  - one bucket:  SyncReplicasOptimizer's default 64 MiB fusion (a single all-reduce, which can
                 only start after the last gradient: no overlap either);
  - compute only: the same step without SyncReplicasOptimizer (no communication at all; both
                 ranks still run side by side): the floor for any overlap;
  - all-reduce only: the 4 MiB buckets' all-reduces of the same gradient sizes with no compute;
  - SGD's default: SyncReplicasOptimizer's own road for plain SGD (each rank steps, then
    the updated variables are averaged in place, 4 MiB buckets).

On one host the all-reduces run through shared memory (collflow/comm/shm.py); there the
progress thread reduces in the background only when the host has a core to spare
(`comm.shm_background`; the run records both).

Each repeat runs every variant for `--steps` steps (interleaved, after a barrier); a repeat's
value is the median step of the slower rank; the table shows the median over repeats.  One
extra traced step per variant records when (ms after the step began) each bucket's all-reduce
was issued.  Results: benchmarks/results/bench_overlap.json.

    python benchmarks/bench_overlap.py [--repeats 7] [--steps 10] [--max-load 1.0]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402  (sets sys.path, disables output checking before collflow loads)

SIZES = (784, 2048, 2048, 2048, 10)
FUSION = 4 << 20
LR = 1e-3


def build(cf: Any, comm: Any, variant: str) -> Dict[str, Any]:
    """One variant's graph and session: variant in {on, cond, deferred, off, one_bucket, compute_only,
    sgd_default}."""
    from collflow import models
    g = cf.Graph()
    with g.as_default():
        m = models.build_mlp(SIZES[0], SIZES[1:-1], SIZES[-1], optimizer=None, seed=0, global_step=False)
        sgd = cf.train.GradientDescentOptimizer(LR)
        buckets: List[List[str]] = []
        if variant == "compute_only":
            train = sgd.minimize(m.loss, var_list=m.variables)
        else:
            fusion = FUSION if variant in ("on", "cond", "deferred", "off", "sgd_default") else 64 << 20
            opt = cf.train.SyncReplicasOptimizer(sgd, comm=comm, fusion_threshold_bytes=fusion,
                                                 average_parameters=None if variant == "sgd_default" else False)
            gv = opt.compute_gradients(m.loss, var_list=m.variables)
            if variant == "off":
                # the gate: every gradient waits for every other, i.e. for the whole backward pass
                with cf.name_scope("gate"), cf.control_dependencies([gr for gr, _ in gv]):
                    gv = [(cf.identity(gr), v) for gr, v in gv]
            train = opt.apply_gradients(gv)
            buckets = opt.buckets
        loss = m.loss
        if variant == "cond":
            training = cf.placeholder_with_default(True, [], name="is_training")
            loss = cf.cond(training, lambda: m.loss * 1.0, lambda: m.loss * 0.0)
        init = cf.global_variables_initializer()
        bcast = cf.train.broadcast_global_variables(0) if variant != "compute_only" else None
    sess = cf.Session(graph=g, config={"comm": comm, "check_outputs": False})
    sess.run(init)
    if bcast is not None:
        sess.run(bcast)
    return dict(sess=sess, m=m, train=train, buckets=buckets, loss=loss)


def plan_order(v: Dict[str, Any]) -> Dict[str, Any]:
    """Where the plan issues its all-reduces among its MatMul ops (static order of the step)."""
    sess = v["sess"]
    plan = None
    # Session._plans is internal: this diagnostic gives up quietly if its layout changes
    plans = getattr(sess, "_plans", {})
    for p, _ in (hit for hit in plans.values() if isinstance(hit, tuple) and len(hit) == 2):
        if any(o is v["train"] for o in getattr(p, "ops", ())):
            plan = p
    if plan is None:
        return {}
    types = [getattr(o, "type", "") for o in plan.ops]
    mm = [i for i, t in enumerate(types) if t == "MatMul"]
    ar = [i for i, t in enumerate(types) if t == "FusedAllReduce"]
    return {"ops": len(types), "matmuls": len(mm),
            "matmuls_before_each_allreduce": [sum(1 for j in mm if j < i) for i in ar]}


def worker(args: argparse.Namespace) -> None:
    from mpi4py import MPI
    import collflow as cf
    comm = cf.comm.init(backend="mpi", timeout=300)
    world = MPI.COMM_WORLD
    r, n = world.rank, world.size
    rng = np.random.default_rng(100 + r)
    x = rng.random((args.batch, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, SIZES[-1], args.batch).astype(np.int32)

    names = {"on": "overlap on: 4 MiB buckets issued as gradients complete",
             "cond": "overlap on, with a cf.cond in the step (a control-flow plan)",
             "deferred": "comm.overlap=False: the same buckets, each posted at its wait",
             "off": "overlap off: 4 MiB buckets gated after the whole backward",
             "one_bucket": "one 64 MiB bucket (default fusion), for the record",
             "compute_only": "compute only: no all-reduce (floor), for the record",
             "sgd_default": "SGD's default: step, then average the variables (4 MiB), for the record"}
    variants = {k: build(cf, comm, k) for k in names}
    feeds = {k: {v["m"].x: x, v["m"].y: y} for k, v in variants.items()}

    def step_fn(k: str) -> Callable[[], Any]:
        v, fd = variants[k], feeds[k]
        sess, fetches = v["sess"], [v["loss"], v["train"]]
        # "deferred" keeps every collective out of MPI until the plan waits for it
        ov = k != "deferred"

        def run() -> Any:
            comm.overlap = ov
            return sess.run(fetches, fd)
        return run

    steps = {k: step_fn(k) for k in names}
    for k, fn in steps.items():  # warm-up (plans compiled, buffers touched)
        for _ in range(args.warmup):
            fn()

    # all-reduce only: the same buckets with no compute, in the graph (FusedAllReduce, Session.run)
    g = cf.Graph()
    with g.as_default():
        gvars = [cf.Variable(np.zeros(vv.shape.as_list(), np.float32), name=f"g{i}")
                 for i, vv in enumerate(variants["on"]["m"].variables)]
        ar_opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.0), comm=comm,
                                                fusion_threshold_bytes=FUSION)
        red = ar_opt.reduce_gradients([(vv.value(), vv) for vv in gvars])
        ar_target = cf.group(*{id(t.op): t.op for t, _ in red}.values())
        ar_init = cf.global_variables_initializer()
    ar_sess = cf.Session(graph=g, config={"comm": comm, "check_outputs": False})
    ar_sess.run(ar_init)
    steps["allreduce_only"] = lambda: ar_sess.run(ar_target)
    names["allreduce_only"] = "all-reduce only: the 4 MiB buckets, no compute, for the record"
    for _ in range(args.warmup):
        steps["allreduce_only"]()

    load_before = common.load_average()
    per: Dict[str, List[float]] = {k: [] for k in steps}
    for _ in range(args.repeats):
        for k, fn in steps.items():
            world.Barrier()
            med = common.median(common.time_calls(fn, args.steps))
            per[k].append(world.allreduce(med, op=MPI.MAX))
    load_after = common.load_average()

    # one traced step per variant: when (after the step began) each all-reduce was issued
    traces: Dict[str, Dict[str, Any]] = {}
    orig = comm.allreduce_async
    for k in ("on", "cond", "off", "one_bucket"):
        issued: List[float] = []

        def traced(*a: Any, _issued: List[float] = issued, **kw: Any) -> Any:
            _issued.append(time.perf_counter())
            return orig(*a, **kw)
        comm.allreduce_async = traced  # an instance attribute shadows the method for this step
        try:
            world.Barrier()
            t0 = time.perf_counter()
            steps[k]()
            t1 = time.perf_counter()
        finally:
            del comm.allreduce_async
        traces[k] = {"step_ms": (t1 - t0) * 1e3, "allreduce_issued_ms": [(t - t0) * 1e3 for t in issued],
                     "plan": plan_order(variants[k])}
    for v in variants.values():
        v["sess"].close()
    ar_sess.close()
    if r == 0:
        out = dict(np=n, per=per, names=names, load_before=load_before, load_after=load_after, traces=traces,
                   transport=("shared memory (collflow.comm.shm)" if comm.shm_active else f"MPI ({comm.shm_reason})"),
                   shm_background=bool(getattr(comm, "shm_background", False)),
                   buckets={k: variants[k]["buckets"] for k in ("on", "off", "one_bucket")},
                   grad_bytes=int(sum(int(np.prod(vv.shape.as_list())) * 4 for vv in variants["on"]["m"].variables)))
        print("RESULT " + json.dumps(out), flush=True)


# -- the driver ---------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--steps", type=int, default=10, help="timed steps per repeat and variant (median taken)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128, help="per-rank batch")
    ap.add_argument("--max-load", type=float, default=1.0,
                    help="wait until the 1-minute load average is below this before starting")
    ap.add_argument("--max-wait", type=float, default=300.0, help="seconds to wait for a quiet machine")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    notes = common.wait_for_quiet(args.max_load, args.max_wait)
    res = common.launch_mpi(__file__, 2, ["--repeats", str(args.repeats), "--steps", str(args.steps), "--warmup", str(args.warmup),
                     "--batch", str(args.batch)])
    s = {k: common.summarize(v) for k, v in res["per"].items()}
    t_on, t_off = s["on"]["median"], s["off"]["median"]
    t_cmp, t_ar = s["compute_only"]["median"], s["allreduce_only"]["median"]
    ratio = t_off / t_on
    exposed_off, exposed_on = t_off - t_cmp, t_on - t_cmp
    hidden = (t_off - t_on) / exposed_off if exposed_off > 0 else None
    t_def = s["deferred"]["median"]
    t_cond = s["cond"]["median"]
    summary = {"on_ms": t_on * 1e3, "off_ms": t_off * 1e3, "off_over_on": ratio, "deferred_ms": t_def * 1e3,
               "cond_ms": t_cond * 1e3, "cond_over_on": t_cond / t_on,
               "compute_only_ms": t_cmp * 1e3, "allreduce_only_ms": t_ar * 1e3,
               "communication_cost_off_ms": exposed_off * 1e3, "communication_cost_on_ms": exposed_on * 1e3,
               "fraction_of_off_cost_removed_by_overlap": hidden}
    payload = {
        "config": dict(np=res["np"], sizes=list(SIZES), batch_per_rank=args.batch, dtype="float32",
                       fusion_bytes=FUSION, optimizer=f"SGD lr={LR}", repeats=args.repeats, steps=args.steps,
                       warmup=args.warmup, threads_per_rank=1, gradient_bytes=res["grad_bytes"],
                       launch="mpiexec -n 2 --oversubscribe --bind-to none, OMP_NUM_THREADS=1"),
        "load_average_before": res["load_before"], "load_average_after": res["load_after"],
        "variants": {k: dict(s[k], name=res["names"][k], per_repeat_s=res["per"][k]) for k in s},
        "summary": summary, "buckets": res["buckets"], "traced_step": res["traces"], "notes": notes,
        "transport": res["transport"], "shm_background": res["shm_background"],
    }
    path = common.save_results("bench_overlap", payload)
    print(f"load average (1/5/15 min): before {res['load_before']}, after {res['load_after']}")
    for nt in notes:
        print("note:", nt)
    print(f"buckets (4 MiB): {len(res['buckets']['on'])}: " + " | ".join(",".join(b) for b in res["buckets"]["on"]))
    for k in ("on", "cond", "off", "one_bucket"):
        tr = res["traces"][k]
        print(f"traced step, {k}: step {tr['step_ms']:.1f} ms, all-reduces issued at "
              + ", ".join(f"{t:.1f}" for t in tr["allreduce_issued_ms"]) + " ms; plan: MatMuls before each: "
              + str(tr["plan"].get("matmuls_before_each_allreduce")) + f" of {tr['plan'].get('matmuls')}")
    print(f"results: {path}")
    print(f"transport: {res['transport']}; background reduction (a core to spare): {res['shm_background']}")
    print(f"\nMLP {'-'.join(map(str, SIZES))}, batch {args.batch}/rank, np={res['np']}, "
          f"{res['grad_bytes'] / 1e6:.1f} MB of gradients (median of {args.repeats} repeats x {args.steps} steps, "
          "slower rank)")
    rows = [[res["names"][k], s[k]["median"] * 1e3, s[k]["min"] * 1e3, s[k]["median"] / t_on]
            for k in ("on", "cond", "deferred", "off", "one_bucket", "compute_only", "allreduce_only", "sgd_default")]
    print(common.fmt_table(["variant", "median step ms", "min ms", "x overlap on"], rows))
    print(f"\noverlap off / on = {ratio:.3f}; communication cost over compute-only: off {exposed_off * 1e3:.1f} ms, "
          f"on {exposed_on * 1e3:.1f} ms"
          + (f" (overlap removes {hidden * 100:.0f}% of it)" if hidden is not None else ""))
    print(f"deferred to the waits (comm.overlap=False): {t_def * 1e3:.1f} ms/step = {t_def / t_on:.3f}x overlap on")
    print(f"with a cf.cond in the step (a control-flow plan): {t_cond * 1e3:.1f} ms/step = {t_cond / t_on:.3f}x "
          f"overlap on ({t_cond / t_off:.3f}x overlap off)")
    t_sgd = s["sgd_default"]["median"]
    print(f"SGD's default (averaged variables): {t_sgd * 1e3:.1f} ms/step, {(t_sgd - t_cmp) * 1e3:.1f} ms over "
          f"compute-only (the gradient path with overlap: {exposed_on * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
