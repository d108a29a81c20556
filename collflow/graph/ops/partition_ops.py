"""tf.unique, tf.dynamic_partition and tf.dynamic_stitch: ops whose output sizes depend on the
data.  Kernels in kernels/partition_kernels.py; gradients here (partition and stitch are each
other's adjoint, as in TF1)."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from .misc_ops import range as _range
from .op_util import make_op

__all__ = ["unique", "unique_with_counts", "dynamic_partition", "dynamic_stitch"]


def _unique_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.shape.rank not in (None, 1):
        raise ValueError(f"unique: x must be a vector, got shape {x.shape}")
    idx_t = op.attrs["out_idx"]
    out = [(x.dtype, TensorShape([None])), (idx_t, x.shape if x.shape.rank == 1 else TensorShape([None]))]
    if op.attrs["counts"]:
        out.append((idx_t, TensorShape([None])))
    return out


register_op("Unique", _unique_spec, host_only=True)  # TF1 has no GPU kernel; NaNs stay apart
not_differentiable("Unique")


def unique(x: Any, out_idx: Any = _dt.int32, name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(y, idx): the distinct values of the vector x in order of first appearance, and for each
    entry of x its position in y (x == gather(y, idx))."""
    op = make_op("Unique", [_g.convert_to_tensor(x)], {"out_idx": _dt.as_dtype(out_idx), "counts": False},
                 name=name or "Unique")
    return op.outputs[0], op.outputs[1]


def unique_with_counts(x: Any, out_idx: Any = _dt.int32,
                       name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """(y, idx, count): unique's results and how many times each value of y occurs in x."""
    op = make_op("Unique", [_g.convert_to_tensor(x)], {"out_idx": _dt.as_dtype(out_idx), "counts": True},
                 name=name or "UniqueWithCounts")
    return op.outputs[0], op.outputs[1], op.outputs[2]


def _partition_spec(op: _g.Operation) -> list:
    data, parts = op.inputs
    if parts.dtype != _dt.int32:
        raise ValueError(f"dynamic_partition: partitions must be int32, got {parts.dtype.name}")
    n = op.attrs["num_partitions"]
    if data.shape.rank is None or parts.shape.rank is None:
        return [(data.dtype, TensorShape(None))] * n
    if not parts.shape.is_compatible_with(data.shape[:parts.shape.rank]):
        raise ValueError(f"dynamic_partition: partitions of shape {parts.shape} must be a prefix of data's "
                         f"shape {data.shape}")
    inner = list(data.shape.dims[parts.shape.rank:])
    return [(data.dtype, TensorShape([None] + inner))] * n


register_op("DynamicPartition", _partition_spec)


def dynamic_partition(data: Any, partitions: Any, num_partitions: int,
                      name: Optional[str] = None) -> List[_g.Tensor]:
    """Splits data into num_partitions tensors: output i holds the slices data[j] (j over the
    leading dimensions partitions covers) with partitions[j] == i, in order."""
    n = int(num_partitions)
    if n < 1:
        raise InvalidArgumentError(f"dynamic_partition: num_partitions must be >= 1, got {num_partitions}")
    # a Python/NumPy partitions becomes the op's int32 (as TF converts it), a tensor stays itself
    parts = partitions if isinstance(partitions, _g.Tensor) else _g.convert_to_tensor(partitions, dtype=_dt.int32)
    return list(make_op("DynamicPartition", [_g.convert_to_tensor(data), parts],
                        {"num_partitions": n}, name=name or "DynamicPartition").outputs)


def _stitch_spec(op: _g.Operation) -> list:
    n = op.attrs["n"]
    idx, data = op.inputs[:n], op.inputs[n:]
    if any(not i.dtype.is_integer for i in idx):
        raise ValueError("dynamic_stitch: indices must be integers")
    dts = {d.dtype for d in data}
    if len(dts) != 1:
        raise ValueError(f"dynamic_stitch: data must share one dtype, got {sorted(d.name for d in dts)}")
    inner = None
    for i, d in zip(idx, data):
        if i.shape.rank is not None and d.shape.rank is not None:
            inner = d.shape.dims[i.shape.rank:]
            break
    # TF's shape function: when every index tensor is a value the graph determines, the
    # first dimension is the largest index + 1
    from .shape_eval import static_value
    consts = [static_value(i) for i in idx]
    rows = None
    if all(c is not None for c in consts):
        rows = max([int(c.max()) + 1 for c in consts if c.size] + [0])
    return [(data[0].dtype, TensorShape(None if inner is None else [rows] + list(inner)))]


register_op("DynamicStitch", _stitch_spec)


def dynamic_stitch(indices: Sequence[Any], data: Sequence[Any], name: Optional[str] = None) -> _g.Tensor:
    """Merges data into one tensor: merged[indices[m][i]] = data[m][i] (a later m wins a
    duplicate index); merged has max(index) + 1 rows."""
    indices, data = list(indices), list(data)
    if len(indices) != len(data) or not indices:
        raise InvalidArgumentError(f"dynamic_stitch: {len(indices)} index tensors for {len(data)} data tensors")
    ins = [_g.convert_to_tensor(i) for i in indices]
    dt = next((d.dtype for d in data if isinstance(d, _g.Tensor)), None)
    ds = [_g.convert_to_tensor(d, dtype=dt) if not isinstance(d, _g.Tensor) else d for d in data]
    return make_op("DynamicStitch", ins + ds, {"n": len(ins)}, name=name or "DynamicStitch").outputs[0]


@register_gradient("DynamicPartition")
def _partition_grad(op: _g.Operation, *grads: Any) -> list:
    # each output's gradient goes back to the rows it came from: partition the row positions
    # the same way and stitch the gradients there (TF1's gradient)
    data, parts = op.inputs
    n = op.attrs["num_partitions"]
    positions = _a.reshape(_range(0, _a.size(parts)), _a.shape(parts))
    where = dynamic_partition(positions, parts, n)
    gs = [g if g is not None else _a.zeros_like(o) for g, o in zip(grads, op.outputs)]
    return [_a.reshape(dynamic_stitch(where, gs), _a.shape(data)), None]


@register_gradient("DynamicStitch")
def _stitch_grad(op: _g.Operation, g: Any) -> list:
    # as TF1: every data tensor gets the merged gradient gathered at its indices (a slice that
    # a later one overwrote included), none for the indices
    n = op.attrs["n"]
    g = _g.convert_to_tensor(g)
    return [None] * n + [_a.gather(g, i) for i in op.inputs[:n]]
