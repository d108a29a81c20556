"""More of TF1's namespaces: `tf.test`, `tf.sets`, `tf.dtypes`, `tf.initializers` (with
TF1's variable initializers), and the `tf.debugging` extras (`assert_shapes`,
`assert_same_float_dtype`, `assert_proper_iterable`, ...) with the few top-level helpers that
go with them (`tf.get_logger`, `tf.convert_to_tensor_or_*`, `tf.add_check_numerics_ops`)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

import collflow as _cf
from collflow import dtypes as _dt
from collflow.compat import tf_test as _tf_test
from collflow.compat.namespaces import _Namespace, debugging as _debugging
from collflow.graph import graph as _g
from collflow.graph import initializers as _inits
from collflow.graph.indexed_slices import IndexedSlices
from collflow.graph.ops import sets_ops as _sets
from collflow.graph.sparse_tensor import SparseTensor, SparseTensorValue
from collflow.platform.tf_logging import get_logger  # noqa: F401  (tf.get_logger)

__all__ = ["test", "sets", "dtypes", "initializers", "get_logger", "convert_to_tensor_or_indexed_slices",
           "convert_to_tensor_or_sparse_tensor", "add_check_numerics_ops", "assert_same_float_dtype",
           "assert_proper_iterable", "assert_shapes"]

test = _Namespace("test", "tf.test: TestCase, main, the GPU queries, the gradient checker, Benchmark, mock.", {
    n: getattr(_tf_test, n) for n in _tf_test.__all__})

sets = _Namespace("sets", "tf.sets: set ops over the last dimension (SparseTensor results).", {
    "set_intersection": _sets.set_intersection, "set_union": _sets.set_union,
    "set_difference": _sets.set_difference, "set_size": _sets.set_size,
    "intersection": _sets.set_intersection, "union": _sets.set_union, "difference": _sets.set_difference,
    "size": _sets.set_size})

# tf.dtypes: the DTypes collflow has (no quantized or bfloat16 ones), and the casts
dtypes = _Namespace("dtypes", "tf.dtypes: DType, as_dtype, the dtypes collflow has, cast and friends.", {
    **{n: getattr(_dt, n) for n in _dt.__all__ if n != "bool_"}, "bool": _dt.bool_,
    "cast": _cf.cast, "complex": _cf.complex, "saturate_cast": _cf.saturate_cast, "as_string": _cf.as_string})


def _variables_initializer(var_list: Sequence[Any], name: str = "init") -> Any:
    return _cf.variables_initializer(var_list, name=name)


initializers = _Namespace("initializers", "tf.initializers: the initializer classes and TF1's variable "
                          "initializers (global_variables, local_variables, tables_initializer, variables).", {
    **{n: getattr(_inits, n) for n in _inits.__all__},
    "global_variables": _cf.global_variables_initializer, "local_variables": _cf.local_variables_initializer,
    "tables_initializer": _cf.tables_initializer, "variables": _variables_initializer,
    "uniform_unit_scaling": _inits.uniform_unit_scaling_initializer})


# --- top level ----------------------------------------------------------------------------------
def convert_to_tensor_or_indexed_slices(value: Any, dtype: Any = None, name: Optional[str] = None) -> Any:
    """An IndexedSlices as it is (its dtype checked), anything else through convert_to_tensor."""
    if isinstance(value, IndexedSlices):
        if dtype is not None and _dt.as_dtype(dtype) != value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {_dt.as_dtype(dtype).name} for Tensor with dtype "
                             f"{value.dtype.name}: {value!r}")
        return value
    return _g.convert_to_tensor(value, dtype=dtype, name=name)


def convert_to_tensor_or_sparse_tensor(value: Any, dtype: Any = None, name: Optional[str] = None) -> Any:
    """A SparseTensor(Value) as a SparseTensor (its dtype checked), anything else through
    convert_to_tensor."""
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and _dt.as_dtype(dtype) != value.dtype:
            raise ValueError(f"Sparse dtype: requested = {_dt.as_dtype(dtype).name}, actual = {value.dtype.name}")
        return value
    return _g.convert_to_tensor(value, dtype=dtype, name=name)


def add_check_numerics_ops() -> _g.Operation:
    """A check_numerics of every floating-point output in the default graph, chained one after
    the other by control dependencies, grouped into one op (TF1's); ValueError for a graph
    with cond/while ops in it, as TF."""
    g = _g.get_default_graph()
    checks: List[Any] = []
    floats = (_dt.float16, _dt.float32, _dt.float64)
    for op in list(g.get_operations()):
        for out in op.outputs:
            if out.dtype not in floats:
                continue
            if getattr(op, "_ctx", None) is not None:
                raise ValueError("`tf.add_check_numerics_ops() is not compatible with TensorFlow control flow "
                                 "operations such as `tf.cond()` or `tf.while_loop()`.")
            with g.control_dependencies(checks):
                checks = [_cf.check_numerics(out, message=f"{op.name}:{out.value_index}")]
    return _cf.group(*checks)


# --- tf.debugging extras ------------------------------------------------------------------------
def assert_same_float_dtype(tensors: Optional[Sequence[Any]] = None, dtype: Any = None) -> _dt.DType:
    """The one floating dtype of `tensors` (and `dtype`, if given); float32 when there is none.
    ValueError for mixed or non-floating dtypes."""
    if tensors:
        expected = _dt.as_dtype(dtype) if dtype else None
        first = None
        for t in tensors:
            if t is None:
                continue
            if expected is None:
                expected, first = t.dtype, t
            elif t.dtype != expected:
                names = ", ".join(f"{getattr(x, 'name', x)}, type={x.dtype.name}" for x in tensors if x is not None)
                raise ValueError(f"{names} must be of the same type ({expected.name}) "
                                 f"{'as ' + str(getattr(first, 'name', '')) if first is not None else ''}".rstrip()
                                 + ".")
        dtype = expected
    if not dtype:
        return _dt.float32
    dtype = _dt.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype.name}.")
    return dtype


def assert_proper_iterable(values: Any) -> None:
    """TypeError unless `values` is an iterable of items: not a tensor, array or string."""
    unintentional = (_g.Tensor, SparseTensor, np.ndarray, bytes, str)
    if isinstance(values, unintentional):
        raise TypeError(f"Expected argument 'values' to be a \"proper\" iterable.  Found: {type(values)}")
    if not hasattr(values, "__iter__"):
        raise TypeError(f"Expected argument 'values' to be iterable.  Found: {type(values)}")


_log_device_placement = {"on": False}


def set_log_device_placement(enabled: bool) -> None:
    """Recorded (collflow places every op on its rank's one device)."""
    _log_device_placement["on"] = bool(enabled)


def get_log_device_placement() -> bool:
    return _log_device_placement["on"]


def _is_any_size(sym: Any) -> bool:
    return sym is None or (isinstance(sym, str) and sym == ".")


def _explicit(sym: Any) -> Optional[int]:
    if sym is None or isinstance(sym, bool):
        return None
    try:
        return int(sym)
    except (TypeError, ValueError):
        return None


def _sizes(x: Any) -> List[Any]:
    """x's dimension sizes: ints where static, scalar tensors where not; a scalar counts as [1]."""
    if isinstance(x, SparseTensor):
        static = x.shape
        dyn = x.dense_shape
    else:
        static = x.shape
        dyn = None
    if static.rank == 0:
        return [1]
    known = static.as_list()
    if dyn is None:
        dyn = _cf.shape(x, out_type=_dt.int64) if any(d is None for d in known) else None
    return [d if d is not None else dyn[i] for i, d in enumerate(known)]


def assert_shapes(shapes: Any, data: Any = None, summarize: Optional[int] = None, message: Optional[str] = None,
                  name: Optional[str] = None) -> Any:
    """TF 1.15's tf.assert_shapes: each (tensor, shape) pair's rank and sizes, a shape's entries
    being ints (exact), None or '.' (any), or symbols whose sizes must agree across all the
    pairs; a leading `...` or '*' leaves outer dimensions free.  Violations seen when the graph
    is built raise ValueError; the rest become assert ops (InvalidArgumentError when run).
    A tensor of unknown rank is supported only for rank checks."""
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    prefix = f"{message}.  " if message else ""
    with _g.name_scope(name, "assert_shapes"):
        specs: List[Tuple[Any, bool, Tuple[Any, ...]]] = []
        for x, spec in pairs:
            if spec is None:
                continue
            x = x if isinstance(x, SparseTensor) else _g.convert_to_tensor(x)
            if not hasattr(spec, "__iter__") and not hasattr(spec, "__getitem__"):
                raise ValueError(f"{prefix}Tensor {x.name}.  Specified shape must be an iterable.  An iterable has "
                                 f"the attribute `__iter__` or `__getitem__`.  Received specified shape: {spec}")
            spec_t = tuple(spec.as_list()) if hasattr(spec, "as_list") else tuple(spec)
            inner = False
            for i, sym in enumerate(spec_t):
                if sym is Ellipsis or (isinstance(sym, str) and sym == "*"):
                    if i != 0:
                        raise ValueError(f"{prefix}Tensor {x.name} specified shape index {i}.  Symbol `...` or `*` "
                                         "for a variable number of unspecified dimensions is only allowed as the "
                                         "first entry")
                    inner = True
            syms = spec_t[1:] if inner else spec_t
            specs.append((x, inner, syms or (1,)))
        checks: List[Any] = []
        for x, inner, syms in specs:
            r = len(syms)
            if inner:
                if r > 1:
                    checks.append(_cf.assert_rank_at_least(x, r, data=data, summarize=summarize, message=message))
            elif r <= 1:
                checks.append(_cf.assert_rank_in(x, [0, 1], data=data, summarize=summarize, message=message))
            else:
                checks.append(_cf.assert_rank(x, r, data=data, summarize=summarize, message=message))
        checks = [c for c in checks if c is not None]
        seen: Dict[Any, Tuple[Any, Any, int]] = {}
        size_checks: List[Any] = []
        for x, inner, syms in specs:
            if x.shape.rank is None and not isinstance(x, SparseTensor):
                continue  # rank checked above; sizes of an unknown-rank tensor are not
            sizes = _sizes(x)
            for i, sym in enumerate(syms):
                if _is_any_size(sym):
                    continue
                dim = i - len(syms) if inner else i
                actual = sizes[dim]
                if _explicit(sym) is not None:
                    want, how = _explicit(sym), "Specified explicitly"
                elif sym in seen:
                    want, by, at = seen[sym]
                    how = f"Specified by tensor {by.name} dimension {at}"
                else:
                    seen[sym] = (actual, x, dim)
                    continue
                if isinstance(actual, int) and isinstance(want, int):
                    if actual != want:
                        raise ValueError(f"{prefix}Tensor {x.name} dimension {dim} must have size {want}.  Received "
                                         f"size {actual}, shape {x.shape}")
                    continue
                with _g.control_dependencies(checks):
                    size_checks.append(_cf.assert_equal(
                        _cf.cast(actual, _dt.int64), _cf.cast(want, _dt.int64), data=data, summarize=summarize,
                        message=f"{prefix}{how}. Tensor {x.name} dimension {dim} must have size"))
        live = [c for c in checks + size_checks if isinstance(c, (_g.Operation, _g.Tensor))]
        return _cf.group(*live) if live else _cf.no_op()


_debugging.__dict__.update({
    "is_numeric_tensor": _cf.is_numeric_tensor, "is_non_decreasing": _cf.is_non_decreasing,
    "is_strictly_increasing": _cf.is_strictly_increasing, "assert_same_float_dtype": assert_same_float_dtype,
    "assert_proper_iterable": assert_proper_iterable, "assert_shapes": assert_shapes,
    "get_log_device_placement": get_log_device_placement, "set_log_device_placement": set_log_device_placement})
