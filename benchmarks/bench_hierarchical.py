"""The hierarchical all-reduce: what it saves between hosts, measured where one machine can and
modelled where it cannot.

    python benchmarks/bench_hierarchical.py [--np 4] [--hosts 2] [--repeats 15] [--save]

1. Measured (mpiexec -n NP, $COLLFLOW_PRETEND_HOSTS=HOSTS: NP ranks as HOSTS hosts of
   consecutive ranks on this machine): for gradients of 64 KiB, 1 MiB and 16 MiB, the
   HierarchicalCommunicator's all-reduce against a flat MPI all-reduce (MPICommunicator with
   shm=False: what ranks on different hosts use) and the flat shared-memory one (this
   host's best), interleaved, median of --repeats; the bytes each handed to collectives that
   span hosts (the leaders' stage 2 against every rank's flat call); results bit-identical on
   every rank.  On one machine "between hosts" is still shared memory, so the times show the
   scheme's overhead here, not its gain.
2. Modelled (collflow.profile: alpha-beta costs, published links): one all-reduce of a
   ResNet-50-sized gradient (102 MB) and of a 1 MB one, flat ring against hierarchical, for 8
   ranks per host and 2 ... 64 hosts over 25 GbE (TCP) and 100 GbE (RoCE); bytes each host's
   network link carries and the network latency terms.
Results: benchmarks/results/bench_hierarchical.json (results/local/ without --save).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Dict, List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

NAME = "bench_hierarchical"
SIZES = (1 << 16, 1 << 20, 1 << 24)


def worker(a: argparse.Namespace) -> None:
    import json
    from mpi4py import MPI
    from collflow.comm import HierarchicalCommunicator, MPICommunicator
    world = MPI.COMM_WORLD
    flat_mpi = MPICommunicator(world, shm=False)
    flat_shm = MPICommunicator(world)
    hier = HierarchicalCommunicator(world)
    comms = {"hierarchical": hier, "flat MPI": flat_mpi, "flat shared memory": flat_shm}
    rng = np.random.default_rng(world.Get_rank())
    out: Dict[str, Any] = {"np": world.Get_size(), "hosts": hier.num_hosts, "ranks_per_host": hier.local_size,
                           "shm_flat": flat_shm.shm_active, "sizes": {}}
    for nbytes in SIZES:
        x = rng.standard_normal(nbytes // 4).astype(np.float32)
        times: Dict[str, List[float]] = {k: [] for k in comms}
        for c in comms.values():
            for _ in range(3):
                c.allreduce(x)
        for rep in range(a.repeats):
            names = list(comms) if rep % 2 == 0 else list(comms)[::-1]
            for k in names:
                c = comms[k]
                world.Barrier()
                t = time.perf_counter()
                c.allreduce(x)
                dt = time.perf_counter() - t
                times[k].append(max(world.allgather(dt)))   # the slowest rank's
        for c in comms.values():
            c.reset_stats()
        r_h = hier.allreduce(x)
        r_f = flat_mpi.allreduce(x)
        same = all(np.array_equal(v, r_h) for v in world.allgather(r_h))
        # bytes handed to collectives that span hosts, summed over the ranks of each host
        handed = world.allgather(hier.inter_host_bytes_sent)
        per_host = [sum(handed[r] for r in range(world.Get_size()) if hier.hosts[r] == h)
                    for h in range(hier.num_hosts)]
        out["sizes"][str(nbytes)] = {
            "median_s": {k: common.median(v) for k, v in times.items()},
            "bit_identical_on_every_rank": bool(same),
            "max_abs_diff_vs_flat": float(np.max(np.abs(r_h - r_f))),
            "bytes_into_inter_host_collectives_per_host": {"hierarchical": max(per_host),
                                                           "flat": hier.local_size * x.nbytes}}
    if world.Get_rank() == 0:
        print("RESULT " + json.dumps(out), flush=True)
    for c in comms.values():
        c.close()


def model_rows() -> List[Dict[str, Any]]:
    from collflow.profile import LINKS, Cluster, FlatRing, Hierarchical
    rows = []
    for net in ("25GbE-TCP", "100GbE-RoCE"):
        cluster = Cluster(f"8 ranks/host, {net}", 8, LINKS["PCIe3-x16"], LINKS[net])
        for nbytes in (102e6, 1e6):
            for hosts in (2, 8, 64):
                n = 8 * hosts
                l = 8
                flat_t = FlatRing(cluster).allreduce(nbytes, n)
                hier_t = Hierarchical(cluster).allreduce(nbytes, n)
                rows.append({
                    "network": net, "gradient_bytes": nbytes, "hosts": hosts, "ranks": n,
                    "flat_ring_s": flat_t, "hierarchical_s": hier_t,
                    # a host-ordered ring: each host sends 2(n-1)/n of the gradient over its
                    # link; hierarchical: 2(H-1)/H; latency terms 2(n-1) against 2(H-1)
                    "flat_bytes_per_host_link": 2 * (n - 1) / n * nbytes,
                    "hierarchical_bytes_per_host_link": 2 * (hosts - 1) / hosts * nbytes,
                    "flat_network_latency_terms": 2 * (n - 1), "hierarchical_network_latency_terms": 2 * (hosts - 1),
                    # recursive doubling (MPI's choice for small messages): log2(n) exchanges of
                    # the whole buffer, log2(H) of them between hosts, by every rank of a host
                    "flat_recursive_doubling_bytes_per_host_link": l * np.log2(hosts) * nbytes,
                    "hierarchical_recursive_doubling_bytes_per_host_link": np.log2(hosts) * nbytes,
                    "ranks_per_host": l})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a)
        return
    os.environ["COLLFLOW_PRETEND_HOSTS"] = str(a.hosts)
    res = common.launch_mpi(__file__, a.np, ["--repeats", str(a.repeats)], timeout=900)
    rows = []
    for nb, r in res["sizes"].items():
        m = r["median_s"]
        b = r["bytes_into_inter_host_collectives_per_host"]
        rows.append([f"{int(nb) / 2 ** 20:.3g} MiB", m["hierarchical"] * 1e3, m["flat MPI"] * 1e3,
                     m["flat shared memory"] * 1e3, f"{b['hierarchical'] / 2 ** 20:.3g} / {b['flat'] / 2 ** 20:.3g} MiB",
                     "yes" if r["bit_identical_on_every_rank"] else "NO", f"{r['max_abs_diff_vs_flat']:.1e}"])
    print(f"measured: {res['np']} ranks as {res['hosts']} pretend hosts of {res['ranks_per_host']} (one machine)")
    print(common.fmt_table(["gradient", "hierarchical ms", "flat MPI ms", "flat shm ms",
                            "into inter-host collectives per host (hier / flat)", "bit-identical", "max |diff| vs flat"],
                           rows))
    mrows = model_rows()
    print("\nmodelled (collflow.profile; 8 ranks per host on PCIe, one NIC per host):")
    print(common.fmt_table(
        ["network", "gradient", "hosts", "flat ring ms", "hierarchical ms", "host link MB (ring, both)",
         "latency terms flat / hier", "host link MB (rec. doubling) flat / hier"],
        [[r["network"], f"{r['gradient_bytes'] / 1e6:.0f} MB", r["hosts"], r["flat_ring_s"] * 1e3,
          r["hierarchical_s"] * 1e3, f"{r['flat_bytes_per_host_link'] / 1e6:.1f} / "
          f"{r['hierarchical_bytes_per_host_link'] / 1e6:.1f}",
          f"{r['flat_network_latency_terms']} / {r['hierarchical_network_latency_terms']}",
          f"{r['flat_recursive_doubling_bytes_per_host_link'] / 1e6:.0f} / "
          f"{r['hierarchical_recursive_doubling_bytes_per_host_link'] / 1e6:.0f}"] for r in mrows]))
    path = common.save_results(NAME, {"config": {"np": a.np, "hosts": a.hosts, "repeats": a.repeats,
                                                 "sizes": list(SIZES)},
                                      "measured": res, "model": mrows})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
