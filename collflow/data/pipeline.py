"""Input pipelines from threads: Coordinator, QueueRunner, FeedingQueueRunner.

TensorFlow 1.x style: producer threads run enqueue ops into a cf.FIFOQueue while the
training loop dequeues batches; the queue's capacity gives back-pressure.

    q = cf.FIFOQueue(64, [cf.float32, cf.int32], shapes=[(784,), ()])
    runner = FeedingQueueRunner(q, lambda: my_batches())   # yields (x_batch, y_batch)
    x, y = q.dequeue_many(32)
    ...
    coord = Coordinator()
    threads = runner.create_threads(sess, coord, start=True)
    try:
        while not coord.should_stop():
            sess.run(train_op)
    except cf.errors.OutOfRangeError:
        pass                  # the source is exhausted and the queue drained
    finally:
        coord.request_stop()
    coord.join(threads)       # re-raises a producer's exception here

When the source is exhausted the last producer closes the queue, so the consumer drains
it and then gets OutOfRangeError.  When anyone requests a stop (or a producer fails) the
queue is closed with `cancel_pending_enqueues`, which wakes producers blocked on a full
queue and consumers blocked on an empty one: nobody hangs.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, Type, Union

from .. import errors as _errors
from ..graph import graph as _g
from ..graph.graph import GraphKeys

__all__ = ["Coordinator", "QueueRunner", "FeedingQueueRunner", "add_queue_runner", "start_queue_runners"]


class Coordinator:
    """Coordinates the stop of a set of threads and carries their first error to `join`.

    clean_stop_exception_types: exceptions that mean "done", not "failed" (default:
    OutOfRangeError); passing one to `request_stop` stops without an error.
    """

    def __init__(self, clean_stop_exception_types: Optional[Sequence[Type[BaseException]]] = None):
        self._clean = tuple(clean_stop_exception_types) if clean_stop_exception_types is not None \
            else (_errors.OutOfRangeError,)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._exc_info: Optional[Tuple[Any, BaseException, Any]] = None
        self._threads: List[threading.Thread] = []
        self._joined = False

    def request_stop(self, ex: Any = None) -> None:
        """Asks every thread to stop; `ex` (an exception or exc_info) is re-raised by join()."""
        with self._lock:
            if ex is not None and self._exc_info is None:
                info = ex if isinstance(ex, tuple) else (type(ex), ex, ex.__traceback__)
                if not issubclass(info[0], self._clean):
                    self._exc_info = info
            self._stop.set()

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def wait_for_stop(self, timeout: Optional[float] = None) -> bool:
        """Waits until a stop is requested (True) or `timeout` seconds pass (False)."""
        return self._stop.wait(timeout)

    def clear_stop(self) -> None:
        """Allows the coordinator to be reused (clears the stop and the recorded error)."""
        with self._lock:
            self._stop.clear()
            self._exc_info = None
            self._joined = False

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """`with coord.stop_on_exception():` turns an exception in the block into request_stop(ex)."""
        try:
            yield
        except BaseException:  # noqa: BLE001 - recorded and re-raised by join()
            self.request_stop(sys.exc_info())

    def register_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            if thread not in self._threads:
                self._threads.append(thread)

    def raise_requested_exception(self) -> None:
        """Re-raises the exception passed to request_stop, if any."""
        with self._lock:
            info = self._exc_info
        if info is not None:
            raise info[1].with_traceback(info[2])

    @property
    def joined(self) -> bool:
        return self._joined

    def join(self, threads: Optional[Iterable[threading.Thread]] = None, stop_grace_period_secs: float = 120.0,
             ignore_live_threads: bool = False) -> None:
        """Waits for the threads (registered ones plus `threads`) and re-raises a recorded error.

        Waits until they all finish or a stop is requested; after a stop they get
        `stop_grace_period_secs` to finish, then RuntimeError names the ones still running
        (unless `ignore_live_threads`).
        """
        with self._lock:
            ts = list(self._threads)
        for t in threads or ():
            if t not in ts:
                ts.append(t)
        while any(t.is_alive() for t in ts) and not self.wait_for_stop(0.05):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        for t in ts:
            left = deadline - time.monotonic()
            if left > 0:
                t.join(left)
        self._joined = True
        self.raise_requested_exception()
        alive = [t.name for t in ts if t.is_alive()]
        if alive and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running after "
                               f"{stop_grace_period_secs:g} s: {', '.join(alive)}")


def _session_gone(sess: Any, e: BaseException) -> bool:
    """True for the error Session.run raises once the session is closed."""
    return isinstance(e, RuntimeError) and getattr(sess, "_closed", False)


class QueueRunner:
    """Threads that run enqueue ops in a loop until the queue closes (TensorFlow's QueueRunner).

    One thread per op in `enqueue_ops`.  A thread ends at an error of
    `queue_closed_exception_types` (the queue was closed or the input ran out); the last
    one to end runs `close_op`.  Any other error stops the coordinator, which then runs
    `cancel_op` so that nobody stays blocked on the queue.
    """

    def __init__(self, queue: Any, enqueue_ops: Sequence[Any], close_op: Any = None, cancel_op: Any = None,
                 queue_closed_exception_types: Sequence[Type[BaseException]] = (
                     _errors.OutOfRangeError, _errors.CancelledError)):
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        if not self._enqueue_ops:
            raise ValueError("QueueRunner needs at least one enqueue op")
        # built now: the graph may be finalized by the time threads start
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        self._closed_types = tuple(queue_closed_exception_types)
        self._lock = threading.Lock()
        self._runs_left = 0
        self._exceptions: List[BaseException] = []

    @property
    def queue(self) -> Any:
        return self._queue

    @property
    def enqueue_ops(self) -> List[Any]:
        return list(self._enqueue_ops)

    @property
    def close_op(self) -> Any:
        return self._close_op

    @property
    def cancel_op(self) -> Any:
        return self._cancel_op

    @property
    def exceptions_raised(self) -> List[BaseException]:
        """Errors the threads hit (also passed to the coordinator)."""
        return list(self._exceptions)

    @property
    def name(self) -> str:
        return getattr(self._queue, "name", "queue")

    # -- subclasses change what one step feeds ----------------------------------------------
    def _prepare(self) -> None:
        """Called once per create_threads, before the threads start."""

    def _next_feed(self, index: int) -> Optional[dict]:
        """The feed_dict for thread `index`'s next enqueue; raise StopIteration when done."""
        return None

    # -- threads ------------------------------------------------------------------------------
    def _run(self, sess: Any, coord: Optional[Coordinator], index: int) -> None:
        op = self._enqueue_ops[index]
        failed = False
        try:
            while coord is None or not coord.should_stop():
                try:
                    feed = self._next_feed(index)
                except StopIteration:
                    break
                sess.run(op, feed_dict=feed)
        except self._closed_types:
            pass  # the queue was closed: a normal end
        except BaseException as e:  # noqa: BLE001 - handed to the coordinator
            if _session_gone(sess, e):
                return
            failed = True
            with self._lock:
                self._exceptions.append(e)
            if coord is not None:
                coord.request_stop(e)  # the close-on-stop thread then cancels the queue
            else:
                # nobody else will: close the queue so no consumer waits forever, then fail loudly
                self._run_quietly(sess, self._cancel_op)
                raise
        finally:
            with self._lock:
                self._runs_left -= 1
                last = self._runs_left == 0
            if last and not failed:
                self._run_quietly(sess, self._close_op)

    def _run_quietly(self, sess: Any, op: Any) -> None:
        try:
            sess.run(op)
        except Exception:  # the session may be closing: closing the queue is then moot
            pass

    def _close_on_stop(self, sess: Any, coord: Coordinator, workers: List[threading.Thread]) -> None:
        while not coord.wait_for_stop(0.05):
            if not any(t.is_alive() for t in workers):
                return  # finished on their own; nothing to cancel
        self._run_quietly(sess, self._cancel_op)

    def create_threads(self, sess: Any, coord: Optional[Coordinator] = None, daemon: bool = False,
                       start: bool = False) -> List[threading.Thread]:
        """Creates (and optionally starts) the threads for `sess`, registered with `coord`."""
        self._prepare()
        with self._lock:
            self._runs_left = len(self._enqueue_ops)
            self._exceptions = []
        workers = [threading.Thread(target=self._run, args=(sess, coord, i), daemon=daemon,
                                    name=f"QueueRunner[{self.name}]-{i}") for i in range(len(self._enqueue_ops))]
        threads = list(workers)
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, coord, workers), daemon=True,
                                            name=f"QueueRunner[{self.name}]-close_on_stop"))
            for t in threads:
                coord.register_thread(t)
        if start:
            for t in threads:
                t.start()
        return threads


Source = Union[Iterable[Any], Callable[[], Iterable[Any]]]


class FeedingQueueRunner(QueueRunner):
    """Producer threads that feed batches from a Python generator into a queue.

    source: an iterable of items, or a callable returning one (called anew by every
      create_threads, so a runner can serve several sessions).  An item holds one NumPy
      array per placeholder: a tuple/list in placeholder order, a dict keyed by placeholder
      (or by the queue's component names), or a bare array when there is one placeholder.
    enqueue_op / placeholders: the op each step runs and the placeholders an item feeds.
      When omitted, the runner makes placeholders from the queue's dtypes and shapes and
      the enqueue op (enqueue_many if `enqueue_many`, else enqueue) itself.
    num_threads: threads pulling from the one source (items are taken under a lock, so a
      plain generator is safe; the order of enqueues across threads is then not fixed).
    """

    def __init__(self, queue: Any, source: Source, enqueue_op: Any = None, placeholders: Optional[Sequence[Any]] = None,
                 enqueue_many: bool = True, num_threads: int = 1):
        if num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        if (enqueue_op is None) != (placeholders is None):
            raise ValueError("pass both enqueue_op and placeholders, or neither (the runner then builds them)")
        if enqueue_op is None:
            g = queue.graph
            with g.as_default(), g.name_scope(queue.name.rsplit("/", 1)[-1] + "_feed"):
                phs = []
                for i, (dt, shp) in enumerate(zip(queue.dtypes, queue.shapes)):
                    if enqueue_many:
                        shp = None if shp.dims is None else [None] + list(shp.dims)
                    label = queue.names[i] if queue.names else f"component_{i}"
                    phs.append(_placeholder(dt, shp, label))
                vals: Any = dict(zip(queue.names, phs)) if queue.names else phs
                enqueue_op = queue.enqueue_many(vals) if enqueue_many else queue.enqueue(vals)
            placeholders = phs
        self._placeholders = list(placeholders)
        self._source = source
        self._iter: Optional[Iterator[Any]] = None
        self._src_lock = threading.Lock()
        self._names = queue.names
        super().__init__(queue, [enqueue_op] * num_threads)

    @property
    def placeholders(self) -> List[Any]:
        return list(self._placeholders)

    def _prepare(self) -> None:
        src = self._source() if callable(self._source) else self._source
        self._iter = iter(src)

    def _next_feed(self, index: int) -> dict:
        with self._src_lock:
            item = next(self._iter)  # type: ignore[arg-type]
        return self._feed_dict(item)

    def _feed_dict(self, item: Any) -> dict:
        phs = self._placeholders
        if isinstance(item, dict):
            if self._names and all(k in self._names for k in item):
                return {phs[self._names.index(k)]: v for k, v in item.items()}
            return dict(item)
        if len(phs) == 1 and not isinstance(item, (list, tuple)):
            return {phs[0]: item}
        if not isinstance(item, (list, tuple)) or len(item) != len(phs):
            got = f"{len(item)} values" if isinstance(item, (list, tuple)) else type(item).__name__
            raise _errors.InvalidArgumentError(
                f"FeedingQueueRunner for {self.name!r}: each item of the source must hold {len(phs)} arrays "
                f"({', '.join(p.name for p in phs)}); got {got}")
        return dict(zip(phs, item))


def _placeholder(dtype: Any, shape: Any, name: str) -> Any:
    from ..graph.ops.constant_op import placeholder
    return placeholder(dtype, shape, name=name)


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """Adds `qr` to the graph collection that start_queue_runners starts."""
    _g.get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess: Any = None, coord: Optional[Coordinator] = None, daemon: bool = True,
                        start: bool = True, collection: str = GraphKeys.QUEUE_RUNNERS) -> List[threading.Thread]:
    """Starts the threads of every QueueRunner in `collection` of the session's graph."""
    if sess is None:
        from ..runtime.session import get_default_session
        sess = get_default_session()
        if sess is None:
            raise ValueError("start_queue_runners needs a session: pass sess= or use `with sess.as_default():`")
    threads: List[threading.Thread] = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
