"""Gradient-check cases for the special functions of graph/ops/special_more_ops.py (igamma,
igammac, betainc, zeta, polygamma) and trigamma's gradient.  The gamma sampler's implicit
gradient is checked in tests/test_special_more.py (its stream moves on every run)."""
import numpy as np

import collflow as cf
from gradcheck import Case

_A = np.array([[0.3, 1.7, 4.2], [2.5, 12.0, 0.8]])
_X = np.array([[0.2, 2.5, 3.0], [0.4, 15.0, 1.9]])


CASES = [
    Case("Igamma", cf.igamma, [(2, 3), (2, 3)], make_inputs=lambda r: [_A, _X], rtol=1e-4),
    Case("Igammac", cf.igammac, [(2, 3), (2, 3)], make_inputs=lambda r: [_A, _X], rtol=1e-4),
    Case("Betainc", lambda x: cf.betainc(np.array([0.7, 2.0, 5.0]), np.array([1.5, 3.0, 0.6]), x), [(3,)],
         make_inputs=lambda r: [np.array([0.2, 0.55, 0.9])]),
    Case("Zeta", lambda q: cf.zeta(np.array([2.0, 3.5, 6.0]), q), [(3,)],
         make_inputs=lambda r: [np.array([0.4, 1.5, 7.0])]),
    Case("Polygamma", lambda x: cf.polygamma(np.array([2.0, 3.0, 5.0]), x), [(3,)],
         make_inputs=lambda r: [np.array([0.6, -1.3, 4.0])]),
    Case("Trigamma", lambda x: _trigamma(x), [(3,)],
         make_inputs=lambda r: [np.array([0.6, -1.3, 4.0])]),
]


def _trigamma(x):
    from collflow.graph.ops.special_ops import polygamma
    return polygamma(1, x)
