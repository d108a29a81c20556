"""The mutable lookup tables' resources and kernels (graph/ops/mutable_lookup_ops.py), on the host.

MutableHashTableResource: a dict from keys (Python str or int) to values (Python scalars,
or NumPy rows for vector values), exported in insertion order.

DenseHashTableResource: TF's MutableDenseHashTable bucket for bucket: key and value bucket
arrays, TF's hash (the key itself for integers, TF's Hash64 for strings, Hash64Combine over
a vector key's elements) and its triangular probing, growth by doubling past 80% load
(counting every key of an insert batch as new, as TF does), and removal by writing
deleted_key.  So export() gives TF's bucket arrays, in TF's order.

The errors are TF's InvalidArgumentError messages, raised when the op runs.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InternalError, InvalidArgumentError, UnimplementedError
from .farmhash import legacy_hash64
from .lookup_kernels import LookupTableResource, SharedTable, _table
from .registry import KernelContext, register_kernel
from .text_kernels import _text

__all__ = ["MutableHashTableResource", "DenseHashTableResource"]

_M64 = (1 << 64) - 1

# (key dtype, value dtype) pairs TF registers kernels for (TF 2.x, as 1.15's)
_MUTABLE_TYPES = {("string", v) for v in ("int32", "int64", "float32", "float64", "bool")} | {
    ("int32", v) for v in ("int32", "float32", "float64")} | {
    ("int64", v) for v in ("string", "int32", "int64", "float32", "float64")}
_DENSE_TYPES = {("string", v) for v in ("int32", "int64", "float32", "float64", "bool")} | {
    ("int32", v) for v in ("int32", "float32", "float64")} | {
    ("int64", v) for v in ("int32", "int64", "float32", "float64", "bool")}
_TF_NAMES = {"string": "DT_STRING", "int32": "DT_INT32", "int64": "DT_INT64", "float32": "DT_FLOAT",
             "float64": "DT_DOUBLE", "bool": "DT_BOOL"}


def _shape_str(shape: Tuple[int, ...]) -> str:
    """TF's TensorShape.DebugString: [2,3]."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _check_types(op: Any, allowed: set) -> None:
    k, v = op.attrs["key_dtype"], op.attrs["value_dtype"]
    if (k.name, v.name) not in allowed:
        raise InvalidArgumentError(
            f"No OpKernel was registered to support Op '{op.type}' used by {{{{node {op.name}}}}} with these "
            f"attrs: [key_dtype={_TF_NAMES.get(k.name, k.name)}, value_dtype={_TF_NAMES.get(v.name, v.name)}]", op)


def _pylist(a: np.ndarray, dtype: _dt.DType) -> List[Any]:
    """A flat array's entries as Python values (dict keys): str for strings (bytes decoded)."""
    flat = a.reshape(-1).tolist()
    if dtype == _dt.string:
        return [x if isinstance(x, str) else _text(x) for x in flat]
    return flat


def _as_array(items: List[Any], dtype: _dt.DType, shape: Tuple[int, ...]) -> np.ndarray:
    out = np.empty(len(items), dtype=dtype.np)
    out[:] = items  # assigning a list: strings stay Python str
    return out.reshape(shape)


class _TableBase(SharedTable):
    """What the kernels ask of a mutable table, and the checks TF's LookupInterface makes."""

    def __init__(self, name: str, key_dtype: _dt.DType, value_dtype: _dt.DType, value_shape: Tuple[int, ...],
                 key_shape: Tuple[int, ...] = ()):
        self.name = name
        self.key_dtype = key_dtype
        self.value_dtype = value_dtype
        self.value_shape = tuple(value_shape)
        self.key_shape = tuple(key_shape)
        self.lock = threading.Lock()

    def _check_keys(self, keys: np.ndarray, op: Any) -> None:
        kr = len(self.key_shape)
        if keys.ndim < kr or keys.shape[keys.ndim - kr:] != self.key_shape:
            raise InvalidArgumentError(f"Input key shape {_shape_str(keys.shape)} must end with the table's key "
                                       f"shape {_shape_str(self.key_shape)}", op)

    def _check_values(self, keys: np.ndarray, values: np.ndarray, op: Any) -> None:
        self._check_keys(keys, op)
        want = keys.shape[:keys.ndim - len(self.key_shape)] + self.value_shape
        if values.shape != want:
            raise InvalidArgumentError(f"Expected shape {_shape_str(want)} for value, got "
                                       f"{_shape_str(values.shape)}", op)

    def _default(self, default: Any) -> Any:
        d = np.asarray(default)
        if self.value_shape:
            return d
        v = d.item()
        return _text(v) if isinstance(v, bytes) else v


class MutableHashTableResource(_TableBase):
    """One MutableHashTable of a Session: key -> value, in insertion order."""

    def __init__(self, name: str, key_dtype: _dt.DType, value_dtype: _dt.DType, value_shape: Tuple[int, ...]):
        super().__init__(name, key_dtype, value_dtype, value_shape)
        self.data: Dict[Any, Any] = {}

    def size(self) -> int:
        return len(self.data)

    def _rows(self, keys: np.ndarray, values: np.ndarray) -> Tuple[List[Any], List[Any]]:
        ks = _pylist(keys, self.key_dtype)
        if self.value_shape:  # rows of a private copy: no per-row copies, nothing shared with the caller
            return ks, list(np.array(values, dtype=self.value_dtype.np).reshape((len(ks),) + self.value_shape))
        return ks, _pylist(values, self.value_dtype)

    def insert(self, keys: Any, values: Any, op: Any) -> None:
        keys, values = np.asarray(keys), np.asarray(values)
        self._check_values(keys, values, op)
        ks, vs = self._rows(keys, values)
        with self.lock:
            self.data.update(zip(ks, vs))

    def remove(self, keys: Any, op: Any) -> None:
        keys = np.asarray(keys)
        ks = _pylist(keys, self.key_dtype)
        with self.lock:
            pop = self.data.pop
            for k in ks:
                pop(k, None)

    def find(self, keys: Any, default: Any, op: Any) -> np.ndarray:
        keys = np.asarray(keys)
        ks = _pylist(keys, self.key_dtype)
        dv = self._default(default)
        get = self.data.get
        with self.lock:
            found = [get(k, dv) for k in ks]
        if not self.value_shape:
            return _as_array(found, self.value_dtype, keys.shape)
        if not found:
            return np.empty(keys.shape + self.value_shape, dtype=self.value_dtype.np)
        return np.stack(found).astype(self.value_dtype.np, copy=False).reshape(keys.shape + self.value_shape)

    def export(self) -> Tuple[np.ndarray, np.ndarray]:
        with self.lock:
            ks, vs = list(self.data.keys()), list(self.data.values())
        keys = _as_array(ks, self.key_dtype, (len(ks),))
        if not self.value_shape:
            return keys, _as_array(vs, self.value_dtype, (len(vs),))
        if not vs:
            return keys, np.empty((0,) + self.value_shape, dtype=self.value_dtype.np)
        return keys, np.stack(vs).astype(self.value_dtype.np, copy=False)

    def import_values(self, keys: Any, values: Any, op: Any) -> None:
        """Replaces the contents (TF's ImportValues: clear, then insert)."""
        keys, values = np.asarray(keys), np.asarray(values)
        self._check_values(keys, values, op)
        ks, vs = self._rows(keys, values)
        with self.lock:
            self.data = dict(zip(ks, vs))


class DenseHashTableResource(_TableBase):
    """One MutableDenseHashTable of a Session, laid out in buckets as TF's."""

    max_load_factor = 0.8

    def __init__(self, name: str, key_dtype: _dt.DType, value_dtype: _dt.DType, value_shape: Tuple[int, ...],
                 empty_key: np.ndarray, deleted_key: np.ndarray, num_buckets: int, op: Any):
        super().__init__(name, key_dtype, value_dtype, value_shape, empty_key.shape)
        if len(value_shape) > 1:
            raise InvalidArgumentError(f"Empty value must be a scalar or a vector, got shape "
                                       f"{_shape_str(value_shape)}", op)
        if empty_key.shape != deleted_key.shape:
            raise InvalidArgumentError(f"Empty and deleted keys must have same shape, got shapes: "
                                       f"{_shape_str(empty_key.shape)} and {_shape_str(deleted_key.shape)}", op)
        self.key_size = int(np.prod(empty_key.shape, dtype=np.int64))
        self.value_size = int(np.prod(value_shape, dtype=np.int64))
        self.empty = self._key_list(empty_key.reshape(1, -1))[0]
        self.deleted = self._key_list(deleted_key.reshape(1, -1))[0]
        if self.empty == self.deleted:
            raise InvalidArgumentError("Empty and deleted keys cannot be equal", op)
        if num_buckets < 4 or num_buckets & (num_buckets - 1):
            raise InvalidArgumentError(f"Number of buckets must be at least 4 and a power of 2, got: {num_buckets}", op)
        self._allocate(num_buckets)

    # -- layout ------------------------------------------------------------------------------------
    def _allocate(self, n: int) -> None:
        self.num_buckets = n
        self.num_entries = 0
        self.kb: List[Any] = [self.empty] * n  # one Python key (a tuple for vector keys) per bucket
        self.vb = np.zeros((n, self.value_size), dtype=self.value_dtype.np)
        if self.value_dtype == _dt.string:
            self.vb[...] = ""

    def _key_list(self, keys2d: np.ndarray) -> List[Any]:
        """The rows of a [n, key_size] array as Python keys: scalars, or tuples for vector keys."""
        flat = _pylist(keys2d, self.key_dtype)
        if self.key_size == 1:
            return flat
        s = self.key_size
        return [tuple(flat[i:i + s]) for i in range(0, len(flat), s)]

    def _hash1(self, x: Any) -> int:
        # TF's HashScalar: the integer itself (as uint64), Hash64 of a string
        return legacy_hash64(x.encode("utf-8")) if isinstance(x, str) else x & _M64

    def _hash(self, key: Any) -> int:
        if self.key_size == 1:
            return self._hash1(key)
        h = 0
        for x in key:  # TF's Hash64Combine over the elements
            h = (h ^ ((self._hash1(x) + 0x9E3779B97F4A7800 + (h << 10) + (h >> 4)) & _M64)) & _M64
        return h

    def _check_special(self, key: Any, op: Any) -> None:
        if key == self.empty:
            raise InvalidArgumentError("Using the empty_key as a table key is not allowed", op)
        if key == self.deleted:
            raise InvalidArgumentError("Using the deleted_key as a table key is not allowed", op)

    def _probe(self, key: Any, insert: bool, op: Any) -> Tuple[int, bool]:
        """(bucket, found): the key's bucket, else the first free one (a deleted bucket too
        when inserting, as TF: a key further along the chain is then not seen)."""
        kb, mask, empty, deleted = self.kb, self.num_buckets - 1, self.empty, self.deleted
        b, n = self._hash(key) & mask, 0
        while True:
            cur = kb[b]
            if cur == key:
                return b, True
            if cur == empty or (insert and cur == deleted):
                return b, False
            n += 1
            b = (b + n) & mask  # TF's quadratic (triangular) probing
            if n >= self.num_buckets:
                raise InternalError(f"Internal error in MutableDenseHashTable {'insert' if insert else 'lookup'}",
                                    op)

    def _batch(self, keys: np.ndarray, op: Any) -> List[Any]:
        n = keys.shape[0] if keys.ndim else 1
        if keys.size != n * self.key_size:
            raise InvalidArgumentError(f"Expected key shape {_shape_str((n,) + self.key_shape)} got "
                                       f"{_shape_str(keys.shape)}", op)
        return self._key_list(keys.reshape(n, self.key_size))

    def _do_insert(self, ks: List[Any], vals: np.ndarray, op: Any, skip_special: bool) -> None:
        for i, k in enumerate(ks):
            if skip_special and (k == self.empty or k == self.deleted):
                continue
            self._check_special(k, op)
            b, found = self._probe(k, True, op)
            if not found:
                self.kb[b] = k
                self.num_entries += 1
            self.vb[b] = vals[i]

    # -- the ops -----------------------------------------------------------------------------------
    def size(self) -> int:
        return self.num_entries

    def insert(self, keys: Any, values: Any, op: Any) -> None:
        keys, values = np.asarray(keys), np.asarray(values)
        self._check_values(keys, values, op)
        ks = self._batch(keys, op)
        vals = values.reshape(len(ks), self.value_size)
        with self.lock:
            pending = self.num_entries + len(ks)  # every key counted as new, as TF does
            if pending > self.num_buckets * self.max_load_factor:
                n = self.num_buckets
                while pending > n * self.max_load_factor:
                    n <<= 1
                old_k, old_v = self.kb, self.vb
                self._allocate(n)
                self._do_insert(old_k, old_v, op, skip_special=True)
            self._do_insert(ks, vals, op, skip_special=False)

    def remove(self, keys: Any, op: Any) -> None:
        keys = np.asarray(keys)
        self._check_keys(keys, op)
        ks = self._batch(keys, op)
        with self.lock:
            for k in ks:
                self._check_special(k, op)
                b, found = self._probe(k, False, op)
                if found:
                    self.kb[b] = self.deleted
                    self.num_entries -= 1

    def find(self, keys: Any, default: Any, op: Any) -> np.ndarray:
        keys = np.asarray(keys)
        self._check_keys(keys, op)
        ks = self._batch(keys, op)
        out = np.empty((len(ks), self.value_size), dtype=self.value_dtype.np)
        dv = np.asarray(default).reshape(-1)
        with self.lock:
            for i, k in enumerate(ks):
                self._check_special(k, op)
                b, found = self._probe(k, False, op)
                out[i] = self.vb[b] if found else dv
        return out.reshape(keys.shape[:keys.ndim - len(self.key_shape)] + self.value_shape)

    def export(self) -> Tuple[np.ndarray, np.ndarray]:
        with self.lock:
            flat = self.kb if self.key_size == 1 else [x for k in self.kb for x in k]
            keys = _as_array(flat, self.key_dtype, (self.num_buckets, self.key_size))
            return keys, self.vb.copy()

    def import_values(self, keys: Any, values: Any, op: Any) -> None:
        """Takes exported bucket arrays as the table's buckets (TF's ImportValues)."""
        keys, values = np.asarray(keys), np.asarray(values)
        n = keys.shape[0] if keys.ndim else 0
        if n < 1 or n & (n - 1) or keys.size != n * self.key_size or values.size != n * self.value_size:
            raise InvalidArgumentError(f"Expected key buckets [num_buckets (a power of 2), {self.key_size}] and "
                                       f"value buckets [num_buckets, {self.value_size}], got "
                                       f"{_shape_str(keys.shape)} and {_shape_str(values.shape)}", op)
        ks = self._key_list(keys.reshape(n, self.key_size))
        with self.lock:
            self.num_buckets = n
            self.kb = ks
            self.vb = np.array(values, dtype=self.value_dtype.np).reshape(n, self.value_size)
            self.num_entries = sum(1 for k in ks if k != self.empty and k != self.deleted)


# -- kernels ----------------------------------------------------------------------------------------


@register_kernel("MutableHashTableV2")
@register_kernel("MutableHashTableOfTensorsV2")
def _mutable_hash_table(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    vshape = tuple(a.get("value_shape", ()))

    def make() -> MutableHashTableResource:
        _check_types(op, _MUTABLE_TYPES)
        if op.type == "MutableHashTableOfTensorsV2" and len(vshape) != 1:
            raise InvalidArgumentError(f"Default value must be a vector, got shape {_shape_str(vshape)}", op)
        t = ctx.resources.get_or_create("table", a["shared_name"], lambda: MutableHashTableResource(
            a["shared_name"], a["key_dtype"], a["value_dtype"], vshape))
        t.check_compatible(a["key_dtype"], a["value_dtype"], op)
        return t
    return make


@register_kernel("MutableDenseHashTableV2")
def _dense_hash_table(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs

    def make(empty_key: Any, deleted_key: Any) -> DenseHashTableResource:
        _check_types(op, _DENSE_TYPES)
        t = ctx.resources.get_or_create("table", a["shared_name"], lambda: DenseHashTableResource(
            a["shared_name"], a["key_dtype"], a["value_dtype"], tuple(a.get("value_shape", ())),
            np.asarray(empty_key), np.asarray(deleted_key), int(a["initial_num_buckets"]), op))
        t.check_compatible(a["key_dtype"], a["value_dtype"], op)
        return t
    return make


def _mutable(table: Any, what: str, op: Any) -> Any:
    t = _table(table)
    if isinstance(t, LookupTableResource):
        raise UnimplementedError(f"{what} is not supported by a static hash table (HashTable): use "
                                 "MutableHashTable or MutableDenseHashTable", op)
    return t


@register_kernel("LookupTableInsertV2")
def _insert(op: Any, ctx: KernelContext) -> Any:
    return lambda table, keys, values: _mutable(table, "insert", op).insert(keys, values, op)


@register_kernel("LookupTableRemoveV2")
def _remove(op: Any, ctx: KernelContext) -> Any:
    return lambda table, keys: _mutable(table, "remove", op).remove(keys, op)


@register_kernel("LookupTableImportV2")
def _import(op: Any, ctx: KernelContext) -> Any:
    return lambda table, keys, values: _mutable(table, "import", op).import_values(keys, values, op)


@register_kernel("LookupTableExportV2")
def _export(op: Any, ctx: KernelContext) -> Any:
    return lambda table: _mutable(table, "export", op).export()
