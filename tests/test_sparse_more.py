"""TF1's remaining sparse ops (graph/ops/sparse_extra_ops.py): sparse segment reductions,
sparse_softmax, the sparse max/sum reductions, sparse_maximum/minimum, sparse_split,
sparse_to_indicator, sparse_merge, sparse_reset_shape, sparse_mask and SparseTensor (*, /)
dense.  Values by hand (no TensorFlow needed), gradients by finite differences, and - where
TensorFlow is installed - values and errors against TF's."""
import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as tf
from gradcheck import Case, check_case
from tf_peer import run_in_both, tensorflow_v1

IDX = np.array([[0, 1], [0, 3], [2, 0], [2, 2], [2, 4], [3, 2]], np.int64)
VALS = np.array([1.0, -2.0, 3.0, 0.5, -1.0, 4.0], np.float32)
SHAPE = [4, 5]
DATA = np.arange(20, dtype=np.float32).reshape(5, 4)


def _run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


def _same(got, want, what=""):
    """Equal values (close for floats), dtypes and shapes, recursing into SparseTensorValues and lists."""
    if hasattr(want, "dense_shape"):
        for f in ("indices", "values", "dense_shape"):
            _same(getattr(got, f), getattr(want, f), f"{what}.{f}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{what}[{i}]")
    elif isinstance(want, dict):
        for k in want:
            _same(got[k], want[k], k)
    else:
        g, w = np.asarray(got), np.asarray(want)
        assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=what)


# -- values by hand -------------------------------------------------------------------------------

def test_sparse_segment_reductions_by_hand():
    with tf.Graph().as_default():
        idx, ids = [0, 2, 4, 1], [0, 0, 2, 2]
        r = _run(dict(s=tf.sparse_segment_sum(DATA, idx, ids), m=tf.sparse.segment_mean(DATA, idx, ids),
                      q=tf.sparse_segment_sqrt_n(DATA, idx, [0, 1, 1, 1]),
                      n=tf.sparse_segment_sum(DATA, idx, ids, num_segments=4)))
    rows = DATA[idx]
    np.testing.assert_array_equal(r["s"], [rows[0] + rows[1], np.zeros(4), rows[2] + rows[3]])
    np.testing.assert_allclose(r["m"], [(rows[0] + rows[1]) / 2, np.zeros(4), (rows[2] + rows[3]) / 2])
    np.testing.assert_allclose(r["q"], [rows[0], rows[1:].sum(0) / np.sqrt(3)], rtol=1e-6)
    np.testing.assert_array_equal(r["n"], np.concatenate([r["s"], np.zeros((1, 4), np.float32)]))


def test_sparse_segment_errors():
    with tf.Graph().as_default():
        unsorted = tf.sparse_segment_sum(DATA, [0, 1, 2], [1, 0, 1])
        unsorted_n = tf.sparse_segment_mean(DATA, [0, 1, 2], [1, 0, 1], num_segments=3)
        beyond = tf.sparse_segment_sum(DATA, [0, 1, 2], [0, 1, 3], num_segments=3)
        bad_index = tf.sparse_segment_sum(DATA, [0, 9], [0, 0])
        for t in (unsorted, unsorted_n, beyond, bad_index):
            with pytest.raises(tf.errors.InvalidArgumentError):
                _run(t)
        with pytest.raises(TypeError, match="floating-point"):
            tf.sparse_segment_mean(DATA.astype(np.int32), [0], [0])


def test_sparse_softmax_and_reductions_by_hand():
    with tf.Graph().as_default():
        sp = tf.SparseTensor(IDX, VALS, SHAPE)
        r = _run(dict(soft=tf.sparse_softmax(sp), mx=tf.sparse_reduce_max(sp, 1), all=tf.sparse.reduce_max(sp),
                      keep=tf.sparse_reduce_max(sp, reduction_axes=0, keep_dims=True),
                      mxs=tf.sparse_reduce_max_sparse(sp, 1), sums=tf.sparse.reduce_sum_sparse(sp, 0)))
    e = np.exp(VALS - np.array([1, 1, 3, 3, 3, 4], np.float32))
    soft = e / np.array([e[:2].sum()] * 2 + [e[2:5].sum()] * 3 + [e[5]])
    np.testing.assert_allclose(r["soft"].values, soft, rtol=1e-6)
    np.testing.assert_array_equal(r["soft"].indices, IDX)
    np.testing.assert_array_equal(r["mx"], [1, 0, 3, 4])  # row 1 has no entries: 0; row 0's max ignores zeros
    assert r["all"] == 4 and r["keep"].shape == (1, 5)
    np.testing.assert_array_equal(r["keep"], [[3, 1, 4, -2, -1]])
    np.testing.assert_array_equal(r["mxs"].indices, [[0], [2], [3]])
    np.testing.assert_array_equal(r["mxs"].values, [1, 3, 4])
    np.testing.assert_array_equal(r["mxs"].dense_shape, [4])
    np.testing.assert_array_equal(r["sums"].indices, [[0], [1], [2], [3], [4]])
    np.testing.assert_allclose(r["sums"].values, [3, 1, 4.5, -2, -1])


def test_sparse_maximum_minimum_by_hand():
    with tf.Graph().as_default():
        a = tf.SparseTensor([[0, 0], [1, 1]], [-1.0, 2.0], [2, 2])
        b = tf.SparseTensor([[0, 0], [0, 1]], [-3.0, -4.0], [2, 2])
        r = _run(dict(mx=tf.sparse_maximum(a, b), mn=tf.sparse.minimum(a, b)))
        with pytest.raises(tf.errors.InvalidArgumentError, match="dense shapes differ"):
            tf.sparse_maximum(a, tf.SparseTensor([[0, 0]], [1.0], [3, 2]))
    for k in ("mx", "mn"):
        np.testing.assert_array_equal(r[k].indices, [[0, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(r["mx"].values, [-1, 0, 2])  # a missing entry counts as 0
    np.testing.assert_array_equal(r["mn"].values, [-3, -4, 0])


def test_sparse_split_by_hand():
    with tf.Graph().as_default():
        sp = tf.SparseTensor(IDX, VALS, SHAPE)
        parts = tf.sparse_split(sp_input=sp, num_split=2, axis=1)
        dyn = tf.sparse_placeholder(tf.float32)
        dparts = tf.sparse.split(sp_input=dyn, num_split=2, axis=tf.constant(-1))
        r = _run([parts, dparts], {dyn: (IDX, VALS, SHAPE)})
        with pytest.raises(ValueError, match="Keyword arguments are required"):
            tf.sparse_split(sp, 2, 1)
        with pytest.raises(tf.errors.InvalidArgumentError, match="between 1 and 5"):
            tf.sparse_split(sp_input=sp, num_split=6, axis=1)
    for got in r:
        np.testing.assert_array_equal(got[0].indices, [[0, 1], [2, 0], [2, 2], [3, 2]])
        np.testing.assert_array_equal(got[0].values, [1, 3, 0.5, 4])
        np.testing.assert_array_equal(got[0].dense_shape, [4, 3])
        np.testing.assert_array_equal(got[1].indices, [[0, 0], [2, 1]])
        np.testing.assert_array_equal(got[1].values, [-2, -1])
        np.testing.assert_array_equal(got[1].dense_shape, [4, 2])


def test_indicator_merge_reset_shape_by_hand():
    with tf.Graph().as_default():
        ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], np.array([3, 1, 0], np.int64), [3, 2])
        vals = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [10.0, 20.0, 30.0], [3, 2])
        sp = tf.SparseTensor(IDX, VALS, SHAPE)
        r = _run(dict(ind=tf.sparse_to_indicator(ids, 4), merged=tf.sparse_merge(ids, vals, 5),
                      tight=tf.sparse_reset_shape(sp), wide=tf.sparse.reset_shape(sp, [6, 7])))
        with pytest.raises(ValueError, match="dimension sizes >= sp_input.shape"):
            tf.sparse_reset_shape(sp, [3, 9])
        with pytest.raises(ValueError, match="equal lengths"):
            tf.sparse_merge([ids, ids], vals, [5])
        loose = tf.sparse_placeholder(tf.float32)
        small = tf.sparse_reset_shape(loose, [3, 9])
        with pytest.raises(tf.errors.InvalidArgumentError):
            _run(small, {loose: (IDX, VALS, SHAPE)})
    np.testing.assert_array_equal(r["ind"], [[False, True, False, True], [False] * 4, [True, False, False, False]])
    np.testing.assert_array_equal(r["merged"].indices, [[0, 1], [0, 3], [2, 0]])  # row-major: sorted
    np.testing.assert_array_equal(r["merged"].values, [20, 10, 30])
    np.testing.assert_array_equal(r["merged"].dense_shape, [3, 5])
    np.testing.assert_array_equal(r["tight"].dense_shape, [4, 5])
    np.testing.assert_array_equal(r["wide"].dense_shape, [6, 7])
    np.testing.assert_array_equal(r["wide"].indices, IDX)


def test_sparse_mask_by_hand():
    with tf.Graph().as_default():
        a = tf.IndexedSlices(tf.constant(DATA[:3]), tf.constant([12, 26, 45]), tf.constant([50, 4]))
        m = tf.sparse_mask(a, [12, 45])
        r = _run([m.values, m.indices, m.dense_shape])
    np.testing.assert_array_equal(r[0], DATA[1:2])
    np.testing.assert_array_equal(r[1], [26])
    np.testing.assert_array_equal(r[2], [50, 4])


def test_sparse_times_and_over_dense_by_hand():
    row = np.arange(1, 6, dtype=np.float32)
    with tf.Graph().as_default():
        sp = tf.SparseTensor(IDX, VALS, SHAPE)
        dyn = tf.placeholder(tf.float32)  # unknown rank: broadcast_to's path
        r = _run(dict(mul=sp * row, div=sp / row.reshape(1, 5), col=sp * np.arange(4, dtype=np.float32)[:, None],
                      sc=sp * 2.0, dyn=sp * dyn), {dyn: row})
        with pytest.raises(tf.errors.InvalidArgumentError, match="broadcasts dense to sparse only"):
            _ = sp * np.ones((4, 3), np.float32)
        with pytest.raises(TypeError, match="is a SparseTensor"):
            _ = tf.constant(row) * sp  # (TF 2.21 dispatches this to the sparse op; TF 1.x refused it)
    cols = IDX[:, 1]
    np.testing.assert_allclose(r["mul"].values, VALS * row[cols])
    np.testing.assert_allclose(r["dyn"].values, VALS * row[cols])
    np.testing.assert_allclose(r["div"].values, VALS / row[cols])
    np.testing.assert_allclose(r["col"].values, VALS * IDX[:, 0])
    np.testing.assert_allclose(r["sc"].values, VALS * 2)
    np.testing.assert_array_equal(r["mul"].indices, IDX)


def test_unknown_shapes():
    """The run-time-shape paths: a fed SparseTensor of unknown dense shape."""
    with tf.Graph().as_default():
        sp = tf.sparse_placeholder(tf.float32)
        r = _run(dict(mx=tf.sparse_reduce_max(sp, -1), sums=tf.sparse_reduce_sum_sparse(sp, [0]),
                      soft=tf.sparse_softmax(sp), tight=tf.sparse_reset_shape(sp)), {sp: (IDX, VALS, SHAPE)})
    np.testing.assert_array_equal(r["mx"], [1, 0, 3, 4])
    np.testing.assert_array_equal(r["sums"].dense_shape, [5])
    assert np.isclose(r["soft"].values[5], 1.0)
    np.testing.assert_array_equal(r["tight"].dense_shape, [4, 5])


# -- gradients by finite differences ----------------------------------------------------------------

def _sp(v):
    return cf.SparseTensor(IDX, v, SHAPE)


GRAD_CASES = [
    Case("GatherV2", lambda d: cf.sparse_segment_sum(d, [0, 2, 4, 1, 2], [0, 0, 2, 2, 3]), [(5, 3)],
         id="sparse_segment_sum"),
    Case("GatherV2", lambda d: cf.sparse_segment_mean(d, [0, 2, 4, 1, 2], [0, 0, 2, 2, 3]), [(5, 3)],
         id="sparse_segment_mean"),
    Case("GatherV2", lambda d: cf.sparse_segment_sqrt_n(d, [0, 2, 4, 1], [0, 1, 1, 1], num_segments=4), [(5, 3)],
         id="sparse_segment_sqrt_n"),
    Case("Exp", lambda v: cf.sparse_softmax(_sp(v)).values, [(6,)], id="sparse_softmax"),
    Case("GatherNd", lambda v, d: (_sp(v) * d).values, [(6,), (4, 5)], id="sparse_times_dense"),
    Case("GatherNd", lambda v, d: (_sp(v) / d).values, [(6,), (5,)], low=1.0, high=2.0, id="sparse_over_dense"),
    Case("UnsortedSegmentSum", lambda v: cf.sparse_reduce_sum_sparse(_sp(v), 1).values, [(6,)],
         id="sparse_reduce_sum_sparse"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients_by_finite_differences(case):
    check_case(case)


def test_segment_gradient_is_dense_as_tf_and_indexed_slices_when_asked():
    with tf.Graph().as_default():
        d = tf.constant(DATA)
        (g,) = tf.gradients(tf.sparse_segment_sum(d, [0, 2], [0, 0]), [d])
        assert not isinstance(g, tf.IndexedSlices)  # TF's gradient is dense (Momentum moves every row)
        (gs,) = tf.gradients(tf.sparse_segment_sum(d, [0, 2], [0, 0], sparse_gradient=True), [d])
        assert isinstance(gs, tf.IndexedSlices)
        for grad in (g, gs):
            np.testing.assert_array_equal(_run(tf.convert_to_tensor(grad)),
                                          [[1] * 4, [0] * 4, [1] * 4, [0] * 4, [0] * 4])


# -- against TensorFlow ------------------------------------------------------------------------------

B_IDX = np.array([[0, 1], [1, 1], [2, 2], [3, 0]], np.int64)
B_VALS = np.array([3.0, 1.0, -2.0, -5.0], np.float32)
SP3_IDX = np.array([[0, 0, 1], [0, 1, 1], [1, 0, 0], [1, 1, 2]], np.int64)
SP3_VALS = np.array([-1.0, -3.0, 2.0, 5.0], np.float32)


def test_values_against_tensorflow():
    def program(T):
        sp = T.SparseTensor(IDX, VALS, SHAPE)
        sp3 = T.SparseTensor(SP3_IDX, SP3_VALS, [2, 2, 3])
        b = T.SparseTensor(B_IDX, B_VALS, SHAPE)
        ids = T.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1]], np.array([3, 1, 3, 0, 2], np.int64), [3, 2])
        vals = T.SparseTensor(ids.indices, [1.0, 2.0, 3.0, 4.0, 5.0], [3, 2])
        idx = [0, 2, 4, 1]
        return dict(
            ss=T.sparse_segment_sum(DATA, idx, [0, 0, 2, 2]), sm=T.sparse.segment_mean(DATA, idx, [0, 0, 2, 2]),
            sq=T.sparse_segment_sqrt_n(DATA, idx, [0, 1, 1, 1]),
            ssn=T.sparse.segment_sum(DATA, idx, [0, 0, 2, 2], num_segments=5),
            smn=T.sparse_segment_mean(DATA, idx, [1, 1, 2, 2], num_segments=4),
            sqn=T.sparse.segment_sqrt_n(DATA, idx, [1, 1, 2, 2], num_segments=4),
            soft=T.sparse_softmax(sp), soft3=T.sparse.softmax(sp3),
            rmax=T.sparse_reduce_max(sp), rmax0=T.sparse_reduce_max(sp, 0),
            rmax1=T.sparse_reduce_max(sp, 1, keepdims=True), rmax3=T.sparse_reduce_max(sp3, [0, -1]),
            rmaxn=T.sparse.reduce_max(sp, -1), rmaxi=T.sparse_reduce_max(T.SparseTensor(IDX, [1, -2, 3, 5, -1, 4],
                                                                                          SHAPE), 1),
            rms=T.sparse_reduce_max_sparse(sp, 1), rms3=T.sparse.reduce_max_sparse(sp3, -1, keepdims=True),
            rss=T.sparse_reduce_sum_sparse(sp3, 1), rss2=T.sparse_reduce_sum_sparse(sp3, [0, 2], keep_dims=True),
            rssall=T.sparse_reduce_sum_sparse(sp),
            mx=T.sparse_maximum(sp, b), mn=T.sparse.minimum(sp, b), mx3=T.sparse.maximum(sp3, sp3),
            split=T.sparse_split(sp_input=sp, num_split=2, axis=1),
            split0=T.sparse.split(sp_input=sp, num_split=3, axis=0),
            split3=T.sparse_split(sp_input=sp3, num_split=2, axis=-1),
            ind=T.sparse_to_indicator(ids, 4), ind3=T.sparse.to_indicator(T.SparseTensor(SP3_IDX, [0, 2, 2, 1],
                                                                                           [2, 2, 3]), 3),
            merged=T.sparse_merge(ids, vals, 5), merged2=T.sparse.merge([ids, ids], vals, [5, 4]),
            unsorted=T.sparse_merge(ids, vals, 5, already_sorted=True),
            reset=T.sparse_reset_shape(sp), reset2=T.sparse.reset_shape(sp, [5, 6]),
            mul=sp * np.arange(5, dtype=np.float32), mul2=sp * np.arange(1, 5, dtype=np.float32).reshape(4, 1),
            mul3=sp3 * np.arange(6, dtype=np.float32).reshape(2, 1, 3),
            div=sp / np.arange(1, 21, dtype=np.float32).reshape(4, 5), mulsc=sp * 2.0,
            divint=T.SparseTensor(IDX, np.arange(6, dtype=np.int32), SHAPE) / np.int32(4))
    got, want = run_in_both(program)
    _same(got, want)


def test_empty_inputs_against_tensorflow():
    def program(T):
        sp = T.SparseTensor(IDX, VALS, SHAPE)
        e = T.SparseTensor(np.zeros((0, 2), np.int64), np.zeros(0, np.float32), [3, 4])
        return dict(
            no_axes=T.sparse_reduce_max(sp, []), emax=T.sparse_reduce_max(e, 1),
            esum=T.sparse_reduce_sum_sparse(e, 0), emx=T.sparse_maximum(e, e), esoft=T.sparse_softmax(e),
            ereset=T.sparse_reset_shape(e), esplit=T.sparse_split(sp_input=e, num_split=3, axis=0),
            iseg=T.sparse_segment_sum(DATA.astype(np.int32), np.array([1, 3], np.int64), np.array([0, 2], np.int64)),
            eseg=T.sparse_segment_sum(DATA, np.zeros(0, np.int32), np.zeros(0, np.int32)),
            imax=T.sparse_reduce_max_sparse(T.SparseTensor(IDX, np.arange(6, dtype=np.int64), SHAPE), 0))
    got, want = run_in_both(program)
    _same(got, want)


def test_empty_reductions_underneath():
    """Two fixes the ops above needed: reduce_any over nothing is False, and an exclusive
    cumprod of an empty vector is empty."""
    with tf.Graph().as_default():
        r = _run([tf.reduce_any(tf.zeros([2, 0], tf.bool), 1),
                  tf.cumprod(tf.constant(np.zeros(0, np.int64)), exclusive=True, reverse=True)])
    np.testing.assert_array_equal(r[0], [False, False])
    assert r[1].shape == (0,)


def test_fed_shapes_against_tensorflow():
    def program(T):
        sp = T.sparse_placeholder(T.float32)
        d = T.placeholder(T.float32, [None])
        out = dict(mx=T.sparse_reduce_max(sp, 0), split=T.sparse_split(sp_input=sp, num_split=2, axis=0),
                   rs=T.sparse_reduce_sum_sparse(sp, -1), mul=sp * d, soft=T.sparse_softmax(sp),
                   reset=T.sparse_reset_shape(sp), mask=T.sparse_mask(T.IndexedSlices(d, T.constant([3, 1, 4, 0, 7])),
                                                                      [1, 0]).values)
        return out, {sp: T.SparseTensorValue(IDX, VALS, SHAPE), d: np.arange(5, dtype=np.float32)}
    got, want = run_in_both(program)
    _same(got, want)


def _reset_too_small(T):
    sp = T.sparse_placeholder(T.float32)
    return T.sparse_reset_shape(sp, [3, 9]).dense_shape, {sp: T.SparseTensorValue(IDX, VALS, SHAPE)}


@pytest.mark.parametrize("build", [
    lambda T: (T.sparse_segment_sum(DATA, [0, 1, 2], [1, 0, 1]), {}),
    lambda T: (T.sparse_segment_sum(DATA, [0, 1, 2], [0, 1, 3], num_segments=3), {}),
    lambda T: (T.sparse_segment_sqrt_n(DATA, [0, 9], [0, 0]), {}),
    _reset_too_small,
], ids=["unsorted-ids", "id-beyond-num_segments", "index-out-of-range", "reset-shape-too-small"])
def test_run_time_errors_match_tensorflow(build):
    """Both raise InvalidArgumentError at run time (TF's messages differ in detail)."""
    for T in (tf, tensorflow_v1()):
        with T.Graph().as_default():
            t, feed = build(T)
            with T.Session() as s:
                with pytest.raises(T.errors.InvalidArgumentError):
                    s.run(t, feed)


def test_graph_time_errors_match_tensorflow():
    for T in (tf, tensorflow_v1()):
        with T.Graph().as_default():
            sp = T.SparseTensor(IDX, VALS, SHAPE)
            with pytest.raises(ValueError, match="Keyword arguments are required"):
                T.sparse_split(sp, 2, 1)
            with pytest.raises(ValueError, match="axis is required"):
                T.sparse_split(sp_input=sp, num_split=2)
            with pytest.raises(ValueError, match="dimension sizes >= sp_input.shape"):
                T.sparse_reset_shape(sp, [3, 9])
            with pytest.raises(ValueError, match="equal lengths"):
                T.sparse_merge([sp, sp], sp, [4])
            with pytest.raises(TypeError):
                T.sparse_merge(sp, sp, 4.5)
            with pytest.raises(TypeError):
                _ = np.ones(5, np.float32) * sp


def test_sparse_retain_checks_the_mask_shape_as_tf1():
    # TF1 checks to_retain when the graph is built: a vector with one bool per entry
    with tf.Graph().as_default():
        st = tf.SparseTensor([[0, 0], [1, 1], [2, 0]], [1.0, 2.0, 3.0], [3, 2])
        with pytest.raises(ValueError, match="Dimensions 3 and 1 are not compatible"):
            tf.sparse_retain(st, [True])
        with pytest.raises(ValueError, match="rank 1"):
            tf.sparse_retain(st, [[True, False, True]])
        kept = tf.sparse_retain(st, [True, False, True])
        with tf.Session() as sess:
            out = sess.run(kept)
    np.testing.assert_array_equal(out.indices, [[0, 0], [2, 0]])
    np.testing.assert_array_equal(out.values, [1.0, 3.0])
