"""TF1's `tf.sets`: set_intersection, set_union, set_difference and set_size over the last
dimension of dense tensors and SparseTensors (the groups are the leading indices).  The set
operations give a SparseTensor of each group's sorted result, TF's layout: indices
[..., j], dense_shape = the groups' shape + [largest result].  Host ops SetOperation and
SetSize (kernels/sets_kernels.py); not differentiable, as in TF.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from ..sparse_tensor import SparseTensor, SparseTensorValue
from .op_util import make_op

__all__ = ["set_intersection", "set_union", "set_difference", "set_size"]

# the element types TF's set kernels take
_SET_DTYPES = (_dt.int8, _dt.int16, _dt.int32, _dt.int64, _dt.uint8, _dt.uint16, _dt.string)


def _out_rank(op: _g.Operation) -> Optional[int]:
    return op.attrs.get("rank")


def _set_op_spec(op: _g.Operation) -> list:
    r = _out_rank(op)
    return [(_dt.int64, TensorShape([None, r])), (op.attrs["T"], TensorShape([None])), (_dt.int64, TensorShape([r]))]


def _set_size_spec(op: _g.Operation) -> list:
    r = _out_rank(op)
    return [(_dt.int32, TensorShape(None) if r is None else TensorShape([None] * (r - 1)))]


register_op("SetOperation", _set_op_spec, host_only=True)
register_op("SetSize", _set_size_spec, host_only=True)
not_differentiable("SetOperation")
not_differentiable("SetSize")


def _as_input(x: Any, name: str) -> Any:
    if isinstance(x, SparseTensorValue):
        return SparseTensor.from_value(x)
    if isinstance(x, SparseTensor):
        return x
    return _g.convert_to_tensor(x, name=name)


def _rank(x: Any) -> Optional[int]:
    if isinstance(x, SparseTensor):
        return x.dense_shape.shape.as_list()[0] if x.dense_shape.shape.rank == 1 else None
    return x.shape.rank


def _check_dtype(x: Any) -> _dt.DType:
    dt = x.dtype
    if dt not in _SET_DTYPES:
        raise TypeError(f"Invalid dtype {dt.name}: the set ops take int8, int16, int32, int64, uint8, uint16 or "
                        "string elements")
    return dt


def _set_operation(a: Any, b: Any, set_operation: str, validate_indices: bool, name: str) -> SparseTensor:
    a, b = _as_input(a, "a"), _as_input(b, "b")
    # TF has no sparse-dense kernel: a dense `a` with a sparse `b` is swapped (and a - b turned round)
    if not isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        a, b = b, a
        set_operation = {"a-b": "b-a", "b-a": "a-b"}.get(set_operation, set_operation)
    ta, tb = _check_dtype(a), _check_dtype(b)
    if ta != tb:
        raise TypeError(f"Types don't match, {ta.name} vs {tb.name}.")
    ra, rb = _rank(a), _rank(b)
    for r in (ra, rb):
        if r is not None and r < 2:
            raise ValueError(f"Invalid rank {r}: the set ops need inputs of rank 2 or more")
    if ra is not None and rb is not None and ra != rb:
        raise ValueError(f"Shapes of rank {ra} and {rb} are not compatible: the set ops need inputs of one rank")
    rank = ra if ra is not None else rb
    a_sparse, b_sparse = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if not a_sparse and not b_sparse and ra is not None and rb is not None:
        # the groups (all but the last dimension) must agree where the graph knows them, as TF checks
        for da, db in zip(a.shape.as_list()[:-1], b.shape.as_list()[:-1]):
            if da is not None and db is not None and da != db:
                raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible: the set ops need inputs whose "
                                 "shapes agree in all but the last dimension")
    ins = ([a.indices, a.values, a.dense_shape] if a_sparse else [a]) + \
        ([b.indices, b.values, b.dense_shape] if b_sparse else [b])
    attrs = {"set_operation": set_operation, "validate_indices": bool(validate_indices), "a_sparse": a_sparse,
             "b_sparse": b_sparse, "T": ta, "rank": rank}
    op = make_op("SetOperation", ins, attrs, name=name)
    return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


def set_intersection(a: Any, b: Any, validate_indices: bool = True, name: Optional[str] = None) -> SparseTensor:
    """The sorted intersection of a's and b's last-dimension sets, per group (a SparseTensor)."""
    return _set_operation(a, b, "intersection", validate_indices, name or "SetIntersection")


def set_union(a: Any, b: Any, validate_indices: bool = True, name: Optional[str] = None) -> SparseTensor:
    """The sorted union of a's and b's last-dimension sets, per group (a SparseTensor)."""
    return _set_operation(a, b, "union", validate_indices, name or "SetUnion")


def set_difference(a: Any, b: Any, aminusb: bool = True, validate_indices: bool = True,
                   name: Optional[str] = None) -> SparseTensor:
    """a - b (b - a when aminusb is False) of the last-dimension sets, per group, sorted."""
    return _set_operation(a, b, "a-b" if aminusb else "b-a", validate_indices, name or "SetDifference")


def set_size(a: Any, validate_indices: bool = True, name: Optional[str] = None) -> _g.Tensor:
    """The number of distinct values in each last-dimension group of SparseTensor `a` (int32,
    shape a.dense_shape[:-1])."""
    if isinstance(a, SparseTensorValue):
        a = SparseTensor.from_value(a)
    if not isinstance(a, SparseTensor):
        raise TypeError("Expected `SparseTensor`, got %r." % (a,))
    _check_dtype(a)
    op = make_op("SetSize", [a.indices, a.values, a.dense_shape],
                 {"validate_indices": bool(validate_indices), "T": a.dtype, "rank": _rank(a)},
                 name=name or "SetSize")
    return op.outputs[0]
