"""tf.data.experimental.SqlDataset: the rows of a SQLite query as tuples of scalars.

As TF's sqlite driver: each column is read as its output type asks (SQLite's own
conversions, done here by CAST: text to a number by its numeric prefix, a real to an integer
by truncation, NULL as 0 / 0.0 / ""), narrower integers wrapped, bool as the integer != 0;
the types TF's driver reads: string, int8/16/32/64, uint8/16, bool, float64.  SQLite's
errors (no such table, column) are UnknownError, a column count that differs from
output_types InvalidArgumentError, at the first get_next.
"""
from __future__ import annotations

import sqlite3
from typing import Any, Iterator

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, UnknownError
from ..graph import graph as _g
from ..graph import nest
from .dataset import Dataset
from .dataset_core import Element, IterationContext, TensorSpec, _normalize_structure

__all__ = ["SqlDataset"]

_INTS = (_dt.int8, _dt.int16, _dt.int32, _dt.int64, _dt.uint8, _dt.uint16)


def _text(v: Any) -> str:
    if isinstance(v, np.ndarray):
        v = v.item()
    return v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v)


class _Sql(Dataset):
    def __init__(self, driver_name: Any, data_source_name: Any, query: Any, output_types: Any):
        types = _normalize_structure(output_types)
        flat = [_dt.as_dtype(t) for t in nest.flatten(types)]
        self._args = [driver_name, data_source_name, query]
        self._types = flat
        structure = nest.pack_sequence_as(types, [TensorSpec((), t) for t in flat])
        super().__init__(structure, captures=[a for a in self._args if isinstance(a, _g.Tensor)])

    def _convert(self, conn: sqlite3.Connection, v: Any, t: Any) -> np.ndarray:
        if t == _dt.string:
            (x,), = conn.execute("SELECT CAST(? AS TEXT)", (v,)).fetchall()
            return np.array("" if x is None else x, dtype=object)
        if t == _dt.float64:
            (x,), = conn.execute("SELECT CAST(? AS REAL)", (v,)).fetchall()
            return np.array(0.0 if x is None else x, dtype=np.float64)
        (x,), = conn.execute("SELECT CAST(? AS INTEGER)", (v,)).fetchall()
        x = 0 if x is None else int(x)
        if t == _dt.bool_:
            return np.array(x != 0)
        bits = np.dtype(t.np).itemsize * 8
        x &= (1 << bits) - 1  # a C cast: wrapped to the type's width
        if np.issubdtype(t.np, np.signedinteger):
            x = x - (1 << bits) if x >= 1 << (bits - 1) else x
        return np.array(x, dtype=t.np)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        driver, source, query = (_text(ctx.value(a)) for a in self._args)
        if driver != "sqlite":
            raise InvalidArgumentError(f"The database type, {driver}, is not supported by SqlDataset. The set of "
                                       f"supported databases is: {{'sqlite'}}.")
        for t in self._types:
            if t not in _INTS + (_dt.string, _dt.bool_, _dt.float64):
                raise InvalidArgumentError(f"SqlDataset: output type {t.name} is not supported (string, int8, int16, "
                                           f"int32, int64, uint8, uint16, bool, float64)")
        try:
            conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
            cur = conn.execute(query)
        except sqlite3.Error as e:
            raise UnknownError(f"Prepare() failed: {e}: {query}") from None
        try:
            ncols = len(cur.description or ())
            if ncols != len(self._types):
                raise InvalidArgumentError(f"The number of columns in query ({ncols}) must match the number of "
                                           f"elements in output_types ({len(self._types)}).")
            for row in cur:
                yield tuple(self._convert(conn, v, t) for v, t in zip(row, self._types))
        finally:
            conn.close()

    def _describe(self) -> str:
        return f"sql({[a.name if isinstance(a, _g.Tensor) else a for a in self._args]},{[t.name for t in self._types]})"


def SqlDataset(driver_name: Any, data_source_name: Any, query: Any, output_types: Any) -> Dataset:  # noqa: N802
    """The rows of `query` run on the SQLite database `data_source_name` (driver_name "sqlite"),
    each a tuple of scalars of `output_types`."""
    return _Sql(driver_name, data_source_name, query, output_types)
