"""Kernel of DecodeJSONExample (TF1's `tf.decode_json_example`): an Example in protobuf's
JSON mapping to its binary wire bytes, the bytes TensorFlow's JSON-to-binary conversion
gives: fields in the JSON's order, numeric lists unpacked (one field per value), a present
but empty message written empty.  Field names in lowerCamelCase or as in the .proto; int64
values as JSON integers or strings; floats as numbers, numeric strings, "NaN", "Infinity",
"-Infinity"; bytes as base64 (standard or URL-safe).  Anything else is TF's
InvalidArgumentError "Error while parsing JSON: ..."."""
from __future__ import annotations

import base64
import binascii
import json
import math
import struct
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..platform.varint import encode_varint
from .registry import register_kernel, KernelContext

__all__ = ["json_example_to_binary"]


class _Bad(ValueError):
    pass


def _ld(number: int, payload: bytes) -> bytes:
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def _obj(v: Any, where: str) -> dict:
    if not isinstance(v, dict):
        raise _Bad(f"{where}: expected an object, got {json.dumps(v)[:40]}")
    return v


def _fields(v: Any, where: str, names: dict) -> list:
    """(canonical name, value) pairs of a JSON object, in its order; unknown names fail."""
    out = []
    for k, x in _obj(v, where).items():
        if k not in names:
            raise _Bad(f"{where}: message has no field named {k!r}")
        if x is not None:  # null: the field is unset
            out.append((names[k], x))
    return out


def _list(v: Any, where: str) -> list:
    if not isinstance(v, list):
        raise _Bad(f"{where}: expected an array")
    return v


def _int64(x: Any, where: str) -> int:
    if isinstance(x, bool):
        raise _Bad(f"{where}: expected integer")
    if isinstance(x, str):
        try:
            x = int(x.strip()) if x.strip().lstrip("-").isdigit() else float(x)
        except ValueError:
            raise _Bad(f"{where}: invalid integer {x!r}") from None
    if isinstance(x, float):
        if not math.isfinite(x) or x != int(x):
            raise _Bad(f"{where}: expected integer, but JSON number had fractional part")
        x = int(x)
    if not isinstance(x, int) or not -(1 << 63) <= x < (1 << 63):
        raise _Bad(f"{where}: integer out of range")
    return x


def _float(x: Any, where: str) -> float:
    if isinstance(x, bool):
        raise _Bad(f"{where}: expected a number")
    if isinstance(x, str):
        special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
        if x in special:
            return special[x]
        try:
            return float(x)
        except ValueError:
            raise _Bad(f"{where}: invalid number {x!r}") from None
    if not isinstance(x, (int, float)):
        raise _Bad(f"{where}: expected a number")
    if abs(float(x)) > np.finfo(np.float32).max and math.isfinite(float(x)):
        raise _Bad(f"{where}: float out of range")
    return float(x)


def _bytes(x: Any, where: str) -> bytes:
    if not isinstance(x, str):
        raise _Bad(f"{where}: expected a base64 string")
    s = x.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise _Bad(f"{where}: invalid base64 data") from None


_KINDS = {"bytesList": 1, "bytes_list": 1, "floatList": 2, "float_list": 2, "int64List": 3, "int64_list": 3}


def _feature(v: Any, where: str) -> bytes:
    out, kinds = b"", set()
    for number, body in _fields(v, where, _KINDS):
        if kinds:
            raise _Bad(f"{where}: a Feature holds one kind of list")
        kinds.add(number)
        vals = [x for _, xs in _fields(body, where, {"value": 0}) for x in _list(xs, where + ".value")]
        w = f"{where}.value"
        if number == 1:
            payload = b"".join(_ld(1, _bytes(x, w)) for x in vals)
        elif number == 2:
            payload = b"".join(b"\x0d" + struct.pack("<f", _float(x, w)) for x in vals)
        else:
            payload = b"".join(b"\x08" + encode_varint(_int64(x, w)) for x in vals)
        out += _ld(number, payload)
    return out


def json_example_to_binary(text: str) -> bytes:
    """The binary Example a JSON text stands for; ValueError (with where) if it is none."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise _Bad(f"invalid JSON: {e}") from None
    out = b""
    for _, feats in _fields(doc, "Example", {"features": 0}):
        body = b""
        for _, fmap in _fields(feats, "features", {"feature": 0}):
            for key, fv in _obj(fmap, "features.feature").items():
                entry = _ld(1, key.encode("utf-8")) + _ld(2, _feature(fv, f"features.feature[{key!r}]"))
                body += _ld(1, entry)
        out += _ld(1, body)
    return out


@register_kernel("DecodeJSONExample")
def _decode_json_example(op: Any, ctx: KernelContext) -> Any:
    def run(x: Any) -> Any:
        a = np.asarray(x, dtype=object)
        out = np.empty(a.shape, dtype=object)
        for i, s in np.ndenumerate(a):
            try:
                b = json_example_to_binary(_dt.string_bytes(s).decode("utf-8"))
            except (_Bad, UnicodeDecodeError) as e:
                raise InvalidArgumentError(f"Error while parsing JSON: {e}", op) from None
            out[i] = _dt.bytes_text(b)
        return out
    return run
