"""What the TF1 programs of tests/tf1/test_vs_tensorflow_programs_real_more.py found wrong,
checked with NumPy: tkipf/gcn's `sparse_placeholder(shape=tf.constant(...))` (a shape tensor is
the dense_shape itself, its value the static shape), SparseTensor.shape read through computed
dense_shapes as TF's constant_value_as_shape reads them, and tensor2tensor's mixture-of-experts
dispatch `tf.split(x, part_sizes_tensor, 0, num=k)` with sizes computed at run time (pieces may
be empty), R-Net's "recurrent" dropout `noise_shape=[tf.shape(x)[0], 1, tf.shape(x)[-1]]`, and
the static shapes TF's shape inference finds that programs read back: resize_images to
[a tensor, an int], tf.slice sized by tf.shape(x)[1] - 1, dynamic_stitch of constant indices;
TensorArray.gather / scatter / concat (a tree-structured net's child lookups), with their
gradients; sparse_segment_sum / mean / sqrt_n's dense gradient to data (TF's: Momentum then
moves every row, as a probe of a GraphSAGE-style aggregator found); and PetarV-/GAT's int32
one-hot labels to softmax_cross_entropy_with_logits, cast
to the logits' dtype as TF casts them."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError

pytestmark = pytest.mark.timeout(120)


# -- sparse_placeholder(shape=<tensor>) and SparseTensor.shape ------------------------------

def test_sparse_placeholder_shape_tensor_is_its_dense_shape():
    with tf.Graph().as_default():
        sp = tf.sparse_placeholder(tf.float32, shape=tf.constant([3, 4], dtype=tf.int64))
        assert sp.get_shape().as_list() == [3, 4]
        w = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2))
        y = tf.sparse_tensor_dense_matmul(sp, w)
        assert y.shape.as_list() == [3, 2]
        value = (np.array([[0, 1], [2, 3]], np.int64), np.array([2., -1.], np.float32), np.array([3, 4], np.int64))
        with tf.Session() as s:
            got, shape = s.run([y, sp.dense_shape], {sp: value})
    dense = np.zeros((3, 4), np.float32)
    dense[0, 1], dense[2, 3] = 2., -1.
    np.testing.assert_allclose(got, dense @ np.arange(8, dtype=np.float32).reshape(4, 2))
    np.testing.assert_array_equal(shape, [3, 4])


def test_sparse_placeholder_int32_shape_tensor_is_cast():
    with tf.Graph().as_default():
        sp = tf.sparse_placeholder(tf.float32, shape=tf.constant([2, 5]))
        assert sp.dense_shape.dtype == tf.int64
        assert sp.shape.as_list() == [2, 5]


def test_sparse_tensor_shape_from_computed_dense_shape():
    with tf.Graph().as_default():
        x = tf.zeros([6, 7])
        n = tf.placeholder(tf.int64, [])
        known = tf.SparseTensor(tf.zeros([0, 2], tf.int64), tf.zeros([0]), tf.cast(tf.shape(x), tf.int64))
        partial = tf.SparseTensor(tf.zeros([0, 2], tf.int64), tf.zeros([0]), tf.stack([n, 7]))
        assert known.shape.as_list() == [6, 7]
        assert partial.shape.as_list() == [None, 7]
        unknown = tf.sparse_placeholder(tf.float32)
        assert unknown.shape.rank is None


# -- split by sizes computed at run time -----------------------------------------------------

def _split_run(sizes, num=None, axis=0, x=None, grad_weights=None):
    x = np.arange(16, dtype=np.float32).reshape(8, 2) if x is None else x
    with tf.Graph().as_default():
        xt = tf.constant(x)
        st = tf.placeholder_with_default(np.asarray(sizes, np.int32), [None] if num is not None else [len(sizes)])
        parts = tf.split(xt, st, axis, num=num)
        fetch = list(parts)
        if grad_weights is not None:
            loss = tf.add_n([tf.reduce_sum(p * w) for p, w in zip(parts, grad_weights) if w is not None])
            fetch.append(tf.gradients(loss, xt)[0])
        with tf.Session() as s:
            return parts, s.run(fetch)


def test_split_by_run_time_sizes_values_and_static_shapes():
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    parts, got = _split_run([3, 0, 5], num=3, x=x)
    assert [p.shape.as_list() for p in parts] == [[None, 2]] * 3
    for g, w in zip(got, np.split(x, [3, 3])):
        np.testing.assert_array_equal(g, w)
    assert got[1].shape == (0, 2)


def test_split_by_run_time_sizes_rest_and_length_from_the_sizes_shape():
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    _, got = _split_run([1, -1], x=x)  # the length (2) is static, so num is not needed
    np.testing.assert_array_equal(got[0], x[:1])
    np.testing.assert_array_equal(got[1], x[1:])
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    _, got = _split_run([4, 2], axis=1, x=x)
    np.testing.assert_array_equal(got[1], x[:, 4:])


def test_split_by_run_time_sizes_gradient_concatenates_with_zeros_for_unused_pieces():
    rng = np.random.RandomState(0)
    ws = [rng.normal(size=(2, 2)).astype(np.float32), None, rng.normal(size=(6, 2)).astype(np.float32)]
    _, got = _split_run([2, 0, 6], num=3, grad_weights=ws)
    np.testing.assert_allclose(got[-1], np.concatenate([ws[0], np.zeros((0, 2), np.float32), ws[2]]))
    ws = [None, rng.normal(size=(5, 2)).astype(np.float32)]
    _, got = _split_run([3, 5], num=2, grad_weights=ws)
    np.testing.assert_allclose(got[-1], np.concatenate([np.zeros((3, 2), np.float32), ws[1]]))


def test_split_by_run_time_sizes_errors():
    with tf.Graph().as_default():
        unknown = tf.placeholder(tf.int32, [None])
        with pytest.raises(ValueError, match="num"):
            tf.split(tf.zeros([4, 2]), unknown)
        with pytest.raises(TypeError, match="int32 or int64"):
            tf.split(tf.zeros([4, 2]), tf.placeholder(tf.float32, [2]))
    with pytest.raises(InvalidArgumentError, match="split_dim"):
        _split_run([3, 4], num=2)  # 7 != 8
    with pytest.raises(InvalidArgumentError, match="split_dim"):
        _split_run([3, 4, 1], num=2)  # three sizes for two pieces


# -- dropout with tf.shape entries in noise_shape ------------------------------------------

def test_dropout_noise_shape_with_static_tensor_entries():
    with tf.Graph().as_default():
        x = tf.ones([3, 5, 4])
        shape = tf.shape(x)
        y = tf.nn.dropout(x, 0.5, noise_shape=[shape[0], 1, shape[-1]], seed=1)
        assert y.shape.as_list() == [3, 5, 4]
        with tf.Session() as s:
            v = s.run(y)
    np.testing.assert_array_equal(v, np.broadcast_to(v[:, :1], v.shape))  # one mask per (row, channel)
    assert set(np.unique(v)) <= {0.0, 2.0}


@pytest.mark.parametrize("as_tensor", [False, True])
def test_dropout_noise_shape_computed_at_run_time(as_tensor):
    x_val = np.random.RandomState(0).normal(size=(40, 5, 3)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5, 3])
        keep = tf.placeholder(tf.float32, [])
        ns = tf.stack([tf.shape(x)[0], 1, 3]) if as_tensor else [tf.shape(x)[0], 1, 3]
        y = tf.nn.dropout(x, keep, noise_shape=ns, seed=3)
        assert y.shape.as_list() == [None, 5, 3]
        g = tf.gradients(tf.reduce_sum(y), x)[0]
        with tf.Session() as s:
            yv, gv = s.run([y, g], {x: x_val, keep: 0.5})
            same = s.run(y, {x: x_val, keep: 1.0})
    mask = gv  # dy/dx is the scaled mask itself
    np.testing.assert_array_equal(mask, np.broadcast_to(mask[:, :1], mask.shape))
    assert set(np.unique(mask)) == {0.0, 2.0}
    np.testing.assert_allclose(yv, x_val * mask)
    np.testing.assert_allclose(same, x_val)


# -- static shapes a program reads back ------------------------------------------------------

def test_resize_images_to_a_list_holding_a_tensor():
    img = np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3)
    with tf.Graph().as_default():
        h = tf.placeholder(tf.int32, [])
        x = tf.constant(img)
        y = tf.image.resize_images(x, [h, 5], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
        y2 = tf.image.resize_images(x, [tf.shape(x)[1] * 2, 3])
        assert y.shape.as_list() == [2, None, 5, 3]
        assert y2.shape.as_list() == [2, 8, 3, 3]
        with tf.Session() as s:
            v = s.run(y, {h: 8})
    np.testing.assert_array_equal(v, img[:, np.arange(8) // 2][:, :, (np.arange(5) * 4) // 5])


def test_slice_size_tensor_the_graph_determines_is_static():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [4, 5, 3])
        n = tf.placeholder(tf.int32, [])
        y = tf.slice(x, [0, 0, 0], [-1, tf.shape(x)[1] - 1, -1])
        z = tf.slice(x, [0, 0, 0], [-1, n, 2])
        assert y.shape.as_list() == [4, 4, 3]
        assert z.shape.as_list() == [4, None, 2]


def test_dynamic_stitch_of_constant_indices_has_static_rows():
    with tf.Graph().as_default():
        d = tf.dynamic_stitch([[0, 2], [1, 5]], [tf.ones([2, 3]), tf.zeros([2, 3])])
        assert d.shape.as_list() == [6, 3]
        computed = tf.dynamic_stitch([tf.placeholder(tf.int32, [None]), [1]], [tf.ones([2, 3]), tf.zeros([1, 3])])
        assert computed.shape.as_list() == [None, 3]
        with tf.Session() as s:
            v = s.run(d)
    np.testing.assert_array_equal(v[:, 0], [1, 0, 1, 0, 0, 0])


# -- TensorArray gather / scatter / concat ----------------------------------------------------

def test_tensor_array_gather_scatter_concat_values():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, size=4).scatter([2, 0, 3, 1], tf.constant(x))
        g = ta.gather(tf.constant([3, 0]))
        assert g.shape.as_list() == [2, 3]
        grown = tf.TensorArray(tf.float32, size=0, dynamic_size=True).scatter([4, 1], tf.constant(x[:2]))
        cat = tf.TensorArray(tf.float32, size=2).unstack(tf.constant(x.reshape(2, 2, 3))).concat()
        assert cat.shape.as_list() == [4, 3]
        none = tf.TensorArray(tf.float32, size=3, element_shape=[3]).unstack(tf.constant(x[:3])).gather(
            tf.zeros([0], tf.int32))
        with tf.Session() as s:
            gv, sv, size, cv, nv = s.run([g, ta.stack(), grown.size(), cat, none])
    np.testing.assert_array_equal(gv, x[[2, 1]])  # element 3 holds x[2], element 0 holds x[1]
    np.testing.assert_array_equal(sv, x[[1, 3, 0, 2]])
    assert size == 5
    np.testing.assert_array_equal(cv, x)
    assert nv.shape == (0, 3)


def test_tensor_array_gather_scatter_gradients():
    x = np.random.RandomState(1).normal(size=(4, 3)).astype(np.float32)
    w = np.random.RandomState(2).normal(size=(3, 3)).astype(np.float32)
    with tf.Graph().as_default():
        xt = tf.constant(x)
        gathered = tf.TensorArray(tf.float32, size=4).unstack(xt).gather([1, 1, 3])
        g_gather = tf.gradients(tf.reduce_sum(gathered * w), xt)[0]
        scattered = tf.TensorArray(tf.float32, size=4).scatter([2, 0, 3, 1], xt).stack()
        g_scatter = tf.gradients(tf.reduce_sum(scattered * np.arange(12, dtype=np.float32).reshape(4, 3)), xt)[0]
        with tf.Session() as s:
            gg, gs = s.run([g_gather, g_scatter])
    want = np.zeros((4, 3), np.float32)
    want[1] = w[0] + w[1]  # a repeated index's gradients add
    want[3] = w[2]
    np.testing.assert_allclose(gg, want)
    np.testing.assert_allclose(gs, np.arange(12, dtype=np.float32).reshape(4, 3)[[2, 0, 3, 1]])


def test_tensor_array_scatter_errors():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, size=4, element_shape=[3])
        with pytest.raises((ValueError, InvalidArgumentError)):
            ta.scatter([0, 1], tf.zeros([2, 5]))
        bad = ta.scatter(tf.placeholder_with_default(np.array([0, 1, 2], np.int32), [None]), tf.zeros([2, 3]))
        with tf.Session() as s, pytest.raises(InvalidArgumentError, match="3 indices"):
            s.run(bad.stack())


# -- softmax cross-entropy with integer one-hot labels ----------------------------------------

@pytest.mark.parametrize("fn", ["softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2"])
def test_softmax_cross_entropy_casts_integer_labels(fn):
    logits_v = np.random.RandomState(0).normal(size=(4, 3)).astype(np.float32)
    labels_v = np.eye(3, dtype=np.int32)[[0, 2, 1, 2]]
    with tf.Graph().as_default():
        logits = tf.constant(logits_v)
        labels = tf.placeholder(tf.int32, [None, 3])
        loss = getattr(tf.nn, fn)(labels=labels, logits=logits)
        grad = tf.gradients(tf.reduce_sum(loss), logits)[0]
        with tf.Session() as s:
            lv, gv = s.run([loss, grad], {labels: labels_v})
    p = np.exp(logits_v - logits_v.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(lv, -np.log((p * labels_v).sum(1)), rtol=1e-5)
    np.testing.assert_allclose(gv, p - labels_v, rtol=1e-5, atol=1e-6)


# -- sparse_segment_*: data's gradient is dense, as TF's -----------------------------------------

@pytest.mark.parametrize("fn", ["sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n"])
def test_sparse_segment_gradient_dense_so_momentum_moves_every_row(fn):
    init = np.arange(12, dtype=np.float32).reshape(6, 2) / 10.
    idx, seg = [0, 2, 4], [0, 0, 1]
    counts = np.bincount(seg).astype(np.float32)
    scale = {"sparse_segment_sum": np.ones(2, np.float32), "sparse_segment_mean": 1 / counts,
             "sparse_segment_sqrt_n": 1 / np.sqrt(counts)}[fn]
    select = np.zeros((2, 6), np.float32)  # the same reduction as a dense matmul
    for i, sg in zip(idx, seg):
        select[sg, i] = scale[sg]
    results = []
    for dense in (False, True):
        with tf.Graph().as_default():
            w = tf.get_variable("w", initializer=init)
            other = [1, 3]  # the second loss touches other rows
            y1 = tf.matmul(tf.constant(select), w) if dense else getattr(tf, fn)(w, idx, seg)
            y2 = tf.matmul(tf.constant(np.eye(6, dtype=np.float32)[other]), w) if dense else \
                getattr(tf, fn)(w, other, [0, 1])
            opt = tf.train.MomentumOptimizer(0.1, 0.9)
            steps = [opt.minimize(tf.reduce_sum(tf.square(y1 - 1.))), opt.minimize(tf.reduce_sum(tf.square(y2)))]
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for k in range(4):
                    s.run(steps[k % 2])
                results.append(s.run(w))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_split_refuses_a_rank_0_size_tensor_as_tf():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Rank-0 tensors are not supported"):
            tf.split(tf.zeros([4, 2]), tf.constant(2))
