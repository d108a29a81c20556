"""Norms and gradient clipping (TensorFlow 1.x's tf.norm, tf.global_norm, tf.clip_by_norm,
tf.clip_by_global_norm), composed from the math and array ops.

The clipping functions take IndexedSlices as TensorFlow does: they scale (and measure) the
slices' values, keeping the slices sparse; None entries pass through as None.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ...errors import InvalidArgumentError
from .. import graph as _g
from ..indexed_slices import IndexedSlices
from . import array_ops as _a
from . import math_ops as _m
from .constant_op import constant, identity
from .linalg_ops import singular_values
from .op_util import single

__all__ = ["norm", "global_norm", "clip_by_norm", "clip_by_global_norm", "clip_by_average_norm"]

_VECTOR_ORDS = ("euclidean", 1, 2, np.inf)
_MATRIX_ORDS = ("euclidean", "fro", 1, 2, np.inf)


def _is_ord(ord: Any, choices: Sequence[Any]) -> bool:  # noqa: A002 - TF name
    if isinstance(ord, str):
        return ord in [c for c in choices if isinstance(c, str)]
    return np.isreal(ord) and any(ord == c for c in choices if not isinstance(c, str))


def _graph_of(values: Sequence[Any]) -> _g.Graph:
    for v in values:
        g = getattr(v, "graph", None)
        if isinstance(g, _g.Graph):
            return g
    return _g.get_default_graph()


def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None, keepdims: Optional[bool] = None,  # noqa: A002
         name: Optional[str] = None, keep_dims: Optional[bool] = None) -> _g.Tensor:
    """The vector or matrix norm of `tensor` (TensorFlow's tf.norm).

    axis None: the whole tensor as one vector; an int: vector norms along it; a pair of
    distinct ints: matrix norms over those two axes.  ord for vectors: 'euclidean' (= 2), 1,
    np.inf, or any p > 0 ((sum |x|^p)^(1/p)); for matrices: 'euclidean'/'fro' (Frobenius), 1
    (largest absolute column sum), np.inf (largest absolute row sum), 2 (largest singular
    value).  keepdims keeps the reduced axes with size 1.
    """
    if keep_dims is not None:
        if keepdims is not None and bool(keepdims) != bool(keep_dims):
            raise InvalidArgumentError("norm: give keepdims or its old name keep_dims, not both")
        keepdims = keep_dims
    keepdims = bool(keepdims)
    is_matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if is_matrix:
        axis = tuple(axis)
        if not all(isinstance(a, (int, np.integer)) for a in axis) or axis[0] == axis[1]:
            raise InvalidArgumentError(f"norm: 'axis' must be None, an integer, or a tuple of 2 unique integers, "
                                       f"got {axis}")
        if not _is_ord(ord, _MATRIX_ORDS):
            raise InvalidArgumentError(f"norm: 'ord' must be a supported matrix norm in ['euclidean', 'fro', 1, 2, "
                                       f"inf], got {ord!r}")
    else:
        if axis is not None and not isinstance(axis, (int, np.integer)):
            raise InvalidArgumentError(f"norm: 'axis' must be None, an integer, or a tuple of 2 unique integers, "
                                       f"got {axis!r}")
        if isinstance(ord, str):
            if ord != "euclidean":
                raise InvalidArgumentError(f"norm: 'ord' must be a supported vector norm ('euclidean', 1, 2, inf or "
                                           f"a positive real), got {ord!r} ('fro' is for matrices: give a pair "
                                           "of axes)")
        elif not np.isreal(ord) or not ord > 0:
            raise InvalidArgumentError(f"norm: 'ord' must be a supported vector norm ('euclidean', 1, 2, inf or "
                                       f"a positive real), got {ord!r}")
    x = _g.convert_to_tensor(tensor)
    if not x.dtype.is_floating:
        raise InvalidArgumentError(f"norm needs a floating-point tensor, got {x.dtype.name}")
    g = x.graph
    with g.as_default(), g.name_scope(name or "norm"):
        axes = None if axis is None else (list(axis) if is_matrix else [int(axis)])
        if is_matrix and not isinstance(ord, str) and ord == 2:
            r = _spectral_norm(x, axes)
        elif isinstance(ord, str) or ord == 2:
            r = _m.sqrt(_m.reduce_sum(x * x, axes, keepdims=True))
        elif ord == 1:
            r = _m.reduce_sum(_m.abs(x), None if axes is None else axes[0], keepdims=True)
            if is_matrix:
                r = _m.reduce_max(r, axes[1], keepdims=True)
        elif ord == np.inf:
            r = _m.abs(x)
            if is_matrix:
                r = _m.reduce_sum(r, axes[1], keepdims=True)
            r = _m.reduce_max(r, None if axes is None else axes[0], keepdims=True)
        else:
            p = float(ord)
            r = _m.pow(_m.reduce_sum(_m.pow(_m.abs(x), p), axes, keepdims=True), 1.0 / p)
        if keepdims:
            return identity(r, name="norm")
        if axes is None:
            return _a.reshape(r, [], name="norm")
        return _a.squeeze(r, axes, name="norm")


def _spectral_norm(x: _g.Tensor, axes: List[int]) -> _g.Tensor:
    """The largest singular value of the matrices over `axes`, keepdims-shaped."""
    rank = x.shape.rank
    if rank is None:
        raise InvalidArgumentError("norm: the matrix 2-norm needs a tensor of known rank")
    ax = [a % rank for a in axes]
    if ax[0] == ax[1]:
        raise InvalidArgumentError(f"norm: 'axis' must be 2 unique integers, got {axes}")
    perm = [i for i in range(rank) if i not in ax] + ax
    s = singular_values(_a.transpose(x, perm) if perm != list(range(rank)) else x)
    r = _m.reduce_max(s, -1)
    for a in sorted(ax):
        r = _a.expand_dims(r, a)
    return r


def _values(t: Any) -> Any:
    if t is None:
        return None
    if isinstance(t, IndexedSlices):
        return t.values
    return _g.convert_to_tensor(t)


def _check_list(t_list: Any, fn: str) -> list:
    if isinstance(t_list, (str, bytes)) or not isinstance(t_list, (list, tuple)):
        raise TypeError(f"{fn}: t_list must be a list or tuple of tensors, got {type(t_list).__name__}")
    return list(t_list)


def global_norm(t_list: Sequence[Any], name: Optional[str] = None) -> _g.Tensor:
    """sqrt(sum of sum(t ** 2) over t_list): the norm of all the tensors as one vector.

    None entries are ignored; for IndexedSlices the values are measured.  Every tensor must
    have one floating dtype.
    """
    items = _check_list(t_list, "global_norm")
    values = [_values(t) for t in items]
    present = [v for v in values if v is not None]
    if not present:
        raise InvalidArgumentError("global_norm: t_list holds no tensors (only None)")
    dt = present[0].dtype
    for v in present:
        if v.dtype != dt or not dt.is_floating:
            raise InvalidArgumentError(f"global_norm: every tensor must have one floating dtype, got {dt.name} and "
                                       f"{v.dtype.name} ({v.name})")
    g = present[0].graph
    with g.as_default(), g.name_scope(name or "global_norm"):
        halves = [single("L2Loss", [v], name="L2Loss") for v in present]
        half = halves[0] if len(halves) == 1 else _m.add_n(halves)
        return _m.sqrt(half * constant(2.0, dtype=dt), name="global_norm")


def clip_by_global_norm(t_list: Sequence[Any], clip_norm: Any, use_norm: Any = None,
                        name: Optional[str] = None) -> Tuple[List[Any], _g.Tensor]:
    """(list_clipped, global_norm): every tensor scaled by clip_norm / max(global_norm, clip_norm).

    The tensors keep their relative sizes (unlike clip_by_norm on each); nothing changes when
    the global norm is at most clip_norm.  A non-finite global norm makes every entry NaN, as
    TensorFlow.  use_norm: a precomputed global norm.  None entries stay None; IndexedSlices
    stay IndexedSlices (their values scaled).
    """
    items = _check_list(t_list, "clip_by_global_norm")
    if use_norm is None:
        use_norm = global_norm(items, name)
    use_norm = _g.convert_to_tensor(use_norm)
    g = use_norm.graph
    dt = use_norm.dtype
    with g.as_default(), g.name_scope(name or "clip_by_global_norm"):
        c = _g.convert_to_tensor(clip_norm, dtype=dt) if not isinstance(clip_norm, _g.Tensor) else clip_norm
        one = constant(1.0, dtype=dt)
        scale = c * _m.minimum(one / use_norm, one / c)
        scale = scale + (use_norm - use_norm)  # NaN for an infinite or NaN norm
        out: List[Any] = []
        for i, t in enumerate(items):
            v = _values(t)
            if v is None:
                out.append(None)
                continue
            s = scale if v.dtype == dt else _m.cast(scale, v.dtype)
            clipped = identity(v * s, name=f"clipped_{i}")
            out.append(IndexedSlices(clipped, t.indices, t.dense_shape, t._static_shape)
                       if isinstance(t, IndexedSlices) else clipped)
        return out, use_norm


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: Optional[str] = None) -> Any:
    """t * clip_norm / max(l2norm(t, axes), clip_norm): each slice's L2 norm at most clip_norm.

    axes: the axes the norm is taken over (None: all).  A zero tensor stays zero with a
    finite gradient.  IndexedSlices are clipped by their values' norm and stay sparse.
    """
    v = _values(t)
    if v is None:
        raise InvalidArgumentError("clip_by_norm: t must be a tensor, got None")
    g = v.graph
    with g.as_default(), g.name_scope(name or "clip_by_norm"):
        c = _g.convert_to_tensor(clip_norm, dtype=v.dtype) if not isinstance(clip_norm, _g.Tensor) else clip_norm
        l2sum = _m.reduce_sum(v * v, axes, keepdims=True)
        pos = _m.greater(l2sum, _a.zeros_like(l2sum))
        # the sqrt sees 1 where the sum is 0: no infinite gradient leaks through the where
        safe = _a.where(pos, l2sum, _a.ones_like(l2sum))
        l2norm = _a.where(pos, _m.sqrt(safe), l2sum)
        clipped = identity((v * c) / _m.maximum(l2norm, c), name="clipped")
        if isinstance(t, IndexedSlices):
            return IndexedSlices(clipped, t.indices, t.dense_shape, t._static_shape)
        return clipped


def clip_by_average_norm(t: Any, clip_norm: Any, name: Optional[str] = None) -> _g.Tensor:
    """t * clip_norm / max(l2norm(t) / size(t), clip_norm) (TensorFlow 1.x, deprecated there)."""
    v = _g.convert_to_tensor(t)
    g = v.graph
    with g.as_default(), g.name_scope(name or "clip_by_average_norm"):
        c = _g.convert_to_tensor(clip_norm, dtype=v.dtype) if not isinstance(clip_norm, _g.Tensor) else clip_norm
        n = _m.cast(_a.size(v), v.dtype)
        inv = _m.rsqrt(_m.reduce_sum(v * v))
        return identity(v * c * _m.minimum(inv * n, constant(1.0, dtype=v.dtype) / c), name="clipped")
