"""Gradient-check cases for the ops whose size arguments are run-time tensors
(collflow/graph/ops/dynamic_args_ops.py): tile multiples, pad paddings, one_hot depth,
broadcast_to shape and reverse axes fed through placeholder_with_default, so the graph cannot
determine them when it is built and the dynamic ops (not the static ones) are made.

`_dyn(x)` also hides the float input's static shape, for the gradient rules' run-time-shape paths.
"""
import numpy as np

import collflow as cf
from collflow.graph.ops import dynamic_args_ops as D
from collflow.graph.ops.op_util import single
from gradcheck import Case


def _rt(value):
    """An int32 tensor holding `value` that the graph cannot evaluate when it is built."""
    v = np.asarray(value, dtype=np.int32)
    return cf.placeholder_with_default(v, [None] * v.ndim)  # a 0-d value stays a scalar


def _dyn(x):
    return cf.placeholder_with_default(x, [None] * x.shape.rank)


CASES = [
    Case("TileDynamic", lambda a: cf.tile(a, _rt([3, 2])), [(2, 3)], id="TileDynamic"),
    Case("TileDynamic", lambda a: cf.tile(_dyn(a), _rt([1, 0, 2])), [(2, 1, 3)], id="TileDynamic-zero-unknown-shape"),
    Case("TileDynamic", lambda a: cf.tile(a, [cf.shape(_dyn(a))[0], 2]) * 2.0, [(2, 3)],
         id="TileDynamic-list-of-tensors"),
    Case("TileDynamicGrad", lambda g: D.tile_dynamic_grad(g, _rt([3, 2]), cf.zeros((2, 3), cf.float64)),
         [(6, 6)], id="TileDynamicGrad"),
    Case("TileDynamicGrad", lambda g: D.tile_dynamic_grad(g, _rt([2, 1]), _dyn(cf.zeros((2, 3), cf.float64))),
         [(4, 3)], id="TileDynamicGrad-unknown-shape"),
    Case("PadDynamic", lambda a: cf.pad(a, _rt([[1, 2], [0, 1]]), constant_values=0.7), [(2, 3)],
         id="PadDynamic"),
    Case("PadDynamic", lambda a: cf.pad(_dyn(a), [[0, cf.shape(_dyn(a))[0]], [1, 1]]), [(2, 3)],
         id="PadDynamic-list-of-tensors"),
    Case("PadDynamicGrad", lambda g: single("PadDynamicGrad", [g, _rt([[1, 0], [2, 1]])], {"shape": None}),
         [(4, 6)]),
    Case("MirrorPadDynamic", lambda a: cf.pad(a, _rt([[1, 1], [2, 0]]), "REFLECT"), [(3, 4)],
         id="MirrorPadDynamic-reflect"),
    Case("MirrorPadDynamic", lambda a: cf.pad(_dyn(a), _rt([[2, 1], [3, 3]]), "SYMMETRIC"), [(2, 3)],
         id="MirrorPadDynamic-symmetric"),
    Case("MirrorPadDynamicGrad", lambda g: single("MirrorPadDynamicGrad", [g, _rt([[1, 2], [0, 1]])],
                                                  {"mode": "REFLECT", "shape": None}), [(6, 5)],
         id="MirrorPadDynamicGrad-reflect"),
    Case("MirrorPadDynamicGrad", lambda g: single("MirrorPadDynamicGrad", [g, _rt([[2, 2], [1, 0]])],
                                                  {"mode": "SYMMETRIC", "shape": None}), [(6, 3)],
         id="MirrorPadDynamicGrad-symmetric"),
    Case("BroadcastToDynamic", lambda a: cf.broadcast_to(a, _rt([4, 3])), [(1, 3)], id="BroadcastToDynamic"),
    Case("BroadcastToDynamic", lambda a: cf.broadcast_to(_dyn(a), _rt([2, 4, 3])), [(3,)],
         id="BroadcastToDynamic-rank-up"),
    Case("ReverseDynamic", lambda a: cf.reverse(a, _rt([1])), [(3, 4)], id="ReverseDynamic"),
    Case("ReverseDynamic", lambda a: cf.reverse(_dyn(a), _rt([0, -1])), [(3, 4)], id="ReverseDynamic-two-axes"),
    Case("SplitVDynamic", lambda a: cf.split(a, _rt([2, 0, -1]), 0, num=3), [(5, 2)],
         id="SplitVDynamic-empty-and-rest"),
    # not differentiable itself (TF's OneHot): the product's gradient flows to `a` only
    Case("OneHotDynamic", lambda a: cf.one_hot(cf.constant([0, 2, 5, -1]), _rt(4), dtype=cf.float64) * a,
         [(4, 4)], id="OneHotDynamic"),
]
