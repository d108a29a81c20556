"""Gradient-check cases for the math ops."""
import numpy as np

import collflow as cf
from gradcheck import Case


def _pos(shape):
    return lambda rng: [rng.uniform(0.5, 2.0, size=shape)]



@cf.custom_gradient
def _square_with_custom_gradient(x):
    return x * x, lambda dy: 2.0 * x * dy

CASES = [
    Case("Add", lambda a, b: a + b, [(3, 4), (4,)], id="Add-broadcast"),
    Case("Add", lambda a, b: a + b, [(2, 1, 3), (1, 4, 1)], id="Add-both-broadcast"),
    Case("Sub", lambda a, b: a - b, [(3, 4), (3, 1)]),
    Case("Mul", lambda a, b: a * b, [(3, 4), (1, 4)]),
    Case("RealDiv", lambda a, b: a / b, [(3, 4), (4,)],
         make_inputs=lambda r: [r.uniform(-2, 2, (3, 4)), r.uniform(0.5, 2, (4,))]),
    Case("Pow", lambda a, b: cf.pow(a, b), [(3, 4), (3, 4)],
         make_inputs=lambda r: [r.uniform(0.5, 2, (3, 4)), r.uniform(-1.5, 1.5, (3, 4))]),
    Case("Maximum", cf.maximum, [(3, 4), (3, 4)]),
    Case("Minimum", cf.minimum, [(3, 4), (4,)]),
    Case("SquaredDifference", cf.squared_difference, [(3, 4), (3, 4)]),
    Case("Neg", lambda a: -a, [(3, 4)]),
    Case("Exp", cf.exp, [(3, 4)]),
    Case("Log", cf.log, [(3, 4)], make_inputs=_pos((3, 4))),
    Case("Log1p", cf.log1p, [(3, 4)], make_inputs=_pos((3, 4))),
    Case("Sqrt", cf.sqrt, [(3, 4)], make_inputs=_pos((3, 4))),
    Case("Rsqrt", cf.rsqrt, [(3, 4)], make_inputs=_pos((3, 4))),
    Case("Reciprocal", cf.reciprocal, [(3, 4)], make_inputs=_pos((3, 4))),
    Case("Sin", cf.sin, [(3, 4)]),
    Case("Cos", cf.cos, [(3, 4)]),
    Case("Square", cf.square, [(3, 4)]),
    Case("Abs", cf.abs, [(3, 4)], make_inputs=lambda r: [r.uniform(0.2, 2, (3, 4)) * r.choice([-1, 1], (3, 4))]),
    # a user-written gradient that is the true derivative: finite differences must agree
    Case("CustomGradient", lambda x: _square_with_custom_gradient(x), [(3, 4)]),
    Case("Expm1", cf.expm1, [(3, 4)]),
    Case("Tan", cf.tan, [(3, 4)], make_inputs=lambda r: [r.uniform(-1, 1, (3, 4))]),
    Case("Atan", cf.atan, [(3, 4)]),
    Case("Asin", cf.asin, [(3, 4)], make_inputs=lambda r: [r.uniform(-0.9, 0.9, (3, 4))]),
    Case("Acos", cf.acos, [(3, 4)], make_inputs=lambda r: [r.uniform(-0.9, 0.9, (3, 4))]),
    Case("Sinh", cf.sinh, [(3, 4)]),
    Case("Cosh", cf.cosh, [(3, 4)]),
    Case("Asinh", cf.asinh, [(3, 4)]),
    Case("Acosh", cf.acosh, [(3, 4)], make_inputs=lambda r: [r.uniform(1.2, 3.0, (3, 4))]),
    Case("Atanh", cf.atanh, [(3, 4)], make_inputs=lambda r: [r.uniform(-0.9, 0.9, (3, 4))]),
    Case("Select", lambda x, y: cf.div_no_nan(x, y * cf.constant([[1.0, 0.0, 1.0, 1.0]], cf.float64)),
         [(3, 4), (3, 4)], make_inputs=lambda r: [r.normal(size=(3, 4)), r.uniform(0.5, 2, (3, 4))],
         id="div_no_nan"),
    Case("Sign", cf.sign, [(3, 4)], make_inputs=lambda r: [r.uniform(0.2, 2, (3, 4)) * r.choice([-1, 1], (3, 4))]),
    Case("Cast", lambda a: cf.cast(cf.cast(a, cf.float32), cf.float64), [(3,)], eps=1e-2, rtol=1e-4, atol=1e-4),
    Case("ClipByValue", lambda a: cf.clip_by_value(a, -1.0, 1.0), [(3, 4)],
         make_inputs=lambda r: [r.choice([-1.7, -0.5, 0.3, 0.8, 1.6], (3, 4)) + r.uniform(-0.05, 0.05, (3, 4))]),
    Case("AddN", lambda a, b, c: cf.add_n([a, b, c]), [(2, 3)] * 3),
    Case("MatMul", cf.matmul, [(3, 4), (4, 5)]),
    Case("MatMul", lambda a, b: cf.matmul(a, b, transpose_a=True), [(4, 3), (4, 5)], id="MatMul-ta"),
    Case("MatMul", lambda a, b: cf.matmul(a, b, transpose_b=True), [(3, 4), (5, 4)], id="MatMul-tb"),
    Case("MatMul", lambda a, b: cf.matmul(a, b, transpose_a=True, transpose_b=True), [(4, 3), (5, 4)], id="MatMul-tab"),
    Case("MatMul", cf.matmul, [(2, 3, 4), (4, 5)], id="MatMul-batched-broadcast"),
    Case("Sum", lambda a: cf.reduce_sum(a, axis=1), [(3, 4)]),
    Case("Sum", lambda a: cf.reduce_sum(a, axis=(0, 2), keepdims=True), [(2, 3, 4)], id="Sum-keepdims"),
    Case("Mean", lambda a: cf.reduce_mean(a, axis=0), [(3, 4)]),
    Case("Mean", lambda a: cf.reduce_mean(a), [(3, 4)], id="Mean-all"),
    Case("Prod", lambda a: cf.reduce_prod(a, axis=1), [(3, 4)], make_inputs=_pos((3, 4))),
    Case("Max", lambda a: cf.reduce_max(a, axis=1), [(3, 4)]),
    Case("Min", lambda a: cf.reduce_min(a, axis=0, keepdims=True), [(3, 4)]),
    Case("SumToShapeOf", lambda a, b: cf.sum_to_shape_of(a, b) * b, [(3, 4), (1, 4)]),
    # variables: gradients flow through every read of the variable to its handle
    Case("ReadVariable", lambda w, b: cf.matmul(cf.constant(np.ones((2, 3))), w) + b * b, [(3, 4), (4,)],
         as_variables=True),
    Case("FusedAllReduce", lambda a, b: [t * t for t in __import__("collflow.graph.ops.fusion_ops", fromlist=["x"])
                                         .fused_all_reduce([a, b], key="gradcheck")], [(3,), (2, 2)]),
    Case("Delay", lambda a: cf.delay(a * a, 0.0), [(3,)]),
]


CASES += [
    Case("Cumsum", lambda a: cf.graph.ops.scan_ops.cumsum(a, axis=1), [(3, 4)], id="cumsum"),
    Case("Cumsum", lambda a: cf.graph.ops.scan_ops.cumsum(a, axis=0, exclusive=True, reverse=True), [(3, 4)],
         id="cumsum-exclusive-reverse"),
    Case("Cumprod", lambda a: cf.graph.ops.scan_ops.cumprod(a, axis=1), [(3, 4)], low=0.5, high=1.5, id="cumprod"),
    Case("Cumprod", lambda a: cf.graph.ops.scan_ops.cumprod(a, axis=0, exclusive=True, reverse=True), [(3, 4)],
         low=0.5, high=1.5, id="cumprod-exclusive-reverse"),
]
