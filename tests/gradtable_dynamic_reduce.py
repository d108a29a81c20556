"""Gradient-check cases for reductions, transpose and expand_dims over run-time axes
(graph/ops/dynamic_reduce_ops.py, dynamic_layout_ops.py: ReduceDynamic, TransposeDynamic,
ExpandDimsDynamic).  The axes come through placeholder_with_default, whose value the graph
cannot determine, so the dynamic op is built; finite differences check its gradient."""
import numpy as np

import collflow as cf
from gradcheck import Case


def _axes(v):
    return cf.placeholder_with_default(np.asarray(v, np.int32), [None] if np.ndim(v) else [])


def _unknown_rank(x):
    return cf.placeholder_with_default(x, None)  # x's rank unknown to the graph


CASES = [
    Case("ReduceDynamic", lambda x: cf.reduce_sum(x, axis=_axes([0, 2])), [(2, 3, 4)], id="ReduceDynamic-sum"),
    Case("ReduceDynamic", lambda x: cf.reduce_mean(x, axis=_axes([-1]), keepdims=True), [(3, 4)],
         id="ReduceDynamic-mean-keep"),
    Case("ReduceDynamic", lambda x: cf.reduce_max(_unknown_rank(x), axis=cf.range(1, cf.rank(_unknown_rank(x)))),
         [(3, 2, 4)], id="ReduceDynamic-max-unknown-rank"),
    Case("ReduceDynamic", lambda x: cf.reduce_min(x, axis=_axes(1), keepdims=True), [(3, 5)],
         id="ReduceDynamic-min-keep"),
    Case("ReduceDynamic", lambda x: cf.reduce_sum(x, axis=_axes(np.zeros(0, np.int32))), [(2, 3)],
         id="ReduceDynamic-no-axes"),
    Case("ReduceDynamic", lambda x: cf.reduce_prod(x, axis=_axes([0, -1])), [(2, 3, 4)], id="ReduceDynamic-prod"),
    Case("ReduceDynamic", lambda x: cf.reduce_prod(x, axis=_axes([1]), keepdims=True), [(3, 4)],
         make_inputs=lambda r: [np.where(np.arange(12).reshape(3, 4) % 5 == 0, 0.0, r.uniform(-2, 2, (3, 4)))],
         id="ReduceDynamic-prod-zeros"),
    Case("TransposeDynamic", lambda x: cf.transpose(x, _axes([2, 0, 1])), [(2, 3, 4)]),
    Case("TransposeDynamic", lambda x: cf.transpose(_unknown_rank(x), cf.concat(
        [[1, 0], cf.range(2, cf.rank(_unknown_rank(x)))], 0)), [(3, 2, 2)], id="TransposeDynamic-batch-time"),
    Case("ExpandDimsDynamic", lambda x: cf.expand_dims(x, _axes(-2)), [(3, 4)]),
]
