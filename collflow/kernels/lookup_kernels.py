"""The lookup-table resource and the kernels of graph/ops/lookup_ops.py, on the host.

A table is a dict from keys (Python str or int) to values (Python scalars), None until an
initializer runs.  Initializing again does nothing (the first entries stay), as in TF 2.x
(TF 1.x raised "Table already initialized."); lookups before the first initialization raise
FailedPreconditionError("Table not initialized.").
"""
from __future__ import annotations

import importlib
import re
import threading
from typing import Any, Dict, List, Optional

import numpy as np

from .. import dtypes as _dt
from ..errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from .registry import KernelContext, register_kernel
from .text_kernels import _text

__all__ = ["LookupTableResource"]

_INT = re.compile(r"\s*[-+]?\d+\s*\Z")


class SharedTable:
    """A table resource found by its shared name: a second op naming it must agree on its dtypes."""

    name: str
    key_dtype: _dt.DType
    value_dtype: _dt.DType

    def check_compatible(self, key_dtype: _dt.DType, value_dtype: _dt.DType, op: Any) -> None:
        """A second table op with this shared_name must describe the same table."""
        if key_dtype != self.key_dtype or value_dtype != self.value_dtype:
            raise InvalidArgumentError(
                f"shared table {self.name!r} exists with dtypes ({self.key_dtype.name}, {self.value_dtype.name}); "
                f"this op asks for ({key_dtype.name}, {value_dtype.name})", op)


class LookupTableResource(SharedTable):
    """One static hash table of a Session."""

    def __init__(self, name: str, key_dtype: _dt.DType, value_dtype: _dt.DType):
        self.name = name
        self.key_dtype = key_dtype
        self.value_dtype = value_dtype
        self.data: Optional[Dict[Any, Any]] = None
        self.lock = threading.Lock()

    def fill(self, keys: List[Any], values: List[Any], op: Any) -> None:
        """Initializes the table with keys[i] -> values[i]."""
        d: Dict[Any, Any] = {}
        for k, v in zip(keys, values):
            old = d.setdefault(k, v)
            if old is not v and old != v:
                raise FailedPreconditionError(
                    f"HashTable has different value for same key. Key {k} has {old} and trying to add value {v}", op)
        with self.lock:
            if self.data is None:  # TF (2.21) ignores a second initialization, whatever its data
                self.data = d

    def find(self, keys: Any, default: Any, op: Any) -> np.ndarray:
        d = self.data
        if d is None:
            raise FailedPreconditionError("Table not initialized.", op)
        k = np.asarray(keys)
        flat = k.reshape(-1).tolist()
        get = d.get
        out = np.empty(len(flat), dtype=self.value_dtype.np)
        out[:] = [get(x, default) for x in flat]  # assigning a list: strings stay Python str
        return out.reshape(k.shape)


def _table(h: Any) -> LookupTableResource:
    """The table a handle value names (a dataset function gets it fed, as a 0-d object array)."""
    return h.item() if isinstance(h, np.ndarray) else h


def _py(a: Any, dtype: _dt.DType) -> List[Any]:
    """A flat array's entries as the Python values that serve as dict keys and values."""
    flat = np.asarray(a).reshape(-1)
    if dtype == _dt.string:
        return [str(x) for x in flat.tolist()]
    return flat.astype(dtype.np, copy=False).tolist()


@register_kernel("HashTableV2")
def _hash_table(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    t = ctx.resources.get_or_create(
        "table", a["shared_name"], lambda: LookupTableResource(a["shared_name"], a["key_dtype"], a["value_dtype"]))
    t.check_compatible(a["key_dtype"], a["value_dtype"], op)
    return lambda: t


@register_kernel("InitializeTableV2")
def _initialize_table(op: Any, ctx: KernelContext) -> Any:
    def init(table: Any, keys: Any, values: Any) -> None:
        table = _table(table)
        keys, values = np.asarray(keys), np.asarray(values)
        if keys.shape != values.shape:
            raise InvalidArgumentError(f"Expected shape {list(keys.shape)} for value, got {list(values.shape)}", op)
        if keys.ndim != 1:
            raise InvalidArgumentError(f"Keys must be a vector, but received shape {list(keys.shape)}", op)
        table.fill(_py(keys, table.key_dtype), _py(values, table.value_dtype), op)
    return init


def _field(token: str, dtype: _dt.DType, line_no: int, op: Any) -> Any:
    """A column (or line) of a vocabulary file as a value of `dtype`, as TF parses it."""
    if dtype == _dt.string:
        return token
    if dtype.is_integer:
        if not _INT.match(token):
            raise InvalidArgumentError(f"Field {token} in line {line_no} is not a valid {dtype.name}.", op)
        v = int(token)
        info = np.iinfo(dtype.np)
        if not info.min <= v <= info.max:
            raise InvalidArgumentError(f"Field {token} in line {line_no} is not a valid {dtype.name}.", op)
        return v
    if dtype.is_floating:
        try:
            return float(np.asarray(token.strip(), dtype=dtype.np))
        except ValueError:
            raise InvalidArgumentError(f"Field {token} in line {line_no} is not a valid {dtype.name}.", op) from None
    raise InvalidArgumentError(f"unsupported dtype {dtype.name} in a text file table", op)


@register_kernel("InitializeTableFromTextFileV2")
def _initialize_from_text_file(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    ki, vi, size, delim, offset = a["key_index"], a["value_index"], a["vocab_size"], a["delimiter"], a["offset"]
    want = max(ki, vi)

    def init(table: Any, filename: Any) -> None:
        table = _table(table)
        path = str(np.asarray(filename).reshape(()).item())
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise NotFoundError(f"{path}; No such file or directory", op) from None
        keys: List[Any] = []
        values: List[Any] = []
        pos = 0
        for n, line in enumerate(raw.split(b"\n")):
            if size >= 0 and n >= size:
                break
            pos += len(line) + 1
            if pos > len(raw) and not line:
                break  # what follows the file's last newline
            if line.endswith(b"\r"):  # CRLF files: TF's line reader drops the "\r" too
                line = line[:-1]
            if not line:
                raise InvalidArgumentError(f"Invalid content in {path}: empty line found at position {pos}.", op)
            text = _text(line)
            cols = text.split(delim) if want >= 0 else []
            if want >= len(cols):
                raise InvalidArgumentError(f"Invalid number of columns in {path} line {n} ({text}) : expected "
                                           f"at least {want + 1} got {len(cols)}", op)

            def part(idx: int, dtype: _dt.DType, extra: int) -> Any:
                if idx == -1:
                    return n + extra
                return _field(text if idx == -2 else cols[idx], dtype, n, op)
            keys.append(part(ki, table.key_dtype, 0))
            values.append(part(vi, table.value_dtype, offset))
        if size >= 0 and len(keys) < size:
            raise InvalidArgumentError(f"Invalid vocab_size in {path}: expected {size} but got {len(keys)}", op)
        table.fill(keys, values, op)
    return init


@register_kernel("LookupTableFindV2")
def _lookup_find(op: Any, ctx: KernelContext) -> Any:
    def find(table: Any, keys: Any, default: Any) -> Any:
        table = _table(table)
        if not isinstance(table, LookupTableResource):  # a mutable table checks its own arguments
            return table.find(keys, default, op)
        d = np.asarray(default)
        if d.shape != ():
            raise InvalidArgumentError(f"default_value must be a scalar, got shape {list(d.shape)}", op)
        dv = d.item() if d.dtype != object else str(d.item())
        if table.key_dtype == _dt.string:
            return table.find(keys, dv, op)
        return table.find(np.asarray(keys).astype(np.int64, copy=False), dv, op)
    return find


@register_kernel("LookupTableSizeV2")
def _lookup_size(op: Any, ctx: KernelContext) -> Any:
    def size(table: Any) -> Any:
        t = _table(table)
        if not isinstance(t, LookupTableResource):
            return np.int64(t.size())
        return np.int64(0 if t.data is None else len(t.data))
    return size


# the mutable tables' kernels (LookupTableFindV2 and LookupTableSizeV2 above serve them too)
importlib.import_module(__package__ + ".mutable_lookup_kernels")
