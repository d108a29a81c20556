"""tf.distribute in one process: TF 1.x's contexts, the one-replica strategies giving the answer
of the same program without a strategy, the Estimator's train_distribute, and the errors.
(N ranks against one process: tests/test_distribute_two_worlds.py, tests/mpi/test_distribute_mpi.py.)"""
import os
import tempfile

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.train import distribute_lib

pytestmark = pytest.mark.timeout(120)

RNG = np.random.RandomState(0)
X = RNG.randn(32, 4).astype(np.float32)
Y = (X @ RNG.randn(4, 1) + 0.1 * RNG.randn(32, 1)).astype(np.float32)


def test_contexts_follow_tf():
    with tf.Graph().as_default():
        assert not tf.distribute.has_strategy()
        assert tf.distribute.get_replica_context() is not None  # the default replica context
        assert not tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_strategy().num_replicas_in_sync == 1
        s = tf.distribute.MirroredStrategy()
        with s.scope():
            assert tf.distribute.has_strategy() and tf.distribute.get_strategy() is s
            assert tf.distribute.in_cross_replica_context()
            assert tf.distribute.get_replica_context() is None

            def fn():
                ctx = tf.distribute.get_replica_context()
                assert ctx is not None and ctx.strategy is s and not tf.distribute.in_cross_replica_context()
                merged = ctx.merge_call(lambda strategy, v: (strategy, tf.distribute.in_cross_replica_context(), v),
                                        args=(3,))
                assert merged == (s, True, 3)
                return ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync
            rid, n = s.experimental_run_v2(fn)
            assert n == 1
            with tf.Session() as sess:
                assert sess.run(rid) == 0
            # a second strategy cannot be entered inside the first
            with pytest.raises(RuntimeError, match="Mixing different"):
                with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
                    pass
        assert not tf.distribute.has_strategy()


def _custom_loop(strategy, steps=3, batch=8, opt=lambda: tf.train.MomentumOptimizer(0.05, 0.9)):
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(batch)

        def step(inputs):
            xb, yb = inputs
            w = tf.get_variable("w", [4, 1], initializer=tf.constant_initializer(0.5))
            loss = tf.reduce_sum(tf.square(tf.matmul(xb, w) - yb)) / float(batch)  # scaled by the global batch
            train = opt().minimize(loss)
            with tf.control_dependencies([train]):
                return tf.identity(loss)
        if strategy is None:
            it = tf.data.make_initializable_iterator(ds)
            loss = step(it.get_next())
            init_it = it.initializer
        else:
            with strategy.scope():
                it = strategy.make_dataset_iterator(ds)
                per = strategy.experimental_run(step, it)
                loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per)
                init_it = it.initialize()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(init_it)
            losses = [sess.run(loss) for _ in range(steps)]
            w = sess.run(tf.global_variables()[0])
    return np.array(losses), w


@pytest.mark.parametrize("make", [lambda: tf.distribute.MirroredStrategy(),
                                  lambda: tf.distribute.OneDeviceStrategy("/cpu:0"),
                                  lambda: tf.distribute.experimental.MultiWorkerMirroredStrategy(),
                                  lambda: tf.distribute.experimental.CentralStorageStrategy(),
                                  lambda: tf.contrib.distribute.MirroredStrategy(num_gpus=1)],
                         ids=["mirrored", "one_device", "multi_worker", "central_storage", "contrib"])
def test_one_replica_custom_loop_is_the_plain_program(make):
    ref_l, ref_w = _custom_loop(None)
    l, w = _custom_loop(make())
    np.testing.assert_allclose(l, ref_l, rtol=1e-6)
    np.testing.assert_allclose(w, ref_w, rtol=1e-6)
    assert not np.allclose(w, 0.5)  # it trained


def test_reduce_and_all_reduce_one_replica():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy()
        v = tf.constant([[1.0, 2.0], [3.0, 6.0]])
        with s.scope():
            total = s.reduce("SUM", v)
            mean_axis = s.reduce(tf.distribute.ReduceOp.MEAN, v, axis=0)
            sum_axis = s.reduce(tf.distribute.ReduceOp.SUM, {"a": v}, axis=1)
            inner = s.experimental_run_v2(lambda: tf.distribute.get_replica_context().all_reduce("MEAN", [v, 2 * v]))
            with pytest.raises(ValueError, match="ReduceOp"):
                s.reduce("MAX", v)
            with pytest.raises(RuntimeError, match="cross-replica"):
                s.experimental_run_v2(lambda: s.reduce("SUM", v))
        assert s.experimental_local_results(v) == (v,)
        with tf.Session() as sess:
            t, ma, sa, inn = sess.run([total, mean_axis, sum_axis, inner])
        np.testing.assert_allclose(t, [[1, 2], [3, 6]])
        np.testing.assert_allclose(ma, [2.0, 4.0])
        np.testing.assert_allclose(sa["a"], [3.0, 9.0])
        np.testing.assert_allclose(inn[1], [[2, 4], [6, 12]])


def test_input_context_and_reduce_op():
    ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=4)
    assert (ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync) == (2, 1, 4)
    assert ctx.get_per_replica_batch_size(64) == 16
    with pytest.raises(ValueError, match="not divisible"):
        ctx.get_per_replica_batch_size(10)
    assert tf.distribute.ReduceOp.from_variable_aggregation(tf.VariableAggregation.SUM) is tf.distribute.ReduceOp.SUM
    assert tf.distribute.ReduceOp.from_variable_aggregation(tf.VariableAggregation.MEAN) is \
        tf.distribute.ReduceOp.MEAN


def test_apply_gradients_in_cross_replica_context_is_tf_error():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy()
        with s.scope():
            w = tf.Variable(1.0)
            loss = tf.square(w)
            opt = tf.train.GradientDescentOptimizer(0.1)
            with pytest.raises(RuntimeError, match="cross-replica context"):
                opt.minimize(loss)


def test_loss_reduction_rule():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy()
        with s.scope():
            assert tf.distribute.get_loss_reduction() is tf.distribute.ReduceOp.SUM  # not under an Estimator
            s._scale_loss_for_estimator = True
            try:
                tf.losses.mean_squared_error(tf.ones([2]), tf.zeros([2]))
                assert tf.distribute.get_loss_reduction() is tf.distribute.ReduceOp.MEAN
                tf.losses.absolute_difference(tf.ones([2]), tf.zeros([2]), reduction=tf.losses.Reduction.SUM)
                assert tf.distribute.get_loss_reduction() is tf.distribute.ReduceOp.SUM
            finally:
                s._scale_loss_for_estimator = False


def test_refused_strategies_and_bad_config():
    with pytest.raises(NotImplementedError, match="MirroredStrategy"):
        tf.distribute.experimental.ParameterServerStrategy()
    with pytest.raises(NotImplementedError, match="TPU"):
        tf.distribute.experimental.TPUStrategy()
    with pytest.raises(ValueError, match="train_distribute must be a tf.distribute.Strategy"):
        tf.estimator.RunConfig(train_distribute="mirrored")
    with pytest.raises(ValueError, match="empty"):
        tf.distribute.MirroredStrategy(devices=[])
    with pytest.raises(ValueError, match="CrossDeviceOps"):
        tf.distribute.MirroredStrategy(cross_device_ops="nccl")
    s = tf.distribute.MirroredStrategy(cross_device_ops=tf.distribute.NcclAllReduce(num_packs=2))
    cfg = tf.estimator.RunConfig(experimental_distribute=tf.contrib.distribute.DistributeConfig(train_distribute=s))
    assert cfg.train_distribute is s and cfg.replace(save_summary_steps=5).train_distribute is s
    with tf.Graph().as_default(), s.scope():
        with pytest.raises(ValueError, match="must return a tf.data.Dataset"):
            s.make_input_fn_iterator(lambda ctx: (tf.zeros([1]), tf.zeros([1])))


def _estimator(strategy, batch):
    def input_fn(input_context=None):
        if strategy is not None:
            assert isinstance(input_context, tf.distribute.InputContext)
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(batch)

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
        loss = tf.losses.mean_squared_error(labels, tf.matmul(features["x"], w))
        train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)
    cfg = tf.estimator.RunConfig(train_distribute=strategy, save_checkpoints_steps=1000, tf_random_seed=1)
    est = tf.estimator.Estimator(model_fn, model_dir=tempfile.mkdtemp(), config=cfg)
    est.train(input_fn)
    return est.get_variable_value("w"), est.get_variable_value("global_step")


def test_estimator_train_distribute_one_replica_is_the_plain_estimator():
    ref_w, ref_step = _estimator(None, 8)
    w, step = _estimator(tf.distribute.MirroredStrategy(), 8)
    assert step == ref_step == 4
    np.testing.assert_allclose(w, ref_w, rtol=1e-6)


def test_estimator_eval_distribute_one_replica_is_the_plain_evaluate():
    def input_fn(input_context=None):
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(7)

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [4, 1], initializer=tf.constant_initializer(0.5))
        pred = tf.matmul(features["x"], w)
        loss = tf.losses.mean_squared_error(labels, pred)
        ops = {"mae": tf.metrics.mean_absolute_error(labels, pred), "m": tf.metrics.mean(pred)}
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=ops)
    out = []
    for strategy in (None, tf.distribute.MirroredStrategy()):
        cfg = tf.estimator.RunConfig(eval_distribute=strategy)
        est = tf.estimator.Estimator(model_fn, model_dir=tempfile.mkdtemp(), config=cfg)
        out.append(est.evaluate(input_fn))
        assert os.listdir(est.eval_dir())  # the one replica writes the events
    assert set(out[0]) == set(out[1]) == {"mae", "m", "loss", "global_step"}
    for k in out[0]:
        np.testing.assert_allclose(out[1][k], out[0][k], rtol=1e-6, err_msg=k)


def test_keras_compiled_in_scope_trains_as_without():
    def fit(strategy):
        with tf.Graph().as_default():
            tf.set_random_seed(3)
            scope = strategy.scope() if strategy is not None else _null()
            with scope:
                m = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,),
                                                               kernel_initializer="ones")])
                m.compile(tf.keras.optimizers.SGD(0.05), "mse")
            h = m.fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False)
            return h.history["loss"], m.get_weights()[0]
    ref_l, ref_w = fit(None)
    l, w = fit(tf.distribute.MirroredStrategy())
    np.testing.assert_allclose(l, ref_l, rtol=1e-6)
    np.testing.assert_allclose(w, ref_w, rtol=1e-6)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_names_and_default_strategy_object():
    d = tf.distribute.get_strategy()
    assert isinstance(d, tf.distribute.Strategy) and d.num_replicas_in_sync == 1
    assert isinstance(tf.distribute.MirroredStrategy().extended, tf.distribute.StrategyExtended)
    assert tf.contrib.distribute.get_distribution_strategy is tf.distribute.get_strategy
    assert distribute_lib.get_cross_replica_context() is d
    for n in ("MirroredStrategy", "OneDeviceStrategy", "ReduceOp", "InputContext", "InputReplicationMode",
              "ReplicaContext", "Strategy", "StrategyExtended", "get_strategy", "has_strategy",
              "in_cross_replica_context", "get_replica_context", "get_loss_reduction", "experimental_set_strategy",
              "NcclAllReduce", "HierarchicalCopyAllReduce", "ReductionToOneDevice", "CrossDeviceOps", "Server"):
        assert hasattr(tf.distribute, n), n
