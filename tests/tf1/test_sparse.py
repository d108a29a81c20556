"""tf.SparseTensor (graph/sparse_tensor.py) and the ops on it (graph/ops/sparse_ops.py): feeding
and fetching, values against NumPy, and - where TensorFlow is installed - against TF."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

IDX = np.array([[0, 1], [0, 3], [2, 0], [3, 2]], np.int64)
VALS = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
SHAPE = np.array([4, 5], np.int64)
DENSE = np.zeros((4, 5), np.float32)
DENSE[tuple(IDX.T)] = VALS
RNG = np.random.default_rng(8)


def test_feed_fetch_and_dense_ops_match_numpy():
    b = RNG.standard_normal((5, 3)).astype(np.float32)
    with tf.Graph().as_default():
        sp = tf.sparse_placeholder(tf.float32)
        assert tf.is_tensor(sp) and sp.shape.rank is None  # (TF: no shape given, unknown rank)
        known = tf.sparse.placeholder(tf.float32, shape=[4, 5])
        assert known.shape.as_list() == [4, 5]
        out = dict(sp=sp, dense=tf.sparse.to_dense(sp), total=tf.sparse.reduce_sum(sp),
                   rows=tf.sparse_reduce_sum(sp, 1), mm=tf.sparse_tensor_dense_matmul(sp, b),
                   mmt=tf.sparse.matmul(sp, b[:4].T, adjoint_a=True, adjoint_b=True),
                   plus=tf.sparse.add(known, tf.ones([4, 5])),
                   kept=tf.sparse.retain(sp, [True, False, True, True]))
        with tf.Session() as s:
            r = s.run(out, {sp: tf.SparseTensorValue(IDX, VALS, SHAPE), known: (IDX, VALS, SHAPE)})
            shuffled = tf.SparseTensor(IDX[::-1], VALS[::-1], SHAPE)
            ordered = s.run(tf.sparse.reorder(shuffled))
            with pytest.raises(tf.errors.InvalidArgumentError, match="does not match the placeholder's shape"):
                s.run(known.values, {known: (IDX, VALS, [4, 6])})
            # TF1 zips (indices, values, dense_shape) with the value: VALS[0] fed as indices
            with pytest.raises(ValueError, match=r"Cannot feed value of shape \(\)"):
                s.run(sp.values, {sp: VALS})
            with pytest.raises(TypeError, match="SparseTensorValue"):
                s.run(sp.values, {sp: 3.0})
    assert isinstance(r["sp"], tf.SparseTensorValue)
    np.testing.assert_array_equal(r["sp"].indices, IDX)
    np.testing.assert_array_equal(r["dense"], DENSE)
    assert r["total"] == VALS.sum()
    np.testing.assert_array_equal(r["rows"], DENSE.sum(1))
    np.testing.assert_allclose(r["mm"], DENSE @ b, rtol=1e-6)
    np.testing.assert_allclose(r["mmt"], DENSE.T @ b[:4], rtol=1e-6)
    np.testing.assert_array_equal(r["plus"], DENSE + 1)
    np.testing.assert_array_equal(r["kept"].indices, IDX[[0, 2, 3]])
    np.testing.assert_array_equal(ordered.indices, IDX)
    np.testing.assert_array_equal(ordered.values, VALS)


def test_clear_errors():
    with tf.Graph().as_default():
        sp = tf.SparseTensor(IDX, VALS, SHAPE)
        with pytest.raises(TypeError, match="is a SparseTensor: make it dense first"):
            tf.reduce_sum(sp)
        with pytest.raises(tf.errors.InvalidArgumentError, match="dense shapes differ"):
            tf.sparse.add(sp, tf.SparseTensor(IDX, VALS, [4, 6]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="dimension 0 differs"):
            tf.sparse.concat(1, [sp, tf.SparseTensor(IDX, VALS, [5, 5])])
        with pytest.raises(tf.errors.InvalidArgumentError, match="cannot reshape"):
            tf.sparse.reshape(sp, [3, -1])
        with pytest.raises(tf.errors.InvalidArgumentError, match="indices must have rank 2"):
            tf.SparseTensor([0, 1], VALS[:2], SHAPE)
        with pytest.raises(ValueError, match="combiner"):
            tf.nn.embedding_lookup_sparse(tf.ones([3, 2]), tf.SparseTensor(IDX, [0, 1, 2, 1], SHAPE), None,
                                          combiner="max")


def test_embedding_lookup_sparse_combines_each_row():
    table = RNG.standard_normal((10, 4)).astype(np.float32)
    ids = [[1, 4], [2], [], [7, 7, 0]]
    wts = [[1.0, 2.0], [0.5], [], [1.0, 3.0, 2.0]]
    idx = np.array([[r, k] for r, row in enumerate(ids) for k in range(len(row))], np.int64)
    flat_ids = np.array([i for row in ids for i in row], np.int64)
    flat_w = np.array([w for row in wts for w in row], np.float32)
    with tf.Graph().as_default():
        tab = tf.Variable(table)
        sp_ids = tf.SparseTensor(idx, flat_ids, [4, 3])
        sp_w = tf.SparseTensor(idx, flat_w, [4, 3])
        outs = {c: tf.nn.embedding_lookup_sparse(tab, sp_ids, sp_w, combiner=c) for c in ("sum", "mean", "sqrtn")}
        plain = tf.nn.embedding_lookup_sparse(tab, sp_ids, None)
        (g,) = tf.gradients(tf.reduce_sum(outs["mean"]), [tab])
        assert isinstance(g, tf.IndexedSlices)  # only the looked-up rows
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            r, p = s.run([outs, plain])
    for row, (i, w) in enumerate(zip(ids, wts)):
        if not i:
            assert not r["mean"][row].any()  # an empty row in the middle: zeros
            continue
        e, w = table[i], np.array(w, np.float32)
        np.testing.assert_allclose(r["sum"][row], (e * w[:, None]).sum(0), rtol=1e-5)
        np.testing.assert_allclose(r["mean"][row], (e * w[:, None]).sum(0) / w.sum(), rtol=1e-5)
        np.testing.assert_allclose(r["sqrtn"][row], (e * w[:, None]).sum(0) / np.sqrt((w * w).sum()), rtol=1e-5)
        np.testing.assert_allclose(p[row], e.mean(0), rtol=1e-5)


def _tf_programs(T):
    """Programs run by collflow and TensorFlow alike (values and gradients compared)."""
    b = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    b2 = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    table = np.random.default_rng(2).standard_normal((10, 4)).astype(np.float32)
    sp = T.sparse_placeholder(T.float32)
    bv, b2v, tab = T.Variable(b), T.Variable(b2), T.Variable(table)
    mm = T.sparse_tensor_dense_matmul(sp, bv)
    mma = T.sparse.sparse_dense_matmul(sp, b2v, adjoint_a=True)
    ids = T.SparseTensor(np.array([[0, 0], [0, 1], [1, 0], [3, 0], [3, 1], [3, 2]], np.int64),
                         np.array([1, 4, 2, 7, 7, 0], np.int64), [5, 3])
    wts = T.SparseTensor(ids.indices, np.array([1.0, 2.0, 0.5, 1.0, 3.0, 2.0], np.float32), ids.dense_shape)
    ids2 = T.SparseTensor(np.array([[0, 0], [0, 1], [1, 0], [3, 0], [3, 1]], np.int64),
                          np.array([1, -1, 2, 7, 3], np.int64), [5, 3])
    w2 = T.SparseTensor(ids2.indices, np.array([1.0, 2.0, 0.0, 1.0, 3.0], np.float32), ids2.dense_shape)
    emb = [T.nn.embedding_lookup_sparse(tab, ids, w, combiner=c) for c in ("sum", "mean", "sqrtn")
           for w in (None, wts)]
    emb += [T.nn.safe_embedding_lookup_sparse(tab, ids2, w, combiner=c) for c in ("sum", "mean", "sqrtn")
            for w in (None, w2)]
    emb.append(T.nn.safe_embedding_lookup_sparse(tab, ids2, w2, default_id=5))
    loss = T.reduce_sum(mm * mm) + T.reduce_sum(mma) + sum(T.reduce_sum(o * o) for o in emb)
    grads = T.gradients(loss, [sp.values, bv, b2v, tab])
    fetch = [mm, mma, emb, [T.convert_to_tensor(g) for g in grads], T.sparse.to_dense(sp),
             T.sparse.reduce_sum(sp, 0), sp, T.sparse.reorder(T.SparseTensor(IDX[::-1], VALS[::-1], SHAPE))]
    return fetch, {sp: T.SparseTensorValue(IDX, VALS, SHAPE)}


def _in_both(program):
    """program(T) -> (fetches, feed) run with collflow and with TensorFlow's compat.v1 (the
    test is skipped without TensorFlow): [collflow's results, TF's]."""
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    results = []
    for T in (tf, tft):
        with T.Graph().as_default():
            fetch, feed = program(T)
            with T.Session() as s:
                s.run(T.global_variables_initializer())
                results.append(s.run(fetch, feed))
    return results


def test_values_and_gradients_match_tensorflow():
    results = _in_both(_tf_programs)

    def compare(a, b, path):
        if isinstance(a, (list, tuple)):
            assert len(a) == len(b), path
            for k, (x, y) in enumerate(zip(a, b)):
                compare(x, y, f"{path}/{k}")
            return
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (path, a.shape, b.shape, a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=path)
    compare(results[0], results[1], "")


A_IDX = np.array([[0, 1], [1, 1], [2, 0]], np.int64)
B_IDX = np.array([[0, 0], [2, 0]], np.int64)


def _sparse_more(T, fed):
    """sparse + sparse, concat, reshape, slice, fill_empty_rows, transpose: values and the
    gradients of a weighted sum of every result's values; `fed`: the inputs are placeholders
    (shapes known only at run time)."""
    av = T.constant(np.array([0.3, 0.5, 0.2], np.float32))
    bv = T.constant(np.array([0.01, -0.25], np.float32))
    dv = T.constant(np.float32(-1.5))
    if fed:
        pa, pb = T.sparse_placeholder(T.float32), T.sparse_placeholder(T.float32)
        a = T.SparseTensor(pa.indices, pa.values * 0 + av, pa.dense_shape)
        b = T.SparseTensor(pb.indices, pb.values * 0 + bv, pb.dense_shape)
        feed = {pa: T.SparseTensorValue(A_IDX, np.zeros(3, np.float32), [3, 3]),
                pb: T.SparseTensorValue(B_IDX, np.zeros(2, np.float32), [3, 3])}
    else:
        a, b = T.SparseTensor(A_IDX, av, [3, 3]), T.SparseTensor(B_IDX, bv, [3, 3])
        feed = {}
    wide = T.SparseTensor(np.array([[0, 3], [1, 0]], np.int64), T.constant([7.0, 8.0]), [2, 4])
    outs = [T.sparse.add(a, b, threshold=0.35), T.sparse.add(a, b),
            T.sparse.concat(1, [a, b]), T.sparse.concat(0, [a, b, a]),
            T.sparse_concat(0, [a, wide], expand_nonconcat_dim=True),
            T.sparse.reshape(a, [-1, 9]), T.sparse_reshape(b, [9, 1]),
            T.sparse.slice(a, [1, 0], [5, 1]), T.sparse.transpose(a),
            T.sparse.fill_empty_rows(T.SparseTensor(B_IDX, bv, [4, 3]), dv)[0],
            T.sparse.fill_empty_rows(a, dv)[0]]
    loss = 0.0
    for k, o in enumerate(outs):
        if k in (2, 3, 4):  # TF's SparseConcat has no gradient (collflow's has: tested below)
            continue
        w = T.range(1.0, 1.0 + T.cast(T.size(o.values), T.float32)) * (k + 1)
        loss += T.reduce_sum(o.values * w)
    grads = T.gradients(loss, [av, bv, dv])
    empty = T.sparse.fill_empty_rows(T.SparseTensor(B_IDX, bv, [4, 3]), dv)[1]
    return [outs, grads, empty], feed


@pytest.mark.parametrize("fed", [False, True])
def test_sparse_shape_ops_match_tensorflow(fed):
    results = _in_both(lambda T: _sparse_more(T, fed))

    def flat(x):
        if isinstance(x, (list, tuple)) and not hasattr(x, "indices"):
            return [y for e in x for y in flat(e)]
        if hasattr(x, "indices"):
            return [np.asarray(x.indices), np.asarray(x.values), np.asarray(x.dense_shape)]
        return [np.asarray(x)]
    for k, (x, y) in enumerate(zip(flat(results[0]), flat(results[1]))):
        assert x.shape == y.shape, (k, x, y)
        np.testing.assert_allclose(x, y, rtol=1e-6, err_msg=str(k))


def test_sparse_shape_ops_values():
    """The same ops against TF's documented results (runs without TensorFlow)."""
    with tf.Graph().as_default():
        a = tf.SparseTensor([[0, 1], [2, 0], [1, 1]], [0.3, 0.5, 1.0], [3, 3])  # not in row-major order
        b = tf.SparseTensor(B_IDX, [2.0, -0.25], [3, 3])
        got = [tf.sparse.concat(1, [a, b]), tf.sparse.reshape(a, [-1, 3]), tf.sparse.slice(a, [0, 1], [5, 5]),
               tf.sparse.transpose(a), tf.sparse.fill_empty_rows(tf.SparseTensor(B_IDX, [1.0, 2.0], [4, 3]), -1.0)]
        assert got[0].shape.as_list() == [3, 6] and got[2].shape.as_list() == [3, 2]
        with tf.Session() as s:
            cat, resh, sl, tr, (filled, empty) = s.run(got)
    np.testing.assert_array_equal(cat.indices, [[0, 1], [0, 3], [1, 1], [2, 0], [2, 3]])  # row-major
    np.testing.assert_allclose(cat.values, [0.3, 2.0, 1.0, 0.5, -0.25])
    np.testing.assert_array_equal(resh.indices, [[0, 1], [2, 0], [1, 1]])  # the input's order
    np.testing.assert_array_equal(sl.indices, [[0, 0], [1, 0]])
    np.testing.assert_array_equal(sl.dense_shape, [3, 2])
    np.testing.assert_array_equal(tr.indices, [[0, 2], [1, 0], [1, 1]])
    np.testing.assert_allclose(tr.values, [0.5, 0.3, 1.0])
    np.testing.assert_array_equal(filled.indices, [[0, 0], [1, 0], [2, 0], [3, 0]])
    np.testing.assert_allclose(filled.values, [1.0, -1.0, 2.0, -1.0])
    np.testing.assert_array_equal(empty, [False, True, False, True])


def _sparse_grad_cases():
    import gradcheck as gc

    def values_of(make):
        def fn(x):
            return make(x).values
        return fn
    a = lambda x: tf.SparseTensor(A_IDX, x, [3, 3])  # noqa: E731
    b = lambda x: tf.SparseTensor(B_IDX, x[:2] * 2.0, [3, 3])  # noqa: E731
    return [
        gc.Case("UnsortedSegmentSum", values_of(lambda x: tf.sparse.add(a(x), b(x), threshold=0.0)), [(3,)],
                id="sparse_add"),
        gc.Case("GatherV2", values_of(lambda x: tf.sparse.concat(1, [a(x), b(x), a(x * x)])), [(3,)],
                id="sparse_concat"),
        gc.Case("GatherV2", values_of(lambda x: tf.sparse.slice(a(x), [1, 0], [2, 2])), [(3,)], id="sparse_slice"),
        gc.Case("GatherV2", values_of(lambda x: tf.sparse.transpose(a(x))), [(3,)], id="sparse_transpose"),
        gc.Case("FloorMod", values_of(lambda x: tf.sparse.reshape(a(x), [9, -1])), [(3,)], id="sparse_reshape"),
        gc.Case("GatherV2", lambda x, d: tf.sparse.fill_empty_rows(tf.SparseTensor(B_IDX, x, [4, 3]), d[0])[0].values,
                [(2,), (1,)], id="sparse_fill_empty_rows"),
    ]


@pytest.mark.parametrize("i", range(6))
def test_sparse_op_gradients_match_finite_differences(i):
    import gradcheck as gc
    gc.check_case(_sparse_grad_cases()[i])


def _edit_distances(T):
    h = T.SparseTensor([[0, 0, 0], [1, 0, 0]], ["a", "b"], [2, 1, 1])
    t = T.SparseTensor([[0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 1, 0]], ["a", "b", "c", "a"], [2, 2, 2])
    h2 = T.SparseTensor([[0, 0], [0, 1], [0, 2], [2, 0], [3, 0], [3, 1]], [1, 2, 3, 4, 7, 8], [5, 3])
    t2 = T.SparseTensor([[0, 0], [0, 1], [1, 0], [3, 0], [3, 1], [3, 2]], [1, 3, 5, 8, 7, 9], [4, 3])
    return [T.edit_distance(h, t), T.edit_distance(h, t, normalize=False), T.edit_distance(h2, t2),
            T.edit_distance(h2, t2, normalize=False)], {}


def test_edit_distance():
    """Levenshtein distances per leading index (the larger dense shape), normalized by the
    truth's length: inf for an empty truth against a non-empty hypothesis, 0 for two empty."""
    with tf.Graph().as_default():
        fetch, _ = _edit_distances(tf)
        with tf.Session() as s:
            r = s.run(fetch)
    np.testing.assert_array_equal(r[0], [[np.inf, 1.0], [0.5, 1.0]])
    np.testing.assert_array_equal(r[2], np.float32([0.5, 1.0, np.inf, 2 / 3, 0.0]))
    np.testing.assert_array_equal(r[3], [1.0, 1.0, 1.0, 2.0, 0.0])
    theirs = _in_both(_edit_distances)[1]
    for a, b in zip(r, theirs):
        np.testing.assert_allclose(a, b)
