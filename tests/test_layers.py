"""Layers (shapes, variables, collections) and initializers (statistics, seeding)."""
import math

import numpy as np
import pytest

import collflow as cf
from collflow import initializers as init
from collflow import layers


def _run(g, fetches, feed=None):
    with cf.Session(graph=g) as sess:
        sess.run(cf.variables_initializer(g.get_collection(cf.GraphKeys.GLOBAL_VARIABLES)))
        return sess.run(fetches, feed)


# -- dense ---------------------------------------------------------------------------------------


def test_dense_shapes_variables_and_collections():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 5), name="x")
        y = layers.dense(x, 3, activation=cf.nn.relu)
        z = layers.dense(y, 2, name="head", use_bias=False, trainable=False)
        y2 = layers.dense(x, 3)
        assert y.shape.as_list() == [None, 3] and z.shape.as_list() == [None, 2]
        names = [v.name for v in cf.global_variables()]
        assert names == ["dense/kernel:0", "dense/bias:0", "head/kernel:0", "dense_1/kernel:0", "dense_1/bias:0"]
        assert [v.name for v in cf.trainable_variables()] == ["dense/kernel:0", "dense/bias:0",
                                                              "dense_1/kernel:0", "dense_1/bias:0"]
        kernel, bias = cf.global_variables()[:2]
        assert kernel.shape.as_list() == [5, 3] and bias.shape.as_list() == [3]
        assert y2.op.graph is g
    xv = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
    with cf.Session(graph=g) as sess:
        sess.run(cf.global_variables_initializer())
        k, b, out = sess.run([kernel, bias, y], {x: xv})
        np.testing.assert_array_equal(b, np.zeros(3, np.float32))
        np.testing.assert_allclose(out, np.maximum(xv @ k + b, 0), rtol=1e-5, atol=1e-6)
        limit = math.sqrt(6.0 / (5 + 3))  # glorot_uniform by default
        assert np.all(np.abs(k) <= limit) and np.any(k != 0)


def test_dense_on_rank3_inputs_folds_leading_axes():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 4, 6), name="x")
        y = layers.dense(x, 2, kernel_initializer=init.constant(0.5), bias_initializer=init.ones())
        assert y.shape.as_list() == [None, 4, 2]
        loss = cf.reduce_sum(y)
        gk, = cf.gradients(loss, [cf.trainable_variables()[0]])
        assert gk.shape.as_list() == [6, 2]
    xv = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    out, gkv = _run(g, [y, gk], {x: xv})
    np.testing.assert_allclose(out, xv @ np.full((6, 2), 0.5, np.float32) + 1.0)
    np.testing.assert_allclose(gkv, np.repeat(xv.reshape(-1, 6).sum(0)[:, None], 2, axis=1))


def test_dense_regularizer_string_activation_and_errors():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3))
        y = layers.dense(x, 4, activation="tanh", kernel_regularizer=lambda w: 0.1 * cf.reduce_sum(w * w))
        assert y.op.type == "Tanh"
        reg = g.get_collection(cf.GraphKeys.REGULARIZATION_LOSSES)
        assert len(reg) == 1 and reg[0].shape.rank == 0
        with pytest.raises(cf.InvalidArgumentError, match="last dimension"):
            layers.dense(cf.placeholder(cf.float32, (None, None)), 2)
        with pytest.raises(cf.InvalidArgumentError, match="floating-point"):
            layers.dense(cf.placeholder(cf.int32, (None, 2)), 2)
        with pytest.raises(ValueError, match="unknown activation"):
            layers.dense(x, 2, activation="nope")


def test_layer_variables_ignore_control_dependencies():
    g = cf.Graph()
    with g.as_default():
        counter = cf.Variable(np.zeros((), np.float32), name="counter", trainable=False)
        bump = cf.assign_add(counter, 1.0)
        x = cf.placeholder(cf.float32, (None, 2))
        with cf.control_dependencies([bump]):
            layers.dense(x, 2)
    assert _run(g, counter) == 0.0


# -- conv / pooling / flatten ----------------------------------------------------------------------


@pytest.mark.parametrize("padding,strides,want", [("same", 1, [2, 8, 8, 4]), ("valid", 1, [2, 6, 6, 4]),
                                                  ("same", 2, [2, 4, 4, 4]), ("valid", (2, 1), [2, 3, 6, 4])])
def test_conv2d_layer_shapes(padding, strides, want):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 8, 8, 3), name="images")
        y = layers.conv2d(x, 4, 3, strides=strides, padding=padding, activation=cf.nn.relu, name="conv1")
        kernel, bias = cf.global_variables()
        assert kernel.name == "conv1/kernel:0" and kernel.shape.as_list() == [3, 3, 3, 4]
        assert bias.name == "conv1/bias:0" and bias.shape.as_list() == [4]
        assert y.shape.as_list() == [None] + want[1:]
    out = _run(g, y, {x: np.ones((2, 8, 8, 3), np.float32)})
    assert list(out.shape) == want and np.all(out >= 0)


def test_conv2d_layer_matches_a_direct_convolution():
    rng = np.random.default_rng(4)
    xv = rng.normal(size=(1, 5, 5, 2)).astype(np.float32)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (1, 5, 5, 2))
        y = layers.conv2d(x, 3, (2, 3), kernel_initializer=init.random_normal(seed=1),
                          bias_initializer=init.constant(0.25))
        kernel = cf.global_variables()[0]
    out, k = _run(g, [y, kernel], {x: xv})
    want = np.zeros((1, 4, 3, 3), np.float32)
    for i in range(4):
        for j in range(3):
            want[0, i, j] = np.einsum("hwc,hwco->o", xv[0, i:i + 2, j:j + 3], k) + 0.25
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_pooling_and_flatten():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 6, 6, 2))
        mp = layers.max_pooling2d(x, 2, 2)
        ap = layers.average_pooling2d(x, 3, strides=1, padding="same")
        fl = layers.flatten(mp)
        assert mp.shape.as_list() == [None, 3, 3, 2]
        assert ap.shape.as_list() == [None, 6, 6, 2]
        assert fl.shape.as_list() == [None, 18]
        # TF1's Flatten reshapes to (batch, -1): unknown inner dims give an unknown width
        assert layers.flatten(cf.placeholder(cf.float32, (None, None, 2))).shape.as_list() == [None, None]
        with pytest.raises(cf.InvalidArgumentError, match="'channels_last' or 'channels_first'"):
            layers.max_pooling2d(x, 2, data_format="channels_middle")
        # channels_first: the channels-last layer between transposes, in the layer's scope
        mpc = layers.max_pooling2d(cf.transpose(x, [0, 3, 1, 2]), 2, 2, data_format="channels_first")
        assert mpc.shape.as_list() == [None, 2, 3, 3] and mpc.op.name == "max_pooling2d_1/to_channels_first"
    xv = np.arange(2 * 6 * 6 * 2, dtype=np.float32).reshape(2, 6, 6, 2)
    m, f, mc = _run(g, [mp, fl, mpc], {x: xv})
    np.testing.assert_array_equal(mc, np.transpose(m, (0, 3, 1, 2)))
    np.testing.assert_array_equal(m, xv.reshape(2, 3, 2, 3, 2, 2).max(axis=(2, 4)))
    np.testing.assert_array_equal(f, m.reshape(2, -1))


# -- dropout / embedding -------------------------------------------------------------------------


def test_dropout_python_and_tensor_training_flag():
    g = cf.Graph()
    with g.as_default():
        x = cf.ones((200, 50))
        off = layers.dropout(x, rate=0.3, training=False)
        on = layers.dropout(x, rate=0.3, training=True, seed=5)
        flag = cf.placeholder(cf.bool_, (), name="training")
        switch = layers.dropout(x, rate=0.3, training=flag, seed=6)
    with cf.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(off), np.ones((200, 50), np.float32))
        v = sess.run(on)
        kept = v != 0
        assert abs(kept.mean() - 0.7) < 0.03
        np.testing.assert_allclose(v[kept], 1 / 0.7, rtol=1e-6)
        np.testing.assert_array_equal(sess.run(switch, {flag: False}), np.ones((200, 50), np.float32))
        assert abs((sess.run(switch, {flag: True}) != 0).mean() - 0.7) < 0.03


def test_embedding_layer_shapes_and_sparse_gradient():
    g = cf.Graph()
    with g.as_default():
        ids = cf.placeholder(cf.int64, (None, 3), name="ids")
        e = layers.embedding(ids, 10, 4)
        table = cf.global_variables()[0]
        assert table.name == "embedding/embeddings:0" and table.shape.as_list() == [10, 4]
        assert e.shape.as_list() == [None, 3, 4]
        grad, = cf.gradients(cf.reduce_sum(e), [table])
        assert isinstance(grad, cf.IndexedSlices)
    tv, ev = _run(g, [table, e], {ids: np.array([[1, 2, 1]])})
    assert np.all(np.abs(tv) <= 0.05)
    np.testing.assert_array_equal(ev[0], tv[[1, 2, 1]])


# -- initializers ----------------------------------------------------------------------------------


def _draw(initializer, shape, dtype=cf.float32, seed_graph=None):
    g = cf.Graph()
    with g.as_default():
        if seed_graph is not None:
            cf.set_random_seed(seed_graph)
        t = initializer(shape, dtype)
        assert t.shape.as_list() == list(shape) and t.dtype == dtype
    with cf.Session(graph=g) as sess:
        return sess.run(t)


def test_constant_initializers_and_small_graphs():
    np.testing.assert_array_equal(_draw(init.zeros(), (3, 2)), np.zeros((3, 2), np.float32))
    np.testing.assert_array_equal(_draw(init.ones(), (4,), cf.float64), np.ones(4))
    np.testing.assert_array_equal(_draw(init.constant(2.5), (2, 2)), np.full((2, 2), 2.5, np.float32))
    np.testing.assert_array_equal(_draw(init.constant([1, 2, 3, 4]), (2, 2)), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(_draw(init.zeros_initializer(dtype=cf.int32), (2,), cf.int32), [0, 0])
    with pytest.raises(cf.InvalidArgumentError, match="cannot fill"):
        _draw(init.constant([1, 2, 3]), (2, 2))
    # a big zeros variable keeps only a Fill and two scalars in the graph
    g = cf.Graph()
    with g.as_default():
        init.zeros()((1000, 1000))
        consts = [op.attrs["value"].size for op in g.get_operations() if op.type == "Const"]
        assert max(consts) <= 2


@pytest.mark.parametrize("name,make,check", [
    ("random_normal", lambda s: init.random_normal(mean=1.0, stddev=2.0, seed=s),
     lambda v: abs(v.mean() - 1.0) < 0.05 and abs(v.std() - 2.0) < 0.05),
    ("truncated_normal", lambda s: init.truncated_normal(stddev=0.5, seed=s),
     lambda v: np.abs(v).max() <= 1.0 and abs(v.std() - 0.5 * 0.8796) < 0.02),
    ("random_uniform", lambda s: init.random_uniform(-3.0, 1.0, seed=s),
     lambda v: v.min() >= -3.0 and v.max() < 1.0 and abs(v.mean() + 1.0) < 0.05),
    ("glorot_uniform", lambda s: init.glorot_uniform(seed=s),
     lambda v: np.abs(v).max() <= math.sqrt(6 / (200 + 300)) and abs(v.std() - math.sqrt(2 / 500)) < 0.002),
    ("glorot_normal", lambda s: init.glorot_normal(seed=s),
     lambda v: abs(v.std() - math.sqrt(2 / 500)) < 0.002),
    ("he_normal", lambda s: init.he_normal(seed=s),
     lambda v: abs(v.std() - math.sqrt(2 / 200)) < 0.003 and np.abs(v).max() <= 2 * math.sqrt(2 / 200) / 0.8796 + 1e-6),
    ("he_uniform", lambda s: init.he_uniform(seed=s),
     lambda v: np.abs(v).max() <= math.sqrt(6 / 200) and abs(v.std() - math.sqrt(2 / 200)) < 0.003),
    ("lecun_normal", lambda s: init.lecun_normal(seed=s),
     lambda v: abs(v.std() - math.sqrt(1 / 200)) < 0.002),
])
def test_random_initializer_statistics_and_seeding(name, make, check):
    shape = (200, 300)
    a = _draw(make(11), shape)
    assert a.dtype == np.float32
    assert check(a.astype(np.float64)), name
    b = _draw(make(11), shape)
    c = _draw(make(12), shape)
    np.testing.assert_array_equal(a, b)  # same seed: same values in a new graph and Session
    assert not np.array_equal(a, c)
    assert _draw(make(11), (3, 4), cf.float64).dtype == np.float64


def test_variance_scaling_fans_and_modes():
    assert init.compute_fans((3, 3, 16, 32)) == (144, 288)
    assert init.compute_fans((7,)) == (7, 7)
    assert init.compute_fans(()) == (1, 1)
    v = _draw(init.variance_scaling(2.0, "fan_out", "untruncated_normal", seed=1), (3, 3, 16, 64))
    assert abs(v.std() - math.sqrt(2.0 / (9 * 64))) < 0.003
    with pytest.raises(ValueError, match="mode"):
        init.variance_scaling(mode="fan_sideways")
    with pytest.raises(cf.InvalidArgumentError, match="floating-point"):
        init.glorot_uniform()((2, 2), cf.int32)
    with pytest.raises(cf.InvalidArgumentError, match="fully known"):
        init.he_normal()((None, 2))


def test_initializer_lookup_and_layers_accept_names_classes_and_callables():
    assert isinstance(init.get("he_normal"), init.HeNormal)
    assert isinstance(init.get(init.Zeros), init.Zeros)
    assert init.get(None) is None
    with pytest.raises(ValueError, match="unknown initializer"):
        init.get("magic")
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 2))
        layers.dense(x, 3, kernel_initializer="ones", bias_initializer=init.Zeros)
        layers.dense(x, 3, kernel_initializer=lambda shape, dtype: cf.fill(shape, cf.constant(3.0)), name="f")
        k1, _, k2, _ = cf.global_variables()
    a, b = _run(g, [k1, k2])
    np.testing.assert_array_equal(a, np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(b, np.full((2, 3), 3.0, np.float32))


def test_cf_layers_module_is_the_nn_layers_module():
    import collflow.nn
    assert layers.dense is collflow.nn.layers.dense
    assert init.glorot_uniform is collflow.nn.initializers.glorot_uniform
    assert cf.nn.conv2d is not layers.conv2d  # the raw op keeps its name


def test_conv1d_and_1d_pooling_layers_match_numpy():
    rng = np.random.default_rng(5)
    xv = rng.normal(size=(2, 9, 3))
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (None, 9, 3))
        y = cf.layers.conv1d(x, 4, 3, strides=2, padding="valid", activation=cf.nn.relu)
        mp = cf.layers.max_pooling1d(x, 2, 2)
        ap = cf.layers.average_pooling1d(x, 3, 1, padding="same")
        init = cf.global_variables_initializer()
        kernel, bias = [v for v in cf.global_variables() if v.op.name.startswith("conv1d/")]
    assert (kernel.op.name, bias.op.name) == ("conv1d/kernel", "conv1d/bias") and kernel.shape.as_list() == [3, 3, 4]
    with cf.Session(graph=g) as s:
        s.run(init)
        s.run(bias.assign(np.array([0.1, -0.2, 0.3, 0.0])))
        got, m, a, k, b = s.run([y, mp, ap, kernel, bias], {x: xv})
    want = np.stack([np.einsum("nkc,kcf->nf", xv[:, 2 * i:2 * i + 3], k) for i in range(4)], 1) + b
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-12)
    np.testing.assert_array_equal(m, np.maximum(xv[:, 0:8:2], xv[:, 1:9:2]))
    pad = np.concatenate([xv[:, :1] * np.nan, xv, xv[:, :1] * np.nan], 1)
    np.testing.assert_allclose(a, np.stack([np.nanmean(pad[:, i:i + 3], 1) for i in range(9)], 1), rtol=1e-12)


def test_layer_objects_create_once_share_after_and_take_tf1_names():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3))
        d = cf.layers.Dense(4, activation=cf.nn.relu)
        assert not d.built and d.variables == []
        y1 = d(x)
        with cf.variable_scope("elsewhere"):
            y2 = d(x * 2.0)                       # the same variables, wherever it is called
        d2 = cf.layers.Dense(2, use_bias=False, name="head")
        cf.layers.dense(y1, 1)                    # the functional layer counts with the objects
        z = d2(y2)
        init = cf.global_variables_initializer()
    assert d.built and [v.op.name for v in d.variables] == ["dense/kernel", "dense/bias"]
    assert d.kernel is d.variables[0] and d.bias is d.variables[1] and d.name == "dense"
    assert d2.bias is None and [v.op.name for v in d2.trainable_variables] == ["head/kernel"]
    assert sorted(v.op.name for v in g.get_collection(cf.GraphKeys.GLOBAL_VARIABLES)) == [
        "dense/bias", "dense/kernel", "dense_1/bias", "dense_1/kernel", "head/kernel"]
    xv = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    with cf.Session(graph=g) as s:
        s.run(init)
        a, b, k, bb, zz, k2 = s.run([y1, y2, d.kernel, d.bias, z, d2.kernel], {x: xv})
    np.testing.assert_allclose(a, np.maximum(xv @ k + bb, 0), rtol=1e-5)
    np.testing.assert_allclose(b, np.maximum(2 * xv @ k + bb, 0), rtol=1e-5)
    np.testing.assert_allclose(zz, b @ k2, rtol=1e-5)


def test_batch_normalization_and_dropout_objects_take_training():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (8, 3))
        bn = cf.layers.BatchNormalization(momentum=0.5)
        train_out = bn(x, training=True)
        eval_out = bn(x, training=False)
        drop = cf.layers.Dropout(0.5, seed=1)
        kept, dropped = drop(x, training=False), drop(x, training=True)
        updates = g.get_collection(cf.GraphKeys.UPDATE_OPS)
        init = cf.global_variables_initializer()
    assert bn.moving_mean is not None and bn.gamma in bn.trainable_variables
    assert bn.moving_mean in bn.non_trainable_variables and len(bn.variables) == 4
    xv = np.random.default_rng(1).normal(size=(8, 3)).astype(np.float32) + 2.0
    with cf.Session(graph=g) as s:
        s.run(init)
        t, k, dr = s.run([train_out, kept, dropped], {x: xv})
        s.run(updates, {x: xv})
        mm = s.run(bn.moving_mean)
    np.testing.assert_allclose(t.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(mm, 0.5 * xv.mean(0), rtol=1e-5)   # one update at momentum 0.5 from 0
    np.testing.assert_array_equal(k, xv)
    assert set(np.unique(np.round(dr / xv, 5))) <= {0.0, 2.0}


def test_orthogonal_and_identity_initializers():
    g = cf.Graph()
    with g.as_default():
        tall = cf.get_variable("tall", [6, 4], initializer=cf.initializers.orthogonal(gain=2.0, seed=1))
        wide = cf.get_variable("wide", [3, 7], initializer=cf.initializers.orthogonal(seed=2))
        conv = cf.get_variable("conv", [3, 3, 2, 8], initializer=cf.initializers.orthogonal(seed=3))
        eye = cf.get_variable("eye", [3, 5], initializer=cf.initializers.identity(0.5))
        with pytest.raises(ValueError, match="rank >= 2"):
            cf.get_variable("vec", [4], initializer=cf.initializers.orthogonal())
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        t, w, c, e = s.run([tall, wide, conv, eye])
    np.testing.assert_allclose(t.T @ t, 4 * np.eye(4), atol=1e-5)            # orthogonal columns, gain 2
    np.testing.assert_allclose(w @ w.T, np.eye(3), atol=1e-5)                # orthogonal rows (wide)
    c2 = c.reshape(-1, 8)
    np.testing.assert_allclose(c2.T @ c2, np.eye(8), atol=1e-5)              # a conv kernel: per output
    np.testing.assert_array_equal(e, np.eye(3, 5) * 0.5)


def test_conv_layers_channels_first_share_the_channels_last_variables():
    # the same kernel and bias (names and shapes as TF's) give the transposed answer
    x = np.random.default_rng(5).standard_normal((2, 3, 6, 5)).astype(np.float32)
    with cf.Graph().as_default():
        kinit = init.constant_initializer(np.random.default_rng(6).standard_normal((3, 3, 3, 4)).astype(np.float32))
        yc = layers.conv2d(x, 4, 3, padding="same", data_format="channels_first", kernel_initializer=kinit,
                           name="c")
        yl = layers.conv2d(np.transpose(x, (0, 2, 3, 1)), 4, 3, padding="same", kernel_initializer=kinit, name="l")
        c3 = layers.conv3d(np.zeros((1, 2, 3, 4, 5), np.float32), 3, 2, data_format="channels_first")
        assert [v.shape.as_list() for v in cf.global_variables()][:2] == [[3, 3, 3, 4], [4]]
        assert yc.shape.as_list() == [2, 4, 6, 5] and c3.shape.as_list() == [1, 3, 2, 3, 4]
        with cf.Session() as s:
            s.run(cf.global_variables_initializer())
            a, b = s.run([yc, yl])
    np.testing.assert_allclose(a, np.transpose(b, (0, 3, 1, 2)), rtol=1e-5, atol=1e-6)
