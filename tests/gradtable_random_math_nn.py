"""Gradient-check cases for graph/ops/math_nn_more_ops.py (segment_prod, unsorted_segment_prod,
nextafter, the cumulative_logsumexp and polyval composites) and graph/ops/morph_ops.py
(dilation2d, erosion2d, conv3d_backprop_filter)."""
import numpy as np

from collflow.graph.ops import math_nn_more_ops as M
from collflow.graph.ops import morph_ops as Mo
from gradcheck import Case


def _with_zeros(r):
    x = r.uniform(0.5, 1.5, (6, 2)) * r.choice([-1.0, 1.0], (6, 2))
    x[1, 0] = 0.0          # one zero in segment 0 (its gradient is the others' product)
    x[3, 1] = x[4, 1] = 0.0  # two zeros in segment 2 (gradient 0)
    return [x]


def _distinct(shape):
    # a random permutation of spread values: the maxima are unique and away from ties
    return lambda r: [r.permutation(np.prod(shape)).reshape(shape) * 0.1 + r.uniform(0, 0.01, shape)]


CASES = [
    Case("SegmentProd", lambda x: M.segment_prod(x, [0, 0, 1, 2, 2, 3]), [(6, 2)], make_inputs=_with_zeros),
    Case("UnsortedSegmentProd", lambda x: M.unsorted_segment_prod(x, [2, 0, -1, 2, 2, 0], 4), [(6, 2)],
         make_inputs=_with_zeros),
    Case("NextAfter", lambda x, y: M.nextafter(x, y), [(2, 3), (3,)]),
    Case("Exp", lambda x: M.cumulative_logsumexp(x, axis=1, reverse=True), [(3, 4)], id="cumulative_logsumexp"),
    Case("Exp", lambda x: M.cumulative_logsumexp(x, axis=0, exclusive=True)[1:], [(3, 4)],
         id="cumulative_logsumexp-exclusive"),
    Case("Mul", lambda c, x: M.polyval([c[0], c[1], 3.0], x), [(2,), (2, 3)], id="polyval"),
    Case("Dilation2D", lambda x, f: Mo.dilation2d(x, f, [1, 1, 1, 1], [1, 1, 1, 1], "SAME"), [(1, 4, 4, 2), (2, 2, 2)],
         make_inputs=lambda r: _distinct((1, 4, 4, 2))(r) + [r.uniform(0, 0.01, (2, 2, 2))]),
    Case("Dilation2D", lambda x, f: Mo.erosion2d(x, f, [1, 2, 1, 1], [1, 1, 2, 1], "VALID"),
         [(1, 5, 6, 1), (2, 2, 1)], make_inputs=lambda r: _distinct((1, 5, 6, 1))(r) + [r.uniform(0, 0.01, (2, 2, 1))],
         id="erosion2d"),
    Case("MatMul", lambda x, dy: Mo.conv3d_backprop_filter(x, [2, 2, 1, 2, 3], dy, [1, 1, 1, 1, 1], "SAME"),
         [(1, 3, 3, 2, 2), (1, 3, 3, 2, 3)], id="conv3d_backprop_filter"),
]

from collflow.graph.ops import fractional_pool_ops as F  # noqa: E402

CASES += [
    Case("FractionalMaxPool", lambda x: F.fractional_max_pool(x, [1, 1.5, 1.7, 1], pseudo_random=True,
                                                              deterministic=True, seed=3, seed2=4)[0],
         [(1, 6, 7, 2)], make_inputs=_distinct((1, 6, 7, 2))),
    Case("FractionalAvgPool", lambda x: F.fractional_avg_pool(x, [1, 1.5, 1.7, 1], overlapping=True,
                                                              deterministic=True, seed=3, seed2=4)[0],
         [(1, 6, 7, 2)]),
]
