"""tf.data.experimental.CsvDataset and make_csv_dataset (TF 1.15's CSV readers).

CsvDataset's records follow TF's CSV rules: records end at "\n" (or "\r\n", or the file's
end); with `use_quote_delim` a field that starts with a double quote is quoted (it may hold
the delimiter, newlines and `""` for one quote, and must be followed by the delimiter or
the record's end); an unquoted field may not hold a quote.  An empty field or one equal to
`na_value` takes its column's default; a column whose default is a dtype (or an empty
vector) is required.  Integers and floats are read as TF's safe_strto* (surrounding spaces
allowed, a leading sign, no hex or underscores).  Errors are TF's InvalidArgumentError at
the get_next that reaches the record.

make_csv_dataset builds TF 1.15's pipeline on it: files sorted, column names from the
header, column types inferred from the first rows (int32 -> int64 -> float32 -> float64 ->
string) with defaults 0 / "", shuffled files interleaved, shuffle and repeat, batch
(drop_remainder when num_epochs is None), features as an OrderedDict (label apart).
"""
from __future__ import annotations

import collections
import csv
import glob
import gzip
import io
import os
import re
import zlib
from typing import Any, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, NotFoundError
from ..graph import graph as _g
from .dataset import Dataset, _Batch, _Map, _Repeat, _Shuffle
from .dataset_core import Element, IterationContext, TensorSpec
from .dataset_more import _Interleave

__all__ = ["CsvDataset", "make_csv_dataset"]

_TYPES = (_dt.int32, _dt.int64, _dt.float32, _dt.float64, _dt.string)
_INT = re.compile(r"^\s*[+-]?\d+\s*$")
_FLOAT = re.compile(r"^\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)\s*$", re.IGNORECASE)


# -- parsing ---------------------------------------------------------------------------------------------

def _records(text: str, delim: str, quotes: bool) -> Iterator[List[Tuple[str, bool]]]:
    """The records of a file's text: lists of (field, was_quoted)."""
    n, pos, rec = len(text), 0, 0
    while pos < n:
        fields: List[Tuple[str, bool]] = []
        while True:
            if quotes and pos < n and text[pos] == '"':
                parts, pos = [], pos + 1
                while True:
                    q = text.find('"', pos)
                    if q < 0:
                        raise InvalidArgumentError(f"Reached end of file without closing quoted field in record {rec}")
                    parts.append(text[pos:q])
                    if q + 1 < n and text[q + 1] == '"':
                        parts.append('"')
                        pos = q + 2
                        continue
                    pos = q + 1
                    break
                if pos < n and text[pos] not in (delim, "\n") and text[pos:pos + 2] != "\r\n":
                    raise InvalidArgumentError(f"Quote inside a string has to be escaped by another quote in record "
                                               f"{rec}")
                fields.append(("".join(parts), True))
            else:
                d, nl = text.find(delim, pos), text.find("\n", pos)
                end = min(d if d >= 0 else n, nl if nl >= 0 else n)
                field = text[pos:end]
                if end < n and text[end] == "\n" and field.endswith("\r"):
                    field = field[:-1]
                if quotes and '"' in field:
                    raise InvalidArgumentError(f"Unquoted fields cannot have quotes inside in record {rec}")
                fields.append((field, False))
                pos = end
            if pos < n and text[pos] == delim:
                pos += 1
                continue
            if text[pos:pos + 2] == "\r\n":
                pos += 2
            elif pos < n:
                pos += 1  # the "\n"
            break
        yield fields
        rec += 1


def _parse(field: str, dtype: Any, col: int, rec: int) -> np.ndarray:
    if dtype in (_dt.int32, _dt.int64):
        v = int(field) if _INT.match(field) else None
        lim = 1 << (31 if dtype == _dt.int32 else 63)
        if v is None or not -lim <= v < lim:
            raise InvalidArgumentError(f"Field {col} in record {rec} is not a valid {dtype.name}: {field}")
        return np.array(v, dtype=dtype.np)
    if dtype in (_dt.float32, _dt.float64):
        if not _FLOAT.match(field):
            raise InvalidArgumentError(f"Field {col} in record {rec} is not a valid {dtype.name}: {field}")
        return np.array(float(field.strip()), dtype=dtype.np)
    return np.array(field, dtype=object)


def _file_text(path: str, kind: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise NotFoundError(f"CsvDataset: cannot read {path}: {e.strerror or e}") from None
    if kind == "GZIP":
        data = gzip.decompress(data)
    elif kind == "ZLIB":
        data = zlib.decompress(data)
    return data.decode("utf-8", "surrogateescape")


def _default_spec(d: Any) -> Tuple[Any, Any]:
    """(dtype, default: an array, a Tensor, or None when the column is required)."""
    if isinstance(d, _dt.DType) or (isinstance(d, type) and issubclass(d, np.generic)):
        return _dt.as_dtype(d), None
    if isinstance(d, _g.Tensor):
        r = d.shape.rank
        if r is not None and (r > 1 or (r == 1 and d.shape.dims[0] not in (None, 0, 1))):
            raise ValueError("Shape of a default must be a length-0 or length-1 vector, or a scalar.")
        return d.dtype, d
    a = np.asarray(d)
    if isinstance(d, np.ndarray) and a.dtype.kind in "iuf" and a.size:  # a typed array keeps its dtype
        return _dt.as_dtype(a.dtype), np.array(a.reshape(-1)[0])
    if a.ndim > 1 or a.size > 1:
        raise ValueError("Shape of a default must be a length-0 or length-1 vector, or a scalar.")
    if a.dtype.kind in "US" or a.dtype == object:
        v = a.reshape(-1)[0] if a.size else None
        v = v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v
        return _dt.string, (None if v is None else np.array(str(v), dtype=object))
    if a.size == 0:
        return _dt.float32, None
    v = a.reshape(-1)[0]
    dtype = _dt.int32 if a.dtype.kind in "iu" else _dt.float32 if a.dtype.kind == "f" else None
    if dtype is None:
        raise TypeError(f"record_defaults: unsupported default {d!r}")
    return dtype, np.array(v, dtype=dtype.np)


class _Csv(Dataset):
    def __init__(self, filenames: Any, record_defaults: Sequence[Any], compression_type: Optional[str], header: bool,
                 field_delim: str, use_quote_delim: bool, na_value: str, select_cols: Optional[Sequence[int]]):
        from .record_datasets import _kind, _source
        self._kind = _kind(compression_type, "CsvDataset")
        self._files = _source(filenames)
        if not record_defaults:
            raise InvalidArgumentError("record_defaults must not be empty")
        self._defaults = [_default_spec(d) for d in record_defaults]
        for t, _ in self._defaults:
            if t not in _TYPES:
                raise InvalidArgumentError(f"CsvDataset: unsupported column type {t.name} (int32, int64, float32, "
                                           f"float64 or string)")
        if not isinstance(field_delim, str) or len(field_delim) != 1:
            raise InvalidArgumentError("field_delim should be only 1 char")
        self._header, self._delim, self._quotes = bool(header), field_delim, bool(use_quote_delim)
        self._na = na_value.decode() if isinstance(na_value, bytes) else str(na_value)
        self._select = None if select_cols is None else [int(c) for c in select_cols]
        caps = [t for t in [self._files] + [d for _, d in self._defaults] if isinstance(t, _g.Tensor)]
        super().__init__(tuple(TensorSpec((), t) for t, _ in self._defaults), captures=caps)

    def _default_values(self, ctx: IterationContext) -> List[Optional[np.ndarray]]:
        out = []
        for t, d in self._defaults:
            if d is None:
                out.append(None)
                continue
            a = np.asarray(ctx.value(d))
            if a.ndim > 1 or a.size > 1:
                raise InvalidArgumentError("Shape of a default must be a length-0 or length-1 vector, or a scalar.")
            out.append(None if a.size == 0 else np.asarray(a.reshape(-1)[0], dtype=t.np))
        return out

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        from .record_datasets import _paths
        defaults = self._default_values(ctx)
        cols = self._select if self._select is not None else list(range(len(defaults)))
        if self._select is not None:
            if len(cols) != len(defaults):
                raise InvalidArgumentError(f"Expect {len(defaults)} select_cols, got {len(cols)}")
            if any(c < 0 for c in cols) or any(b <= a for a, b in zip(cols, cols[1:])):
                raise InvalidArgumentError("select_cols is not sorted in ascending order or has duplicates "
                                           "or negative values")
        want = {c: k for k, c in enumerate(cols)}
        for path in _paths(ctx.value(self._files)):
            recs = _records(_file_text(path, self._kind), self._delim, self._quotes)
            for rec, fields in enumerate(recs):
                if self._header and rec == 0:
                    continue
                if self._select is None and len(fields) != len(defaults):
                    raise InvalidArgumentError(f"Expect {len(defaults)} fields but have {len(fields)} in record {rec}")
                if self._select is not None and len(fields) <= cols[-1]:
                    raise InvalidArgumentError(f"Expect {cols[-1] + 1} fields but have {len(fields)} in record {rec}")
                out: List[np.ndarray] = [None] * len(cols)  # type: ignore[list-item]
                for c, k in want.items():
                    text, _ = fields[c]
                    t = self._defaults[k][0]
                    if text == "" or text == self._na:
                        if defaults[k] is None:
                            raise InvalidArgumentError(f"Field {c} is required but missing in record {rec}!")
                        out[k] = defaults[k]
                    else:
                        out[k] = _parse(text, t, c, rec)
                yield tuple(out)

    def _describe(self) -> str:
        files = self._files.name if isinstance(self._files, _g.Tensor) else repr(list(self._files))
        return f"csv({files},{[t.name for t, _ in self._defaults]},{self._header},{self._delim!r},{self._select})"


def CsvDataset(filenames: Any, record_defaults: Sequence[Any], compression_type: Optional[str] = None,  # noqa: N802
               buffer_size: Optional[int] = None, header: bool = False, field_delim: str = ",",
               use_quote_delim: bool = True, na_value: str = "",
               select_cols: Optional[Sequence[int]] = None) -> Dataset:
    """The records of CSV files as tuples of scalars, one per column of `record_defaults`
    (tf.data.experimental.CsvDataset).  record_defaults: per column a default value (a
    scalar or 1-element list/tensor: int -> int32, float -> float32, str -> string) or a
    dtype (or an empty vector) for a required column; select_cols: the indices (ascending)
    of the columns read; header: skip each file's first record; buffer_size accepted."""
    return _Csv(filenames, record_defaults, compression_type, header, field_delim, use_quote_delim, na_value,
                select_cols)


# -- make_csv_dataset -------------------------------------------------------------------------------------

def _file_names(file_pattern: Any) -> List[str]:
    pats = [file_pattern] if isinstance(file_pattern, (str, bytes, os.PathLike)) else list(file_pattern)
    names: List[str] = []
    for p in pats:
        p = os.fsdecode(os.fspath(p))
        names.extend(glob.glob(p) if glob.has_magic(p) else ([p] if os.path.exists(p) else []))
    if not names:
        raise ValueError(f"No files match {file_pattern}.")
    return sorted(names)


def _csv_rows(names: List[str], delim: str, quotes: bool, header: bool, kind: str) -> Iterator[List[str]]:
    for name in names:
        reader = csv.reader(io.StringIO(_file_text(name, kind), newline=""), delimiter=delim,
                            quoting=csv.QUOTE_MINIMAL if quotes else csv.QUOTE_NONE)
        if header:
            next(reader, None)
        yield from reader


def _valid_int(s: str, bits: int) -> bool:
    try:
        v = int(s)
    except ValueError:
        return False
    return -(1 << (bits - 1)) <= v < (1 << (bits - 1))


def _valid_float(s: str, np_type: Any) -> bool:
    try:
        with np.errstate(over="ignore"):
            return not np.isinf(np_type(s)) or "inf" in s.lower()
    except (ValueError, OverflowError):
        return False


def _infer_type(s: str, na_value: str, prev: Any) -> Any:
    """TF 1.15's lattice: the first of int32, int64, float32, float64, string that parses
    the value and is not below the type so far."""
    if s in ("", na_value):
        return prev
    checks = [lambda v: _valid_int(v, 32), lambda v: _valid_int(v, 64), lambda v: _valid_float(v, np.float32),
              lambda v: _valid_float(v, np.float64), lambda v: True]
    for i, (t, ok) in enumerate(zip(_TYPES, checks)):
        if ok(s) and (prev is None or prev in _TYPES[:i + 1]):
            return t
    return _dt.string


def _sorted_indices(select_columns: Sequence[Any], names: List[str]) -> List[int]:
    out = []
    for c in select_columns:
        if isinstance(c, (int, np.integer)) and not isinstance(c, bool):
            if not 0 <= int(c) < len(names):
                raise ValueError("Column index %d specified in select_columns out of bounds." % int(c))
            out.append(int(c))
        elif c in names:
            out.append(names.index(c))
        else:
            raise ValueError(f"Value '{c}' specified in select_columns not a valid column index or name.")
    if len(set(out)) != len(out):
        raise ValueError("select_columns contains duplicate columns")
    return sorted(out)


def make_csv_dataset(file_pattern: Any, batch_size: int, column_names: Optional[List[str]] = None,
                     column_defaults: Optional[List[Any]] = None, label_name: Optional[str] = None,
                     select_columns: Optional[List[Any]] = None, field_delim: str = ",", use_quote_delim: bool = True,
                     na_value: str = "", header: bool = True, num_epochs: Optional[int] = None, shuffle: bool = True,
                     shuffle_buffer_size: int = 10000, shuffle_seed: Optional[int] = None,
                     prefetch_buffer_size: Any = None, num_parallel_reads: int = 1, sloppy: bool = False,
                     num_rows_for_inference: int = 100, compression_type: Optional[str] = None,
                     ignore_errors: bool = False) -> Dataset:
    """Batches of (features, label) (or features) read from CSV files, as TF 1.15's
    make_csv_dataset: features an OrderedDict by column name of [batch] tensors."""
    from .record_datasets import _kind
    kind = _kind(compression_type, "make_csv_dataset")
    names = _file_names(file_pattern)
    if column_names is None:
        if not header:
            raise ValueError("Cannot infer column names without a header line.")
        column_names = next(_csv_rows(names[:1], field_delim, use_quote_delim, False, kind), [])
    column_names = list(column_names)
    if len(set(column_names)) != len(column_names):
        raise ValueError("Cannot have duplicate column names.")
    cols = None if select_columns is None else _sorted_indices(select_columns, column_names)
    if column_defaults is not None:
        column_defaults = [d if isinstance(d, (_dt.DType, _g.Tensor)) or isinstance(d, (list, tuple))
                           else [d] for d in column_defaults]
    else:
        picked = cols if cols is not None else list(range(len(column_names)))
        types: List[Any] = [None] * len(picked)
        for i, row in enumerate(_csv_rows(names, field_delim, use_quote_delim, header, kind)):
            if num_rows_for_inference is not None and i >= num_rows_for_inference:
                break
            if len(row) != len(column_names):
                raise ValueError("Problem inferring types: CSV row has different number of fields than expected.")
            for j, c in enumerate(picked):
                types[j] = _infer_type(row[c], na_value, types[j])
        column_defaults = [[""] if (t or _dt.string) == _dt.string else np.array([0], dtype=t.np) for t in types]
    if cols is not None and len(column_defaults) != len(cols):
        raise ValueError("If specified, column_defaults and select_columns must have same length.")
    if cols is not None and len(column_names) > len(cols):
        column_names = [column_names[i] for i in cols]
    if len(column_names) != len(column_defaults):
        raise ValueError("column_names and column_defaults must have the same length.")
    if label_name is not None and label_name not in column_names:
        raise ValueError("`label_name` provided must be one of the columns.")

    def per_file(filename: Any) -> Dataset:
        ds = _Csv(filename, column_defaults, compression_type, header, field_delim, use_quote_delim, na_value, cols)
        if ignore_errors:
            from .dataset_experimental import _IgnoreErrors
            ds = _IgnoreErrors(ds)
        return ds

    def to_features(*columns: Any) -> Any:
        features = collections.OrderedDict(zip(column_names, columns))
        if label_name is not None:
            label = features.pop(label_name)
            return features, label
        return features

    ds: Dataset = Dataset.from_tensor_slices(np.array(names, dtype=object))
    if shuffle:
        ds = _Shuffle(ds, len(names), shuffle_seed, True)
    ds = _Interleave(ds, per_file, num_parallel_reads, 1)
    if num_epochs != 1 and shuffle:
        ds = _Repeat(_Shuffle(ds, shuffle_buffer_size, shuffle_seed, True), num_epochs)
    elif num_epochs != 1:
        ds = _Repeat(ds, num_epochs)
    elif shuffle:
        ds = _Shuffle(ds, shuffle_buffer_size, shuffle_seed, True)
    ds = _Batch(ds, batch_size, drop_remainder=num_epochs is None)
    return _Map(ds, to_features)
