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
]
