"""tf.train.Supervisor and tf.train.SessionManager: TF1's older training-loop helpers.

    sv = tf.train.Supervisor(logdir="/tmp/run", save_model_secs=60)
    with sv.managed_session() as sess:          # restored from logdir's checkpoint, or initialized
        while not sv.should_stop():
            sess.run(train_op)

As TF1's: the Supervisor finds (or makes) the init op, the ready op (uninitialized
variables), the local init op (local variables and tables), a Saver, the merged summaries
and the global step, then finalizes the graph; the chief restores the newest checkpoint in
`logdir` or runs the init op and `init_fn`, checks the model is ready, and starts the
standard services: a checkpoint every `save_model_secs`, summaries every
`save_summaries_secs`, the global steps per second, and the queue runners.  An exception in
a `managed_session` block stops the services and is re-raised when they are joined
(OutOfRangeError counts as a normal end).  Workers that are not chief wait until the model
is ready.  It lives in the input-pipeline layer, beside the Coordinator its threads share.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.variables import global_variables, global_variables_initializer, report_uninitialized_variables
from ..platform import tf_logging as logging
from ..runtime.session import Session
from ..summary.proto import SessionLog
from ..summary.summary_ops import merge_all
from ..summary.writer import FileWriter
from ..train.checkpoint_utils import get_checkpoint_state
from ..train.global_step import get_global_step
from ..train.global_step import global_step as _read_step
from ..train.monitored_session import SAVERS, SUMMARY_OP, Scaffold
from ..train.saver import Saver
from .pipeline import Coordinator, start_queue_runners

__all__ = ["Supervisor", "SessionManager", "LooperThread", "basic_train_loop"]

_READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"


class LooperThread(threading.Thread):
    """Runs `target` every `timer_interval_secs` (first at once) until the coordinator stops
    (tf.train.LooperThread); registered with the coordinator, so its error stops the others."""

    def __init__(self, coord: Coordinator, timer_interval_secs: Optional[float], target: Optional[Callable] = None,
                 args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None):
        super().__init__(daemon=True)
        if (target is None) == (type(self).run_loop is LooperThread.run_loop):
            raise ValueError("LooperThread takes a target, or is subclassed with run_loop(), not both")
        self._coord = coord
        self._interval = timer_interval_secs
        self._target, self._args, self._kwargs = target, tuple(args or ()), dict(kwargs or {})
        coord.register_thread(self)

    @staticmethod
    def loop(coord: Coordinator, timer_interval_secs: Optional[float], target: Callable,
             args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None) -> "LooperThread":
        """A started LooperThread running target(*args, **kwargs)."""
        t = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        t.start()
        return t

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._interval is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                due = time.monotonic()
                while not self._coord.wait_for_stop(max(0.0, due - time.monotonic())):
                    due += self._interval
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once when the thread starts."""

    def stop_loop(self) -> None:
        """Called once when the loop ends."""

    def run_loop(self) -> None:
        if self._target is not None:
            self._target(*self._args, **self._kwargs)


class SessionManager:
    """Creates Sessions whose model is ready: restored from a checkpoint, or initialized
    (tf.train.SessionManager).  ready_op: a string vector naming what is not ready (e.g.
    report_uninitialized_variables()), empty when the model is ready."""

    def __init__(self, local_init_op: Any = None, ready_op: Any = None, ready_for_local_init_op: Any = None,
                 graph: Optional[_g.Graph] = None, recovery_wait_secs: float = 30, local_init_run_options: Any = None,
                 local_init_feed_dict: Optional[dict] = None):
        self._graph = graph or _g.get_default_graph()
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_feed_dict = local_init_feed_dict
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a local_init_op, "
                             f"ready_for_local_init_op [{ready_for_local_init_op}]")

    def _session(self, config: Any) -> Session:
        return Session(graph=self._graph, config=config)

    def _restore(self, sess: Session, saver: Any, checkpoint_dir: Optional[str], checkpoint_filename_with_path:
                 Optional[str], wait_for_checkpoint: bool, max_wait_secs: float) -> bool:
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return True
        if not saver or not checkpoint_dir:
            return False
        waited = 0.0
        state = get_checkpoint_state(checkpoint_dir)
        while not (state and state.model_checkpoint_path):
            if not wait_for_checkpoint or waited >= max_wait_secs:
                return False
            pause = min(self._recovery_wait_secs, max(0.0, max_wait_secs - waited))
            time.sleep(pause)
            waited += pause
            state = get_checkpoint_state(checkpoint_dir)
        saver.restore(sess, state.model_checkpoint_path)
        if hasattr(saver, "recover_last_checkpoints"):
            saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))
        return True

    def _not_ready(self, sess: Session, op: Any) -> Optional[str]:
        """None if `op` reports nothing; else what it reports (or the error it raised)."""
        if op is None:
            return None
        try:
            names = np.asarray(sess.run(op)).reshape(-1)
        except Exception as e:  # noqa: BLE001 - an op that cannot run means not ready; say why
            return f"{type(e).__name__}: {e}"
        if names.size == 0:
            return None
        return "Variables not initialized: " + ", ".join(_dt.string_text(n) for n in names)

    def _local_init(self, sess: Session) -> Optional[str]:
        if self._local_init_op is None:
            return None
        waiting = self._not_ready(sess, self._ready_for_local_init_op)
        if waiting is not None:
            return waiting
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict)
        return None

    def prepare_session(self, master: str = "", init_op: Any = None, saver: Any = None,
                        checkpoint_dir: Optional[str] = None, wait_for_checkpoint: bool = False,
                        max_wait_secs: float = 7200, config: Any = None, init_feed_dict: Optional[dict] = None,
                        init_fn: Optional[Callable[[Any], None]] = None,
                        checkpoint_filename_with_path: Optional[str] = None) -> Session:
        """A Session restored from the newest checkpoint of checkpoint_dir (or the given file),
        else initialized by init_op (fed init_feed_dict) and init_fn; then the local init op.
        RuntimeError if the model is still not ready, naming what is missing."""
        sess = self._session(config)
        try:
            if not self._restore(sess, saver, checkpoint_dir, checkpoint_filename_with_path, wait_for_checkpoint,
                                 max_wait_secs):
                if init_op is None and not init_fn and self._local_init_op is None:
                    raise RuntimeError("Model is not initialized and no init_op or init_fn or local_init_op was "
                                       "given")
                if init_op is not None:
                    sess.run(init_op, feed_dict=init_feed_dict)
                if init_fn:
                    init_fn(sess)
            msg = self._local_init(sess)
            if msg is not None:
                raise RuntimeError(f"Init operations did not make model ready for local_init.  Init op: "
                                   f"{_name(init_op)}, init fn: {init_fn}, error: {msg}")
            msg = self._not_ready(sess, self._ready_op)
            if msg is not None:
                raise RuntimeError(f"Init operations did not make model ready.  Init op: {_name(init_op)}, init fn: "
                                   f"{init_fn}, local_init_op: {_name(self._local_init_op)}, error: {msg}")
        except BaseException:
            sess.close()
            raise
        return sess

    def recover_session(self, master: str = "", saver: Any = None, checkpoint_dir: Optional[str] = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200, config: Any = None,
                        checkpoint_filename_with_path: Optional[str] = None) -> "tuple[Session, bool]":
        """(a Session, whether it is ready): restored from a checkpoint if there is one, the
        local init op run; not ready when nothing was restored and no one initialized it."""
        sess = self._session(config)
        restored = self._restore(sess, saver, checkpoint_dir, checkpoint_filename_with_path, wait_for_checkpoint,
                                 max_wait_secs)
        if not restored:
            return sess, False
        if self._local_init(sess) is not None:
            return sess, False
        return sess, self._not_ready(sess, self._ready_op) is None

    def wait_for_session(self, master: str = "", config: Any = None, max_wait_secs: float = float("inf")) -> Session:
        """A Session once the model is ready (another process, the chief, initializes it):
        polls every recovery_wait_secs; DeadlineExceededError after max_wait_secs."""
        from ..errors import DeadlineExceededError
        start = time.monotonic()
        while True:
            sess = self._session(config)
            if self._local_init(sess) is None and self._not_ready(sess, self._ready_op) is None:
                return sess
            sess.close()
            left = max_wait_secs - (time.monotonic() - start)
            if left <= 0:
                raise DeadlineExceededError(f"Session was not ready after waiting {max_wait_secs} secs.")
            logging.info("Waiting for model to be ready.")
            time.sleep(min(self._recovery_wait_secs, left))


def _name(op: Any) -> str:
    return getattr(op, "name", str(op))


class Supervisor:
    """TF1's training supervisor: a ready Session (restored or initialized), periodic
    checkpoints and summaries, queue runners and a shared Coordinator."""

    USE_DEFAULT = 0

    def __init__(self, graph: Optional[_g.Graph] = None, ready_op: Any = USE_DEFAULT,
                 ready_for_local_init_op: Any = USE_DEFAULT, is_chief: bool = True, init_op: Any = USE_DEFAULT,
                 init_feed_dict: Optional[dict] = None, local_init_op: Any = USE_DEFAULT, logdir: Optional[str] = None,
                 summary_op: Any = USE_DEFAULT, saver: Any = USE_DEFAULT, global_step: Any = USE_DEFAULT,
                 save_summaries_secs: float = 120, save_model_secs: float = 600, recovery_wait_secs: float = 30,
                 stop_grace_secs: float = 120, checkpoint_basename: str = "model.ckpt",
                 session_manager: Optional[SessionManager] = None, summary_writer: Any = USE_DEFAULT,
                 init_fn: Optional[Callable[[Any], None]] = None, local_init_run_options: Any = None):
        self._graph = graph or _g.get_default_graph()
        d = Supervisor.USE_DEFAULT
        with self._graph.as_default():
            self._ready_op = self._default(ready_op, GraphKeys.READY_OP, lambda: report_uninitialized_variables())
            self._ready_for_local_init_op = self._default(
                ready_for_local_init_op, _READY_FOR_LOCAL_INIT_OP,
                lambda: report_uninitialized_variables(global_variables()))
            self._init_op = self._default(init_op, GraphKeys.INIT_OP, global_variables_initializer)
            self._local_init_op = self._default(local_init_op, GraphKeys.LOCAL_INIT_OP,
                                                Scaffold.default_local_init_op)
            self._summary_op = self._default(summary_op, SUMMARY_OP, merge_all)
            self._saver = self._default(saver, SAVERS, lambda: Saver() if global_variables() else None)
            self._global_step = get_global_step(self._graph) if global_step is d else global_step
        self._graph.finalize()  # as TF1's: the graph is complete once supervised
        self._is_chief = is_chief
        self._init_feed_dict = init_feed_dict
        self._init_fn = init_fn
        self._logdir = logdir
        self._save_summaries_secs = save_summaries_secs
        self._save_model_secs = save_model_secs
        self._stop_grace_secs = stop_grace_secs
        self._save_path = os.path.join(logdir, checkpoint_basename) if logdir else None
        self._coord = Coordinator()
        self._started_threads: List[threading.Thread] = []
        self._owns_writer = summary_writer is d
        self._summary_writer = (FileWriter(logdir) if is_chief and logdir else None) if summary_writer is d \
            else summary_writer
        self._graph_written = False
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op if self._local_init_op is not None else None,
            graph=self._graph, recovery_wait_secs=recovery_wait_secs)

    def _default(self, given: Any, key: str, make: Callable[[], Any]) -> Any:
        """The op the caller gave; USE_DEFAULT: the graph's collection's first, else made (and kept there)."""
        if given is not Supervisor.USE_DEFAULT:
            return given
        found = self._graph.get_collection(key)
        if found:
            return found[0]
        op = make()
        if op is not None:
            self._graph.add_to_collection(key, op)
        return op

    # -- what it found or made -------------------------------------------------------------------
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    is_chief = property(lambda self: self._is_chief)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    # -- sessions ----------------------------------------------------------------------------------
    def prepare_or_wait_for_session(self, master: str = "", config: Any = None, wait_for_checkpoint: bool = False,
                                    max_wait_secs: float = 7200, start_standard_services: bool = True) -> Session:
        """The chief: a Session restored from logdir's newest checkpoint or initialized, with
        the standard services started.  Other workers: in TF, a Session once the chief made
        the shared model ready; in collflow every rank holds its own variables, so a worker
        restores or initializes its own as the chief does (the services stay the chief's;
        synchronous and cluster train ops start every replica from rank 0's values).  Queue
        runners are started either way (with start_standard_services)."""
        if self._coord.joined:
            self._coord.clear_stop()
        if self._summary_writer is not None and self._owns_writer:
            self._summary_writer.reopen()
        sess = self._session_manager.prepare_session(
            master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config,
            init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
        if self._is_chief:
            self._write_graph()
            if start_standard_services:
                logging.info("Starting standard services.")
                self.start_standard_services(sess)
        if start_standard_services:
            logging.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(self, master: str = "", config: Any = None, start_standard_services: bool = True,
                        close_summary_writer: bool = True) -> Iterator[Session]:
        """`with sv.managed_session() as sess:` a ready Session; on leaving, the services stop
        and their threads are joined (an exception from the block, or one a thread raised, is
        re-raised then; OutOfRangeError ends quietly), and the Session closes."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(master=master, config=config,
                                                    start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - recorded by the coordinator, re-raised by stop()
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    with contextlib.suppress(Exception):
                        sess.close()

    def _write_graph(self) -> None:
        if self._summary_writer is not None and not self._graph_written:
            self._summary_writer.add_graph(self._graph)
            self._graph_written = True

    # -- services ----------------------------------------------------------------------------------
    def start_standard_services(self, sess: Session) -> List[threading.Thread]:
        """Starts (the chief only) the checkpoint, summary and steps-per-second threads."""
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because only chief "
                               "supervisors can write events.")
        if not self._logdir:
            logging.warning("Standard services need a 'logdir' passed to the SessionManager")
            return []
        if self._global_step is not None and self._summary_writer is not None:
            step = _read_step(sess, self._global_step)
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), step)
        threads: List[threading.Thread] = []
        if self._save_summaries_secs and self._summary_writer is not None:
            if self._summary_op is not None:
                threads.append(LooperThread(self._coord, self._save_summaries_secs, self._write_summaries, (sess,)))
            if self._global_step is not None:
                threads.append(_StepCounter(self, sess))
        if self._saver is not None and self._save_model_secs:
            threads.append(LooperThread(self._coord, self._save_model_secs, self._checkpoint, (sess,)))
        for t in threads:
            t.start()
        self._started_threads.extend(threads)
        return threads

    def _write_summaries(self, sess: Session) -> None:
        if self._global_step is not None:
            summary, step = sess.run([self._summary_op, self._global_step])
        else:
            summary, step = sess.run(self._summary_op), None
        if self._summary_writer is not None:
            self._summary_writer.add_summary(summary, None if step is None else int(step))

    def _checkpoint(self, sess: Session) -> None:
        logging.info("Saving checkpoint to path %s", self._save_path)
        self._saver.save(sess, self._save_path, global_step=self._global_step)
        if self._summary_writer is not None and self._global_step is not None:
            step = _read_step(sess, self._global_step)
            self._summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step)

    def start_queue_runners(self, sess: Session, queue_runners: Optional[Sequence[Any]] = None) -> List[Any]:
        """Starts the queue runners (default: the graph's QUEUE_RUNNERS) on the Supervisor's coordinator."""
        if queue_runners is None:
            threads = start_queue_runners(sess, coord=self._coord)
        else:
            threads = []
            for qr in queue_runners:
                threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        self._started_threads.extend(threads)
        return threads

    def loop(self, timer_interval_secs: Optional[float], target: Callable, args: Sequence[Any] = (),
             kwargs: Optional[Dict[str, Any]] = None) -> LooperThread:
        """A started thread calling target(*args, **kwargs) every timer_interval_secs until stop."""
        t = LooperThread.loop(self._coord, timer_interval_secs, target, args=args, kwargs=kwargs)
        self._started_threads.append(t)
        return t

    def summary_computed(self, sess: Session, summary: Any, global_step: Optional[int] = None) -> None:
        """Writes a summary computed elsewhere (at the global step, read from sess if not given)."""
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = _read_step(sess, self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    # -- stopping ----------------------------------------------------------------------------------
    def request_stop(self, ex: Any = None) -> None:
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def stop_on_exception(self) -> Any:
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def stop(self, threads: Optional[Sequence[threading.Thread]] = None, close_summary_writer: bool = True,
             ignore_live_threads: bool = False) -> None:
        """Stops the services and joins their threads (and `threads`); re-raises an error one
        of them, or the managed block, recorded.  The Session stays open."""
        self._coord.request_stop()
        try:
            self._coord.join(list(self._started_threads) + list(threads or []),
                             stop_grace_period_secs=self._stop_grace_secs, ignore_live_threads=ignore_live_threads)
        finally:
            self._started_threads = []
            if close_summary_writer and self._summary_writer is not None:
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_written = False


class _StepCounter(LooperThread):
    """Writes "<global step>/sec": the steps per second since its last look."""

    def __init__(self, sv: Supervisor, sess: Session):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess
        self._last: Optional[tuple] = None
        self._tag = f"{sv.global_step.op.name}/sec"

    def start_loop(self) -> None:
        self._last = (time.time(), _read_step(self._sess, self._sv.global_step))

    def run_loop(self) -> None:
        now, step = time.time(), _read_step(self._sess, self._sv.global_step)
        then, before = self._last or (now, step)
        self._last = (now, step)
        if now > then and self._sv.summary_writer is not None:
            from ..summary.proto import Summary
            rate = (step - before) / (now - then)
            self._sv.summary_writer.add_summary(Summary(value=[Summary.Value(tag=self._tag, simple_value=rate)]),
                                                step)


def basic_train_loop(supervisor: Supervisor, train_step_fn: Callable[..., Any], args: Optional[Sequence[Any]] = None,
                     kwargs: Optional[Dict[str, Any]] = None, master: str = "") -> None:
    """train_step_fn(sess, *args, **kwargs) until the supervisor stops, in its managed session;
    an AbortedError (a lost peer) starts a new session and goes on (tf.train.basic_train_loop)."""
    from ..errors import AbortedError
    while True:
        try:
            with supervisor.managed_session(master) as sess:
                while not supervisor.should_stop():
                    train_step_fn(sess, *(args or ()), **(kwargs or {}))
            return
        except AbortedError:
            continue
