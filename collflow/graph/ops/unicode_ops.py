"""tf.strings.unicode_decode / _with_offsets, unicode_split / _with_offsets, unicode_encode,
unicode_transcode and unicode_script (TF 1.15), and tf.strings.split with
result_type="RaggedTensor".  Host kernels in kernels/unicode_kernels.py.

Encodings: UTF-8, UTF-16-BE, UTF-32-BE (also ISO-8859-1 and US-ASCII for decoding and
transcoding).  errors: 'replace' (replacement_char, default U+FFFD), 'ignore' or 'strict'
(InvalidArgumentError); replace_control_characters turns C0 controls into replacement_char.
A string input of rank k gives a RaggedTensor whose last dimension holds the characters (a
dense vector for a scalar); a RaggedTensor of strings keeps its rows.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import make_op, single
from .ragged_tensor import RaggedTensor, _uniform

__all__ = ["unicode_decode", "unicode_decode_with_offsets", "unicode_split", "unicode_split_with_offsets",
           "unicode_encode", "unicode_transcode", "unicode_script", "strings_split"]

_IN = ("UTF-8", "UTF-16-BE", "UTF-32-BE", "ISO-8859-1", "US-ASCII")
_OUT = ("UTF-8", "UTF-16-BE", "UTF-32-BE")
_V = TensorShape([None])

register_op("UnicodeDecodeWithOffsets", lambda op: [(_dt.int64, _V), (_dt.int32, _V), (_dt.int64, _V)],
            host_only=True)
register_op("UnicodeSplitWithOffsets", lambda op: [(_dt.int64, _V), (_dt.string, _V), (_dt.int64, _V)],
            host_only=True)
register_op("UnicodeEncode", lambda op: [(_dt.string, TensorShape([None]))], host_only=True)
register_op("UnicodeTranscode", lambda op: [(_dt.string, op.inputs[0].shape)], host_only=True)
register_op("UnicodeScript", lambda op: [(_dt.int32, op.inputs[0].shape)], host_only=True)
not_differentiable("UnicodeDecodeWithOffsets", "UnicodeSplitWithOffsets", "UnicodeEncode", "UnicodeTranscode",
                   "UnicodeScript")


def _check(enc: str, allowed: tuple, what: str) -> str:
    if enc not in allowed:
        raise InvalidArgumentError(f"{what} must be one of {list(allowed)}, got {enc!r}")
    return enc


def _err_attrs(errors: str, replacement_char: int) -> dict:
    if errors not in ("strict", "replace", "ignore"):
        raise ValueError(f"errors must be one of 'strict', 'replace', 'ignore', got {errors!r}")
    return {"errors": errors, "replacement_char": int(replacement_char)}


def _strings(x: Any) -> Any:
    if isinstance(x, RaggedTensor):
        if x.dtype != _dt.string:
            raise TypeError(f"expected a string RaggedTensor, got {x.dtype.name}")
        return x
    t = x if isinstance(x, _g.Tensor) else _g.convert_to_tensor(x, dtype=_dt.string)
    if t.dtype != _dt.string:
        raise TypeError(f"expected a string tensor, got {t.dtype.name}")
    return t


def _wrap_rows(x: Any, splits: _g.Tensor, values: _g.Tensor) -> Any:
    """The per-string rows (splits over values) given x's structure: a dense vector for a
    scalar x, outer uniform (or x's ragged) rows above them otherwise."""
    if isinstance(x, RaggedTensor):
        return x.with_flat_values(RaggedTensor.from_row_splits(values, splits, validate=False))
    rank = x.shape.rank
    if rank == 0:
        return values
    rt = RaggedTensor.from_row_splits(values, splits, validate=False)
    if rank is None:
        raise ValueError("unicode ops need the input's rank to be known")
    if rank > 1:
        from .array_ops import shape as _shape
        outer = _shape(x, out_type=_dt.int64)
        for i in range(rank - 1, 0, -1):
            # rows of dims[i] items: the product of the dimensions before i of them
            nrows = outer[0]
            for j in range(1, i):
                nrows = nrows * outer[j]
            rt = RaggedTensor.from_row_splits(rt, _uniform(nrows, outer[i]), validate=False)
    return rt


def _decode_op(op_type: str, input: Any, input_encoding: str, errors: str, replacement_char: int,  # noqa: A002
               replace_control_characters: bool, name: Optional[str]) -> tuple:
    x = _strings(input)
    attrs = {"input_encoding": _check(input_encoding, _IN, "input_encoding"),
             "replace_control_characters": bool(replace_control_characters), **_err_attrs(errors, replacement_char)}
    flat = x.flat_values if isinstance(x, RaggedTensor) else x
    op = make_op(op_type, [flat], attrs, name=name or op_type)
    return x, op.outputs


def unicode_decode(input: Any, input_encoding: str, errors: str = "replace",  # noqa: A002
                   replacement_char: int = 65533, replace_control_characters: bool = False, name: Optional[str] = None) -> Any:
    """The code points (int32) of each string: a RaggedTensor with one more dimension."""
    x, (splits, cps, _) = _decode_op("UnicodeDecodeWithOffsets", input, input_encoding, errors, replacement_char,
                                     replace_control_characters, name or "UnicodeDecode")
    return _wrap_rows(x, splits, cps)


def unicode_decode_with_offsets(input: Any, input_encoding: str, errors: str = "replace",  # noqa: A002
                                replacement_char: int = 65533, replace_control_characters: bool = False,
                                name: Optional[str] = None) -> tuple:
    """(code points, the byte offset where each starts), both shaped as unicode_decode's."""
    x, (splits, cps, offs) = _decode_op("UnicodeDecodeWithOffsets", input, input_encoding, errors,
                                        replacement_char, replace_control_characters,
                                        name or "UnicodeDecodeWithOffsets")
    return _wrap_rows(x, splits, cps), _wrap_rows(x, splits, offs)


def unicode_split(input: Any, input_encoding: str, errors: str = "replace", replacement_char: int = 65533,  # noqa: A002
                  name: Optional[str] = None) -> Any:
    """Each string's characters as strings (in the input's encoding)."""
    x, (splits, chars, _) = _decode_op("UnicodeSplitWithOffsets", input, input_encoding, errors, replacement_char,
                                       False, name or "UnicodeSplit")
    return _wrap_rows(x, splits, chars)


def unicode_split_with_offsets(input: Any, input_encoding: str, errors: str = "replace",  # noqa: A002
                               replacement_char: int = 65533, name: Optional[str] = None) -> tuple:
    """(unicode_split's characters, the byte offset where each starts)."""
    x, (splits, chars, offs) = _decode_op("UnicodeSplitWithOffsets", input, input_encoding, errors,
                                          replacement_char, False, name or "UnicodeSplitWithOffsets")
    return _wrap_rows(x, splits, chars), _wrap_rows(x, splits, offs)


def unicode_encode(input: Any, output_encoding: str, errors: str = "replace",  # noqa: A002
                   replacement_char: int = 65533, name: Optional[str] = None) -> Any:
    """Code points (int32, the last dimension's rows; a RaggedTensor or a dense tensor) encoded
    as strings: one dimension fewer."""
    enc = _check(output_encoding, _OUT, "output_encoding")
    attrs = {"output_encoding": enc, **_err_attrs(errors, replacement_char)}
    if isinstance(input, RaggedTensor):
        if input.dtype != _dt.int32:
            raise TypeError(f"unicode_encode needs int32 code points, got {input.dtype.name}")
        if input.flat_values.shape.rank not in (None, 1):
            raise NotImplementedError("unicode_encode: a RaggedTensor with uniform inner dimensions is not supported")
        *outer, splits = input.nested_row_splits  # one string per innermost row
        with input.graph.as_default():
            out = single("UnicodeEncode", [input.flat_values, splits], attrs, name=name or "UnicodeEncode")
            return RaggedTensor.from_nested_row_splits(out, outer, validate=False) if outer else out
    x = input if isinstance(input, _g.Tensor) else _g.convert_to_tensor(input, dtype=_dt.int32)
    if x.dtype != _dt.int32:
        raise TypeError(f"unicode_encode needs int32 code points, got {x.dtype.name}")
    r = x.shape.rank
    if r is None or r == 0:
        raise ValueError("unicode_encode needs an input of known rank >= 1")
    with x.graph.as_default():
        from .array_ops import reshape, shape as _shape
        if r == 1:
            splits = _g.convert_to_tensor(np.asarray([0], np.int64))
            from .array_ops import concat
            n = _shape(x, out_type=_dt.int64)
            splits = concat([splits, n], 0)
            return reshape(single("UnicodeEncode", [x, splits], attrs, name=name or "UnicodeEncode"), [])
        shp = _shape(x, out_type=_dt.int64)
        rows = RaggedTensor.from_tensor(x if r == 2 else reshape(x, [-1, x.shape.dims[-1] or -1]))
        out = single("UnicodeEncode", [rows.values, rows.row_splits], attrs, name=name or "UnicodeEncode")
        return out if r == 2 else reshape(out, shp[:-1])


def unicode_transcode(input: Any, input_encoding: str, output_encoding: str, errors: str = "replace",  # noqa: A002
                      replacement_char: int = 65533, replace_control_characters: bool = False,
                      name: Optional[str] = None) -> _g.Tensor:
    """Each string re-encoded (bad input handled as `errors` says)."""
    attrs = {"input_encoding": _check(input_encoding, _IN, "input_encoding"),
             "output_encoding": _check(output_encoding, _OUT, "output_encoding"),
             "replace_control_characters": bool(replace_control_characters), **_err_attrs(errors, replacement_char)}
    x = _strings(input)
    if isinstance(x, RaggedTensor):
        with x.graph.as_default():
            return x.with_flat_values(single("UnicodeTranscode", [x.flat_values], attrs,
                                             name=name or "UnicodeTranscode"))
    return single("UnicodeTranscode", [x], attrs, name=name or "UnicodeTranscode")


def unicode_script(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """ICU's script code of each int32 code point (see kernels/unicode_scripts.py)."""
    if isinstance(input, RaggedTensor):
        with input.graph.as_default():
            return input.with_flat_values(unicode_script(input.flat_values, name=name))
    x = input if isinstance(input, _g.Tensor) else _g.convert_to_tensor(input, dtype=_dt.int32)
    if x.dtype != _dt.int32:
        raise TypeError(f"unicode_script needs int32 code points, got {x.dtype.name}")
    return single("UnicodeScript", [x], name=name or "UnicodeScript")


def strings_split(input: Any = None, sep: Optional[str] = None, maxsplit: int = -1,  # noqa: A002
                  result_type: str = "SparseTensor", source: Any = None, name: Optional[str] = None) -> Any:
    """tf.strings.split (TF 1.15): a SparseTensor by default, a RaggedTensor with
    result_type="RaggedTensor" (the rows of the sparse result)."""
    from .text_ops import strings_split as _sparse_split
    if result_type not in ("SparseTensor", "RaggedTensor"):
        raise ValueError(f"result_type must be 'RaggedTensor' or 'SparseTensor', got {result_type!r}")
    st = _sparse_split(input, sep=sep, maxsplit=maxsplit, source=source, name=name)
    return st if result_type == "SparseTensor" else RaggedTensor.from_sparse(st)


def string_split(source: Any, sep: Optional[str] = None, skip_empty: bool = True, delimiter: Optional[str] = None,
                 result_type: str = "SparseTensor", name: Optional[str] = None) -> Any:
    """tf.string_split (v1) with result_type="RaggedTensor" too."""
    from .text_ops import string_split as _sparse_split
    if result_type not in ("SparseTensor", "RaggedTensor"):
        raise ValueError(f"result_type must be 'RaggedTensor' or 'SparseTensor', got {result_type!r}")
    st = _sparse_split(source, sep=sep, skip_empty=skip_empty, delimiter=delimiter, name=name)
    return st if result_type == "SparseTensor" else RaggedTensor.from_sparse(st)
