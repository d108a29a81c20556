"""FIFOQueue: order, batching, back-pressure, closing, waking blocked ops, validation;
and the thread-fed input pipeline (Coordinator, QueueRunner, FeedingQueueRunner)."""
import os
import sys
import threading
import time

import numpy as np
import pytest

import collflow as cf
from collflow.data.pipeline import (Coordinator, FeedingQueueRunner, QueueRunner, add_queue_runner,
                                    start_queue_runners)

HERE = os.path.basename(__file__)


class Bg:
    """Runs fn() on a thread and keeps its result or exception."""

    def __init__(self, fn):
        self.result = self.error = None
        self.t = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self.t.start()

    def _run(self, fn):
        try:
            self.result = fn()
        except BaseException as e:  # noqa: BLE001
            self.error = e

    def join(self, timeout=5.0):
        self.t.join(timeout)
        assert not self.t.is_alive(), "background run did not finish"
        return self

    def blocked(self, wait=0.15):
        time.sleep(wait)
        return self.t.is_alive()


def _q2(capacity=3, **kw):
    """A queue of (float32 (2,), int32 ()) with batch placeholders and its common ops."""
    g = cf.Graph()
    with g.as_default():
        q = cf.FIFOQueue(capacity, [cf.float32, cf.int32], shapes=[(2,), ()], **kw)
        x = cf.placeholder(cf.float32, (None, 2), name="x")
        y = cf.placeholder(cf.int32, (None,), name="y")
        ops = dict(q=q, x=x, y=y, enq_many=q.enqueue_many([x, y]), deq=q.dequeue(), size=q.size(),
                   close=q.close(), cancel=q.close(cancel_pending_enqueues=True), is_closed=q.is_closed())
    return g, ops


def _batch(lo, hi):
    return np.arange(2 * lo, 2 * hi, dtype=np.float32).reshape(-1, 2), np.arange(lo, hi, dtype=np.int32)


# -- basics ------------------------------------------------------------------------------------


def test_fifo_order_multi_component_size_and_close():
    g, o = _q2(capacity=5)
    with cf.Session(graph=g) as s:
        xb, yb = _batch(0, 4)
        s.run(o["enq_many"], {o["x"]: xb, o["y"]: yb})
        assert s.run(o["size"]) == 4 and s.run(o["size"]).dtype == np.int32
        for i in range(4):
            a, b = s.run(o["deq"])
            np.testing.assert_array_equal(a, xb[i])
            assert b.shape == () and b == i and isinstance(b, np.int32)
        assert not s.run(o["is_closed"])
        s.run(o["close"])
        assert s.run(o["is_closed"])
        with pytest.raises(cf.errors.OutOfRangeError, match="closed and has insufficient elements"):
            s.run(o["deq"])


def test_static_shapes_of_dequeues():
    g, o = _q2()
    q = o["q"]
    with g.as_default():
        a, b = q.dequeue_many(4)
        c, d = q.dequeue_up_to(4)
        n = cf.placeholder(cf.int32, (), name="n")
        e, _ = q.dequeue_many(n)
    assert a.shape == (4, 2) and b.shape == (4,) and a.dtype == cf.float32 and b.dtype == cf.int32
    assert c.shape == (None, 2) and d.shape == (None,)
    assert e.shape == (None, 2)
    x, y = o["deq"]
    assert x.shape == (2,) and y.shape == ()


def test_single_component_names_and_unknown_shapes():
    g = cf.Graph()
    with g.as_default():
        q1 = cf.FIFOQueue(4, cf.float32, shapes=(3,))  # bare dtype and shape for one component
        p = cf.placeholder(cf.float32, (3,))
        e1, d1 = q1.enqueue(p), q1.dequeue()
        qn = cf.FIFOQueue(4, [cf.float32, cf.int64], names=["img", "label"])  # no shapes
        pi, pl = cf.placeholder(cf.float32, None), cf.placeholder(cf.int64, None)
        en = qn.enqueue({"label": pl, "img": pi})
        dn = qn.dequeue()
        with pytest.raises(cf.errors.InvalidArgumentError, match=r"expected keys \['img', 'label'\]"):
            qn.enqueue({"img": pi})
        with pytest.raises(cf.errors.InvalidArgumentError, match="pass a dict"):
            qn.enqueue([pi, pl])
    assert isinstance(d1, cf.Tensor) and d1.shape == (3,)
    assert set(dn) == {"img", "label"} and dn["img"].shape.rank is None
    with cf.Session(graph=g) as s:
        s.run(e1, {p: [1, 2, 3]})
        np.testing.assert_array_equal(s.run(d1), [1, 2, 3])
        s.run(en, {pi: np.ones((2, 5), np.float32), pl: np.int64(7)})
        s.run(en, {pi: np.zeros((1,), np.float32), pl: np.int64(8)})  # any shape: none was declared
        out = s.run(dn)
        assert out["img"].shape == (2, 5) and out["label"] == 7
        assert s.run(dn)["img"].shape == (1,)


def test_dequeue_many_across_batches_and_up_to():
    g, o = _q2(capacity=100)
    q = o["q"]
    with g.as_default():
        dm = q.dequeue_many(3)
        du = q.dequeue_up_to(3)
    with cf.Session(graph=g) as s:
        for lo, hi in ((0, 2), (2, 3), (3, 7)):  # batches of 2, 1, 4
            s.run(o["enq_many"], dict(zip((o["x"], o["y"]), _batch(lo, hi))))
        a, b = s.run(dm)
        np.testing.assert_array_equal(b, [0, 1, 2])
        np.testing.assert_array_equal(a, _batch(0, 3)[0])
        a, b = s.run(dm)  # inside one enqueued batch: a view of it, still right
        np.testing.assert_array_equal(b, [3, 4, 5])
        s.run(o["close"])
        with pytest.raises(cf.errors.OutOfRangeError, match=r"requested 3, current size 1"):
            s.run(dm)
        assert s.run(o["size"]) == 1  # a failed dequeue_many loses nothing
        a, b = s.run(du)  # the last, smaller batch
        assert a.shape == (1, 2) and b.tolist() == [6]
        with pytest.raises(cf.errors.OutOfRangeError):
            s.run(du)


def test_dequeued_batches_do_not_alias_each_other_or_the_feed():
    g, o = _q2(capacity=10)
    with g.as_default():
        dm = o["q"].dequeue_many(2)
    with cf.Session(graph=g) as s:
        xb, yb = _batch(0, 4)
        s.run(o["enq_many"], {o["x"]: xb, o["y"]: yb})
        xb[:] = -1  # the producer reuses its buffer: the queue kept its own copy
        a1, _ = s.run(dm)
        a1[:] = 99  # the user scribbles on a result: the next batch is unaffected
        a2, _ = s.run(dm)
        np.testing.assert_array_equal(a2, [[4, 5], [6, 7]])


def test_enqueued_variable_value_is_a_snapshot():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.zeros(3, np.float32), name="v")
        q = cf.FIFOQueue(2, cf.float32, shapes=[(3,)])
        enq = q.enqueue(v)
        bump = v.assign_add(np.ones(3, np.float32))
        deq = q.dequeue()
    with cf.Session(graph=g) as s:
        s.run(v.initializer)
        s.run(enq)
        s.run(bump)
        np.testing.assert_array_equal(s.run(deq), [0, 0, 0])
        np.testing.assert_array_equal(s.run(v), [1, 1, 1])


def test_dequeue_many_larger_than_capacity_fills_from_a_producer():
    g, o = _q2(capacity=2)
    with g.as_default():
        dm = o["q"].dequeue_many(7)
    with cf.Session(graph=g) as s:
        prod = Bg(lambda: s.run(o["enq_many"], dict(zip((o["x"], o["y"]), _batch(0, 7)))))
        a, b = s.run(dm)
        prod.join()
        assert prod.error is None
        np.testing.assert_array_equal(b, np.arange(7))


def test_shared_name_shares_a_queue_and_sessions_do_not():
    g = cf.Graph()
    with g.as_default():
        q1 = cf.FIFOQueue(3, cf.float32, shapes=[()], shared_name="shared")
        q2 = cf.FIFOQueue(3, cf.float32, shapes=[()], shared_name="shared")
        q3 = cf.FIFOQueue(5, cf.float32, shapes=[()], shared_name="shared")
        p = cf.placeholder(cf.float32, ())
        e1, d2, s3 = q1.enqueue(p), q2.dequeue(), q3.size()
        own = cf.FIFOQueue(3, cf.float32, shapes=[()])
        own_size = own.size()
    assert q1.name != q2.name
    with cf.Session(graph=g) as s:
        s.run(e1, {p: 4.0})
        assert s.run(d2) == 4.0
        assert s.run(own_size) == 0
        with pytest.raises(cf.errors.InvalidArgumentError, match="shared queue 'shared' exists with capacity 3"):
            s.run(s3)
        s.run(e1, {p: 1.0})
    with cf.Session(graph=g) as s2:  # a new session has its own container
        assert s2.run(q1.size()) == 0


# -- back-pressure and closing -----------------------------------------------------------------


def test_enqueue_blocks_while_full_then_proceeds():
    g, o = _q2(capacity=3)
    with cf.Session(graph=g) as s:
        prod = Bg(lambda: s.run(o["enq_many"], dict(zip((o["x"], o["y"]), _batch(0, 5)))))
        assert prod.blocked(), "enqueue of 5 into a queue of capacity 3 must wait"
        assert s.run(o["size"]) == 3
        got = [int(s.run(o["deq"])[1]) for _ in range(5)]
        prod.join()
        assert got == [0, 1, 2, 3, 4] and prod.error is None


def test_enqueue_on_closed_queue_is_cancelled():
    g, o = _q2()
    with cf.Session(graph=g) as s:
        s.run(o["close"])
        with pytest.raises(cf.errors.CancelledError, match="is closed") as ei:
            s.run(o["enq_many"], dict(zip((o["x"], o["y"]), _batch(0, 1))))
        assert ei.value.op.type == "QueueEnqueueMany"


def test_close_lets_pending_enqueues_finish_and_cancel_pending_fails_them():
    g, o = _q2(capacity=1)
    feed = dict(zip((o["x"], o["y"]), _batch(0, 1)))
    with cf.Session(graph=g) as s:
        s.run(o["enq_many"], feed)
        pending = Bg(lambda: s.run(o["enq_many"], feed))
        assert pending.blocked()
        s.run(o["close"])
        assert pending.blocked(0.1), "a plain close leaves a pending enqueue waiting for room"
        s.run(o["deq"])
        pending.join()
        assert pending.error is None and s.run(o["size"]) == 1
    g, o = _q2(capacity=1)
    feed = dict(zip((o["x"], o["y"]), _batch(0, 1)))
    with cf.Session(graph=g) as s:
        s.run(o["enq_many"], feed)
        pending = Bg(lambda: s.run(o["enq_many"], feed))
        assert pending.blocked()
        s.run(o["cancel"])
        pending.join()
        assert isinstance(pending.error, cf.errors.CancelledError)
        assert "cancel_pending_enqueues" in str(pending.error)
        s.run(o["deq"])  # what was in the queue can still be dequeued


def test_close_wakes_blocked_dequeue_with_out_of_range():
    g, o = _q2()
    with cf.Session(graph=g) as s:
        cons = Bg(lambda: s.run(o["deq"]))
        assert cons.blocked()
        s.run(o["close"])
        cons.join()
        assert isinstance(cons.error, cf.errors.OutOfRangeError)


# -- a blocked op never hangs --------------------------------------------------------------------


def test_session_close_wakes_blocked_dequeue_and_enqueue():
    g, o = _q2(capacity=1)
    feed = dict(zip((o["x"], o["y"]), _batch(0, 1)))
    s = cf.Session(graph=g)
    s.run(o["enq_many"], feed)
    prod = Bg(lambda: s.run(o["enq_many"], feed))
    with g.as_default():
        q_other = cf.FIFOQueue(1, cf.float32)
        deq_other = q_other.dequeue()
    cons = Bg(lambda: s.run(deq_other))
    assert prod.blocked() and cons.blocked()
    s.close()
    prod.join(), cons.join()
    for r in (prod, cons):
        assert isinstance(r.error, cf.errors.CancelledError), r.error
        assert "session closed" in str(r.error)


def test_cancel_token_wakes_blocked_dequeue():
    g, o = _q2()
    with cf.Session(graph=g) as s:
        tok = cf.CancellationToken()
        cons = Bg(lambda: s.run(o["deq"], cancel_token=tok))
        assert cons.blocked()
        t0 = time.monotonic()
        tok.cancel("test says stop")
        cons.join()
        assert time.monotonic() - t0 < 1.0
        e = cons.error
        assert isinstance(e, cf.errors.CancelledError) and "test says stop" in str(e)
        assert e.op is not None and e.op.type == "QueueDequeue"
        assert f"{HERE}:" in str(e)  # names where the dequeue was created
        # the queue itself is fine: nothing was closed
        assert not s.run(o["is_closed"])


def test_session_cancel_wakes_blocked_enqueue():
    g, o = _q2(capacity=1)
    feed = dict(zip((o["x"], o["y"]), _batch(0, 1)))
    with cf.Session(graph=g) as s:
        s.run(o["enq_many"], feed)
        prod = Bg(lambda: s.run(o["enq_many"], feed))
        assert prod.blocked()
        s.cancel("stop the producers")
        prod.join()
        assert isinstance(prod.error, cf.errors.CancelledError) and "stop the producers" in str(prod.error)
        assert s.run(o["size"]) == 1


def test_operation_timeout_names_the_queue():
    g, o = _q2(capacity=1, name="inputs")
    feed = dict(zip((o["x"], o["y"]), _batch(0, 1)))
    with cf.Session(graph=g, config={"operation_timeout_in_ms": 100}) as s:
        t0 = time.monotonic()
        with pytest.raises(cf.errors.DeadlineExceededError, match=r"dequeue on FIFOQueue 'inputs' timed out "
                                                                  r"after 100 ms waiting for elements"):
            s.run(o["deq"])
        assert 0.09 < time.monotonic() - t0 < 2.0
        s.run(o["enq_many"], feed)
        with pytest.raises(cf.errors.DeadlineExceededError, match="waiting for free space"):
            s.run(o["enq_many"], feed)


def test_cancel_reaches_a_dequeue_inside_cond():
    """Graphs with control flow run on the dynamic executor; its token must reach the queue too."""
    g = cf.Graph()
    with g.as_default():
        q = cf.FIFOQueue(2, cf.float32, shapes=[(2,)])
        p = cf.placeholder(cf.bool_, (), name="p")
        d = cf.cond(p, lambda: q.dequeue(), lambda: cf.zeros((2,)))
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(d, {p: False}), [0, 0])
        tok = cf.CancellationToken()
        cons = Bg(lambda: s.run(d, {p: True}, cancel_token=tok))
        assert cons.blocked()
        tok.cancel("enough")
        cons.join()
        assert isinstance(cons.error, cf.errors.CancelledError) and "enough" in str(cons.error)


def test_dequeue_many_with_a_fed_batch_size():
    g, o = _q2(capacity=10)
    with g.as_default():
        n = cf.placeholder(cf.int32, (), name="n")
        a, b = o["q"].dequeue_many(n)
    with cf.Session(graph=g) as s:
        s.run(o["enq_many"], dict(zip((o["x"], o["y"]), _batch(0, 6))))
        assert s.run(b, {n: 4}).tolist() == [0, 1, 2, 3]
        assert s.run(a, {n: 0}).shape == (0, 2)
        assert s.run(b, {n: 2}).tolist() == [4, 5]
        with pytest.raises(cf.errors.InvalidArgumentError, match="n must be >= 0"):
            s.run(b, {n: -1})


# -- validation ----------------------------------------------------------------------------------


def test_graph_time_validation_names_queue_component_and_values():
    g, o = _q2(name="pairs")
    q = o["q"]
    with g.as_default():
        with pytest.raises(cf.errors.InvalidArgumentError, match=r"component 1 must have dtype int32, "
                                                                 r"got f:0 of dtype float32"):
            q.enqueue([cf.placeholder(cf.float32, (2,)), cf.placeholder(cf.float32, (), name="f")])
        with pytest.raises(cf.errors.InvalidArgumentError, match=r"component 0 of queue 'pairs' has shape \(2,\); "
                                                                 r"w:0 has shape \(3,\)"):
            q.enqueue([cf.placeholder(cf.float32, (3,), name="w"), cf.placeholder(cf.int32, ())])
        with pytest.raises(cf.errors.InvalidArgumentError, match=r"elements of shape \(3,\)"):
            q.enqueue_many([cf.placeholder(cf.float32, (None, 3)), cf.placeholder(cf.int32, (None,))])
        with pytest.raises(cf.errors.InvalidArgumentError, match="has 2 components .*, 1 values were given"):
            q.enqueue([cf.placeholder(cf.float32, (2,))])
        with pytest.raises(cf.errors.InvalidArgumentError, match="different batch sizes"):
            q.enqueue_many([cf.placeholder(cf.float32, (4, 2)), cf.placeholder(cf.int32, (5,))])
        with pytest.raises(cf.errors.InvalidArgumentError, match="capacity must be a positive integer"):
            cf.FIFOQueue(0, cf.float32)
        with pytest.raises(cf.errors.InvalidArgumentError, match="2 dtypes but 1 shapes"):
            cf.FIFOQueue(2, [cf.float32, cf.int32], shapes=[(2,)])


def test_run_time_shape_checks_name_the_component():
    g, o = _q2(name="pairs")
    q = o["q"]
    with g.as_default():
        loose = cf.placeholder(cf.float32, None, name="loose")
        label = cf.placeholder(cf.int32, ())
        e1 = q.enqueue([loose, label])
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.errors.InvalidArgumentError,
                           match=r"component 0 \(loose:0\) has shape \(3,\), the queue expects \(2,\)") as ei:
            s.run(e1, {loose: np.zeros(3, np.float32), label: 1})
        assert f"{HERE}:" in str(ei.value)
        with pytest.raises(cf.errors.InvalidArgumentError, match=r"different batch sizes: x:0 has 2, y:0 has 3"):
            s.run(o["enq_many"], {o["x"]: np.zeros((2, 2), np.float32), o["y"]: np.zeros(3, np.int32)})
        assert s.run(o["size"]) == 0


def test_shapeless_queue_dequeue_many_of_ragged_elements_is_a_clear_error():
    g = cf.Graph()
    with g.as_default():
        q = cf.FIFOQueue(4, cf.float32)
        p = cf.placeholder(cf.float32, None)
        e = q.enqueue(p)
        dm = q.dequeue_many(2)
    with cf.Session(graph=g) as s:
        s.run(e, {p: np.zeros(2, np.float32)})
        s.run(e, {p: np.zeros(3, np.float32)})
        with pytest.raises(cf.errors.InvalidArgumentError, match=r"different shapes \(\(2,\) and \(3,\)\)"):
            s.run(dm)


# -- the pipeline ---------------------------------------------------------------------------------


def _pipeline(capacity=4, batches=None, num_threads=1, finalize=True):
    g = cf.Graph()
    with g.as_default():
        q = cf.FIFOQueue(capacity, [cf.float32, cf.int32], shapes=[(2,), ()])
        runner = FeedingQueueRunner(q, batches, num_threads=num_threads)
        x, y = q.dequeue_up_to(3)
        if finalize:
            g.finalize()
    return g, q, runner, x, y


def _consume(s, coord, y):
    seen = []
    try:
        while not coord.should_stop():
            seen.extend(s.run(y).tolist())
    except cf.errors.OutOfRangeError:
        pass
    finally:
        coord.request_stop()
    return seen


def test_feeding_runner_delivers_every_item_in_order_then_closes():
    src = lambda: (_batch(i, i + 2) for i in range(0, 20, 2))  # noqa: E731
    g, q, runner, x, y = _pipeline(batches=src)
    with cf.Session(graph=g) as s:
        coord = Coordinator()
        threads = runner.create_threads(s, coord, start=True)
        seen = _consume(s, coord, y)
        coord.join(threads, stop_grace_period_secs=5)
        assert seen == list(range(20))
        # a callable source starts afresh for another session
    with cf.Session(graph=g) as s:
        coord = Coordinator()
        threads = runner.create_threads(s, coord, start=True)
        assert _consume(s, coord, y) == list(range(20))
        coord.join(threads, stop_grace_period_secs=5)


def test_feeding_runner_many_threads_lose_nothing():
    items = [_batch(i, i + 1) for i in range(60)]
    g, q, runner, x, y = _pipeline(batches=items, num_threads=3)
    with cf.Session(graph=g) as s:
        coord = Coordinator()
        threads = runner.create_threads(s, coord, start=True)
        seen = _consume(s, coord, y)
        coord.join(threads, stop_grace_period_secs=5)
    assert sorted(seen) == list(range(60))


def test_producer_error_reaches_the_main_thread_and_nobody_hangs():
    def bad():
        yield _batch(0, 2)
        raise ValueError("the input file is corrupt")
    g, q, runner, x, y = _pipeline(batches=bad)
    with cf.Session(graph=g) as s:
        coord = Coordinator()
        threads = runner.create_threads(s, coord, start=True)
        _consume(s, coord, y)  # ends: the stop closes the queue
        with pytest.raises(ValueError, match="the input file is corrupt"):
            coord.join(threads, stop_grace_period_secs=5)
        assert isinstance(runner.exceptions_raised[0], ValueError)


def test_bad_item_structure_is_reported():
    g, q, runner, x, y = _pipeline(batches=[(np.zeros((1, 2), np.float32),)])
    with cf.Session(graph=g) as s:
        coord = Coordinator()
        threads = runner.create_threads(s, coord, start=True)
        _consume(s, coord, y)
        with pytest.raises(cf.errors.InvalidArgumentError, match="must hold 2 arrays"):
            coord.join(threads, stop_grace_period_secs=5)


def test_request_stop_releases_a_producer_blocked_on_a_full_queue():
    def forever():
        i = 0
        while True:
            yield _batch(i, i + 1)
            i += 1
    g, q, runner, x, y = _pipeline(capacity=2, batches=forever)
    with cf.Session(graph=g) as s:
        coord = Coordinator()
        threads = runner.create_threads(s, coord, daemon=True, start=True)
        assert s.run(y).tolist() == [0, 1, 2]
        time.sleep(0.1)  # the producer is now blocked on the full queue
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
        assert all(not t.is_alive() for t in threads)


def test_closing_the_session_stops_producers():
    def forever():
        while True:
            yield _batch(0, 1)
    g, q, runner, x, y = _pipeline(capacity=2, batches=forever)
    s = cf.Session(graph=g)
    coord = Coordinator()
    threads = runner.create_threads(s, coord, daemon=True, start=True)
    time.sleep(0.1)
    s.close()
    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=5)  # no error: a closed session is a clean end


def test_queue_runner_collection_and_explicit_ops():
    g = cf.Graph()
    with g.as_default():
        counter = cf.Variable(0, name="counter")
        q = cf.FIFOQueue(5, cf.int32, shapes=[()])
        # a plain QueueRunner: each step enqueues the next counter value
        nxt = counter.assign_add(1)
        qr = QueueRunner(q, [q.enqueue(nxt)])
        add_queue_runner(qr)
        deq = q.dequeue()
    assert g.get_collection(cf.GraphKeys.QUEUE_RUNNERS) == [qr]
    with cf.Session(graph=g) as s:
        s.run(counter.initializer)
        coord = Coordinator()
        with s.as_default():
            threads = start_queue_runners(coord=coord)
        got = [int(s.run(deq)) for _ in range(8)]
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
        assert got == list(range(1, 9))


def test_coordinator_basics():
    coord = Coordinator()
    assert not coord.should_stop() and not coord.wait_for_stop(0.01)
    with coord.stop_on_exception():
        raise cf.errors.OutOfRangeError("done")  # a clean stop
    assert coord.should_stop()
    coord.join([])
    coord.clear_stop()
    with coord.stop_on_exception():
        raise KeyError("boom")
    with pytest.raises(KeyError, match="boom"):
        coord.join([])
    coord.clear_stop()
    hung = threading.Thread(target=time.sleep, args=(0.5,), daemon=True, name="sleepy")
    hung.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="sleepy"):
        coord.join([hung], stop_grace_period_secs=0.01)


def test_input_pipeline_example_trains():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    try:
        import input_pipeline
    finally:
        sys.path.pop(0)
    loss = input_pipeline.main(["--examples", "256", "--epochs", "10"])
    assert loss < 1e-2


# -- RandomShuffleQueue, count_up_to and TF1's queue-based input functions ---------------------

def _drain(sess, t):
    out = []
    try:
        while True:
            out.append(sess.run(t))
    except cf.errors.OutOfRangeError:
        return out


def test_random_shuffle_queue_mixes_keeps_a_reserve_and_drains_after_close():
    g = cf.Graph()
    with g.as_default():
        q = cf.RandomShuffleQueue(100, 10, [cf.int32], shapes=[()], seed=3)
        enq = q.enqueue_many([np.arange(50, dtype=np.int32)])
        deq, up = q.dequeue_many(20), q.dequeue_up_to(100)
        size, close = q.size(), q.close()
    with cf.Session(graph=g, config={"operation_timeout_in_ms": 300}) as s:
        s.run(enq)
        a, b = s.run(deq), s.run(deq)
        assert s.run(size) == 10
        assert not np.array_equal(np.sort(a), a)                  # not in FIFO order
        with pytest.raises(cf.errors.DeadlineExceededError):       # 10 left: the reserve holds
            s.run(deq)
        s.run(close)
        rest = s.run(up)                                           # closed: what is left
        assert sorted(np.concatenate([a, b, rest]).tolist()) == list(range(50))
        with pytest.raises(cf.errors.OutOfRangeError):
            s.run(deq)
    with pytest.raises(cf.errors.InvalidArgumentError, match="min_after_dequeue .* must be smaller than capacity"):
        cf.RandomShuffleQueue(5, 5, [cf.int32])


def test_count_up_to_stops_at_its_limit():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.int64(0))
        c = v.count_up_to(3)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        assert [s.run(c) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(cf.errors.OutOfRangeError, match="Reached limit of 3"):
            s.run(c)
        assert s.run(v) == 3


def _with_runners(g, fetch, init_ops=None):
    with cf.Session(graph=g) as s:
        s.run([cf.global_variables_initializer(), cf.local_variables_initializer()] if init_ops is None else init_ops)
        coord = cf.train.Coordinator()
        threads = cf.train.start_queue_runners(s, coord)
        try:
            return _drain(s, fetch)
        finally:
            coord.request_stop()
            coord.join(threads)


def test_slice_input_producer_and_shuffle_batch_run_the_epochs_and_end():
    xs = np.arange(20, dtype=np.float32).reshape(10, 2)
    ys = np.arange(10, dtype=np.int32)
    g = cf.Graph()
    with g.as_default():
        x, y = cf.train.slice_input_producer([xs, ys], num_epochs=2, seed=3)
        bx, by = cf.train.shuffle_batch([x, y], batch_size=4, capacity=12, min_after_dequeue=3, seed=5,
                                        allow_smaller_final_batch=True)
        assert len(g.get_collection(cf.GraphKeys.QUEUE_RUNNERS)) == 2
    batches = _with_runners(g, [bx, by])
    seen = np.concatenate([b for _, b in batches])
    assert sorted(seen.tolist()) == sorted(list(range(10)) * 2)   # every row twice, once per epoch
    for a, b in batches:
        np.testing.assert_array_equal(a[:, 0], 2 * b)              # the components stay together


def test_string_input_producer_and_batch_keep_fifo_order_without_shuffle():
    g = cf.Graph()
    with g.as_default():
        q = cf.train.string_input_producer(["a", "b", "c"], num_epochs=2, shuffle=False)
        name = q.dequeue()
        idx = cf.train.range_input_producer(5, num_epochs=1, shuffle=False).dequeue()
        b = cf.train.batch([idx, idx * 10], batch_size=2, allow_smaller_final_batch=True)
    got = _with_runners(g, b)
    assert [x.tolist() for x, _ in got] == [[0, 1], [2, 3], [4]] and got[0][1].tolist() == [0, 10]
    g2 = cf.Graph()
    with g2.as_default():
        name = cf.train.string_input_producer(["a", "b", "c"], num_epochs=2, shuffle=False).dequeue()
    assert _with_runners(g2, name) == [b"a", b"b", b"c", b"a", b"b", b"c"]
    g3 = cf.Graph()
    with g3.as_default():
        x = cf.placeholder(cf.float32, [None])
        with pytest.raises(cf.errors.InvalidArgumentError, match="shape of every tensor must be fully defined"):
            cf.train.batch([x], 2)
        with pytest.raises(cf.errors.InvalidArgumentError, match="with dynamic_pad every tensor needs a known rank"):
            cf.train.batch([cf.placeholder(cf.float32)], 2, dynamic_pad=True)


def _padding_program(tf):
    """A PaddingFIFOQueue fed elements of varying length (and a batch of them), dequeued
    padded; tf.train.batch(dynamic_pad=True) over examples of growing length."""
    q = tf.PaddingFIFOQueue(10, [tf.int32, tf.string, tf.float32], shapes=[[None], [None, 2], []])
    enq = [q.enqueue([tf.range(k), tf.fill([k, 2], "s%d" % k), tf.constant(float(k))]) for k in (2, 0, 3, 1)]
    enq_many = q.enqueue_many([tf.ones([2, 4], tf.int32), tf.fill([2, 1, 2], "m"), tf.constant([7.0, 8.0])])
    d2 = q.dequeue_many(2)
    d3 = q.dequeue_up_to(3)
    close = q.close()
    seq = tf.train.range_input_producer(5, shuffle=False).dequeue()
    b = tf.train.batch([tf.range(seq + 1), seq], 2, dynamic_pad=True, allow_smaller_final_batch=True)
    out = []
    with tf.Session() as s:
        for e in enq:
            s.run(e)
        s.run(enq_many)
        out += [s.run(d2), s.run(d3)]
        s.run(close)
        out.append(s.run(d3))
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord)
        out += [s.run(b), s.run(b)]
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
    return out, [x.shape.as_list() for x in d2] + [b[0].shape.as_list()]


def _plain(x):
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    a = np.asarray(x)
    if a.dtype == object:
        a = np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else v, otypes=[object])(a)
    return a.tolist()


def test_padding_fifo_queue_pads_each_batch_to_its_largest():
    import collflow.compat.v1 as v1
    with v1.Graph().as_default():
        got, shapes = _padding_program(v1)
    ints, strs, flts = _plain(got[0])
    assert ints == [[0, 1], [0, 0]] and strs == [[["s2", "s2"], ["s2", "s2"]], [["", ""], ["", ""]]]
    assert _plain(got[1])[0] == [[0, 1, 2, 0], [0, 0, 0, 0], [1, 1, 1, 1]]  # one of the enqueue_many batch
    assert _plain(got[2])[0] == [[1, 1, 1, 1]]  # closed: what is left
    assert _plain(got[3]) == [[[0, 0], [0, 1]], [0, 1]] and _plain(got[4])[0] == [[0, 1, 2, 0], [0, 1, 2, 3]]
    assert shapes == [[2, None], [2, None, 2], [2], [None, None]]
    with v1.Graph().as_default():
        with pytest.raises(cf.errors.InvalidArgumentError, match="needs shapes"):
            v1.PaddingFIFOQueue(3, [v1.int32])
        with pytest.raises(cf.errors.InvalidArgumentError, match="known rank"):
            v1.PaddingFIFOQueue(3, [v1.int32], shapes=[v1.TensorShape(None)])
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    with tft.Graph().as_default():
        theirs, their_shapes = _padding_program(tft)
    assert _plain(got) == _plain(theirs) and shapes == their_shapes


def test_join_and_maybe_batching():
    """batch_join / shuffle_batch_join take examples from every list (one thread each);
    maybe_batch keeps the examples keep_input says (a scalar per example, or with
    enqueue_many a vector over the batch)."""
    import collflow.compat.v1 as v1

    def drain(s, t, limit=50):
        got = []
        for _ in range(limit):
            try:
                got.append(s.run(t))
            except v1.errors.OutOfRangeError:
                break
        return got

    with v1.Graph().as_default():
        a = v1.train.range_input_producer(6, shuffle=False, num_epochs=1).dequeue()
        b = v1.train.range_input_producer(4, shuffle=False, num_epochs=1).dequeue() + 100
        joined = v1.train.batch_join([[a, a * 2], [b, b * 2]], 3, allow_smaller_final_batch=True)
        c = v1.train.range_input_producer(8, shuffle=False, num_epochs=1).dequeue()
        kept = v1.train.maybe_batch([c], v1.equal(c % 2, 0), 2, allow_smaller_final_batch=True)
        d = v1.constant(np.arange(10))
        many = v1.train.maybe_batch([d], v1.equal(d % 3, 0), 2, enqueue_many=True)
        e = v1.train.range_input_producer(5, shuffle=False, num_epochs=1).dequeue()
        f = v1.train.range_input_producer(5, shuffle=False, num_epochs=1).dequeue() + 10
        shuffled = v1.train.shuffle_batch_join([[e], [f]], 3, 10, 2, seed=1, allow_smaller_final_batch=True)
        assert v1.train.piecewise_constant_decay is v1.train.piecewise_constant
        with v1.Session(config=v1.ConfigProto(operation_timeout_in_ms=20000)) as s:
            s.run(v1.local_variables_initializer())
            coord = v1.train.Coordinator()
            threads = v1.train.start_queue_runners(s, coord)
            j = drain(s, joined)
            k = drain(s, kept)
            m = [s.run(many) for _ in range(3)]
            sh = drain(s, shuffled)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    xs = sorted(v for x, _ in j for v in x.tolist())
    assert xs == [0, 1, 2, 3, 4, 5, 100, 101, 102, 103]
    assert all((y == 2 * x).all() for x, y in j)
    assert [x.tolist() for x in k] == [[0, 2], [4, 6]]
    assert [x.tolist() for x in m] == [[0, 3], [6, 9], [0, 3]]
    assert sorted(v for x in sh for v in x.tolist()) == [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]
