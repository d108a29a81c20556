"""Kernels of graph/ops/parsing_ops.py: tf.train.Example / SequenceExample records to arrays.

Records are Python str (collflow's strings; surrogates stand for the bytes that are not
UTF-8) or bytes; kernels/example_wire.py decodes them.  Errors are TF1's InvalidArgumentError
messages ("Name: <unknown>, Feature: x (data type: float) is required but could not be
found.", "... Data types don't match ...", "... Number of float values != expected ...").
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from . import example_wire as _w
from .registry import KernelContext, register_kernel

_KIND_OF = {_dt.float32: _w.FLOAT, _dt.int64: _w.INT64, _dt.string: _w.BYTES}


_bytes = _dt.string_bytes


def _values(kind: int, values: Any) -> Any:
    """Decoded values as the output's elements (str for bytes, as collflow's strings are)."""
    if kind == _w.BYTES:
        out = np.empty(len(values), dtype=object)
        out[:] = [v.decode("utf-8", "surrogateescape") for v in values]
        return out
    return values


def _type_name(dt: _dt.DType) -> str:
    return _w.KIND_NAMES[_KIND_OF[dt]]


def _empty(dt: _dt.DType, shape: Tuple[int, ...]) -> np.ndarray:
    if dt == _dt.string:
        out = np.empty(shape, dtype=object)
        out.fill("")
        return out
    return np.zeros(shape, dtype=dt.np)


class _Where:
    """Names an example in error messages as TF does ("Name: <unknown>, Key: k, Index: i.")."""

    def __init__(self, op: Any, names: Optional[Sequence[str]]):
        self.op, self.names = op, names

    def name(self, i: int) -> str:
        return self.names[i] if self.names and i < len(self.names) else "<unknown>"

    def fail(self, msg: str) -> None:
        raise InvalidArgumentError(msg, self.op)

    def check_kind(self, i: int, key: str, kind: int, dt: _dt.DType) -> None:
        if kind != _KIND_OF[dt]:
            self.fail(f"Name: {self.name(i)}, Key: {key}, Index: {i}.  Data types don't match. Data type: "
                      f"{_w.KIND_NAMES[kind]} but expected type: {_type_name(dt)}")


def _present(f: Optional[Tuple[int, Any]]) -> bool:
    # a Feature with none of its lists set counts as absent (TF's default applies to it)
    return f is not None and f[0] != _w.NONE


def _dense(where: _Where, records: List[Dict[str, Any]], spec: tuple, batch: bool) -> np.ndarray:
    key, dt, shape, default, seq = spec
    size = int(np.prod(shape, dtype=np.int64))
    tn = _type_name(dt)
    if not seq:
        out = _empty(dt, (len(records),) + shape)
        for i, rec in enumerate(records):
            f = rec.get(key)
            if not _present(f):
                if default is None:
                    where.fail(f"Name: {where.name(i)}, Feature: {key} (data type: {tn}) is required but could not "
                               f"be found.")
                out[i] = default
                continue
            where.check_kind(i, key, f[0], dt)
            if len(f[1]) != size:
                where.fail(f"Name: {where.name(i)}, Key: {key}, Index: {i}.  Number of {tn} values != expected.  "
                           f"Values size: {len(f[1])} but output shape: [{','.join(map(str, shape))}]")
            out[i] = _values(f[0], f[1]).reshape(shape)
        return out if batch else out[0, ...]
    rows: List[Any] = []
    for i, rec in enumerate(records):
        f = rec.get(key)
        if not _present(f):
            rows.append(None)
            continue
        where.check_kind(i, key, f[0], dt)
        n = len(f[1])
        if (size == 0 and n) or (size and n % size):
            where.fail(f"Name: {where.name(i)}, Key: {key}, Index: {i}.  Number of {tn} values is not a multiple "
                       f"of stride length. Saw {n} values but output shape is: [?,{','.join(map(str, shape))}]")
        rows.append(_values(f[0], f[1]).reshape((n // size if size else 0,) + shape))
    longest = max([0] + [len(r) for r in rows if r is not None])
    out = _empty(dt, (len(records), longest) + shape)
    out[...] = default
    for i, r in enumerate(rows):
        if r is not None:
            out[i, :len(r)] = r
    return out if batch else out[0, ...]


def _sparse(where: _Where, records: List[Dict[str, Any]], spec: tuple, batch: bool) -> Tuple[Any, Any, Any]:
    kind, key, dt, index_keys, value_key, sizes, already_sorted = spec
    idx_parts, val_parts, longest = [], [], 0
    for i, rec in enumerate(records):
        f = rec.get(value_key)
        if not _present(f):
            continue
        where.check_kind(i, value_key, f[0], dt)
        vals = _values(f[0], f[1])
        n = len(vals)
        if kind == "var":
            cols = [np.arange(n, dtype=np.int64)]
            longest = max(longest, n)
        else:
            cols = []
            for ik in index_keys:
                g = rec.get(ik)
                if not _present(g):
                    where.fail(f"Name: {where.name(i)}, SparseFeature {key}: the example has values ({value_key}) "
                               f"but no indices ({ik})")
                where.check_kind(i, ik, g[0], _dt.int64)
                if len(g[1]) != n:
                    where.fail(f"Name: {where.name(i)}, SparseFeature {key}: {len(g[1])} indices in {ik} for {n} "
                               f"values in {value_key}")
                cols.append(np.asarray(g[1], dtype=np.int64))
            if n and not already_sorted:
                order = np.lexsort(cols[::-1])
                cols, vals = [c[order] for c in cols], vals[order]
        lead = [np.full(n, i, dtype=np.int64)] if batch else []
        idx_parts.append(np.stack(lead + cols, axis=1) if n else np.zeros((0, len(lead) + len(cols)), np.int64))
        val_parts.append(vals)
    width = (1 if batch else 0) + len(index_keys if kind == "sparse" else (key,))
    indices = np.concatenate(idx_parts) if idx_parts else np.zeros((0, width), np.int64)
    values = np.concatenate(val_parts) if val_parts else _empty(dt, (0,))
    dims = [longest] if kind == "var" else list(sizes)
    shape = np.array(([len(records)] if batch else []) + dims, dtype=np.int64)
    return indices.reshape(-1, width), values, shape


def _records(where: _Where, serialized: Any, single: bool) -> List[Dict[str, Any]]:
    a = np.asarray(serialized, dtype=object)
    if single:
        if a.ndim != 0:
            where.fail(f"parse_single_example: serialized must be a scalar, got shape {a.shape}")
        items = [a.item()]
    else:
        if a.ndim != 1:
            where.fail(f"parse_example: serialized must be a vector, got shape {a.shape}")
        items = list(a)
    return [_w.check_wire(_w.decode_example, _bytes(r), "example", i, where.name(i)) for i, r in enumerate(items)]


@register_kernel("ParseExample")
def _parse_example(op: Any, ctx: KernelContext) -> Any:
    sparse, dense, single = op.attrs["sparse"], op.attrs["dense"], op.attrs["single"]
    where = _Where(op, op.attrs.get("names"))

    def parse_example(serialized: Any) -> Tuple[Any, ...]:
        records = _records(where, serialized, single)
        parts = [_sparse(where, records, s, not single) for s in sparse]
        out = ([p[0] for p in parts] + [p[1] for p in parts] + [p[2] for p in parts]
               + [_dense(where, records, d, not single) for d in dense])
        return out[0] if len(out) == 1 else tuple(out)  # an op of one output returns the value itself
    return parse_example


def _sequence_dense(where: _Where, lists: Dict[str, Any], spec: tuple) -> np.ndarray:
    key, dt, shape, default, allow_missing = spec
    size = int(np.prod(shape, dtype=np.int64))
    tn = _type_name(dt)
    steps = lists.get(key)
    if steps is None:
        if not allow_missing and default is None:
            where.fail(f"Name: {where.name(0)}, Feature list '{key}' is required but could not be found.  Did you "
                       f"mean to include it in feature_list_dense_missing_assumed_empty or "
                       f"feature_list_dense_defaults?")
        return _empty(dt, (0,) + shape)
    out = _empty(dt, (len(steps),) + shape)
    for t, f in enumerate(steps):
        n = len(f[1]) if _present(f) else 0
        if _present(f):
            where.check_kind(0, f"{key}, Step {t}", f[0], dt)
        if n != size:
            where.fail(f"Name: {where.name(0)}, Key: {key}, Index: {t}.  Number of {tn} values != expected.  "
                       f"values size: {n} but output shape: [{','.join(map(str, shape))}]")
        if n:
            out[t] = _values(f[0], f[1]).reshape(shape)
    return out


def _sequence_sparse(where: _Where, lists: Dict[str, Any], spec: tuple) -> Tuple[Any, Any, Any]:
    _, key, dt, _, _, _, _ = spec
    steps = lists.get(key) or []
    idx, vals, longest = [], [], 0
    for t, f in enumerate(steps):
        if not _present(f):
            continue
        where.check_kind(0, f"{key}, Step {t}", f[0], dt)
        n = len(f[1])
        longest = max(longest, n)
        idx.append(np.stack([np.full(n, t, np.int64), np.arange(n, dtype=np.int64)], axis=1))
        vals.append(_values(f[0], f[1]))
    indices = np.concatenate(idx).reshape(-1, 2) if idx else np.zeros((0, 2), np.int64)
    values = np.concatenate(vals) if vals else _empty(dt, (0,))
    return indices, values, np.array([len(steps), longest], dtype=np.int64)


@register_kernel("ParseSequenceExample")
def _parse_sequence_example(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    where = _Where(op, a.get("names"))

    def parse_sequence_example(serialized: Any) -> Tuple[Any, ...]:
        s = np.asarray(serialized, dtype=object)
        if s.ndim != 0:
            where.fail(f"parse_single_sequence_example: serialized must be a scalar, got shape {s.shape}")
        context, lists = _w.check_wire(_w.decode_sequence_example, _bytes(s.item()), "sequence example", 0,
                                       where.name(0))
        ctx_parts = [_sparse(where, [context], sp, False) for sp in a["context_sparse"]]
        seq_parts = [_sequence_sparse(where, lists, sp) for sp in a["sequence_sparse"]]
        out: List[Any] = []
        for parts in (ctx_parts, seq_parts):
            out += [p[0] for p in parts] + [p[1] for p in parts] + [p[2] for p in parts]
        out += [_dense(where, [context], d, False) for d in a["context_dense"]]
        out += [_sequence_dense(where, lists, d) for d in a["sequence_dense"]]
        return out[0] if len(out) == 1 else tuple(out)
    return parse_sequence_example


class _OneOf(_Where):
    """Error naming for example `b` of a batch, for the per-record helpers that name example 0."""

    def __init__(self, where: _Where, b: int):
        super().__init__(where.op, where.names)
        self.b = b

    def name(self, i: int) -> str:
        return super().name(self.b)


@register_kernel("ParseSequenceExampleBatch")
def _parse_sequence_example_batch(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    where = _Where(op, a.get("names"))

    def parse_sequence_example(serialized: Any) -> Tuple[Any, ...]:
        s = np.asarray(serialized, dtype=object)
        if s.ndim != 1:
            where.fail(f"parse_sequence_example: serialized must be a vector, got shape {s.shape}")
        decoded = [_w.check_wire(_w.decode_sequence_example, _bytes(r), "sequence example", i, where.name(i))
                   for i, r in enumerate(s.tolist())]
        contexts = [c for c, _ in decoded]
        n = len(decoded)
        ctx_parts = [_sparse(where, contexts, sp, True) for sp in a["context_sparse"]]
        seq_parts = []
        for sp in a["sequence_sparse"]:
            idx, vals, steps, width = [], [], 0, 0
            for b, (_, lists) in enumerate(decoded):
                i, v, shape = _sequence_sparse(_OneOf(where, b), lists, sp)
                idx.append(np.concatenate([np.full((len(i), 1), b, np.int64), i], axis=1))
                vals.append(v)
                steps, width = max(steps, int(shape[0])), max(width, int(shape[1]))
            seq_parts.append((np.concatenate(idx) if idx else np.zeros((0, 3), np.int64),
                              np.concatenate(vals) if vals else _empty(sp[2], (0,)),
                              np.array([n, steps, width], dtype=np.int64)))
        out: List[Any] = []
        for parts in (ctx_parts, seq_parts):
            out += [p[0] for p in parts] + [p[1] for p in parts] + [p[2] for p in parts]
        out += [_dense(where, contexts, d, True) for d in a["context_dense"]]
        lengths = []
        for d in a["sequence_dense"]:
            key, dt, shape, default, _ = d
            rows = [_sequence_dense(_OneOf(where, b), lists, d) for b, (_, lists) in enumerate(decoded)]
            steps = max([0] + [len(r) for r in rows])
            padded = _empty(dt, (n, steps) + tuple(shape))
            if default is not None:
                padded[...] = default
            for b, r in enumerate(rows):
                padded[b, :len(r)] = r
            out.append(padded)
            lengths.append(np.array([len(r) for r in rows], dtype=np.int64))
        out += lengths
        return out[0] if len(out) == 1 else tuple(out)
    return parse_sequence_example
