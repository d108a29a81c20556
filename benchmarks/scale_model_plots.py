"""bench_scale_model.py's comparisons with published results, its extrapolations to 512 ranks
and its plots (matplotlib; the numbers are computed and saved without it)."""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from collflow.profile import (LINKS, Cluster, FlatRing, Hierarchical, Link, Lognormal, ProfileFamily, ScaleModel,
                              backup_speedup, expected_unique_fields, order_stat_quantile)
from collflow.profile import published as pub

import scale_model_cases as smc

NS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]


# -- published results ---------------------------------------------------------------------------------

def _horovod_eff(run: pub.PublishedRun, network: str, share: float = 1.0, hierarchical: bool = False) -> float:
    base = LINKS[network]
    inter = Link(base.name, base.alpha, base.beta / share, base.source)
    cluster = Cluster(f"{run.gpus_per_host} GPUs/host, {network}", run.gpus_per_host, LINKS["PCIe3-x16"], inter)
    costs = Hierarchical(cluster) if hierarchical else FlatRing(cluster)
    return ScaleModel(pub.horovod_profile(run), costs, run.batch).predict(run.gpus).efficiency


def _share_for(run: pub.PublishedRun, network: str, target: float) -> Optional[float]:
    """The share of the inter-host line rate at which the model gives `target` (None: not
    even the full line rate is that slow / that fast)."""
    lo, hi = 0.01, 1.0
    if _horovod_eff(run, network, hi) < target or _horovod_eff(run, network, lo) > target:
        return None
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if _horovod_eff(run, network, mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _tf_backup(sigma: float, b: int, n: int = 50) -> float:
    """Median step (relative) of n workers + b backups with lognormal step times."""
    return order_stat_quantile(Lognormal(1.0, sigma), n, n + b, 0.5)


def published_comparisons() -> Dict[str, Any]:
    horovod = []
    for run in pub.HOROVOD_RUNS:
        for net in ("25GbE-TCP", "25GbE-RoCE"):
            horovod.append(dict(model=run.name, network=net, gpus=run.gpus, reported=run.reported_efficiency,
                                predicted=_horovod_eff(run, net),
                                predicted_hierarchical=_horovod_eff(run, net, hierarchical=True),
                                line_rate_share_for_reported=_share_for(run, net, run.reported_efficiency),
                                step_s=run.step_s, grad_mb=run.grad_bytes / 1e6, sources=run.sources))
    tf = pub.TF_BACKUP
    n, want = tf["workers"], tf["best_speedup"]

    def speedup(sigma: float, b: int) -> float:
        return backup_speedup(_tf_backup(sigma, b, n), _tf_backup(sigma, 0, n), n, b)
    lo, hi = 0.01, 2.0  # the spread that gives the paper's 9.5% at b = 3
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if speedup(mid, tf["best_speedup_backups"]) < want:
            lo = mid
        else:
            hi = mid
    sigma = 0.5 * (lo + hi)
    bs = list(range(0, 13))
    rel = [_tf_backup(sigma, b, n) for b in bs]
    scale = tf["best_step_s"] / rel[tf["best_step_backups"]]
    sp = [speedup(sigma, b) for b in bs]
    return {"horovod": horovod, "tensorflow_backup": dict(
        workers=n, sigma=sigma, backups=bs, predicted_step_s=[scale * r for r in rel], predicted_speedup=sp,
        predicted_best_step_b=int(np.argmin(rel)), predicted_best_speedup_b=int(np.argmax(sp)),
        reported_best_step_b=tf["best_step_backups"], reported_best_speedup_b=tf["best_speedup_backups"],
        reported_best_speedup=want, reported_best_step_s=tf["best_step_s"], source=tf["source"],
        note="step times lognormal (sigma fitted to the reported 9.5% at b=3); the step scaled to the reported "
             "1.93 s at b=4")}


# -- extrapolations -------------------------------------------------------------------------------------

def _cpu_cluster(agg: Dict[str, Any], network: str) -> Tuple[Cluster, float]:
    """Hosts like this one joined by `network`, and collflow's fixed cost per collective call.

    Measured here at np=2: a hop inside the host has the latency of MPI's shared-memory
    path (half its small all-reduce) and the bandwidth of collflow's shared-memory
    all-reduce; the fixed cost of that all-reduce is the software's per-call overhead."""
    a_shm, b_shm = agg["fits"][2]["shm/allreduce"]
    a_mpi, _ = agg["fits"][2]["mpi/allreduce"]
    intra = Link("shared memory (measured here)", max(0.0, a_mpi) / 2, max(b_shm, 1e-13))
    return Cluster(f"2 CPU ranks/host, {network}", 2, intra, LINKS[network]), max(0.0, a_shm)


def _costs(agg: Dict[str, Any], network: str, hierarchical: bool = False) -> Any:
    cluster, overhead = _cpu_cluster(agg, network)
    return (Hierarchical if hierarchical else FlatRing)(cluster, overhead=overhead)


def efficiency_curves(agg: Dict[str, Any]) -> Dict[str, Any]:
    run = pub.HOROVOD_RUNS[1]  # ResNet-101
    prof = pub.horovod_profile(run)
    out: Dict[str, Any] = {"resnet101": {}, "mlp": {}}
    for label, net, hier in (("flat ring, 25GbE TCP", "25GbE-TCP", False),
                             ("flat ring, 25GbE RoCE", "25GbE-RoCE", False),
                             ("hierarchical, 25GbE RoCE", "25GbE-RoCE", True),
                             ("flat ring, 100GbE RoCE", "100GbE-RoCE", False),
                             ("hierarchical, IB EDR", "IB-EDR", True)):
        cl = Cluster(f"4 GPUs/host, {net}", 4, LINKS["PCIe3-x16"], LINKS[net])
        m = ScaleModel(prof, Hierarchical(cl) if hier else FlatRing(cl), run.batch)
        out["resnet101"][label] = [m.predict(n).efficiency for n in NS]
    fam = ProfileFamily(agg["profiles"]["mlp_mpi"])
    s1, s2 = agg["slowdown1"], agg["slowdown2"]
    for label, net, hier in (("flat ring, 25GbE TCP", "25GbE-TCP", False),
                             ("hierarchical, 25GbE TCP", "25GbE-TCP", True),
                             ("flat ring, 100GbE RoCE", "100GbE-RoCE", False),
                             ("hierarchical, 100GbE RoCE", "100GbE-RoCE", True)):
        m = ScaleModel(fam, _costs(agg, net, hier), smc.MLP["per_rank"], overlap=False,
                       slowdown=lambda n: s1 if n == 1 else s2)
        out["mlp"][label] = [m.predict(n).efficiency for n in NS]
    return out


# the PS step's ops whose work follows the distinct ids a rank looks up (routes, rows served
# and pushed, the owner's merge after the push, the sparse update)
_PS_SPARSE = ("embedding_lookup", "PSPush", "SparseApply")


def _ps_at(agg: Dict[str, Any], case_profile: Callable[..., Any], n: int, scale: float = 1.0) -> Any:
    """The PS step at n ranks with `scale` times the distinct ids per rank: its exchanges'
    bytes and the work of its sparse ops scaled alike (the rest is the dense model's)."""
    from dataclasses import replace
    from collflow.profile import StepProfile
    prof = case_profile(agg, "wd_ps", n)
    if scale != 1.0:
        prof = prof.with_calls({s.op: [(k, nb * scale) for k, nb in s.calls] for s in prof.collectives()
                                if any(k == "alltoallv" for k, _ in s.calls)})
        segs = [replace(s, seconds=s.seconds * scale) if s.kind == "compute" and any(k in s.op for k in _PS_SPARSE)
                else s for s in prof.segments]
        prof = StepProfile(segs, prof.size, None, list(prof.notes) + [f"sparse work x{scale:.2f}"])
    return prof


def _route_hidden(prof: Any) -> Any:
    """The PS step with its route exchanges (the ids each owner is asked for) off the step's
    critical path: their calls cost nothing here."""
    routes = {s.op: [] for s in prof.collectives() if s.op.endswith("/route")}
    return prof.with_calls(routes) if routes else prof


def ps_vs_allgather(agg: Dict[str, Any], case_profile: Callable[..., Any]) -> Dict[str, Any]:
    s2 = agg["slowdown2"]
    slow = (lambda n: agg["slowdown1"] if n == 1 else s2)
    b = smc.WD["per_rank"]
    out: Dict[str, Any] = {"vs_n": {}, "vs_touched": {}}
    for net in ("25GbE-TCP", "100GbE-RoCE"):
        costs = _costs(agg, net)
        for mode in ("ps", "ag"):
            ys = []
            for n in NS:
                prof = _ps_at(agg, case_profile, n) if mode == "ps" else case_profile(agg, "wd_ag", n)
                ys.append(ScaleModel(prof, costs, b, overlap=False, slowdown=slow(n)).predict(n).samples_per_s)
            out["vs_n"][f"{mode} {net}"] = ys
    # what-if: the next batch's route exchanged while this step runs (pipelined: its launch
    # costs nothing on the step's path; its compute, the ids' dedup, stays)
    out["route_pipelined"] = {}
    for net in ("25GbE-TCP", "100GbE-RoCE"):
        costs = _costs(agg, net)
        out["route_pipelined"][f"ps {net}"] = [
            ScaleModel(_route_hidden(_ps_at(agg, case_profile, n)), costs, b, overlap=False,
                       slowdown=slow(n)).predict(n).samples_per_s for n in NS]
    v, f, z0 = smc.WD["vocab"], smc.WD["fields"], smc.WD["zipf"]
    u0 = expected_unique_fields(v, z0, f, b)
    costs = _costs(agg, "25GbE-TCP")
    for n in (2, 8):
        rows = []
        for z in (2.0, 1.6, 1.3, 1.0, 0.7, 0.4, 0.0):
            u = expected_unique_fields(v, z, f, b)
            touched = expected_unique_fields(v, z, f, b * n) / v
            ps = ScaleModel(_ps_at(agg, case_profile, n, u / u0), costs, b, overlap=False, slowdown=s2).predict(n)
            ag = ScaleModel(case_profile(agg, "wd_ag", n), costs, b, overlap=False, slowdown=s2).predict(n)
            rows.append(dict(zipf=z, touched=touched, unique_per_rank=u, ps_step_s=ps.step_s, ag_step_s=ag.step_s))
        out["vs_touched"][str(n)] = rows
    return out


def backup_vs_spread(agg: Dict[str, Any]) -> Dict[str, Any]:
    n = 64
    costs = _costs(agg, "100GbE-RoCE")
    # one step for every b (the backup path's: gradients gated, one flagged bucket), so the
    # curves differ by the stragglers only (b = 0's own plan sends its large gradient in a
    # call of its own: at 64 ranks one more ring's latency, 2 ms here)
    fam1 = ProfileFamily(agg["profiles"]["bk1"])
    d = 0.25 * fam1.at(8).compute_s  # the delays' median: a quarter of the step's compute
    sigmas = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0]
    out: Dict[str, Any] = {"n": n, "median_delay_s": d, "sigmas": sigmas, "throughput_vs_b0": {}}
    base = {}
    for b in (0, 1, 2, 4, 8):
        ys = []
        for s in sigmas:
            m = ScaleModel(fam1, costs, smc.BK["per_rank"], overlap=False,
                           straggler=Lognormal(d, s), backup_ranks=b, quorum_s=2 * LINKS["100GbE-RoCE"].alpha)
            sps = m.predict(n).samples_per_s
            if b == 0:
                base[s] = sps
            ys.append(sps / base[s])
        out["throughput_vs_b0"][str(b)] = ys
    return out


# -- plots ------------------------------------------------------------------------------------------------

def extrapolate_and_plot(agg: Dict[str, Any], rows: List[Dict[str, Any]], case_profile: Callable[..., Any],
                         outdir: str) -> Tuple[List[str], Dict[str, Any]]:
    # each rank's compute on hosts of two ranks like this one: the plain step at np=2 over the
    # plain step next to the profiles
    refs = float(np.median([v for by_n in agg["plain_ref"].values() for v in by_n.values()]))
    plain = agg["steps"]["plain"]
    agg["slowdown1"] = float(np.median(plain[1]) / refs)
    agg["slowdown2"] = float(np.median(plain[2]) / refs) if 2 in plain else agg["slowdown1"]
    data = {"efficiency_vs_n": efficiency_curves(agg), "ps_vs_allgather": ps_vs_allgather(agg, case_profile),
            "backup_vs_spread": backup_vs_spread(agg), "ns": NS}
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        data["note"] = "matplotlib is not installed: no plots (pip install matplotlib)"
        return [], data
    os.makedirs(outdir, exist_ok=True)
    paths = []

    def save(fig: Any, name: str) -> None:
        p = os.path.join(outdir, f"bench_scale_model_{name}.png")
        fig.tight_layout()
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)

    # 1. predicted vs measured on this machine
    cases = [c for c in smc.CASES if any(r["case"] == c for r in rows)]
    fig, axes = plt.subplots(1, len(cases), figsize=(2.6 * len(cases), 3.6), sharey=False)
    for ax, c in zip(np.atleast_1d(axes), cases):
        rs = [r for r in rows if r["case"] == c]
        x = np.arange(len(rs))
        ax.bar(x - 0.2, [1e3 * r["measured_s"] for r in rs], 0.4, label="measured (median)", color="tab:blue",
               yerr=[[1e3 * (r["measured_s"] - r["measured_min_s"]) for r in rs],
                     [1e3 * (r["measured_max_s"] - r["measured_s"]) for r in rs]], capsize=2)
        ax.bar(x + 0.2, [1e3 * r["predicted_s"] for r in rs], 0.4, label="model", color="tab:orange")
        ax.set_xticks(x, [f"np={r['np']}" for r in rs], fontsize=8)
        ax.set_title(smc.LABEL[c], fontsize=9)
        ax.set_ylabel("step ms" if c == cases[0] else "")
        ax.grid(axis="y", alpha=0.3)
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.suptitle("scaling model vs measured step, this machine (np 3, 4 oversubscribed on 2 cores)", fontsize=10)
    save(fig, "validation")

    # 2. efficiency vs N
    eff = data["efficiency_vs_n"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, ys in eff["resnet101"].items():
        a1.plot(NS, [100 * y for y in ys], "o-", ms=3, label=label)
    a1.scatter([128], [88], marker="*", s=140, color="black", zorder=5, label="Horovod paper: 88% at 128 GPUs")
    a1.set_title("ResNet-101, P100 step (published rate), 4 GPUs/host, batch 64", fontsize=9)
    for label, ys in eff["mlp"].items():
        a2.plot(NS, [100 * y for y in ys], "o-", ms=3, label=label)
    a2.set_title("collflow MLP 784-1024-1024-10 (profiled here), 1 core/rank, 2 ranks/host", fontsize=9)
    for ax in (a1, a2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(NS, [str(n) for n in NS])
        ax.set_xlabel("ranks N")
        ax.set_ylabel("efficiency: samples/s(N) / (N x samples/s(1))  [%]")
        ax.set_ylim(0, 105)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    save(fig, "efficiency")

    # 3. PS vs allgather
    pv = data["ps_vs_allgather"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for key, ys in pv["vs_n"].items():
        mode, net = key.split(" ", 1)
        a1.plot(NS, ys, ("o-" if mode == "ps" else "s--"), ms=3,
                label=("PS (sharded, alltoallv)" if mode == "ps" else "allgather (replicated)") + f", {net}")
    a1.set_xscale("log", base=2)
    a1.set_yscale("log")
    a1.set_xticks(NS, [str(n) for n in NS])
    a1.set_xlabel("ranks N")
    a1.set_ylabel("samples/s (model)")
    a1.set_title(f"wide_deep {smc.WD['vocab'] // 1000}k x {smc.WD['dim']}, {smc.WD['per_rank']}/rank, Zipf "
                 f"{smc.WD['zipf']}", fontsize=9)
    for n, rs in pv["vs_touched"].items():
        xs = [100 * r["touched"] for r in rs]
        a2.plot(xs, [1e3 * r["ps_step_s"] for r in rs], "o-", label=f"PS, N={n}")
        a2.plot(xs, [1e3 * r["ag_step_s"] for r in rs], "s--", label=f"allgather, N={n}")
    a2.set_xscale("log")
    a2.set_xlabel("rows of the table touched per step, % (Zipf exponent 2.0 ... 0)")
    a2.set_ylabel("step ms (model), 25GbE TCP")
    a2.set_title("PS vs allgather as ids spread out", fontsize=9)
    for ax in (a1, a2):
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    save(fig, "ps_vs_allgather")

    # 4. backup ranks vs straggler spread
    bv = data["backup_vs_spread"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for b, ys in bv["throughput_vs_b0"].items():
        ax.plot(bv["sigmas"], ys, "o-", ms=3, label=f"b={b} backup ranks")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xlabel("straggler spread sigma (each rank delayed by median x exp(sigma Z) every step)")
    ax.set_ylabel("samples/s relative to b=0")
    ax.set_title(f"N={bv['n']} ranks, stragglers' median delay {1e3 * bv['median_delay_s']:.1f} ms "
                 "(1/4 of the step's compute)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, "backup")
    return paths, data
