"""tf.strings.ngrams (TF 1.15): the n-grams of each row of a RaggedTensor (or dense tensor)
of string tokens.  Kernel in kernels/unicode_kernels.py (StringNGrams)."""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import make_op
from .ragged_tensor import RaggedTensor

__all__ = ["ngrams"]

register_op("StringNGrams", lambda op: [(_dt.string, TensorShape([None])), (_dt.int64, TensorShape([None]))],
            host_only=True)
not_differentiable("StringNGrams")


def ngrams(data: Any, ngram_width: Any, separator: str = " ", pad_values: Any = None,
           padding_width: Optional[int] = None, preserve_short_sequences: bool = False,
           name: Optional[str] = None) -> Any:
    """The n-grams of each row's tokens for each width in ngram_width (an int or a list),
    joined with separator; pad_values (a string, or a (left, right) pair) pads each row with
    padding_width (default width - 1) pads on both sides; preserve_short_sequences makes one
    n-gram of a non-empty row too short for any width.  A RaggedTensor keeps its rows; a
    dense vector is one row (a vector out), a dense matrix gives a dense matrix (padded with "")."""
    widths = (int(ngram_width),) if isinstance(ngram_width, int) else tuple(int(w) for w in ngram_width)
    if not widths or min(widths) < 1:
        raise ValueError(f"ngram_width must be a positive integer or a list of them, got {ngram_width!r}")
    if pad_values is None:
        lpad = rpad = ""
    elif isinstance(pad_values, (tuple, list)):
        if len(pad_values) != 2:
            raise ValueError("pad_values must be a string, tuple of 2 strings, or None")
        lpad, rpad = (str(v) for v in pad_values)
    else:
        lpad = rpad = str(pad_values)
    if padding_width is not None and int(padding_width) < 1:
        raise ValueError(f"padding_width must be greater than 0, got {padding_width}")
    attrs = {"ngram_widths": widths, "separator": str(separator), "left_pad": lpad, "right_pad": rpad,
             "pad_width": -1 if padding_width is None else int(padding_width),
             "preserve_short_sequences": bool(preserve_short_sequences)}
    if isinstance(data, RaggedTensor):
        if data.dtype != _dt.string:
            raise TypeError(f"ngrams needs string tokens, got {data.dtype.name}")
        *outer, splits = data.nested_row_splits  # n-grams within the innermost rows
        with data.graph.as_default():
            op = make_op("StringNGrams", [data.flat_values, splits], attrs, name=name or "StringNGrams")
            rows = RaggedTensor.from_row_splits(op.outputs[0], op.outputs[1], validate=False)
            return RaggedTensor.from_nested_row_splits(rows, outer, validate=False) if outer else rows
    t = data if isinstance(data, _g.Tensor) else _g.convert_to_tensor(data, dtype=_dt.string)
    if t.shape.rank == 1:
        with t.graph.as_default():
            from .array_ops import expand_dims
            return ngrams(RaggedTensor.from_tensor(expand_dims(t, 0)), ngram_width, separator, pad_values,
                          padding_width, preserve_short_sequences, name).values
    if t.shape.rank == 2:
        with t.graph.as_default():
            return ngrams(RaggedTensor.from_tensor(t), ngram_width, separator, pad_values, padding_width,
                          preserve_short_sequences, name).to_tensor()
    raise ValueError(f"ngrams needs a RaggedTensor or a dense tensor of rank 1 or 2, got shape {t.shape}")
