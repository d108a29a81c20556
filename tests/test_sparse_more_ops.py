"""The late sparse ops (graph/ops/sparse_misc_ops.py, sparse_accumulator_ops.py): tf.sparse_matmul,
tf.sparse.bincount / expand_dims / eye / from_dense and tf.SparseConditionalAccumulator.  Values
by hand (no TensorFlow needed), TF's errors, gradients by finite differences."""
import threading

import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as tf
from gradcheck import Case, check_case

IDX = np.array([[0, 0], [0, 2], [1, 1], [1, 2]], np.int64)
RNG = np.random.default_rng(5)


def _run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


# -- sparse_matmul ---------------------------------------------------------------------------------------

def test_sparse_matmul_is_a_matmul_whatever_the_hints():
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((5, 4)).astype(np.float32)
    a[a < 0.3] = 0  # sparse-ish, as the hint claims
    with tf.Graph().as_default():
        outs = [tf.sparse_matmul(a, b, transpose_b=True, a_is_sparse=s1, b_is_sparse=s2)
                for s1 in (False, True) for s2 in (False, True)]
        outs.append(tf.sparse_matmul(b.T, a, transpose_a=True, transpose_b=True))
        assert outs[0].dtype == tf.float32 and outs[0].shape.as_list() == [3, 5]
        r = _run(outs)
    for x in r[:4]:
        np.testing.assert_allclose(x, a @ b.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r[4], (a @ b.T).T, rtol=1e-5, atol=1e-6)
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="DataType float64 not in list of allowed values: float32"):
            tf.sparse_matmul(a.astype(np.float64), b.T)
        with pytest.raises(ValueError, match="Shape must be rank 2"):
            tf.sparse_matmul(a[0], b.T)


def test_sparse_matmul_gradient_by_finite_differences():
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, (3, 2)).astype(np.float32)
    with tf.Graph().as_default():
        pa, pb = tf.placeholder(tf.float32, [3, 4]), tf.placeholder(tf.float32, [4, 2])
        loss = tf.reduce_sum(tf.sparse_matmul(pa, pb, a_is_sparse=True) * w)
        ga, gb = tf.gradients(loss, [pa, pb])
        with tf.Session() as s:
            got_a, got_b = s.run([ga, gb], {pa: a, pb: b})

            def f(x, y):
                return float(s.run(loss, {pa: x, pb: y}))
            eps = 1e-2  # float32: wide steps, the loss is bilinear so central differences are exact
            num_a = np.zeros_like(a)
            for i in np.ndindex(a.shape):
                d = np.zeros_like(a)
                d[i] = eps
                num_a[i] = (f(a + d, b) - f(a - d, b)) / (2 * eps)
            num_b = np.zeros_like(b)
            for i in np.ndindex(b.shape):
                d = np.zeros_like(b)
                d[i] = eps
                num_b[i] = (f(a, b + d) - f(a, b - d)) / (2 * eps)
    np.testing.assert_allclose(got_a, num_a, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(got_b, num_b, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(got_a, w @ b.T, rtol=1e-5)


# -- bincount --------------------------------------------------------------------------------------------

def test_sparse_bincount_dense_input_by_hand():
    x = np.array([[3, 1, 1], [0, 5, 9]], np.int32)
    w = np.array([[1., 2, 3], [4, 5, 6]], np.float32)
    with tf.Graph().as_default():
        r = _run(dict(all=tf.sparse.bincount(x), rows=tf.sparse.bincount(x, axis=-1),
                      minl=tf.sparse.bincount(x, minlength=9), maxl=tf.sparse.bincount(x, maxlength=3),
                      bin=tf.sparse.bincount(x, axis=-1, binary_output=True), w=tf.sparse.bincount(x, weights=w),
                      wr=tf.sparse.bincount(x, weights=w, axis=-1), v=tf.sparse.bincount(np.array([7, 2, 2], np.int64))))
    np.testing.assert_array_equal(r["all"].indices, [[0], [1], [3], [5], [9]])
    np.testing.assert_array_equal(r["all"].values, [1, 2, 1, 1, 1])
    assert r["all"].values.dtype == np.int32 and r["all"].dense_shape.tolist() == [10]
    np.testing.assert_array_equal(r["rows"].indices, [[0, 1], [0, 3], [1, 0], [1, 5], [1, 9]])
    np.testing.assert_array_equal(r["rows"].values, [2, 1, 1, 1, 1])
    assert r["rows"].dense_shape.tolist() == [2, 10]
    assert r["minl"].dense_shape.tolist() == [10]
    np.testing.assert_array_equal(r["maxl"].indices, [[0], [1]])
    assert r["maxl"].dense_shape.tolist() == [3]  # maxlength is the width, whatever was seen
    np.testing.assert_array_equal(r["bin"].values, [1, 1, 1, 1, 1])
    np.testing.assert_array_equal(r["w"].values, [4, 5, 1, 5, 6])
    assert r["w"].values.dtype == np.float32
    np.testing.assert_array_equal(r["wr"].values, [5, 1, 4, 5, 6])
    np.testing.assert_array_equal(r["v"].indices, [[2], [7]])
    np.testing.assert_array_equal(r["v"].values, [2, 1])
    assert r["v"].values.dtype == np.int64 and r["v"].dense_shape.tolist() == [8]


def test_sparse_bincount_sparse_input_and_errors():
    with tf.Graph().as_default():
        sp = tf.SparseTensor(IDX, np.array([3, 1, 1, 3], np.int64), [2, 4])
        ws = tf.SparseTensor(IDX, np.array([0.5, 1, 2, 4], np.float64), [2, 4])
        r = _run(dict(rows=tf.sparse.bincount(sp, axis=-1), all=tf.sparse.bincount(sp),
                      w=tf.sparse.bincount(sp, weights=ws, axis=-1), w0=tf.sparse.bincount(sp, weights=ws)))
        np.testing.assert_array_equal(r["rows"].indices, [[0, 1], [0, 3], [1, 1], [1, 3]])
        np.testing.assert_array_equal(r["rows"].values, [1, 1, 1, 1])
        assert r["rows"].dense_shape.tolist() == [2, 4]
        np.testing.assert_array_equal(r["all"].indices, [[1], [3]])
        np.testing.assert_array_equal(r["all"].values, [2, 2])
        np.testing.assert_array_equal(r["w"].values, [1, 0.5, 2, 4])
        assert r["w"].values.dtype == np.float64
        np.testing.assert_array_equal(r["w0"].values, [3, 4.5])
        with pytest.raises(ValueError, match="mutually exclusive"):
            tf.sparse.bincount(sp, weights=ws, binary_output=True)
        with pytest.raises(ValueError, match="Only 0 and -1 are currently supported"):
            tf.sparse.bincount(sp, axis=1)
        with pytest.raises(ValueError, match="must be a SparseTensor if `values` is a SparseTensor"):
            tf.sparse.bincount(sp, weights=np.ones(4, np.float32))
        with pytest.raises(TypeError, match="DataType float32 not in list of allowed values: int32, int64"):
            tf.sparse.bincount(np.ones(3, np.float32))
        with pytest.raises(tf.errors.InvalidArgumentError, match="Input must be a 1 or 2-dimensional tensor"):
            tf.sparse.bincount(np.ones((2, 2, 2), np.int32), axis=-1)
        other = tf.SparseTensor(IDX[::-1].copy(), np.ones(4, np.float32), [2, 4])
        with pytest.raises(tf.errors.InvalidArgumentError, match="must have the same indices"):
            _run(tf.sparse.bincount(sp, weights=other))
        p = tf.placeholder(tf.int32)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Input values must all be non-negative"):
            _run(tf.sparse.bincount(p, maxlength=3), {p: np.array([1, -1, 9], np.int32)})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Got: \\[2,2,2\\]"):
            _run(tf.sparse.bincount(p, axis=-1), {p: np.ones((2, 2, 2), np.int32)})
        pw = tf.placeholder(tf.float32)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Weights and data must have the same shape"):
            _run(tf.sparse.bincount(p, weights=pw, axis=-1), {p: np.ones((2, 3), np.int32),
                                                             pw: np.ones((2, 2), np.float32)})


def test_math_bincount_is_still_tf1s():
    with tf.Graph().as_default():
        np.testing.assert_array_equal(_run(tf.math.bincount(np.array([1, 1, 3], np.int32))), [0, 2, 0, 1])


# -- expand_dims, eye, from_dense --------------------------------------------------------------------------

def test_sparse_expand_dims_by_hand():
    vals = np.array([1., 2, 3, 4], np.float32)
    with tf.Graph().as_default():
        sp = tf.SparseTensor(IDX, vals, [2, 3])
        fed = tf.sparse_placeholder(tf.float32)
        outs = {a: tf.sparse.expand_dims(sp, a) for a in (0, 1, 2, -1, -2, -3)}
        assert outs[0].shape.as_list() == [1, 2, 3] and tf.sparse.expand_dims(sp).shape.as_list() == [2, 3, 1]
        outs["fed"] = tf.sparse.expand_dims(fed, -2)
        outs["t"] = tf.sparse.expand_dims(sp, tf.constant(1))
        r = _run(outs, {fed: (IDX, vals, [2, 3])})
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
            tf.sparse.expand_dims(sp, 3)
        with pytest.raises(TypeError, match="axis must be an integer"):
            tf.sparse.expand_dims(sp, 1.5)
    dense = np.zeros((2, 3), np.float32)
    dense[tuple(IDX.T)] = vals
    for a, want in ((0, dense[None]), (1, dense[:, None]), (2, dense[..., None]), (-1, dense[..., None]),
                    (-2, dense[:, None]), (-3, dense[None]), ("fed", dense[:, None]), ("t", dense[:, None])):
        got = r[a]
        out = np.zeros(got.dense_shape, np.float32)
        out[tuple(got.indices.T)] = got.values
        np.testing.assert_array_equal(out, want, err_msg=str(a))
        np.testing.assert_array_equal(got.values, vals)


def test_sparse_eye_and_from_dense_by_hand():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        r = _run(dict(e=tf.sparse.eye(3), r=tf.sparse.eye(2, 4, dtype=tf.int32), t=tf.sparse.eye(n, 2),
                      d=tf.sparse.from_dense(np.array([[0, 1.5], [0, 0], [-2, 0]], np.float32)),
                      s=tf.sparse.from_dense(np.array([["a", ""], ["", "b"]])),
                      b=tf.sparse.from_dense(np.array([True, False, True]))), {n: 4})
    np.testing.assert_array_equal(r["e"].indices, [[0, 0], [1, 1], [2, 2]])
    assert r["e"].values.dtype == np.float32 and r["e"].dense_shape.tolist() == [3, 3]
    assert r["r"].values.dtype == np.int32 and r["r"].dense_shape.tolist() == [2, 4]
    np.testing.assert_array_equal(r["t"].indices, [[0, 0], [1, 1]])
    assert r["t"].dense_shape.tolist() == [4, 2]
    np.testing.assert_array_equal(r["d"].indices, [[0, 1], [2, 0]])
    np.testing.assert_array_equal(r["d"].values, [1.5, -2])
    assert r["d"].dense_shape.tolist() == [3, 2]
    assert [v if isinstance(v, str) else v.decode() for v in r["s"].values] == ["a", "b"]
    np.testing.assert_array_equal(r["b"].indices, [[0], [2]])


GRAD_CASES = [
    Case("SparseToDense", lambda v: tf.sparse.to_dense(tf.sparse.expand_dims(tf.SparseTensor(IDX, v, [2, 3]), 1)),
         [(4,)], id="expand_dims"),
    Case("GatherNd", lambda x: tf.sparse.from_dense(x).values * 3.0,
         [(3, 4)], low=0.5, high=2.0, id="from_dense"),
    Case("SparseToDense", lambda v: tf.sparse.to_dense(tf.SparseTensor(IDX, v, [2, 3])) +
         tf.sparse.to_dense(tf.sparse.eye(2, 3, dtype=tf.float64)), [(4,)], id="eye_plus"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients_by_finite_differences(case):
    check_case(case)


# -- SparseConditionalAccumulator ----------------------------------------------------------------------------

def test_accumulator_averages_per_index_and_drops_stale_gradients():
    with tf.Graph().as_default():
        acc = tf.SparseConditionalAccumulator(tf.float32, shape=[5, 2])
        assert acc.name == "sparse_conditional_accumulator" and acc.dtype == tf.float32
        assert tf.sparse.SparseConditionalAccumulator is tf.SparseConditionalAccumulator
        step = tf.placeholder(tf.int64, [])
        a1 = acc.apply_grad([0, 2], [[1., 1.], [2., 2.]], [5, 2], local_step=step)
        a2 = acc.apply_indexed_slices_grad(tf.IndexedSlices(tf.constant([[4., 6.], [3., 3.]]),
                                                            tf.constant([2, 3], tf.int64)), local_step=step)
        n = acc.num_accumulated()
        t = acc.take_grad(2)
        ts = acc.take_indexed_slices_grad(1)
        with tf.Session() as s:
            s.run(a1, {step: 0})
            s.run(a2, {step: 0})
            assert s.run(n) == 2
            got = s.run(t)
            assert s.run(n) == 0
            s.run(a1, {step: 0})  # stale: global step is 1 now
            assert s.run(n) == 0
            s.run(a2, {step: 1})
            last = s.run(ts)
            s.run(acc.set_global_step(10))
            s.run(a1, {step: 9})
            assert s.run(n) == 0
    np.testing.assert_array_equal(got.indices, [0, 2, 3])
    np.testing.assert_array_equal(got.values, [[1, 1], [3, 4], [3, 3]])  # index 2: (2 + 4) / 2, (2 + 6) / 2
    np.testing.assert_array_equal(got.shape, [5, 2])
    assert isinstance(last, tf.IndexedSlicesValue)
    np.testing.assert_array_equal(last.indices, [2, 3])
    np.testing.assert_array_equal(last.values, [[4, 6], [3, 3]])


def test_accumulator_sum_unknown_shape_and_tf_merge_order():
    with tf.Graph().as_default():
        acc = tf.SparseConditionalAccumulator(tf.float64, reduction_type="SUM")
        ops = [acc.apply_grad([3, 1], [[1.], [2.]]), acc.apply_grad([1, 2, 3], [[10.], [20.], [30.]]),
               acc.apply_grad(np.array([1], np.int32), [[100.]])]
        t = acc.take_grad(3)
        with tf.Session() as s:
            for o in ops:
                s.run(o)
            got = s.run(t)
    # TF merges assuming sorted lists: [3, 1] + [1, 2, 3] -> 1 < 3: [1(10), 2(20), 3(1+30)... then 1(2)]
    np.testing.assert_array_equal(got.indices, [1, 2, 3, 1])
    np.testing.assert_array_equal(got.values[:, 0], [110, 20, 31, 2])
    np.testing.assert_array_equal(got.shape, [-1, 1])  # dimension 0 unknown: -1, as TF


def test_accumulator_errors():
    with tf.Graph().as_default():
        acc = tf.SparseConditionalAccumulator(tf.float64, shape=[4, 2])
        a = acc.apply_grad([1], [[3, -3]])
        t = acc.take_grad(2)
        # local_step 5: not stale after the take (a stale gradient is dropped unchecked)
        bad_shape = acc.apply_grad([1], [[1, 1]], [4, 3], local_step=5)
        bad_index = acc.apply_grad([4], [[1, 1]], local_step=5)
        bad_values = acc.apply_grad([1, 2], [[1, 1]], local_step=5)
        bad_width = acc.apply_grad([1], [[1, 1, 1]], local_step=5)
        stale = acc.apply_grad([9], [[1, 1, 1]], local_step=0)
        zero = acc.take_grad(0)
        with tf.Session() as s:
            s.run(a)
            s.run(acc.apply_grad([1], [[2, -2]]))
            with pytest.raises(tf.errors.InvalidArgumentError, match="No OpKernel.*DT_INT32"):
                s.run(tf.SparseConditionalAccumulator(tf.int32).num_accumulated())
            got = s.run(t)
            s.run(stale)
            for op, msg in ((bad_shape, "Shape mismatch: expected shape dim 1 to be 2, got 3"),
                            (bad_index, "index of slice 0 exceeded limits of shape; index is 4 exceeded 4"),
                            (bad_values, "Expected 2 non-empty input values, got 1"),
                            (bad_width, "Shape mismatch: expected values dim 1 to be 2, got 3"),
                            (zero, "Argument num_required must be positive, but was 0")):
                with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
                    s.run(op)
        with pytest.raises(ValueError, match="reduction_type"):
            tf.SparseConditionalAccumulator(tf.float32, reduction_type="MAX")
        with pytest.raises(tf.errors.InvalidArgumentError, match="holds float64"):
            acc.apply_grad([0], tf.constant([[1., 2.]]))
    np.testing.assert_array_equal(got.values, [[2.5, -2.5]])


def test_take_grad_waits_for_another_thread_and_times_out():
    with tf.Graph().as_default():
        acc = tf.SparseConditionalAccumulator(tf.float32, shape=[3])
        apply = acc.apply_grad([0, 2], [5., 7.])
        take = acc.take_grad(1)
        with tf.Session() as s:
            threading.Timer(0.2, lambda: s.run(apply)).start()
            got = s.run(take)
        np.testing.assert_array_equal(got.values, [5, 7])
        with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=200)) as s:
            with pytest.raises(tf.errors.DeadlineExceededError):
                s.run(take)


def test_top_level_names():
    assert cf.sparse_matmul is tf.sparse_matmul
    for n in ("bincount", "expand_dims", "eye", "from_dense", "SparseConditionalAccumulator"):
        assert n in dir(tf.sparse)
