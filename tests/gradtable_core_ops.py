"""Gradient-check cases for TF1's core ops of graph/ops/scatter_more_ops.py, quant_ops.py and
critical_section_ops.py (fn's outputs pass through the Unlock op).

tensor_scatter_nd_min/max are checked exactly (distinct random values: no ties).  The fake
quantization ops and quantize_and_dequantize have straight-through gradients, which finite
differences see only over steps much wider than the quantization grid: the cases use a
16-bit grid (step ~1e-4) on [-3, 3], inputs inside the range and eps = 0.1, so the
difference quotient is 1 to within step / (2 eps)."""
import numpy as np

import collflow as cf
from collflow.graph.ops import quant_ops as Q
from collflow.graph.ops import scatter_more_ops as S
from collflow.graph.ops.critical_section_ops import CriticalSection
from gradcheck import Case

_IDX = np.array([[0, 1], [2, 0], [1, 1], [0, 1]], np.int32)


def _scatter(op, fn):
    return Case(op, lambda t, u: fn(t, _IDX, u), [(3, 2), (4,)], id=f"{op}")


def _f32(fn):
    return lambda x: cf.cast(fn(cf.cast(x, cf.float32)), cf.float64)


_STE = dict(low=-1.0, high=1.0, eps=0.1, rtol=2e-3, atol=2e-3)

CASES = [
    _scatter("TensorScatterMin", S.tensor_scatter_nd_min),
    _scatter("TensorScatterMax", S.tensor_scatter_nd_max),
    Case("FakeQuantWithMinMaxArgs", _f32(lambda x: Q.fake_quant_with_min_max_args(x, -3.0, 3.0, num_bits=16)),
         [(3, 4)], **_STE),
    Case("FakeQuantWithMinMaxVars", _f32(lambda x: Q.fake_quant_with_min_max_vars(x, -3.0, 3.0, num_bits=16)),
         [(3, 4)], **_STE),
    Case("FakeQuantWithMinMaxVarsPerChannel",
         _f32(lambda x: Q.fake_quant_with_min_max_vars_per_channel(x, [-3.0, -3.0, -2.5, -3.5], [3.0, 3.5, 3.0, 2.5],
                                                                   num_bits=16)), [(3, 4)], **_STE),
    Case("QuantizeAndDequantizeV2", lambda x: Q.quantize_and_dequantize(x, -3.0, 3.0, num_bits=16, range_given=True),
         [(3, 4)], **_STE),
    Case("QuantizeAndDequantizeV4",
         lambda x: Q.quantize_and_dequantize_v2(x, -3.0, 3.0, num_bits=16, range_given=True), [(3, 4)], **_STE),
    Case("CriticalSectionUnlock", lambda x: CriticalSection().execute(lambda: cf.sin(x) * x), [(2, 3)]),
]
