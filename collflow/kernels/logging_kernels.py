"""Kernels of tf.Print / tf.print (graph/ops/logging_ops.py) and of the checks (Assert,
CheckNumerics: graph/ops/check_ops.py), with TensorFlow's formatting of values.

Two summaries, as TensorFlow's Tensor::SummarizeValue:
- `summarize_v1` (tf.Print, Assert): the first `limit` entries in row-major order, rows in
  nested brackets without separators ("[1 2][3...]"), "..." where entries were left out;
- `summarize_v2` (tf.print): every dimension shows its first and last `limit` entries around
  "...", rows on separate lines as NumPy prints them.
Floats print with 6 significant digits, or 9 (17 for float64) where 6 do not read back to the
same value; bools as 1 and 0; strings escaped (and quoted by tf.print).
"""
from __future__ import annotations

import sys
from typing import Any, List

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel

# -- formatting ---------------------------------------------------------------------------------


def _escape(v: Any) -> str:
    """C-style escapes of a string entry; bytes >= 0x80 are kept (UTF-8 passes through)."""
    b = v if isinstance(v, bytes) else str(v).encode("utf-8")
    out = []
    special = {10: "\\n", 13: "\\r", 9: "\\t", 34: '\\"', 39: "\\'", 92: "\\\\"}
    for c in b:
        if c in special:
            out.append(special[c].encode())
        elif c < 0x20 or c == 0x7F:
            out.append(b"\\%03o" % c)
        else:
            out.append(bytes((c,)))
    return b"".join(out).decode("utf-8", errors="replace")


def format_element(v: Any, dtype: np.dtype, quote: bool = False) -> str:
    """One entry as TensorFlow prints it."""
    kind = dtype.kind
    if kind == "b":
        return "1" if v else "0"
    if kind in "iu":
        return str(int(v))
    if kind == "f":
        x = float(v)
        if np.isnan(x):
            return "nan"
        if np.isinf(x):
            return "inf" if x > 0 else "-inf"
        if dtype.itemsize <= 4:
            s = "%.6g" % x
            return s if np.float32(float(s)) == np.float32(x) else "%.9g" % x
        s = "%.15g" % x
        return s if float(s) == x else "%.17g" % x
    s = _escape(v)
    return f'"{s}"' if quote else s


def _host(v: Any) -> np.ndarray:
    get = getattr(v, "get", None)   # a CuPy array: to the host first
    return np.asarray(get() if callable(get) and not isinstance(v, np.ndarray) else v)


def summarize_v1(value: Any, summarize: int) -> str:
    """TensorFlow 1.x's summary of a tensor (tf.Print, Assert)."""
    a = _host(value)
    n = a.size
    limit = n if summarize < 0 else min(summarize, n)
    flat = a.reshape(-1)
    if a.ndim == 0:
        return " ".join(format_element(flat[i], a.dtype) for i in range(limit)) + ("..." if n > limit else "")
    out: List[str] = []
    pos = [0]

    def one_dim(d: int) -> None:
        if pos[0] >= limit:
            return
        count = a.shape[d]
        if d == a.ndim - 1:
            for i in range(count):
                if pos[0] >= limit:
                    if d != 0:
                        out.append("...")
                    return
                if i:
                    out.append(" ")
                out.append(format_element(flat[pos[0]], a.dtype))
                pos[0] += 1
            return
        for _ in range(count):
            opened = pos[0] < limit
            if opened:
                out.append("[")
            one_dim(d + 1)
            if opened:
                out.append("]")

    one_dim(0)
    if n > limit:
        out.append("...")
    return "".join(out)


def summarize_v2(value: Any, summarize: int) -> str:
    """TensorFlow's summary of a tensor for tf.print."""
    a = _host(value)
    n = a.size
    ends = n if summarize < 0 else min(summarize, n)
    flat = a.reshape(-1)
    if a.ndim == 0:
        return format_element(flat[0], a.dtype, quote=True) if n else ""
    out: List[str] = []

    def spacing(d: int) -> None:
        if d == a.ndim - 1:
            out.append(" ")
        else:
            out.append("\n" * (a.ndim - d - 1) + " " * (d + 1))

    def one_dim(d: int, start: int) -> None:
        if d == a.ndim:
            out.append(format_element(flat[start], a.dtype, quote=True))
            return
        out.append("[")
        count = a.shape[d]
        step = 1
        for k in a.shape[d + 1:]:
            step *= k
        for i in range(min(ends, count)):
            if i:
                spacing(d)
            one_dim(d + 1, start + step * i)
        if count > 2 * ends:
            spacing(d)
            out.append("...")
        for i in range(max(ends, count - ends), count):
            spacing(d)
            one_dim(d + 1, start + step * i)
        out.append("]")

    one_dim(0, 0)
    return "".join(out)


# -- kernels ----------------------------------------------------------------------------------


def _write(stream: str, text: str) -> None:
    """Writes to the stream named by PrintV2's attribute, looked up at run time (so a
    redirected sys.stderr, as in tests or notebooks, receives it)."""
    if stream == "stderr":
        sys.stderr.write(text)
        sys.stderr.flush()
    elif stream == "stdout":
        sys.stdout.write(text)
        sys.stdout.flush()
    elif stream.startswith("file://"):
        with open(stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(text)
    else:
        from ..platform import tf_logging
        getattr(tf_logging, stream.split(":", 1)[1])("%s", text[:-1] if text.endswith("\n") else text)


@register_kernel("Print")
def _print(op: Any, ctx: KernelContext) -> Any:
    message, first_n, summarize = op.attrs["message"], op.attrs["first_n"], op.attrs["summarize"]
    # the count of prints lives in the Session, as TensorFlow's kernel keeps it per session
    counter = ctx.resources.get_or_create("other", f"Print/calls:{op.name}", lambda: [0])

    def print_(x: Any, *data: Any) -> Any:
        if first_n >= 0:
            if counter[0] >= first_n:
                return x
            counter[0] += 1
        text = message + "".join("[" + summarize_v1(d, summarize) + "]" for d in data)
        _write("stderr", text + "\n")
        return x
    return print_


@register_kernel("PrintV2")
def _print_v2(op: Any, ctx: KernelContext) -> Any:
    pieces, stream = op.attrs["template"], op.attrs["output_stream"]
    end, summarize = op.attrs["end"], op.attrs["summarize"]

    def print_v2(*tensors: Any) -> None:
        _write(stream, fill_template(pieces, tensors, summarize) + end)
    return print_v2


def fill_template(pieces: Any, tensors: Any, summarize: int) -> str:
    """A PrintV2/StringFormat template's text pieces with each tensor's summary between them."""
    parts = [pieces[0]]
    for t, p in zip(tensors, pieces[1:]):
        parts.append(summarize_v2(t, summarize))
        parts.append(p)
    return "".join(parts)


@register_kernel("Assert")
def _assert(op: Any, ctx: KernelContext) -> Any:
    summarize = op.attrs["summarize"]

    def assert_(condition: Any, *data: Any) -> None:
        c = _host(condition)
        if c.ndim != 0:
            raise InvalidArgumentError(f"In[0] is not a scalar: [{','.join(str(d) for d in c.shape)}]", op)
        if not bool(c):
            shown = " ".join("[" + summarize_v1(d, summarize) + "]" for d in data)
            raise InvalidArgumentError("assertion failed: " + shown, op)
    return assert_


@register_kernel("CheckNumerics")
def _check_numerics(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    message = op.attrs["message"]

    def check_numerics(x: Any) -> Any:
        if not bool(xp.isfinite(x).all()):
            nan, inf = bool(xp.isnan(x).any()), bool(xp.isinf(x).any())
            what = "Inf and NaN" if nan and inf else ("NaN" if nan else "Inf")
            raise InvalidArgumentError(f"{message} : Tensor had {what} values", op)
        return x
    return check_numerics
