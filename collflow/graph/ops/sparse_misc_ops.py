"""The sparse ops of TF 1.15's namespace that came late to collflow: tf.sparse_matmul (a dense
matmul with sparsity hints), and tf.sparse.bincount / expand_dims / eye / from_dense (TF 2.x's
semantics, which `tensorflow.compat.v1` exposes).

expand_dims, eye and from_dense are composed from existing ops, so gradients reach the values
(from_dense: the dense tensor's nonzero cells).  bincount is an op of its own (TF's
DenseCountSparseOutput / SparseCountSparseOutput; kernels/sparse_more_kernels.py), without a
gradient as in TF.
"""
from __future__ import annotations

import numbers
from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from ..sparse_tensor import SparseTensor, SparseTensorValue
from . import array_ops as _a
from . import math_ops as _m
from .constant_op import constant
from .index_ops import gather_nd
from .misc_ops import range as _range
from .op_util import make_op
from .sparse_ops import _sparse

__all__ = ["sparse_matmul", "sparse_bincount", "sparse_expand_dims", "sparse_eye", "sparse_from_dense"]


def _allowed(t: _g.Tensor, param: str, allowed: Tuple[_dt.DType, ...]) -> None:
    """TF's TypeError for an input of a dtype the op has no kernel for."""
    if t.dtype not in allowed:
        raise TypeError(f"Value passed to parameter '{param}' has DataType {t.dtype.name} not in list of allowed "
                        f"values: {', '.join(d.name for d in allowed)}")


def sparse_matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
                  a_is_sparse: bool = False, b_is_sparse: bool = False,
                  name: Optional[str] = None) -> _g.Tensor:
    """a @ b for 2-D float32 matrices (TF's SparseMatMul; bfloat16, which collflow lacks, is
    refused).  The *_is_sparse hints only pick TF's kernel: the result, float32, and the
    gradients are a plain matmul's."""
    del a_is_sparse, b_is_sparse  # hints of TF's kernel choice; they change no value
    at, bt = _g.convert_to_tensor(a, name="a"), _g.convert_to_tensor(b, name="b")
    _allowed(at, "a", (_dt.float32,))
    _allowed(bt, "b", (_dt.float32,))
    for t, what in ((at, "a"), (bt, "b")):
        if t.shape.rank not in (None, 2):
            raise ValueError(f"Shape must be rank 2 but is rank {t.shape.rank} for 'SparseMatMul' ({what}: "
                             f"{t.shape})")
    with at.graph.as_default(), at.graph.name_scope(name or "SparseMatMul"):
        return _m.matmul(at, bt, transpose_a=transpose_a, transpose_b=transpose_b)


# -- tf.sparse.bincount ------------------------------------------------------------------------------

_COUNT_T = (_dt.int32, _dt.int64)
_COUNT_OUT = (_dt.int32, _dt.int64, _dt.float32, _dt.float64)


def _count_spec(op: _g.Operation) -> list:
    rank = op.attrs["out_rank"] or None  # 1 for a count over everything, 2 per batch row, 0 unknown
    return [(_dt.int64, TensorShape([None, rank])), (op.attrs["output_type"], TensorShape([None])),
            (_dt.int64, TensorShape([rank]))]


register_op("DenseCountSparseOutput", _count_spec, host_only=True,
            doc="counts of each value of a 1-D tensor (or of each row of a 2-D one), as a SparseTensor")
register_op("SparseCountSparseOutput", _count_spec, host_only=True,
            doc="counts of each value of a SparseTensor (or per row of its first dimension), as a SparseTensor")
not_differentiable("DenseCountSparseOutput", "SparseCountSparseOutput")


def _length(v: Any, what: str) -> int:
    """minlength / maxlength: a Python int (an attr of TF's op), -1 for None."""
    if v is None:
        return -1
    if not isinstance(v, numbers.Integral) or isinstance(v, bool):
        raise TypeError(f"Expected int for argument '{what}' not {v!r}.")
    return int(v)


def sparse_bincount(values: Any, weights: Any = None, axis: Optional[int] = 0, minlength: Optional[int] = None,
                    maxlength: Optional[int] = None, binary_output: bool = False,
                    name: Optional[str] = None) -> SparseTensor:
    """How often each value occurs, as a SparseTensor (TF 2.x's tf.sparse.bincount): with
    axis=0 over all of `values` (dense shape [n]); with axis=-1 per row of a 2-D tensor or of
    a SparseTensor's first dimension (dense shape [rows, n]).  Counts are the sums of
    `weights` (same shape or, for a SparseTensor, same indices) where given, 1 per distinct
    value with binary_output; values >= maxlength are not counted, a negative one is
    InvalidArgumentError at run time (TF 2.21's kernel).  n = maxlength when given, else
    max(largest counted value + 1, minlength).  The counts' dtype is the weights' (else the
    values')."""
    is_sparse = isinstance(values, (SparseTensor, SparseTensorValue))
    vals: Any = _sparse(values, "bincount") if is_sparse else _g.convert_to_tensor(values, name="values")
    g = vals.graph
    with g.as_default(), g.name_scope(name or "count"):
        w: Any = None
        if weights is not None:
            w = (_sparse(weights, "bincount weights") if isinstance(weights, (SparseTensor, SparseTensorValue))
                 else _g.convert_to_tensor(weights, name="weights"))
        if w is not None and binary_output:
            raise ValueError("Arguments `binary_output` and `weights` are mutually exclusive. Please specify "
                             "only one.")
        if axis is None:
            axis = 0
        if axis not in (0, -1):
            raise ValueError(f"Unsupported value for argument axis={axis}. Only 0 and -1 are currently supported.")
        attrs = {"minlength": _length(minlength, "minlength"), "maxlength": _length(maxlength, "maxlength"),
                 "binary_output": bool(binary_output)}
        if axis == 0:  # everything counted as one batch: the values (and weights) flattened
            if is_sparse:
                if w is not None:
                    w = _sparse_weights(vals, w)
                vals = vals.values
            else:
                if w is not None:
                    w = _a.reshape(w, [-1])
                vals = _a.reshape(vals, [-1])
        if isinstance(vals, SparseTensor):
            w = _sparse_weights(vals, w)
            _allowed(vals.values, "values", _COUNT_T)
            out_rank = {None: 0, 1: 1}.get(vals.shape.rank, 2)
            ins = [vals.indices, vals.values, vals.dense_shape, w]
            op_type = "SparseCountSparseOutput"
        else:
            if w is None:
                w = constant(np.zeros(0, vals.dtype.np), dtype=vals.dtype)
            elif isinstance(w, SparseTensor):
                raise ValueError(f"Argument `weights` must be a tf.Tensor if `values` is a tf.Tensor. Received "
                                 f"weights={w} of type: SparseTensor")
            _allowed(vals, "values", _COUNT_T)
            if vals.shape.rank is not None and vals.shape.rank not in (1, 2):
                raise InvalidArgumentError(f"Input must be a 1 or 2-dimensional tensor. Got: "
                                           f"{_shape_str(vals.shape)}")
            out_rank = {None: 0, 1: 1}.get(vals.shape.rank, 2)
            ins = [vals, w]
            op_type = "DenseCountSparseOutput"
        _allowed(w, "weights", _COUNT_OUT)
        op = make_op(op_type, ins, dict(attrs, output_type=w.dtype, out_rank=out_rank), name=op_type)
        return SparseTensor(*op.outputs)


def _shape_str(shape: TensorShape) -> str:
    """TF's TensorShape.DebugString: [2,3,4] (? for an unknown dimension)."""
    return "[" + ",".join("?" if d is None else str(d) for d in shape.dims) + "]"


def _sparse_weights(vals: SparseTensor, w: Any) -> _g.Tensor:
    """The weights' values, checked at run time to have vals' indices and dense shape (TF's
    validate_sparse_weights); an empty vector of vals' dtype without weights."""
    from .check_ops import assert_equal
    from .constant_op import identity
    if w is None:
        return constant(np.zeros(0, vals.dtype.np), dtype=vals.dtype)
    if not isinstance(w, SparseTensor):
        raise ValueError(f"Argument `weights` must be a SparseTensor if `values` is a SparseTensor. Received "
                         f"weights={w} of type: {type(w).__name__}")
    checks = []
    if w.dense_shape is not vals.dense_shape:
        checks.append(assert_equal(w.dense_shape, vals.dense_shape,
                                   message="'weights' and 'values' must have the same dense shape."))
    if w.indices is not vals.indices:
        checks.append(assert_equal(w.indices, vals.indices,
                                   message="'weights' and 'values' must have the same indices."))
    if not checks:
        return w.values
    with vals.graph.control_dependencies(checks):
        return identity(w.values)


# -- expand_dims, eye, from_dense ---------------------------------------------------------------------

def sparse_expand_dims(sp_input: Any, axis: Any = None, name: Optional[str] = None) -> SparseTensor:
    """The SparseTensor with a dimension of size 1 inserted at `axis` (default -1: innermost;
    a negative axis counts from the end, in [-rank - 1, rank]); same values and order."""
    sp = _sparse(sp_input, "sparse.expand_dims")
    ax = -1 if axis is None else axis
    if isinstance(ax, (numbers.Integral, np.integer)) and not isinstance(ax, bool):
        ax = int(ax)
    elif not isinstance(ax, _g.Tensor):
        raise TypeError("axis must be an integer value in range [-rank(sp_input) - 1, rank(sp_input)]")
    g = sp.graph
    with g.as_default(), g.name_scope(name or "expand_dims"):
        rank = sp.shape.rank
        if isinstance(ax, int) and rank is not None:
            if not -rank - 1 <= ax <= rank:
                raise InvalidArgumentError(f"sparse.expand_dims: axis {ax} is out of range [{-rank - 1}, {rank}] "
                                           f"for a SparseTensor of rank {rank}")
            pos = ax if ax >= 0 else ax + rank + 1
            zeros = _a.zeros(_a.stack([_a.shape(sp.indices)[0], 1]), _dt.int64)
            indices = _a.concat([sp.indices[:, :pos], zeros, sp.indices[:, pos:]], 1)
            dims = list(sp.shape.dims)
            if all(d is not None for d in dims):
                shape: Any = constant(np.array(dims[:pos] + [1] + dims[pos:], np.int64))
            else:
                shape = _a.concat([sp.dense_shape[:pos], constant([1], dtype=_dt.int64), sp.dense_shape[pos:]], 0)
            return SparseTensor(indices, sp.values, shape)
        # the rank or the axis known only at run time: TF's slices at a computed position
        n = _a.size(sp.dense_shape, out_type=_dt.int32)
        at = _m.cast(_g.convert_to_tensor(ax), _dt.int32)
        pos_t = _a.where_v2(_m.greater_equal(at, 0), at, at + n + 1)
        before = _m.less(_range(n), pos_t)  # which old dimensions come before the new one
        zeros = _a.zeros(_a.stack([_a.shape(sp.indices)[0], 1]), _dt.int64)
        cols = _a.transpose(sp.indices)
        keep_b, keep_a = _a.reshape(_a.where(before), [-1]), _a.reshape(_a.where(_m.logical_not(before)), [-1])
        indices = _a.concat([_a.transpose(_a.gather(cols, keep_b)), zeros, _a.transpose(_a.gather(cols, keep_a))], 1)
        shape = _a.concat([_a.gather(sp.dense_shape, keep_b), constant([1], dtype=_dt.int64),
                           _a.gather(sp.dense_shape, keep_a)], 0)
        return SparseTensor(indices, sp.values, shape)


def _int64_scalar(v: Any, what: str) -> Tuple[_g.Tensor, Optional[int]]:
    """v as an int64 scalar tensor, and its value where known now (TF's _make_int64_tensor)."""
    if isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, bool):
        return constant(int(v), dtype=_dt.int64, name=what), int(v)
    t = _g.convert_to_tensor(v, name=what)
    if t.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{what} must be an integer scalar, got {t.dtype.name}")
    return _m.cast(t, _dt.int64), None


def sparse_eye(num_rows: Any, num_columns: Any = None, dtype: Any = _dt.float32,
               name: Optional[str] = None) -> SparseTensor:
    """A [num_rows, num_columns] SparseTensor (columns default: rows) with ones on the
    diagonal, in row order."""
    dt = _dt.as_dtype(dtype)
    g = next((x.graph for x in (num_rows, num_columns) if isinstance(x, _g.Tensor)), None) or _g.get_default_graph()
    with g.as_default(), g.name_scope(name or "eye"):
        rows, nr = _int64_scalar(num_rows, "num_rows")
        cols, nc = (rows, nr) if num_columns is None else _int64_scalar(num_columns, "num_columns")
        if nr is not None and nc is not None:
            n = min(nr, nc)
            diag = constant(np.arange(n, dtype=np.int64))
            return SparseTensor(_a.stack([diag, diag], 1), _a.ones([n], dt), constant(np.array([nr, nc], np.int64)))
        size = _m.minimum(rows, cols)
        diag = _range(size, dtype=_dt.int64)
        return SparseTensor(_a.stack([diag, diag], 1), _a.ones(_a.reshape(size, [1]), dt), _a.stack([rows, cols]))


def sparse_from_dense(tensor: Any, name: Optional[str] = None) -> SparseTensor:
    """The SparseTensor of the cells of `tensor` that are not zero ("" for strings, False for
    bools), in row-major order; its dense shape the tensor's."""
    t = _g.convert_to_tensor(tensor)
    with t.graph.as_default(), t.graph.name_scope(name or "dense_to_sparse"):
        # a string's zero is "" (compared directly: zeros_like of strings is not "" here)
        zero = constant("", dtype=_dt.string) if t.dtype == _dt.string else _a.zeros_like(t)
        indices = _a.where(_m.not_equal(t, zero))
        values = gather_nd(t, indices)
        if t.shape.is_fully_defined():
            shape: Any = constant(np.array(t.shape.as_list(), np.int64))
        else:
            shape = _a.shape(t, out_type=_dt.int64)
        return SparseTensor(indices, values, shape)
