#!/usr/bin/env python
"""Trains a collflow classifier (MLP or CNN) and reports its metrics as one JSON line.

    python scripts/train.py --model mlp --dataset digits
    python scripts/train.py --model cnn --dataset digits --epochs 10
    python scripts/train.py --model mlp --dataset data.h5 --optimizer momentum --lr 0.05 --steps 500

Datasets: `digits` (bundled UCI 8x8 digits), `synthetic` (a learnable random set), or a path
to an .h5/.hdf5/.npz file with arrays x, y (and optionally x_test, y_test).

Output: log lines go to stderr, each starting with "[rank R]" (the progress bar too);
stdout gets exactly one line, the JSON metrics (final_loss, test_accuracy, samples_per_sec,
steps, ...), also written to --metrics-out when given.

Before training, the ranks check what they must agree on (flags, data, the checkpoint they
resume from; collflow/train/agreement.py) and rank 0 checks and locks --checkpoint-dir.
Exit status: 0 done (also a resumed job that was already complete), 1 failed (diverged, a
peer left or failed, ranks resumed from different checkpoints), 2 cannot start (bad flags or
data, ranks that disagree, a checkpoint directory read-only or in use; supervise.py does not
retry it), 143 stopped by SIGTERM after saving a checkpoint.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import sys
import time
import warnings
from collections import deque
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

try:
    import collflow as cf
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import collflow as cf

from collflow import data as cfdata
from collflow import models
from collflow.data import text as cftext
from collflow.nn import rnn as cfrnn
from collflow.train import agreement, dir_lock
from collflow.train import elastic
from collflow.train.elastic import ElasticState

# the command line lives in train_args.py, next to this file (found also when this file is
# loaded by path, as the tests do)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_args import DEFAULT_BATCH, DEFAULT_EPOCHS, DEFAULT_HIDDEN, DEFAULT_OPTIMIZER  # noqa: E402,F401
from train_args import build_parser, parse_args  # noqa: E402,F401
EVAL_BATCH = 1024


# -- ranks and logging -------------------------------------------------------------------

def _init_comm(elastic: bool = False) -> Any:
    """The world's communicator: MPI under mpirun/mpiexec (an uncaught error on any rank then
    aborts every rank with that rank's traceback), a world of one otherwise.  With --elastic,
    one that a dead rank can shrink (MPI transport, `mpirun --with-ft ulfm`)."""
    if elastic:
        from collflow.comm import elastic as cf_elastic
        cf_elastic.require_ft()
        return cf_elastic.elastic_communicator()
    return cf.comm.init()


def _world_rank() -> int:
    """This process's rank before (or without) a communicator: MPI's, else the launcher's, else 0."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized():
        return mpi.COMM_WORLD.Get_rank()
    for v in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
        if os.environ.get(v, "").isdigit():
            return int(os.environ[v])
    return 0


class Log:
    """Log lines on stderr (stdout carries only the JSON), each prefixed with the rank.

    Progress is printed by rank 0 only; errors by every rank.
    """

    def __init__(self, rank: int, bar: Any = None):
        self.prefix = f"[rank {rank}]"
        self.quiet = rank != 0
        self.bar = bar

    def __call__(self, msg: str) -> None:
        if not self.quiet:
            self._write(msg)

    def error(self, msg: str) -> None:
        self._write("error: " + msg)

    def every_rank(self, msg: str) -> None:
        """A line every rank prints (what happened to this rank), not only rank 0."""
        self._write(msg)

    def _write(self, msg: str) -> None:
        line = f"{self.prefix} {msg}"
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)


def write_step_trace(md: Any, path: str, rank: int, log: Any) -> None:
    """Writes a traced step's Chrome trace (atomically: a temporary file renamed into place)
    and logs where, with the op types that took longest."""
    from collflow.comm.timeline import timeline_path
    from collflow.runtime.tracing import op_totals
    out = timeline_path(path, rank)
    tmp = f"{out}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            f.write(cf.Timeline(md.step_stats).generate_chrome_trace_format())
        os.replace(tmp, out)
    except OSError as e:
        log.error(f"--trace-path {out!r}: {e}")
        with contextlib.suppress(OSError):
            os.remove(tmp)
        return
    top = ", ".join(f"{t} {ms:.2f} ms" for t, ms, _ in op_totals(md.step_stats)[:5])
    log(f"step trace written: {out} ({len(md.step_stats)} events; most time: {top})")


# -- data and model ----------------------------------------------------------------------

def load_dataset(a: argparse.Namespace) -> cfdata.Dataset:
    """The dataset named by --dataset, shaped for the model (vectors for mlp, NHWC for cnn)."""
    if a.model == "lstm":
        return cftext.load_stdlib_corpus(max_chars=a.corpus_chars).as_dataset(a.seq_len)
    if a.dataset == "digits":
        # the split is fixed (seed 0) so test accuracy is comparable across --seed values
        ds = cfdata.load_digits(test_fraction=a.test_fraction, seed=0)
        if a.num_classes is not None:
            if a.num_classes < ds.num_classes:
                raise cf.InvalidArgumentError(f"--num-classes {a.num_classes}: the digits have {ds.num_classes} "
                                              f"classes (labels 0..{ds.num_classes - 1})")
            ds.num_classes = a.num_classes
        return ds.reshape((8, 8, 1)) if a.model == "cnn" else ds
    if a.dataset == "synthetic":
        shape = a.synthetic_shape or ((28, 28, 1) if a.model == "cnn" else (784,))
        ds = cfdata.synthetic(a.synthetic_size, shape, a.num_classes or 10, seed=0, test_fraction=a.test_fraction)
    else:
        ds = cfdata.load_file(a.dataset, test_fraction=a.test_fraction, seed=0, num_classes=a.num_classes)
    fs = ds.feature_shape
    if a.model == "mlp":
        return ds.flatten()
    if len(fs) == 2:  # (H, W) grey images: add the channel axis
        return ds.reshape(fs + (1,))
    if len(fs) != 3:
        raise cf.InvalidArgumentError(f"--model cnn needs images: examples of shape (H, W) or (H, W, C), "
                                      f"but {a.dataset!r} has examples of shape {fs}")
    return ds


def build_model(a: argparse.Namespace, ds: cfdata.Dataset, comm: Any = None) -> Tuple[Any, Any]:
    """(model, the SyncReplicasOptimizer when data-parallel else None)."""
    opt = models.make_optimizer(a.optimizer, a.lr)
    sync = None
    if comm is not None and comm.size > 1:
        # gradients -> fusion buckets -> (compression) -> all-reduce -> average -> the optimizer
        opt = sync = cf.train.SyncReplicasOptimizer(
            opt, comm=comm, fusion_threshold_bytes=int(a.fusion_mb * (1 << 20)), compression=a.compression,
            backup_ranks=a.backup_ranks, average_parameters=None if a.average_parameters else False)
    if a.model == "lstm":
        m = cfrnn.build_char_lm(ds.num_classes, embed_dim=a.embed, hidden=a.hidden, seq_len=a.seq_len,
                                optimizer=opt, seed=a.seed)
    elif a.model == "mlp":
        m = models.build_mlp(ds.input_dim, a.hidden, ds.num_classes, optimizer=opt, seed=a.seed)
    else:
        m = models.build_cnn(ds.feature_shape, ds.num_classes, filters=a.filters, optimizer=opt, seed=a.seed)
    return m, sync


def evaluate(sess: Any, m: models.Model, x: np.ndarray, y: np.ndarray) -> Tuple[Optional[float], Optional[float]]:
    """(mean loss, accuracy) over (x, y) in chunks; (None, None) when empty."""
    n = len(y)
    if n == 0:
        return None, None
    run = sess.make_callable([m.loss, m.accuracy], [m.x, m.y])
    tot_loss = tot_acc = 0.0
    for i in range(0, n, EVAL_BATCH):
        xb, yb = x[i:i + EVAL_BATCH], y[i:i + EVAL_BATCH]
        l, acc = run(xb, yb)
        tot_loss += float(l) * len(yb)
        tot_acc += float(acc) * len(yb)
    return tot_loss / n, tot_acc / n


def _finite(v: Optional[float]) -> Optional[float]:
    """JSON has no NaN/inf: a diverged value is reported as null."""
    return None if v is None or not math.isfinite(v) else float(v)


# -- what the ranks must agree on, and what a job needs before it starts ---------------------

# flags each rank may set for itself: its own output files and display, its device, and where
# it finds the data and the checkpoints (node-local paths may differ; the data's identity and
# whether a rank checkpoints at all are compared instead)
RANK_LOCAL_FLAGS = frozenset({"metrics_out", "timeline", "trace_path", "no_progress", "device", "dataset",
                              "checkpoint_dir", "logdir"})


def output_problem(a: argparse.Namespace, rank: int) -> Optional[str]:
    """Why an output flag cannot be written (checked before training, not after it), or None."""
    paths = []
    if rank == 0 and a.metrics_out:
        paths.append(("--metrics-out", os.path.dirname(os.path.abspath(a.metrics_out)) or "."))
    if rank == 0 and a.logdir:
        paths.append(("--logdir", os.path.abspath(a.logdir)))
    if a.trace_step:
        paths.append(("--trace-path", os.path.dirname(os.path.abspath(a.trace_path.replace("{rank}", str(rank))))
                      or "."))
    for flag, d in paths:
        try:
            os.makedirs(d, exist_ok=True)
            dir_lock.check_writable(d)
        except OSError as e:
            return f"{flag}: cannot write to {d!r} ({e.strerror or e})"
    return None


class Progress:
    """Rank 0's progress lines where no bar can be drawn (stderr is not a terminal, e.g. under
    mpirun): every 10 s and at least every 10% of the steps, with loss, samples/s and ETA."""

    def __init__(self, log: Log, total: int, start: int, size: int, every_s: float = 10.0):
        self.log, self.total, self.size, self.every_s = log, max(1, total), size, every_s
        self.t0 = self.last_t = time.perf_counter()
        self.start = start
        self.tenth = max(1, self.total // 10)
        self.next_step = (start // self.tenth + 1) * self.tenth

    def update(self, step: int, loss: float, samples: int) -> None:
        now = time.perf_counter()
        if step < self.next_step and now - self.last_t < self.every_s and step < self.total:
            return
        self.last_t = now
        while self.next_step <= step:
            self.next_step += self.tenth
        el = now - self.t0
        done = step - self.start
        rate = samples * self.size / el if el > 0 else 0.0
        eta = (self.total - step) * el / done if done > 0 else 0.0
        self.log(f"step {step}/{self.total} ({100 * step // self.total}%): loss {loss:.4f}, "
                 f"{rate:,.0f} samples/s (all ranks), ETA {eta:.0f} s")


def run_fingerprint(a: argparse.Namespace, ds: Optional[cfdata.Dataset]) -> Dict[str, Any]:
    """What every rank must agree on: every other flag (data order seed, hyperparameters, step
    counts, model shape, parallelism), whether it checkpoints, and the data's identity
    (array shapes plus a digest of each array's first and last bytes)."""
    v: Dict[str, Any] = {k: (list(x) if isinstance(x, tuple) else x)
                         for k, x in sorted(vars(a).items()) if k not in RANK_LOCAL_FLAGS}
    v["checkpointing"] = bool(a.checkpoint_dir)
    if ds is not None:
        v["data"] = agreement.dataset_identity({"x_train": ds.x_train, "y_train": ds.y_train,
                                                "x_test": ds.x_test, "y_test": ds.y_test})
        v["classes"] = ds.num_classes
    return v


def claim_checkpoint_dir(directory: str, log: Log) -> Tuple[Optional[str], Optional[dir_lock.DirLock]]:
    """(why this job cannot use `directory` or None, the lock it holds on it or None): the
    directory must be writable (found now, not at the first save) and used by no other job."""
    try:
        dir_lock.check_writable(directory)
    except OSError as e:
        return e.strerror or str(e), None
    try:
        return None, dir_lock.lock_directory(directory, "training job")
    except dir_lock.DirectoryLocked as e:
        return e.message, None
    except OSError as e:  # a file system without locks: go on, unprotected
        log(f"warning: cannot lock checkpoint directory {directory!r} ({e}); make sure no other job uses it")
        return None, None


# optimizer state kept per parameter (slots)
_OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2, "adagrad": 1, "rmsprop": 2}


def check_model_fits(a: argparse.Namespace, ds: cfdata.Dataset) -> None:
    """Raises, before the model is built, when its output layer alone (float32 values,
    gradients and optimizer slots) would not fit in this machine's memory, naming the class
    count and where it came from: a huge label would otherwise fail deep inside the model
    builder, asking for terabytes."""
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    width = a.filters[-1] if a.model == "cnn" else a.hidden[-1]  # the last layer's inputs (at least)
    params = (width + 1) * ds.num_classes
    need = params * 4 * (2 + _OPTIMIZER_SLOTS.get(a.optimizer, 2))
    if need <= mem:
        return
    src = ds.info.get("num_classes_inferred_from")
    cls = f"{ds.num_classes:,} classes" + (
        f", inferred from the largest label ({src} in {a.dataset!r}): pass --num-classes, or fix that label"
        if src else "")
    raise cf.errors.ResourceExhaustedError(
        f"the model would not fit in memory: its output layer alone has {params:,} parameters, about "
        f"{need / 2**30:,.1f} GiB with gradients and {a.optimizer}'s slots (float32), and this machine has "
        f"{mem / 2**30:,.1f} GiB; the data has {cls}")


def check_agreement(comm: Any, log: Log, values: Dict[str, Any], problem: Optional[str] = None) -> bool:
    """The pre-run check (collective): every rank's flags and data agree, and no rank has a
    `problem` starting.  False (logged, and said to the peers) when not."""
    try:
        agreement.check_run_agreement(comm, values, problem=problem)
    except cf.CollflowError as e:
        log.error(e.message)
        agreement.announce_exit(comm, "it could not start")
        return False
    return True


# -- main ----------------------------------------------------------------------------------

def transport_name(comm: Any) -> str:
    """How gradients or variables are combined: shared memory on one host, hierarchical
    (shared memory within hosts, MPI between them) across hosts, else MPI."""
    hosts = getattr(comm, "num_hosts", None)
    if hosts is not None:
        return f"hierarchical ({hosts} hosts x {comm.local_size} ranks)"
    if getattr(comm, "shm_active", False):
        return "shared memory"
    return "mpi" if getattr(comm, "backend", "") == "mpi" else "none"


def peak_rss_per_rank(comm: Any) -> List[float]:
    """Every rank's peak resident memory (MB, the process's ru_maxrss) so far, on every rank."""
    import resource
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    mine = np.array([kb / 1024.0 if sys.platform != "darwin" else kb / 2.0 ** 20], dtype=np.float64)
    return [float(x) for x in np.asarray(comm.allgather(mine)).reshape(-1)] if comm.size > 1 else [float(mine[0])]


def train_wide_deep(a: argparse.Namespace, comm: Any, log: Log, t_start: float,
                    cleanup: Optional[contextlib.ExitStack] = None, el: Optional[ElasticState] = None) -> int:
    """--model wide_deep: embedding tables in "ps" (sharded) or "allreduce" (replicated) mode.
    With --checkpoint-dir, every rank saves its shards (cf.train.ShardedSaver) every
    --checkpoint-every-steps and at the end, and a rerun resumes at the saved step."""
    from collflow.models.wide_deep import build_wide_deep
    from collflow.train.sharded_checkpoint import ShardedSaver
    rank, size = comm.rank, comm.size
    problem: Optional[str] = None
    if a.checkpoint_dir and rank == 0:
        problem, lock = claim_checkpoint_dir(a.checkpoint_dir, log)
        if lock is not None and cleanup is not None:
            cleanup.callback(lock.release)
    if problem is None:
        problem = output_problem(a, rank)
    if not check_agreement(comm, log, run_fingerprint(a, None), problem):
        return 2
    steps_total = a.steps if a.steps is not None else 200
    m = build_wide_deep(vocab_size=a.vocab_size, embedding_dim=a.embedding_dim, mode=a.mode,
                        optimizer=a.optimizer, learning_rate=a.lr, batch_size=a.batch_size, seed=a.seed, comm=comm,
                        fusion_threshold_bytes=int(a.fusion_mb * (1 << 20)),
                        prefetch_routes=bool(getattr(a, "ps_prefetch", False)) and a.mode == "ps")
    routes = ", routes prefetched" if m.next_ids is not None else ""
    log(f"wide_deep ({a.mode} mode{routes}): vocab {a.vocab_size} x {a.embedding_dim}, batch {a.batch_size} per rank x "
        f"{size} rank(s), {a.optimizer}, {steps_total} steps")
    losses = []
    saver = ShardedSaver(comm=comm, graph=m.graph, max_to_keep=a.max_to_keep) if a.checkpoint_dir else None
    prefix = os.path.join(a.checkpoint_dir, "wide_deep") if a.checkpoint_dir else ""
    start = 0
    with cf.Session(graph=m.graph, config={"device": a.device, "comm": comm}) as sess:
        sess.run(m.init_op)
        if m.bcast_op is not None:
            sess.run(m.bcast_op)
        if saver is not None and a.resume:
            latest = cf.train.latest_checkpoint(a.checkpoint_dir, prefix="wide_deep")
            if latest is not None:
                res = saver.restore(sess, latest)
                start = int(res.global_step or 0)
                log(f"resumed from {res.path} at step {start} (written by {res.world_size} rank(s))")
        if start >= steps_total:
            log(f"the job is already complete: the checkpoint is at step {start} and --steps asks for "
                f"{steps_total}; nothing to train")
        comm.reset_stats()  # bytes of the training steps only (not the initial broadcast)
        t0 = time.perf_counter()
        # with --ps-prefetch each run also fetches the next batch's route and feeds it back
        pf = cf.train.sharded.RoutePrefetch(m.graph, m.train_op) if m.next_ids is not None else None
        for k, fd in enumerate(m.batches(max(0, steps_total - start), start=start)):
            if pf is None:
                loss, _ = sess.run([m.loss, m.train_op], fd)
            else:
                out = sess.run([m.loss, m.train_op] + pf.fetches, pf.feed(fd))
                pf.update(out[2:])
                loss = out[0]
            losses.append(float(loss))
            step = start + k + 1
            if step % max(1, steps_total // 5) == 0:
                log(f"step {step}: loss {np.mean(losses[-20:]):.4f}")
            if saver is not None and a.checkpoint_every_steps and step % a.checkpoint_every_steps == 0:
                saver.save(sess, prefix, global_step=step)
            elastic.fire(step)
        train_time = time.perf_counter() - t0
        stats = dict(comm.stats) if isinstance(getattr(comm, "stats", None), dict) else None
        if saver is not None and losses:
            saver.save(sess, prefix, global_step=start + len(losses))
        # held-out batches (steps never trained on): loss and click accuracy
        ev_l, ev_a = [], []
        for fd in m.batches(5, start=10**6):
            lv, lg = sess.run([m.loss, m.logits], fd)
            ev_l.append(float(lv))
            ev_a.append(float(np.mean((np.asarray(lg).reshape(-1) > 0) == (fd[m.labels].reshape(-1) > 0.5))))
    sent = sum(v for k, v in stats.items() if "sent" in k and isinstance(v, (int, float))) \
        if stats is not None else None
    rss = peak_rss_per_rank(comm)
    metrics = {"model": "wide_deep", "mode": a.mode, "ps_prefetch": m.next_ids is not None,
               "vocab_size": a.vocab_size, "embedding_dim": a.embedding_dim,
               "optimizer": a.optimizer, "batch_size": a.batch_size, "steps": len(losses),
               "initial_loss": _finite(losses[0]) if losses else None,
               "final_loss": _finite(float(np.mean(losses[-20:]))) if losses else None,
               "test_loss": _finite(float(np.mean(ev_l))), "test_accuracy": _finite(float(np.mean(ev_a))),
               "samples_per_sec": _finite(len(losses) * a.batch_size * size / train_time) if train_time else None,
               "train_time_s": round(train_time, 4), "wall_time_s": round(time.perf_counter() - t_start, 4),
               "world_size": size, "global_batch": a.batch_size * size, "rank": rank,
               "transport": transport_name(comm),
               "resumed_from_step": start, "already_complete": start >= steps_total,
               "bytes_sent_per_step": (sent / max(1, len(losses))) if sent is not None else None,
               "peak_rss_mb": round(max(rss), 1), "peak_rss_mb_per_rank": [round(x, 1) for x in rss]}
    if el is not None:  # wide_deep's commits are its sharded checkpoints
        metrics["elastic"] = {"commit_every": a.checkpoint_every_steps, "shrinks": el.shrinks,
                              "respawned": el.respawned}
    if rank == 0:
        line = json.dumps(metrics)
        if a.metrics_out:
            with open(a.metrics_out, "w") as f:
                f.write(line + "\n")
        print(line, flush=True)
    return 0 if metrics["final_loss"] is not None or start >= steps_total else 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    t_start = time.perf_counter()
    a = parse_args(argv)
    try:
        comm = _init_comm(elastic=bool(a.elastic))
    except cf.CollflowError as e:  # e.g. the ranks' COLLFLOW_* settings differ: said on every rank
        Log(_world_rank()).error(e.message)
        return 2
    log = Log(comm.rank)
    _library_logging(comm.rank)
    el = ElasticState(a.elastic, respawn=a.elastic_respawn) if a.elastic else None
    from collflow.comm import elastic as cf_elastic
    if el is not None and cf_elastic.is_respawned():  # started by the survivors in a dead rank's place
        log.every_rank(f"joined the job as rank {comm.rank} of {comm.size}, replacing a rank that died")
    else:
        elastic.arm(comm.rank)
    try:
        while True:
            try:
                with contextlib.ExitStack() as cleanup:  # releases the checkpoint directory's lock at the end
                    rc = run(a, comm, log, t_start, cleanup, el)
                break
            except cf.CollflowError as e:  # bad input found by the library (e.g. --device /gpu:0 without a GPU)
                if el is None:
                    raise
                comm, log = _survive(comm, log, el, e)
    except cf.CollflowError as e:
        log.error(e.message)
        rc = 1
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback
        log.error("interrupted (Ctrl-C)")
        return 130
    if el is not None:  # every rank done: leave without MPI_Finalize (collflow.train.elastic.exit_rank)
        elastic.exit_rank(comm, rc)
    return rc


def _survive(comm: Any, log: "Log", el: ElasticState, err: cf.CollflowError) -> Tuple[Any, "Log"]:
    """--elastic: after a failed collective, the survivors' new communicator (and this rank's
    log under its new rank); re-raises `err` when no rank died."""
    t0 = time.perf_counter()
    old_rank, old_size = comm.rank, comm.size
    new, lost, took = elastic.survive(comm, el, err)
    log = Log(new.rank)
    _library_logging(new.rank)
    how = (f"started {lost} new rank(s) in its place: going on with {new.size}" if el.respawn
           else f"going on with {new.size}")
    log.every_rank(f"(was rank {old_rank} of {old_size}) {err.message.splitlines()[0][:200]}; {lost} rank(s) "
                   f"gone, {how} from the last commit ({took:.3f} s; {time.perf_counter() - t0:.3f} s with the new "
                   "communicator)")
    return new, log


def _library_logging(rank: int) -> None:
    """collflow's own log lines (checkpoint fallbacks, SIGTERM handling, ...) in train.py's
    format, "[rank R] ...", on stderr; warnings and above."""
    lg = logging.getLogger("collflow")
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter(f"[rank {rank}] %(message)s"))
    lg.handlers[:] = [h]
    lg.propagate = False
    if lg.level == logging.NOTSET:
        lg.setLevel(logging.WARNING)


def run(a: argparse.Namespace, comm: Any, log: Log, t_start: float, cleanup: contextlib.ExitStack,
        el: Optional[ElasticState] = None) -> int:
    """Checks what the job needs and what the ranks must agree on, then trains; the exit status."""
    rank, size = comm.rank, comm.size
    if a.timeline:
        try:
            log(f"timeline of the collectives: {comm.start_timeline(a.timeline)}")
        except OSError as e:
            log.error(f"--timeline {a.timeline!r}: {e}")
            agreement.announce_exit(comm, f"--timeline {a.timeline!r}: {e}")
            return 2
    if a.model == "wide_deep":
        return train_wide_deep(a, comm, log, t_start, cleanup, el)
    if not 0 <= a.backup_ranks < size:
        log.error(f"--backup-ranks must be in [0, {size - 1}] with {size} ranks, got {a.backup_ranks}")
        return 2
    # what could stop this rank, found before any training collective: every rank then says
    # why, instead of its peers waiting for it
    problem: Optional[str] = None
    ds: Optional[cfdata.Dataset] = None
    try:
        with warnings.catch_warnings(record=True) as caught:  # e.g. labels that look like outliers
            warnings.simplefilter("always")
            ds = load_dataset(a)
        for w in caught:
            log(f"warning: {w.message}")
    except cf.CollflowError as e:
        problem = e.message
    if problem is None and a.checkpoint_dir and rank == 0:  # only rank 0 writes checkpoints
        problem, lock = claim_checkpoint_dir(a.checkpoint_dir, log)
        if lock is not None:
            cleanup.callback(lock.release)
    if problem is None:
        try:
            check_model_fits(a, ds)
        except cf.CollflowError as e:
            problem = e.message
    if problem is None:
        problem = output_problem(a, rank)
    if not check_agreement(comm, log, run_fingerprint(a, ds), problem):
        return 2
    assert ds is not None

    g = cf.Graph()
    with g.as_default():
        m, sync = build_model(a, ds, comm)
        init = cf.global_variables_initializer()
        # replicas start from rank 0's values whatever each rank initialized
        bcast = cf.train.broadcast_global_variables(0) if size > 1 else None
        # straggler injection: a real (cancellable) delay inside the step, before the loss
        slow = cf.placeholder_with_default(cf.constant(0.0, dtype=cf.float64), (), name="straggler_delay")
        m.loss.op._add_control_input(cf.delay(cf.constant(0.0), slow, name="straggler").op)
    it = cfdata.BatchIterator(ds.x_train, ds.y_train, a.batch_size, shuffle=True, seed=a.seed,
                              num_epochs=a.epochs, num_shards=size, shard_index=rank)
    log(f"{a.model} on {ds.name}: {len(ds.y_train)} train / {len(ds.y_test)} test examples of shape "
        f"{ds.feature_shape}, {ds.num_classes} classes, {m.num_params} parameters; {a.optimizer} lr={a.lr:g}, "
        f"batch {a.batch_size} per rank x {size} rank(s) = global batch {a.batch_size * size}, "
        + (f"{a.epochs} epochs" if a.steps is None else f"{a.steps} steps")
        + (f"; fusion {a.fusion_mb:g} MiB, compression {a.compression}, backup ranks {a.backup_ranks}"
           if size > 1 else ""))
    strag_rng = np.random.default_rng(a.seed + 7919)

    def delay_for(step: int) -> float:
        if a.straggler_random is not None:
            who, d = int(strag_rng.integers(0, size)), float(strag_rng.uniform(0, a.straggler_random))
            return d if who == rank else 0.0
        return a.straggler_delay if a.straggler_rank == rank else 0.0

    with cf.Session(graph=g, config={"device": a.device, "comm": comm}) as sess:
        ckpt = cf.train.manager_from_args(a, rank=rank, world_size=size)  # None without --checkpoint-dir
        steps = 0
        res = None
        if ckpt is not None and a.resume:
            res = ckpt.restore_or_initialize(sess, init)   # the latest valid checkpoint, else init
            try:  # before anything collective: every rank must resume from the same file
                agreement.check_resume_agreement(comm, res, a.checkpoint_dir)
            except cf.CollflowError as e:
                log.error(e.message)
                ckpt.close()
                return 1
        else:
            sess.run(init)
        if bcast is not None:
            sess.run(bcast)
        if res is not None:
            if res.world_size == size:
                it.load_state_dict(res.pipeline)            # the same data order
            else:                                           # another rank count: the same share of the epoch
                it.set_position(res.pipeline["epoch"], res.pipeline["offset"] * res.world_size // size)
            steps = res.global_step
            log(f"resumed from {res.path} at step {steps} (written by {res.world_size} rank(s))")
        carried: Dict[str, Any] = {}  # this rank's loss record up to the commit rolled back to
        if el is not None:
            state_vars = g.get_collection(cf.GraphKeys.GLOBAL_VARIABLES)
            # collective: the newest commit every survivor holds, or (first start) commit this state
            back = el.resume(comm, sess, state_vars, steps, it.state_dict())
            if back is not None:
                carried = back.notes
                it.set_position(back.pipeline["epoch"], back.pipeline["offset"] * back.world_size // size)
                steps = back.step
                log(f"rolled back to the commit of step {steps} (taken on {back.world_size} ranks); "
                    f"{size} rank(s) go on, the data re-sharded over them")
        if ckpt is not None:
            ckpt.install_signal_handler()                   # SIGTERM: checkpoint after this step, exit 143
        total = a.steps if a.steps is not None else it.total_steps
        expected = a.steps if a.steps is not None else steps + it.total_steps  # where this rank stops
        complete = res is not None and expected <= steps
        if complete:
            log(f"the job is already complete: {res.path} is at step {steps}, and "
                + (f"--steps {a.steps}" if a.steps is not None else f"--epochs {a.epochs}")
                + " asks for no more; nothing to train (pass more steps or epochs to go on)")
        show_bar = not a.no_progress and rank == 0 and sys.stderr.isatty()
        bar = None
        progress = Progress(log, total, steps, size) if not a.no_progress and rank == 0 and not show_bar else None
        writer = None
        if a.logdir and rank == 0:
            writer = cf.summary.FileWriter(a.logdir, graph=g)
        if show_bar:
            from tqdm import tqdm
            bar = tqdm(total=total, initial=min(steps, total), desc=f"[rank {rank}] train", unit="step",
                       file=sys.stderr, dynamic_ncols=True)
            log.bar = bar
        step_fn = sess.make_callable([m.loss, m.train_op], [m.x, m.y])
        run_steps = 0
        samples = 0
        late_counts = [0] * size
        initial_loss: Optional[float] = carried.get("initial_loss")
        recent: deque = deque(carried.get("recent", ()), maxlen=max(1, len(it)))  # the last epoch's losses
        epoch_loss, epoch_n, epoch_samples, epoch_t0, epoch = 0.0, 0, 0, time.perf_counter(), it.epoch
        t_train = time.perf_counter()
        stop_reason = ""
        try:
            for xb, yb in (it if a.steps is None or steps < a.steps else ()):
                dly = delay_for(steps)
                if sync is not None and sync.backup_ranks:
                    lv = sync.run_step(sess, m.loss, {m.x: xb, m.y: yb, slow: dly})
                    late = sync.quorum_history(sess)[-1]["late"]
                    for r in late:
                        late_counts[r] += 1
                    loss = float("nan") if lv is None else float(lv)
                elif a.trace_step == steps + 1:
                    md = cf.RunMetadata()
                    loss = float(sess.run([m.loss, m.train_op], {m.x: xb, m.y: yb, slow: dly},
                                          options=cf.RunOptions(trace_level=cf.RunOptions.FULL_TRACE),
                                          run_metadata=md)[0])
                    write_step_trace(md, a.trace_path, rank, log)
                elif dly:
                    loss = float(sess.run([m.loss, m.train_op], {m.x: xb, m.y: yb, slow: dly})[0])
                else:
                    loss = float(step_fn(xb, yb)[0])
                steps += 1
                run_steps += 1
                samples += len(yb)
                if ckpt is not None:
                    ckpt.maybe_save(sess, steps, it.state_dict)
                if el is not None:
                    el.step_done(sess, state_vars, steps, it.state_dict, size,
                                 notes=lambda: {"recent": list(recent) + [loss],
                                                "initial_loss": loss if initial_loss is None else initial_loss})
                elastic.fire(steps)
                done = a.steps is not None and steps >= a.steps  # stop before drawing another batch
                if math.isnan(loss) and sync is not None and sync.backup_ranks:
                    if done:
                        break
                    continue  # this rank was late: it computed no loss this step
                if initial_loss is None:
                    initial_loss = loss
                recent.append(loss)
                epoch_loss += loss
                epoch_n += 1
                epoch_samples += len(yb)
                if bar is not None:
                    bar.update(1)
                    if steps % 10 == 0:
                        elapsed = time.perf_counter() - t_train
                        bar.set_postfix(loss=f"{loss:.4f}", samples_s=f"{samples * size / elapsed:,.0f}", refresh=False)
                elif progress is not None:
                    progress.update(steps, loss, samples)
                if writer is not None:
                    elapsed = time.perf_counter() - t_train
                    values = [cf.Summary.Value(tag="loss", simple_value=loss),
                              cf.Summary.Value(tag="learning_rate", simple_value=a.lr)]
                    if elapsed > 0:
                        values.append(cf.Summary.Value(tag="samples_per_sec", simple_value=samples * size / elapsed))
                    writer.add_summary(cf.Summary(value=values), steps)
                if it.epoch != epoch and epoch_n:  # an epoch just ended
                    dt = time.perf_counter() - epoch_t0
                    log(f"epoch {epoch + 1}" + (f"/{a.epochs}" if a.epochs else "")
                        + f": loss {epoch_loss / epoch_n:.4f}, {epoch_samples * size / dt:,.0f} samples/s (all ranks)"
                        + (f", late steps per rank {late_counts}" if a.backup_ranks else ""))
                    epoch_loss, epoch_n, epoch_samples, epoch_t0, epoch = 0.0, 0, 0, time.perf_counter(), it.epoch
                if not math.isfinite(loss):
                    log.error(f"the loss is {loss} at step {steps}; training diverged (try a smaller --lr)")
                    stop_reason = f"its loss diverged ({loss}) at step {steps}"
                    break
                if done:
                    break
        except cf.CollflowError as e:  # a peer left, failed or timed out: say where this rank stood
            if writer is not None:
                writer.close()
            if ckpt is not None:
                ckpt.close()
            if bar is not None:
                bar.close()
                log.bar = None
            if el is not None:  # the elastic driver shrinks the world and comes back
                el.failed(steps)
                raise
            log.error(f"{e.message}; this rank expected {expected} steps and stopped at step {steps}")
            agreement.announce_exit(comm, f"it failed at step {steps}: {e.message.splitlines()[0][:300]}")
            return 1
        agreement.announce_exit(comm, stop_reason or f"it finished training after {steps} steps")
        train_time = time.perf_counter() - t_train
        if ckpt is not None:
            if run_steps:  # a job already complete has nothing new to save
                ckpt.save(sess, steps, it.state_dict())
            ckpt.close()
        if bar is not None:
            if samples and train_time > 0 and recent:
                bar.set_postfix(loss=f"{recent[-1]:.4f}", samples_s=f"{samples * size / train_time:,.0f}",
                                refresh=False)
            bar.close()
            log.bar = None
        if a.check_replicas and size > 1:
            cf.train.check_replicas_identical(sess, comm=comm)
            log("replicas are bit-identical across ranks")
        if sync is not None:
            sync.close(sess)
        test_loss, test_acc = evaluate(sess, m, ds.x_test, ds.y_test)
        if writer is not None:
            values = [cf.Summary.Value(tag=t, simple_value=v) for t, v in
                      (("test_loss", test_loss), ("test_accuracy", test_acc)) if v is not None]
            writer.add_summary(cf.Summary(value=values), steps)
            writer.close()
            log(f"TensorBoard event files: {a.logdir}")
    if comm.timeline is not None:
        log(f"timeline written: {comm.stop_timeline()}")

    final_loss = float(np.mean(recent)) if recent else None
    # samples/s of the whole job (every rank trains on its own batch of the global batch)
    sps = samples * size / train_time if train_time > 0 else None
    metrics: Dict[str, Any] = {
        "model": a.model,
        "dataset": ds.name if a.dataset in ("digits", "synthetic", "stdlib") else a.dataset,
        "optimizer": a.optimizer,
        "lr": a.lr,
        "batch_size": a.batch_size,
        "epochs": round(samples / it.shard_size, 3),  # passes over this rank's shard
        "steps": steps,
        "steps_this_run": run_steps,
        "seed": a.seed,
        "num_params": m.num_params,
        "initial_loss": _finite(initial_loss),
        "final_loss": _finite(final_loss),
        "test_loss": _finite(test_loss),
        "test_accuracy": _finite(test_acc),
        "samples_per_sec": _finite(sps),
        "train_time_s": round(train_time, 4),
        "wall_time_s": round(time.perf_counter() - t_start, 4),
        "rank": rank,
        "world_size": size,
        "global_batch": a.batch_size * size,
        "compression": a.compression,
        "fusion_mb": a.fusion_mb,
        "backup_ranks": a.backup_ranks,
        # how gradients or variables are combined: shared memory on one host, else MPI
        "transport": transport_name(comm),
        "average_parameters": bool(sync is not None and "AverageVariables" in {o.type for o in g.get_operations()}),
    }
    if a.backup_ranks:
        metrics["late_steps_per_rank"] = late_counts
    if el is not None:
        metrics["elastic"] = {"commit_every": el.every, "shrinks": el.shrinks, "respawned": el.respawned,
                              "steps_lost": el.lost_steps,
                              "recovery_s": [round(t, 4) for t in el.recovery_s],
                              "last_commit": el.commits[-1].step if el.commits else None}
    if complete:
        metrics["already_complete"] = True
    if a.model == "lstm":
        metrics.update(hidden=list(a.hidden), seq_len=a.seq_len, embed=a.embed,
                       final_perplexity=_finite(math.exp(min(final_loss, 700))) if final_loss is not None else None,
                       test_perplexity=_finite(math.exp(min(test_loss, 700))) if test_loss is not None else None)
    elif a.model == "mlp":
        metrics["hidden"] = list(a.hidden)
    else:
        metrics["filters"] = list(a.filters)
    acc_s = "n/a" if test_acc is None else f"{test_acc:.4f}"
    log(f"done: {steps} steps in {train_time:.2f} s ({(sps or 0):,.0f} samples/s), final loss "
        f"{final_loss if final_loss is None else round(final_loss, 4)}, test accuracy {acc_s}")
    line = json.dumps(metrics, sort_keys=False)
    if rank == 0:
        if a.metrics_out:
            d = os.path.dirname(os.path.abspath(a.metrics_out))
            os.makedirs(d, exist_ok=True)
            with open(a.metrics_out, "w") as f:
                f.write(line + "\n")
        print(line, flush=True)
    # a rank that was late every step has no loss of its own: only divergence is a failure
    diverged = final_loss is not None and not math.isfinite(final_loss)
    # (a job resumed already complete trains no step: that is no failure either)
    no_loss = final_loss is None and not (a.backup_ranks and steps) and not complete
    return 1 if diverged or no_loss else 0


if __name__ == "__main__":
    sys.exit(main())
