"""Parsing tf.train.Example records (TensorFlow 1.x): tf.parse_example, tf.parse_single_example,
tf.parse_single_sequence_example and the feature specs FixedLenFeature, VarLenFeature,
FixedLenSequenceFeature and SparseFeature (also under tf.io).

The specs and results are TF1's: a FixedLenFeature is a dense tensor of `shape` per example
(its `default_value` where the example lacks it, else an error naming it); a VarLenFeature a
SparseTensor of each example's values; a FixedLenSequenceFeature (allow_missing=True) rows of
`shape`, padded to the longest example with `default_value`; a SparseFeature a SparseTensor
whose indices come from integer features.  The ParseExample and ParseSequenceExample ops run
on the host (kernels/parsing_kernels.py); a serialized record is a string tensor (collflow's
strings are Python str, whose surrogates stand for bytes that are not UTF-8, so a record
read from a file parses as its original bytes).
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from ..sparse_tensor import SparseTensor
from .op_util import make_op

__all__ = ["FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature", "SparseFeature", "parse_example",
           "parse_single_example", "parse_single_sequence_example"]
# parse_sequence_example is tf.io's only (TF has no top-level tf.parse_sequence_example)

_ALLOWED = (_dt.float32, _dt.int64, _dt.string)


class FixedLenFeature(namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature with a fixed number of values per example, parsed into a dense tensor of
    `shape` (`default_value`, of that shape, where an example lacks it)."""

    def __new__(cls, shape: Any, dtype: Any, default_value: Any = None) -> "FixedLenFeature":
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(namedtuple("VarLenFeature", ["dtype"])):
    """A feature with any number of values per example, parsed into a SparseTensor."""


class FixedLenSequenceFeature(namedtuple("FixedLenSequenceFeature",
                                         ["shape", "dtype", "allow_missing", "default_value"])):
    """A feature holding a sequence of rows of `shape` (its values, row after row), parsed
    into a dense tensor [batch, rows, *shape] padded with `default_value` (a scalar)."""

    def __new__(cls, shape: Any, dtype: Any, allow_missing: bool = False,
                default_value: Any = None) -> "FixedLenSequenceFeature":
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class SparseFeature(namedtuple("SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """A SparseTensor built from a value feature and one integer index feature per dimension
    (`size`: the dense size of each)."""

    def __new__(cls, index_key: Any, value_key: str, dtype: Any, size: Any,
                already_sorted: bool = False) -> "SparseFeature":
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


def _dtype(d: Any, key: str) -> _dt.DType:
    dt = _dt.as_dtype(d)
    if dt not in _ALLOWED:
        raise TypeError(f"Feature {key!r}: dtype {dt.name} is not one of the types Example features hold "
                        f"(float32, int64, string)")
    return dt


def _shape(shape: Any, key: str) -> Tuple[int, ...]:
    s = TensorShape(shape)
    if s.rank is None or any(d is None for d in s.dims):
        raise ValueError(f"Feature {key!r}: shape {s} must be fully defined (FixedLenSequenceFeature for a "
                         f"varying first dimension)")
    return tuple(int(d) for d in s.dims)


def _constant(v: Any, dt: _dt.DType, key: str) -> np.ndarray:
    if isinstance(v, _g.Tensor):
        from .misc_more_ops import get_static_value
        got = get_static_value(v)
        if got is None:
            raise ValueError(f"Feature {key!r}: default_value must be known when the graph is built (a constant), "
                             f"got the tensor {v.name}")
        v = got
    if dt == _dt.string:
        a = np.asarray(v, dtype=object)
        out = np.empty(a.shape, dtype=object)
        flat = out.reshape(-1)
        for i, x in enumerate(a.reshape(-1)):
            flat[i] = x.decode("utf-8", "surrogateescape") if isinstance(x, bytes) else str(x)
        return out
    a = np.asarray(v)
    if a.dtype.kind == "f" and dt == _dt.int64:
        raise TypeError(f"Feature {key!r}: default_value {v!r} is not an integer for an int64 feature")
    return a.astype(dt.np)


def _dense_default(f: Any, key: str, dt: _dt.DType, shape: Tuple[int, ...]) -> Optional[np.ndarray]:
    if f.default_value is None:
        return None
    a = _constant(f.default_value, dt, key)
    if a.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"Feature {key!r}: cannot reshape a default_value of {a.size} elements to shape "
                         f"{list(shape)} ({int(np.prod(shape, dtype=np.int64))} elements)")
    return a.reshape(shape)


def _pad_value(f: Any, key: str, dt: _dt.DType) -> np.ndarray:
    if f.default_value is None:
        return np.array("", dtype=object) if dt == _dt.string else np.zeros((), dt.np)
    a = _constant(f.default_value, dt, key)
    if a.size != 1:
        raise ValueError(f"Feature {key!r}: a FixedLenSequenceFeature's default_value must be a scalar, got "
                         f"shape {a.shape}")
    return a.reshape(())


def _specs(features: Dict[str, Any], what: str) -> Tuple[List[tuple], List[tuple]]:
    """(sparse specs, dense specs) of a features dict, in TF's order (sorted by key)."""
    if not isinstance(features, dict) or not features:
        raise ValueError(f"{what}: features must be a non-empty dict of feature specs, got {features!r}")
    sparse, dense = [], []
    for key in sorted(features):
        f = features[key]
        if isinstance(f, VarLenFeature):
            sparse.append(("var", key, _dtype(f.dtype, key), (key,), key, (), False))
        elif isinstance(f, SparseFeature):
            idx = [f.index_key] if isinstance(f.index_key, str) else list(f.index_key)
            sizes = [f.size] if isinstance(f.size, (int, np.integer)) else list(f.size)
            if len(idx) != len(sizes):
                raise ValueError(f"SparseFeature {key!r}: {len(idx)} index keys but {len(sizes)} sizes")
            sparse.append(("sparse", key, _dtype(f.dtype, key), tuple(idx), f.value_key,
                           tuple(int(s) for s in sizes), bool(f.already_sorted)))
        elif isinstance(f, FixedLenFeature):
            dt = _dtype(f.dtype, key)
            shape = _shape(f.shape, key)
            dense.append((key, dt, shape, _dense_default(f, key, dt, shape), False))
        elif isinstance(f, FixedLenSequenceFeature):
            if not f.allow_missing:
                raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to be True.")
            dt = _dtype(f.dtype, key)
            dense.append((key, dt, _shape(f.shape, key), _pad_value(f, key, dt), True))
        else:
            raise ValueError(f"{what}: feature {key!r} has spec {f!r}: expected FixedLenFeature, VarLenFeature, "
                             f"FixedLenSequenceFeature or SparseFeature")
    return sparse, dense


def _parse_example_shapes(op: _g.Operation) -> List[Tuple[Any, Any]]:
    single = op.attrs["single"]
    ser = op.inputs[0].shape
    batch: List[Any] = [] if single else [ser.dims[0] if ser.rank == 1 else None]
    extra = 0 if single else 1
    sparse, dense = op.attrs["sparse"], op.attrs["dense"]
    out: List[Tuple[Any, Any]] = []
    for s in sparse:
        out.append((_dt.int64, TensorShape([None, extra + len(s[5] or (0,))])))
    for s in sparse:
        out.append((s[2], TensorShape([None])))
    for s in sparse:
        out.append((_dt.int64, TensorShape([extra + len(s[5] or (0,))])))
    for key, dt, shape, _, seq in dense:
        out.append((dt, TensorShape(batch + ([None] if seq else []) + list(shape))))
    return out


register_op("ParseExample", _parse_example_shapes, host_only=True,
            doc="tf.train.Example records -> the tensors of the feature specs")
not_differentiable("ParseExample")


def _serialized(serialized: Any, rank: int, what: str) -> _g.Tensor:
    t = serialized if isinstance(serialized, _g.Tensor) else _g.convert_to_tensor(
        _constant(serialized, _dt.string, "serialized"), dtype=_dt.string)
    if t.dtype != _dt.string:
        raise TypeError(f"{what}: serialized must be a string tensor, got {t.dtype.name}")
    if t.shape.rank is not None and t.shape.rank != rank:
        raise ValueError(f"{what}: serialized must be {'a scalar' if rank == 0 else 'a vector'}, got shape "
                         f"{t.shape}")
    return t


def _names(example_names: Any) -> Optional[Tuple[str, ...]]:
    if example_names is None:
        return None
    a = _constant(example_names, _dt.string, "example_names")
    return tuple(a.reshape(-1).tolist())


def _assemble(op: _g.Operation, sparse: List[tuple], dense: List[tuple]) -> Dict[str, Any]:
    n = len(sparse)
    outs = op.outputs
    result: Dict[str, Any] = {}
    for i, s in enumerate(sparse):
        result[s[1]] = SparseTensor(outs[i], outs[n + i], outs[2 * n + i])
    for j, d in enumerate(dense):
        result[d[0]] = outs[3 * n + j]
    return result


def _parse(serialized: Any, features: Dict[str, Any], single: bool, name: Optional[str], example_names: Any,
           what: str) -> Dict[str, Any]:
    sparse, dense = _specs(features, what)
    t = _serialized(serialized, 0 if single else 1, what)
    names = _names(example_names)
    g = t.graph
    with g.name_scope(name or ("ParseSingleExample" if single else "ParseExample")):
        op = make_op("ParseExample", [t], {"sparse": sparse, "dense": dense, "single": single, "names": names},
                     name="ParseExample")
    return _assemble(op, sparse, dense)


def parse_example(serialized: Any, features: Dict[str, Any], name: Optional[str] = None,
                  example_names: Any = None) -> Dict[str, Any]:
    """A vector of serialized tf.train.Example -> {key: dense Tensor [batch, ...] or
    SparseTensor}, as the feature specs in `features` say (TF1's tf.parse_example)."""
    return _parse(serialized, features, False, name, example_names, "parse_example")


def parse_single_example(serialized: Any, features: Dict[str, Any], name: Optional[str] = None,
                         example_names: Any = None) -> Dict[str, Any]:
    """One serialized tf.train.Example (a scalar) -> {key: Tensor of the spec's shape or
    SparseTensor} (TF1's tf.parse_single_example: parse_example without the batch dimension)."""
    return _parse(serialized, features, True, name, example_names, "parse_single_example")


# -- SequenceExample -------------------------------------------------------------------------


def _sequence_shapes(op: _g.Operation) -> List[Tuple[Any, Any]]:
    ctx_sparse, ctx_dense = op.attrs["context_sparse"], op.attrs["context_dense"]
    seq_sparse, seq_dense = op.attrs["sequence_sparse"], op.attrs["sequence_dense"]
    out: List[Tuple[Any, Any]] = []
    for group, rank in ((ctx_sparse, 1), (seq_sparse, 2)):
        out += [(_dt.int64, TensorShape([None, rank])) for _ in group]
        out += [(s[2], TensorShape([None])) for s in group]
        out += [(_dt.int64, TensorShape([rank])) for _ in group]
    out += [(dt, TensorShape(list(shape))) for _, dt, shape, _, _ in ctx_dense]
    out += [(dt, TensorShape([None] + list(shape))) for _, dt, shape, _, _ in seq_dense]
    return out


register_op("ParseSequenceExample", _sequence_shapes, host_only=True,
            doc="one tf.train.SequenceExample record -> its context and sequence tensors")
not_differentiable("ParseSequenceExample")


def _sequence_specs(features: Optional[Dict[str, Any]]) -> Tuple[List[tuple], List[tuple]]:
    sparse, dense = [], []
    for key in sorted(features or {}):
        f = features[key]  # type: ignore[index]
        if isinstance(f, VarLenFeature):
            sparse.append(("var", key, _dtype(f.dtype, key), (key,), key, (), False))
        elif isinstance(f, FixedLenSequenceFeature):
            if f.default_value is not None:  # TF's rule: steps are padded with zeros only
                raise ValueError(f"Value feature_list.dense_defaults[{key}] must be None")
            dense.append((key, _dtype(f.dtype, key), _shape(f.shape, key), None, bool(f.allow_missing)))
        else:
            raise ValueError(f"parse_single_sequence_example: sequence feature {key!r} has spec {f!r}: expected "
                             f"VarLenFeature or FixedLenSequenceFeature")
    return sparse, dense


def _sequence_all_specs(context_features: Optional[Dict[str, Any]], sequence_features: Optional[Dict[str, Any]],
                        what: str) -> Dict[str, Any]:
    """The op attributes of a SequenceExample parse: context and sequence specs, checked."""
    if not context_features and not sequence_features:
        raise ValueError("Missing features.")
    ctx_sparse, ctx_dense = _specs(context_features, what) if context_features else ([], [])
    for s in ctx_sparse:
        if s[0] != "var":
            raise ValueError(f"{what}: context feature {s[1]!r}: SparseFeature is not supported here")
    for d in ctx_dense:
        if d[4]:
            raise ValueError(f"{what}: context feature {d[0]!r} cannot be a FixedLenSequenceFeature")
    seq_sparse, seq_dense = _sequence_specs(sequence_features)
    return {"context_sparse": ctx_sparse, "context_dense": ctx_dense, "sequence_sparse": seq_sparse,
            "sequence_dense": seq_dense}


def _sequence_results(op: _g.Operation, attrs: Dict[str, Any]) -> List[Dict[str, Any]]:
    """[context dict, sequence dict] from the op's outputs (sparse parts, then dense ones)."""
    outs = op.outputs
    pos = 0
    results: List[Dict[str, Any]] = []
    for sparse in (attrs["context_sparse"], attrs["sequence_sparse"]):
        n = len(sparse)
        part = {s[1]: SparseTensor(outs[pos + i], outs[pos + n + i], outs[pos + 2 * n + i]) for i, s in enumerate(sparse)}
        pos += 3 * n
        results.append(part)
    for j, d in enumerate(attrs["context_dense"]):
        results[0][d[0]] = outs[pos + j]
    pos += len(attrs["context_dense"])
    for j, d in enumerate(attrs["sequence_dense"]):
        results[1][d[0]] = outs[pos + j]
    return results


def parse_single_sequence_example(serialized: Any, context_features: Optional[Dict[str, Any]] = None,
                                  sequence_features: Optional[Dict[str, Any]] = None,
                                  example_name: Any = None, name: Optional[str] = None) -> Tuple[Dict[str, Any],
                                                                                                 Dict[str, Any]]:
    """One serialized tf.train.SequenceExample -> (context dict, sequence dict) (TF1's
    tf.parse_single_sequence_example).  Context specs: FixedLenFeature or VarLenFeature;
    sequence specs: FixedLenSequenceFeature (a tensor [steps, *shape]; every step must hold
    exactly one row) or VarLenFeature (a SparseTensor [steps, longest step])."""
    attrs = _sequence_all_specs(context_features, sequence_features, "parse_single_sequence_example")
    t = _serialized(serialized, 0, "parse_single_sequence_example")
    with t.graph.name_scope(name or "ParseSingleSequenceExample"):
        op = make_op("ParseSequenceExample", [t], dict(attrs, names=_names(example_name)),
                     name="ParseSingleSequenceExample")
    ctx, seq = _sequence_results(op, attrs)
    return ctx, seq


def _batch_sequence_shapes(op: _g.Operation) -> List[Tuple[Any, Any]]:
    ser = op.inputs[0].shape
    batch = ser.dims[0] if ser.rank == 1 else None
    a = op.attrs
    out: List[Tuple[Any, Any]] = []
    for group, rank in ((a["context_sparse"], 2), (a["sequence_sparse"], 3)):
        out += [(_dt.int64, TensorShape([None, rank])) for _ in group]
        out += [(s[2], TensorShape([None])) for s in group]
        out += [(_dt.int64, TensorShape([rank])) for _ in group]
    out += [(dt, TensorShape([batch] + list(shape))) for _, dt, shape, _, _ in a["context_dense"]]
    out += [(dt, TensorShape([batch, None] + list(shape))) for _, dt, shape, _, _ in a["sequence_dense"]]
    out += [(_dt.int64, TensorShape([batch])) for _ in a["sequence_dense"]]
    return out


register_op("ParseSequenceExampleBatch", _batch_sequence_shapes, host_only=True,
            doc="a vector of tf.train.SequenceExample records -> batched context and sequence tensors")
not_differentiable("ParseSequenceExampleBatch")


def parse_sequence_example(serialized: Any, context_features: Optional[Dict[str, Any]] = None,
                           sequence_features: Optional[Dict[str, Any]] = None, example_names: Any = None,
                           name: Optional[str] = None) -> Tuple[Dict[str, Any], Dict[str, Any], Dict[str, Any]]:
    """A vector of serialized tf.train.SequenceExample -> (context dict, sequence dict,
    lengths dict) (tf.io.parse_sequence_example): context features batched as parse_example's;
    a FixedLenSequenceFeature a tensor [batch, longest, *shape] padded with zeros, its
    per-example step counts in lengths; a VarLenFeature a SparseTensor
    [batch, longest, widest step]."""
    attrs = _sequence_all_specs(context_features, sequence_features, "parse_sequence_example")
    t = _serialized(serialized, 1, "parse_sequence_example")
    with t.graph.name_scope(name or "ParseSequenceExample"):
        op = make_op("ParseSequenceExampleBatch", [t], dict(attrs, names=_names(example_names)),
                     name="ParseSequenceExample")
    ctx, seq = _sequence_results(op, attrs)
    k = len(op.outputs) - len(attrs["sequence_dense"])
    lengths = {d[0]: op.outputs[k + j] for j, d in enumerate(attrs["sequence_dense"])}
    return ctx, seq, lengths
