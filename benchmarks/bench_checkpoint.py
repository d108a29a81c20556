"""Checkpoint speed: saving and restoring ~1 GB of float32 variables, and the training stall per
checkpoint with asynchronous saving on and off.

    python benchmarks/bench_checkpoint.py [--mb 1024] [--repeats 3] [--rounds 16] [--part 1|2|both]
                                          [--dir DIR] [--dump steps.npz]

Part 1, throughput.  Sixteen float32 variables holding --mb MB in all (random values) are
saved with CheckpointManager.save (HDF5 file written to .tmp, fsynced, renamed, directory
fsynced, index replaced, the previous checkpoint pruned) and restored into a fresh Session
with CheckpointManager.restore (every variable checked against its checksum).  The reference,
measured in the same run on the same disk: a plain sequential write of the same bytes to one
file (write, flush, fsync, close), and a plain sequential read of them into fresh arrays.
Before each read, both files' pages are dropped from the page cache (posix_fadvise
DONTNEED).  Median of --repeats; target: save >= 0.5x the plain write rate.

Part 2, training stall: the training-thread time lost per checkpoint, async vs sync, same
run.  A model whose --mb MB are four embedding tables (trained by sparse SGD updates of the
looked-up rows) under a small dense head takes training steps of ~10 ms; BLAS runs on one
thread (threadpoolctl).  Sync: save() blocks until the file is durable.  Async: save() takes
zero-copy snapshots and a background thread writes them while training goes on (the
sparse updates save the old values of the rows they touch until the writer has read them).

Method.  A window is a save (or none) followed by K training steps, and more steps while the
save's background work (the async write; the deletion of the checkpoint it replaces, in
both modes) is still going on, so all of a save's cost falls inside its own window.  K is
1.5x the longer of a sync save and an async write measured in a warm-up.  Windows run in
the order none, async, none, sync, none, async, ... for --rounds rounds: every save window
has a window without a save just before and just after it, and the baseline is their mean
time per step (a drift in the speed of this shared machine, which is large over seconds,
cancels to first order).  The stall of a checkpoint = its window's time - its steps x the
baseline time per step: the save call plus the per-step time excess of every step in it.
Reported: the median over the rounds, the 90% interval of the async/sync ratio (bootstrap
over the rounds), the same with every step capped at 4x the median step of the neighbouring
windows (a preemption by another process then counts 4 steps, in every mode alike), the
mean per-step excess (ms), and as the noise, the same stall computed for the windows without
a save against their nearest windows without a save.  Target: async stall < 10% of the sync
stall.  --dump saves every step's time.

Files go to a fresh temporary directory (under --dir when given) that is deleted at the end.
Results: benchmarks/results/bench_checkpoint.json.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

import common  # sets sys.path and disables output checking before collflow loads
import numpy as np

import collflow as cf
from collflow.train.checkpoint_manager import CheckpointManager

MB = 1e6


# -- plain file I/O: the reference ------------------------------------------------------------------


def drop_cache(path: str) -> None:
    """Asks the kernel to forget the file's cached pages (no root needed; best effort)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def plain_write(path: str, arrays: List[np.ndarray]) -> float:
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        for a in arrays:
            f.write(memoryview(a.reshape(-1).view(np.uint8)))
        f.flush()
        os.fsync(f.fileno())
    return time.perf_counter() - t0


def plain_read(path: str, specs: List[Tuple[Tuple[int, ...], Any]]) -> float:
    drop_cache(path)
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        for shape, dt in specs:
            a = np.empty(shape, dtype=dt)
            mv = memoryview(a.reshape(-1).view(np.uint8))
            got = 0
            while got < len(mv):
                k = f.readinto(mv[got:])
                if not k:
                    raise IOError("short read")
                got += k
    return time.perf_counter() - t0


# -- part 1 ---------------------------------------------------------------------------------------------


def throughput(tmp: str, total_mb: float, repeats: int) -> Dict[str, Any]:
    n_vars, cols = 16, 1024
    rows = max(1, int(total_mb * MB / 4 / cols / n_vars))
    g = cf.Graph()
    with g.as_default():
        # random initial values: a random op holds no copy of them in the graph (a constant would)
        vs = [cf.Variable(cf.random_uniform((rows, cols), -1.0, 1.0, seed=i), name=f"layer{i}/kernel")
              for i in range(n_vars)]
        init = cf.global_variables_initializer()
    sess = cf.Session(graph=g, config={"check_outputs": False})
    sess.run(init)
    arrays = [sess.resources.variables[v.op.name].value for v in vs]
    nbytes = sum(a.nbytes for a in arrays)
    specs = [(a.shape, a.dtype) for a in arrays]
    ck = CheckpointManager(os.path.join(tmp, "tp"), max_to_keep=1)
    plain_path = os.path.join(tmp, "plain.bin")
    res: Dict[str, List[float]] = {"plain_write": [], "save": [], "plain_read": [], "restore": []}
    for r in range(repeats):
        res["plain_write"].append(plain_write(plain_path, arrays))
        res["plain_read"].append(plain_read(plain_path, specs))
        os.remove(plain_path)
        t0 = time.perf_counter()
        path = ck.save(sess, r + 1)
        res["save"].append(time.perf_counter() - t0)
        drop_cache(path)
        with cf.Session(graph=g, config={"check_outputs": False}) as s2:
            t0 = time.perf_counter()
            out = ck.restore(s2)
            res["restore"].append(time.perf_counter() - t0)
            assert out.global_step == r + 1
            if r == 0:  # the restored values are the saved ones
                for v, a in zip(vs, arrays):
                    assert np.array_equal(s2.resources.variables[v.op.name].value, a)
        print(f"  repeat {r + 1}: plain write {res['plain_write'][-1]:.2f} s, save {res['save'][-1]:.2f} s, "
              f"plain read {res['plain_read'][-1]:.2f} s, restore {res['restore'][-1]:.2f} s", flush=True)
    sess.close()
    med = {k: common.median(v) for k, v in res.items()}
    return {"bytes": nbytes, "variables": n_vars, "seconds": res, "median_s": med,
            "mb_per_s": {k: nbytes / MB / v for k, v in med.items()}}


# -- part 2 ---------------------------------------------------------------------------------------------


def build_embedding_model(total_mb: float) -> Dict[str, Any]:
    n_tables, dim = 4, 256
    rows = max(1, int(total_mb * MB / 4 / dim / n_tables))
    g = cf.Graph()
    with g.as_default():
        ids = cf.placeholder(cf.int32, (None,), name="ids")
        y = cf.placeholder(cf.int32, (None,), name="y")
        tables = [cf.Variable(cf.random_uniform((rows, dim), -0.05, 0.05, seed=i), name=f"embedding{i}")
                  for i in range(n_tables)]
        h = cf.nn.embedding_lookup(tables[0], ids)
        for t in tables[1:]:
            h = h + cf.nn.embedding_lookup(t, ids)
        w1 = cf.Variable(cf.random_normal((dim, 128), stddev=0.05, seed=10), name="dense/kernel")
        w2 = cf.Variable(cf.random_normal((128, 10), stddev=0.05, seed=11), name="out/kernel")
        logits = cf.matmul(cf.nn.relu(cf.matmul(h, w1)), w2)
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        gs = cf.train.get_or_create_global_step()
        train = cf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
        init = cf.global_variables_initializer()
    return dict(g=g, ids=ids, y=y, train=train, loss=loss, init=init, rows=rows)


def stall(tmp: str, total_mb: float, sync_save_s: Optional[float], n_rounds: int,
          dump: Optional[str] = None) -> Dict[str, Any]:
    m = build_embedding_model(total_mb)
    sess = cf.Session(graph=m["g"], config={"check_outputs": False})
    sess.run(m["init"])
    step = sess.make_callable([m["loss"], m["train"]], [m["ids"], m["y"]])
    rng = np.random.default_rng(1)
    batches = [(rng.integers(0, m["rows"], 512).astype(np.int32), rng.integers(0, 10, 512).astype(np.int32))
               for _ in range(64)]
    pc = time.perf_counter
    for i in range(30):  # warm up
        step(*batches[i % 64])
    probe = []
    for i in range(100):
        t0 = pc()
        step(*batches[i % 64])
        probe.append(pc() - t0)
    step_s = common.median(probe)
    managers = {m_: CheckpointManager(os.path.join(tmp, m_), max_to_keep=1, async_save=(m_ == "async"))
                for m_ in ("async", "sync")}
    managers["async"].prepare(sess)
    # one untimed save of each kind first (the first save of a process pays one-time costs);
    # they also time a sync save (without part 1) and an async write while training runs: a
    # window lasts 1.5x the longer, so a background write normally ends inside its window
    t0 = pc()
    managers["sync"].save(sess, 0)
    managers["sync"].wait()
    if sync_save_s is None:
        sync_save_s = pc() - t0
    t0 = pc()
    managers["async"].save(sess, 0)
    i = 0
    while managers["async"].save_in_flight:
        step(*batches[i % 64])
        i += 1
    async_write_s = pc() - t0
    managers["async"].wait()
    interval = max(50, int(math.ceil(1.5 * max(sync_save_s, async_write_s) / step_s)))
    step_no = 1

    def window(mode: str) -> Dict[str, Any]:
        """A save (none for "none"), then steps: `interval` of them, and more while the save's
        background work (the async write, the deletion of the old file) goes on."""
        nonlocal step_no
        ck = managers.get(mode)
        times = []
        t0 = pc()
        if ck is not None:
            ck.save(sess, step_no)
        t1 = pc()
        while len(times) < interval or (ck is not None and ck.busy):
            ts = pc()
            step(*batches[step_no % 64])
            times.append(pc() - ts)
            step_no += 1
        if ck is not None:
            ck.wait()  # nothing left to wait for; raises what a background write met
        return {"window": pc() - t0, "call": t1 - t0, "steps": np.array(times)}

    # none, async, none, sync, none, async, ...: every save window has a window without a save
    # right before and right after it, which give the baseline (a drift in the machine's speed
    # cancels); the async write and the pruning of old files end inside their own window
    seq: List[Tuple[str, Dict[str, Any]]] = [("none", window("none"))]
    for _ in range(n_rounds):
        for mode in ("async", "none", "sync", "none"):
            seq.append((mode, window(mode)))
    for ck in managers.values():
        ck.close()
    if dump:
        np.savez(dump, modes=np.array([m_ for m_, _ in seq]), window=np.array([w["window"] for _, w in seq]),
                 call=np.array([w["call"] for _, w in seq]),
                 steps=np.array([w["steps"] for _, w in seq], dtype=object), allow_pickle=True)

    out: Dict[str, Any] = {"step_ms": step_s * 1e3, "interval_steps": interval, "rounds": n_rounds,
                           "warmup_sync_save_s": sync_save_s, "warmup_async_write_s": async_write_s,
                           "bytes": sum(st.value.nbytes for st in sess.resources.variables.values())}
    for mode in ("async", "sync", "none"):
        rows = []
        # the neighbours of a save window are windows without a save; for those, the nearest
        # other windows without a save (their spread is the noise of the measure)
        d = 2 if mode == "none" else 1
        for k, (m_, w) in enumerate(seq):
            if m_ != mode or k < d or k + d >= len(seq):
                continue
            flank = (seq[k - d][1], seq[k + d][1])
            n = len(w["steps"])
            # baseline: the time per step (loop included) of the flanking windows
            per_step = 0.5 * sum(f["window"] / len(f["steps"]) for f in flank)
            step_base = 0.5 * sum(float(f["steps"].mean()) for f in flank)
            # robust variant: a step longer than 4x the median step of the flanking windows (a
            # preemption by another process, usually) counts as 4x, in every mode alike
            cap = 4.0 * float(np.median(np.concatenate([f["steps"] for f in flank])))

            def capped(x: Dict[str, Any]) -> float:
                return x["window"] - float(x["steps"].sum()) + float(np.minimum(x["steps"], cap).sum())
            capped_base = 0.5 * sum(capped(f) / len(f["steps"]) for f in flank)
            rows.append({"window_s": w["window"], "steps": n, "stall_s": w["window"] - n * per_step,
                         "stall_capped_s": capped(w) - n * capped_base,
                         "capped_steps": int((w["steps"] > cap).sum()),
                         "step_excess_ms": (float(w["steps"].mean()) - step_base) * 1e3,
                         "save_call_s": w["call"]})
        out[mode] = {k: [r[k] for r in rows] for k in rows[0]}
        for k, med in (("stall_s", "stall_median_s"), ("stall_capped_s", "stall_capped_median_s"),
                       ("step_excess_ms", "step_excess_median_ms"), ("save_call_s", "save_call_median_s")):
            out[mode][med] = common.median(out[mode][k])
        print(f"  {mode:5s}: stall per checkpoint {['%.3f' % s for s in out[mode]['stall_s']]} s", flush=True)
    # spread of the ratio: bootstrap over the rounds (resampling async and sync stalls alike)
    a, s_ = np.array(out["async"]["stall_s"]), np.array(out["sync"]["stall_s"])
    boot = np.random.default_rng(0)
    ratios = [float(np.median(boot.choice(a, a.size)) / np.median(boot.choice(s_, s_.size))) for _ in range(2000)]
    out["ratio_ci90"] = [float(np.percentile(ratios, 5)), float(np.percentile(ratios, 95))]
    sess.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1024.0, help="MB of float32 variables (default 1024)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", "--checkpoints", type=int, default=16, dest="rounds",
                    help="rounds of the stall measure, each one async and one sync checkpoint (default 16)")
    ap.add_argument("--part", choices=("1", "2", "both"), default="both",
                    help="run only part 1 (throughput) or part 2 (stall); default both")
    ap.add_argument("--dump", default=None, metavar="FILE.npz", help="also save every step's time of part 2")
    ap.add_argument("--dir", default=None, help="where the temporary directory goes (default: the system's)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collflow-bench-ckpt-", dir=a.dir)
    try:
        tp = st = None
        if a.part in ("1", "both"):
            print(f"part 1: save / restore {a.mb:.0f} MB, {a.repeats} repeats, in {tmp}", flush=True)
            tp = throughput(tmp, a.mb, a.repeats)
        if a.part == "1":
            return report(a, tp, None)
        print(f"part 2: training stall per checkpoint, {a.rounds} rounds", flush=True)
        try:  # one BLAS thread: on a small machine, BLAS threads spinning against the writer swamp the measure
            from threadpoolctl import threadpool_limits
            limits: Any = threadpool_limits(limits=1, user_api="blas")
        except ImportError:  # pragma: no cover - depends on the environment
            limits = None
        try:
            st = stall(tmp, a.mb, tp["median_s"]["save"] if tp else None, a.rounds, a.dump)
        finally:
            if limits is not None:
                limits.restore_original_limits()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    report(a, tp, st)


def report(a: Any, tp: Any, st: Any) -> None:
    """Prints the tables and saves the JSON (a part not run is left out)."""
    notes, ratios, payload = [], {}, {}
    if tp is not None:
        mbs = tp["mb_per_s"]
        ratios["save_vs_plain_write"] = mbs["save"] / mbs["plain_write"]
        ratios["restore_vs_plain_read"] = mbs["restore"] / mbs["plain_read"]
        payload["throughput"] = tp
        notes += ["save: CheckpointManager.save (tmp file, fsync, rename, directory fsync, index, prune); plain "
                  "write: one file, write + flush + fsync",
                  "restore: CheckpointManager.restore into a fresh Session, every variable's checksum verified; "
                  "reads start with the file's pages dropped from the page cache"]
    if st is not None:
        sync_stall, async_stall = st["sync"]["stall_median_s"], st["async"]["stall_median_s"]
        ratios["async_stall_vs_sync"] = async_stall / sync_stall if sync_stall > 0 else float("nan")
        ratios["async_stall_vs_sync_ci90"] = st["ratio_ci90"]
        ratios["async_stall_capped_vs_sync"] = (st["async"]["stall_capped_median_s"]
                                                / st["sync"]["stall_capped_median_s"])
        ratios["async_save_call_vs_sync"] = st["async"]["save_call_median_s"] / st["sync"]["save_call_median_s"]
        payload["stall"] = st
        payload["noise_s"] = float(np.median(np.abs(st["none"]["stall_s"])))
        notes.append(f"stall: windows of a save + {st['interval_steps']} steps of {st['step_ms']:.2f} ms (BLAS on "
                     "one thread), and more while the save's background work goes on; the windows without a save "
                     "before and after each save window give the baseline time per step; stall = window time - "
                     f"steps x baseline; median over {st['rounds']} rounds (90% interval of the ratio: bootstrap "
                     "over the rounds)")
    save_results("bench_checkpoint", {
        "config": {"mb": a.mb, "repeats": a.repeats, "rounds": a.rounds, "part": a.part},
        **payload, "ratios": ratios,
        "targets": {"save_vs_plain_write": ">= 0.5", "async_stall_vs_sync": "< 0.10"},
        "notes": notes,
    })
    print()
    for n in notes:
        print("note:", n)
    if tp is not None:
        gb = tp["bytes"] / MB
        rows = [
            [f"plain sequential write ({gb:.0f} MB, fsync)", tp["median_s"]["plain_write"], mbs["plain_write"], 1.0],
            ["checkpoint save (HDF5, atomic, durable)", tp["median_s"]["save"], mbs["save"],
             ratios["save_vs_plain_write"]],
            [f"plain sequential read ({gb:.0f} MB)", tp["median_s"]["plain_read"], mbs["plain_read"], 1.0],
            ["checkpoint restore (validated, checksums)", tp["median_s"]["restore"], mbs["restore"],
             ratios["restore_vs_plain_read"]],
        ]
        print()
        print(common.fmt_table(["operation", "seconds", "MB/s", "vs plain"], rows))
    if st is not None:
        sy, asy, no = st["sync"], st["async"], st["none"]
        srows = [
            ["sync save", sy["save_call_median_s"], sy["stall_median_s"], 1.0, sy["stall_capped_median_s"],
             sy["step_excess_median_ms"]],
            ["async save", asy["save_call_median_s"], asy["stall_median_s"], ratios["async_stall_vs_sync"],
             asy["stall_capped_median_s"], asy["step_excess_median_ms"]],
            ["no save (noise: median |stall|)", None, payload["noise_s"], None, None, no["step_excess_median_ms"]],
        ]
        print()
        print(common.fmt_table([f"training stall per checkpoint ({st['bytes'] / MB:.0f} MB)", "save() call s",
                                "stall s", "vs sync", "stall, capped steps s", "step excess ms"], srows))
        lo, hi = st["ratio_ci90"]
        print(f"\nasync stall {ratios['async_stall_vs_sync']:.3f}x sync (90% interval {lo:.3f}-{hi:.3f}; with "
              f"steps capped {ratios['async_stall_capped_vs_sync']:.3f}x); target < 0.10")
    if tp is not None:
        print(f"save rate {ratios['save_vs_plain_write']:.2f}x plain write (target >= 0.5)")


def save_results(name: str, payload: Dict[str, Any]) -> None:
    def clean(o: Any) -> Any:
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items() if not isinstance(v, np.ndarray)}
        if isinstance(o, list):
            return [clean(v) for v in o]
        return o
    path = common.save_results(name, clean(payload))
    print(f"results: {os.path.relpath(path, common.ROOT)}")


if __name__ == "__main__":
    main()
