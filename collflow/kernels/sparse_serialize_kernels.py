"""Host kernels of tf.serialize_sparse / serialize_many_sparse / deserialize_many_sparse
(graph/ops/sparse_serialize_ops.py), after TF's serialize_sparse_op.cc and
deserialize_sparse_string_op.cc: TF's checks, in its order, with its messages; the
TensorProto bytes are tensor_proto_wire.py's (TF's AsProtoTensorContent)."""
from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel
from .tensor_proto_wire import DT_ENUM, ENUM_NAMES, check_decoded, encode_tensor_proto

__all__: List[str] = []


def _dbg(shape: Any) -> str:
    """TF's TensorShape.DebugString and index printing: [2,3]."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _tf_name(dtype: _dt.DType) -> str:
    return ENUM_NAMES[DT_ENUM[dtype.name]]


def _inputs(indices: Any, values: Any, shape: Any, op: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx, vals, shp = np.asarray(indices, np.int64), np.asarray(values), np.asarray(shape, np.int64)
    if idx.ndim != 2:
        raise InvalidArgumentError(f"Input indices should be a matrix but received shape {_dbg(idx.shape)}", op)
    if vals.ndim != 1:
        raise InvalidArgumentError(f"Input values should be a vector but received shape {_dbg(vals.shape)}", op)
    if shp.ndim != 1:
        raise InvalidArgumentError(f"Input shape should be a vector but received shape {_dbg(shp.shape)}", op)
    return idx, vals, shp


def _serialize(idx: np.ndarray, vals: np.ndarray, shp: np.ndarray, dtype: _dt.DType) -> List[str]:
    # collflow's string elements are str: the bytes kept through surrogates (dtypes.bytes_text)
    return [_dt.bytes_text(encode_tensor_proto(idx, _dt.int64)), _dt.bytes_text(encode_tensor_proto(vals, dtype)),
            _dt.bytes_text(encode_tensor_proto(shp, _dt.int64))]


@register_kernel("SerializeSparse")
def _serialize_sparse(op: Any, ctx: KernelContext) -> Any:
    dtype = op.attrs["T"]

    def run(indices: Any, values: Any, shape: Any) -> np.ndarray:
        out = np.empty(3, object)
        out[:] = _serialize(*_inputs(indices, values, shape, op), dtype)
        return out
    return run


def _indices_valid(idx: np.ndarray, shp: np.ndarray, op: Any) -> None:
    """TF's SparseTensor::IndicesValid: the first entry out of bounds, out of order or
    repeated (bounds first for one entry, as TF checks them per entry)."""
    if not idx.shape[0]:
        return
    oob = ((idx < 0) | (idx >= shp[None, :])).any(1)
    prev, cur = idx[:-1], idx[1:]
    diff = cur != prev
    first = np.where(diff.any(1), diff.argmax(1), 0)  # the first dimension where an entry differs
    rows = np.arange(cur.shape[0])
    order_bad = np.concatenate([[False], ~diff.any(1) | (cur[rows, first] < prev[rows, first])])
    bad = np.nonzero(oob | order_bad)[0]
    if not bad.size:
        return
    i = int(bad[0])
    if oob[i]:
        raise InvalidArgumentError(f"indices[{i}] = {_dbg(idx[i])} is out of bounds: need 0 <= index < "
                                   f"{_dbg(shp)}", op)
    if (idx[i] == idx[i - 1]).all():
        raise InvalidArgumentError(f"indices[{i}] = {_dbg(idx[i])} is repeated", op)
    raise InvalidArgumentError(f"indices[{i}] = {_dbg(idx[i])} is out of order. Many sparse ops require sorted "
                               f"indices.\n    Use `tf.sparse.reorder` to create a correctly ordered copy.\n\n", op)


@register_kernel("SerializeManySparse")
def _serialize_many_sparse(op: Any, ctx: KernelContext) -> Any:
    dtype = op.attrs["T"]

    def run(indices: Any, values: Any, shape: Any) -> np.ndarray:
        idx, vals, shp = _inputs(indices, values, shape, op)
        if shp.size <= 1:
            raise InvalidArgumentError(f"Rank of input SparseTensor should be > 1, but saw rank: {shp.size}", op)
        if idx.shape[1] != shp.size or vals.shape[0] != idx.shape[0]:
            raise InvalidArgumentError(f"Expected indices {_dbg(idx.shape)} and values {_dbg(vals.shape)} to fit "
                                       f"the shape {_dbg(shp)}", op)
        _indices_valid(idx, shp, op)
        n = int(shp[0])
        out = np.empty((n, 3), object)
        # sorted by dimension 0: entry b's values are one contiguous run
        starts = np.searchsorted(idx[:, 0], np.arange(n + 1))
        for b in range(n):
            lo, hi = int(starts[b]), int(starts[b + 1])
            out[b] = _serialize(idx[lo:hi, 1:], vals[lo:hi], shp[1:], dtype)
        return out
    return run


@register_kernel("DeserializeManySparse")
def _deserialize_many_sparse(op: Any, ctx: KernelContext) -> Any:
    dtype = op.attrs["dtype"]

    def run(serialized: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = np.asarray(serialized, object)
        if s.ndim != 2:
            raise InvalidArgumentError(f"Serialized sparse should be a matrix but received shape {_dbg(s.shape)}",
                                       op)
        if s.shape[1] != 3:
            raise InvalidArgumentError(f"Serialized sparse should have 3 columns but received shape "
                                       f"{_dbg(s.shape)}", op)
        if s.shape[0] == 0:
            raise InvalidArgumentError(f"Serialized sparse should have at least 1 serialized tensor, but has a zero "
                                       f"dimension {_dbg(s.shape)}", op)
        parts = [_one(s, i, dtype, op) for i in range(s.shape[0])]
        rank = parts[0][2].size
        for i, (_, _, shp) in enumerate(parts):
            if shp.size != rank:
                raise InvalidArgumentError(f"Inconsistent shape across SparseTensors: rank prior to SparseTensor[{i}] "
                                           f"was: {rank} but rank of SparseTensor[{i}] is: {shp.size}", op)
        idx = np.concatenate([np.concatenate([np.full((p[0].shape[0], 1), i, np.int64), p[0]], 1)
                              for i, p in enumerate(parts)], 0)
        vals = np.concatenate([p[1] for p in parts], 0)
        dims = np.max(np.stack([p[2] for p in parts]), 0)  # each dimension's largest, as TF's concat
        return idx, vals.astype(dtype.np), np.concatenate([[len(parts)], dims]).astype(np.int64)
    return run


def _one(s: np.ndarray, i: int, dtype: _dt.DType, op: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entry i's (indices, values, shape), with TF's GetAndValidateSparseTensor checks."""
    got = []
    for j in range(3):
        enum, arr = check_decoded(s[i, j], "serialized proto", op)
        if enum not in DT_ENUM.values():
            raise InvalidArgumentError(f"serialized_sparse[{i}, {j}] holds a {ENUM_NAMES.get(enum, enum)} tensor, "
                                       f"a dtype collflow does not have", op)
        got.append((enum, arr))
    (ie, idx), (ve, vals), (se, shp) = got
    if idx.ndim != 2 or ie != DT_ENUM["int64"]:
        raise InvalidArgumentError(f"Expected serialized_sparse[{i}, 0] to represent an index matrix but received "
                                   f"shape {_dbg(idx.shape)}", op)
    if vals.ndim != 1:
        raise InvalidArgumentError(f"Expected serialized_sparse[{i}, 1] to represent a values vector but received "
                                   f"shape {_dbg(vals.shape)}", op)
    if ve != DT_ENUM[dtype.name]:
        raise InvalidArgumentError(f"Requested SparseTensor of type {_tf_name(dtype)} but SparseTensor[{i}]"
                                   f".values.dtype() == {ENUM_NAMES[ve]}", op)
    if idx.shape[0] != vals.shape[0]:
        raise InvalidArgumentError(f"Expected row counts of SparseTensor[{i}].indices and SparseTensor[{i}].values "
                                   f"to match but they do not: {idx.shape[0]} vs. {vals.shape[0]}", op)
    if shp.ndim != 1 or se != DT_ENUM["int64"]:
        raise InvalidArgumentError(f"Expected serialized_sparse[{i}, 2] to represent a shape vector but received "
                                   f"shape {_dbg(shp.shape)}", op)
    if idx.shape[1] != shp.shape[0]:
        raise InvalidArgumentError(f"Expected column counts of SparseTensor[{i}].indices to match size of "
                                   f"SparseTensor[{i}].shape but they do not: {idx.shape[1]} vs. {shp.shape[0]}", op)
    return idx.astype(np.int64), vals, shp.astype(np.int64)
