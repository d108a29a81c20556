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
            with pytest.raises(TypeError, match="SparseTensorValue"):
                s.run(sp.values, {sp: VALS})
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
        with pytest.raises(tf.errors.InvalidArgumentError, match="two SparseTensors"):
            tf.sparse.add(sp, sp)
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


def test_values_and_gradients_match_tensorflow():
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    results = []
    for T in (tf, tft):
        with T.Graph().as_default():
            fetch, feed = _tf_programs(T)
            with T.Session() as s:
                s.run(T.global_variables_initializer())
                results.append(s.run(fetch, feed))

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
