"""Kernels of tf.strings.unicode_* (graph/ops/unicode_ops.py), on the host.

A string element's bytes (dtypes.string_bytes) are decoded with Python's codecs, whose
handling of malformed input is Unicode's "maximal subpart" practice, as ICU's (what TF uses):
each maximal ill-formed subsequence is one error.  An error becomes replacement_char
('replace'), nothing ('ignore') or an InvalidArgumentError ('strict').
"""
from __future__ import annotations

import codecs
import threading
from typing import Any, List, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel
from .unicode_scripts import scripts_of

# the encodings TF's unicode ops name, with Python's codec and the bytes per code unit
CODECS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be",
          "ISO-8859-1": "latin-1", "US-ASCII": "ascii"}
_MARK = "\udfff"   # never in a decoder's output: every codec here refuses lone surrogates
_local = threading.local()   # the errors of the decode running on this thread


def _collect(exc: UnicodeDecodeError) -> Tuple[str, int]:
    _local.errs.append((exc.start, exc.end))
    return _MARK, exc.end


codecs.register_error("collflow_unicode_collect", _collect)


def _width(c: int, enc: str) -> int:
    if enc == "UTF-8":
        return 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4
    if enc == "UTF-16-BE":
        return 2 if c < 0x10000 else 4
    if enc == "UTF-32-BE":
        return 4
    return 1


def decode(b: bytes, enc: str, errors: str, repl: int, ctrl: bool, op: Any) -> Tuple[List[int], List[int]]:
    """(code points, byte offset of each) of the bytes b in encoding enc."""
    _local.errs = errs = []
    text = b.decode(CODECS[enc], "collflow_unicode_collect")
    cps: List[int] = []
    offs: List[int] = []
    pos, k = 0, 0
    for ch in text:
        if ch == _MARK:
            start, end = errs[k]
            k += 1
            if errors == "strict":
                raise InvalidArgumentError(f"Invalid formatting on input string: {b!r}", op)
            if errors == "replace":
                cps.append(repl)
                offs.append(start)
            pos = end
            continue
        c = ord(ch)
        w = _width(c, enc)
        if ctrl and c < 0x20:
            # a C0 control counts as bad input: dropped with 'ignore', else replaced (as TF,
            # 'strict' too)
            if errors == "ignore":
                pos += w
                continue
            c = repl
        cps.append(c)
        offs.append(pos)
        pos += w
    return cps, offs


def _valid(c: int) -> bool:
    return 0 <= c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF


def encode(cps: Any, enc: str, errors: str, repl: int, op: Any) -> bytes:
    chars = []
    for c in cps:
        c = int(c)
        if not _valid(c):
            if errors == "strict":
                raise InvalidArgumentError(f"Invalid code point {c}", op)
            if errors == "ignore":
                continue
            c = repl
        chars.append(chr(c))
    try:
        return "".join(chars).encode(CODECS[enc])
    except UnicodeEncodeError as e:  # a code point the (8-bit) encoding lacks
        raise InvalidArgumentError(f"cannot encode {e.object[e.start:e.end]!r} in {enc}", op) from None


def _attrs(op: Any) -> tuple:
    a = op.attrs
    return a["input_encoding"], a["errors"], a["replacement_char"], a["replace_control_characters"]


@register_kernel("UnicodeDecodeWithOffsets")
def _decode(op: Any, ctx: KernelContext) -> Any:
    enc, errors, repl, ctrl = _attrs(op)

    def run(x: Any) -> Any:
        flat = np.asarray(x, dtype=object).reshape(-1)
        splits, cps, offs = [0], [], []
        for s in flat:
            c, o = decode(_dt.string_bytes(s), enc, errors, repl, ctrl, op)
            cps.extend(c)
            offs.extend(o)
            splits.append(len(cps))
        return (np.asarray(splits, np.int64), np.asarray(cps, np.int32).reshape(-1),
                np.asarray(offs, np.int64).reshape(-1))
    return run


@register_kernel("UnicodeSplitWithOffsets")
def _split(op: Any, ctx: KernelContext) -> Any:
    """Each character as a string in the input's encoding (a bad one as replacement_char)."""
    enc, errors, repl, ctrl = _attrs(op)

    def run(x: Any) -> Any:
        flat = np.asarray(x, dtype=object).reshape(-1)
        splits, chars, offs = [0], [], []
        for s in flat:
            c, o = decode(_dt.string_bytes(s), enc, errors, repl, ctrl, op)
            chars.extend(_dt.bytes_text(encode([v], enc, "replace", repl, op)) for v in c)
            offs.extend(o)
            splits.append(len(chars))
        out = np.empty(len(chars), dtype=object)
        out[:] = chars
        return np.asarray(splits, np.int64), out, np.asarray(offs, np.int64).reshape(-1)
    return run


@register_kernel("UnicodeEncode")
def _encode(op: Any, ctx: KernelContext) -> Any:
    enc, errors, repl = op.attrs["output_encoding"], op.attrs["errors"], op.attrs["replacement_char"]

    def run(values: Any, splits: Any) -> Any:
        v = np.asarray(values).reshape(-1)
        s = np.asarray(splits).astype(np.int64).reshape(-1)
        out = np.empty(max(s.size - 1, 0), dtype=object)
        for i in range(out.size):
            out[i] = _dt.bytes_text(encode(v[s[i]:s[i + 1]], enc, errors, repl, op))
        return out
    return run


@register_kernel("UnicodeTranscode")
def _transcode(op: Any, ctx: KernelContext) -> Any:
    enc, errors, repl, ctrl = _attrs(op)
    out_enc = op.attrs["output_encoding"]

    def run(x: Any) -> Any:
        a = np.asarray(x, dtype=object)
        out = np.empty(a.shape, dtype=object)
        fa, fo = a.reshape(-1), out.reshape(-1)
        for i in range(fa.size):
            cps, _ = decode(_dt.string_bytes(fa[i]), enc, errors, repl, ctrl, op)
            fo[i] = _dt.bytes_text(encode(cps, out_enc, "replace", repl, op))
        return out
    return run


@register_kernel("UnicodeScript")
def _script(op: Any, ctx: KernelContext) -> Any:
    def run(x: Any) -> Any:
        return scripts_of(np.asarray(x))
    return run


@register_kernel("StringNGrams")
def _ngrams(op: Any, ctx: KernelContext) -> Any:
    """Each row's n-grams, width by width: the row padded with pad_width left/right pads
    (pad_width -1: width - 1), the tokens of each window joined with the separator."""
    a = op.attrs
    widths, sep, lpad, rpad, pw, keep = (a["ngram_widths"], a["separator"], a["left_pad"], a["right_pad"],
                                          a["pad_width"], a["preserve_short_sequences"])
    padded = lpad != "" or rpad != ""

    def run(data: Any, splits: Any) -> Any:
        d = np.asarray(data, dtype=object).reshape(-1)
        s = np.asarray(splits).astype(np.int64).reshape(-1)
        out, out_splits = [], [0]
        for i in range(s.size - 1):
            row = [str(t) for t in d[s[i]:s[i + 1]]]
            grams: List[str] = []
            for w in widths:
                p = (w - 1 if pw < 0 else pw) if padded else 0
                seq = [lpad] * p + row + [rpad] * p
                grams.extend(sep.join(seq[j:j + w]) for j in range(len(seq) - w + 1))
            if keep and not grams and row:
                p = max(pw, 0) if padded else 0
                grams.append(sep.join([lpad] * p + row + [rpad] * p))
            out.extend(grams)
            out_splits.append(len(out))
        vals = np.empty(len(out), dtype=object)
        vals[:] = out
        return vals, np.asarray(out_splits, np.int64)
    return run
