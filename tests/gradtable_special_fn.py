"""Gradient-check cases for tf.math.special's functions (graph/ops/special_fn_ops.py: Bessel,
Dawson, Ei, Fresnel, Spence, ndtri, erfinv) and tf.linalg.sqrtm, each on a range where the
function is smooth (finite differences in float64 against TF's gradient formulas)."""
import numpy as np

import collflow as cf
from collflow.graph.ops import special_fn_ops as S
from gradcheck import Case


def _on(op, fn, low, high):
    return Case(op, fn, [(2, 3)], make_inputs=lambda r: [r.uniform(low, high, (2, 3))])


def _spd(r):
    m = r.uniform(-1, 1, (3, 3))
    return [m @ m.T + 3 * np.eye(3)]


CASES = [
    _on("BesselI0", S.bessel_i0, -3, 3), _on("BesselI0e", S.bessel_i0e, 0.2, 3),
    _on("BesselI1", S.bessel_i1, -3, 3), _on("BesselI1e", S.bessel_i1e, 0.2, 3),
    _on("BesselJ0", S.bessel_j0, -6, 6), _on("BesselJ1", S.bessel_j1, -6, 6),
    _on("BesselY0", S.bessel_y0, 0.5, 6), _on("BesselY1", S.bessel_y1, 0.5, 6),
    _on("BesselK0", S.bessel_k0, 0.3, 4), _on("BesselK0e", S.bessel_k0e, 0.3, 4),
    _on("BesselK1", S.bessel_k1, 0.3, 4), _on("BesselK1e", S.bessel_k1e, 0.3, 4),
    _on("Dawsn", S.dawsn, -5, 5), _on("Expint", S.expint, 0.2, 5), _on("Spence", S.spence, 0.1, 4),
    _on("FresnelCos", S.fresnel_cos, -3, 3), _on("FresnelSin", S.fresnel_sin, -3, 3),
    _on("Ndtri", S.ndtri, 0.05, 0.95), _on("Erfinv", S.erfinv, -0.9, 0.9),
    Case("MatrixSquareRoot", cf.matrix_square_root, [(3, 3)], make_inputs=_spd),
]
