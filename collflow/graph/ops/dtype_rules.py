"""TF1's rules for turning Python/NumPy values into tensors of a requested dtype, and for
giving the Python values of a list their dtype from the tensors beside them.

TensorFlow's conversion (`make_tensor_proto`) checks each Python leaf against the requested
dtype's kind and refuses an incompatible one with TypeError ("Expected int64, but got 2.0 of
type 'float'"): a float never becomes an integer, an int never a bool, a number never a
string.  NumPy arrays and scalars are cast with `astype` without a check, and Python ints out
of an integer dtype's range wrap around (two's complement), as NumPy 1.x did for TF 1.15.
"""
from __future__ import annotations

import numbers
import warnings
from typing import Any, List, Optional, Sequence

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g

__all__ = ["check_python_leaves", "cast_numpy", "asarray_strict", "wrap_python_ints", "list_dtype", "convert_list"]


def _leaves(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _compatible(v: Any, dtype: _dt.DType) -> bool:
    """TF's _AssertCompatible for one leaf: is `v` of a kind that `dtype` may hold?  Only the
    Python/NumPy kinds TF refuses are refused; other objects (Dimension, arrays) go to NumPy."""
    text = isinstance(v, (str, bytes, np.str_, np.bytes_))
    num = isinstance(v, (numbers.Number, np.number, np.bool_))
    if dtype == _dt.string:
        return not num
    if text:
        return False
    if dtype.is_bool:
        return not num or isinstance(v, (bool, np.bool_))
    if dtype.is_integer:
        return not num or isinstance(v, (numbers.Integral, np.integer, np.bool_))
    if dtype.is_floating:
        return not num or not isinstance(v, (complex, np.complexfloating))
    return True


def check_python_leaves(value: Any, dtype: _dt.DType) -> None:
    """Raises TypeError, as TF, for a Python leaf of `value` that `dtype` may not hold."""
    for v in _leaves(value):
        if not _compatible(v, dtype):
            raise TypeError(f"Expected {dtype.name}, but got {v!r} of type '{type(v).__name__}'.")


def cast_numpy(value: Any, dtype: _dt.DType) -> np.ndarray:
    """A NumPy value cast to `dtype` as TF does (astype: truncation, wrap-around); numbers never
    become strings nor strings numbers (TypeError, as TF)."""
    kind = np.asarray(value).dtype.kind
    if (dtype == _dt.string) != (kind in "USO"):
        raise TypeError(f"Expected {dtype.name}, but got a NumPy value of dtype {np.asarray(value).dtype}.")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex -> real drops the imaginary part, as TF
        return np.asarray(value).astype(dtype.np)


def asarray_strict(value: Any, dtype: Any) -> np.ndarray:
    """np.asarray(value, dtype), raising OverflowError for a Python int out of the dtype's
    range on every NumPy: NumPy >= 2 raises it, 1.x only warns (DeprecationWarning) and wraps."""
    with np.errstate(all="ignore"), warnings.catch_warnings():  # 1e300 -> float32 is inf, as TF
        warnings.simplefilter("error", DeprecationWarning)
        try:
            return np.asarray(value, dtype=dtype)
        except DeprecationWarning:
            raise OverflowError(f"Python int out of the range of {np.dtype(dtype)}") from None


def wrap_python_ints(value: Any, dtype: _dt.DType) -> np.ndarray:
    """Python values as `dtype`; integers out of an integer dtype's range wrap around."""
    try:
        return asarray_strict(value, dtype.np)
    except OverflowError:
        pass
    bits = np.dtype(dtype.np).itemsize * 8

    def wrap(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return [wrap(x) for x in v]
        if isinstance(v, int) and not isinstance(v, bool):
            v &= (1 << bits) - 1
            if not dtype.is_unsigned and v >= 1 << (bits - 1):
                v -= 1 << bits
        return v

    return np.asarray(wrap(value), dtype=dtype.np)


def list_dtype(values: Sequence[Any]) -> Optional[_dt.DType]:
    """The dtype of the first Tensor (or Variable) of `values`, which the Python and NumPy
    values beside it take (TF's rule for an op's list input of one dtype: stack, concat)."""
    for v in values:
        if isinstance(v, _g.Tensor):
            return v.dtype if v.dtype != _dt.resource else None
        if hasattr(v, "handle") and hasattr(v, "dtype"):
            return _dt.as_dtype(v.dtype).base_dtype
    return None


def convert_list(values: Sequence[Any], op: str = "values") -> List[Any]:
    """`values` with each non-tensor converted to the dtype of the first tensor among them (on
    its own where there is none); TypeError, as TF, where the tensors' dtypes then differ."""
    dt = list_dtype(values)
    out = [v if _g.is_tensor(v) or isinstance(v, _g.Operation) else _g.convert_to_tensor(v, dtype=dt)
           for v in values]
    check_same_dtypes(out, op)
    return out


def check_same_dtypes(values: Sequence[Any], op: str) -> None:
    """TypeError naming the dtypes where the Tensors of a list input have different dtypes."""
    dts = [v.dtype for v in values if isinstance(v, _g.Tensor)]
    if len(set(dts)) > 1:
        raise TypeError(f"Tensors in list passed to {op} have types [{', '.join(d.name for d in dts)}] "
                        "that don't all match.")


# dtypes TF registers no kernel for, refused when the graph is built (TypeError, as TF's op
# definitions); collflow keeps accepting bool Add/Mul/Maximum/Minimum/RealDiv (docs/tf1_compat.md)
_ORDERED = ("Less", "LessEqual", "Greater", "GreaterEqual", "Maximum", "Minimum", "FloorMod", "FloorDiv")
_REFUSED = {
    **{op: ("complex", "string") for op in _ORDERED},
    "Pow": ("bool", "unsigned", "string"), "Sub": ("bool", "string"), "Mul": ("string",),
    "RealDiv": ("string",), "SquaredDifference": ("bool", "string"),
}
for _op in ("Less", "LessEqual", "Greater", "GreaterEqual", "FloorMod", "FloorDiv"):
    _REFUSED[_op] += ("bool",)


def check_kernel_dtype(op_type: str, dtype: _dt.DType) -> None:
    """TypeError naming the op and dtype where TF's `op_type` has no kernel for `dtype`."""
    kinds = _REFUSED.get(op_type, ())
    bad = (("complex" in kinds and dtype.is_complex) or ("string" in kinds and dtype == _dt.string)
           or ("bool" in kinds and dtype == _dt.bool_)
           or ("unsigned" in kinds and dtype.is_integer and dtype.is_unsigned))
    if bad:
        raise TypeError(f"Value passed to parameter 'x' of op '{op_type}' has DataType {dtype.name}, "
                        "which TensorFlow's kernels do not accept")
