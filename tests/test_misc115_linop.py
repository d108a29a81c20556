"""tf.linalg.LinearOperatorPermutation, LinearOperatorTridiag and
LinearOperatorBlockLowerTriangular by hand (no TensorFlow needed): each against the dense
NumPy matrix it stands for (matmul / matvec with both adjoint flags, solve / solvevec, the
determinants, trace, diagonal, batch broadcasting, blockwise arguments), the hints and the
argument errors, and finite-difference gradients to the operators' parameters."""
import os
import sys

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow import errors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gradcheck import Case, check_case  # noqa: E402

LA = tf.linalg
R = np.random.RandomState(11)


def _compact_to_dense(c):
    n = c.shape[-1]
    m = np.zeros(c.shape[:-2] + (n, n))
    idx = np.arange(n)
    m[..., idx, idx] = c[..., 1, :]
    m[..., idx[:-1], idx[1:]] = c[..., 0, :-1]
    m[..., idx[1:], idx[:-1]] = c[..., 2, 1:]
    return m


def _tri(*batch, n=4):
    c = R.randn(*batch, 3, n)
    c[..., 1, :] += 4 * np.sign(c[..., 1, :])
    return c


def _solve(a, b):
    """np.linalg.solve of matrices b broadcast against a's batch (NumPy 1.x reads a b with one
    dimension fewer than a as a stack of vectors; broadcasting both first means the same on 1.x
    and 2.x)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.linalg.solve(np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:]))


def _check_against(make, dense, x, xv, solve=True):
    """Every method of the operator `make()` builds against the dense matrix (with x [..., N, R]
    and vectors xv [..., N])."""
    dh = np.conj(np.swapaxes(dense, -1, -2))
    want = [dense, dense @ x, dh @ x, dense @ x, (dense @ xv[..., None])[..., 0], np.trace(dense, axis1=-2, axis2=-1),
            np.diagonal(dense, axis1=-2, axis2=-1)]
    with tf.Graph().as_default(), tf.Session() as s:
        op = make()
        got = [op.to_dense(), op.matmul(x), op.matmul(x, adjoint=True),
               op.matmul(np.conj(np.swapaxes(x, -1, -2)), adjoint_arg=True), op.matvec(xv), op.trace(), op.diag_part()]
        if solve:
            got += [op.solve(x), op.solve(x, adjoint=True), op.solvevec(xv), op.determinant(), op.log_abs_determinant()]
            want += [_solve(dense, x), _solve(dh, x), _solve(dense, xv[..., None])[..., 0], np.linalg.det(dense),
                     np.linalg.slogdet(dense)[1]]
        vals = s.run(got)
    for k, (g, w) in enumerate(zip(vals, want)):
        np.testing.assert_allclose(g, np.broadcast_to(w, np.shape(g)), rtol=1e-10, atol=1e-10, err_msg=f"method {k}")
        assert np.shape(g) == np.broadcast_shapes(np.shape(g), np.shape(w)), (k, np.shape(g), np.shape(w))


# -- permutation ---------------------------------------------------------------------------------
def _perm_dense(perm):
    n = perm.shape[-1]
    return (perm[..., :, None] == np.arange(n)).astype(np.float64)


@pytest.mark.parametrize("perm,xshape", [(np.array([2, 0, 3, 1]), (4, 3)),
                                         (np.array([[2, 0, 1], [1, 2, 0]]), (3, 2)),
                                         (np.array([1, 0, 2]), (2, 3, 2))])
def test_permutation_against_numpy(perm, xshape):
    x = R.randn(*xshape)
    xv = x[..., 0]
    _check_against(lambda: LA.LinearOperatorPermutation(perm, dtype=tf.float64), _perm_dense(perm), x, xv)
    op = LA.LinearOperatorPermutation(perm, dtype=tf.float64)
    assert op.shape.as_list() == list(perm.shape) + [perm.shape[-1]]
    assert op.is_square and op.is_non_singular is None and op.dtype == tf.float64


def test_permutation_rows_moved_and_hints():
    with tf.Graph().as_default(), tf.Session() as s:
        x = R.randn(3, 2)
        op = LA.LinearOperatorPermutation([2, 0, 1], dtype=tf.float64)
        np.testing.assert_array_equal(s.run(op.matmul(x)), x[[2, 0, 1]])   # row i of P x is row perm[i] of x
        assert LA.LinearOperatorPermutation([1, 0]).dtype == tf.float32
        # with the self-adjoint hint the adjoint is taken to be the operator itself, as TF
        sym = LA.LinearOperatorPermutation([1, 0, 2], dtype=tf.float64, is_self_adjoint=True)
        np.testing.assert_array_equal(s.run(sym.matmul(x, adjoint=True)), x[[1, 0, 2]])
        s.run(op.assert_non_singular())
        np.testing.assert_allclose(s.run(op.cond()), 1.0)
        # an argument whose batch size is known only at run time
        p = tf.placeholder(tf.float64, [None, 3, 2])
        v = R.randn(4, 3, 2)
        np.testing.assert_array_equal(s.run(op.solve(p), {p: v}), v[:, [1, 2, 0]])


@pytest.mark.parametrize("make,exc", [
    (lambda: LA.LinearOperatorPermutation([0, 0, 1]), ValueError),
    (lambda: LA.LinearOperatorPermutation([0.0, 1.0]), TypeError),
    (lambda: LA.LinearOperatorPermutation(1), ValueError),
    (lambda: LA.LinearOperatorPermutation([1, 0], dtype=tf.int32), TypeError),
    (lambda: LA.LinearOperatorPermutation([1, 0], is_non_singular=False), ValueError),
    (lambda: LA.LinearOperatorPermutation([1, 0], is_square=False), ValueError),
    (lambda: LA.LinearOperatorPermutation([1, 0]).matmul(np.ones((2, 2))), TypeError),
    (lambda: LA.LinearOperatorPermutation([1, 0]).matmul(np.ones((3, 2), np.float32)), ValueError),
])
def test_permutation_errors(make, exc):
    with tf.Graph().as_default(), pytest.raises(exc):
        make()


# -- tridiagonal -----------------------------------------------------------------------------------
def test_tridiag_formats_against_numpy():
    c = _tri(2)
    dense = _compact_to_dense(c)
    x, xv = R.randn(2, 4, 3), R.randn(2, 4)
    _check_against(lambda: LA.LinearOperatorTridiag(c), dense, x, xv)
    _check_against(lambda: LA.LinearOperatorTridiag(list(np.moveaxis(c, -2, 0)), diagonals_format="sequence"),
                   dense, x, xv)
    _check_against(lambda: LA.LinearOperatorTridiag(dense, diagonals_format="matrix"), dense, x, xv)


def test_tridiag_broadcasting():
    """Batch dimensions broadcast between the operator, the argument and the sequence's three
    diagonals (TF's TridiagonalMatMul needs them equal; collflow broadcasts)."""
    c = _tri()
    x = R.randn(2, 4, 3)
    _check_against(lambda: LA.LinearOperatorTridiag(c), _compact_to_dense(c), x, x[..., 0])
    sup, main, sub = R.randn(2, 1, 4), R.randn(3, 4) + 6, R.randn(4)
    seq = lambda: LA.LinearOperatorTridiag([sup, main, sub], diagonals_format="sequence")  # noqa: E731
    assert seq().shape.as_list() == [2, 3, 4, 4]
    full = np.stack(np.broadcast_arrays(sup, main, sub), axis=-2)
    _check_against(seq, _compact_to_dense(full), R.randn(2, 3, 4, 2), R.randn(4))


def test_tridiag_matrix_format_reads_only_the_band_in_matmul():
    m = R.randn(4, 4) + 5 * np.eye(4)
    band = np.triu(np.tril(m, 1), -1)
    x = R.randn(4, 2)
    with tf.Graph().as_default(), tf.Session() as s:
        op = LA.LinearOperatorTridiag(m, diagonals_format="matrix")
        dense, mm, sol = s.run([op.to_dense(), op.matmul(x), op.solve(x)])
    np.testing.assert_allclose(dense, m)            # as given, as TF's to_dense
    np.testing.assert_allclose(mm, band @ x, rtol=1e-12)
    np.testing.assert_allclose(sol, np.linalg.solve(band, x), rtol=1e-10)


def test_tridiag_assert_self_adjoint_and_shape_tensor():
    sym = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 1.0, 2.0]])
    with tf.Graph().as_default(), tf.Session() as s:
        s.run(LA.LinearOperatorTridiag(sym).assert_self_adjoint())
        with pytest.raises(errors.InvalidArgumentError, match="non-conjugate"):
            s.run(LA.LinearOperatorTridiag(sym + [[0, 0, 0], [0, 0, 0], [0, 0, 1]]).assert_self_adjoint())
        p = tf.placeholder(tf.float64, [None, 3, 5])
        op = LA.LinearOperatorTridiag(p)
        assert op.shape.as_list() == [None, 5, 5]
        np.testing.assert_array_equal(s.run(op.shape_tensor(), {p: np.ones((2, 3, 5))}), [2, 5, 5])


@pytest.mark.parametrize("make,exc", [
    (lambda: LA.LinearOperatorTridiag(np.ones((3, 3)), diagonals_format="banded"), ValueError),
    (lambda: LA.LinearOperatorTridiag(np.ones((3, 4)), is_square=False).solve(np.ones((4, 1))), ValueError),
    (lambda: LA.LinearOperatorTridiag(np.ones((3, 4))).matmul(np.ones((3, 1))), ValueError),
    (lambda: LA.LinearOperatorTridiag(np.ones((2, 4))), ValueError),
    (lambda: LA.LinearOperatorTridiag(np.ones((3, 4), np.int32)), TypeError),
    (lambda: LA.LinearOperatorTridiag([np.ones(3), np.ones(3)], diagonals_format="sequence"), ValueError),
])
def test_tridiag_errors(make, exc):
    with tf.Graph().as_default(), pytest.raises(exc):
        make()


# -- block lower triangular ------------------------------------------------------------------------
A, B, C = R.randn(2, 2) + 3 * np.eye(2), R.randn(3, 2), R.uniform(1, 2, 3)
D, E, F = R.randn(2, 2), R.randn(2, 3), np.tril(R.randn(2, 2)) + 3 * np.eye(2)


def _block_op():
    return LA.LinearOperatorBlockLowerTriangular(
        [[LA.LinearOperatorFullMatrix(A)],
         [LA.LinearOperatorFullMatrix(B), LA.LinearOperatorDiag(C)],
         [LA.LinearOperatorFullMatrix(D), LA.LinearOperatorFullMatrix(E), LA.LinearOperatorLowerTriangular(F)]])


def _block_dense():
    z = np.zeros
    return np.block([[A, z((2, 3)), z((2, 2))], [B, np.diag(C), z((3, 2))], [D, E, F]])


def test_block_lower_against_numpy():
    op = _block_op()
    assert op.shape.as_list() == [7, 7] and op.is_square and op.is_non_singular is None
    _check_against(_block_op, _block_dense(), R.randn(7, 3), R.randn(7))
    _check_against(_block_op, _block_dense(), R.randn(2, 7, 3), R.randn(2, 7))


def test_block_lower_blockwise_arguments():
    dense, x, v = _block_dense(), R.randn(7, 2), R.randn(7)
    split = lambda t: [t[:2], t[2:5], t[5:]]  # noqa: E731
    with tf.Graph().as_default(), tf.Session() as s:
        op = _block_op()
        got = s.run([op.matmul(split(x)), op.matmul(split(x), adjoint=True), op.solve(split(x)),
                     op.solve(split(x), adjoint=True), op.matvec(split(v)), op.solvevec(split(v), adjoint=True)])
    want = [dense @ x, dense.T @ x, np.linalg.solve(dense, x), np.linalg.solve(dense.T, x), dense @ v,
            np.linalg.solve(dense.T, v)]
    for g, w in zip(got, want):
        assert isinstance(g, list) and len(g) == 3
        np.testing.assert_allclose(np.concatenate(g, 0), w, rtol=1e-10, atol=1e-12)


def test_block_lower_batch_broadcast_and_hints():
    a = R.randn(2, 2, 2) + 3 * np.eye(2)
    b = R.randn(1, 2)
    op = lambda: LA.LinearOperatorBlockLowerTriangular(  # noqa: E731
        [[LA.LinearOperatorFullMatrix(a)], [LA.LinearOperatorFullMatrix(b), LA.LinearOperatorIdentity(
            1, dtype=tf.float64)]])
    dense = np.zeros((2, 3, 3))
    dense[:, :2, :2], dense[:, 2:, :2], dense[:, 2, 2] = a, b, 1.0
    _check_against(op, dense, R.randn(3, 2), R.randn(3))
    pd = LA.LinearOperatorDiag(np.array([1.0, 2.0]), is_positive_definite=True)
    assert LA.LinearOperatorBlockLowerTriangular([[pd]]).is_non_singular is True
    sing = LA.LinearOperatorDiag(np.array([1.0, 0.0]), is_non_singular=False)
    assert LA.LinearOperatorBlockLowerTriangular([[sing]]).is_non_singular is False
    with tf.Graph().as_default(), tf.Session() as s:
        pd = LA.LinearOperatorDiag(np.array([1.0, 2.0]), is_positive_definite=True)
        np.testing.assert_allclose(s.run(LA.LinearOperatorBlockLowerTriangular(
            [[pd], [LA.LinearOperatorFullMatrix(np.ones((2, 2))), pd]], is_self_adjoint=True).eigvals()), [1, 2, 1, 2])
        with pytest.raises(errors.InvalidArgumentError):
            s.run(LA.LinearOperatorBlockLowerTriangular([[LA.LinearOperatorDiag(np.array([1.0, 0.0]))]])
                  .assert_non_singular())


def test_block_lower_positive_definite_determinant():
    """Diagonal blocks all hinted positive definite: det = exp(log|det|), as TF."""
    a = R.randn(2, 2)
    a = a @ a.T + 2 * np.eye(2)
    with tf.Graph().as_default(), tf.Session() as s:
        op = LA.LinearOperatorBlockLowerTriangular(
            [[LA.LinearOperatorFullMatrix(a, is_self_adjoint=True, is_positive_definite=True)],
             [LA.LinearOperatorFullMatrix(np.ones((1, 2))), LA.LinearOperatorDiag(np.array([3.0]),
                                                                                 is_positive_definite=True)]])
        det, lad = s.run([op.determinant(), op.log_abs_determinant()])
    np.testing.assert_allclose(det, 3 * np.linalg.det(a), rtol=1e-12)
    np.testing.assert_allclose(lad, np.log(3 * np.linalg.det(a)), rtol=1e-12)


@pytest.mark.parametrize("make,exc", [
    (lambda: LA.LinearOperatorBlockLowerTriangular([]), ValueError),
    (lambda: LA.LinearOperatorBlockLowerTriangular([LA.LinearOperatorDiag(np.ones(2))]), TypeError),
    (lambda: LA.LinearOperatorBlockLowerTriangular([[LA.LinearOperatorDiag(np.ones(2))],
                                                    [LA.LinearOperatorDiag(np.ones(2))]]), ValueError),
    (lambda: LA.LinearOperatorBlockLowerTriangular(
        [[LA.LinearOperatorDiag(np.ones(2))],
         [LA.LinearOperatorFullMatrix(np.ones((1, 3))), LA.LinearOperatorDiag(np.ones(1))]]), ValueError),
    (lambda: LA.LinearOperatorBlockLowerTriangular(
        [[LA.LinearOperatorDiag(np.ones(2))],
         [LA.LinearOperatorFullMatrix(np.ones((1, 2), np.float32)), LA.LinearOperatorDiag(np.ones(1))]]), TypeError),
    (lambda: LA.LinearOperatorBlockLowerTriangular([[LA.LinearOperatorDiag(np.ones(2))]], is_square=False),
     ValueError),
    (lambda: LA.LinearOperatorBlockLowerTriangular([[LA.LinearOperatorFullMatrix(np.ones((2, 3)))]]), ValueError),
    (lambda: LA.LinearOperatorBlockLowerTriangular(
        [[LA.LinearOperatorDiag(np.ones(2), is_non_singular=True)]], is_non_singular=False), ValueError),
    (lambda: LA.LinearOperatorBlockLowerTriangular(
        [[LA.LinearOperatorDiag(np.ones(2), is_non_singular=False)]]).solve(np.ones((2, 1))), NotImplementedError),
    (lambda: LA.LinearOperatorBlockLowerTriangular([[LA.LinearOperatorDiag(np.ones(2))]]).eigvals(),
     NotImplementedError),
    (lambda: _block_op().matmul(np.ones((6, 1))), ValueError),
])
def test_block_lower_errors(make, exc):
    with tf.Graph().as_default(), pytest.raises(exc):
        make()


# -- gradients to the parameters -------------------------------------------------------------------
def _grad_cases():
    def tri_compact(d, x):
        op = LA.LinearOperatorTridiag(d + tf.constant([[0.0] * 4, [5.0] * 4, [0.0] * 4], tf.float64))
        return [op.matmul(x), op.matmul(x, adjoint=True), op.solve(x), op.solve(x, adjoint=True),
                op.log_abs_determinant(), op.to_dense()]

    def tri_sequence(a, b, c, x):
        op = LA.LinearOperatorTridiag([a, b + 5.0, c], diagonals_format="sequence")
        return [op.matmul(x), op.solvevec(x[..., 0]), op.diag_part(), op.trace()]

    def tri_matrix(m, x):
        op = LA.LinearOperatorTridiag(m + 5.0 * tf.eye(4, dtype=tf.float64), diagonals_format="matrix")
        return [op.matmul(x), op.solve(x, adjoint=True)]

    def block(a, b, c, x):
        op = LA.LinearOperatorBlockLowerTriangular(
            [[LA.LinearOperatorFullMatrix(a + 3.0 * tf.eye(2, dtype=tf.float64))],
             [LA.LinearOperatorFullMatrix(b), LA.LinearOperatorDiag(c + 3.0)]])
        return [op.matmul(x), op.matmul(x, adjoint=True), op.solve(x), op.solve(x, adjoint=True),
                op.determinant(), op.log_abs_determinant(), op.to_dense(), op.diag_part()]

    def perm(x):
        op = LA.LinearOperatorPermutation([2, 0, 1], dtype=tf.float64)
        return [op.matmul(x), op.solve(x, adjoint=True), op.matvec(x[..., 0], adjoint=True)]

    return [
        Case("MatrixSolve", tri_compact, [(2, 3, 4), (2, 4, 2)], low=-1, high=1, id="tridiag_compact"),
        Case("MatrixSolve", tri_sequence, [(4,), (4,), (4,), (4, 2)], low=-1, high=1, id="tridiag_sequence"),
        Case("MatrixSolve", tri_matrix, [(4, 4), (4, 2)], low=-1, high=1, id="tridiag_matrix"),
        Case("MatrixSolve", block, [(2, 2), (3, 2), (3,), (5, 2)], low=-1, high=1, id="block_lower_triangular"),
        Case("GatherV2", perm, [(3, 2)], id="permutation"),
    ]


@pytest.mark.parametrize("case", _grad_cases(), ids=str)
def test_gradients_by_finite_differences(case):
    check_case(case)
