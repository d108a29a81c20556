"""tf.linalg.LinearOperator* and tf.linalg.eigh_tridiagonal by hand (no TensorFlow needed):
every operator against the dense NumPy matrix it stands for (matmul with both adjoint flags,
solve, determinants, trace, diagonal, batch broadcasting), the hints' checks and errors,
and finite-difference gradients through matmul / solve / log_abs_determinant."""
import os
import sys

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow import errors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gradcheck import Case, check_case  # noqa: E402

LA = tf.linalg
R = np.random.RandomState(0)


def _mat(*shape, shift=3.0):
    return R.randn(*shape) + shift * np.eye(shape[-1])


def _spd(n):
    a = R.randn(n, n)
    return a @ a.T + n * np.eye(n)


def _circulant(col):
    n = len(col)
    return np.stack([np.roll(col, k) for k in range(n)], axis=1)


A, B, C, S = _mat(2, 3, 3), _mat(2, 2), _mat(3, 3), _spd(3)
U, V, D = R.randn(3, 2), R.randn(3, 2), np.array([1.5, 2.5])
H = np.array([4.0, 1.0, 0.5, 1.0])


def _operators():
    """(name, builder, dense NumPy equivalent)."""
    return [
        ("full", lambda: LA.LinearOperatorFullMatrix(A), A),
        ("full_pd", lambda: LA.LinearOperatorFullMatrix(S, is_self_adjoint=True, is_positive_definite=True), S),
        ("diag", lambda: LA.LinearOperatorDiag(np.array([[1.0, -2, 3], [4, 5, 0.5]])),
         np.stack([np.diag([1.0, -2, 3]), np.diag([4.0, 5, 0.5])])),
        ("identity", lambda: LA.LinearOperatorIdentity(3, batch_shape=[2], dtype=tf.float64),
         np.stack([np.eye(3)] * 2)),
        ("scaled_identity", lambda: LA.LinearOperatorScaledIdentity(3, np.array([2.0, -3.0])),
         np.stack([2 * np.eye(3), -3 * np.eye(3)])),
        ("lower_triangular", lambda: LA.LinearOperatorLowerTriangular(A), np.tril(A)),
        ("composition", lambda: LA.LinearOperatorComposition([LA.LinearOperatorFullMatrix(A),
                                                              LA.LinearOperatorFullMatrix(C)]), A @ C),
        ("block_diag", lambda: LA.LinearOperatorBlockDiag([LA.LinearOperatorFullMatrix(B),
                                                           LA.LinearOperatorFullMatrix(C)]),
         np.block([[B, np.zeros((2, 3))], [np.zeros((3, 2)), C]])),
        ("kronecker", lambda: LA.LinearOperatorKronecker([LA.LinearOperatorFullMatrix(B),
                                                          LA.LinearOperatorFullMatrix(C)]), np.kron(B, C)),
        ("kronecker3", lambda: LA.LinearOperatorKronecker([LA.LinearOperatorFullMatrix(B),
                                                           LA.LinearOperatorDiag(np.array([1.0, 2.0])),
                                                           LA.LinearOperatorFullMatrix(C)]),
         np.kron(np.kron(B, np.diag([1.0, 2.0])), C)),
        ("low_rank_update_pd", lambda: LA.LinearOperatorLowRankUpdate(
            LA.LinearOperatorFullMatrix(S, is_self_adjoint=True, is_positive_definite=True), U, D),
         S + U @ np.diag(D) @ U.T),
        ("low_rank_update_uv", lambda: LA.LinearOperatorLowRankUpdate(LA.LinearOperatorFullMatrix(A), U, D, v=V),
         A + U @ np.diag(D) @ V.T),
        ("adjoint", lambda: LA.LinearOperatorAdjoint(LA.LinearOperatorFullMatrix(A)), np.swapaxes(A, -1, -2)),
        ("inversion", lambda: LA.LinearOperatorInversion(LA.LinearOperatorFullMatrix(A)), np.linalg.inv(A)),
        ("circulant", lambda: LA.LinearOperatorCirculant(np.fft.fft(H).real, input_output_dtype=tf.float64),
         _circulant(H)),
        ("toeplitz", lambda: LA.LinearOperatorToeplitz(np.array([4.0, 1.0, 0.5]), np.array([9.0, -0.7, 0.3])),
         np.array([[4.0, -0.7, 0.3], [1.0, 4.0, -0.7], [0.5, 1.0, 4.0]])),
    ]


@pytest.mark.parametrize("name,make,dense", _operators(), ids=[o[0] for o in _operators()])
def test_operator_matches_dense(name, make, dense):
    with tf.Graph().as_default():
        op = make()
        assert op.shape.as_list() == list(dense.shape)
        assert op.batch_shape.as_list() == list(dense.shape[:-2])
        assert int(op.domain_dimension) == dense.shape[-1] and int(op.range_dimension) == dense.shape[-2]
        assert op.tensor_rank == dense.ndim
        n = dense.shape[-1]
        x = R.randn(*dense.shape[:-2], n, 2)
        xv = R.randn(*dense.shape[:-2], n)
        dt = np.swapaxes(dense, -1, -2)
        fetch = {
            "to_dense": (op.to_dense(), dense),
            "matmul": (op.matmul(x), dense @ x),
            "matmul_adj": (op.matmul(x, adjoint=True), dt @ x),
            "matmul_adj_arg": (op.matmul(np.swapaxes(x, -1, -2), adjoint_arg=True), dense @ x),
            "matmul_op": (op @ x, dense @ x),
            "matvec": (op.matvec(xv), np.einsum("...ij,...j->...i", dense, xv)),
            "solve": (op.solve(x), np.linalg.solve(dense, x)),
            "solve_adj": (op.solve(x, adjoint=True), np.linalg.solve(dt, x)),
            "solve_adj_arg": (op.solve(np.swapaxes(x, -1, -2), adjoint_arg=True), np.linalg.solve(dense, x)),
            "solvevec": (op.solvevec(xv), np.linalg.solve(dense, xv[..., None])[..., 0]),
            "det": (op.determinant(), np.linalg.det(dense)),
            "log_abs_det": (op.log_abs_determinant(), np.linalg.slogdet(dense)[1]),
            "trace": (op.trace(), np.trace(dense, axis1=-2, axis2=-1)),
            "diag_part": (op.diag_part(), np.diagonal(dense, axis1=-2, axis2=-1)),
            "add_to_tensor": (op.add_to_tensor(dense), 2 * dense),
            "inverse": (op.inverse().to_dense(), np.linalg.inv(dense)),
            "adjoint": (op.adjoint().to_dense(), dt),
        }
        with tf.Session() as s:
            got = s.run({k: v[0] for k, v in fetch.items()})
        for k, (_, want) in fetch.items():
            np.testing.assert_allclose(got[k], want, rtol=1e-9, atol=1e-9, err_msg=f"{name}.{k}")


def test_batch_broadcasting():
    with tf.Graph().as_default():
        op = LA.LinearOperatorDiag(np.array([1.0, 2.0, 3.0]))  # no batch: broadcasts against x's
        x = R.randn(4, 3, 2)
        full = LA.LinearOperatorFullMatrix(_mat(3, 3))  # a batch of x against one matrix
        comp = LA.LinearOperatorComposition([LA.LinearOperatorFullMatrix(A), full])
        assert comp.batch_shape.as_list() == [2]
        with tf.Session() as s:
            y, z, w = s.run([op.matmul(x), op.solve(x), full.solve(x)])
        np.testing.assert_allclose(y, np.diag([1.0, 2, 3]) @ x)
        np.testing.assert_allclose(z, x / np.array([1.0, 2, 3])[:, None])
        assert w.shape == (4, 3, 2)


def test_structured_results():
    """adjoint/inverse/cholesky/matmul keep the structure where TF's registrations do."""
    with tf.Graph().as_default():
        d = LA.LinearOperatorDiag(np.array([4.0, 9.0]), is_positive_definite=True)
        assert isinstance(d.inverse(), LA.LinearOperatorDiag)
        assert isinstance(d.cholesky(), LA.LinearOperatorDiag)
        assert d.adjoint() is d  # real diagonal: self-adjoint
        assert isinstance(d @ d, LA.LinearOperatorDiag)
        f = LA.LinearOperatorFullMatrix(A)
        assert isinstance(f.adjoint(), LA.LinearOperatorAdjoint)
        assert isinstance(f.inverse(), LA.LinearOperatorInversion)
        assert f.inverse().inverse() is f
        assert isinstance(f @ f, LA.LinearOperatorComposition)
        pd = LA.LinearOperatorFullMatrix(S, is_self_adjoint=True, is_positive_definite=True)
        assert isinstance(pd.cholesky(), LA.LinearOperatorLowerTriangular)
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(pd.cholesky().to_dense()), np.linalg.cholesky(S))
            np.testing.assert_allclose(s.run(d.cholesky().diag_part()), [2.0, 3.0])


def test_hints():
    with tf.Graph().as_default():
        op = LA.LinearOperatorFullMatrix(np.eye(2), is_positive_definite=True)
        assert op.is_non_singular and op.is_square
        assert LA.LinearOperatorFullMatrix(np.ones((2, 3))).is_square is False
        assert LA.LinearOperatorDiag(np.ones(2)).is_self_adjoint is True
        assert LA.LinearOperatorIdentity(2).is_positive_definite is True
        assert LA.LinearOperatorZeros(2).is_non_singular is False
        with pytest.raises(ValueError, match="always non-singular"):
            LA.LinearOperatorFullMatrix(np.eye(2), is_positive_definite=True, is_non_singular=False)
        with pytest.raises(ValueError, match="always square"):
            LA.LinearOperatorFullMatrix(np.eye(2), is_self_adjoint=True, is_square=False)
        with pytest.raises(ValueError, match="self adjoint"):
            LA.LinearOperatorDiag(np.ones(2), is_self_adjoint=False)
        with pytest.raises(ValueError, match="is_square hint to False"):
            _ = LA.LinearOperatorFullMatrix(np.eye(2), is_square=False).is_square
        with pytest.raises(ValueError, match="Cholesky"):
            LA.LinearOperatorFullMatrix(np.eye(2)).cholesky()
        with pytest.raises(ValueError, match="singular"):
            LA.LinearOperatorFullMatrix(np.eye(2), is_non_singular=False).inverse()
        with pytest.raises(NotImplementedError, match="singular"):
            LA.LinearOperatorZeros(2).solve(np.ones((2, 1), np.float32))
        with pytest.raises(NotImplementedError, match="not be square"):
            LA.LinearOperatorFullMatrix(np.ones((2, 3))).log_abs_determinant()
        with pytest.raises(ValueError, match="not compatible"):
            LA.LinearOperatorFullMatrix(np.ones((2, 3))).matmul(np.ones((2, 2)))
        with pytest.raises(TypeError, match="dtype"):
            LA.LinearOperatorFullMatrix(np.ones((2, 2))).matmul(np.ones((2, 2), np.float32))
        with pytest.raises(TypeError, match="same dtype"):
            LA.LinearOperatorComposition([LA.LinearOperatorDiag(np.ones(2)),
                                          LA.LinearOperatorDiag(np.ones(2, np.float32))])
        with pytest.raises(ValueError, match="non-empty"):
            LA.LinearOperatorKronecker([])


def test_run_time_assertions():
    with tf.Graph().as_default():
        good = LA.LinearOperatorFullMatrix(S, is_self_adjoint=True, is_positive_definite=True)
        singular = LA.LinearOperatorFullMatrix(np.array([[1.0, 2.0], [2.0, 4.0]]))
        tri = LA.LinearOperatorLowerTriangular(np.array([[1.0, 0.0], [3.0, 0.0]]))
        notpd = LA.LinearOperatorDiag(np.array([1.0, -1.0]))
        with tf.Session() as s:
            s.run([good.assert_non_singular(), good.assert_positive_definite(), good.assert_self_adjoint()])
            for check in (singular.assert_non_singular, tri.assert_non_singular, notpd.assert_positive_definite):
                # constant operands fail when the graph is built, as TF's static checks
                with pytest.raises(errors.InvalidArgumentError):
                    s.run(check())
        with pytest.raises(errors.InvalidArgumentError):
            LA.LinearOperatorZeros(2).assert_non_singular()


def test_name_scopes_and_parents():
    with tf.Graph().as_default():
        m = tf.constant(np.eye(2))
        op = LA.LinearOperatorFullMatrix(m, name="my_op")
        assert op.name == "my_op" and op.graph_parents == [m]
        y = op.matmul(np.ones((2, 1)))
        assert y.name.startswith("my_op/matmul/")
        assert LA.LinearOperatorComposition([op, op]).name == "my_op_o_my_op"


def _grad_cases():
    def full(a, x):
        op = LA.LinearOperatorFullMatrix(a + 3 * tf.eye(3, dtype=tf.float64))
        return [op.matmul(x, adjoint=True), op.solve(x), op.log_abs_determinant()]

    def diag(d, x):
        op = LA.LinearOperatorDiag(d + 3.0)
        return [op.matmul(x), op.solve(x, adjoint=True), op.log_abs_determinant()]

    def tril(a, x):
        op = LA.LinearOperatorLowerTriangular(a + 3 * tf.eye(3, dtype=tf.float64))
        return [op.solve(x), op.log_abs_determinant(), op.determinant()]

    def kron(a, b, x):
        op = LA.LinearOperatorKronecker([LA.LinearOperatorFullMatrix(a + 3 * tf.eye(2, dtype=tf.float64)),
                                         LA.LinearOperatorFullMatrix(b + 3 * tf.eye(3, dtype=tf.float64))])
        return [op.matmul(x), op.solve(x), op.log_abs_determinant()]

    def lru(d, u, x):
        base = LA.LinearOperatorDiag(d + 3.0, is_positive_definite=True)
        op = LA.LinearOperatorLowRankUpdate(base, u)
        return [op.matmul(x), op.solve(x), op.log_abs_determinant()]

    def circ(s, x):
        op = LA.LinearOperatorCirculant(s + 3.0, input_output_dtype=tf.float64)
        return [op.matmul(x), op.solve(x), op.log_abs_determinant()]

    return [
        Case("MatrixSolve", full, [(3, 3), (3, 2)], id="full"),
        Case("Mul", diag, [(2, 3), (2, 3, 2)], id="diag"),
        Case("MatrixTriangularSolve", tril, [(2, 3, 3), (2, 3, 2)], id="lower_triangular"),
        Case("MatrixSolve", kron, [(2, 2), (3, 3), (6, 2)], id="kronecker"),
        Case("Cholesky", lru, [(3,), (3, 2), (3, 2)], id="low_rank_update"),
        Case("FFT", circ, [(4,), (4, 2)], low=-0.5, high=0.5, id="circulant"),
    ]


@pytest.mark.parametrize("case", _grad_cases(), ids=str)
def test_gradients_by_finite_differences(case):
    check_case(case)


def _tridiag(a, b):
    return np.diag(a) + np.diag(b, 1) + np.diag(b, -1)


def test_eigh_tridiagonal_values_and_vectors():
    a, b = R.randn(6), R.randn(5)
    want = np.linalg.eigvalsh(_tridiag(a, b))
    with tf.Graph().as_default():
        e = LA.eigh_tridiagonal(a, b)
        e2, v = LA.eigh_tridiagonal(a, b, eigvals_only=False)
        ei = LA.eigh_tridiagonal(a, b, select="i", select_range=[2, 4])
        ev = LA.eigh_tridiagonal(a, b, select="v", select_range=[(want[1] + want[2]) / 2, (want[3] + want[4]) / 2])
        e1 = LA.eigh_tridiagonal([2.5], np.zeros(0))
        with tf.Session() as s:
            e, e2, v, ei, ev, e1 = s.run([e, e2, v, ei, ev, e1])
    np.testing.assert_allclose(e, want, atol=1e-12)
    np.testing.assert_allclose(_tridiag(a, b) @ v, v * e2, atol=1e-12)
    np.testing.assert_allclose(ei, want[2:5], atol=1e-12)
    np.testing.assert_allclose(ev, want[2:4], atol=1e-12)
    np.testing.assert_allclose(e1, [2.5])


def test_eigh_tridiagonal_errors_and_gradient():
    with tf.Graph().as_default():
        with pytest.raises(ValueError):
            LA.eigh_tridiagonal(np.ones(3), np.ones(3))
        with pytest.raises(ValueError):
            LA.eigh_tridiagonal(np.ones(3), np.ones(2), select="x")
        with pytest.raises(ValueError):
            LA.eigh_tridiagonal(np.ones(3), np.ones(2), select="i")
        with pytest.raises(ValueError, match="same type"):
            LA.eigh_tridiagonal(np.ones(3), np.ones(2, np.float32))
    check_case(Case("SelfAdjointEigV2", lambda a, b: LA.eigh_tridiagonal(a, b),
                    [(4,), (3,)], make_inputs=lambda r: [np.array([1.0, 2.0, 3.5, 5.0]), r.uniform(-0.5, 0.5, 3)],
                    id="eigh_tridiagonal"))


def test_complex_operators_conjugate_under_adjoint():
    d = np.array([1 + 2j, 3 - 1j])
    m = np.array([[1 + 1j, 2], [0.5j, 3]])
    x = np.array([[1 + 1j], [2 - 1j]])
    with tf.Graph().as_default():
        cd = LA.LinearOperatorDiag(d)
        cm = LA.LinearOperatorFullMatrix(m)
        assert cd.is_self_adjoint is None  # only a real diagonal is self-adjoint for sure
        outs = [cd.matmul(x, adjoint=True), cd.solve(x, adjoint=True), cm.matmul(x, adjoint=True),
                cm.matmul(x.conj().T, adjoint_arg=True), cd.log_abs_determinant(), cd.determinant(), cm.trace(),
                cd.adjoint().to_dense()]
        with tf.Session() as s:
            got = s.run(outs)
    want = [d.conj()[:, None] * x, x / d.conj()[:, None], m.conj().T @ x, m @ x, np.sum(np.log(np.abs(d))),
            np.prod(d), np.trace(m), np.diag(d.conj())]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_batch_known_only_at_run_time():
    a = R.randn(4, 3, 3) + 3 * np.eye(3)
    xv = R.randn(4, 3, 2)
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float64, [None, 3, 3])
        x = tf.placeholder(tf.float64, [None, 3, 2])
        op = LA.LinearOperatorFullMatrix(p)
        assert op.shape.as_list() == [None, 3, 3] and op.is_square
        kron = LA.LinearOperatorKronecker([LA.LinearOperatorFullMatrix(np.eye(2) * 2.0),
                                           LA.LinearOperatorFullMatrix(np.eye(3))])
        kx = tf.placeholder(tf.float64, [None, 6, 2])
        with tf.Session() as s:
            y, z, shp, ky = s.run([op.matmul(x), op.solve(x), op.shape_tensor(), kron.matmul(kx)],
                                  {p: a, x: xv, kx: np.ones((5, 6, 2))})
    np.testing.assert_allclose(y, a @ xv)
    np.testing.assert_allclose(z, np.linalg.solve(a, xv))
    assert shp.tolist() == [4, 3, 3]
    np.testing.assert_allclose(ky, 2 * np.ones((5, 6, 2)))


def test_user_subclass_gets_the_dense_fallbacks():
    """A subclass giving only _shape and _matmul (TF's contract) gets to_dense, solve,
    determinants, trace and the derived operators from the base class."""
    m = _mat(3, 3)

    class Mine(LA.LinearOperator):
        def __init__(self):
            super().__init__(dtype=tf.float64, is_square=True, name="Mine")
            self._m = tf.constant(m)

        def _shape(self):
            return self._m.shape

        def _matmul(self, x, adjoint=False, adjoint_arg=False):
            return tf.matmul(self._m, x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    with tf.Graph().as_default():
        op = Mine()
        x = R.randn(3, 2)
        outs = [op.to_dense(), op.solve(x), op.log_abs_determinant(), op.determinant(), op.trace(),
                op.inverse().matmul(x), op.adjoint().to_dense(), op.shape_tensor()]
        with tf.Session() as s:
            got = s.run(outs)
    want = [m, np.linalg.solve(m, x), np.linalg.slogdet(m)[1], np.linalg.det(m), np.trace(m),
            np.linalg.solve(m, x), m.T, [3, 3]]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10)


def test_namespace_names():
    for n in ("LinearOperator", "LinearOperatorFullMatrix", "LinearOperatorDiag", "LinearOperatorIdentity",
              "LinearOperatorScaledIdentity", "LinearOperatorZeros", "LinearOperatorLowerTriangular",
              "LinearOperatorComposition", "LinearOperatorBlockDiag", "LinearOperatorKronecker",
              "LinearOperatorLowRankUpdate", "LinearOperatorAdjoint", "LinearOperatorInversion",
              "LinearOperatorCirculant", "LinearOperatorToeplitz", "eigh_tridiagonal"):
        assert n in dir(LA), n
