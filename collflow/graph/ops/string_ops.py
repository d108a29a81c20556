"""String parsing for text input pipelines (TensorFlow 1.x): `tf.decode_csv`,
`tf.string_to_number`, and `tf.sequence_mask` (lengths to masks, beside them in NLP code).

The parsing ops run on the host (strings have no device representation); their kernels are
kernels/string_kernels.py.  collflow's strings are Python str (docs/tf1_compat.md).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_op
from . import array_ops as _a
from . import math_ops as _m
from .misc_ops import range as _range
from .op_util import make_op, single, tf_keywords

__all__ = ["decode_csv", "string_to_number", "sequence_mask"]

_CSV_TYPES = (_dt.float32, _dt.float64, _dt.int32, _dt.int64, _dt.string)


def _decode_csv_spec(op: _g.Operation) -> list:
    rec = op.inputs[0]
    if rec.dtype != _dt.string:
        raise ValueError(f"decode_csv needs string records, got {rec.dtype.name}")
    out = []
    for k, (d, t) in enumerate(zip(op.attrs["out_types"], op.inputs[1:])):
        if t.dtype != d:
            raise ValueError(f"record_defaults[{k}] has dtype {t.dtype.name}, the column {d.name}")
        if t.shape.rank not in (None, 0, 1) or (t.shape.rank == 1 and t.shape.dims[0] not in (None, 0, 1)):
            raise ValueError(f"record_defaults[{k}] must be a scalar, or a list of one value or none, got shape "
                             f"{t.shape}")
        out.append((d, rec.shape))
    return out


def _string_to_number_spec(op: _g.Operation) -> list:
    if op.inputs[0].dtype != _dt.string:
        raise ValueError(f"string_to_number needs strings, got {op.inputs[0].dtype.name}")
    return [(op.attrs["out_type"], op.inputs[0].shape)]


register_op("DecodeCSV", _decode_csv_spec, host_only=True)
register_op("StringToNumber", _string_to_number_spec, host_only=True)
not_differentiable("DecodeCSV", "StringToNumber")


def decode_csv(records: Any, record_defaults: Sequence[Any], field_delim: str = ",", use_quote_delim: bool = True,
               name: Optional[str] = None, na_value: str = "", select_cols: Optional[Sequence[int]] = None
               ) -> List[_g.Tensor]:
    """One tensor per column of CSV `records` (a string tensor of any shape): each of the
    records' shape, typed and defaulted by `record_defaults` (a value, or [] for a required
    column; float32/float64/int32/int64/string).  Quoted fields ("a,b", "" for a quote) when
    use_quote_delim; a field equal to na_value counts as empty; select_cols picks columns."""
    if len(field_delim) != 1:
        raise InvalidArgumentError(f"decode_csv: field_delim must be one character, got {field_delim!r}")
    defaults, types = [], []
    for k, d in enumerate(record_defaults):
        t = d if isinstance(d, _g.Tensor) else None
        if t is None:
            arr = np.asarray(d)
            if arr.size == 0:
                raise InvalidArgumentError(f"decode_csv: record_defaults[{k}] is empty without a dtype; give a "
                                           "constant of the column's dtype (e.g. tf.constant([], tf.float32))")
            t = _g.convert_to_tensor(d)
        if t.dtype not in _CSV_TYPES:
            raise InvalidArgumentError(f"decode_csv: record_defaults[{k}] has dtype {t.dtype.name}; columns are "
                                       "float32, float64, int32, int64 or string")
        defaults.append(t)
        types.append(t.dtype)
    if select_cols is not None:
        cols = [int(c) for c in select_cols]
        if cols != sorted(set(cols)) or (cols and cols[0] < 0):
            raise InvalidArgumentError(f"decode_csv: select_cols must be increasing and non-negative, got {cols}")
        if len(cols) != len(defaults):
            raise InvalidArgumentError(f"decode_csv: {len(cols)} select_cols but {len(defaults)} record_defaults")
    op = make_op("DecodeCSV", [_g.convert_to_tensor(records, dtype=_dt.string)] + defaults,
                 {"out_types": tuple(types), "field_delim": field_delim, "use_quote_delim": bool(use_quote_delim),
                  "na_value": str(na_value), "select_cols": None if select_cols is None else tuple(cols)},
                 name=name or "DecodeCSV")
    return list(op.outputs)


@tf_keywords(input="string_tensor")
def string_to_number(string_tensor: Any, out_type: Any = _dt.float32, name: Optional[str] = None) -> _g.Tensor:
    """Each string parsed as a number of out_type (float32, float64, int32, int64)."""
    dt = _dt.as_dtype(out_type)
    if dt not in _CSV_TYPES[:4]:
        raise InvalidArgumentError(f"string_to_number: out_type must be float32, float64, int32 or int64, "
                                   f"got {dt.name}")
    return single("StringToNumber", [_g.convert_to_tensor(string_tensor, dtype=_dt.string)], {"out_type": dt},
                  name=name or "StringToNumber")


def sequence_mask(lengths: Any, maxlen: Any = None, dtype: Any = _dt.bool_, name: Optional[str] = None) -> _g.Tensor:
    """mask[..., j] = j < lengths[...]: shape lengths.shape + [maxlen] (default: the longest)."""
    g = _g.get_default_graph()
    with g.name_scope(name or "SequenceMask"):
        n = _g.convert_to_tensor(lengths)
        if not (n.dtype.is_integer or n.dtype.is_floating):
            raise InvalidArgumentError(f"sequence_mask: lengths must be numbers, got {n.dtype.name}")
        # the longest length, at least 0 (the max of no lengths is the dtype's lowest value)
        m = _m.maximum(_m.reduce_max(n), _a.zeros([], n.dtype)) if maxlen is None else _g.convert_to_tensor(maxlen)
        if m.shape.rank not in (None, 0):
            raise ValueError(f"sequence_mask: maxlen must be a scalar, got shape {m.shape}")
        if m.dtype != n.dtype:  # TF compares in maxlen's dtype (float lengths truncate to an int maxlen's)
            n = _m.cast(n, m.dtype)
        steps = _range(_a.zeros([], m.dtype), m, _a.ones([], m.dtype))
        mask = _m.less(steps, _a.expand_dims(n, -1))
        dt = _dt.as_dtype(dtype)
        return mask if dt == _dt.bool_ else _m.cast(mask, dt)
