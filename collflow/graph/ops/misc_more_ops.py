"""Smaller TF1 top-level names: tf.cross, tf.broadcast_static_shape / broadcast_dynamic_shape,
tf.histogram_fixed_width (and _bins), tf.hessians, tf.get_static_value, tf.is_numeric_tensor,
the colocate_with / container contexts, and the VariableAggregation / VariableSynchronization
enums (accepted by get_variable; collflow's data parallelism has its own rules).  Composed
from existing ops, so gradients come from the parts.
"""
from __future__ import annotations

import contextlib
import enum
from typing import Any, Iterator, List, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..shape import TensorShape, as_shape, broadcast_static
from . import array_ops as _a
from . import math_ops as _m
from . import segment_ops as _seg
from .check_ops import assert_equal
from .constant_op import constant, identity
from .math_extra_ops import floor

__all__ = ["cross", "broadcast_static_shape", "broadcast_dynamic_shape", "histogram_fixed_width",
           "histogram_fixed_width_bins", "hessians", "get_static_value", "is_numeric_tensor", "colocate_with",
           "container", "VariableAggregation", "VariableSynchronization"]


class VariableSynchronization(enum.Enum):
    """TF's enum (accepted by get_variable; collflow synchronizes by its own rules)."""
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """TF's enum (accepted by get_variable; collflow aggregates gradients by its own rules)."""
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3


def cross(a: Any, b: Any, name: Optional[str] = None) -> _g.Tensor:
    """The cross products of the 3-vectors along the last axis of a and b."""
    x, y = _m._operands(a, b)
    for t in (x, y):
        if t.shape.rank is not None and t.shape.dims[-1] not in (None, 3):
            raise InvalidArgumentError(f"cross needs 3-vectors in the last dimension, got shape {t.shape}")
    with x.graph.as_default(), x.graph.name_scope(name or "Cross"):
        x0, x1, x2 = _a.unstack(x, 3, axis=-1)
        y0, y1, y2 = _a.unstack(y, 3, axis=-1)
        return _a.stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], axis=-1)


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """The broadcast of two TensorShapes (ValueError where they cannot broadcast)."""
    try:
        return broadcast_static(as_shape(shape_x), as_shape(shape_y))
    except ValueError as e:  # (InvalidArgumentError is one)
        raise ValueError(f"Incompatible shapes for broadcasting: {shape_x} and {shape_y} ({e})") from None


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any, name: Optional[str] = None) -> _g.Tensor:
    """The broadcast of two shape vectors (int32/int64 tensors): each dimension the other's
    where one is 1; InvalidArgumentError when run on dimensions that differ otherwise."""
    sx = _g.convert_to_tensor(shape_x)
    sy = _g.convert_to_tensor(shape_y, dtype=sx.dtype)
    with sx.graph.as_default(), sx.graph.name_scope(name or "BroadcastArgs"):
        nx, ny = _a.size(sx), _a.size(sy)
        n = _m.maximum(nx, ny)
        one = constant(1, dtype=sx.dtype)
        # both left-padded with ones to the longer rank
        px = _a.concat([_a.fill(_a.reshape(n - nx, [1]), one), sx], 0)
        py = _a.concat([_a.fill(_a.reshape(n - ny, [1]), one), sy], 0)
        out = _a.where_v2(_m.equal(px, one), py, px)
        ok = _m.logical_or(_m.equal(py, one), _m.equal(py, out))
        check = assert_equal(ok, True, message=f"Incompatible shapes for broadcasting ({sx.name} and {sy.name})")
        with sx.graph.control_dependencies([check]):
            return identity(out)


def histogram_fixed_width_bins(values: Any, value_range: Any, nbins: int = 100, dtype: Any = _dt.int32,
                               name: Optional[str] = None) -> _g.Tensor:
    """The bin of each value among nbins equal bins over value_range [lo, hi]: values below
    lo go to bin 0, at or above hi to the last bin, as TF."""
    v = _g.convert_to_tensor(values)
    with v.graph.as_default(), v.graph.name_scope(name or "histogram_fixed_width_bins"):
        r = _m.cast(_g.convert_to_tensor(value_range), _dt.float64)
        lo, hi = r[0], r[1]
        x = (_m.cast(v, _dt.float64) - lo) / (hi - lo)
        k = _m.cast(floor(x * float(nbins)), _dt.int64)
        k = _m.minimum(_m.maximum(k, constant(0, _dt.int64)), constant(int(nbins) - 1, _dt.int64))
        return _m.cast(k, _dt.as_dtype(dtype))


def histogram_fixed_width(values: Any, value_range: Any, nbins: int = 100, dtype: Any = _dt.int32,
                          name: Optional[str] = None) -> _g.Tensor:
    """How many values fall in each of nbins equal bins over value_range (the outer bins
    take what lies outside it), as tf.histogram_fixed_width."""
    v = _g.convert_to_tensor(values)
    if not isinstance(nbins, _g.Tensor) and int(nbins) <= 0:  # TF's kernel checks both
        raise InvalidArgumentError(f"histogram_fixed_width: nbins must be positive, got {nbins}")
    with v.graph.as_default(), v.graph.name_scope(name or "histogram_fixed_width"):
        r = _g.convert_to_tensor(value_range)
        ok = _m.less(r[0], r[1])
        check = assert_equal(ok, True, message="histogram_fixed_width: value_range[0] must be less than "
                                               "value_range[1]")
        with v.graph.control_dependencies([check]):
            v = identity(v)
        bins = _a.reshape(histogram_fixed_width_bins(v, value_range, nbins, _dt.int32), [-1])
        ones = _a.ones_like(bins, dtype=_dt.as_dtype(dtype))
        return _seg.unsorted_segment_sum(ones, bins, int(nbins))


def hessians(ys: Any, xs: Any, name: str = "hessians", colocate_gradients_with_ops: bool = False,
             gate_gradients: bool = False, aggregation_method: Any = None) -> List[_g.Tensor]:
    """For each x, the second derivatives of sum(ys) with respect to x: a tensor of shape
    x.shape + x.shape (x's shape must be known; one gradient per element of x)."""
    from ..gradients import gradients
    xs_list = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    out = []
    with _g.get_default_graph().name_scope(name):
        for x in xs_list:
            xt = _g.convert_to_tensor(x)
            if not xt.shape.is_fully_defined():
                raise InvalidArgumentError(f"hessians needs xs of known shape, {xt.name} has {xt.shape}")
            first = gradients(ys, xt)[0]
            if first is None:
                out.append(None)
                continue
            flat = _a.reshape(_g.convert_to_tensor(first), [-1])
            n = xt.shape.num_elements()
            rows = []
            for i in range(n):
                gi = gradients(flat[i], xt)[0]
                rows.append(_a.zeros_like(xt) if gi is None else _g.convert_to_tensor(gi))
            dims = xt.shape.as_list()
            out.append(_a.reshape(_a.stack(rows), dims + dims))
    return out


def get_static_value(tensor: Any, partial: bool = False) -> Optional[np.ndarray]:
    """The value of `tensor` when the graph alone determines it (a constant, the shape or
    rank of a tensor of known shape, a value that is not a tensor), else None."""
    if not isinstance(tensor, _g.Tensor):
        return np.asarray(tensor)
    op = tensor.op
    if op.type == "Const":
        v = np.asarray(op.attrs["value"])
        return _dt.user_strings(v) if v.dtype == object else v  # strings as TF gives them: bytes
    if op.type in ("Shape", "Rank", "Size") and op.inputs:
        s = op.inputs[0].shape
        if op.type == "Rank":
            return None if s.rank is None else np.asarray(s.rank, dtype=tensor.dtype.np)
        if not s.is_fully_defined():
            return None
        if op.type == "Size":
            return np.asarray(s.num_elements(), dtype=tensor.dtype.np)
        return np.asarray(s.as_list(), dtype=tensor.dtype.np)
    if op.type == "Identity" and op.inputs:
        return get_static_value(op.inputs[0], partial)
    return None


def is_numeric_tensor(tensor: Any) -> bool:
    """Whether `tensor` is a Tensor of a numeric dtype."""
    return isinstance(tensor, _g.Tensor) and (tensor.dtype.is_floating or tensor.dtype.is_integer)


@contextlib.contextmanager
def colocate_with(op: Any, ignore_existing: bool = False) -> Iterator[None]:
    """Accepted for TF1 programs: placement is collflow's (one device per rank)."""
    yield


@contextlib.contextmanager
def container(container_name: str) -> Iterator[None]:
    """Accepted for TF1 programs: a Session has one resource container."""
    yield
