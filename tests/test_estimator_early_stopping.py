"""tf.estimator.experimental's (and tf.contrib.estimator's) early-stopping hooks: the metrics
read back from eval event files, each predicate's rule, and training that stops early, alone
and under train_and_evaluate."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.estimator.early_stopping import read_eval_metrics

pytestmark = pytest.mark.usefixtures("graph")


def _write_evals(eval_dir, series):
    """Eval events: {step: {tag: value}}."""
    w = tf.summary.FileWriter(eval_dir)
    for step, values in series.items():
        w.add_summary(tf.Summary(value=[tf.Summary.Value(tag=k, simple_value=v) for k, v in values.items()]), step)
    w.close()


class _Est:
    def __init__(self, eval_dir, chief=True):
        self._eval_dir = eval_dir
        self.config = type("C", (), {"is_chief": chief})()

    def eval_dir(self):
        return self._eval_dir


def _predicate(hook):
    return hook._should_stop_fn()


def test_read_eval_metrics_and_predicates(tmp_path):
    d = str(tmp_path / "eval")
    _write_evals(d, {100: {"loss": 1.0, "acc": 0.5}, 200: {"loss": 0.8, "acc": 0.6},
                     300: {"loss": 0.9, "acc": 0.7}, 400: {"loss": 0.85, "acc": 0.65}})
    got = read_eval_metrics(d)
    assert list(got) == [100, 200, 300, 400]
    assert got[200] == {"loss": pytest.approx(0.8), "acc": pytest.approx(0.6)}
    exp = tf.estimator.experimental
    est = _Est(d)
    # best loss at 200; 400 - 200 = 200 steps without a decrease
    assert _predicate(exp.stop_if_no_decrease_hook(est, "loss", 200))
    assert not _predicate(exp.stop_if_no_decrease_hook(est, "loss", 201))
    # best acc at 300; 100 steps since
    assert _predicate(exp.stop_if_no_increase_hook(est, "acc", 100))
    assert not _predicate(exp.stop_if_no_increase_hook(est, "acc", 101))
    assert _predicate(exp.stop_if_lower_hook(est, "loss", 0.81))
    assert not _predicate(exp.stop_if_lower_hook(est, "loss", 0.81, min_steps=201))
    assert _predicate(exp.stop_if_higher_hook(est, "acc", 0.69))
    assert not _predicate(exp.stop_if_higher_hook(est, "acc", 0.7))
    # min_steps skips the early evaluations when finding the best
    assert not _predicate(exp.stop_if_no_decrease_hook(est, "loss", 100, min_steps=300))
    assert not _predicate(exp.stop_if_no_decrease_hook(_Est(str(tmp_path / "none")), "loss", 1))
    with pytest.raises(KeyError, match='metric "auc" is not in the evaluation at step 100'):
        _predicate(exp.stop_if_higher_hook(est, "auc", 0.5))
    with pytest.raises(ValueError, match="Only one of run_every_secs and run_every_steps"):
        exp.stop_if_higher_hook(est, "acc", 0.5, run_every_secs=1, run_every_steps=1)
    assert type(exp.stop_if_higher_hook(_Est(d, chief=False), "acc", 0.5)).__name__ == "_CheckForStoppingHook"
    assert tf.contrib.estimator.stop_if_no_decrease_hook is exp.stop_if_no_decrease_hook


def _model_fn(features, labels, mode):
    pred = tf.layers.dense(features["x"], 1)
    loss = tf.losses.mean_squared_error(labels, pred)
    step = tf.train.GradientDescentOptimizer(0.01).minimize(loss, tf.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step, predictions=pred)


def _input(n=64):
    r = np.random.RandomState(0)
    x = r.rand(n, 2).astype(np.float32)
    return tf.estimator.inputs.numpy_input_fn({"x": x}, x.sum(1, keepdims=True), batch_size=8, num_epochs=None,
                                              shuffle=False)


def test_training_stops_early_and_sets_the_flag(tmp_path):
    est = tf.estimator.Estimator(_model_fn, model_dir=str(tmp_path / "m"))
    _write_evals(est.eval_dir(), {10: {"loss": 1.0}, 20: {"loss": 2.0}})
    hook = tf.estimator.experimental.stop_if_no_decrease_hook(est, "loss", 10, run_every_secs=None,
                                                              run_every_steps=1)
    est.train(_input(), hooks=[hook], max_steps=100)
    stopped_at = tf.train.load_variable(est.model_dir, "global_step")
    assert 0 < stopped_at < 100
    # as TF's Estimator, the default Saver is made before the hooks add the stop flag, so the
    # flag is not checkpointed: a resumed run starts with it clear and trains on
    est.train(_input(), steps=5)
    assert tf.train.load_variable(est.model_dir, "global_step") == stopped_at + 5


def test_train_and_evaluate_stops_when_loss_stalls(tmp_path):
    est = tf.estimator.Estimator(_model_fn, model_dir=str(tmp_path / "m"),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=10))
    # any evaluation after the first is "no decrease" for >= 1 step unless it improves; with a
    # threshold below the first loss the run stops at the first check after an evaluation
    hook = tf.estimator.experimental.stop_if_lower_hook(est, "loss", 1e9, run_every_secs=None,
                                                        run_every_steps=1)
    tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(_input(), max_steps=200, hooks=[hook]),
                                    tf.estimator.EvalSpec(_input(16), steps=2, throttle_secs=0))
    assert os.path.isdir(est.eval_dir())
    assert 0 < tf.train.load_variable(est.model_dir, "global_step") < 200
