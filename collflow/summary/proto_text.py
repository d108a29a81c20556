"""Protobuf's text format read into the hand-written messages of proto.py (what
`google.protobuf.text_format.Merge` does for TensorFlow's `.pbtxt` GraphDefs, e.g. those of
`tf.train.write_graph(..., as_text=True)`), without a protobuf dependency:

    graph_def = tf.GraphDef()
    merge(open("model.pbtxt").read(), graph_def)

Fields are named as in the message's FIELDS table; a field the message does not have (a
GraphDef's `versions`) is skipped, as protobuf's parser with allow_unknown_field would.  Enum
values may be numbers or TF's DataType names (DT_FLOAT, DT_INT32_REF, ...).
"""
from __future__ import annotations

import re
from typing import Any, List, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.tensor_proto_wire import ENUM_NAMES
from .proto import Message

__all__ = ["merge", "parse"]

_DT = {"DT_" + name.upper(): v for v, name in ENUM_NAMES.items()}
_DT.update({k + "_REF": v + 100 for k, v in list(_DT.items())})
_DT["DT_INVALID"] = 0
_TOKEN = re.compile(r"""\s+|\#[^\n]*"""
                    r"""|(?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
                    r"""|(?P<word>[-+]?(?:0[xX][0-9a-fA-F]+|\d[\d.]*(?:[eE][-+]?\d+)?[fF]?|[\w.]+))"""
                    r"""|(?P<p>[{}<>:\[\],;])""")
_ESC = {"n": 10, "t": 9, "r": 13, "\\": 92, "'": 39, '"': 34, "a": 7, "b": 8, "f": 12, "v": 11, "?": 63}


def _tokens(text: str) -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise InvalidArgumentError(f"text format: cannot read {text[pos:pos + 20]!r} at offset {pos}")
        pos = m.end()
        if m.lastgroup:
            out.append((m.lastgroup, m.group(m.lastgroup)))
    return out


def _unescape(s: str) -> bytes:
    body = s[1:-1].encode("utf-8")
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != 92:
            out.append(c)
            i += 1
            continue
        n = chr(body[i + 1])
        if n in "01234567":
            j = i + 1
            while j < min(i + 4, len(body)) and chr(body[j]) in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8) & 0xFF)
            i = j
        elif n in "xX":
            j = i + 2
            while j < min(i + 4, len(body)) and chr(body[j]) in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j], 16))
            i = j
        else:
            out.append(_ESC.get(n, body[i + 1]))
            i += 2
    return bytes(out)


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> Tuple[str, str]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "")

    def take(self, value: str = "") -> Tuple[str, str]:
        t = self.peek()
        if t[0] == "end" or (value and t[1] != value):
            raise InvalidArgumentError(f"text format: expected {value or 'a value'!r}, got {t[1] or 'the end'!r}")
        self.i += 1
        return t

    def message(self, msg: Message, close: str) -> None:
        names = msg._names()
        while self.peek()[1] != close:
            if close == "" and self.peek()[0] == "end":
                return
            _, name = self.take()
            spec = names.get(name)
            if self.peek()[1] == ":":
                self.take(":")
            if spec is None:
                self.skip()
            else:
                self.field(msg, spec)
            if self.peek()[1] in (",", ";"):
                self.take()
        self.take(close) if close else None

    def field(self, msg: Message, spec: Any) -> None:
        _, name, kind, _ = spec
        k = kind[0] if isinstance(kind, list) else kind
        many = self.peek()[1] == "["
        if many:
            self.take("[")
        while True:
            v = self.value(k)
            if isinstance(kind, list):
                getattr(msg, name).append(v)
            else:
                setattr(msg, name, v)
            if not many or self.peek()[1] == "]":
                break
            self.take(",")
        if many:
            self.take("]")

    def value(self, kind: Any) -> Any:
        if isinstance(kind, type):
            open_ = self.take()[1]
            if open_ not in ("{", "<"):
                raise InvalidArgumentError(f"text format: expected '{{' for a {kind.__name__}, got {open_!r}")
            sub = kind()
            self.message(sub, "}" if open_ == "{" else ">")
            return sub
        typ, tok = self.take()
        if kind in ("string", "bytes"):
            if typ != "str":
                raise InvalidArgumentError(f"text format: expected a string, got {tok!r}")
            data = _unescape(tok)
            while self.peek()[0] == "str":  # adjacent strings concatenate
                data += _unescape(self.take()[1])
            return data.decode("utf-8", "replace") if kind == "string" else data
        if kind == "bool":
            return tok in ("true", "True", "t", "1")
        if kind in ("float", "double"):
            low = tok.lower().rstrip("f") if not tok.lower().endswith("inf") else tok.lower()
            v = float({"inf": "inf", "-inf": "-inf", "infinity": "inf", "-infinity": "-inf"}.get(low, low))
            # a `float` field holds float32 (as protobuf's own parser stores it)
            if kind == "float":
                with np.errstate(over="ignore"):
                    return float(np.float32(v))
            return v
        if kind == "enum" and not re.match(r"[-+]?\d", tok):
            if tok not in _DT:
                raise InvalidArgumentError(f"text format: unknown enum value {tok!r}")
            return _DT[tok]
        return int(tok, 0)

    def skip(self) -> None:
        """Skips an unknown field's value (a scalar, a list or a nested message)."""
        t = self.take()[1]
        if t in ("{", "<", "["):
            depth = 1
            while depth:
                v = self.take()[1]
                depth += v in ("{", "<", "[") and 1 or 0
                depth -= v in ("}", ">", "]") and 1 or 0
        else:
            while self.peek()[0] == "str":
                self.take()


def merge(text: str, message: Message) -> Message:
    """Reads text-format `text` into `message` (repeated fields appended); returns it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    _Parser(text).message(message, "")
    return message


def parse(text: str, message: Message) -> Message:
    """Clears `message`, then merges `text` into it (google.protobuf.text_format.Parse)."""
    message.ParseFromString(b"")
    return merge(text, message)
