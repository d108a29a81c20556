"""Differential tests against TensorFlow (graph mode) for tf.linalg's
LinearOperatorBlockLowerTriangular, LinearOperatorPermutation and LinearOperatorTridiag: the
same program built in `tensorflow.compat.v1` and `collflow.compat.v1`, fed the same float64
inputs; outputs, and the gradients of sum(output * W) w.r.t. every input, compared; then the
static shapes and hints, and the errors of bad arguments.  Skipped cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

R = np.random.RandomState(3)


def _flat(outs):
    out = []
    for o in outs if isinstance(outs, (list, tuple)) else [outs]:
        out.extend(_flat(o) if isinstance(o, (list, tuple)) else [o])
    return out


def _run(tf, fn, values):
    g = tf.Graph()
    with g.as_default():
        xs = [tf.placeholder(tf.float64, v.shape) for v in values]
        outs = _flat(fn(tf, *xs))
        r = np.random.RandomState(5)
        loss = tf.add_n([tf.reduce_sum(o * r.uniform(0.5, 1.5, o.shape.as_list())) for o in outs])
        gr = tf.gradients(loss, xs)
        with tf.Session(graph=g) as s:
            feed = dict(zip(xs, values))
            ov = s.run(outs, feed)
            gv = s.run([t if t is not None else tf.zeros_like(x) for t, x in zip(gr, xs)], feed)
    return ov, gv


def _compare(fn, values, rtol=1e-7, atol=1e-8):
    o1, g1 = _run(tft, fn, values)
    o2, g2 = _run(cft, fn, values)
    assert len(o1) == len(o2)
    for k, (a, b) in enumerate(zip(o1, o2)):
        assert np.shape(a) == np.shape(b), (k, np.shape(a), np.shape(b))
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=f"output {k}")
    for k, (a, b) in enumerate(zip(g1, g2)):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=f"gradient {k}")


def _methods(op, x, xv, tf, solve=True):
    out = [op.to_dense(), op.matmul(x), op.matmul(x, adjoint=True), op.matmul(tf.linalg.adjoint(x), adjoint_arg=True),
           op.matvec(xv), op.matvec(xv, adjoint=True), op.trace(), op.diag_part(), op.add_to_tensor(op.to_dense())]
    if solve:
        out += [op.solve(x), op.solve(x, adjoint=True), op.solve(tf.linalg.adjoint(x), adjoint_arg=True),
                op.solvevec(xv), op.solvevec(xv, adjoint=True), op.log_abs_determinant(), op.determinant()]
    return out


def _tri(*batch, n=4):
    """Compact diagonals [..., 3, n] of a diagonally dominant tridiagonal matrix."""
    d = R.randn(*batch, 3, n)
    d[..., 1, :] += 4 * np.sign(d[..., 1, :])
    return d


def _dense_tri(compact):
    n = compact.shape[-1]
    m = np.zeros(compact.shape[:-2] + (n, n))
    for i in range(n):
        m[..., i, i] = compact[..., 1, i]
        if i + 1 < n:
            m[..., i, i + 1] = compact[..., 0, i]
            m[..., i + 1, i] = compact[..., 2, i + 1]
    return m


def _block(tf, a, b, c, d, e, f):
    LA = tf.linalg
    return LA.LinearOperatorBlockLowerTriangular(
        [[LA.LinearOperatorFullMatrix(a)],
         [LA.LinearOperatorFullMatrix(b), LA.LinearOperatorDiag(c)],
         [LA.LinearOperatorFullMatrix(d), LA.LinearOperatorFullMatrix(e), LA.LinearOperatorLowerTriangular(f)]])


_BLOCK_IN = [R.randn(2, 2) + 3 * np.eye(2), R.randn(3, 2), R.uniform(1, 2, 3), R.randn(2, 2), R.randn(2, 3),
             R.randn(2, 2) + 3 * np.eye(2)]

CASES = {
    "perm": (lambda tf, x, v: _methods(tf.linalg.LinearOperatorPermutation([2, 0, 3, 1], dtype=tf.float64), x, v,
                                       tf), [R.randn(4, 3), R.randn(4)]),
    "perm_batch": (lambda tf, x, v: _methods(tf.linalg.LinearOperatorPermutation(
        np.array([[2, 0, 1], [1, 2, 0]], np.int32), dtype=tf.float64), x, v, tf), [R.randn(3, 2), R.randn(2, 3)]),
    "perm_self_adjoint_hint": (lambda tf, x, v: _methods(tf.linalg.LinearOperatorPermutation(
        [1, 0, 2], dtype=tf.float64, is_self_adjoint=True), x, v, tf), [R.randn(3, 2), R.randn(3)]),
    "tridiag_compact": (lambda tf, d, x, v: _methods(tf.linalg.LinearOperatorTridiag(d), x, v, tf),
                        [_tri(2), R.randn(2, 4, 3), R.randn(2, 4)]),
    # (TF's TridiagonalMatMul does not broadcast batch dimensions: tests/test_misc115_linop.py checks that)
    "tridiag_sequence": (lambda tf, a, b, c, x, v: _methods(tf.linalg.LinearOperatorTridiag(
        [a, b, c], diagonals_format="sequence"), x, v, tf),
        [R.randn(5), R.randn(5) + 6, R.randn(5), R.randn(5, 2), R.randn(5)]),
    "tridiag_matrix": (lambda tf, m, x, v: _methods(tf.linalg.LinearOperatorTridiag(
        m, diagonals_format="matrix"), x, v, tf), [_dense_tri(_tri(2)), R.randn(2, 4, 2), R.randn(2, 4)]),
    "block_lower": (lambda tf, a, b, c, d, e, f, x, v: _methods(_block(tf, a, b, c, d, e, f), x, v, tf),
                    _BLOCK_IN + [R.randn(7, 2), R.randn(7)]),
    "block_lower_blockwise": (lambda tf, a, b, c, d, e, f, x, v: [
        _block(tf, a, b, c, d, e, f).matmul([x[:2], x[2:5], x[5:]]),
        _block(tf, a, b, c, d, e, f).matmul([x[:2], x[2:5], x[5:]], adjoint=True),
        _block(tf, a, b, c, d, e, f).solve([x[:2], x[2:5], x[5:]]),
        _block(tf, a, b, c, d, e, f).solve([x[:2], x[2:5], x[5:]], adjoint=True),
        _block(tf, a, b, c, d, e, f).matvec([v[:2], v[2:5], v[5:]]),
        _block(tf, a, b, c, d, e, f).solvevec([v[:2], v[2:5], v[5:]])], _BLOCK_IN + [R.randn(7, 2), R.randn(7)]),
    "block_lower_batch": (lambda tf, a, b, x: _methods(tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorFullMatrix(a)], [tf.linalg.LinearOperatorFullMatrix(b),
                                                   tf.linalg.LinearOperatorFullMatrix(a[0])]]),
            x, x[..., 0], tf), [R.randn(2, 2, 2) + 3 * np.eye(2), R.randn(2, 2), R.randn(2, 4, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients(name):
    fn, values = CASES[name]
    _compare(fn, values)


def test_block_lower_eigvals_and_asserts():
    def fn(tf, a, c):
        LA = tf.linalg
        s = tf.matmul(a, a, transpose_b=True) + 3 * tf.eye(2, dtype=tf.float64)
        op = LA.LinearOperatorBlockLowerTriangular(
            [[LA.LinearOperatorFullMatrix(s, is_self_adjoint=True, is_positive_definite=True)],
             [LA.LinearOperatorFullMatrix(a), LA.LinearOperatorDiag(c, is_positive_definite=True)]],
            is_self_adjoint=True)
        return [tf.sort(op.eigvals()), op.determinant(), op.log_abs_determinant()]
    _compare(fn, [R.randn(2, 2), R.uniform(1, 2, 2)])


PROPS = [
    lambda tf: tf.linalg.LinearOperatorPermutation([1, 0, 2]),
    lambda tf: tf.linalg.LinearOperatorPermutation(np.zeros((2, 5, 4), np.int32) + np.arange(4), is_self_adjoint=True),
    lambda tf: tf.linalg.LinearOperatorPermutation(tf.placeholder(tf.int32, [None, 3]), dtype=tf.complex64),
    lambda tf: tf.linalg.LinearOperatorTridiag(np.ones((2, 3, 5))),
    lambda tf: tf.linalg.LinearOperatorTridiag(np.ones((4, 4)), diagonals_format="matrix", is_non_singular=True),
    lambda tf: tf.linalg.LinearOperatorTridiag([np.ones((2, 1, 3)), np.ones((3, 3)), np.ones(3)],
                                               diagonals_format="sequence", is_positive_definite=True),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular([[tf.linalg.LinearOperatorDiag(np.ones(2))]]),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorDiag(np.ones((3, 2)), is_non_singular=True)],
         [tf.linalg.LinearOperatorFullMatrix(np.ones((1, 2))),
          tf.linalg.LinearOperatorIdentity(1, dtype=tf.float64)]]),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorDiag(np.ones(2), is_non_singular=False)],
         [tf.linalg.LinearOperatorFullMatrix(np.ones((1, 2))), tf.linalg.LinearOperatorDiag(np.ones(1))]]),
]


@pytest.mark.parametrize("k", range(len(PROPS)))
def test_static_properties(k):
    def props(tf):
        with tf.Graph().as_default():
            op = PROPS[k](tf)
            return (op.shape.as_list() if op.shape.rank is not None else None, op.batch_shape.as_list(),
                    op.tensor_rank, op.is_square, op.is_self_adjoint, op.is_non_singular, op.is_positive_definite,
                    op.dtype.name, op.name)
    assert props(cft) == props(tft)


ERRORS = [
    lambda tf: tf.linalg.LinearOperatorPermutation([0, 0, 1]),
    lambda tf: tf.linalg.LinearOperatorPermutation([0.0, 1.0]),
    lambda tf: tf.linalg.LinearOperatorPermutation(1),
    lambda tf: tf.linalg.LinearOperatorPermutation([1, 0], is_non_singular=False),
    lambda tf: tf.linalg.LinearOperatorPermutation([1, 0], is_square=False),
    lambda tf: tf.linalg.LinearOperatorPermutation([1, 0]).matmul(np.ones((2, 2), np.float64)),
    lambda tf: tf.linalg.LinearOperatorPermutation([1, 0]).matmul(np.ones((3, 2), np.float32)),
    lambda tf: tf.linalg.LinearOperatorTridiag(np.ones((3, 3)), diagonals_format="banded"),
    lambda tf: tf.linalg.LinearOperatorTridiag(np.ones((3, 4)), is_square=False).solve(np.ones((4, 1))),
    lambda tf: tf.linalg.LinearOperatorTridiag(np.ones((3, 4))).matmul(np.ones((3, 1))),
    lambda tf: tf.linalg.LinearOperatorTridiag(np.ones((3, 4)), is_non_singular=False).solve(np.ones((4, 1))),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular([]),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorDiag(np.ones(2))], [tf.linalg.LinearOperatorDiag(np.ones(2))]]),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorDiag(np.ones(2))],
         [tf.linalg.LinearOperatorFullMatrix(np.ones((1, 3))), tf.linalg.LinearOperatorDiag(np.ones(1))]]),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorDiag(np.ones(2))],
         [tf.linalg.LinearOperatorFullMatrix(np.ones((2, 2))), tf.linalg.LinearOperatorDiag(np.ones(1))]]),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorDiag(np.ones(2))],
         [tf.linalg.LinearOperatorFullMatrix(np.ones((1, 2), np.float32)), tf.linalg.LinearOperatorDiag(np.ones(1))]]),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular([[tf.linalg.LinearOperatorDiag(np.ones(2))]],
                                                            is_square=False),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorFullMatrix(np.ones((2, 3)))]]),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorDiag(np.ones(2), is_non_singular=True)]], is_non_singular=False),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorDiag(np.ones(2), is_non_singular=False)]], is_non_singular=True),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular(
        [[tf.linalg.LinearOperatorDiag(np.ones(2), is_non_singular=False)]]).solve(np.ones((2, 1))),
    lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular([[tf.linalg.LinearOperatorDiag(np.ones(2))]]).eigvals(),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_argument_errors(k):
    def err(tf):
        with tf.Graph().as_default():
            try:
                ERRORS[k](tf)
            except Exception as e:  # noqa: BLE001 - comparing the class
                return type(e)
        return None
    want = err(tft)
    assert want is not None
    got = err(cft)
    assert got is not None and (issubclass(got, want) or issubclass(want, got)), (got, want)


def test_run_time_checks():
    """assert_non_singular of a singular diagonal block, assert_self_adjoint of a tridiagonal
    with unequal off-diagonals: InvalidArgumentError in both."""
    for tf in (tft, cft):
        with tf.Graph().as_default(), tf.Session() as s:
            LA = tf.linalg
            good = LA.LinearOperatorBlockLowerTriangular([[LA.LinearOperatorDiag(np.array([1.0, 2.0]))]])
            bad = LA.LinearOperatorBlockLowerTriangular([[LA.LinearOperatorDiag(np.array([1.0, 0.0]))]])
            s.run(good.assert_non_singular())
            with pytest.raises(tf.errors.InvalidArgumentError):
                s.run(bad.assert_non_singular())
            sym = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 1.0, 2.0]])  # sup [1 2 .], sub [. 1 2]
            s.run(LA.LinearOperatorTridiag(sym).assert_self_adjoint())
            with pytest.raises(tf.errors.InvalidArgumentError):
                s.run(LA.LinearOperatorTridiag(sym + [[0, 0, 0], [0, 0, 0], [0, 0, 1]]).assert_self_adjoint())
            s.run(LA.LinearOperatorPermutation([1, 0]).assert_non_singular())
