"""cf.train.CheckpointManager: a directory of checkpoints, with cadence, retention, async saves.

    ckpt = cf.train.CheckpointManager("run/ckpt", max_to_keep=5, checkpoint_every_steps=500,
                                      async_save=True)
    restored = ckpt.restore_or_initialize(sess, init_op)     # the latest valid checkpoint, else init
    ckpt.install_signal_handler()                            # SIGTERM: save at the next step, exit
    for ...:
        step = ...                                           # after the step's sess.run
        ckpt.maybe_save(sess, step, pipeline=it.state_dict)  # every N steps / T seconds
    ckpt.save(sess, step, pipeline=it.state_dict()); ckpt.close()

Files are `<directory>/<checkpoint_name>-<step>.h5` (see checkpoint_io.py for the format and
the atomic write) listed in `<directory>/checkpoint.json`, newest last.  Old checkpoints are
deleted only after the new one and the index are durable.  With `async_save` a save takes
zero-copy snapshots of the (NumPy) variables on the caller's thread and a background thread
writes them while training goes on: until the writer has read a row of a variable, a sparse
update first saves the old values of the rows it touches, and a dense update copies the
variable first, so the file holds exactly the values of the step saved (see
collflow/kernels/resources.py, LiveSnapshot).  Small and GPU variables are copied at the
save, into buffers reused from save to save.  The next save, `wait()`, `close()` and
interpreter exit wait for the write, and an error it met is raised there.  Restore takes the
newest checkpoint that reads back intact; a damaged one is reported (a warning naming the
file and why) and the one before it used.  Under N ranks only rank 0 writes; every rank
restores.

Nothing outside the directory is read or deleted: index entries must be plain file names
and resolve (symlinks followed) inside it; others are logged and ignored.  A checkpoint
without checksums is refused unless `allow_unverified` (--allow-unverified-checkpoint).
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import InvalidArgumentError
from . import checkpoint_io as cio
from . import checkpoint_policy as policy
from .global_step import get_global_step
from .saver import RestoreResult, Saver, _fingerprint

__all__ = ["CheckpointManager", "add_checkpoint_arguments", "manager_from_args"]

log = logging.getLogger("collflow.checkpoint")

Pipeline = Union[None, Mapping[str, int], Callable[[], Mapping[str, int]]]

# nice value of the background writer and pruner threads (Linux): below the training threads
_BACKGROUND_NICE = 10
# clocks, replaceable in tests: wall time for what is written down, monotonic time for cadence
_wall_time = time.time
_monotonic = time.monotonic


def _lower_thread_priority() -> None:
    """Lets training threads win the CPU over this (background) thread, where the OS allows it.

    On Linux a thread has its own nice value; elsewhere setpriority would renice the whole
    process, so nothing is done.
    """
    if sys.platform.startswith("linux"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _BACKGROUND_NICE)
        except (OSError, AttributeError):
            pass


def _on_gpu(sess: Any, v: Any) -> bool:
    """Whether variable `v` lives in GPU memory in `sess` (its snapshot is then a host copy)."""
    st = sess.resources.variables.get(v.op.attrs.get("shared_name", v.op.name))
    if st is not None:
        return st.xp is not np
    from ..kernels.device import get_device
    return get_device(sess._device_for(v.op)).xp is not np


def _remove_files(directory: str, names: Sequence[str]) -> None:
    """Deletes the checkpoints `names` of `directory` (retention); never anything outside it."""
    _lower_thread_priority()
    for n in names:
        try:
            # checked again here: the file may have become a symlink since the index was read
            p = policy.contained_path(directory, n)
            os.remove(p)  # a symlink inside the directory: the link goes, never its target
        except FileNotFoundError:
            pass
        except cio.UnsafeCheckpointError as e:
            log.warning("not deleting old checkpoint: %s", e)
        except OSError as e:
            log.warning("cannot delete old checkpoint %s: %s", os.path.join(directory, n), e)


class CheckpointManager:
    """Saves, keeps and restores the checkpoints of one training job in `directory`.

    max_to_keep: newest checkpoints kept (None or 0: all); keep_every_n_hours: also keep one
    checkpoint per that many hours for good.  checkpoint_every_steps / checkpoint_every_secs:
    the cadence `should_save` and `maybe_save` follow (either triggers).  async_save: write in
    a background thread.  var_list / saver: what to save (default: a Saver over the Session's
    graph's global variables, made at the first save or restore).  rank / world_size: this
    process's place in the job (default from collflow.comm or the MPI launcher).
    allow_unverified: restore a checkpoint that has no checksums (with a loud warning)
    instead of refusing it.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # TF's form, CheckpointManager(checkpoint, directory, max_to_keep, ...), manages a
        # tf.train.Checkpoint: object_checkpoint.TFCheckpointManager
        first = args[0] if args else kwargs.get("checkpoint")
        if cls is CheckpointManager and first is not None:
            from .object_checkpoint import Checkpoint, TFCheckpointManager
            if isinstance(first, Checkpoint):
                return TFCheckpointManager(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, directory: str, max_to_keep: Optional[int] = 5, keep_every_n_hours: Optional[float] = None,
                 checkpoint_name: str = "ckpt", checkpoint_every_steps: Optional[int] = None,
                 checkpoint_every_secs: Optional[float] = None, async_save: bool = False,
                 var_list: Any = None, saver: Optional[Saver] = None, save_rng: bool = True,
                 rank: Optional[int] = None, world_size: Optional[int] = None, allow_unverified: bool = False):
        if not directory:
            raise InvalidArgumentError("CheckpointManager needs a directory")
        if checkpoint_every_steps is not None and int(checkpoint_every_steps) <= 0:
            raise InvalidArgumentError(f"checkpoint_every_steps must be positive, got {checkpoint_every_steps}")
        if checkpoint_every_secs is not None and not float(checkpoint_every_secs) > 0:
            raise InvalidArgumentError(f"checkpoint_every_secs must be positive, got {checkpoint_every_secs}")
        if max_to_keep is not None and int(max_to_keep) < 0:
            raise InvalidArgumentError(f"max_to_keep must be >= 0 or None, got {max_to_keep}")
        if not checkpoint_name or "/" in checkpoint_name or os.sep in checkpoint_name:
            raise InvalidArgumentError(f"checkpoint_name must be a plain file name prefix, got {checkpoint_name!r}")
        self.directory = os.path.abspath(directory)
        self.max_to_keep = max_to_keep
        self.keep_every_n_hours = keep_every_n_hours
        self.checkpoint_name = checkpoint_name
        self.every_steps = None if checkpoint_every_steps is None else int(checkpoint_every_steps)
        self.every_secs = None if checkpoint_every_secs is None else float(checkpoint_every_secs)
        self.async_save = bool(async_save)
        self._var_list = var_list
        self._saver = saver
        self._save_rng = save_rng
        self.allow_unverified = bool(allow_unverified)
        if self.allow_unverified:
            log.warning("checkpoints in %s WITHOUT CHECKSUMS WILL BE RESTORED UNVERIFIED (allow_unverified / "
                        "--allow-unverified-checkpoint): damaged or tampered values would go unnoticed", directory)
        r, s = cio.process_rank_and_size()
        self.rank = r if rank is None else int(rank)
        self.world_size = s if world_size is None else int(world_size)
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._pruner: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None
        self._buffers: Dict[str, np.ndarray] = {}
        self._undo: Dict[str, Any] = {}  # undo buffers of the live snapshots, reused
        self._prefault: Optional[threading.Thread] = None
        self._prefault_out: Dict[str, np.ndarray] = {}
        self._last_save_step: Optional[int] = None
        self._last_save_time = _monotonic()
        self._last_preserved = _wall_time()
        self._preemption: Any = None
        # timings of the last save (seconds): blocking part on the caller's thread, and the write
        self.last_snapshot_seconds = 0.0
        self.last_write_seconds = 0.0
        self.last_save_bytes = 0
        os.makedirs(self.directory, exist_ok=True)
        if self.is_chief:
            self._remove_stale_tmp_files()
        self._entries = self._load_entries()

    # -- state of the directory -----------------------------------------------------------------
    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    def _remove_stale_tmp_files(self) -> None:
        """Deletes what writes killed mid-way left behind (never treated as checkpoints)."""
        for n in os.listdir(self.directory):
            if n.endswith(cio.TMP_SUFFIX) and (n.startswith(self.checkpoint_name + "-")
                                                or n.startswith(cio.INDEX_FILENAME + ".")):
                log.info("removing %s, left by an interrupted checkpoint write", os.path.join(self.directory, n))
                try:
                    os.remove(os.path.join(self.directory, n))
                except OSError:
                    pass

    def _load_entries(self, skipped: Optional[List[str]] = None) -> List[cio.IndexEntry]:
        """The index's entries plus checkpoint files it misses, oldest first.

        Entries whose file is gone, or resolves outside the directory, are left out; with
        `skipped` (a restore) each is logged and why appended there (naming the file).
        """
        try:
            indexed = cio.read_index(self.directory)  # entries that are not plain file names are dropped there
        except cio.DataLossError as e:
            log.warning("%s; using the checkpoint files found in the directory", e)
            indexed = []
        pref = self.checkpoint_name + "-"
        entries = [e for e in indexed if self._usable(e, skipped)]
        known = {e.path for e in indexed}
        extra = [e for e in cio.scan_directory(self.directory, self.checkpoint_name)
                 if e.path not in known and self._usable(e, skipped)]
        if extra:
            entries = entries + extra
            entries.sort(key=lambda e: (e.step if e.step is not None else -1, e.time))
        # another prefix's files (a Saver writing here too) are not this manager's to prune
        return [e for e in entries if e.path.startswith(pref)]

    def _usable(self, e: cio.IndexEntry, skipped: Optional[List[str]]) -> bool:
        """Whether entry `e` names an existing file inside the directory (else logs why, with `skipped`)."""
        try:
            path = policy.contained_path(self.directory, e.path)
        except cio.UnsafeCheckpointError as err:
            why = str(err)
        else:
            if os.path.exists(path):
                return True
            why = (f"checkpoint {path} (step {e.step}): listed in {cio.INDEX_FILENAME} but the file does not "
                   "exist (deleted?)")
        if skipped is not None and e.path.startswith(self.checkpoint_name + "-"):
            log.warning("skipping %s", why)
            skipped.append(why)
        return False

    @property
    def checkpoints(self) -> List[str]:
        """Paths of the checkpoints in the directory, oldest first."""
        with self._lock:
            return [os.path.join(self.directory, e.path) for e in self._entries]

    @property
    def latest_checkpoint(self) -> Optional[str]:
        """The newest checkpoint's path (not validated; restore() falls back past a damaged one)."""
        with self._lock:
            return os.path.join(self.directory, self._entries[-1].path) if self._entries else None

    def _get_saver(self, sess: Any) -> Saver:
        if self._saver is None:
            var_list = self._var_list
            if var_list is None:
                from ..graph.graph import GraphKeys
                var_list = sess.graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
            self._saver = Saver(var_list, max_to_keep=None, save_rng=self._save_rng, rank=self.rank,
                                world_size=self.world_size, allow_empty=True)
        return self._saver

    # -- cadence --------------------------------------------------------------------------------
    def should_save(self, step: int) -> bool:
        """Whether `step` is due for a checkpoint: every_steps since the last save, or every_secs."""
        if self._last_save_step is None:
            self._last_save_step = 0
        if self.every_steps is not None and int(step) - self._last_save_step >= self.every_steps:
            return True
        if self.every_secs is not None and _monotonic() - self._last_save_time >= self.every_secs:
            return int(step) != self._last_save_step
        return False

    def maybe_save(self, sess: Any, step: int, pipeline: Pipeline = None) -> Optional[str]:
        """Saves when `should_save(step)`; acts on a pending SIGTERM (saves, then exits).

        Call it after each training step.  pipeline: the input position, or a callable
        returning it (called only when a checkpoint is written).
        """
        if self._preemption is not None and self._preemption.requested:
            self._preemption.save_and_exit(sess, step, pipeline)
        if self.async_save and self._prefault is None and not self._buffers:
            self.prepare(sess)
        if self.should_save(step):
            return self.save(sess, step, pipeline)
        return None

    def prepare(self, sess: Any) -> None:
        """With async_save: allocates the host buffers of GPU variables now, in a background thread.

        Touching a fresh gigabyte's pages costs ~0.3 s or more; done here, the first
        asynchronous save does not pay it on the training thread.  maybe_save and
        restore_or_initialize call this; the buffers hold one host copy of the GPU variables
        (host variables are snapshotted without a copy).
        """
        if not self.async_save or not self.is_chief or self._prefault is not None or self._buffers:
            return
        specs = {k: (tuple(v.shape.as_list()), v.dtype.np) for k, v in self._get_saver(sess).var_list.items()
                 if v.shape.is_fully_defined() and _on_gpu(sess, v)}
        if not specs:
            return
        out: Dict[str, np.ndarray] = {}

        def touch() -> None:
            _lower_thread_priority()
            for k, (shape, dt) in specs.items():
                b = np.empty(shape, dtype=dt)
                b.fill(0)
                out[k] = b
        t = threading.Thread(target=touch, name="collflow-checkpoint-buffers", daemon=True)
        t.start()
        self._prefault = t
        self._prefault_out = out

    def _take_prefaulted(self) -> None:
        t = self._prefault
        if t is not None:
            t.join()
            self._buffers.update(self._prefault_out)
            self._prefault_out = {}

    # -- saving -----------------------------------------------------------------------------------
    def save(self, sess: Any, step: Optional[int] = None, pipeline: Pipeline = None,
             async_save: Optional[bool] = None) -> str:
        """Writes the checkpoint of `step` (default: the graph's global step); returns its path.

        async_save overrides the manager's setting for this save.  A save first waits for the
        previous asynchronous one (and raises the error it met, if any).
        """
        if step is None:
            gs = get_global_step(sess.graph)
            if gs is None:
                raise InvalidArgumentError("save() needs a step: the graph has no global step")
            step = int(sess.run(gs))
        step = int(step)
        path = os.path.join(self.directory, f"{self.checkpoint_name}-{step}.h5")
        self._last_save_step = step
        self._last_save_time = _monotonic()
        if not self.is_chief:
            return path
        self.wait()
        asyn = self.async_save if async_save is None else bool(async_save)
        pos = pipeline() if callable(pipeline) else pipeline
        t0 = time.perf_counter()
        if asyn:
            self._take_prefaulted()
        if asyn:
            data = self._get_saver(sess).snapshot(sess, step, pos, buffers=self._buffers, live=True,
                                                  undo=self._undo)
        else:
            data = self._get_saver(sess).snapshot(sess, step, pos)
        data.timestamp = _wall_time()
        self.last_snapshot_seconds = time.perf_counter() - t0
        if asyn:
            t = threading.Thread(target=self._write_in_background, args=(path, data, False),
                                 name="collflow-checkpoint-writer", daemon=False)
            self._thread = t
            try:
                t.start()
            except BaseException:
                self._thread = None
                data.release()
                raise
        else:
            self._write(path, data)
        return path

    def _write_in_background(self, path: str, data: cio.CheckpointData, parallel: bool) -> None:
        _lower_thread_priority()
        try:
            self._write(path, data, parallel)
        except BaseException as e:  # reported on the training thread by wait()/save()/close()
            log.error("asynchronous checkpoint %s failed: %s", path, e)
            self._error = e
        finally:
            data.release()  # live snapshots not written (after a failure): updates stop saving rows

    def _write(self, path: str, data: cio.CheckpointData, parallel: bool = True) -> None:
        t0 = time.perf_counter()
        self.last_save_bytes = cio.write_checkpoint(path, data, parallel=parallel)
        with self._lock:
            rel = os.path.basename(path)
            entries = [e for e in self._entries if e.path != rel]
            entries.append(cio.IndexEntry(rel, data.global_step, data.timestamp))
            kept, delete, self._last_preserved = cio.retention_plan(
                entries, self.max_to_keep, self.keep_every_n_hours, self._last_preserved)
            # the new checkpoint is durable: now the index, and only then the deletions
            cio.write_index(self.directory, kept)
            self._entries = kept
        self.last_write_seconds = time.perf_counter() - t0
        if delete:
            # unlinking a large file takes a while (~0.3 s/GB here) and nothing waits on it; a
            # crash before it is done leaves files the next manager finds and prunes again
            t = threading.Thread(target=_remove_files, args=(self.directory, [e.path for e in delete]),
                                 name="collflow-checkpoint-pruner", daemon=False)
            self._pruner = t
            t.start()
        log.info("saved checkpoint %s (step %s, %.1f MB in %.2f s)", path, data.global_step,
                 self.last_save_bytes / 1e6, self.last_write_seconds)

    def wait(self) -> None:
        """Blocks until an asynchronous save in flight is durable (and old checkpoints are
        deleted); raises the error it met."""
        t = self._thread
        if t is not None:
            t.join()
            self._thread = None
        p = self._pruner
        if p is not None:
            p.join()
            self._pruner = None
        err, self._error = self._error, None
        if err is not None:
            raise err

    @property
    def save_in_flight(self) -> bool:
        """Whether an asynchronous save is being written."""
        t = self._thread
        return t is not None and t.is_alive()

    @property
    def busy(self) -> bool:
        """Whether background work is going on: an asynchronous write or the deletion of old checkpoints."""
        p = self._pruner
        return self.save_in_flight or (p is not None and p.is_alive())

    # -- restoring ----------------------------------------------------------------------------------
    def restore(self, sess: Any, path: Optional[str] = None, strict: bool = True,
                allow_unverified: Optional[bool] = None) -> Optional[RestoreResult]:
        """Restores `path`, or the newest checkpoint that reads back intact; None if there is none.

        A damaged, truncated, refused (see checkpoint_policy) or missing checkpoint is
        reported with a warning naming the file and why, and the one before it is tried.  A
        checkpoint that does not match the graph raises (see Saver.restore; strict=False
        restores what matches).  If every checkpoint is damaged, DataLossError lists them.
        allow_unverified: accept a checkpoint without checksums (default: the manager's setting).
        """
        saver = self._get_saver(sess)
        unverified = self.allow_unverified if allow_unverified is None else bool(allow_unverified)
        if path is not None:
            res = saver.restore(sess, path, strict=strict, allow_unverified=unverified)
            self._restored(res)
            return res
        skipped: List[str] = []
        with self._lock:
            self._entries = self._load_entries(skipped)
            candidates = [os.path.join(self.directory, e.path) for e in reversed(self._entries)]
        res, bad = self._restore_newest(sess, saver, candidates, strict, unverified, skipped)
        if res is not None:
            if skipped or bad:
                log.warning("restored %s; skipped %d checkpoint(s) that could not be used:\n  %s", res.path,
                            len(skipped) + len(bad), "\n  ".join(skipped + bad))
            self._restored(res)
            return res
        if not bad:
            return None
        raise cio.DataLossError(f"no usable checkpoint in {self.directory}:\n  " + "\n  ".join(skipped + bad))

    def _restore_newest(self, sess: Any, saver: Saver, candidates: List[str], strict: bool, unverified: bool,
                        skipped: List[str]) -> Tuple[Optional[RestoreResult], List[str]]:
        """(the result of restoring the first of `candidates` that reads back, "path: why" of
        each one before it that is damaged or refused); files gone meanwhile go to `skipped`."""
        bad: List[str] = []
        for p in candidates:
            if not os.path.exists(p):  # deleted since the directory was listed
                log.warning("skipping checkpoint %s: it no longer exists (deleted?)", p)
                skipped.append(f"{p}: deleted while restoring")
                continue
            try:
                return saver.restore(sess, p, strict=strict, allow_unverified=unverified), bad
            except cio.DataLossError as e:
                log.warning("cannot restore checkpoint %s: %s; trying the previous one", p, e)
                bad.append(f"{p}: {e}")
        return None, bad

    def _restored(self, res: RestoreResult) -> None:
        if res.global_step is not None:
            self._last_save_step = int(res.global_step)
        self._last_save_time = _monotonic()
        log.info("restored checkpoint %s (step %s)", res.path, res.global_step)

    def restore_or_initialize(self, sess: Any, init_op: Any = None, strict: bool = True,
                              allow_unverified: Optional[bool] = None) -> Optional[RestoreResult]:
        """Restores the latest valid checkpoint; without one, runs `init_op` (default: the
        initializers of the saved variables).  Returns the RestoreResult or None.

        With strict=False, variables the checkpoint lacks are initialized.  allow_unverified:
        see restore.
        """
        res = self.restore(sess, strict=strict, allow_unverified=allow_unverified)
        saver = self._get_saver(sess)
        if res is None:
            sess.run(init_op if init_op is not None else [v.initializer for v in saver.var_list.values()])
        elif res.missing:
            vs = saver.var_list
            sess.run([vs[k].initializer for k in res.missing])
        _fingerprint(sess.graph)  # hashed once now (it is cached), not during the first save
        self.prepare(sess)
        return res

    # -- signals and lifetime ---------------------------------------------------------------------
    def install_signal_handler(self, signals: Sequence[int] = (), exit_code: Optional[int] = None) -> Any:
        """On SIGTERM (or `signals`): save at the next maybe_save() and exit (see PreemptionHandler)."""
        from .preemption import PreemptionHandler
        if self._preemption is None:
            self._preemption = PreemptionHandler(self, signals or None, exit_code)
            self._preemption.install()
        return self._preemption

    def close(self) -> None:
        """Waits for an asynchronous save in flight; removes the signal handler."""
        try:
            self.wait()
        finally:
            if self._preemption is not None:
                self._preemption.uninstall()
                self._preemption = None

    def __enter__(self) -> "CheckpointManager":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"CheckpointManager({self.directory!r}, max_to_keep={self.max_to_keep}, "
                f"{len(self._entries)} checkpoint(s))")


# -- command-line flags (scripts/train.py) ----------------------------------------------------------


def add_checkpoint_arguments(parser: Any) -> Any:
    """Adds --checkpoint-dir, --checkpoint-every-steps/-secs, --max-to-keep, --keep-every-n-hours,
    --async-checkpoint, --resume/--no-resume and --allow-unverified-checkpoint to an argparse
    parser; returns the group."""
    import argparse
    g = parser.add_argument_group("checkpoints")
    g.add_argument("--checkpoint-dir", metavar="DIR", default=None,
                   help="save checkpoints here (HDF5) and resume from the latest one")
    g.add_argument("--checkpoint-every-steps", type=int, metavar="N", default=None,
                   help="save every N steps (also at the end and on SIGTERM)")
    g.add_argument("--checkpoint-every-secs", type=float, metavar="S", default=None,
                   help="save every S seconds")
    g.add_argument("--max-to-keep", type=int, metavar="N", default=5,
                   help="newest checkpoints kept (0: all; default 5)")
    g.add_argument("--keep-every-n-hours", type=float, metavar="H", default=None,
                   help="also keep one checkpoint per H hours for good")
    g.add_argument("--async-checkpoint", action="store_true",
                   help="write checkpoints in a background thread while training goes on")
    g.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                   help="restore the latest valid checkpoint of --checkpoint-dir when there is one "
                        "(default; --no-resume starts afresh)")
    g.add_argument("--allow-unverified-checkpoint", action="store_true",
                   help="restore a checkpoint that has no checksums (refused by default); its values are "
                        "then not checked for damage or tampering, and a warning says so")
    return g


def manager_from_args(args: Any, rank: Optional[int] = None, world_size: Optional[int] = None
                      ) -> Optional[CheckpointManager]:
    """The CheckpointManager the flags of add_checkpoint_arguments ask for (None without --checkpoint-dir)."""
    if not getattr(args, "checkpoint_dir", None):
        return None
    for flag, v in (("--checkpoint-every-steps", args.checkpoint_every_steps),
                    ("--checkpoint-every-secs", args.checkpoint_every_secs)):
        if v is not None and not v > 0:
            raise InvalidArgumentError(f"{flag} must be positive, got {v}")
    return CheckpointManager(args.checkpoint_dir, max_to_keep=args.max_to_keep,
                             keep_every_n_hours=args.keep_every_n_hours,
                             checkpoint_every_steps=args.checkpoint_every_steps,
                             checkpoint_every_secs=args.checkpoint_every_secs,
                             async_save=args.async_checkpoint, rank=rank, world_size=world_size,
                             allow_unverified=getattr(args, "allow_unverified_checkpoint", False))
