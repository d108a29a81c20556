"""cf.layers.batch_normalization against TensorFlow 1.x's tf.layers.batch_normalization:
variables, UPDATE_OPS, batch vs moving statistics, the fused path's Bessel correction.

Its gradient in training mode is checked against finite differences in gradtable_losses.py.
"""
import numpy as np
import pytest

import collflow as cf

RNG = np.random.default_rng(11)
EPS = 1e-3


def _names(vs):
    return [v.name for v in vs]


def test_variables_names_order_and_collections():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 4))
        cf.layers.batch_normalization(x)
        cf.layers.batch_normalization(x, name="bn", center=False)
        cf.layers.batch_normalization(x, scale=False, trainable=False)
        assert _names(cf.global_variables()) == [
            "batch_normalization/gamma:0", "batch_normalization/beta:0", "batch_normalization/moving_mean:0",
            "batch_normalization/moving_variance:0", "bn/gamma:0", "bn/moving_mean:0", "bn/moving_variance:0",
            "batch_normalization_1/beta:0", "batch_normalization_1/moving_mean:0",
            "batch_normalization_1/moving_variance:0"]
        assert _names(cf.trainable_variables()) == ["batch_normalization/gamma:0", "batch_normalization/beta:0",
                                                    "bn/gamma:0"]
        assert all(v.shape.as_list() == [4] for v in cf.global_variables())
        # training=False (the default) builds no updates
        assert cf.get_collection(cf.GraphKeys.UPDATE_OPS) == []


def _bn_graph(shape, training, **kw):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, shape)
        y = cf.layers.batch_normalization(x, training=training, **kw)
        ups = cf.get_collection(cf.GraphKeys.UPDATE_OPS)
        init = cf.global_variables_initializer()
    return g, x, y, ups, init


def _moving(sess, g, name="batch_normalization"):
    with g.as_default():
        vs = {v.name: v for v in cf.global_variables()}
    return sess.run([vs[f"{name}/moving_mean:0"], vs[f"{name}/moving_variance:0"]])


def test_training_uses_batch_statistics_and_updates_the_moving_averages():
    xv = RNG.normal(3.0, 2.0, size=(8, 3)).astype(np.float32)
    g, x, y, ups, init = _bn_graph((None, 3), True, momentum=0.9)
    assert len(ups) == 2
    with cf.Session(graph=g) as s:
        s.run(init)
        out = s.run(y, {x: xv})
        mm0, mv0 = _moving(s, g)
        s.run(ups, {x: xv})
        mm1, mv1 = _moving(s, g)
        s.run(ups, {x: xv})
        mm2, _ = _moving(s, g)
    mean, var = xv.mean(0), xv.var(0)
    np.testing.assert_allclose(out, (xv - mean) / np.sqrt(var + EPS), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(mm0, np.zeros(3))       # running the output alone updates nothing
    np.testing.assert_allclose(mm1, 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(mv1, 0.9 + 0.1 * var, rtol=1e-5)   # the non-fused path: biased variance
    np.testing.assert_allclose(mm2, 0.9 * 0.1 * mean + 0.1 * mean, rtol=1e-5)


def test_inference_uses_the_moving_statistics_gamma_and_beta():
    xv = RNG.normal(size=(5, 2)).astype(np.float32)
    g, x, y, ups, init = _bn_graph((5, 2), False, gamma_initializer=cf.initializers.constant(2.0),
                                   beta_initializer=cf.initializers.constant(0.5),
                                   moving_mean_initializer=cf.initializers.constant(1.0),
                                   moving_variance_initializer=cf.initializers.constant(4.0), epsilon=0.0)
    assert ups == []
    with cf.Session(graph=g) as s:
        s.run(init)
        np.testing.assert_allclose(s.run(y, {x: xv}), (xv - 1.0) / 2.0 * 2.0 + 0.5, rtol=1e-6)


def test_a_bool_tensor_chooses_at_run_time_and_false_updates_nothing():
    xv = RNG.normal(1.0, 3.0, size=(6, 2)).astype(np.float32)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 2))
        training = cf.placeholder_with_default(False, ())
        y = cf.layers.batch_normalization(x, training=training, momentum=0.5)
        ups = cf.get_collection(cf.GraphKeys.UPDATE_OPS)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        inf, _ = s.run([y, ups], {x: xv})
        np.testing.assert_allclose(_moving(s, g), [np.zeros(2), np.ones(2)])
        np.testing.assert_allclose(inf, xv / np.sqrt(1 + EPS), rtol=1e-5)
        tr, _ = s.run([y, ups], {x: xv, training: True})
        np.testing.assert_allclose(tr, (xv - xv.mean(0)) / np.sqrt(xv.var(0) + EPS), rtol=1e-4, atol=1e-5)
        mm, mv = _moving(s, g)
    np.testing.assert_allclose(mm, 0.5 * xv.mean(0), rtol=1e-5)
    np.testing.assert_allclose(mv, 0.5 + 0.5 * xv.var(0), rtol=1e-5)


@pytest.mark.parametrize("axis, fused, bessel", [(3, None, True), (1, True, True), (-1, False, False)])
def test_4d_inputs_take_the_fused_path_with_bessels_correction(axis, fused, bessel):
    xv = RNG.normal(size=(2, 3, 3, 4)).astype(np.float32)
    ax = axis % 4
    red = tuple(i for i in range(4) if i != ax)
    n = xv.size // xv.shape[ax]
    g, x, y, ups, init = _bn_graph(xv.shape, True, axis=axis, fused=fused, momentum=0.0)
    with cf.Session(graph=g) as s:
        s.run(init)
        out, _ = s.run([y, ups], {x: xv})
        mm, mv = _moving(s, g)
    shape = [1] * 4
    shape[ax] = xv.shape[ax]
    mean, var = xv.mean(red).reshape(shape), xv.var(red).reshape(shape)
    np.testing.assert_allclose(out, (xv - mean) / np.sqrt(var + EPS), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mm, mean.reshape(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv, var.reshape(-1) * (n / (n - 1) if bessel else 1.0), rtol=1e-5)


def test_reuse_regularizers_and_unsupported_options():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3))
        cf.layers.batch_normalization(x, name="bn", gamma_regularizer=lambda v: cf.reduce_sum(v))
        cf.layers.batch_normalization(x, name="bn", reuse=True)
        assert len(cf.global_variables()) == 4
        assert len(cf.get_collection(cf.GraphKeys.REGULARIZATION_LOSSES)) == 1
        with pytest.raises(ValueError, match="already exists"):
            cf.layers.batch_normalization(x, name="bn")
        with pytest.raises(ValueError, match="adjustment cannot be specified"):
            cf.layers.batch_normalization(x, virtual_batch_size=2, adjustment=lambda s: (1.0, 0.0))
        with pytest.raises(ValueError, match="axis cannot include 0"):
            cf.layers.batch_normalization(x, axis=0, virtual_batch_size=2)
        with pytest.raises(ValueError, match="does not divide"):
            cf.layers.batch_normalization(cf.zeros([6, 3]), virtual_batch_size=4)
        with pytest.raises(ValueError, match="fused=True.*renorm=True"):
            cf.layers.batch_normalization(x, renorm=True, fused=True)
        with pytest.raises(ValueError, match="renorm_clipping"):
            cf.layers.batch_normalization(x, renorm=True, renorm_clipping={"rmaxx": 2.0})
        with pytest.raises(cf.InvalidArgumentError, match="floating-point"):
            cf.layers.batch_normalization(cf.placeholder(cf.int32, (None, 3)))
        with pytest.raises(cf.InvalidArgumentError, match="known size"):
            cf.layers.batch_normalization(cf.placeholder(cf.float32, (None, None)))
        with pytest.raises(cf.InvalidArgumentError, match="scalar bool"):
            cf.layers.batch_normalization(x, training=cf.constant(1.0))


def test_update_ops_drive_training_with_control_dependencies():
    # the TF1 idiom: the train op depends on UPDATE_OPS, so one run updates both
    xv = RNG.normal(2.0, 1.0, size=(16, 3)).astype(np.float32)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3))
        h = cf.layers.batch_normalization(cf.layers.dense(x, 3), training=True, momentum=0.0)
        loss = cf.reduce_mean(cf.square(h - 1.0))
        with cf.control_dependencies(cf.get_collection(cf.GraphKeys.UPDATE_OPS)):
            train = cf.train.GradientDescentOptimizer(0.1).minimize(loss)
        dense_out = g.get_tensor_by_name("dense/MatMul:0")
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        before = s.run(dense_out, {x: xv})
        s.run(train, {x: xv})
        mm, _ = _moving(s, g)
    np.testing.assert_allclose(mm, before.mean(0), rtol=1e-4, atol=1e-5)   # momentum 0: the batch mean


def test_batch_renorm_against_numpy():
    # r = s / sigma and d = (mean - m) / sigma from the renorm averages (read before they move),
    # clipped, scale and offset r * gamma, d * gamma + beta; the averages then move with
    # renorm_momentum and the moving variance follows a moving stddev
    r0 = np.random.default_rng(3)
    x = r0.uniform(-1, 2, (6, 4)).astype(np.float64)
    eps, mom, rmom = 1e-3, 0.9, 0.5
    g = cf.Graph()
    with g.as_default():
        xt = cf.constant(x)
        y = cf.layers.batch_normalization(xt, training=True, renorm=True, momentum=mom, epsilon=eps,
                                          renorm_momentum=rmom, renorm_clipping={"rmax": 1.1, "dmax": 0.2},
                                          gamma_initializer=cf.initializers.constant(2.0),
                                          beta_initializer=cf.initializers.constant(0.5),
                                          moving_variance_initializer=cf.initializers.constant(4.0))
        names = [v.op.name for v in cf.global_variables()]
        gx = cf.gradients(cf.reduce_sum(y), xt)[0]
        upd = cf.get_collection(cf.GraphKeys.UPDATE_OPS)
        with cf.Session() as s:
            s.run(cf.global_variables_initializer())
            yv, gv = s.run([y, gx])
            s.run(upd)
            after = dict(zip(names, s.run(cf.global_variables())))
    assert names == ["batch_normalization/gamma", "batch_normalization/beta", "batch_normalization/moving_mean",
                     "batch_normalization/moving_variance", "batch_normalization/moving_stddev",
                     "batch_normalization/renorm_mean", "batch_normalization/renorm_stddev"]
    mean, var = x.mean(0), x.var(0)
    std = np.sqrt(var + eps)
    sigma = np.maximum(np.sqrt(4.0), np.sqrt(eps))            # renorm_stddev starts at sqrt(4)
    r = np.minimum(std / sigma, 1.1)
    d = np.clip((mean - 0.0) / sigma, -0.2, 0.2)
    want = (x - mean) / std * (2.0 * r) + (2.0 * d + 0.5)
    np.testing.assert_allclose(yv, want, rtol=1e-10)
    # r and d are constants for the gradient: d sum(y) / dx is that of plain batch norm, 0
    np.testing.assert_allclose(gv, np.zeros_like(x), atol=1e-9)
    np.testing.assert_allclose(after["batch_normalization/renorm_mean"], mean * (1 - rmom), rtol=1e-10)
    np.testing.assert_allclose(after["batch_normalization/renorm_stddev"], 2.0 - (2.0 - std) * (1 - rmom),
                               rtol=1e-10)
    ms = 2.0 - (2.0 - std) * (1 - mom)
    np.testing.assert_allclose(after["batch_normalization/moving_stddev"], ms, rtol=1e-10)
    np.testing.assert_allclose(after["batch_normalization/moving_variance"], np.maximum(ms * ms - eps, 0), rtol=1e-10)
    np.testing.assert_allclose(after["batch_normalization/moving_mean"], mean * (1 - mom), rtol=1e-10)


def test_ghost_batch_norm_normalizes_interleaved_virtual_batches():
    """virtual_batch_size: TF's reshape to [vbs, batch / vbs, ...] puts examples j, j + n, ...
    (n = batch / vbs) in virtual batch j; each is normalized on its own statistics, and the
    moving averages take their mean."""
    g = cf.Graph()
    with g.as_default():
        xv = np.random.RandomState(0).randn(8, 3).astype(np.float64)
        y = cf.layers.batch_normalization(cf.constant(xv), training=True, virtual_batch_size=4, epsilon=1e-3,
                                          momentum=0.5)
        assert [v.get_shape().as_list() for v in cf.global_variables()] == [[1, 1, 3]] * 4
        with cf.Session(graph=g) as s:
            s.run(cf.global_variables_initializer())
            out = s.run(y)
            s.run(cf.get_collection(cf.GraphKeys.UPDATE_OPS))
            mm = s.run(cf.global_variables()[2])
    ghost = xv.reshape(4, 2, 3)                       # [vbs, n, c]: virtual batch j = rows j::2
    m, v = ghost.mean(0, keepdims=True), ghost.var(0, keepdims=True)
    np.testing.assert_allclose(out, ((ghost - m) / np.sqrt(v + 1e-3)).reshape(8, 3), rtol=1e-10)
    np.testing.assert_allclose(mm.reshape(3), 0.5 * m.mean(1).reshape(3), rtol=1e-10)


def test_adjustment_rescales_the_normalized_values_in_training():
    g = cf.Graph()
    with g.as_default():
        xv = np.random.RandomState(2).randn(6, 3)
        adj = lambda shape: (cf.constant([2.0, 1.0, 0.5], cf.float64), cf.constant([0.5, 0.0, -1.0], cf.float64))  # noqa: E731
        t = cf.placeholder(cf.bool, [])
        y = cf.layers.batch_normalization(cf.constant(xv), training=t, adjustment=adj, epsilon=1e-3)
        with cf.Session(graph=g) as s:
            s.run(cf.global_variables_initializer())
            train, infer = s.run(y, {t: True}), s.run(y, {t: False})
    norm = (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-3)
    np.testing.assert_allclose(train, norm * [2.0, 1.0, 0.5] + [0.5, 0.0, -1.0], rtol=1e-10)
    np.testing.assert_allclose(infer, xv / np.sqrt(1 + 1e-3), rtol=1e-10)  # no adjustment in inference
