"""Gradient-table cases of the square-matrix ops (graph/ops/linalg_ops.py): inputs made well
conditioned (a + 4 I) or symmetric positive definite (a a^T + 3 I), so central differences
are accurate; Cholesky's input is symmetrized inside the case (its gradient, as TF's, is the
symmetric one, which differences only see through a symmetric perturbation)."""
import numpy as np

import collflow as cf
from collflow.graph.ops.linalg_ops import log_matrix_determinant
from gradcheck import Case


def _wc(shape):
    def make(r):
        a = r.uniform(-1, 1, shape)
        return [a + 4.0 * np.eye(shape[-1])]
    return make


def _spd(shape):
    def make(r):
        a = r.uniform(-1, 1, shape)
        return [a @ np.swapaxes(a, -1, -2) + 3.0 * np.eye(shape[-1])]
    return make


def _wc_rhs(shape, rhs):
    def make(r):
        return _wc(shape)(r) + [r.uniform(-1, 1, rhs)]
    return make


def _sym(x):
    return 0.5 * (x + cf.matrix_transpose(x))


CASES = [
    Case("MatrixInverse", cf.matrix_inverse, [(3, 3)], make_inputs=_wc((3, 3))),
    Case("MatrixInverse", lambda a: cf.matrix_inverse(a, adjoint=True), [(2, 3, 3)], make_inputs=_wc((2, 3, 3)),
         id="MatrixInverse-adjoint-batch"),
    Case("MatrixDeterminant", cf.matrix_determinant, [(2, 3, 3)], make_inputs=_wc((2, 3, 3))),
    Case("LogMatrixDeterminant", lambda a: log_matrix_determinant(a)[1], [(3, 3)],
         make_inputs=lambda r: [_wc((3, 3))(r)[0] - 6.0 * np.eye(3)]),  # a negative determinant too
    Case("Cholesky", lambda a: cf.cholesky(_sym(a)), [(3, 3)], make_inputs=_spd((3, 3))),
    Case("Cholesky", lambda a: cf.cholesky(_sym(a)), [(2, 4, 4)], make_inputs=_spd((2, 4, 4)), id="Cholesky-batch"),
    Case("MatrixSolve", cf.matrix_solve, [(3, 3), (3, 2)], make_inputs=_wc_rhs((3, 3), (3, 2))),
    Case("MatrixSolve", lambda a, b: cf.matrix_solve(a, b, adjoint=True), [(2, 3, 3), (2, 3, 1)],
         make_inputs=_wc_rhs((2, 3, 3), (2, 3, 1)), id="MatrixSolve-adjoint-batch"),
    Case("MatrixTriangularSolve", cf.matrix_triangular_solve, [(3, 3), (3, 2)], make_inputs=_wc_rhs((3, 3), (3, 2))),
    Case("MatrixTriangularSolve", lambda a, b: cf.matrix_triangular_solve(a, b, lower=False, adjoint=True),
         [(4, 4), (4, 2)], make_inputs=_wc_rhs((4, 4), (4, 2)), id="MatrixTriangularSolve-upper-adjoint"),
    Case("MatrixBandPart", lambda a: cf.matrix_band_part(a, 1, 0), [(2, 3, 4)]),
    # eigenvectors enter squared (their sign is arbitrary); the input symmetrized inside, as for
    # Cholesky; distinct eigenvalues (a + 4 I spreads nothing, so a diagonal ramp is added)
    Case("SelfAdjointEigV2", lambda a: (lambda e, v: [e, cf.square(v)])(*cf.self_adjoint_eig(
        _sym(a) + cf.constant(np.diag([0.0, 2.0, 4.0])))), [(3, 3)], rtol=1e-4),
    Case("SelfAdjointEigV2", lambda a: cf.self_adjoint_eigvals(_sym(a)), [(2, 3, 3)], id="SelfAdjointEigV2-values"),
    # singular vectors through sign-invariant products (u diag(s) u^T, v v^T with weights)
    Case("Svd", lambda a: (lambda s, u, v: [s, cf.matmul(u * cf.expand_dims(s, -2), u, transpose_b=True),
                                            cf.matmul(v, v * 2.0, transpose_b=True)])(*cf.svd(a)), [(3, 5)],
         rtol=1e-4),
    Case("Svd", lambda a: (lambda s, u, v: [s, cf.matmul(v * cf.expand_dims(s, -2), v, transpose_b=True),
                                            cf.matmul(u, u * 2.0, transpose_b=True)])(*cf.svd(a)), [(2, 5, 3)],
         rtol=1e-4, id="Svd-tall-batch"),
    Case("Svd", lambda a: cf.svd(a, compute_uv=False), [(4, 3)], id="Svd-values"),
    # matrix_transpose of an input whose rank the graph does not know
    Case("MatrixTranspose", lambda a: cf.matrix_transpose(cf.placeholder_with_default(a, None)) * a[0, 0, 0],
         [(2, 3, 4)]),
    Case("MatrixBandPart", lambda a: cf.matrix_band_part(a, -1, 2), [(4, 3)], id="MatrixBandPart-lower-all"),
    # QR (graph/ops/qr_grad.py): tall, square batch, wide
    Case("Qr", lambda a: list(cf.qr(a)), [(5, 3)], low=-1.0, high=1.0),
    Case("Qr", lambda a: list(cf.qr(a)), [(2, 3, 3)], low=-1.0, high=1.0, id="Qr-square-batch"),
    Case("Qr", lambda a: list(cf.qr(a)), [(3, 5)], low=-1.0, high=1.0, id="Qr-wide"),
]
