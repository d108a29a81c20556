"""collflow's all-reduce path vs raw mpi4py Allreduce of the same bytes, 2 ranks (launches itself
under mpiexec).

  (a) one 16 MiB float32 gradient:
      - raw mpi4py `COMM_WORLD.Allreduce` (preallocated send and receive buffers): the reference;
      - collflow `comm.allreduce(x, out=buf)` (the bare communicator, reused receive buffer);
      - collflow graph: the FusedAllReduce that SyncReplicasOptimizer.apply_gradients builds for
        GradientDescent (the sums: the 1/ranks of the average is folded into the learning rate,
        so the bucket is all-reduced straight from the gradient, no pack), run by `Session.run`;
      - for the record: the averaging FusedAllReduce (reduce_gradients' default and the path of
        optimizers that cannot fold the scale: a scaling copy into the send buffer);
      - torch.distributed gloo `all_reduce`, for the record;
      - for the record: `comm.allreduce` of a gradient already in the communicator's memory
        (`comm.empty`, where gradients computed into fusion buckets are), and the graph and
        comm paths over MPI's own collectives (`MPICommunicator(shm=False)`).
      Reported as bytes/s (payload bytes / time) and the ratio to raw.  Target: >= 0.95x raw.
  (b) 200 gradients of 10 KiB (2 MB in all):
      - raw: ONE Allreduce of all 2 MB (the reference) and, for the record, 200 Allreduce calls;
      - collflow graph, fused: the 200 gradients in one bucket (one FusedAllReduce: pack, all-reduce,
        views of the result), the sums as for GradientDescent; the averaging bucket for the record;
      - collflow graph, unfused (fusion_threshold_bytes=0: 200 FusedAllReduce ops), for the record;
      - gloo: 200 all_reduce calls and one of 2 MB, for the record (the gloo rows of (a) and (b)
        are timed after all the others, in a pass of their own: torch.distributed's threads
        disturbed the rows interleaved with them);
      - collflow graph, gradients computed by ops (variable x 1.0, as a backward pass computes
        them): written straight into the bucket's send buffer (the executor's bucket views, no
        packing copy), and the same with bucket views off (packed), and the producers alone;
      - for the record, the hand-written equivalent: NumPy computing the 200 gradients into one
        buffer, then ONE raw Allreduce (and those products alone);
      - for the record, the fused graph path over MPI's own collectives (shm=False).
      Target: fused collflow <= 1.2x the time of the ONE raw all-reduce.
A target whose rows have a median over 1.5x their min (other load on the machine during the
run) is printed UNRELIABLE instead of MET or MISSED: rerun it.  So are the (b) targets of a run
whose raw 2 MB Allreduce took over 10x a local copy of the same bytes (about 5x normally): on this
VM some launches run MPI about 4x slower throughout, plain mpi4py scripts included, which
would flatter collflow's ratios.

The default communicator all-reduces through shared memory when every rank is on one host
(collflow/comm/shm.py; the run prints which transport it had): rows that name no transport
use it.

Every repeat runs every method in turn (interleaved, after a barrier); a repeat's value for a
method is the median of up to `--number` consecutive calls (fewer for slow methods: about
0.25 s of calls) on the slower of the two ranks; the table shows the median over repeats (and
the min, the least disturbed by other load).  The graph's inputs are variables, so Session.run
does no feeding: the time is the run call, reading the variables, the pack into one buffer,
the collective and the unpack.  A plan that waits for the collective at once (nothing else to
overlap) lets the communicator make MPI's blocking call when every rank does the same (see
collflow/comm/mpi.py); a run of these graphs is such a plan.  In (b) the same session running
only the 200 variable reads (no collective) is timed too: a training step computes its
gradients anyway, so "fused minus reads" is what the all-reduce adds to a step (reported next
to the gross time).  Diagnostic rows, for the record: (a) raw Allreduce into a fresh receive
buffer each call, and raw nonblocking Iallreduce + Wait with a preallocated and with a fresh
receive buffer: MPI's nonblocking algorithm and the page faults of a fresh buffer;
(b) the reads-only session.
Results: benchmarks/results/bench_allreduce.json.

    python benchmarks/bench_allreduce.py [--repeats 9] [--number 20] [--max-load 1.0]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Any, Callable, Dict, List, Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402  (sets sys.path, disables output checking before collflow loads)

BIG_BYTES = 16 << 20          # (a): one 16 MiB float32 gradient
SMALL_COUNT = 200             # (b): 200 gradients ...
SMALL_BYTES = 10 << 10        # ... of 10 KiB each
DISTURBED = 1.5               # a row whose median exceeds its min this much was disturbed
SLOW_REFERENCE = 10.0         # raw 2 MB Allreduce over a local 2 MB copy above this: a slow launch


# -- the MPI side -------------------------------------------------------------------------------

def _gloo(torch: Any, world: Any) -> Optional[str]:
    """Joins a torch.distributed gloo group over localhost; None on success, else why not."""
    import torch.distributed as dist
    port = 0
    if world.rank == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    port = world.bcast(port, root=0)
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=world.rank,
                                world_size=world.size)
    except Exception as e:  # pragma: no cover - environment-dependent
        return f"{type(e).__name__}: {e}"
    return None


def _graph_reduce(cf: Any, comm: Any, arrays: List[np.ndarray], fusion: int, average: bool = False,
                  computed: bool = False, bucket_views: bool = True) -> Any:
    """A session and the FusedAllReduce op(s) SyncReplicasOptimizer builds for `arrays` as gradients.

    average=False is what apply_gradients builds for GradientDescent (the sums; the 1/ranks is
    folded into the learning rate); average=True is reduce_gradients' default (the averages).
    computed=False: the gradients are the variables' values (reads, no arithmetic);
    computed=True: each is computed by an op (variable x 1.0), as a backward pass computes
    them, so the executor can have it written straight into the bucket (`bucket_views`)."""
    g = cf.Graph()
    with g.as_default():
        vs = [cf.Variable(a, name=f"grad{i}") for i, a in enumerate(arrays)]
        grads = [v.value() * 1.0 if computed else v.value() for v in vs]
        opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.0), comm=comm,
                                             fusion_threshold_bytes=fusion)
        reduced = opt.reduce_gradients(list(zip(grads, vs)), average=average)
        ops = sorted({id(t.op): t.op for t, _ in reduced}.values(), key=lambda o: o.name)
        # several ops run as one target (a NoOp that waits for all of them)
        target = ops[0] if len(ops) == 1 else cf.group(*ops)
        init = cf.global_variables_initializer()
    sess = cf.Session(graph=g, config={"comm": comm, "check_outputs": False, "bucket_views": bucket_views})
    sess.run(init)
    return sess, target, opt.buckets


def worker(args: argparse.Namespace) -> None:
    from mpi4py import MPI
    import collflow as cf
    # SyncReplicasOptimizer's default bucket size (64 MiB): each case fits one bucket
    from collflow.train.sync_replicas import DEFAULT_FUSION_BYTES
    comm = cf.comm.init(backend="mpi", timeout=120)
    # the same paths over MPI's own collectives, for the record (the default communicator
    # all-reduces through shared memory when every rank is on one host, as here)
    mpi_comm = cf.comm.MPICommunicator(timeout=120, shm=False)
    world = MPI.COMM_WORLD
    r, n = world.rank, world.size
    rng = np.random.default_rng(r)
    notes: List[str] = []

    # (a) one big gradient
    big = rng.standard_normal(BIG_BYTES // 4).astype(np.float32)
    big_out = np.empty_like(big)
    comm_out = np.empty_like(big)
    sess_a, op_a, buckets_a = _graph_reduce(cf, comm, [big], DEFAULT_FUSION_BYTES)
    assert len(buckets_a) == 1
    sess_am, op_am, _ = _graph_reduce(cf, mpi_comm, [big], DEFAULT_FUSION_BYTES)
    big_arena = comm.empty(big.shape, big.dtype)  # a gradient already in the communicator's memory
    big_arena[...] = big
    big_arena_out = comm.empty(big.shape, big.dtype)
    sess_av, op_av, _ = _graph_reduce(cf, comm, [big], DEFAULT_FUSION_BYTES, average=True)
    # (b) 200 small gradients
    smalls = [rng.standard_normal(SMALL_BYTES // 4).astype(np.float32) for _ in range(SMALL_COUNT)]
    flat = np.concatenate(smalls)
    flat_out = np.empty_like(flat)
    small_outs = [np.empty_like(a) for a in smalls]
    sess_b, op_b, buckets_b = _graph_reduce(cf, comm, smalls, DEFAULT_FUSION_BYTES)
    assert len(buckets_b) == 1, buckets_b
    sess_bm, op_bm, _ = _graph_reduce(cf, mpi_comm, smalls, DEFAULT_FUSION_BYTES)
    sess_bv, op_bv, _ = _graph_reduce(cf, comm, smalls, DEFAULT_FUSION_BYTES, average=True)
    sess_u, ops_u, buckets_u = _graph_reduce(cf, comm, smalls, 0)
    assert len(buckets_u) == SMALL_COUNT
    # the producers alone: the same 200 variable reads, no collective
    with sess_b.graph.as_default():
        reads_target = cf.group(*[t.op for t in op_b.inputs], name="reads_only")
    # gradients computed by ops, written into the bucket (bucket views) or packed after
    sess_c, op_c, _ = _graph_reduce(cf, comm, smalls, DEFAULT_FUSION_BYTES, computed=True)
    sess_cp, op_cp, _ = _graph_reduce(cf, comm, smalls, DEFAULT_FUSION_BYTES, computed=True, bucket_views=False)
    with sess_c.graph.as_default():
        producers_target = cf.group(*[t.op for t in op_c.inputs], name="producers_only")

    # correctness first: every path gives the same sums (the averaging graphs: the averages)
    want = np.empty_like(big)
    world.Allreduce(big, want, op=MPI.SUM)
    np.testing.assert_allclose(sess_a.run(op_a.outputs[0]), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sess_av.run(op_av.outputs[0]), want / n, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(comm.allreduce(big), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sess_am.run(op_am.outputs[0]), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(comm.allreduce(big_arena, out=big_arena_out), want, rtol=1e-6, atol=1e-6)
    world.Allreduce(flat, flat_out, op=MPI.SUM)
    part = flat_out[7 * smalls[0].size:8 * smalls[0].size]
    np.testing.assert_allclose(sess_b.run(op_b.outputs[7]), part, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sess_bv.run(op_bv.outputs[7]), part / n, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sess_bm.run(op_bm.outputs[7]), part, rtol=1e-6, atol=1e-6)
    for sc, oc in ((sess_c, op_c), (sess_cp, op_cp)):
        np.testing.assert_allclose(sc.run(oc.outputs[7]), part, rtol=1e-6, atol=1e-6)
    sess_c.run(op_c)
    placed = [k for o, k in zip(sess_c.plan_for(op_c).ops, sess_c.plan_for(op_c).kernels)
              if o.type == "FusedAllReduce"][0].input_slots.bucket.placed
    assert placed == SMALL_COUNT, placed  # every gradient was computed into the bucket

    def raw_big() -> None:
        world.Allreduce(big, big_out, op=MPI.SUM)

    def raw_big_fresh() -> None:
        world.Allreduce(big, np.empty_like(big), op=MPI.SUM)

    def iraw_big() -> None:
        world.Iallreduce(big, big_out, op=MPI.SUM).Wait()

    def iraw_big_fresh() -> None:
        out = np.empty_like(big)  # alive until Wait returns
        world.Iallreduce(big, out, op=MPI.SUM).Wait()

    def raw_one() -> None:
        world.Allreduce(flat, flat_out, op=MPI.SUM)

    def raw_each() -> None:
        for a, o in zip(smalls, small_outs):
            world.Allreduce(a, o, op=MPI.SUM)

    # the hand-written equivalent of the computed case: NumPy computes the 200 gradients into
    # one buffer, then ONE mpi4py Allreduce (an all-reduce of freshly written data is slower
    # than the reference's of data at rest)
    hand_buf = np.empty_like(flat)
    hand_views = [hand_buf[i * smalls[0].size:(i + 1) * smalls[0].size] for i in range(SMALL_COUNT)]
    one = np.float32(1.0)

    def hand_producers() -> None:
        for a, v in zip(smalls, hand_views):
            np.multiply(a, one, out=v)

    def hand_written() -> None:
        hand_producers()
        world.Allreduce(hand_buf, flat_out, op=MPI.SUM)

    methods_a: Dict[str, Callable[[], Any]] = {
        "raw mpi4py Allreduce": raw_big,
        "collflow comm.allreduce": lambda: comm.allreduce(big, out=comm_out),
        "collflow graph FusedAllReduce (Session.run)": lambda: sess_a.run(op_a),
        "collflow graph, averaged (reduce_gradients default)": lambda: sess_av.run(op_av),
        "collflow comm.allreduce, gradient in comm.empty memory": lambda: comm.allreduce(big_arena,
                                                                                        out=big_arena_out),
        "collflow graph FusedAllReduce, MPI transport (shm=False)": lambda: sess_am.run(op_am),
        "collflow comm.allreduce, MPI transport (shm=False)": lambda: mpi_comm.allreduce(big, out=comm_out),
        "diagnostic: raw Allreduce into a fresh buffer": raw_big_fresh,
        "diagnostic: raw Iallreduce + Wait": iraw_big,
        "diagnostic: raw Iallreduce + Wait, fresh buffer": iraw_big_fresh,
    }
    methods_b: Dict[str, Callable[[], Any]] = {
        "raw mpi4py, ONE Allreduce of 2 MB": raw_one,
        "collflow graph, fused (1 bucket)": lambda: sess_b.run(op_b),
        "collflow graph, fused, averaged": lambda: sess_bv.run(op_bv),
        "collflow graph, fused, MPI transport (shm=False)": lambda: sess_bm.run(op_bm),
        "raw mpi4py, 200 Allreduce calls": raw_each,
        "collflow graph, unfused (200 ops)": lambda: sess_u.run(ops_u),
        "diagnostic: the 200 variable reads alone": lambda: sess_b.run(reads_target),
        "collflow graph, computed gradients into the bucket": lambda: sess_c.run(op_c),
        "collflow graph, computed gradients, packed (bucket views off)": lambda: sess_cp.run(op_cp),
        "diagnostic: the 200 producers alone": lambda: sess_c.run(producers_target),
        "hand-written NumPy + mpi4py: 200 products into one buffer, ONE Allreduce": hand_written,
        "diagnostic: the 200 hand-written NumPy products alone": hand_producers,
    }

    def measure(methods: Dict[str, Callable[[], Any]], number: int) -> Dict[str, List[float]]:
        counts = {}
        for k, fn in methods.items():  # warm-up: plans compiled, buffers touched, connections made
            world.Barrier()
            t = common.median(common.time_calls(fn, args.warmup))
            # about 0.25 s of calls per repeat (every rank must make the same number of calls)
            counts[k] = world.bcast(max(3, min(number, int(0.25 / max(t, 1e-9)))), root=0)
        per: Dict[str, List[float]] = {k: [] for k in methods}
        for _ in range(args.repeats):
            for k, fn in methods.items():
                world.Barrier()
                med = common.median(common.time_calls(fn, counts[k]))
                # the collective's time is the slower rank's
                per[k].append(world.allreduce(med, op=MPI.MAX))
        calls_per_repeat.update(counts)
        return per

    calls_per_repeat: Dict[str, int] = {}

    load_before = common.load_average()
    res_a = measure(methods_a, args.number)
    res_b = measure(methods_b, args.number * 2)

    # gloo last, in a pass of its own: once torch.distributed is up, its threads disturbed the
    # rows interleaved with it (collflow's fused 200 x 10 KiB median 1.27-1.75x one raw in
    # such runs, 1.15x in runs without torch)
    methods_a, methods_b = {}, {}
    torch = common.try_import_torch() if not args.no_torch else None
    if torch is None:
        notes.append("torch.distributed gloo rows skipped: " + ("--no-torch" if args.no_torch else
                                                                 "torch is not installed"))
    else:
        torch.set_num_threads(1)
        why = _gloo(torch, world)
        if why is not None:
            notes.append(f"torch.distributed gloo rows skipped: init_process_group failed: {why}")
        else:
            import torch.distributed as dist
            tb = torch.zeros(BIG_BYTES // 4, dtype=torch.float32)  # in place: zeros stay finite
            tflat = torch.zeros(flat.size, dtype=torch.float32)
            tsmall = [torch.zeros(a.size, dtype=torch.float32) for a in smalls]
            methods_a["torch.distributed gloo all_reduce"] = lambda: dist.all_reduce(tb)
            methods_b["gloo, ONE all_reduce of 2 MB"] = lambda: dist.all_reduce(tflat)

            def gloo_each() -> None:
                for t in tsmall:
                    dist.all_reduce(t)
            methods_b["gloo, 200 all_reduce calls"] = gloo_each
            notes.append(f"torch {torch.__version__} gloo over tcp://127.0.0.1, torch.set_num_threads(1); "
                         "gloo rows timed after the others, in a pass of their own")
    if methods_a:
        res_a.update(measure(methods_a, args.number))
        res_b.update(measure(methods_b, args.number * 2))
    load_after = common.load_average()
    # a local copy of the 2 MB, to place the raw reference: on this VM some launches run every
    # MPI Allreduce about 4x slower (0.24 vs 1.1 ms for the 2 MB, plain mpi4py scripts too)
    copy_out = np.empty_like(flat)
    memcpy_2mb = world.allreduce(common.median(common.time_calls(lambda: np.copyto(copy_out, flat), 200)),
                                 op=MPI.MAX)
    stats = dict(comm.stats)
    for s in (sess_a, sess_av, sess_b, sess_bv, sess_c, sess_cp, sess_am, sess_bm):
        s.close()
    sess_u.close()
    mpi_comm.close()
    if torch is not None and "torch.distributed gloo all_reduce" in res_a:
        import torch.distributed as dist
        dist.destroy_process_group()
    if r == 0:
        out = dict(np=n, a=res_a, b=res_b, notes=notes, calls_per_repeat=calls_per_repeat, memcpy_2mb_s=memcpy_2mb,
                   load_before=load_before, load_after=load_after,
                   comm_stats={k: v for k, v in stats.items() if v},
                   graph_buckets={"a": len(buckets_a), "b_fused": len(buckets_b), "b_unfused": len(buckets_u)},
                   transport=("shared memory (collflow.comm.shm)" if comm.shm_active
                              else f"MPI ({comm.shm_reason})"),
                   mpi_library=MPI.Get_library_version().splitlines()[0].strip(),
                   mpi4py=__import__("mpi4py").__version__)
        print("RESULT " + json.dumps(out), flush=True)


# -- the driver ---------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--number", type=int, default=20, help="timed calls per repeat in (a); 2x that in (b)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-torch", action="store_true", help="skip the torch.distributed gloo rows")
    ap.add_argument("--max-load", type=float, default=1.0,
                    help="wait until the 1-minute load average is below this before starting")
    ap.add_argument("--max-wait", type=float, default=300.0, help="seconds to wait for a quiet machine")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    notes = common.wait_for_quiet(args.max_load, args.max_wait)
    extra = ["--repeats", str(args.repeats), "--number", str(args.number), "--warmup", str(args.warmup)]
    if args.no_torch:
        extra.append("--no-torch")
    res = common.launch_mpi(__file__, 2, extra)
    notes += res.pop("notes")

    def summarize(per: Dict[str, List[float]]) -> Dict[str, Dict[str, float]]:
        return {k: common.summarize(v) for k, v in per.items()}
    sa, sb = summarize(res["a"]), summarize(res["b"])
    raw_a = sa["raw mpi4py Allreduce"]["median"]
    rows_a, out_a = [], {}
    for k, s in sa.items():
        bps = BIG_BYTES / s["median"]
        out_a[k] = dict(s, bytes_per_s=bps, ratio_to_raw=raw_a / s["median"], per_repeat_s=res["a"][k])
        rows_a.append([k, s["median"] * 1e3, s["min"] * 1e3, bps / 1e9, raw_a / s["median"]])
    raw_one = sb["raw mpi4py, ONE Allreduce of 2 MB"]["median"]
    rows_b, out_b = [], {}
    for k, s in sb.items():
        out_b[k] = dict(s, x_one_raw=s["median"] / raw_one, per_repeat_s=res["b"][k])
        rows_b.append([k, s["median"] * 1e3, s["min"] * 1e3, s["median"] / raw_one])

    key_g, key_c, key_r = ("collflow graph FusedAllReduce (Session.run)", "collflow comm.allreduce",
                           "raw mpi4py Allreduce")
    key_f, key_o, key_rd = ("collflow graph, fused (1 bucket)", "raw mpi4py, ONE Allreduce of 2 MB",
                            "diagnostic: the 200 variable reads alone")
    net = sb[key_f]["median"] - sb[key_rd]["median"]
    net_min = sb[key_f]["min"] - sb[key_rd]["min"]
    key_cb, key_cp, key_pr = ("collflow graph, computed gradients into the bucket",
                              "collflow graph, computed gradients, packed (bucket views off)",
                              "diagnostic: the 200 producers alone")
    net_cp = sb[key_cp]["median"] - sb[key_pr]["median"]
    net_hand = (sb["hand-written NumPy + mpi4py: 200 products into one buffer, ONE Allreduce"]["median"]
                - sb["diagnostic: the 200 hand-written NumPy products alone"]["median"])
    net_c = sb[key_cb]["median"] - sb[key_pr]["median"]
    net_c_min = sb[key_cb]["min"] - sb[key_pr]["min"]
    targets = {
        "a_graph_bytes_per_s_vs_raw": dict(value=sa[key_r]["median"] / sa[key_g]["median"],
                                           value_from_mins=sa[key_r]["min"] / sa[key_g]["min"], target=">= 0.95"),
        "a_comm_bytes_per_s_vs_raw": dict(value=sa[key_r]["median"] / sa[key_c]["median"],
                                          value_from_mins=sa[key_r]["min"] / sa[key_c]["min"], target=">= 0.95"),
        "b_fused_time_vs_one_raw": dict(value=sb[key_f]["median"] / raw_one,
                                        value_from_mins=sb[key_f]["min"] / sb[key_o]["min"], target="<= 1.2"),
        "b_fused_minus_reads_vs_one_raw": dict(value=net / raw_one, value_from_mins=net_min / sb[key_o]["min"],
                                               target="<= 1.2",
                                               note="what the fused all-reduce adds to a step whose gradients "
                                                    "exist anyway: fused run minus the reads-only run"),
        "b_computed_into_bucket_minus_producers_vs_one_raw": dict(
            value=net_c / raw_one, value_from_mins=net_c_min / sb[key_o]["min"], target="<= 1.2",
            note="gradients computed by ops straight into the bucket (no packing copy): the run minus "
                 "the producers-only run"),
    }
    # the rows each target is computed from: a row whose median is far above its min was
    # disturbed by other load during the run (this VM's neighbours: the raw reference's
    # median has been 3-4x its min), and a verdict from it means nothing either way
    rows_of = {"a_graph_bytes_per_s_vs_raw": (sa, [key_r, key_g]),
               "a_comm_bytes_per_s_vs_raw": (sa, [key_r, key_c]),
               "b_fused_time_vs_one_raw": (sb, [key_o, key_f]),
               "b_fused_minus_reads_vs_one_raw": (sb, [key_o, key_f, key_rd]),
               "b_computed_into_bucket_minus_producers_vs_one_raw": (sb, [key_o, key_cb, key_pr])}
    # the raw reference against a local copy of its bytes: about 5x in most launches here,
    # 20x and more in the slow ones (the ratios of such a run flatter collflow)
    ref_vs_copy = sb[key_o]["min"] / res["memcpy_2mb_s"]
    slow_launch = ref_vs_copy > SLOW_REFERENCE
    for k, t in targets.items():
        lo = t["target"].startswith(">=")
        lim = float(t["target"].split()[-1])
        t["met"] = t["value"] >= lim if lo else t["value"] <= lim
        table, keys = rows_of[k]
        t["disturbed_rows"] = {r: round(table[r]["median"] / table[r]["min"], 2) for r in keys
                               if table[r]["median"] > DISTURBED * table[r]["min"]}
        t["slow_reference"] = bool(slow_launch and k.startswith("b_"))
    payload = {
        "config": dict(np=res["np"], repeats=args.repeats, number_a=args.number, number_b=args.number * 2,
                       warmup=args.warmup, big_bytes=BIG_BYTES, small_count=SMALL_COUNT, small_bytes=SMALL_BYTES,
                       threads_per_rank=1, mpi_library=res["mpi_library"], mpi4py=res["mpi4py"],
                       calls_per_repeat=res["calls_per_repeat"],
                       launch="mpiexec -n 2 --oversubscribe --bind-to none, OMP_NUM_THREADS=1"),
        "load_average_before": res["load_before"], "load_average_after": res["load_after"],
        "a_16MiB": out_a, "b_200x10KiB": out_b, "targets": targets,
        "graph_buckets": res["graph_buckets"], "comm_stats_rank0": res["comm_stats"], "notes": notes,
        "transport": res["transport"],
        "memcpy_2mb_s": res["memcpy_2mb_s"], "raw_2mb_min_vs_memcpy": ref_vs_copy,
    }
    path = common.save_results("bench_allreduce", payload)
    print(f"load average (1/5/15 min): before {res['load_before']}, after {res['load_after']}")
    for nt in notes:
        print("note:", nt)
    print(f"results: {path}")
    print(f"collflow's all-reduces (rows without a transport named): {res['transport']}")
    print(f"\n(a) one 16 MiB float32 gradient, np={res['np']} (median of {args.repeats} repeats x "
          f"up to {args.number} calls, slower rank)")
    print(common.fmt_table(["method", "median ms", "min ms", "GB/s", "x raw bytes/s"], rows_a))
    print(f"\n(b) {SMALL_COUNT} gradients of {SMALL_BYTES // 1024} KiB ({SMALL_COUNT * SMALL_BYTES:,} bytes), "
          f"np={res['np']} (median of {args.repeats} repeats x up to {args.number * 2} calls)")
    print(common.fmt_table(["method", "median ms", "min ms", "x ONE raw"], rows_b))
    print()
    print(f"(b) the raw 2 MB Allreduce (min) took {ref_vs_copy:.1f}x a local np.copyto of the 2 MB "
          f"({res['memcpy_2mb_s'] * 1e3:.3f} ms)")
    print(f"(b) fused minus the reads-only run: {net * 1e3:.2f} ms (from the mins: {net_min * 1e3:.2f} ms)")
    print(f"(b) computed into the bucket minus the producers-only run: {net_c * 1e3:.2f} ms "
          f"(from the mins: {net_c_min * 1e3:.2f} ms); packed instead: {net_cp * 1e3:.2f} ms; "
          f"hand-written NumPy + mpi4py, minus its products: {net_hand * 1e3:.2f} ms = {net_hand / raw_one:.2f}x one raw")
    for k, t in targets.items():
        verdict = "MET" if t["met"] else "MISSED"
        if t["slow_reference"]:
            verdict = (f"UNRELIABLE ({verdict}, but the raw reference took {ref_vs_copy:.0f}x a local copy "
                       f"of its 2 MB (usually ~5x): a slow launch; rerun)")
        elif t["disturbed_rows"]:
            worst = max(t["disturbed_rows"].items(), key=lambda kv: kv[1])
            verdict = (f"UNRELIABLE ({verdict} by the medians, but {worst[0]!r} has a median "
                       f"{worst[1]:.1f}x its min: the run was disturbed; rerun)")
        print(f"target {k}: {t['value']:.2f} (want {t['target']}; from the mins {t['value_from_mins']:.2f}) -> "
              f"{verdict}")


if __name__ == "__main__":
    main()
