"""Kernels of the string parsing ops (graph/ops/string_ops.py), on the host."""
from __future__ import annotations

import csv
from typing import Any, List

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from .registry import register_kernel, KernelContext


def _convert(text: str, dt: _dt.DType) -> Any:
    """text as TF's string-to-number conversions read it (C's strtod / strtol): ASCII digits
    only (Python's int and float also take "1_000" and other scripts' digits, TF does not),
    hexadecimal floats ("0x1.8p1") accepted for the float types."""
    if dt == _dt.string:
        return text
    s = text.strip()
    if not s.isascii() or "_" in s:
        raise ValueError(f"{text!r} is not a number")
    if dt in (_dt.int32, _dt.int64):
        v = int(s)
        info = np.iinfo(dt.np)
        if not info.min <= v <= info.max:
            raise ValueError(f"{v} is out of range for {dt.name}")
        return v
    if s.lstrip("+-")[:2].lower() == "0x":
        return float.fromhex(s)
    return float(s)


@register_kernel("DecodeCSV")
def _decode_csv(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    types = a["out_types"]
    delim, quoted, na, select = a["field_delim"], a["use_quote_delim"], a["na_value"], a["select_cols"]
    kw = dict(delimiter=delim, quotechar='"', doublequote=True) if quoted else dict(delimiter=delim,
                                                                                   quoting=csv.QUOTE_NONE)

    def decode_csv(records: Any, *defaults: Any) -> tuple:
        recs = np.asarray(records, dtype=object)
        flat = recs.ravel()
        outs: List[np.ndarray] = [np.empty(flat.shape, dtype=dt.np) for dt in types]
        dflt = [np.asarray(d).ravel() for d in defaults]
        for r, rec in enumerate(flat):
            line = rec.decode() if isinstance(rec, bytes) else str(rec)
            try:
                fields = next(csv.reader([line], **kw)) if line != "" else [""]
            except csv.Error as e:
                raise InvalidArgumentError(f"decode_csv: record {r} ({line!r}) is not valid CSV: {e}", op) from None
            if select is not None:
                if select and select[-1] >= len(fields):
                    raise InvalidArgumentError(f"decode_csv: record {r} has {len(fields)} fields, select_cols asks "
                                               f"for column {select[-1]}", op)
                fields = [fields[c] for c in select]
            if len(fields) != len(types):
                raise InvalidArgumentError(f"decode_csv: expect {len(types)} fields but have {len(fields)} in record "
                                           f"{r} ({line!r})", op)
            for c, (f, dt) in enumerate(zip(fields, types)):
                if f == "" or f == na:
                    if dflt[c].size == 0:
                        raise InvalidArgumentError(f"decode_csv: field {c} is required but missing in record {r} "
                                                   f"({line!r})", op)
                    outs[c][r] = dflt[c][0]
                    continue
                try:
                    outs[c][r] = _convert(f, dt)
                except ValueError:
                    raise InvalidArgumentError(f"decode_csv: field {c} in record {r} is not a valid {dt.name}: "
                                               f"{f!r}", op) from None
        cols = tuple(o.reshape(recs.shape) for o in outs)
        return cols if len(cols) > 1 else cols[0]  # one output: the array itself, not a 1-tuple
    return decode_csv


@register_kernel("StringToNumber")
def _string_to_number(op: Any, ctx: KernelContext) -> Any:
    dt = op.attrs["out_type"]

    def string_to_number(x: Any) -> Any:
        arr = np.asarray(x, dtype=object)
        out = np.empty(arr.shape, dtype=dt.np)
        flat, of = arr.ravel(), out.reshape(-1)
        for i, v in enumerate(flat):
            s = v.decode() if isinstance(v, bytes) else str(v)
            try:
                of[i] = _convert(s, dt)
            except ValueError:
                raise InvalidArgumentError(f"string_to_number could not correctly convert string: {s!r} to "
                                           f"{dt.name}", op) from None
        return out
    return string_to_number
