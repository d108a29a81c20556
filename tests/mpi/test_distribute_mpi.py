"""tf.distribute under real MPI: an Estimator with RunConfig(train_distribute=MirroredStrategy())
on N ranks ends where one process without a strategy ends with N times the batch (TF's N
replicas: per-replica batches dealt round robin, the mean loss divided by the replicas and
the gradients summed), on every rank, with the loss it reports the mean over the replicas."""
import os
import tempfile

import numpy as np
import pytest

import collflow.compat.v1 as tf

RNG = np.random.RandomState(2)
X = RNG.randn(60, 4).astype(np.float32)
Y = (X @ RNG.randn(4, 1)).astype(np.float32)


class _Capture(tf.train.SessionRunHook):
    def begin(self):
        self.w = tf.get_default_graph().get_tensor_by_name("w:0")

    def end(self, session):
        self.value = session.run(self.w)


def _train(strategy, batch, model_dir):
    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(batch)

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
        loss = tf.losses.mean_squared_error(labels, tf.matmul(features["x"], w))
        train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)
    cfg = tf.estimator.RunConfig(train_distribute=strategy, save_checkpoints_steps=None, save_checkpoints_secs=None)
    hook = _Capture()
    tf.estimator.Estimator(model_fn, model_dir=model_dir, config=cfg).train(input_fn, hooks=[hook])
    return hook.value


@pytest.mark.mpi(min_size=2)
def test_estimator_train_distribute_n_ranks_is_one_process_with_n_times_the_batch():
    from mpi4py import MPI
    n = MPI.COMM_WORLD.Get_size()
    ref = _train(None, 5 * n, tempfile.mkdtemp())
    got = _train(tf.distribute.MirroredStrategy(), 5, tempfile.mkdtemp())
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    allw = MPI.COMM_WORLD.allgather(got)
    assert all(np.array_equal(a, allw[0]) for a in allw)


def _keras_fit(strategy):
    """A Keras model compiled in the strategy's scope: fit (shuffled, validated, stateful and
    stateless metrics, a regularizer), then evaluate and predict."""
    import contextlib
    tf.keras.backend.clear_session()
    if True:
        rng = np.random.RandomState(4)
        # 12-row batches split evenly over 2 or 3 replicas: TF's per-replica mean losses / N then
        # average to the whole batch's (validation and evaluate batches may split unevenly)
        x = rng.randn(48, 5).astype(np.float32)
        y = rng.randint(0, 3, 48).astype(np.int64)
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            model = tf.keras.Sequential([
                tf.keras.layers.Dense(6, activation="tanh", input_shape=(5,), kernel_regularizer=tf.keras.regularizers.l2(0.01),
                                      kernel_initializer=tf.keras.initializers.glorot_uniform(seed=1)),
                tf.keras.layers.Dense(3, kernel_initializer=tf.keras.initializers.glorot_uniform(seed=2))])
            model.compile(tf.keras.optimizers.Adam(0.02), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          metrics=["accuracy", tf.keras.metrics.SparseCategoricalAccuracy(name="sca"),
                                   tf.keras.metrics.Sum(name="s")])
        # fit's shuffle draws from np.random, seeded differently on each rank: under the
        # strategy every rank must take rank 0's order (the reference's)
        from mpi4py import MPI
        np.random.seed(11 + (MPI.COMM_WORLD.Get_rank() if strategy is not None else 0))
        h = model.fit(x, y, batch_size=12, epochs=3, verbose=0, validation_data=(x[:15], y[:15]))
        ev = model.evaluate(x, y, batch_size=7, verbose=0)
        return h.history, ev, model.get_weights(), model.predict(x[:9])


@pytest.mark.mpi(min_size=2)
def test_keras_fit_under_mirrored_strategy_n_ranks_is_one_process():
    from mpi4py import MPI
    ref_h, ref_ev, ref_w, ref_p = _keras_fit(None)
    h, ev, w, p = _keras_fit(tf.distribute.MirroredStrategy())
    assert sorted(h) == sorted(ref_h)
    for k in ref_h:
        np.testing.assert_allclose(h[k], ref_h[k], rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(ev, ref_ev, rtol=1e-5, atol=1e-6)
    for a, b in zip(w, ref_w):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p, ref_p, rtol=1e-5, atol=1e-6)
    allw = MPI.COMM_WORLD.allgather(np.concatenate([a.ravel() for a in w]))
    assert all(np.array_equal(a, allw[0]) for a in allw)


def _evaluate(strategy, model_dir, steps=None):
    """Evaluate a fixed linear classifier (restored from the checkpoint written by the
    first call) over 60 rows in 5-row batches: streaming metrics of several kinds."""
    labels_all = (Y[:, 0] > 0).astype(np.int64)

    def input_fn(input_context=None):
        return tf.data.Dataset.from_tensor_slices(({"x": X}, labels_all)).batch(5)

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [4, 1], initializer=tf.constant_initializer([[0.5], [-1.0], [0.3], [0.8]]))
        logits = tf.matmul(features["x"], w)[:, 0]
        prob = tf.sigmoid(logits)
        loss = tf.losses.sigmoid_cross_entropy(labels, logits)
        ops = {"acc": tf.metrics.accuracy(labels, tf.cast(prob > 0.5, tf.int64)),
               "auc": tf.metrics.auc(labels, prob),
               "mean_prob": tf.metrics.mean(prob),
               "rmse": tf.metrics.root_mean_squared_error(tf.cast(labels, tf.float32), prob),
               "rows": tf.metrics.mean(tf.cast(tf.shape(prob)[0], tf.float32), weights=5.0)}
        if mode == tf.estimator.ModeKeys.TRAIN:
            train = tf.assign_add(tf.train.get_global_step(), 1)
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=ops)
    cfg = tf.estimator.RunConfig(eval_distribute=strategy, save_checkpoints_steps=None, save_checkpoints_secs=None)
    est = tf.estimator.Estimator(model_fn, model_dir=model_dir, config=cfg)
    if est.latest_checkpoint() is None:
        est.train(input_fn, steps=1)
    return est.evaluate(input_fn, steps=steps)


@pytest.mark.mpi(min_size=2)
def test_estimator_eval_distribute_n_ranks_is_one_process():
    """Each rank evaluates its round-robin share of the batches; the metric state summed over
    the ranks gives every rank the one-process values over all the batches."""
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    n = comm.Get_size()
    d = comm.bcast(tempfile.mkdtemp() if comm.Get_rank() == 0 else None)
    ref = _evaluate(None, os.path.join(d, f"ref{comm.Get_rank()}"))
    got = _evaluate(tf.distribute.MirroredStrategy(), os.path.join(d, f"dist{comm.Get_rank()}"))
    assert set(got) == set(ref)
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # steps counts global steps: each takes one batch per replica
    part = _evaluate(tf.distribute.MirroredStrategy(), os.path.join(d, f"dist{comm.Get_rank()}"), steps=2)
    first = _evaluate(None, os.path.join(d, f"ref{comm.Get_rank()}"), steps=2 * n)
    for k in ref:
        np.testing.assert_allclose(part[k], first[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # one evaluator writes events, as TF's: only rank 0's eval directory holds them
    ev = os.path.join(d, f"dist{comm.Get_rank()}", "eval")
    assert (os.path.isdir(ev) and bool(os.listdir(ev))) == (comm.Get_rank() == 0)


@pytest.mark.mpi(min_size=2)
def test_estimator_eval_distribute_refuses_state_it_cannot_sum():
    def input_fn(input_context=None):
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(5)

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [4, 1])
        pred = tf.matmul(features["x"], w)
        loss = tf.losses.mean_squared_error(labels, pred)
        return tf.estimator.EstimatorSpec(mode, loss=loss,
                                          eval_metric_ops={"all": tf.contrib.metrics.streaming_concat(pred)})
    cfg = tf.estimator.RunConfig(eval_distribute=tf.distribute.MirroredStrategy())
    est = tf.estimator.Estimator(model_fn, model_dir=tempfile.mkdtemp(), config=cfg)
    with pytest.raises(ValueError, match="cannot be summed over the replicas"):
        est.evaluate(input_fn, steps=1)


@pytest.mark.mpi(min_size=2)
def test_train_and_evaluate_distributed_evaluates_at_the_same_saves_on_every_rank():
    """train_and_evaluate with train_distribute and eval_distribute in one shared model_dir:
    the evaluations after step-based saves run on every rank at the same steps (rank 0's
    throttle clock decides), so their collectives pair up; the final metrics equal one
    process's evaluation of the final checkpoint."""
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    d = comm.bcast(tempfile.mkdtemp() if comm.Get_rank() == 0 else None)

    def input_fn(input_context=None):
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(5)

    def train_input_fn(input_context=None):
        return input_fn().repeat()

    class Count(tf.train.SessionRunHook):
        evals = 0

        def begin(self):
            Count.evals += 1

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
        pred = tf.matmul(features["x"], w)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={"y": pred})
        loss = tf.losses.mean_squared_error(labels, pred)
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train,
                                          eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, pred)})
    s = tf.distribute.MirroredStrategy()
    cfg = tf.estimator.RunConfig(train_distribute=s, eval_distribute=s, save_checkpoints_steps=2)
    est = tf.estimator.Estimator(model_fn, model_dir=os.path.join(d, "shared"), config=cfg)
    def serving():
        x = tf.placeholder(tf.float32, [None, 4])
        return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})
    result, paths = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(train_input_fn, max_steps=5),
        tf.estimator.EvalSpec(input_fn, steps=None, throttle_secs=0, hooks=[Count()],
                              exporters=tf.estimator.FinalExporter("final", serving)))
    assert result["global_step"] == 5
    assert len(paths) == (1 if comm.Get_rank() == 0 else 0)  # rank 0 alone exports
    assert len(set(comm.allgather(Count.evals))) == 1 and Count.evals >= 2
    comm.Barrier()
    ref = tf.estimator.Estimator(model_fn, model_dir=os.path.join(d, "shared"),
                                 config=tf.estimator.RunConfig()).evaluate(input_fn, name=f"ref{comm.Get_rank()}")
    for k in ("mae", "loss"):
        np.testing.assert_allclose(result[k], ref[k], rtol=1e-5, err_msg=k)
    # clocks that disagree: on the other ranks the throttle has long passed, on rank 0 it has
    # not; rank 0 decides, so no rank starts an evaluation alone (it would wait forever)
    import collflow.estimator.training as training
    real = training.time.monotonic
    if comm.Get_rank() != 0:
        training.time = type("Clock", (), {"monotonic": staticmethod(lambda: real() + 1e7)})
    try:
        Count.evals = 0
        est2 = tf.estimator.Estimator(model_fn, model_dir=os.path.join(d, "clocks"), config=cfg)
        tf.estimator.train_and_evaluate(est2, tf.estimator.TrainSpec(train_input_fn, max_steps=5),
                                        tf.estimator.EvalSpec(input_fn, throttle_secs=1000, hooks=[Count()]))
    finally:
        import time
        training.time = time
    assert Count.evals == 1  # the final evaluation only, on every rank
    bad = tf.estimator.Estimator(model_fn, model_dir=os.path.join(d, "bad"), config=tf.estimator.RunConfig(
        train_distribute=s, eval_distribute=s, save_checkpoints_secs=1))
    with pytest.raises(ValueError, match="set RunConfig.save_checkpoints_steps"):
        tf.estimator.train_and_evaluate(bad, tf.estimator.TrainSpec(input_fn, max_steps=2),
                                        tf.estimator.EvalSpec(input_fn))
