"""More of TF1's string ops: tf.as_string (printf formatting), tf.io.encode_base64 /
decode_base64 (web-safe alphabet) and tf.strings.to_hash_bucket_strong
(string_to_hash_bucket_strong: SipHash-2-4 under a 128-bit key, modulo the buckets).  Host
kernels in kernels/string_more_kernels.py; collflow's strings are Python str, encoded as
UTF-8 where bytes matter.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_op
from .op_util import single

__all__ = ["as_string", "encode_base64", "decode_base64", "string_to_hash_bucket_strong",
           "string_to_hash_bucket_fast", "string_to_hash_bucket"]

_FLAGS = ("", " ", "0", "-", "+", "#")  # printf's flags: what TF accepts as `fill`


def _shape_as(dt: Any) -> Any:
    return lambda op: [(dt, op.inputs[0].shape)]


register_op("AsString", _shape_as(_dt.string), host_only=True)
register_op("EncodeBase64", _shape_as(_dt.string), host_only=True)
register_op("DecodeBase64", _shape_as(_dt.string), host_only=True)
register_op("StringToHashBucketStrong", _shape_as(_dt.int64), host_only=True)
register_op("StringToHashBucketFast", _shape_as(_dt.int64), host_only=True)
register_op("StringToHashBucket", _shape_as(_dt.int64), host_only=True)
not_differentiable("AsString", "EncodeBase64", "DecodeBase64", "StringToHashBucketStrong",
                   "StringToHashBucketFast", "StringToHashBucket")


def as_string(input: Any, precision: int = -1, scientific: bool = False, shortest: bool = False,  # noqa: A002
              width: int = -1, fill: str = "", name: Optional[str] = None) -> _g.Tensor:
    """Each element as a string, formatted as C's printf does: integers %d, floats %f (%e
    with scientific, %g with shortest; `precision` digits), bools true/false; `width` pads
    (with spaces, or as the printf flag `fill` says: "0", "-", "+", " ", "#")."""
    x = _g.convert_to_tensor(input)
    dt = x.dtype
    if dt == _dt.string:
        raise InvalidArgumentError("as_string: the input is already strings")
    if fill not in _FLAGS:
        raise InvalidArgumentError(f"as_string: fill must be one of {list(_FLAGS)}, got {fill!r}")
    if scientific and shortest:
        raise InvalidArgumentError("as_string: cannot select both scientific and shortest notation")
    floating = dt.is_floating
    if not floating and (precision > -1 or scientific or shortest):
        raise InvalidArgumentError(f"as_string: precision, scientific and shortest apply to floating-point "
                                   f"inputs only, got {dt.name}")
    attrs = {"precision": int(precision), "scientific": bool(scientific), "shortest": bool(shortest),
             "width": int(width), "fill": str(fill)}
    return single("AsString", [x], attrs, name=name or "AsString")


def _strings(x: Any, what: str) -> _g.Tensor:
    t = _g.convert_to_tensor(x, dtype=_dt.string) if not isinstance(x, _g.Tensor) else x
    if t.dtype != _dt.string:
        raise InvalidArgumentError(f"{what} needs strings, got {t.dtype.name}")
    return t


def encode_base64(input: Any, pad: bool = False, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """Web-safe base64 ("-" and "_" for "+" and "/") of each string's UTF-8 bytes; "=" padding
    only with pad."""
    return single("EncodeBase64", [_strings(input, "encode_base64")], {"pad": bool(pad)},
                  name=name or "EncodeBase64")


def decode_base64(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """The strings web-safe base64 encodes (padded or not); anything else is an error."""
    return single("DecodeBase64", [_strings(input, "decode_base64")], {}, name=name or "DecodeBase64")


def string_to_hash_bucket_strong(input: Any, num_buckets: int, key: Sequence[int],  # noqa: A002
                                 name: Optional[str] = None) -> _g.Tensor:
    """SipHash-2-4 of each string's UTF-8 bytes under `key` (two 64-bit integers), modulo
    num_buckets: TF's bucket for that string and key."""
    k = [int(v) for v in key]
    if len(k) != 2 or any(not 0 <= v < 2 ** 64 for v in k):
        raise InvalidArgumentError(f"string_to_hash_bucket_strong: key must be two unsigned 64-bit integers, got {key!r}")
    if int(num_buckets) < 1:
        raise InvalidArgumentError(f"string_to_hash_bucket_strong: num_buckets must be positive, got {num_buckets}")
    return single("StringToHashBucketStrong", [_strings(input, "string_to_hash_bucket_strong")],
                  {"num_buckets": int(num_buckets), "key": tuple(k)}, name=name or "StringToHashBucketStrong")


def _buckets(num_buckets: int, what: str) -> int:
    if int(num_buckets) < 1:
        raise InvalidArgumentError(f"{what}: num_buckets must be positive, got {num_buckets}")
    return int(num_buckets)


def string_to_hash_bucket_fast(input: Any, num_buckets: int, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """FarmHash Fingerprint64 of each string's UTF-8 bytes modulo num_buckets: TF's bucket."""
    n = _buckets(num_buckets, "string_to_hash_bucket_fast")
    return single("StringToHashBucketFast", [_strings(input, "string_to_hash_bucket_fast")],
                  {"num_buckets": n}, name=name or "StringToHashBucketFast")


def string_to_hash_bucket(string_tensor: Any, num_buckets: int, name: Optional[str] = None) -> _g.Tensor:
    """The legacy bucketing: TF's core Hash64 (seed 0xDECAFCAFFE) modulo num_buckets."""
    n = _buckets(num_buckets, "string_to_hash_bucket")
    return single("StringToHashBucket", [_strings(string_tensor, "string_to_hash_bucket")],
                  {"num_buckets": n}, name=name or "StringToHashBucket")
