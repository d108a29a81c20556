"""Gradient-check cases for the complex-number ops and the FFTs: real float64 inputs made into
complex tensors, the loss on real results (so finite differences in the real inputs check TF's
complex gradient convention end to end)."""
import collflow as cf
import collflow.compat.v1 as tf
from gradcheck import Case


def _z(x, y):
    return cf.complex(x, y)


def _parts(t):
    return [cf.real(t), cf.imag(t)]


CASES = [
    Case("Complex", lambda x, y: _parts(cf.exp(_z(x, y))), [(3, 4), (4,)]),
    Case("Real", lambda x, y: cf.real(_z(x, y) * _z(y, x)), [(3, 4), (3, 4)]),
    Case("Imag", lambda x, y: cf.imag(_z(x, y) * _z(y, x)), [(3, 4), (3, 4)]),
    Case("Conj", lambda x, y: _parts(cf.conj(_z(x, y)) * _z(y, x)), [(3, 4), (3, 4)]),
    Case("Angle", lambda x, y: cf.angle(_z(x, y)), [(3, 4), (3, 4)],
         make_inputs=lambda r: [r.uniform(0.5, 2, (3, 4)), r.uniform(-2, 2, (3, 4))]),
    Case("ComplexAbs", lambda x, y: cf.abs(_z(x, y)), [(3, 4), (3, 4)],
         make_inputs=lambda r: [r.uniform(0.5, 2, (3, 4)), r.uniform(-2, 2, (3, 4))]),
] + [
    Case(op, (lambda fn: lambda x, y: _parts(fn(_z(x, y))))(getattr(tf.signal, name)), [(2, 3, 4), (2, 3, 4)])
    for op, name in (("FFT", "fft"), ("IFFT", "ifft"), ("FFT2D", "fft2d"), ("IFFT2D", "ifft2d"),
                     ("FFT3D", "fft3d"), ("IFFT3D", "ifft3d"))
] + [
    Case(op, (lambda fn: lambda x: _parts(fn(x)))(getattr(tf.signal, name)), [(2, 3, 5)])
    for op, name in (("RFFT", "rfft"), ("RFFT2D", "rfft2d"), ("RFFT3D", "rfft3d"))
] + [
    Case(op, (lambda fn: lambda x, y: fn(_z(x, y)))(getattr(tf.signal, name)), [(2, 3, 4), (2, 3, 4)])
    for op, name in (("IRFFT", "irfft"), ("IRFFT2D", "irfft2d"), ("IRFFT3D", "irfft3d"))
] + [
    # complex elementwise functions (complex_more_ops.py): inputs off the real axis, away from
    # the branch cuts of the inverse functions
    Case(op, (lambda fn: lambda x, y: _parts(fn(_z(x, y))))(fn), [(3, 4), (3, 4)], id=op + "/complex",
         make_inputs=lambda r: [r.uniform(-1.2, 1.2, (3, 4)), r.uniform(0.3, 1.2, (3, 4))])
    for op, fn in (("Tan", tf.tan), ("Sinh", tf.sinh), ("Cosh", tf.cosh), ("Tanh", tf.tanh),
                   ("Sigmoid", tf.sigmoid), ("Asinh", tf.asinh), ("Acosh", tf.acosh), ("Atanh", tf.atanh),
                   ("Asin", tf.asin), ("Acos", tf.acos), ("Atan", tf.atan), ("Expm1", tf.math.expm1))
] + [
    Case("ComplexAbs", lambda x, y: _parts(tf.sign(_z(x, y))), [(3, 4), (3, 4)], id="Sign/complex"),
    # only the real part: TF's SquaredDifference rule 2 g (x - y) is the derivative for a real g
    Case("SquaredDifference", lambda x, y: cf.real(tf.squared_difference(_z(x, y), _z(y, 2.0 * x))),
         [(3, 4), (3, 4)], id="SquaredDifference/complex"),
] + [
    # complex linear algebra: well-conditioned matrices (+3 I), Hermitian positive-definite ones
    # made in the graph, decompositions through phase-free quantities
    Case(op, fn, [(3, 3), (3, 3)], low=-1.0, high=1.0, id=op + "/complex")
    for op, fn in (
        ("MatrixInverse", lambda x, y: _parts(tf.linalg.inv(_z(x + 3 * _eye(), y)))),
        # TF's rule g det inv(A)^H (no conj(det)) is the derivative where det is real: Hermitian A
        ("MatrixDeterminant", lambda x, y: cf.real(tf.linalg.det(_hpd(_z(x, y))))),
        ("LogMatrixDeterminant", lambda x, y: cf.real(tf.linalg.slogdet(_z(x + 3 * _eye(), y))[1])),
        ("MatrixSolve", lambda x, y: _parts(tf.linalg.solve(_z(x + 3 * _eye(), y), _z(y, x)))),
        ("MatrixTriangularSolve", lambda x, y: _parts(tf.linalg.triangular_solve(_z(x + 3 * _eye(), y), _z(y, x),
                                                                                 lower=False, adjoint=True))),
        ("Cholesky", lambda x, y: _parts(tf.linalg.cholesky(_hpd(_z(x, y))))),
        ("SelfAdjointEigV2", lambda x, y: (lambda e, v: [cf.real(e), cf.abs(v)])(*tf.linalg.eigh(_hpd(_z(x, y))))),
        ("Svd", lambda x, y: (lambda s, u, v: [s, cf.abs(u), cf.abs(v)] + _parts(
            tf.matmul(u[:, :1], v[:, :1], adjoint_b=True)))(*tf.linalg.svd(_z(x, y)))),
        ("Qr", lambda x, y: _parts(tf.linalg.qr(_z(x, y))[0]) + _parts(tf.linalg.qr(_z(x, y))[1])),
    )
] + [
    Case("Svd", lambda x, y: (lambda s, u, v: [s] + _parts(tf.matmul(u[:, :1], v[:, :1], adjoint_b=True)))(
        *tf.linalg.svd(_z(x, y))), [(3, 4), (3, 4)], id="Svd/complex-wide"),
    Case("Qr", lambda x, y: _parts(tf.linalg.qr(_z(x, y))[0]) + _parts(tf.linalg.qr(_z(x, y))[1]),
         [(3, 5), (3, 5)], low=-1.0, high=1.0, id="Qr/complex-wide"),
]


def _eye():
    return tf.eye(3, dtype=tf.float64)


def _hpd(z):
    return tf.matmul(z, z, adjoint_b=True) + tf.cast(3 * _eye(), z.dtype)
