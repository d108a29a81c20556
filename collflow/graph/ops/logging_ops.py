"""Printing from inside a graph: TensorFlow 1.x's tf.Print and TensorFlow's tf.print.

tf.Print(input_, data) is an identity of input_ that, each time it runs, writes
`message[v1][v2]...` to stderr (each value summarized TensorFlow's way: the first `summarize`
entries, nested brackets, then "..."), at most `first_n` times per Session.  tf.print(*inputs)
is an op with no outputs (run it, or make something depend on it) that writes its inputs
separated by `sep`, tensors formatted as TensorFlow formats them (the first and last
`summarize` entries of each dimension).  Both are stateful: they never run fewer or more
times than asked.  Kernels and the value formatting live in kernels/logging_kernels.py.
"""
from __future__ import annotations

import sys
from typing import Any, List, Optional

from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from .op_util import make_op, single

# `print` shadows a builtin: exported by name, last, from collflow/__init__.py (as `range` is)
__all__ = ["Print"]

register_op("Print", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], stateful=True, host_only=True,
            doc="identity of input 0; writes message and the other inputs to stderr")
register_op("PrintV2", lambda op: [], stateful=True, host_only=True,
            doc="writes the template with its tensors filled in to an output stream")
not_differentiable("PrintV2")


@register_gradient("Print")
def _print_grad(op: _g.Operation, g: Any) -> list:
    return [g] + [None] * (len(op.inputs) - 1)


def Print(input_: Any, data: Any, message: Optional[str] = None, first_n: Optional[int] = None,  # noqa: N802
          summarize: Optional[int] = None, name: Optional[str] = None) -> _g.Tensor:
    """input_ unchanged; running it writes `message` then `[value]` for each tensor of `data`
    to stderr.

    first_n: print only the first first_n runs in a Session (None or negative: every run);
    summarize: entries shown per tensor (None: 3; negative: all).  The gradient passes through
    to input_ (TensorFlow 1.x's tf.Print).
    """
    x = _g.convert_to_tensor(input_)
    with x.graph.as_default():
        items = [_g.convert_to_tensor(d) for d in (data or [])]
    attrs = {"message": "" if message is None else str(message),
             "first_n": -1 if first_n is None else int(first_n),
             "summarize": 3 if summarize is None else int(summarize)}
    return single("Print", [x] + items, attrs, name=name or "Print")


class _Slot:
    """Stands for a tensor inside a printed Python structure (its repr is a unique marker)."""

    __slots__ = ("key",)

    def __init__(self, key: str):
        self.key = key

    def __repr__(self) -> str:
        return self.key

    __str__ = __repr__


def _is_tensor(x: Any) -> bool:
    return isinstance(x, _g.Tensor) or hasattr(x, "handle")


def _template(inputs: Any, sep: str) -> tuple:
    """(literal pieces, tensors): the printed text is pieces[0] t0 pieces[1] t1 ... pieces[-1]."""
    marker = "\x00collflow-print-{}\x00"
    tensors: List[Any] = []

    def slot(x: Any) -> Any:
        tensors.append(_g.convert_to_tensor(x))
        return _Slot(marker.format(len(tensors) - 1))

    def substitute(x: Any) -> Any:
        if _is_tensor(x):
            return slot(x)
        if isinstance(x, dict):
            return type(x)((k, substitute(v)) for k, v in x.items())
        if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
            return type(x)(substitute(v) for v in x)
        return x

    texts = []
    for x in inputs:
        if _is_tensor(x):
            texts.append(str(slot(x)))
        elif isinstance(x, str):
            texts.append(x)
        else:
            texts.append(str(substitute(x)))
    whole = sep.join(texts)
    pieces = []
    for i in range(len(tensors)):
        before, _, whole = whole.partition(marker.format(i))
        pieces.append(before)
    pieces.append(whole)
    return tuple(pieces), tensors


def _stream_name(stream: Any) -> str:
    from ...platform import tf_logging
    if stream is sys.stderr or stream == "stderr":
        return "stderr"
    if stream is sys.stdout or stream == "stdout":
        return "stdout"
    if isinstance(stream, str) and stream.startswith("file://"):
        return stream
    for level in ("debug", "info", "warning", "error"):
        if stream is getattr(tf_logging, level):
            return f"log:{level}"
    raise ValueError(f"print: output_stream must be sys.stderr, sys.stdout, a 'file://' path or one of "
                     f"tf.logging.debug/info/warning/error, got {stream!r}")


def print_v2(*inputs: Any, **kwargs: Any) -> _g.Operation:
    """tf.print: an op that writes `inputs` (tensors, strings, Python values and structures of
    them) separated by `sep` and followed by `end` to `output_stream` each time it runs.

    Keywords: output_stream (sys.stderr, sys.stdout, 'file://path' to append to a file, or a
    tf.logging function), summarize (entries shown at each end of every dimension, default 3,
    -1 for all), sep (' '), end ('\\n'), name.  In a graph the op must be run (or be a control
    dependency of what runs) to print.
    """
    stream = kwargs.pop("output_stream", sys.stderr)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", "\n")
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"print got unexpected keyword arguments {sorted(kwargs)}")
    pieces, tensors = _template(inputs, str(sep))
    attrs = {"template": pieces, "output_stream": _stream_name(stream), "end": str(end),
             "summarize": 3 if summarize is None else int(summarize)}
    return make_op("PrintV2", tensors, attrs, name=name or "PrintV2")


print = print_v2  # noqa: A001 - TF name
