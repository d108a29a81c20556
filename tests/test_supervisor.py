"""tf.train.Supervisor and tf.train.SessionManager (TF1's older training loop), by TF1's rules:
restore-or-initialize, the standard services (checkpoints, summaries, steps/sec, queue
runners), stopping and errors."""
import glob
import os

import numpy as np
import pytest

import collflow.compat.v1 as cf
from collflow.summary.writer import summary_iterator


def _model():
    step = cf.train.get_or_create_global_step()
    w = cf.Variable([1.0, 2.0], name="w")
    loss = cf.reduce_sum(w * w)
    cf.summary.scalar("loss", loss)
    train = cf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return step, w, train


def _events(logdir):
    out = []
    for f in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        out.extend(summary_iterator(f))
    return out


def test_managed_session_initializes_trains_checkpoints_and_restores(tmp_path):
    logdir = str(tmp_path)
    with cf.Graph().as_default() as g:
        step, w, train = _model()
        sv = cf.train.Supervisor(logdir=logdir, save_model_secs=0, save_summaries_secs=3600)
        assert g.finalized                       # TF1's Supervisor finalizes the graph
        with pytest.raises(Exception):
            cf.constant(1.0)
        with sv.managed_session() as sess:
            for _ in range(3):
                if sv.should_stop():
                    break
                sess.run(train)
            final = sess.run(w)
            sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
            sv.summary_computed(sess, sess.run(sv.summary_op))   # the timer's first tick may come later
        assert sv.saver is not None and sv.global_step is step
    assert cf.train.latest_checkpoint(logdir) is not None
    events = _events(logdir)
    assert any(e.HasField("session_log") and e.session_log.status == cf.SessionLog.START for e in events)
    assert any(e.HasField("session_log") and e.session_log.status == cf.SessionLog.STOP for e in events)
    assert any(e.HasField("summary") and e.summary.value[0].tag == "loss" for e in events)
    assert any(e.HasField("graph_def") for e in events)
    # a new Supervisor over the same logdir restores instead of initializing
    with cf.Graph().as_default():
        step, w, train = _model()
        sv = cf.train.Supervisor(logdir=logdir, save_model_secs=0, save_summaries_secs=0)
        with sv.managed_session() as sess:
            assert sess.run(step) == 3
            np.testing.assert_allclose(sess.run(w), final)


def test_checkpoints_on_a_timer(tmp_path):
    logdir = str(tmp_path)
    with cf.Graph().as_default():
        step, w, train = _model()
        sv = cf.train.Supervisor(logdir=logdir, save_model_secs=0.2, save_summaries_secs=0)
        with sv.managed_session() as sess:
            import time
            deadline = time.time() + 10
            while time.time() < deadline:
                sess.run(train)
                state = cf.train.get_checkpoint_state(logdir)
                if state and not state.model_checkpoint_path.endswith("-0"):
                    break
                time.sleep(0.05)
    state = cf.train.get_checkpoint_state(logdir)
    assert state is not None and not state.model_checkpoint_path.endswith("-0")


def test_an_error_in_the_block_is_reraised_and_out_of_range_ends_quietly(tmp_path):
    with cf.Graph().as_default():
        _model()
        sv = cf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
        with pytest.raises(ValueError, match="boom"):
            with sv.managed_session():
                raise ValueError("boom")
        with sv.managed_session():
            raise cf.errors.OutOfRangeError(None, None, "end of input")
        assert sv.should_stop()


def test_queue_runners_are_started_and_stopped(tmp_path):
    with cf.Graph().as_default():
        x = cf.train.limit_epochs(cf.constant([1.0, 2.0, 3.0]), num_epochs=2)
        q = cf.FIFOQueue(10, cf.float32, shapes=[3])
        cf.train.add_queue_runner(cf.train.QueueRunner(q, [q.enqueue(x)]))
        got = q.dequeue()
        sv = cf.train.Supervisor(logdir=None)
        seen = []
        with sv.managed_session() as sess:
            while not sv.should_stop():
                seen.append(sess.run(got))
        assert len(seen) == 2


def test_without_logdir_and_custom_init():
    with cf.Graph().as_default():
        v = cf.Variable(0.0, name="v")
        calls = []
        sv = cf.train.Supervisor(init_op=None, init_fn=lambda s: (calls.append(1), s.run(v.initializer)))
        with sv.managed_session() as sess:
            assert sess.run(v) == 0.0
        assert calls == [1] and sv.summary_writer is None and sv.save_path is None


def test_session_manager_reports_what_is_not_ready():
    with cf.Graph().as_default():
        a = cf.Variable(1.0, name="a")
        cf.Variable(2.0, name="b")
        sm = cf.train.SessionManager(ready_op=cf.report_uninitialized_variables())
        with pytest.raises(RuntimeError, match="Variables not initialized: b"):
            sm.prepare_session("", init_op=a.initializer)
        sess = sm.prepare_session("", init_op=cf.global_variables_initializer())
        assert sess.run(a) == 1.0
        with pytest.raises(RuntimeError, match="no init_op or init_fn or local_init_op"):
            sm.prepare_session("")
        _, ready = sm.recover_session("", saver=None, checkpoint_dir=None)
        assert ready is False
        with pytest.raises(cf.errors.DeadlineExceededError):
            cf.train.SessionManager(ready_op=cf.report_uninitialized_variables(),
                                    recovery_wait_secs=0.01).wait_for_session("", max_wait_secs=0.05)


def test_loop_and_summary_computed(tmp_path):
    with cf.Graph().as_default():
        step, w, train = _model()
        s = cf.summary.scalar("extra", cf.constant(3.0))
        sv = cf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0, summary_op=None)
        ticks = []
        with sv.managed_session() as sess:
            sv.loop(0.01, lambda: ticks.append(1))
            sv.summary_computed(sess, sess.run(s))
            import time
            t0 = time.time()
            while len(ticks) < 3 and time.time() - t0 < 10:
                time.sleep(0.01)
        assert len(ticks) >= 3
    assert any(e.HasField("summary") and e.summary.value[0].tag == "extra" for e in _events(str(tmp_path)))


def test_errors_take_tf1s_constructor_too():
    e = cf.errors.OutOfRangeError(None, None, "end of input")
    assert e.message == "end of input" and e.op is None and str(e) == "end of input"
    e = cf.errors.InvalidArgumentError(node_def=None, op=None, message="bad")
    assert e.message == "bad" and e.error_code == cf.errors.INVALID_ARGUMENT
    assert cf.errors.NotFoundError("missing").message == "missing"
    with pytest.raises(TypeError):
        cf.errors.AbortedError("a", None, "b", 3, 4)
