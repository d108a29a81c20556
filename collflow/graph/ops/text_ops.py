"""String ops of TF1 text pipelines: tf.string_join, tf.reduce_join, tf.substr, tf.regex_replace,
tf.string_strip, tf.string_split (a SparseTensor of tokens) and tf.strings.* (length, lower,
upper, regex_full_match, split, join, strip, substr, to_number).  Host kernels in
kernels/text_kernels.py.

collflow's strings are Python str; TF's byte semantics are kept where they show: lengths and
substrings count UTF-8 bytes unless unit="UTF8_CHAR", lower/upper change ASCII letters only
unless encoding="utf-8", strip removes ASCII whitespace.  Patterns are Python's `re` (RE2's
syntax for the common cases; `\\0` in a rewrite is the whole match, as RE2's).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape, broadcast_static
from ..sparse_tensor import SparseTensor
from .op_util import make_op, single

__all__ = ["string_join", "reduce_join", "substr", "regex_replace", "regex_full_match", "string_strip",
           "string_split", "string_length", "string_lower", "string_upper", "strings_split"]

_UNITS = ("BYTE", "UTF8_CHAR")


def _strings(x: Any, what: str) -> _g.Tensor:
    t = _g.convert_to_tensor(x, dtype=_dt.string) if not isinstance(x, _g.Tensor) else x
    if t.dtype != _dt.string:
        raise InvalidArgumentError(f"{what} needs strings, got {t.dtype.name}")
    return t


def _same(dt: Any) -> Any:
    return lambda op: [(dt if dt is not None else op.inputs[0].dtype, op.inputs[0].shape)]


def _join_spec(op: _g.Operation) -> list:
    shp = TensorShape([])
    for t in op.inputs:
        shp = broadcast_static(shp, t.shape)
    return [(_dt.string, shp)]


def _reduce_join_spec(op: _g.Operation) -> list:
    x, axes, keep = op.inputs[0], op.attrs["axis"], op.attrs["keep_dims"]
    if x.shape.rank is None:
        return [(_dt.string, TensorShape(None))]
    r = x.shape.rank
    ax = set(range(r)) if axes is None else {a % r for a in axes}
    dims = [1 if i in ax else d for i, d in enumerate(x.shape.dims)] if keep else \
        [d for i, d in enumerate(x.shape.dims) if i not in ax]
    return [(_dt.string, TensorShape(dims))]


def _substr_spec(op: _g.Operation) -> list:
    return [(_dt.string, broadcast_static(op.inputs[0].shape, broadcast_static(op.inputs[1].shape,
                                                                              op.inputs[2].shape)))]


def _split_spec(op: _g.Operation) -> list:
    return [(_dt.int64, TensorShape([None, 2])), (_dt.string, TensorShape([None])), (_dt.int64, TensorShape([2]))]


register_op("StringJoin", _join_spec, host_only=True)
register_op("ReduceJoin", _reduce_join_spec, host_only=True)
register_op("Substr", _substr_spec, host_only=True)
register_op("RegexReplace", _same(None), host_only=True)
register_op("RegexFullMatch", _same(_dt.bool_), host_only=True)
register_op("StringStrip", _same(None), host_only=True)
register_op("StringLength", _same(_dt.int32), host_only=True)
register_op("StringLower", _same(None), host_only=True)
register_op("StringUpper", _same(None), host_only=True)
register_op("StringSplit", _split_spec, host_only=True)
not_differentiable("StringJoin", "ReduceJoin", "Substr", "RegexReplace", "RegexFullMatch", "StringStrip",
                   "StringLength", "StringLower", "StringUpper", "StringSplit")


def _unit(unit: str) -> str:
    if unit not in _UNITS:
        raise InvalidArgumentError(f"unit must be one of {list(_UNITS)}, got {unit!r}")
    return unit


def string_join(inputs: Sequence[Any], separator: str = "", name: Optional[str] = None) -> _g.Tensor:
    """The strings joined elementwise with `separator` (scalars broadcast)."""
    ts = [_strings(t, "string_join") for t in inputs]
    if not ts:
        raise InvalidArgumentError("string_join needs at least one input")
    return single("StringJoin", ts, {"separator": str(separator)}, name=name or "StringJoin")


def reduce_join(inputs: Any, axis: Any = None, keep_dims: Optional[bool] = None, separator: str = "",
                name: Optional[str] = None, reduction_indices: Any = None, keepdims: Optional[bool] = None) -> _g.Tensor:
    """The strings joined along `axis` (all axes when None) in row-major order."""
    x = _strings(inputs, "reduce_join")
    ax = axis if axis is not None else reduction_indices
    axes = None if ax is None else tuple(int(a) for a in ([ax] if isinstance(ax, int) else ax))
    keep = bool(keepdims if keepdims is not None else keep_dims)
    return single("ReduceJoin", [x], {"axis": axes, "keep_dims": keep, "separator": str(separator)},
                  name=name or "ReduceJoin")


def substr(input: Any, pos: Any, len: Any, name: Optional[str] = None, unit: str = "BYTE") -> _g.Tensor:  # noqa: A002
    """input[pos:pos + len] elementwise (pos negative counts from the end); a pos beyond the
    string is InvalidArgumentError."""
    x = _strings(input, "substr")
    with x.graph.as_default():
        p = _g.convert_to_tensor(pos, dtype=_dt.int32) if not isinstance(pos, _g.Tensor) else pos
        n = _g.convert_to_tensor(len, dtype=p.dtype) if not isinstance(len, _g.Tensor) else len
    return single("Substr", [x, p, n], {"unit": _unit(unit)}, name=name or "Substr")


def regex_replace(input: Any, pattern: str, rewrite: str, replace_global: bool = True,  # noqa: A002
                  name: Optional[str] = None) -> _g.Tensor:
    """pattern's matches replaced by rewrite (every one, or the first with replace_global=False)."""
    return single("RegexReplace", [_strings(input, "regex_replace")],
                  {"pattern": str(pattern), "rewrite": str(rewrite), "replace_global": bool(replace_global)},
                  name=name or "RegexReplace")


def regex_full_match(input: Any, pattern: str, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """Whether each whole string matches pattern."""
    return single("RegexFullMatch", [_strings(input, "regex_full_match")], {"pattern": str(pattern)},
                  name=name or "RegexFullMatch")


def string_strip(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """Leading and trailing ASCII whitespace removed."""
    return single("StringStrip", [_strings(input, "string_strip")], name=name or "StringStrip")


def string_length(input: Any, name: Optional[str] = None, unit: str = "BYTE") -> _g.Tensor:  # noqa: A002
    """int32 lengths: UTF-8 bytes, or characters with unit="UTF8_CHAR"."""
    return single("StringLength", [_strings(input, "strings.length")], {"unit": _unit(unit)},
                  name=name or "StringLength")


def string_lower(input: Any, encoding: str = "", name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """Lower case: ASCII letters only, or every letter with encoding="utf-8"."""
    return single("StringLower", [_strings(input, "strings.lower")], {"encoding": str(encoding)},
                  name=name or "StringLower")


def string_upper(input: Any, encoding: str = "", name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """Upper case: ASCII letters only, or every letter with encoding="utf-8"."""
    return single("StringUpper", [_strings(input, "strings.upper")], {"encoding": str(encoding)},
                  name=name or "StringUpper")


def _split(x: Any, attrs: dict, name: str) -> SparseTensor:
    t = _strings(x, "string_split")
    if t.shape.rank not in (None, 1):
        raise InvalidArgumentError(f"string_split needs a 1-D tensor of strings, got shape {t.shape}")
    op = make_op("StringSplit", [t], attrs, name=name)
    return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


def string_split(source: Any, sep: Optional[str] = None, skip_empty: bool = True, delimiter: Optional[str] = None,
                 result_type: str = "SparseTensor", name: Optional[str] = None) -> SparseTensor:
    """Tokens of each string of the 1-D source as a SparseTensor [batch, max tokens]: split at
    every character of `delimiter` (default " "; "" splits into characters), empty tokens
    dropped with skip_empty.  With `sep`, split at each occurrence of sep (TF's v2 rule)."""
    if result_type != "SparseTensor":
        raise InvalidArgumentError("string_split: only result_type='SparseTensor' is supported (no RaggedTensor)")
    if sep is not None:  # strings.split's rule, empty tokens still dropped with skip_empty (as TF)
        if sep == "":
            raise InvalidArgumentError("string_split: sep must not be empty")
        return _split(source, {"mode": "sep", "delimiter": sep, "skip_empty": bool(skip_empty), "maxsplit": -1},
                      name or "StringSplit")
    d = " " if delimiter is None else str(delimiter)
    return _split(source, {"mode": "chars", "delimiter": d, "skip_empty": bool(skip_empty), "maxsplit": -1},
                  name or "StringSplit")


def strings_split(input: Any = None, sep: Optional[str] = None, maxsplit: int = -1,  # noqa: A002
                  result_type: str = "SparseTensor", source: Any = None, name: Optional[str] = None) -> SparseTensor:
    """tf.strings.split (TF 1.15, v1): Python's str.split per string - sep None splits at runs
    of whitespace, a sep keeps empty tokens - at most maxsplit times; a SparseTensor."""
    if result_type != "SparseTensor":
        raise InvalidArgumentError("strings.split: only result_type='SparseTensor' is supported (no RaggedTensor)")
    x = input if input is not None else source
    if sep == "":
        raise InvalidArgumentError("strings.split: sep must not be empty")
    return _split(x, {"mode": "sep", "delimiter": sep, "skip_empty": False, "maxsplit": int(maxsplit)},
                  name or "StringSplitV2")
