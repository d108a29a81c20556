"""The square-matrix ops (graph/ops/linalg_ops.py) against numpy.linalg, and their errors.
(Gradients: tests/gradtable_linalg.py; against TensorFlow: tests/tf1/test_vs_tensorflow_more.py.)"""
import numpy as np
import pytest

import collflow as cf
from collflow.compat import v1 as tf

RNG = np.random.default_rng(5)


def _run(fetches, feeds=None):
    with cf.Session() as s:
        return s.run(fetches, feeds)


def test_values_match_numpy():
    a = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    spd = a @ np.swapaxes(a, -1, -2)
    b = RNG.standard_normal((2, 4, 3))
    with cf.Graph().as_default():
        sign, logabs = tf.linalg.slogdet(a)
        got = _run([cf.matrix_inverse(a), cf.matrix_inverse(a, adjoint=True), cf.matrix_determinant(a), sign,
                    logabs, cf.cholesky(spd), cf.matrix_solve(a, b), cf.matrix_solve(a, b, adjoint=True),
                    cf.matrix_triangular_solve(a, b), cf.matrix_triangular_solve(a, b, lower=False, adjoint=True),
                    cf.trace(a), cf.cholesky_solve(cf.cholesky(spd), b), tf.linalg.logdet(spd)])
    s, la = np.linalg.slogdet(a)
    want = [np.linalg.inv(a), np.linalg.inv(np.swapaxes(a, -1, -2)), np.linalg.det(a), s, la,
            np.linalg.cholesky(spd), np.linalg.solve(a, b), np.linalg.solve(np.swapaxes(a, -1, -2), b),
            np.linalg.solve(np.tril(a), b), np.linalg.solve(np.swapaxes(np.triu(a), -1, -2), b),
            np.trace(a, axis1=-2, axis2=-1), np.linalg.solve(spd, b), np.linalg.slogdet(spd)[1]]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_band_part_keeps_tf1s_bands():
    x = np.arange(20).reshape(4, 5)
    with cf.Graph().as_default():
        lower1, upper, all_ = _run([cf.matrix_band_part(x, 1, 0), cf.matrix_band_part(x, 0, -1),
                                    cf.matrix_band_part(x, -1, -1)])
    i, j = np.indices((4, 5))
    np.testing.assert_array_equal(lower1, np.where((i - j <= 1) & (j <= i), x, 0))
    np.testing.assert_array_equal(upper, np.triu(x))
    np.testing.assert_array_equal(all_, x)


def test_band_part_with_counts_known_only_at_run_time():
    """TF takes the counts as tensors: a mask built in the graph, with its gradient."""
    x = RNG.standard_normal((2, 4, 5))
    i, j = np.indices((4, 5))
    with cf.Graph().as_default():
        p = cf.placeholder(cf.float64)  # unknown rank too
        lo, hi = cf.placeholder(cf.int64, ()), cf.placeholder(cf.int32, ())
        b = cf.matrix_band_part(p, lo, hi)
        (g,) = cf.gradients(cf.reduce_sum(b * 3.0), [p])
        with cf.Session() as s:
            for l_, h_ in [(1, 0), (-1, 2), (0, -1), (-1, -1), (0, 0)]:
                bv, gv = s.run([b, g], {p: x, lo: l_, hi: h_})
                keep = ((l_ < 0) | (i - j <= l_)) & ((h_ < 0) | (j - i <= h_))
                np.testing.assert_array_equal(bv, np.where(keep, x, 0.0))
                np.testing.assert_array_equal(gv, np.where(keep, 3.0, 0.0) + 0 * x)


def test_gradients_through_inputs_of_unknown_rank():
    """matrix_transpose (and so Cholesky's gradient) on a rank known only at run time."""
    a = RNG.standard_normal((2, 3, 3))
    with cf.Graph().as_default():
        pu = cf.placeholder(cf.float64)
        pk = cf.placeholder(cf.float64, a.shape)
        outs = []
        for p in (pu, pk):
            spd = cf.matmul(p, cf.matrix_transpose(p)) + 3.0 * cf.eye(3, dtype=cf.float64)
            outs += [cf.matrix_transpose(p), cf.gradients(cf.reduce_sum(cf.cholesky(spd) * a), [p])[0]]
        tu, gu, tk, gk = _run(outs, {pu: a, pk: a})
        with pytest.raises(cf.InvalidArgumentError, match="rank >= 2"):
            _run(cf.matrix_transpose(pu), {pu: np.ones(3)})
    np.testing.assert_array_equal(tu, np.swapaxes(a, -1, -2))
    np.testing.assert_array_equal(tu, tk)
    np.testing.assert_allclose(gu, gk, rtol=1e-12)


def test_clear_errors():
    with cf.Graph().as_default():
        p = cf.placeholder(cf.float64, (None, None))
        with pytest.raises(cf.InvalidArgumentError, match="not invertible"):
            _run(cf.matrix_inverse(p), {p: np.ones((2, 2))})
        with pytest.raises(cf.InvalidArgumentError, match="Cholesky decomposition was not successful"):
            _run(cf.cholesky(p), {p: -np.eye(3)})
        with pytest.raises(cf.InvalidArgumentError, match="must be square"):
            _run(cf.matrix_determinant(p), {p: np.ones((2, 3))})
        with pytest.raises(cf.InvalidArgumentError, match="do not fit"):
            _run(cf.matrix_solve(p, np.ones((3, 1))), {p: np.eye(2)})
        with pytest.raises(cf.InvalidArgumentError, match="square matrices"):
            cf.matrix_inverse(np.ones((2, 3)))
        with pytest.raises(cf.InvalidArgumentError, match="float32 or float64"):
            cf.cholesky(np.eye(2, dtype=np.int32))


def test_svd_reconstructs_and_orders():
    a = RNG.standard_normal((2, 3, 5))
    with cf.Graph().as_default():
        s, u, v = cf.svd(a)
        sf, uf, vf = cf.svd(a, full_matrices=True)
        assert s.shape.as_list() == [2, 3] and u.shape.as_list() == [2, 3, 3] and v.shape.as_list() == [2, 5, 3]
        assert vf.shape.as_list() == [2, 5, 5]
        sv, uv, vv, only, vfv = _run([s, u, v, cf.svd(a, compute_uv=False), vf])
    np.testing.assert_allclose(uv @ (sv[..., None] * np.swapaxes(vv, -1, -2)), a, atol=1e-12)
    assert np.all(np.diff(sv, axis=-1) <= 0)                          # descending
    np.testing.assert_allclose(only, sv, rtol=1e-12)
    np.testing.assert_allclose(np.swapaxes(vfv, -1, -2) @ vfv, np.broadcast_to(np.eye(5), (2, 5, 5)), atol=1e-12)
