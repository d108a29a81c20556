"""tf.nn.fractional_max_pool / fractional_avg_pool (TF1's argument names): pooling over regions
whose sizes are k or k + 1 (k = floor(pooling ratio)), arranged pseudo-randomly or randomly
(Graham, "Fractional Max-Pooling").  Outputs (output, row_pooling_sequence,
col_pooling_sequence).  With deterministic=True and a seed the regions are TensorFlow's (see
kernels/fractional_pool_kernels.py); max skips NaN, as TF's kernel; gradients as TF's (max: to
the region's cell by TF's argmax rule; avg: spread evenly).
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from .op_util import dense as _dense, make_op, single

__all__ = ["fractional_max_pool", "fractional_avg_pool"]


def _spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.shape.rank not in (None, 4):
        raise ValueError(f"fractional pooling needs an NHWC input of rank 4, got {x.shape}")
    ratio = op.attrs["pooling_ratio"]
    dims: List[Any] = [None] * 4
    if x.shape.rank == 4:
        dims = [None if d is None else int(math.floor(d / r)) for d, r in zip(x.shape.dims, ratio)]
        dims[0], dims[3] = x.shape.dims[0], x.shape.dims[3]
    seq = lambda d: TensorShape([None if d is None else d + 1])   # noqa: E731
    return [(x.dtype, TensorShape(dims)), (_dt.int64, seq(dims[1])), (_dt.int64, seq(dims[2]))]


for _n in ("FractionalMaxPool", "FractionalAvgPool"):
    register_op(_n, _spec, stateful=True, host_only=True)
register_op("FractionalMaxPoolGrad", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], host_only=True)
register_op("FractionalAvgPoolGrad", lambda op: [(op.inputs[1].dtype, TensorShape(None))], host_only=True)
# the gradient ops have no gradient registered (LookupError through them, as TF)


@register_gradient("FractionalMaxPool")
def _max_grad(op: _g.Operation, g: Any, *_: Any) -> list:
    r = single("FractionalMaxPoolGrad", [op.inputs[0], op.outputs[0], _dense(g), op.outputs[1], op.outputs[2]],
               {"overlapping": op.attrs["overlapping"]})
    return [r]


@register_gradient("FractionalAvgPool")
def _avg_grad(op: _g.Operation, g: Any, *_: Any) -> list:
    r = single("FractionalAvgPoolGrad", [_a.shape(op.inputs[0], out_type=_dt.int64), _dense(g), op.outputs[1],
                                         op.outputs[2]], {"overlapping": op.attrs["overlapping"]})
    return [_a.reshape(r, _a.shape(op.inputs[0]))]


def _pool(op_type: str, value: Any, pooling_ratio: Sequence[float], pseudo_random: bool, overlapping: bool,
          deterministic: bool, seed: int, seed2: int, name: Optional[str]) -> Any:
    ratio = [float(v) for v in pooling_ratio]
    if len(ratio) != 4 or ratio[0] != 1.0 or ratio[3] != 1.0:
        raise ValueError(f"pooling_ratio must be [1.0, rows, cols, 1.0] (pooling over batch or channels is not "
                         f"supported), got {list(pooling_ratio)}")
    if min(ratio[1], ratio[2]) < 1.0:
        raise ValueError(f"pooling_ratio must be >= 1.0, got {list(pooling_ratio)}")
    x = _g.convert_to_tensor(value)
    if x.dtype not in (_dt.float32, _dt.float64, _dt.int32, _dt.int64):
        raise TypeError(f"{op_type}: unsupported dtype {x.dtype.name}")
    attrs = {"pooling_ratio": ratio, "pseudo_random": bool(pseudo_random), "overlapping": bool(overlapping),
             "deterministic": bool(deterministic), "seed": int(seed or 0), "seed2": int(seed2 or 0)}
    with x.graph.as_default():
        op = make_op(op_type, [x], attrs, name=name or op_type)
    return op.outputs[0], op.outputs[1], op.outputs[2]


def fractional_max_pool(value: Any, pooling_ratio: Sequence[float], pseudo_random: bool = False,
                        overlapping: bool = False, deterministic: bool = False, seed: int = 0, seed2: int = 0,
                        name: Optional[str] = None) -> Any:
    """Fractional max pooling of an NHWC tensor: (output, row_pooling_sequence,
    col_pooling_sequence); output size floor(input / ratio) per spatial axis."""
    return _pool("FractionalMaxPool", value, pooling_ratio, pseudo_random, overlapping, deterministic, seed, seed2,
                 name)


def fractional_avg_pool(value: Any, pooling_ratio: Sequence[float], pseudo_random: bool = False,
                        overlapping: bool = False, deterministic: bool = False, seed: int = 0, seed2: int = 0,
                        name: Optional[str] = None) -> Any:
    """Fractional average pooling, as fractional_max_pool with the mean of each region."""
    return _pool("FractionalAvgPool", value, pooling_ratio, pseudo_random, overlapping, deterministic, seed, seed2,
                 name)
