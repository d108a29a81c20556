"""Checkpoint speed: saving and restoring ~1 GB of float32 variables, and the training stall per
checkpoint with asynchronous saving on and off.

    python benchmarks/bench_checkpoint.py [--mb 1024] [--repeats 3] [--checkpoints 8] [--dir DIR]

Part 1, throughput.  Sixteen float32 variables holding --mb MB in all (random values) are
saved with CheckpointManager.save (HDF5 file written to .tmp, fsynced, renamed, directory
fsynced, index replaced, the previous checkpoint pruned) and restored into a fresh Session
with CheckpointManager.restore (every variable checked against its checksum).  The reference,
measured in the same run on the same disk: a plain sequential write of the same bytes to one
file (write, flush, fsync, close), and a plain sequential read of them into fresh arrays.
Before each read, both files' pages are dropped from the page cache (posix_fadvise
DONTNEED).  Median of --repeats; target: save >= 0.5x the plain write rate.

Part 2, training stall.  A model whose --mb MB are four embedding tables (trained by sparse
SGD updates of the looked-up rows) under a small dense head takes training steps of a few
ms.  K steps follow each checkpoint, K chosen so a background write has time to finish (about
1.5 sync saves' worth of steps).  The modes (async save, no save, sync save) take turns
for --checkpoints rounds, each a save followed by K steps; the stall of a checkpoint is its
window's time (the save call included) beyond the median window without a save.  Sync: the
save blocks; async: the arrays are copied into reused buffers on the training thread and a
background thread writes them.  Median over the rounds; target: async stall < 10% of the
sync stall.  BLAS runs on one thread here (threadpoolctl).

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
from typing import Any, Dict, List, Tuple

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


def stall(tmp: str, total_mb: float, sync_save_s: float, n_ckpt: int) -> Dict[str, Any]:
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
    interval = max(50, int(math.ceil(1.5 * sync_save_s / step_s)))
    # the modes take turns, round after round, so that load from other processes (this
    # machine is shared) falls on all of them alike; async comes first in a round, so its
    # write has two windows to finish before the sync save of the round
    order = ("async", "none", "sync")
    managers = {m_: CheckpointManager(os.path.join(tmp, m_), max_to_keep=1, async_save=(m_ == "async"))
                for m_ in ("async", "sync")}
    managers["async"].prepare(sess)  # its snapshot buffers, allocated in the background
    windows: Dict[str, List[float]] = {m_: [] for m_ in order}
    calls: Dict[str, List[float]] = {m_: [] for m_ in order}
    step_no = 0
    for _ in range(n_ckpt):
        for mode in order:
            t0 = pc()
            if mode != "none":
                managers[mode].save(sess, step_no)
            t1 = pc()
            for _ in range(interval):
                step(*batches[step_no % 64])
                step_no += 1
            windows[mode].append(pc() - t0)
            calls[mode].append(t1 - t0)
    for ck in managers.values():
        ck.close()

    out: Dict[str, Any] = {"step_ms": step_s * 1e3, "interval_steps": interval, "checkpoints": n_ckpt,
                           "bytes": sum(st.value.nbytes for st in sess.resources.variables.values())}
    base = common.median(windows["none"])
    for mode in order:
        stalls = [w - base for w in windows[mode]]
        out[mode] = {"window_s": windows[mode], "stall_s": stalls, "stall_median_s": common.median(stalls),
                     "save_call_s": calls[mode], "save_call_median_s": common.median(calls[mode])}
        print(f"  {mode:5s}: stall per checkpoint {['%.3f' % s for s in stalls]} s, save() call "
              f"{['%.3f' % s for s in calls[mode]]} s", flush=True)
    sess.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1024.0, help="MB of float32 variables (default 1024)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--checkpoints", type=int, default=8, help="rounds of the stall measure (default 8)")
    ap.add_argument("--dir", default=None, help="where the temporary directory goes (default: the system's)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collflow-bench-ckpt-", dir=a.dir)
    try:
        print(f"part 1: save / restore {a.mb:.0f} MB, {a.repeats} repeats, in {tmp}", flush=True)
        tp = throughput(tmp, a.mb, a.repeats)
        print(f"part 2: training stall per checkpoint, {a.checkpoints} rounds", flush=True)
        try:  # one BLAS thread: on a small machine, BLAS threads spinning against the writer swamp the measure
            from threadpoolctl import threadpool_limits
            limits: Any = threadpool_limits(limits=1, user_api="blas")
        except ImportError:  # pragma: no cover - depends on the environment
            limits = None
        try:
            st = stall(tmp, a.mb, tp["median_s"]["save"], a.checkpoints)
        finally:
            if limits is not None:
                limits.restore_original_limits()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    mbs = tp["mb_per_s"]
    save_ratio = mbs["save"] / mbs["plain_write"]
    restore_ratio = mbs["restore"] / mbs["plain_read"]
    sync_stall, async_stall = st["sync"]["stall_median_s"], st["async"]["stall_median_s"]
    stall_ratio = async_stall / sync_stall if sync_stall > 0 else float("nan")
    call_ratio = st["async"]["save_call_median_s"] / st["sync"]["save_call_median_s"]
    noise = st["none"]["stall_s"]
    noise_s = float(np.median(np.abs(noise))) if noise else 0.0
    notes = [
        "save: CheckpointManager.save (tmp file, fsync, rename, directory fsync, index, prune); plain write: "
        "one file, write + flush + fsync",
        "restore: CheckpointManager.restore into a fresh Session, every variable's checksum verified; "
        "reads start with the file's pages dropped from the page cache",
        f"stall: windows of a save + {st['interval_steps']} steps of {st['step_ms']:.2f} ms (BLAS on one "
        "thread), modes taking turns; stall = window time beyond the median window without a save; "
        "median over the rounds",
    ]
    save_results("bench_checkpoint", {
        "config": {"mb": a.mb, "repeats": a.repeats, "checkpoints": a.checkpoints},
        "throughput": tp, "stall": {k: v for k, v in st.items()},
        "ratios": {"save_vs_plain_write": save_ratio, "restore_vs_plain_read": restore_ratio,
                   "async_stall_vs_sync": stall_ratio, "async_save_call_vs_sync": call_ratio},
        "noise_s": noise_s,
        "targets": {"save_vs_plain_write": ">= 0.5", "async_stall_vs_sync": "< 0.10"},
        "notes": notes,
    })
    gb = tp["bytes"] / MB
    rows = [
        [f"plain sequential write ({gb:.0f} MB, fsync)", tp["median_s"]["plain_write"], mbs["plain_write"], 1.0],
        ["checkpoint save (HDF5, atomic, durable)", tp["median_s"]["save"], mbs["save"], save_ratio],
        [f"plain sequential read ({gb:.0f} MB)", tp["median_s"]["plain_read"], mbs["plain_read"], 1.0],
        ["checkpoint restore (validated, checksums)", tp["median_s"]["restore"], mbs["restore"], restore_ratio],
    ]
    print()
    for n in notes:
        print("note:", n)
    print()
    print(common.fmt_table(["operation", "seconds", "MB/s", "vs plain"], rows))
    print()
    srows = [
        ["sync save", st["sync"]["save_call_median_s"], 1.0, sync_stall, 1.0],
        ["async save", st["async"]["save_call_median_s"], call_ratio, async_stall, stall_ratio],
        ["no save (noise: median |deviation|)", None, None, noise_s, None],
    ]
    print(common.fmt_table([f"training stall per checkpoint ({st['bytes'] / MB:.0f} MB)", "save() call s",
                            "vs sync", "stall s", "vs sync"], srows))
    print(f"\nsave rate {save_ratio:.2f}x plain write (target >= 0.5); async save() blocks {call_ratio:.3f}x "
          f"as long as sync; async stall {stall_ratio:.3f}x sync, +-{noise_s:.2f} s noise (target < 0.10)")


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
