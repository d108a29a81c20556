"""Differential tests of tf.sparse_matmul, tf.sparse.bincount / expand_dims / eye / from_dense and
tf.SparseConditionalAccumulator against TensorFlow's graph mode: the same program run in
collflow.compat.v1 and tensorflow.compat.v1, values, dtypes, shapes and gradients compared.
Skipped cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tf_peer import run_in_both  # noqa: E402

IDX = np.array([[0, 0], [0, 2], [1, 1], [1, 2]], np.int64)
RNG = np.random.default_rng(11)


def _same(got, want, what=""):
    """Equal values (close for floats), dtypes and shapes; SparseTensorValues, namedtuples, lists."""
    if want is None:
        assert got is None, what
    elif hasattr(want, "dense_shape") and hasattr(want, "indices"):
        for f in ("indices", "values", "dense_shape"):
            _same(getattr(got, f), getattr(want, f), f"{what}.{f}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{what}[{i}]")
    elif isinstance(want, dict):
        for k in want:
            _same(got[k], want[k], f"{what}{k}")
    else:
        g, w = np.asarray(got), np.asarray(want)
        if w.dtype == object:
            assert [x.decode() if isinstance(x, bytes) else x for x in g.reshape(-1).tolist()] == \
                [x.decode() for x in w.reshape(-1).tolist()], what
            return
        assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=what)


def test_sparse_matmul_values_and_gradients():
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    a[a < 0] = 0
    b = RNG.standard_normal((2, 4)).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, (3, 2)).astype(np.float32)

    def prog(T):
        pa, pb = T.placeholder(T.float32, [3, 4]), T.placeholder(T.float32, [2, 4])
        y = T.sparse_matmul(pa, pb, transpose_b=True, a_is_sparse=True, b_is_sparse=False)
        y2 = T.sparse_matmul(pb, pa, transpose_b=True, b_is_sparse=True)
        grads = T.gradients(T.reduce_sum(y * w) + T.reduce_sum(y2), [pa, pb])
        return [y, y2] + grads, {pa: a, pb: b}
    got, want = run_in_both(prog)
    _same(got, want)


@pytest.mark.parametrize("kw", [{}, {"axis": -1}, {"minlength": 9}, {"maxlength": 3}, {"maxlength": 3, "axis": -1},
                                {"binary_output": True}, {"binary_output": True, "axis": -1},
                                {"weights": "w"}, {"weights": "w", "axis": -1}, {"minlength": 2, "maxlength": 4},
                                {"maxlength": 0}],
                         ids=str)
def test_bincount_dense(kw):
    x = np.array([[3, 1, 1, 8], [0, 5, 2, 5]], np.int32)
    w = RNG.uniform(0, 2, x.shape).astype(np.float32)

    def prog(T):
        args = dict(kw, weights=w) if kw.get("weights") else kw
        return [T.sparse.bincount(x, **args), T.sparse.bincount(x.astype(np.int64)[0], **args if "weights" not in kw
                                                               else dict(args, weights=w[0]))]
    got, want = run_in_both(prog)
    _same(got, want)


@pytest.mark.parametrize("kw", [{}, {"axis": -1}, {"weights": True}, {"weights": True, "axis": -1},
                                {"binary_output": True, "axis": -1}, {"maxlength": 2, "axis": -1}], ids=str)
def test_bincount_sparse(kw):
    def prog(T):
        sp = T.SparseTensor(IDX, np.array([3, 1, 1, 3], np.int64), [3, 4])
        args = dict(kw)
        if args.pop("weights", False):
            args["weights"] = T.SparseTensor(IDX, np.array([0.5, 1, 2, 4], np.float64), [3, 4])
        return T.sparse.bincount(sp, **args)
    got, want = run_in_both(prog)
    _same(got, want)


def test_expand_dims_eye_from_dense():
    vals = np.array([1., -2, 3, 4], np.float32)
    dense = np.array([[0, 1.5, 0], [0, 0, 0], [-2, 0, 7]], np.float32)

    def prog(T):
        sp = T.SparseTensor(IDX, vals, [2, 3])
        fed = T.sparse_placeholder(T.float32)
        n = T.placeholder(T.int32, [])
        d = T.placeholder(T.float32, [3, 3])
        out = {f"e{a}": T.sparse.expand_dims(sp, a) for a in (0, 1, 2, -1, -3)}
        out["efed"] = T.sparse.expand_dims(fed, 1)
        out["eye"] = T.sparse.eye(3)
        out["eye24"] = T.sparse.eye(2, 4, dtype=T.int64)
        out["eyen"] = T.sparse.eye(n, 3)
        out["fd"] = T.sparse.from_dense(d)
        out["fs"] = T.sparse.from_dense(np.array([["a", ""], ["", "b"]]))
        out["fb"] = T.sparse.from_dense(np.array([[True, False]]))
        out["fi"] = T.sparse.from_dense(np.array([0, 3, 0, -1], np.int32))
        # gradients through the values: from_dense's to the dense cells, expand_dims' to the values
        v = T.placeholder(T.float32, [4])
        loss = T.reduce_sum(T.sparse.expand_dims(T.SparseTensor(IDX, v, [2, 3]), 0).values * 2.0) + \
            T.reduce_sum(T.sparse.from_dense(d).values ** 2)
        out["grads"] = T.gradients(loss, [v, d])
        return out, {fed: (IDX, vals, [2, 3]), n: 2, d: dense, v: vals}
    got, want = run_in_both(prog)
    _same(got, want)


def _accumulate(T, dtype, shape, reduction, steps):
    """steps: ("apply", indices, values, shape or None, local_step) / ("take", n) / ("num",) /
    ("step", s): each run in order in one Session; the results listed."""
    acc = T.SparseConditionalAccumulator(dtype, shape=shape, reduction_type=reduction)
    fetches = []
    for st in steps:
        if st[0] == "apply":
            fetches.append(acc.apply_grad(np.array(st[1], np.int64), np.array(st[2], dtype.as_numpy_dtype
                                          if hasattr(dtype, "as_numpy_dtype") else dtype.np), st[3], st[4]))
        elif st[0] == "take":
            fetches.append(acc.take_grad(st[1]))
        elif st[0] == "slices":
            fetches.append(acc.take_indexed_slices_grad(st[1]))
        elif st[0] == "num":
            fetches.append(acc.num_accumulated())
        else:
            fetches.append(acc.set_global_step(st[1]))
    out = []
    with T.Session() as s:
        for f in fetches:
            try:
                r = s.run(f)
            except T.errors.InvalidArgumentError as e:
                r = "error: " + str(e)  # TF 2.21's message: "Graph execution error:" and the kernel's further on
            if r is not None and hasattr(r, "indices"):
                r = [r.indices, r.values, r.dense_shape if hasattr(r, "dense_shape") else r.shape]
            out.append(r)
    return out


STEPS = [
    ("apply", [0, 2], [[1., 1.], [2., 2.]], [5, 2], 0), ("apply", [2, 3], [[4., 6.], [3., 3.]], None, 0),
    ("apply", [1, 2, 4], [[1., 2.], [3., 4.], [5., 6.]], [5, 2], 3), ("num",), ("take", 3), ("num",),
    ("apply", [0], [[7., 7.]], None, 0), ("num",), ("apply", [3, 1], [[1., 1.], [2., 2.]], None, 1),
    ("apply", [1, 3], [[5., 5.], [9., 9.]], None, 1), ("slices", 2), ("step", 7), ("apply", [0], [[1., 1.]], None, 6),
    ("num",), ("apply", [0], [[1., 1.]], [5, 3], 7), ("apply", [5], [[1., 1.]], None, 7),
    ("apply", [0, 1], [[1., 1.]], None, 7), ("apply", [0], [[1., 1., 1.]], None, 7), ("num",),
    ("apply", [4], [[2., 4.]], None, 7), ("apply", [4], [[1., 1., 1.]], None, 7), ("take", 1),
]


@pytest.mark.parametrize("reduction", ["MEAN", "SUM"])
def test_sparse_conditional_accumulator(reduction):
    from tf_peer import tensorflow_v1
    import collflow.compat.v1 as cf
    tft = tensorflow_v1()
    res = []
    for T in (cf, tft):
        with T.Graph().as_default():
            res.append(_accumulate(T, T.float32, [5, 2], reduction, STEPS))
    got, want = res
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, str):
            assert isinstance(g, str) and g.split("\n")[0].split(": ", 1)[1] in w, (i, g, w)
        elif w is None:
            assert g is None, (i, g)
        else:
            _same(g, w, f"step {i} {STEPS[i]}")


def test_sparse_conditional_accumulator_unknown_shape_and_int():
    from tf_peer import tensorflow_v1
    import collflow.compat.v1 as cf
    tft = tensorflow_v1()
    steps = [("apply", [3, 1], [[3, -3], [1, 1]], None, 0), ("apply", [1, 3], [[2, -2], [4, 5]], None, 0),
             ("take", 2), ("apply", [2], [[1, 1]], [9, 2], 1), ("take", 1)]
    res, errs = [], []
    for T in (cf, tft):
        with T.Graph().as_default():
            res.append(_accumulate(T, T.float64, None, "MEAN", steps))
        with T.Graph().as_default():
            errs.append(_accumulate(T, T.int32, None, "MEAN", [("num",)])[0])
    _same(res[0], res[1])
    assert "No OpKernel was registered to support Op 'SparseConditionalAccumulator'" in errs[0]
    assert "No OpKernel was registered to support Op 'SparseConditionalAccumulator'" in errs[1]
