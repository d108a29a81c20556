"""Cumulative sums and products along an axis (tf.cumsum, tf.cumprod), with TF1's
`exclusive` (start from the identity) and `reverse` (accumulate from the end)."""
from __future__ import annotations

from typing import Any, Optional

from .. import graph as _g
from ..registry import register_gradient, register_op
from .op_util import single, static_axis

__all__ = ["cumsum", "cumprod"]


def _spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    rank = x.shape.rank
    if rank is not None and not -max(rank, 1) <= op.attrs["axis"] < max(rank, 1):
        raise ValueError(f"axis {op.attrs['axis']} is out of range for a tensor of rank {rank}")
    if not (x.dtype.is_floating or x.dtype.is_integer or x.dtype.is_complex):
        raise ValueError(f"{op.type} needs a numeric tensor, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


register_op("Cumsum", _spec, doc="cumulative sum along `axis` (exclusive / reverse as TF)")
register_op("Cumprod", _spec, doc="cumulative product along `axis` (exclusive / reverse as TF)")


def _attrs(axis: Any, exclusive: bool, reverse: bool) -> dict:
    return {"axis": int(axis), "exclusive": bool(exclusive), "reverse": bool(reverse)}


def cumsum(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
           name: Optional[str] = None) -> _g.Tensor:
    """Running sums along `axis`: [a, b, c] -> [a, a+b, a+b+c] (exclusive: [0, a, a+b])."""
    return single("Cumsum", [x], _attrs(static_axis(axis, "cumsum"), exclusive, reverse), name=name or "Cumsum")


def cumprod(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
            name: Optional[str] = None) -> _g.Tensor:
    """Running products along `axis`: [a, b, c] -> [a, ab, abc] (exclusive: [1, a, ab])."""
    return single("Cumprod", [x], _attrs(static_axis(axis, "cumprod"), exclusive, reverse), name=name or "Cumprod")


@register_gradient("Cumsum")
def _cumsum_grad(op: _g.Operation, g: Any) -> list:
    a = op.attrs
    return [cumsum(g, a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])]


@register_gradient("Cumprod")
def _cumprod_grad(op: _g.Operation, g: Any) -> list:
    # TF's rule: d/dx_k sum_i g_i y_i = sum_{i >= k} g_i y_i / x_k (x without zeros, as TF)
    a = op.attrs
    out = cumsum(op.outputs[0] * g, a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])
    return [out / op.inputs[0]]
