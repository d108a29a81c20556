"""MonitoredSession / MonitoredTrainingSession and the hooks: TensorFlow 1.x's call order and
arguments, stopping, restore-or-initialize, checkpoints and summaries on their cadence,
and the end of a dataset ending the `with` block cleanly."""
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import collflow as cf
from collflow.data.pipeline import FeedingQueueRunner, add_queue_runner


@pytest.fixture(autouse=True)
def _close_cached_writers():
    yield
    cf.summary.FileWriterCache.clear()


def _model(lr=0.1):
    """w (2, 1) fit to y = x @ [1, -1] by SGD; returns (graph, x, loss, train_op, w, global_step)."""
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder_with_default(np.array([[1.0, 2.0], [3.0, 1.0]], np.float32), (None, 2), name="x")
        y = cf.matmul(x, cf.constant([[1.0], [-1.0]]))
        w = cf.Variable(np.zeros((2, 1), np.float32), name="w")
        loss = cf.reduce_mean(cf.square(cf.matmul(x, w) - y), name="loss")
        gs = cf.train.get_or_create_global_step()
        train = cf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=gs)
    return g, x, loss, train, w, gs


class Recorder(cf.train.SessionRunHook):
    """Records every call; asks for `fetches` and feeds `feeds` in before_run."""

    def __init__(self, fetches=None, feeds=None, stop_after=None):
        self.calls, self.results = [], []
        self.fetches, self.feeds, self.stop_after = fetches, feeds, stop_after

    def begin(self):
        self.calls.append("begin")
        self.graph_finalized_at_begin = cf.get_default_graph().finalized

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")
        self.graph_finalized = session.graph.finalized

    def before_run(self, run_context):
        self.calls.append("before_run")
        self.original = run_context.original_args
        if self.fetches is None and self.feeds is None:
            return None
        return cf.train.SessionRunArgs(self.fetches, feed_dict=self.feeds)

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.results.append(run_values.results)
        if self.stop_after is not None and len(self.results) >= self.stop_after:
            run_context.request_stop()

    def end(self, session):
        self.calls.append("end")


def test_hook_calls_and_values_follow_tensorflow():
    g, x, loss, train, w, gs = _model()
    with g.as_default():
        rec = Recorder(fetches={"step": gs, "loss": loss})
        other = Recorder(feeds={x: np.array([[1.0, 0.0]], np.float32)}, fetches=loss)
        with cf.train.MonitoredSession(hooks=[rec, other]) as s:
            assert not g.finalized or rec.graph_finalized
            out = s.run(train)
            assert out is None and rec.original.fetches is train
            s.run([loss])
        assert not g.finalized  # finalized for the session only
    assert rec.calls == ["begin", "after_create_session", "before_run", "after_run", "before_run", "after_run",
                         "end"]
    assert not rec.graph_finalized_at_begin and rec.graph_finalized
    # after_run gets the values of before_run's fetches, from the same run (stale global step)
    assert [r["step"] for r in rec.results] == [0, 1]
    # the hook's feed applied to the run: loss of x = [[1, 0]] with w after one step
    assert other.results[1] == pytest.approx(rec.results[1]["loss"], rel=1e-6)


def test_feed_conflicts_are_errors():
    g, x, loss, train, w, gs = _model()
    with g.as_default():
        feed = {x: np.ones((1, 2), np.float32)}
        with cf.train.MonitoredSession(hooks=[Recorder(feeds=feed), Recorder(feeds=feed)]) as s:
            with pytest.raises(RuntimeError, match="Same tensor is fed by two hooks"):
                s.run(loss)
        with cf.train.MonitoredSession(hooks=[Recorder(feeds=feed)]) as s:
            with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
                s.run(loss, feed_dict=feed)


def test_stop_at_step_hook_and_request_stop():
    g, x, loss, train, w, gs = _model()
    with g.as_default():
        with cf.train.MonitoredSession(hooks=[cf.train.StopAtStepHook(last_step=5)]) as s:
            n = 0
            while not s.should_stop():
                s.run(train)
                n += 1
            assert n == 5 and s.run(gs) == 5
        rec = Recorder(stop_after=2)
        with cf.train.MonitoredSession(hooks=[rec, cf.train.StopAtStepHook(num_steps=3)]) as s:
            while not s.should_stop():
                s.run(train)
            assert s.run(gs) == 2
        assert s.should_stop()
        with pytest.raises(RuntimeError, match="closed"):
            s.run(train)
    with pytest.raises(ValueError, match="One of num_steps or last_step"):
        cf.train.StopAtStepHook()


def test_training_session_saves_restores_and_writes_summaries(tmp_path):
    d = str(tmp_path)
    g, x, loss, train, w, gs = _model()
    with g.as_default():
        cf.summary.scalar("training_loss", loss)
        final = cf.train.FinalOpsHook(w)
        hooks = [cf.train.StopAtStepHook(last_step=6), final]
        with cf.train.MonitoredTrainingSession(checkpoint_dir=d, hooks=hooks, save_checkpoint_steps=4,
                                               save_summaries_steps=2, log_step_count_steps=2) as s:
            while not s.should_stop():
                s.run(train)
        w_end = final.final_ops_values
        # saved when the session started (step 0), at step 4 and at the end (step 6)
        assert sorted(f for f in os.listdir(d) if f.endswith(".h5")) == [
            "model.ckpt-0.h5", "model.ckpt-4.h5", "model.ckpt-6.h5"]
        with cf.train.MonitoredTrainingSession(checkpoint_dir=d, save_checkpoint_secs=None) as s:
            assert s.run(gs) == 6
            np.testing.assert_array_equal(s.run(w), w_end)
    (events,) = [os.path.join(d, f) for f in os.listdir(d) if "tfevents" in f]
    evs = list(cf.train.summary_iterator(events))
    def steps_with(tag):
        return [e.step for e in evs if e.summary and any(v.tag == tag for v in e.summary.value)]
    # TensorFlow's cadence: the first run's step (read after it: 1), then every 2 steps; the
    # restored session's first run adds step 6
    assert steps_with("training_loss") == [1, 3, 5, 6]
    assert steps_with("global_step/sec") == [3, 5]  # a rate needs two points: 1 -> 3, 3 -> 5
    start = [e.step for e in evs if e.session_log and e.session_log.status == cf.SessionLog.START]
    assert start == [1, 6]
    assert any(e.graph_def for e in evs)
    ckpts = [(e.step, e.session_log.checkpoint_path) for e in evs if e.session_log and e.session_log.status == 3]
    assert [s for s, _ in ckpts] == [0, 4, 6] and ckpts[-1][1].endswith("model.ckpt-6.h5")


def test_dataset_end_closes_the_with_block_cleanly(tmp_path):
    g = cf.Graph()
    with g.as_default():
        xb = cf.data.Dataset.from_tensor_slices(np.arange(10, dtype=np.float32)).batch(4) \
            .make_one_shot_iterator().get_next()
        total = cf.Variable(0.0, name="total")
        gs = cf.train.get_or_create_global_step()
        step = cf.group(cf.assign_add(total, cf.reduce_sum(xb)), cf.assign_add(gs, 1))
        final = cf.train.FinalOpsHook(total)
        rec = Recorder()
        with cf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=[final, rec]) as s:
            runs = 0
            while not s.should_stop():
                s.run(step)
                runs += 1
        assert runs == 3 and rec.calls[-1] == "end"  # OutOfRangeError ended it, hooks' end() ran
        assert final.final_ops_values == 45.0
        assert os.path.exists(os.path.join(str(tmp_path), "model.ckpt-3.h5"))  # the final checkpoint
        with cf.train.MonitoredTrainingSession(hooks=[cf.train.StopAtStepHook(num_steps=2)]) as s:
            while not s.should_stop():
                s.run(step)
            assert s.run(gs) == 2  # a step hook stops before the data runs out


def test_other_errors_propagate_without_end():
    g, x, loss, train, w, gs = _model()
    with g.as_default():
        rec = Recorder()
        with pytest.raises(ZeroDivisionError):
            with cf.train.MonitoredSession(hooks=[rec]) as s:
                s.run(train)
                1 / 0
    assert "end" not in rec.calls and not g.finalized


def test_logging_tensor_hook(caplog):
    g, x, loss, train, w, gs = _model()
    old = cf.logging.get_verbosity()
    cf.logging.set_verbosity(cf.logging.INFO)
    try:
        with g.as_default(), caplog.at_level(logging.INFO, logger="collflow"):
            hooks = [cf.train.LoggingTensorHook({"step": gs, "loss": "loss:0"}, every_n_iter=2),
                     cf.train.LoggingTensorHook([gs], every_n_iter=10, at_end=True,
                                                formatter=lambda v: f"final step {v[gs.name]}")]
            with cf.train.MonitoredSession(hooks=hooks) as s:
                for _ in range(5):
                    s.run(train)
    finally:
        cf.logging.set_verbosity(old)
    lines = [r.getMessage() for r in caplog.records if r.name == "collflow"]
    logged = [ln for ln in lines if ln.startswith("loss = ")]
    assert [ln.split("step = ")[1].split(" ")[0] for ln in logged] == ["0", "2", "4"]
    assert " sec)" in logged[1] and lines[-1] == "final step 5"
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        cf.train.LoggingTensorHook([gs])


def test_nan_tensor_hook():
    g = cf.Graph()
    with g.as_default():
        v = cf.placeholder(cf.float32, ())
        with cf.train.MonitoredSession(hooks=[cf.train.NanTensorHook(v)]) as s:
            s.run(v, {v: 1.0})
            with pytest.raises(cf.train.NanLossDuringTrainingError, match="NaN loss during training"):
                s.run(v, {v: np.nan})
        with cf.train.MonitoredSession(hooks=[cf.train.NanTensorHook(v, fail_on_nan_loss=False)]) as s:
            s.run(v, {v: np.nan})
            assert s.should_stop()


def test_ready_check_names_uninitialized_variables_and_init_fn_runs():
    g, x, loss, train, w, gs = _model()
    with g.as_default():
        with pytest.raises(RuntimeError, match="Variables not initialized: .*w"):
            cf.train.MonitoredSession(cf.train.ChiefSessionCreator(scaffold=cf.train.Scaffold(init_op=cf.no_op())))
        assert not g.finalized
        seen = []
        scaffold = cf.train.Scaffold(init_fn=lambda sc, sess: (seen.append(sc), w.load(np.ones((2, 1)), sess)))
        with cf.train.SingularMonitoredSession(scaffold=scaffold) as s:
            np.testing.assert_array_equal(s.raw_session().run(w), np.ones((2, 1)))
        assert seen == [scaffold]


def test_run_step_fn_and_request_stop():
    g, x, loss, train, w, gs = _model()
    with g.as_default():
        rec = Recorder()
        with cf.train.MonitoredSession(hooks=[rec]) as s:
            def step(ctx):
                ctx.run_with_hooks(train)
                if ctx.session.run(gs) >= 2:
                    ctx.request_stop()
                return "ran"
            assert s.run_step_fn(step) == "ran"
            assert s.run_step_fn(step) is None and s.should_stop()
        assert rec.calls.count("after_run") == 2


def test_queue_runners_start_with_the_session():
    g = cf.Graph()
    with g.as_default():
        q = cf.FIFOQueue(4, [cf.float32], shapes=[()])
        add_queue_runner(FeedingQueueRunner(q, lambda: iter([np.arange(3, dtype=np.float32)])))
        x = q.dequeue()
        got = []
        with cf.train.MonitoredSession() as s:
            while not s.should_stop():
                got.append(float(s.run(x)))
    assert got == [0.0, 1.0, 2.0]


def test_horovod_broadcast_hook_is_a_session_run_hook():
    import collflow.horovod as hvd
    g, x, loss, train, w, gs = _model()
    with g.as_default():
        hvd.init()
        with cf.train.MonitoredTrainingSession(hooks=[hvd.BroadcastGlobalVariablesHook(0),
                                                      cf.train.StopAtStepHook(last_step=2)]) as s:
            while not s.should_stop():
                s.run(train)
            assert s.run(gs) == 2


def test_hooks_need_a_global_step():
    g = cf.Graph()
    with g.as_default():
        cf.Variable(1.0)
        with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook"):
            cf.train.MonitoredSession(hooks=[cf.train.StopAtStepHook(num_steps=1)])


# what examples/tf1_training_loop.py printed under TensorFlow 2.21's tensorflow.compat.v1
TF1_OUTPUT = {
    (): {"unparsed_args": [], "runs": 7, "losses": [2.48665, 1.93328, 1.82147, 0.4714, 1.29425, 1.59085, 1.43434],
         "w": [0.04973, -0.55244, 0.08716], "global_step": 7,
         "summaries": [[1, 2.48665], [3, 1.82147], [5, 1.29425], [7, 1.43434]]},
    ("--steps=20", "extra", "--nouse_map"): {
        "unparsed_args": ["extra"], "runs": 8,
        "losses": [0.62166, 0.52414, 0.50734, 0.15614, 0.50211, 0.48011, 0.47406, 0.13853],
        "w": [-0.03245, -0.19813, -0.01553], "global_step": 8,
        "summaries": [[1, 0.62166], [3, 0.50734], [5, 0.50211], [7, 0.47406]]},
}


@pytest.mark.parametrize("args", list(TF1_OUTPUT), ids=["defaults", "flags_and_end_of_data"])
def test_the_tf1_example_prints_tensorflows_answer(args):
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                          "tf1_training_loop.py")
    env = dict(os.environ, TF1_BACKEND="collflow")
    r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == TF1_OUTPUT[args]
