"""MonitoredSession and MonitoredTrainingSession (TensorFlow 1.x's tf.train).

    hooks = [cf.train.StopAtStepHook(last_step=1000)]
    with cf.train.MonitoredTrainingSession(checkpoint_dir="run", hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train_op)

Creating the session: every hook's `begin()`; the Scaffold fills in what the caller left
out (init_op, ready_op, local_init_op, summary_op, saver; from the graph's collections or
defaults) and the graph is finalized; the Session is created and, when checkpoint_dir
holds a checkpoint, restored from the newest one that reads back intact (else init_op and
init_fn run); local_init_op runs; the ready check names any variable still uninitialized;
the graph's queue runners start; every hook's `after_create_session`.

`run` adds the fetches and feeds the hooks ask for (before_run) to the caller's, runs once,
and hands each hook its values (after_run).  OutOfRangeError (an input that ran out) ends
a `with` block cleanly, hooks' `end()` included, as in TensorFlow 1.x.  Closing the
session stops the queue runners and un-finalizes the graph if it was not finalized before.

Differences from TensorFlow 1.x: every rank holds its own variables, so a non-chief
(is_chief=False) restores from checkpoint_dir too (and hooks like
cf.horovod.BroadcastGlobalVariablesHook make the replicas identical); there is no
coordinator (hooks get coord=None) and no recovery from a lost parameter server.
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ..errors import OutOfRangeError
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops.array_ops import stack
from ..graph.ops.state_ops import is_variable_initialized
from ..graph.ops.constant_op import group
from ..graph.variables import global_variables_initializer, local_variables_initializer, tables_initializer
from ..platform import tf_logging as logging
from ..runtime.session import Session
from ..runtime.tracing import RunMetadata, RunOptions
from ..summary.summary_ops import merge_all
from .checkpoint_manager import CheckpointManager
from .hooks import (CheckpointSaverHook, SessionRunArgs, SessionRunContext, SessionRunValues, StepCounterHook,
                    SummarySaverHook)
from .saver import Saver, latest_checkpoint

__all__ = ["Scaffold", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator", "MonitoredSession",
           "SingularMonitoredSession", "MonitoredTrainingSession", "StepContext", "USE_DEFAULT"]

# TensorFlow 1.x's collection names for what a Scaffold finds or makes (GraphKeys.INIT_OP is collflow's)
READY_OP = "ready_op"
LOCAL_INIT_OP = "local_init_op"
SUMMARY_OP = "summary_op"
SAVERS = "savers"


class _UseDefault:
    def __repr__(self) -> str:
        return "USE_DEFAULT"


USE_DEFAULT = _UseDefault()  # "not given" for MonitoredTrainingSession's cadences, as in TensorFlow

# a default ready_op (booleans, one per variable) -> the variables it checks
_READY_VARIABLES: "weakref.WeakKeyDictionary[Any, List[Any]]" = weakref.WeakKeyDictionary()


class Scaffold:
    """What is needed to create or restore a session: init_op (run when there is no
    checkpoint, with init_feed_dict, then `init_fn(scaffold, session)`), ready_op (a 1-D
    string tensor naming the uninitialized variables, empty when ready; the default checks
    every global and local variable), local_init_op, summary_op and saver.  finalize()
    fills the missing ones from the graph's collections, else defaults."""

    def __init__(self, init_op: Any = None, init_feed_dict: Optional[dict] = None,
                 init_fn: Optional[Callable[["Scaffold", Any], None]] = None, ready_op: Any = None,
                 ready_for_local_init_op: Any = None, local_init_op: Any = None, summary_op: Any = None,
                 saver: Any = None, copy_from_scaffold: Optional["Scaffold"] = None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            c = copy_from_scaffold
            init_op = init_op if init_op is not None else c.init_op
            init_feed_dict = init_feed_dict if init_feed_dict is not None else c.init_feed_dict
            init_fn = init_fn if init_fn is not None else c._user_init_fn
            ready_op = ready_op if ready_op is not None else c.ready_op
            local_init_op = local_init_op if local_init_op is not None else c.local_init_op
            summary_op = summary_op if summary_op is not None else c.summary_op
            saver = saver if saver is not None else c.saver
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._user_init_fn = init_fn
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._summary_op = summary_op
        self._saver = saver

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor: Callable[[], Any]) -> Any:
        """The one item of the default graph's collection, else a new default (added to it)."""
        found = _g.get_collection(collection_key)
        if len(found) > 1:
            raise RuntimeError(f"More than one item in collection {collection_key}. Please indicate which one to "
                               f"use by passing it to the cf.train.Scaffold constructor as: "
                               f"cf.train.Scaffold({arg_name}=item to use)")
        if found:
            return found[0]
        item = default_constructor()
        if item is not None:
            _g.add_to_collection(collection_key, item)
        return item

    @staticmethod
    def default_local_init_op() -> Any:
        # TF's default also initializes the lookup tables (tables_initializer)
        if not _g.get_collection(GraphKeys.TABLE_INITIALIZERS):
            return local_variables_initializer()
        return group(local_variables_initializer(), tables_initializer())

    @staticmethod
    def _default_ready_op() -> Any:
        g = _g.get_default_graph()
        variables = g.get_collection(GraphKeys.GLOBAL_VARIABLES) + g.get_collection(GraphKeys.LOCAL_VARIABLES)
        if not variables:
            return None
        with g.name_scope("report_uninitialized_variables"):
            ready = stack([is_variable_initialized(v) for v in variables])
        _READY_VARIABLES[ready] = variables
        return ready

    def finalize(self) -> "Scaffold":
        """Fills in the missing pieces (idempotent) and finalizes the default graph."""
        g = _g.get_default_graph()
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", GraphKeys.INIT_OP, global_variables_initializer)
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default("ready_op", READY_OP, Scaffold._default_ready_op)
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default("local_init_op", LOCAL_INIT_OP,
                                                          Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", SUMMARY_OP, merge_all)
        if self._saver is None:
            def default_saver() -> Any:
                return Saver() if g.get_collection(GraphKeys.GLOBAL_VARIABLES) else None
            self._saver = Scaffold.get_or_default("saver", SAVERS, default_saver)
        if not g.finalized:
            g.finalize()
            logging.info("Graph was finalized.")
        return self

    @property
    def init_fn(self) -> Optional[Callable[[Any], None]]:
        if self._user_init_fn is None:
            return None
        return lambda sess: self._user_init_fn(self, sess)

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)

    def uninitialized(self, sess: Any) -> List[str]:
        """Names the ready_op reports as uninitialized ([] when ready or there is no ready_op)."""
        if self._ready_op is None:
            return []
        out = np.asarray(sess.run(self._ready_op))
        if out.dtype == np.bool_:
            variables = _READY_VARIABLES.get(self._ready_op)
            if variables is None or len(variables) != out.size:
                raise RuntimeError("a boolean ready_op must come from Scaffold's default (it knows the variables); "
                                   "pass a ready_op returning the names of the uninitialized variables instead")
            return [v.op.name for v, ok in zip(variables, out.ravel()) if not ok]
        return [s.decode() if isinstance(s, bytes) else str(s) for s in out.ravel()]


# -- session creators ---------------------------------------------------------------------------------

class SessionCreator:
    """Makes the (raw, ready) Session a MonitoredSession wraps."""

    def create_session(self) -> Session:
        raise NotImplementedError


class ChiefSessionCreator(SessionCreator):
    """Creates a Session on the default graph, restored from `checkpoint_dir`'s newest usable
    checkpoint (or `checkpoint_filename_with_path`) when there is one, else initialized.
    `master`: '' or this process's tf.train.Server target (collflow runs sessions in-process)."""

    def __init__(self, scaffold: Optional[Scaffold] = None, master: str = "", config: Any = None,
                 checkpoint_dir: Optional[str] = None, checkpoint_filename_with_path: Optional[str] = None):
        from .cluster import is_server_target
        if master and not is_server_target(master):
            raise ValueError(f"master={master!r}: collflow runs sessions in-process (one per MPI rank); pass '' "
                             "or the target of this process's tf.train.Server")
        self._scaffold = scaffold or Scaffold()
        self._config = config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_path = checkpoint_filename_with_path

    def _restore(self, sess: Session) -> Optional[str]:
        """Restores the checkpoint to start from; its path, or None when there is none."""
        saver = self._scaffold.saver
        if self._checkpoint_path:
            saver = saver or Saver(allow_empty=True)
            saver.restore(sess, self._checkpoint_path)
            return self._checkpoint_path
        if not self._checkpoint_dir or saver is None:
            return None
        newest = latest_checkpoint(self._checkpoint_dir)
        if newest is None:
            return None
        # the manager of that file's prefix falls back past a damaged newest file
        prefix = _checkpoint_prefix(newest)
        res = CheckpointManager(self._checkpoint_dir, checkpoint_name=prefix, saver=saver).restore(sess)
        return None if res is None else res.path

    def create_session(self) -> Session:
        self._scaffold.finalize()
        sess = Session(graph=_g.get_default_graph(), config=self._config)
        try:
            restored = self._restore(sess)
            sc = self._scaffold
            if restored is None:
                if sc.init_op is not None:
                    sess.run(sc.init_op, feed_dict=sc.init_feed_dict)
                if sc.init_fn is not None:
                    sc.init_fn(sess)
            else:
                logging.info("Restored the session from %s", restored)
            if sc.local_init_op is not None:
                sess.run(sc.local_init_op)
            missing = sc.uninitialized(sess)
            if missing:
                raise RuntimeError(
                    f"Init operations did not make model ready. Init op: "
                    f"{getattr(sc.init_op, 'name', sc.init_op)}, init fn: {sc.init_fn}, restored from: {restored}, "
                    f"error: Variables not initialized: {', '.join(missing)}")
        except BaseException:
            sess.close()
            raise
        return sess


class WorkerSessionCreator(ChiefSessionCreator):
    """A non-chief's session.  In collflow each rank holds its own variables, so a worker
    restores or initializes exactly as the chief does (max_wait_secs is accepted, unused)."""

    def __init__(self, scaffold: Optional[Scaffold] = None, master: str = "", config: Any = None,
                 max_wait_secs: float = 30 * 60, checkpoint_dir: Optional[str] = None):
        super().__init__(scaffold, master, config, checkpoint_dir)


def _checkpoint_prefix(path: str) -> str:
    """'model.ckpt' from '.../model.ckpt-100.h5'."""
    base = os.path.basename(path)
    stem = base.rsplit(".", 1)[0] if base.endswith((".h5", ".hdf5")) else base
    return stem.rsplit("-", 1)[0] if "-" in stem else stem


# -- the monitored session ------------------------------------------------------------------------------

class _StopSignal(Exception):
    """Raised by StepContext.request_stop to leave a step function."""


class StepContext:
    """What run_step_fn's step function gets: the raw `session`, `run_with_hooks` and `request_stop`."""

    def __init__(self, session: Session, run_with_hooks_fn: Callable[..., Any]):
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self) -> Session:
        return self._session

    def run_with_hooks(self, *args: Any, **kwargs: Any) -> Any:
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self) -> None:
        """Ends the step function at once; should_stop() is then true."""
        raise _StopSignal()


class MonitoredSession:
    """A Session that runs hooks around every run and manages initialization, restore and stop.

    session_creator: ChiefSessionCreator() by default.  hooks: SessionRunHooks.
    stop_grace_period_secs: how long close() waits for the queue-runner threads.
    """

    def __init__(self, session_creator: Optional[SessionCreator] = None,
                 hooks: Optional[Sequence[Any]] = None, stop_grace_period_secs: float = 120):
        self.graph = _g.get_default_graph()
        self._graph_was_finalized = self.graph.finalized
        self._hooks = list(hooks or [])
        self._grace = float(stop_grace_period_secs)
        self._should_stop = False
        self._threads: List[threading.Thread] = []
        self._sess: Optional[Session] = None
        for h in self._hooks:
            h.begin()
        creator = session_creator or ChiefSessionCreator()
        try:
            self._sess = creator.create_session()
            for qr in self.graph.get_collection(GraphKeys.QUEUE_RUNNERS):
                self._threads.extend(qr.create_threads(self._sess, coord=None, daemon=True, start=True))
            for h in self._hooks:
                h.after_create_session(self._sess, None)
        except BaseException:
            self._shutdown()
            raise

    # -- running ------------------------------------------------------------------------------------------
    def run(self, fetches: Any, feed_dict: Optional[dict] = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        """Runs `fetches` with the hooks' additions; returns the caller's values."""
        sess = self._check_open()
        context = SessionRunContext(original_args=SessionRunArgs(fetches, feed_dict, options), session=sess)
        actual: Dict[Any, Any] = {"caller": fetches}
        feeds = dict(feed_dict) if feed_dict else {}
        trace = getattr(options, "trace_level", 0) or 0
        hook_feeds: Dict[Any, Any] = {}
        for h in self._hooks:
            req = h.before_run(context)
            if req is None:
                continue
            if req.fetches is not None:
                actual[h] = req.fetches
            if req.feed_dict:
                _check_disjoint(hook_feeds, req.feed_dict, "Same tensor is fed by two hooks.")
                hook_feeds.update(req.feed_dict)
            if req.options is not None:
                trace = max(trace, getattr(req.options, "trace_level", 0) or 0)
        if hook_feeds:
            _check_disjoint(feeds, hook_feeds, "Same tensor is fed by a SessionRunHook and user.")
            feeds.update(hook_feeds)
        run_options = options
        if trace and getattr(options, "trace_level", 0) != trace:
            run_options = RunOptions(trace_level=trace)
        if trace and run_metadata is None:
            run_metadata = RunMetadata()
        try:
            outputs = sess.run(actual, feed_dict=feeds or None, options=run_options, run_metadata=run_metadata)
        except OutOfRangeError:
            self._should_stop = True  # the input ran out: nothing more to run
            raise
        for h in self._hooks:
            h.after_run(context, SessionRunValues(results=outputs.get(h), options=run_options,
                                                  run_metadata=run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return outputs["caller"]

    def run_step_fn(self, step_fn: Callable[[StepContext], Any]) -> Any:
        """Calls step_fn(StepContext) once; request_stop() inside it ends it and the loop."""
        sess = self._check_open()
        try:
            return step_fn(StepContext(sess, self.run))
        except _StopSignal:
            self._should_stop = True
            return None

    def should_stop(self) -> bool:
        """True once a hook or step function requested a stop, the input ran out, or it is closed."""
        return self._sess is None or self._should_stop

    def _check_open(self) -> Session:
        if self._sess is None:
            raise RuntimeError("Session is already closed.")
        return self._sess

    # -- closing ------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Calls every hook's end() and closes the session (a second close does nothing)."""
        self._close_internal(None)

    def _close_internal(self, exception_type: Any) -> None:
        if self._sess is None:
            return
        try:
            if exception_type is None:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        sess, self._sess = self._sess, None
        if sess is not None:
            sess.close()  # closes the queues: their runner threads end
        for t in self._threads:
            t.join(self._grace)
        self._threads = []
        if not self._graph_was_finalized:
            # as TensorFlow: a graph finalized only for this session can grow again afterwards
            self.graph._finalized = False

    def __enter__(self) -> "MonitoredSession":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc_type is not None and issubclass(exc_type, (OutOfRangeError, StopIteration)):
            exc_type = None  # the input ran out: a normal end
        self._close_internal(exc_type)
        return exc_type is None


def _check_disjoint(a: dict, b: dict, message: str) -> None:
    both = [k for k in b if k in a]
    if both:
        names = [getattr(k, "name", k) for k in both]
        raise RuntimeError(f"{message} Conflict(s): {names}")


class SingularMonitoredSession(MonitoredSession):
    """A MonitoredSession for one process with a chief session creator; raw_session() gives
    the Session it wraps."""

    def __init__(self, hooks: Optional[Sequence[Any]] = None, scaffold: Optional[Scaffold] = None,
                 master: str = "", config: Any = None, checkpoint_dir: Optional[str] = None,
                 stop_grace_period_secs: float = 120, checkpoint_filename_with_path: Optional[str] = None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config, checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self) -> Session:
        return self._check_open()


def MonitoredTrainingSession(master: str = "", is_chief: bool = True,  # noqa: N802 (TensorFlow's name)
                             checkpoint_dir: Optional[str] = None,
                             scaffold: Optional[Scaffold] = None, hooks: Optional[Sequence[Any]] = None,
                             chief_only_hooks: Optional[Sequence[Any]] = None,
                             save_checkpoint_secs: Any = USE_DEFAULT, save_summaries_steps: Any = USE_DEFAULT,
                             save_summaries_secs: Any = USE_DEFAULT, config: Any = None,
                             stop_grace_period_secs: float = 120, log_step_count_steps: Optional[int] = 100,
                             max_wait_secs: float = 7200, save_checkpoint_steps: Any = USE_DEFAULT,
                             summary_dir: Optional[str] = None) -> MonitoredSession:
    """A MonitoredSession set up for training, as TensorFlow 1.x's.

    On the chief (is_chief, rank 0 in collflow's jobs): with checkpoint_dir, restore from it
    and save every save_checkpoint_secs (default 600) or save_checkpoint_steps; with
    summary_dir (default checkpoint_dir), the scaffold's summary op every
    save_summaries_steps (default 100) or save_summaries_secs, and the training speed every
    log_step_count_steps.  chief_only_hooks run on the chief only, hooks everywhere.
    """
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator: SessionCreator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                                       max_wait_secs=max_wait_secs, checkpoint_dir=checkpoint_dir)
        return MonitoredSession(creator, hooks=list(hooks or []), stop_grace_period_secs=stop_grace_period_secs)
    all_hooks: List[Any] = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config, checkpoint_dir=checkpoint_dir)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                              save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0)
                           or (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                             save_secs=save_checkpoint_secs, scaffold=scaffold))
    all_hooks.extend(hooks or [])
    return MonitoredSession(creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs)
