"""The calibrated scaling model (collflow/profile/), validated on this machine at np = 1..4,
compared with published results, and extrapolated to 512 ranks.

    python benchmarks/bench_scale_model.py [--nps 1,2,3,4] [--rounds 2] [--repeats 5] [--steps 10]
    python benchmarks/bench_scale_model.py --analyze-only     # redo the model from the saved runs

1. Inputs, measured here (every np launched under mpiexec `--rounds` times, cycling
   np = 1, 2, 3, 4, 1, ...; OMP_NUM_THREADS=1, so one rank is one core's work):
   - profiles: in the np=1 launch, one process builds each step of benchmarks/
     scale_model_cases.py for n = 1, 2, 3, 4, 8 ranks on a LoopbackCommunicator (the other
     ranks simulated: their contributions are this rank's, their ids their own) and traces
     it (collflow.profile.profile_step: op times, collectives in launch order with their
     bytes, the bucket plan used; the PS tables' all-to-alls mirrored, each peer's route
     headers naming its own shard);
   - transports: in each launch of np >= 2, collflow.profile.time_collective times the
     shared-memory all-reduce, MPI's own all-reduce, allgatherv and alltoallv at several
     sizes; seconds = a + b * bytes is fitted per np and kind (medians over the rounds);
   - compute slowdown: every rank runs the MLP step with no communication at once: its
     median over the np=1 one is what sharing the machine costs each rank's compute (np =
     3, 4 are oversubscribed: 2 cores).
2. Validation: the model (collflow.profile.ScaleModel: the profile replayed with the fitted
   collectives, no overlap since no core is spare, compute times the slowdown, straggler
   order statistics of the injected lognormal delays and the quorum's decision for b = 1)
   predicts each case's step at np = 1..4; the same launches measure it (per-rank median
   over `--steps` steps, the slower rank, median over repeats and rounds).  Target: within
   20% of the measured median.
3. Published: Horovod's 128-GPU runs (Inception V3, ResNet-101, VGG-16 on 25 GbE) and the
   TensorFlow paper's backup workers (collflow/profile/published.py: every input's source).
4. Extrapolation and plots (benchmarks/scale_model_plots.py): efficiency vs N per
   algorithm and network, PS vs allgather vs N and vs rows touched, backup ranks vs
   straggler spread; PNGs in benchmarks/results/, the table in docs/scaling.md.
Results: benchmarks/results/bench_scale_model.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402  (sets sys.path, disables output checking before collflow loads)
import scale_model_cases as smc  # noqa: E402

NAME = "bench_scale_model"
PROFILE_SIZES = {"mlp_shm": (1, 2, 3, 4, 8), "mlp_mpi": (1, 2, 3, 4, 8), "wd_ps": (1, 2, 3, 4, 8),
                 "wd_ag": (1, 2, 3, 4, 8),
                 "bk0": (1, 2, 3, 4, 8), "bk1": (2, 3, 4, 8)}
CALIB_SIZES = {"allreduce": [1 << 12, 1 << 15, 1 << 18, 1 << 20, 1 << 22, 1 << 23],
               "allgather": [1 << 12, 1 << 15, 1 << 18, 1 << 20, 1 << 21],
               "alltoall": [1 << 13, 1 << 15, 1 << 18, 1 << 20, 1 << 21]}
TARGET = 0.20
SYNC_ROWS = (128, 512, 1024)  # the sync-point micro-benchmark's compute: (rows x 512) @ (512 x 512)
QUORUM_POLL_S = 2e-4  # collflow/comm/backup.py: _MPITransport._poll sleeps 0.2 ms between tests
DELAY_POLL_S = 1e-3   # collflow/kernels/debug_kernels.py: Delay sleeps at most 1 ms between checks


# -- the worker: one launch under mpiexec -----------------------------------------------------------


def profile_all(a: argparse.Namespace, comm: Any) -> Dict[str, Dict[str, Any]]:
    """Every case's loopback profiles (one process; see the module doc), each with the
    plain MLP step timed right before and after it (`plain_s`): the model scales the
    profile's compute by the plain step's time in the run it predicts over this one, so
    other load on the machine that differs between the two cancels out."""
    from collflow.profile import profile_step
    plain = smc.build_mlp(comm, False, None)

    def plain_s() -> float:
        return common.median(common.time_calls(plain.step, 5))
    for _ in range(a.warmup):
        plain.step()
    out: Dict[str, Dict[str, Any]] = {}
    for name, sizes in PROFILE_SIZES.items():
        if a.quick:
            sizes = tuple(n for n in sizes if n <= 2)
        out[name] = {}
        for n in sizes:
            case = smc.build_loopback(name, n)
            before = plain_s()
            prof = profile_step(case.sess, case.fetches, case.feeds, comm=case.comm, traces=a.traces,
                                repeats=3 * a.traces, warmup=2)
            out[name][str(n)] = {"profile": prof.to_dict(), "plain_s": 0.5 * (before + plain_s())}
            if name == "bk1":
                out[name][str(n)]["catchup_s"] = smc.catchup_seconds(case)
            case.close()
    plain.close()
    return out


def worker(a: argparse.Namespace) -> None:
    import collflow as cf
    from collflow.profile import time_collective, time_sync_point
    comm = cf.comm.init(timeout=600)
    n, r = comm.size, comm.rank
    res: Dict[str, Any] = {"np": n, "load_before": common.load_average()}
    if n == 1 and not a.no_profile:
        t0 = time.perf_counter()
        res["profiles"] = profile_all(a, comm)
        res["profile_s"] = time.perf_counter() - t0
    mpi = None
    if n > 1:
        from collflow.comm import MPICommunicator
        mpi = MPICommunicator(shm=False, timeout=600)
    names = [c for c in smc.CASES if not (c == "bk1" and n == 1)] + ["plain"]
    cases = {c: smc.build_case(c, comm, mpi, r) for c in names}
    for c in cases.values():
        for _ in range(a.warmup):
            c.step()
        c.pause()

    def slower(v: float) -> float:
        return float(comm.allreduce(np.array([v]), op="max")[0]) if n > 1 else v

    per: Dict[str, List[float]] = {c: [] for c in cases}
    spread: Dict[str, List[float]] = {c: [] for c in cases}
    for _ in range(a.repeats):
        for name, c in cases.items():
            if n > 1:
                comm.barrier()
            if name.startswith("bk"):  # every step starts together: the delays are the stragglers
                ts = []
                for _ in range(a.steps):
                    if n > 1:
                        comm.barrier()
                    t0 = time.perf_counter()
                    c.step()
                    ts.append(time.perf_counter() - t0)
            else:
                ts = common.time_calls(c.step, a.steps)
            if name == "bk1":
                # the plain step while this optimizer's quorum threads poll (see Case.pause):
                # what they cost each rank's compute, an input of the model for b = 1
                tq = common.time_calls(cases["plain"].step, max(3, a.steps // 2))
                per.setdefault("plain_quorum", []).append(slower(common.median(tq)))
            c.pause()
            per[name].append(slower(common.median(ts)))
            spread[name].extend(ts)
    calib: Dict[str, Any] = {}
    if n > 1:
        for key, cm, kind in (("shm/allreduce", comm, "allreduce"), ("mpi/allreduce", mpi, "allreduce"),
                              ("mpi/allgather", comm, "allgather"), ("mpi/alltoall", comm, "alltoall")):
            t = time_collective(cm, kind, CALIB_SIZES[kind], repeats=a.calib_repeats)
            calib[key] = {"sizes": t.sizes, "seconds": t.seconds}
        # what a collective costs where the ranks were computing, for 3 lengths of compute
        w = np.ones((512, 512), np.float32)
        res["sync_point"] = []
        for rows in SYNC_ROWS:
            x = np.ones((rows, 512), np.float32)
            res["sync_point"].append(time_sync_point(comm, lambda: x @ w))
    res.update(step_s=per, calib=calib, load_after=common.load_average(), backend=comm.backend,
               transport="shared memory" if getattr(comm, "shm_active", False) else comm.backend,
               rank0_step_spread={k: [float(np.percentile(v, q)) for q in (10, 50, 90)] for k, v in spread.items()})
    for c in cases.values():
        c.close()
    if r == 0:
        print("RESULT " + json.dumps(res), flush=True)


# -- the analysis -----------------------------------------------------------------------------------


def aggregate(launches: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Pools the launches: step times per case and np, fitted transports, median profiles."""
    from collflow.profile import StepProfile, fit_affine, median_profile
    steps: Dict[str, Dict[int, List[float]]] = {}
    calib: Dict[int, Dict[str, List[List[float]]]] = {}
    sizes: Dict[str, List[int]] = {}
    profs: Dict[str, Dict[int, List[Any]]] = {}
    plain_ref: Dict[str, Dict[int, List[float]]] = {}
    catchup: Dict[int, List[float]] = {}  # a left-out rank's catch-up run, likewise
    for ln in launches:
        n = ln["np"]
        for case, v in ln["step_s"].items():
            steps.setdefault(case, {}).setdefault(n, []).extend(v)
        for key, t in ln.get("calib", {}).items():
            calib.setdefault(n, {}).setdefault(key, []).append(t["seconds"])
            sizes[key] = t["sizes"]
        for case, by_n in ln.get("profiles", {}).items():
            for k, d in by_n.items():
                profs.setdefault(case, {}).setdefault(int(k), []).append(StepProfile.from_dict(d["profile"]))
                plain_ref.setdefault(case, {}).setdefault(int(k), []).append(d["plain_s"])
                if "catchup_s" in d:  # in units of the plain step next to it
                    catchup.setdefault(int(k), []).append(d["catchup_s"] / d["plain_s"])
    sync: Dict[int, List[List[Tuple[float, float]]]] = {}  # np -> per launch: (compute, extra) per length
    for ln in launches:
        if "sync_point" in ln:
            sync.setdefault(ln["np"], []).append([(alone, with_sync - alone) for with_sync, alone in ln["sync_point"]])
    fits: Dict[int, Dict[str, Tuple[float, float]]] = {}
    timings: Dict[int, Dict[str, List[float]]] = {}
    for n, by_key in calib.items():
        for key, rows in by_key.items():
            med = np.median(np.array(rows), axis=0).tolist()
            timings.setdefault(n, {})[key] = med
            fits.setdefault(n, {})[key] = fit_affine(sizes[key], med)
    profiles = {case: {k: median_profile(v) for k, v in by_n.items()} for case, by_n in profs.items()}
    refs = {case: {k: common.median(v) for k, v in by_n.items()} for case, by_n in plain_ref.items()}
    return {"steps": steps, "fits": fits, "timings": timings, "sizes": sizes, "profiles": profiles,
            "plain_ref": refs,
            "catchup": {k: common.median(v) for k, v in catchup.items()},
            "sync_extra": {k: np.median(np.array(v), axis=0).tolist() for k, v in sync.items()}}


def slowdown(agg: Dict[str, Any], case: str, n: int) -> float:
    """The plain MLP step in the runs at np=n over the same step next to the profile the
    model uses for `case` at n: what n ranks sharing the machine (and any other load
    then) cost each rank's compute relative to when the profile was taken."""
    refs = agg["plain_ref"][case]
    k = n if n in refs else min(refs, key=lambda m: abs(m - n))
    # with backup ranks the quorum's threads poll beside the step: the plain step measured
    # while they do
    key = "plain_quorum" if case == "bk1" and n in agg["steps"].get("plain_quorum", {}) else "plain"
    return common.median(agg["steps"][key][n]) / refs[k]


def case_profile(agg: Dict[str, Any], case: str, n: int) -> Any:
    from collflow.profile import ProfileFamily
    return ProfileFamily(agg["profiles"][case]).at(n)


def case_model(agg: Dict[str, Any], case: str, n: int, slowdown: float, cores: int) -> Any:
    from collflow.profile import Lognormal, Measured, ScaleModel
    fits = agg["fits"].get(n, {})
    m = {}
    if n > 1:
        m = {("allreduce", n): fits["mpi/allreduce" if case == "mlp_mpi" else "shm/allreduce"],
             ("allgather", n): fits["mpi/allgather"], ("alltoall", n): fits["mpi/alltoall"]}
    b = 1 if case == "bk1" else 0
    straggler = Lognormal(smc.BK["median_delay"], smc.BK["sigma"]) if case.startswith("bk") else None
    # deciding the quorum: READY to rank 0 and DECISION back, each a message (half MPI's
    # small all-reduce) noticed by a thread that polls every QUORUM_POLL_S (half of it on
    # average: collflow/comm/backup.py)
    prof = case_profile(agg, case, n)
    quorum = 0.0
    if b and n > 1:
        quorum = max(0.0, fits["mpi/allreduce"][0]) + QUORUM_POLL_S
        # then the left-out rank stops between ops (its Delay op looks every DELAY_POLL_S:
        # half of it on average) and catches up; the members wait in the collectives for it
        # as far as its catch-up run takes longer than their own part after the gate
        catchup = agg["catchup"][n] * agg["plain_ref"]["bk1"][n] * slowdown
        first = next(i for i, s in enumerate(prof.segments) if s.kind == "launch")
        after_gate = sum(s.seconds for s in prof.segments[first:]) * slowdown
        quorum += DELAY_POLL_S / 2 + max(0.0, catchup - after_gate)
    return ScaleModel(prof, Measured(m, name=f"measured here, np={n}"), smc.BATCH[case],
                      overlap=n < cores, slowdown=slowdown, straggler=straggler, backup_ranks=b, quorum_s=quorum,
                      statistic="median", sync_s=sync_cost(agg, n), cores=cores)


def sync_cost(agg: Dict[str, Any], n: int) -> Any:
    """A meeting point of ranks that computed dt seconds since the last: the sync-point
    micro-benchmark's extra time per iteration less its one-element all-reduce (the fitted
    shared-memory all-reduce's fixed cost, which the collectives' costs count already),
    interpolated in dt between its compute lengths (0 at dt = 0, flat past the longest)."""
    pts = agg["sync_extra"].get(n)
    if pts is None or n < 2:
        return 0.0
    a = agg["fits"][n]["shm/allreduce"][0]
    xs = [0.0] + [p[0] for p in pts]
    ys = [0.0] + [max(0.0, p[1] - a) for p in pts]
    return lambda dt: float(np.interp(dt, xs, ys))


def validate(agg: Dict[str, Any], nps: List[int], cores: int) -> Tuple[List[Dict[str, Any]], Dict[int, float]]:
    steps = agg["steps"]
    base = common.median(steps["plain"][1])
    slow = {n: common.median(steps["plain"][n]) / base for n in nps if n in steps["plain"]}
    rows = []
    for case in smc.CASES:
        for n in nps:
            meas = steps.get(case, {}).get(n)
            if not meas:
                continue
            model = case_model(agg, case, n, slowdown(agg, case, n), cores)
            p = model.predict(n)
            med = common.median(meas)
            rows.append(dict(case=case, np=n, measured_s=med, measured_min_s=float(min(meas)),
                             measured_max_s=float(max(meas)), repeats=len(meas), predicted_s=p.step_s,
                             error=(p.step_s - med) / med, compute_s=p.compute_s, comm_s=p.comm_s,
                             exposed_comm_s=p.exposed_comm_s, straggler_s=p.straggler_s,
                             slowdown=model.slowdown(n),
                             oversubscribed=n > cores))
    # efficiencies: samples/s(n) / (n x samples/s(1)), measured and predicted alike
    for row in rows:
        one = next((x for x in rows if x["case"] == row["case"] and x["np"] == 1), None)
        b = 1 if row["case"] == "bk1" else 0
        if one is None and row["case"] == "bk1":
            one = next((x for x in rows if x["case"] == "bk0" and x["np"] == 1), None)
        if one is not None:
            k = row["np"] - (b if row["np"] > 1 else 0)
            row["measured_eff"] = k * one["measured_s"] / (row["np"] * row["measured_s"])
            row["predicted_eff"] = k * one["predicted_s"] / (row["np"] * row["predicted_s"])
    return rows, slow


def transport_table(agg: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The fitted transports, also as the alpha and beta of the textbook algorithm."""
    from collflow.profile import link_from_fit
    out = []
    for n, by_key in sorted(agg["fits"].items()):
        for key, (a, b) in sorted(by_key.items()):
            kind = key.split("/")[1]
            link = link_from_fit(kind, n, a, b)
            med = agg["timings"][n][key]
            pred = [a + b * s for s in agg["sizes"][key]]
            worst = max(abs(p - m) / m for p, m in zip(pred, med))
            out.append(dict(transport=key, np=n, a_s=a, b_s_per_byte=b, alpha_s=link.alpha,
                            bandwidth_gb_s=link.bandwidth / 1e9, worst_fit_error=worst,
                            sizes=agg["sizes"][key], seconds=med))
    return out


def analyze(launches: List[Dict[str, Any]], nps: List[int], cores: int, notes: List[str],
            config: Dict[str, Any]) -> None:
    import scale_model_plots as plots
    agg = aggregate(launches)
    rows, slow = validate(agg, nps, cores)
    transports = transport_table(agg)
    published = plots.published_comparisons()
    pngs, extrap = plots.extrapolate_and_plot(agg, rows, case_profile, common.RESULTS_DIR)
    met = [r for r in rows if abs(r["error"]) <= TARGET]
    payload = {
        "config": config, "launches": launches, "validation": rows, "compute_slowdown": slow,
        "sync_point": {n: agg["sync_extra"][n] for n in sorted(agg["sync_extra"])},
        "transports": [{k: v for k, v in t.items()} for t in transports], "published": published,
        "extrapolation": extrap, "plots": pngs, "notes": notes,
        "profiles": {c: {str(k): p.to_dict() for k, p in by_n.items()} for c, by_n in agg["profiles"].items()},
        "targets": {"within_20_percent": {"met": len(met), "of": len(rows),
                                           "value": f"{len(met)}/{len(rows)} predictions within 20%"}},
    }
    path = common.save_results(NAME, payload)
    loads = [ln["load_before"][0] for ln in launches if ln.get("load_before")]
    print(f"\nresults: {path}; plots: {', '.join(os.path.basename(p) for p in pngs)}")
    if loads:
        print(f"1-minute load average before the launches: median {common.median(loads):.2f}, "
              f"max {max(loads):.2f} ({cores} cores)")
    for nt in notes:
        print("note:", nt)
    print("\nfitted transports (seconds = a + b * bytes per call; as the textbook algorithm's alpha/bandwidth):")
    print(common.fmt_table(["transport", "np", "a us", "GB/s (1/b)", "alpha us", "link GB/s", "worst fit err"],
                           [[t["transport"], t["np"], t["a_s"] * 1e6, 1e-9 / t["b_s_per_byte"] if t["b_s_per_byte"] > 0
                             else "-", t["alpha_s"] * 1e6, t["bandwidth_gb_s"], f"{100 * t['worst_fit_error']:.0f}%"]
                            for t in transports]))
    print("cost of a point where ranks that computed 1 / 3 / 6 ms meet (beyond the all-reduce): "
          + ", ".join(f"np={n} " + " / ".join(f"{1e3 * sync_cost(agg, n)(dt):.2f}" for dt in (1e-3, 3e-3, 6e-3))
                      + " ms" for n in sorted(agg["sync_extra"])))
    print(f"\ncompute slowdown with np ranks busy at once (MLP step, no communication): "
          + ", ".join(f"np={n} {s:.2f}x" for n, s in sorted(slow.items())))
    print("\npublished results (Horovod: 128 GPUs; the model with line-rate links and perfect overlap, and the "
          "share of the line rate that would reproduce the paper):")
    print(common.fmt_table(["model", "network", "reported", "predicted", "line rate needed"],
                           [[p["model"], p["network"], f"{100 * p['reported']:.0f}%", f"{100 * p['predicted']:.1f}%",
                             f"{100 * p['line_rate_share_for_reported']:.0f}%" if p["line_rate_share_for_reported"]
                             else "-"] for p in published["horovod"]]))
    tf = published["tensorflow_backup"]
    print(f"TensorFlow paper, 50 workers + b backups: reported best step at b={tf['reported_best_step_b']}, best "
          f"normalized speedup {100 * (tf['reported_best_speedup'] - 1):.1f}% at b={tf['reported_best_speedup_b']}; "
          f"the model with lognormal step times (sigma {tf['sigma']:.2f}, fitted to the 9.5%): best step at "
          f"b={tf['predicted_best_step_b']}, best speedup at b={tf['predicted_best_speedup_b']}; step at b=0 "
          f"{tf['predicted_step_s'][0]:.2f} s, at b=4 {tf['predicted_step_s'][4]:.2f} s (reported 1.93 s)")
    pv, ns_x = extrap["ps_vs_allgather"], extrap["ns"]
    print("\nPS what-if, the next batch's route exchanged during this step (pipelined), predicted samples/s gain: "
          + "; ".join(net + ": " + ", ".join(
              f"N={n} {100 * (pv['route_pipelined'][f'ps {net}'][i] / pv['vs_n'][f'ps {net}'][i] - 1):+.1f}%"
              for i, n in enumerate(ns_x) if n in (2, 8, 64, 512)) for net in ("25GbE-TCP", "100GbE-RoCE")))
    print(f"\nvalidation on this machine ({cores} cores; np > {cores} oversubscribed): predicted vs measured step")
    table = []
    for r in rows:
        table.append([smc.LABEL[r["case"]], f"{r['np']}" + (" (over)" if r["oversubscribed"] else ""),
                      r["measured_s"] * 1e3, f"{r['measured_min_s'] * 1e3:.1f}-{r['measured_max_s'] * 1e3:.1f}",
                      r["predicted_s"] * 1e3, f"{100 * r['error']:+.1f}%",
                      f"{100 * r['measured_eff']:.0f}%" if "measured_eff" in r else "-",
                      f"{100 * r['predicted_eff']:.0f}%" if "predicted_eff" in r else "-",
                      r["exposed_comm_s"] * 1e3, r["straggler_s"] * 1e3])
    print(common.fmt_table(["case", "np", "measured ms", "range ms", "predicted ms", "error", "meas. eff",
                            "pred. eff", "comm adds ms", "stragglers ms"], table))
    missed = ", ".join(f"{x['case']} np={x['np']}" for x in rows if x not in met)
    print(f"\ntarget: predictions within {100 * TARGET:.0f}% of the measured median: {len(met)}/{len(rows)} "
          + ("MET" if not missed else f"MISSED ({missed})"))


# -- the driver ---------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nps", default="1,2,3,4")
    ap.add_argument("--rounds", type=int, default=2, help="launches per np (cycled over the nps)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10, help="timed steps per repeat (median taken)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--traces", type=int, default=5, help="traced runs per profile")
    ap.add_argument("--calib-repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="a smoke run: profiles at 1-2 ranks, nps 1,2, 1 round")
    ap.add_argument("--max-load", type=float, default=1.0,
                    help="wait until the 1-minute load average is below this before each launch")
    ap.add_argument("--max-wait", type=float, default=120.0, help="seconds to wait for a quiet machine")
    ap.add_argument("--analyze-only", action="store_true", help="rerun the model on the saved launches")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-profile", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a)
        return
    cores = os.cpu_count() or 1
    if a.quick:
        a.nps, a.rounds, a.repeats, a.steps = "1,2", 1, 3, 5
    nps = sorted({int(v) for v in a.nps.split(",")})
    if 1 not in nps:
        raise SystemExit("--nps must include 1 (profiles and the one-rank baselines come from it)")
    config = dict(nps=nps, cores=cores, rounds=a.rounds, repeats=a.repeats, steps=a.steps, warmup=a.warmup,
                  traces=a.traces, calib_repeats=a.calib_repeats, mlp=smc.MLP, wide_deep=smc.WD, stragglers=smc.BK,
                  profile_sizes=PROFILE_SIZES, calib_sizes=CALIB_SIZES, target=TARGET,
                  launch="mpiexec -n N --oversubscribe --bind-to none, OMP_NUM_THREADS=1")
    notes: List[str] = []
    if a.analyze_only:
        with open(os.path.join(common.RESULTS_DIR, NAME + ".json")) as f:
            saved = json.load(f)
        launches, config = saved["launches"], saved["config"]
        notes = [n for n in saved["notes"] if n.startswith("round")]
        nps = config["nps"]
    else:
        extra = ["--repeats", str(a.repeats), "--steps", str(a.steps), "--warmup", str(a.warmup), "--traces",
                 str(a.traces), "--calib-repeats", str(a.calib_repeats)] + (["--quick"] if a.quick else [])
        launches = []
        for rnd in range(a.rounds):
            for k in nps:
                notes += [f"round {rnd}, np={k}: {w}" for w in common.wait_for_quiet(a.max_load, a.max_wait)]
                t0 = time.perf_counter()
                res = common.launch_mpi(__file__, k, extra, timeout=3600)
                res["round"], res["wall_s"] = rnd, time.perf_counter() - t0
                launches.append(res)
                # the raw runs are saved as they come: --analyze-only redoes the model from them
                common.save_results(NAME, {"config": config, "launches": launches, "notes": notes, "partial": True})
                print(f"round {rnd} np={k} ({res['transport']}, {res['wall_s']:.0f} s): " + ", ".join(
                    f"{c} {common.median(v) * 1e3:.1f}" for c, v in res["step_s"].items())
                    + f" ms; load {res['load_before']} -> {res['load_after']}", flush=True)
    analyze(launches, nps, cores, notes, config)


if __name__ == "__main__":
    main()
