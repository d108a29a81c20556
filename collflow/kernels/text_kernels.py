"""Kernels of the string ops of graph/ops/text_ops.py, on the host: NumPy object arrays of
Python str, walked element by element (text is small next to the tensors of a step)."""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel

_ASCII_SPACE = " \t\n\v\f\r"
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _map(fn: Callable[[Any], Any], x: Any, dtype: Any = object) -> np.ndarray:
    a = np.asarray(x, dtype=object)
    out = np.empty(a.shape, dtype=dtype)
    flat_in, flat_out = a.reshape(-1), out.reshape(-1)
    for i in range(flat_in.size):
        flat_out[i] = fn(flat_in[i])
    return out


_bytes, _text = _dt.string_bytes, _dt.bytes_text


@register_kernel("StringJoin")
def _string_join(op: Any, ctx: KernelContext) -> Any:
    sep = op.attrs["separator"]

    def string_join(*xs: Any) -> Any:
        arrs = [np.asarray(x, dtype=object) for x in xs]
        try:
            shape = np.broadcast_shapes(*[a.shape for a in arrs])
        except ValueError:
            raise InvalidArgumentError(f"string_join: inputs of shapes {[a.shape for a in arrs]} do not match", op)
        parts = [np.broadcast_to(a, shape).reshape(-1) for a in arrs]
        out = np.empty(shape, dtype=object)
        flat = out.reshape(-1)
        for i in range(flat.size):
            flat[i] = sep.join(str(p[i]) for p in parts)
        return out
    return string_join


@register_kernel("ReduceJoin")
def _reduce_join(op: Any, ctx: KernelContext) -> Any:
    axes, keep, sep = op.attrs["axis"], op.attrs["keep_dims"], op.attrs["separator"]

    def reduce_join(x: Any) -> Any:
        a = np.asarray(x, dtype=object)
        r = a.ndim
        ax = list(range(r)) if axes is None else sorted({int(k) % r if r else 0 for k in axes})
        rest = [i for i in range(r) if i not in ax]
        moved = np.transpose(a, rest + ax).reshape([a.shape[i] for i in rest] + [-1])
        out = np.empty(moved.shape[:-1], dtype=object)
        flat_in, flat_out = moved.reshape(-1, moved.shape[-1]), out.reshape(-1)
        for i in range(flat_out.size):
            flat_out[i] = sep.join(flat_in[i])
        if keep:
            out = out.reshape([1 if i in ax else a.shape[i] for i in range(r)])
        return out
    return reduce_join


@register_kernel("Substr")
def _substr(op: Any, ctx: KernelContext) -> Any:
    chars = op.attrs["unit"] == "UTF8_CHAR"

    def substr(x: Any, pos: Any, length: Any) -> Any:
        a, p, n = np.broadcast_arrays(np.asarray(x, dtype=object), np.asarray(pos), np.asarray(length))
        out = np.empty(a.shape, dtype=object)
        fa, fp, fn, fo = a.reshape(-1), p.reshape(-1), n.reshape(-1), out.reshape(-1)
        for i in range(fo.size):
            s = fa[i] if chars else _bytes(fa[i])
            k, m = int(fp[i]), int(fn[i])
            if k < 0:
                k += len(s)
            if not 0 <= k <= len(s):
                raise InvalidArgumentError(f"pos {int(fp[i])} out of range for string {fa[i]!r} at index {i}", op)
            piece = s[k:k + max(m, 0)]
            fo[i] = piece if chars else _text(piece)
        return out
    return substr


def _pattern(op: Any, what: str) -> Any:
    try:
        return re.compile(op.attrs["pattern"])
    except re.error as e:
        raise InvalidArgumentError(f"{what}: invalid pattern {op.attrs['pattern']!r}: {e}", op) from None


@register_kernel("RegexReplace")
def _regex_replace(op: Any, ctx: KernelContext) -> Any:
    pat = _pattern(op, "regex_replace")
    rewrite = re.sub(r"\\0", r"\\g<0>", op.attrs["rewrite"])   # RE2's \0: the whole match
    count = 0 if op.attrs["replace_global"] else 1
    return lambda x: _map(lambda s: pat.sub(rewrite, s, count=count), x)


@register_kernel("RegexFullMatch")
def _regex_full_match(op: Any, ctx: KernelContext) -> Any:
    pat = _pattern(op, "regex_full_match")
    return lambda x: _map(lambda s: pat.fullmatch(s) is not None, x, bool)


register_kernel("StringStrip")(lambda op, ctx: lambda x: _map(lambda s: s.strip(_ASCII_SPACE), x))


@register_kernel("StringLength")
def _string_length(op: Any, ctx: KernelContext) -> Any:
    if op.attrs["unit"] == "UTF8_CHAR":
        return lambda x: _map(len, x, np.int32)
    return lambda x: _map(lambda s: len(_bytes(s)), x, np.int32)


@register_kernel("StringLower")
def _string_lower(op: Any, ctx: KernelContext) -> Any:
    full = op.attrs["encoding"].lower().replace("-", "") == "utf8"
    return lambda x: _map((lambda s: s.lower()) if full else (lambda s: s.translate(_LOWER)), x)


@register_kernel("StringUpper")
def _string_upper(op: Any, ctx: KernelContext) -> Any:
    full = op.attrs["encoding"].lower().replace("-", "") == "utf8"
    return lambda x: _map((lambda s: s.upper()) if full else (lambda s: s.translate(_UPPER)), x)


@register_kernel("StringSplit")
def _string_split(op: Any, ctx: KernelContext) -> Any:
    mode, delim, skip, maxsplit = (op.attrs[k] for k in ("mode", "delimiter", "skip_empty", "maxsplit"))
    splitter = re.compile("[" + re.escape(delim) + "]") if mode == "chars" and delim else None

    def tokens(s: str) -> list:
        if mode == "sep":
            parts = s.split(delim, maxsplit)
        elif not s:
            return []          # TF's StringSplit: an empty string has no tokens, even unskipped
        else:
            parts = list(s) if not delim else splitter.split(s)
        return [p for p in parts if p] if skip else parts

    def string_split(x: Any) -> Any:
        a = np.asarray(x, dtype=object).reshape(-1)
        idx, vals, width = [], [], 0
        for row, s in enumerate(a):
            toks = tokens(s)
            width = max(width, len(toks))
            for col, t in enumerate(toks):
                idx.append((row, col))
                vals.append(t)
        indices = np.asarray(idx, dtype=np.int64).reshape(-1, 2)
        values = np.empty(len(vals), dtype=object)
        values[:] = vals
        return indices, values, np.asarray([a.size, width], dtype=np.int64)
    return string_split
