"""Math ops: elementwise unary/binary with NumPy broadcasting, add_n, matmul, reductions.

Each op type is registered with a shape function here; its gradient rule lives in
graph/math_grad.py and its kernel in kernels/math_kernels.py.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape, broadcast_static
from .op_util import single, same_shape_fn, axis_list, static_axis, tf_keywords
from .dtype_rules import check_kernel_dtype

__all__ = [
    "add", "subtract", "multiply", "divide", "truediv", "floordiv", "mod", "negative", "pow",
    "exp", "log", "log1p", "sqrt", "rsqrt", "square", "abs", "sign", "maximum", "minimum",
    "reciprocal", "sin", "cos",
    "add_n", "matmul", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
    "reduce_all", "reduce_any", "reduce_logsumexp",
    "argmax", "argmin", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "cast", "sum_to_shape_of", "squared_difference",
    "clip_by_value", "scalar_mul",
]

# -- shape functions -------------------------------------------------------------------


def _binary_spec(op: _g.Operation) -> list:
    a, b = op.inputs
    if a.dtype != b.dtype:
        raise ValueError(f"inputs have different dtypes: {a.dtype.name} and {b.dtype.name}")
    return [(a.dtype, broadcast_static(a.shape, b.shape))]


def _compare_spec(op: _g.Operation) -> list:
    a, b = op.inputs
    if a.dtype != b.dtype:
        raise ValueError(f"inputs have different dtypes: {a.dtype.name} and {b.dtype.name}")
    return [(_dt.bool_, broadcast_static(a.shape, b.shape))]


def _float_unary_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise ValueError(f"{op.type} needs a floating-point input, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


BINARY_OPS = ("Add", "Sub", "Mul", "RealDiv", "FloorDiv", "FloorMod", "Pow", "Maximum", "Minimum",
              "SquaredDifference")
COMPARE_OPS = ("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual")
FLOAT_UNARY_OPS = ("Exp", "Log", "Log1p", "Sqrt", "Rsqrt", "Reciprocal", "Sin", "Cos")
UNARY_OPS = ("Neg", "Square", "Abs", "Sign")

for _n in BINARY_OPS:
    register_op(_n, _binary_spec)
for _n in COMPARE_OPS:
    register_op(_n, _compare_spec)


def _float_or_complex_unary_spec(op: _g.Operation) -> list:
    # the core elementwise functions also take complex inputs, as TF's (graph/ops/complex_ops.py)
    x = op.inputs[0]
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise ValueError(f"{op.type} needs a floating-point or complex input, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


for _n in FLOAT_UNARY_OPS:
    register_op(_n, _float_or_complex_unary_spec)
for _n in UNARY_OPS:
    register_op(_n, same_shape_fn)


def _logical_spec(op: _g.Operation) -> list:
    for t in op.inputs:
        if t.dtype != _dt.bool_:
            raise ValueError(f"{op.type} needs bool inputs, got {t.dtype.name}")
    shp = op.inputs[0].shape
    for t in op.inputs[1:]:
        shp = broadcast_static(shp, t.shape)
    return [(_dt.bool_, shp)]


register_op("LogicalAnd", _logical_spec)
register_op("LogicalOr", _logical_spec)
register_op("LogicalNot", _logical_spec)


def _add_n_spec(op: _g.Operation) -> list:
    x0 = op.inputs[0]
    shp = x0.shape
    for t in op.inputs[1:]:
        if t.dtype != x0.dtype:
            raise ValueError(f"add_n inputs have different dtypes: {x0.dtype.name} and {t.dtype.name}")
        shp = shp.merge_with(t.shape)
    return [(x0.dtype, shp)]


register_op("AddN", _add_n_spec)


def _matmul_spec(op: _g.Operation) -> list:
    a, b = op.inputs
    if a.dtype != b.dtype:
        raise ValueError(f"matmul inputs have different dtypes: {a.dtype.name} and {b.dtype.name}")
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    if a.shape.rank is None or b.shape.rank is None:
        return [(a.dtype, TensorShape(None))]
    if a.shape.rank < 2 or b.shape.rank < 2:
        raise ValueError(f"matmul needs inputs of rank >= 2, got shapes {a.shape} and {b.shape}")
    ad, bd = list(a.shape.dims), list(b.shape.dims)
    m, ka = (ad[-1], ad[-2]) if ta else (ad[-2], ad[-1])
    kb, n = (bd[-1], bd[-2]) if tb else (bd[-2], bd[-1])
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(f"matmul inner dimensions differ: {a.shape}{' (transposed)' if ta else ''} "
                         f"x {b.shape}{' (transposed)' if tb else ''}")
    batch = broadcast_static(TensorShape(ad[:-2]), TensorShape(bd[:-2]))
    return [(a.dtype, TensorShape(list(batch.dims) + [m, n]))]  # type: ignore[arg-type]


register_op("MatMul", _matmul_spec)


def _reduce_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    rank = x.shape.rank
    axes = axis_list(op.attrs["axis"], rank)
    keep = op.attrs["keepdims"]
    dt = x.dtype
    if op.type in ("ArgMax", "ArgMin"):
        dt = op.attrs["output_type"]
    if rank is None:
        # reducing every axis of a tensor of unknown rank still gives a scalar (TF says so too)
        full = op.attrs["axis"] is None and not keep and op.type not in ("ArgMax", "ArgMin")
        return [(dt, TensorShape(() if full else None))]
    if axes is None:
        axes = tuple(range(rank))
    dims = list(x.shape.dims)
    out = [1 if i in axes else d for i, d in enumerate(dims)] if keep else [d for i, d in enumerate(dims) if i not in axes]
    return [(dt, TensorShape(out))]


for _n in ("Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin"):
    register_op(_n, _reduce_spec)


def _cast_spec(op: _g.Operation) -> list:
    return [(op.attrs["DstT"], op.inputs[0].shape)]


register_op("Cast", _cast_spec)


def _sum_to_spec(op: _g.Operation) -> list:
    return [(op.inputs[0].dtype, op.inputs[1].shape)]


# gradient helper: reduce input 0 (a broadcast result) to the shape of input 1
register_op("SumToShapeOf", _sum_to_spec)


def _clip_spec(op: _g.Operation) -> list:
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


register_op("ClipByValue", _clip_spec)

not_differentiable(*COMPARE_OPS, "LogicalAnd", "LogicalOr", "LogicalNot", "ArgMax", "ArgMin",
                   "FloorDiv", "FloorMod")

# -- constructors ----------------------------------------------------------------------


def _as_value(t: Any) -> Any:
    # a variable's handle used as a value ("v:0" from get_tensor_by_name): its read, as TF1's
    # reference variables give
    if isinstance(t, _g.Tensor) and t.dtype == _dt.resource:
        from ..variables import snapshot_of_handle
        r = snapshot_of_handle(t)
        return t if r is None else r
    return t


def _operands(x: Any, y: Any) -> Tuple[Any, Any]:
    """Converts Python/NumPy operands to the dtype of the Tensor operand."""
    x, y = _as_value(x), _as_value(y)
    if isinstance(x, _g.Tensor) or hasattr(x, "handle"):
        x = _g.convert_to_tensor(x)
        if not isinstance(y, _g.Tensor) and not hasattr(y, "handle"):
            y = _g.convert_to_tensor(y, dtype=x.dtype, graph=x.graph)
        else:
            y = _g.convert_to_tensor(y)
    elif isinstance(y, _g.Tensor) or hasattr(y, "handle"):
        y = _g.convert_to_tensor(y)
        x = _g.convert_to_tensor(x, dtype=y.dtype, graph=y.graph)
    else:
        x, y = _g.convert_to_tensor(x), _g.convert_to_tensor(y)
    return x, y


def _binary(op_type: str, x: Any, y: Any, name: Optional[str]) -> _g.Tensor:
    """Converts Python/NumPy operands to the dtype of the Tensor operand, then builds the op."""
    x, y = _operands(x, y)
    check_kernel_dtype(op_type, x.dtype)
    return single(op_type, [x, y], name=name or op_type)


def add(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x + y with broadcasting."""
    return _binary("Add", x, y, name)


def subtract(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x - y with broadcasting."""
    return _binary("Sub", x, y, name)


def multiply(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x * y with broadcasting."""
    return _binary("Mul", x, y, name)


# TF1's true division of integers: the operands become floats first (Python 3's int / int)
_TRUEDIV_FLOAT = {_dt.int8: _dt.float32, _dt.uint8: _dt.float32, _dt.int16: _dt.float32,
                  _dt.uint16: _dt.float32, _dt.int32: _dt.float64, _dt.int64: _dt.float64,
                  _dt.uint32: _dt.float64, _dt.uint64: _dt.float64}


def divide(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """x / y (true division) with broadcasting; integers are cast to float32 (8 and 16 bits) or
    float64 (32 and 64 bits) first, as TF1's truediv: 7 / 2 is 3.5."""
    x, y = _operands(x, y)
    to = _TRUEDIV_FLOAT.get(x.dtype)
    if to is not None:
        if y.dtype != x.dtype:
            raise TypeError(f"x and y must have the same dtype, got {x.dtype.name} != {y.dtype.name}")
        x, y = cast(x, to), cast(y, to)
    check_kernel_dtype("RealDiv", x.dtype)
    return single("RealDiv", [x, y], name=name or "truediv")


truediv = divide


def floordiv(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return _binary("FloorDiv", x, y, name)


def mod(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return _binary("FloorMod", x, y, name)


def pow(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A001 - TF name
    """x ** y elementwise."""
    return _binary("Pow", x, y, name)


def maximum(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return _binary("Maximum", x, y, name)


def minimum(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return _binary("Minimum", x, y, name)


def squared_difference(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    """(x - y)**2 elementwise."""
    return _binary("SquaredDifference", x, y, name)


def equal(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return _binary("Equal", x, y, name)


def not_equal(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return _binary("NotEqual", x, y, name)


def less(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return _binary("Less", x, y, name)


def less_equal(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return _binary("LessEqual", x, y, name)


def greater(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return _binary("Greater", x, y, name)


def greater_equal(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return _binary("GreaterEqual", x, y, name)


def logical_and(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("LogicalAnd", list(_operands(x, y)), name=name or "LogicalAnd")


def logical_or(x: Any, y: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("LogicalOr", list(_operands(x, y)), name=name or "LogicalOr")


def logical_not(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return single("LogicalNot", [x], name=name or "LogicalNot")


def _unary(op_type: str, x: Any, name: Optional[str]) -> _g.Tensor:
    return single(op_type, [x], name=name or op_type)


def negative(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return _unary("Neg", x, name)


def exp(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return _unary("Exp", x, name)


def log(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return _unary("Log", x, name)


def log1p(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return _unary("Log1p", x, name)


def sqrt(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return _unary("Sqrt", x, name)


def rsqrt(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """1 / sqrt(x)."""
    return _unary("Rsqrt", x, name)


def reciprocal(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return _unary("Reciprocal", x, name)


def sin(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return _unary("Sin", x, name)


def cos(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return _unary("Cos", x, name)


def square(x: Any, name: Optional[str] = None) -> _g.Tensor:
    return _unary("Square", x, name)


def abs(x: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A001 - TF name
    """|x|; of a complex tensor a float tensor (TF's ComplexAbs)."""
    x = _g.convert_to_tensor(_as_value(x))
    if x.dtype.is_complex:
        from .complex_ops import complex_abs
        return complex_abs(x, name=name)
    return _unary("Abs", x, name)


def sign(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """sign(x); of a complex x, x / |x| and 0 at 0 (complex_more_ops.complex_sign, as TF)."""
    x = _g.convert_to_tensor(_as_value(x))
    if x.dtype.is_complex:
        from .complex_more_ops import complex_sign
        return complex_sign(x, name=name)
    return _unary("Sign", x, name)


def add_n(inputs: Sequence[Any], name: Optional[str] = None) -> _g.Tensor:
    """Sum of a list of tensors of the same shape and dtype."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n needs at least one input")
    if len(inputs) == 1:
        # TF1: one input is returned as is, or through an Identity carrying `name` when named
        # (tf.losses.get_total_loss of one loss is still "total_loss:0")
        x = _g.convert_to_tensor(inputs[0])
        return single("Identity", [x], name=name) if name else x
    # each converted on its own, as TF's add_n: [t_int64, [1, 2]] is a TypeError (int32 beside int64)
    inputs = [x if _g.is_tensor(x) else _g.convert_to_tensor(x) for x in inputs]
    from .dtype_rules import check_same_dtypes
    check_same_dtypes(inputs, "'inputs' of 'AddN'")
    return single("AddN", inputs, name=name or "AddN")


def scalar_mul(scalar: Any, x: Any, name: Optional[str] = None) -> Any:
    """scalar * x for a scalar (a Python number or a 0-d tensor); IndexedSlices stay sparse."""
    from ..indexed_slices import IndexedSlices
    if isinstance(x, IndexedSlices):
        return IndexedSlices(scalar_mul(scalar, x.values, name), x.indices, x.dense_shape)
    x = _g.convert_to_tensor(x)
    s = scalar if isinstance(scalar, _g.Tensor) else _g.convert_to_tensor(scalar, dtype=x.dtype, graph=x.graph)
    if s.shape.rank not in (None, 0):
        raise InvalidArgumentError(f"scalar_mul: the scalar must be 0-d, got shape {s.shape}")
    return multiply(s, x, name=name or "scalar_mul")


def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
           name: Optional[str] = None, adjoint_a: bool = False, adjoint_b: bool = False) -> _g.Tensor:
    """Matrix product of the last two dims (batched over leading dims, broadcasting);
    adjoint_x: the conjugate transpose (the transpose for a real tensor), as TF."""
    if adjoint_a or adjoint_b:
        if (adjoint_a and transpose_a) or (adjoint_b and transpose_b):
            raise ValueError("Only one of transpose_a and adjoint_a can be True.")
        from .complex_ops import conj_if_complex
        if adjoint_a:
            a, transpose_a = conj_if_complex(_g.convert_to_tensor(_as_value(a))), True
        if adjoint_b:
            b, transpose_b = conj_if_complex(_g.convert_to_tensor(_as_value(b))), True
    return single("MatMul", [a, b], {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)},
                  name=name or "MatMul")


def _reduce(op_type: str, x: Any, axis: Any, keepdims: Any, name: Optional[str],
            reduction_indices: Any = None, keep_dims: Any = None) -> _g.Tensor:
    axis = _deprecated_alias(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = _deprecated_alias(keepdims, keep_dims, "keepdims", "keep_dims")
    if type(x).__name__ == "RaggedTensor":  # reduce the ragged rows with the segment ops
        from .ragged_math import ragged_reduce
        return ragged_reduce(op_type, x, axis, bool(keepdims), name)
    from .array_util import _run_time
    if _run_time(axis):  # axes only known when the step runs (TF's non-constant reduction_indices)
        from .dynamic_reduce_ops import reduce_dynamic
        return reduce_dynamic(op_type, x, axis, bool(keepdims), name)
    axis = static_axis(axis, op_type)
    if axis is not None and not isinstance(axis, int):
        axis = tuple(int(a) for a in (axis if isinstance(axis, (list, tuple)) else np.ravel(axis)))
    return single(op_type, [x], {"axis": axis, "keepdims": bool(keepdims)}, name=name or op_type)


def _deprecated_alias(new: Any, old: Any, new_name: str, old_name: str) -> Any:
    """TensorFlow 1.x's older keyword (reduction_indices, keep_dims, dimension) for `new`."""
    if old is None:
        return new
    if new is not None:
        raise ValueError(f"cannot specify both '{new_name}' and '{old_name}'")
    return old


# TensorFlow 1.x's signatures: reduce_sum(input_tensor, axis=None, keepdims=None, name=None,
# reduction_indices=None, keep_dims=None); the last two are its older spellings
@tf_keywords(input_tensor="x")
def reduce_sum(x: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> _g.Tensor:
    """Sum over `axis` (all axes when None)."""
    return _reduce("Sum", x, axis, keepdims, name, reduction_indices, keep_dims)


@tf_keywords(input_tensor="x")
def reduce_mean(x: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
                reduction_indices: Any = None, keep_dims: Any = None) -> _g.Tensor:
    """Mean over `axis` (all axes when None)."""
    return _reduce("Mean", x, axis, keepdims, name, reduction_indices, keep_dims)


@tf_keywords(input_tensor="x")
def reduce_max(x: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> _g.Tensor:
    """Maximum over `axis` (all axes when None)."""
    return _reduce("Max", x, axis, keepdims, name, reduction_indices, keep_dims)


@tf_keywords(input_tensor="x")
def reduce_min(x: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> _g.Tensor:
    """Minimum over `axis` (all axes when None)."""
    return _reduce("Min", x, axis, keepdims, name, reduction_indices, keep_dims)


@tf_keywords(input_tensor="x")
def reduce_prod(x: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
                reduction_indices: Any = None, keep_dims: Any = None) -> _g.Tensor:
    """Product over `axis` (all axes when None)."""
    return _reduce("Prod", x, axis, keepdims, name, reduction_indices, keep_dims)


@tf_keywords(input_tensor="x")
def reduce_all(x: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> _g.Tensor:
    """Logical and over `axis` of a bool tensor."""
    x = _g.convert_to_tensor(x)
    if x.dtype != _dt.bool_:
        raise InvalidArgumentError(f"reduce_all needs a bool tensor, got {x.dtype.name}")
    m = _reduce("Min", cast(x, _dt.int32), axis, keepdims, None, reduction_indices, keep_dims)
    return cast(m, _dt.bool_, name=name or "All")


@tf_keywords(input_tensor="x")
def reduce_any(x: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> _g.Tensor:
    """Logical or over `axis` of a bool tensor."""
    x = _g.convert_to_tensor(x)
    if x.dtype != _dt.bool_:
        raise InvalidArgumentError(f"reduce_any needs a bool tensor, got {x.dtype.name}")
    m = _reduce("Max", cast(x, _dt.int32), axis, keepdims, None, reduction_indices, keep_dims)
    return greater(m, 0, name=name or "Any")  # (not a cast: Max over nothing is int32's lowest; Any is False)


@tf_keywords(input_tensor="x")
def reduce_logsumexp(x: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
                     reduction_indices: Any = None, keep_dims: Any = None) -> _g.Tensor:
    """log(sum(exp(x))) over `axis`, computed stably (the maximum taken out first)."""
    axis = _deprecated_alias(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = bool(_deprecated_alias(keepdims, keep_dims, "keepdims", "keep_dims"))
    x = _g.convert_to_tensor(x)
    from .constant_op import stop_gradient
    raw = reduce_max(x, axis, keepdims=True)
    # an infinite max is taken out as 0, as TF1 does: all -inf gives -inf, any +inf gives +inf
    m = stop_gradient(single("Select", [single("IsFinite", [raw]), raw, single("ZerosLike", [raw])]))
    r = log(reduce_sum(exp(x - m), axis, keepdims=True)) + m
    if not keepdims:
        r = reduce_sum(r, axis)  # drops the reduced (size-1) axes
    return _g.convert_to_tensor(r) if name is None else single("Identity", [r], name=name)


@tf_keywords(input="x")
def argmax(x: Any, axis: Any = None, name: Optional[str] = None, dimension: Any = None,
           output_type: Any = _dt.int64) -> _g.Tensor:
    """Index of the largest entry along `axis` (TensorFlow 1.x: default 0; `dimension` its old name)."""
    axis = static_axis(_deprecated_alias(axis, dimension, "axis", "dimension"), "argmax")
    return single("ArgMax", [x], {"axis": int(axis or 0), "keepdims": False,
                                 "output_type": _dt.as_dtype(output_type)}, name=name or "ArgMax")


@tf_keywords(input="x")
def argmin(x: Any, axis: Any = None, name: Optional[str] = None, dimension: Any = None,
           output_type: Any = _dt.int64) -> _g.Tensor:
    """Index of the smallest entry along `axis` (TensorFlow 1.x: default 0; `dimension` its old name)."""
    axis = static_axis(_deprecated_alias(axis, dimension, "axis", "dimension"), "argmin")
    return single("ArgMin", [x], {"axis": int(axis or 0), "keepdims": False,
                                 "output_type": _dt.as_dtype(output_type)}, name=name or "ArgMin")


def cast(x: Any, dtype: Any, name: Optional[str] = None) -> _g.Tensor:
    """Converts to `dtype` (a no-op node is still added when dtypes match); a complex tensor
    cast to a real type gives its real part cast, as TF.  A SparseTensor or IndexedSlices
    keeps its form, its values cast (tf.cast(decoded[0], tf.int32) after ctc_greedy_decoder)."""
    dst = _dt.as_dtype(dtype)
    from ..indexed_slices import IndexedSlices
    from ..sparse_tensor import SparseTensor
    if isinstance(x, (SparseTensor, IndexedSlices)):
        values = cast(x.values, dst, name=name)
        if isinstance(x, SparseTensor):
            return SparseTensor(x.indices, values, x.dense_shape)
        return IndexedSlices(values, x.indices, x.dense_shape)
    src = getattr(x, "dtype", None)  # a Tensor's or Variable's (a NumPy array's is not a DType)
    if not dst.is_complex and isinstance(src, _dt.DType) and src.is_complex:
        from .complex_ops import real
        x = real(x)
    return single("Cast", [x], {"DstT": dst}, name=name or "Cast")


@tf_keywords(t="x")
def clip_by_value(x: Any, clip_value_min: Any, clip_value_max: Any, name: Optional[str] = None) -> _g.Tensor:
    x = _g.convert_to_tensor(x)
    lo = _g.convert_to_tensor(clip_value_min, dtype=x.dtype, graph=x.graph)
    hi = _g.convert_to_tensor(clip_value_max, dtype=x.dtype, graph=x.graph)
    return single("ClipByValue", [x, lo, hi], name=name or "clip_by_value")


def sum_to_shape_of(grad: Any, x: Any, name: Optional[str] = None) -> _g.Tensor:
    """Reduces a broadcast gradient back to the shape of `x` (identity when shapes match)."""
    grad = _g.convert_to_tensor(grad)
    x = _g.convert_to_tensor(x)
    if grad.shape.is_fully_defined() and grad.shape == x.shape:
        return grad
    return single("SumToShapeOf", [grad, x], name=name or "SumToShapeOf")


# -- Python operators on Tensor ---------------------------------------------------------
def _operator(fn: Callable, op_name: str) -> Callable:
    # TF1 names an operator's op by the operator ("add", "mul", "truediv", ...): programs fetch
    # get_tensor_by_name("add:0"); tf.add(x, y) itself is still "Add"
    return lambda x, y: fn(x, y, name=op_name)


_g._OPERATORS.update({
    "add": _operator(add, "add"), "subtract": _operator(subtract, "sub"),
    "multiply": _operator(multiply, "mul"), "divide": _operator(divide, "truediv"),
    "floordiv": _operator(floordiv, "floordiv"), "mod": _operator(mod, "mod"), "pow": _operator(pow, "pow"),
    "matmul": _operator(matmul, "matmul"), "negative": negative, "abs": abs, "less": less,
    "less_equal": less_equal, "greater": greater, "greater_equal": greater_equal,
    "logical_and": _operator(logical_and, "and"), "logical_or": _operator(logical_or, "or"),
    "logical_not": logical_not,
})
