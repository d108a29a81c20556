"""The values a meta graph carries, to JSON and back: op attributes, collection members.

An attribute value is written as plain JSON where JSON has the type (None, bool, int,
float, str, list) and as a one-key tagged object otherwise: {"$tuple": [...]}, {"$bytes":
base64}, {"$dtype": name}, {"$shape": dims or null}, {"$array": {...}}, {"$slice": [...]},
{"$ellipsis": 0}, {"$tensor": "op:0"} (a tensor of the same graph), {"$dict": [[k, v], ...]},
{"$np": [dtype, value]} (a NumPy scalar).  Anything else (a Python function, a Dataset
object) cannot be written: `encode` raises Unencodable, and the exporter decides what that
means for the op.  Decoding never runs code: no pickle, no eval.
"""
from __future__ import annotations

import base64
from typing import Any, Callable, Optional

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.shape import TensorShape, as_shape

__all__ = ["Unencodable", "encode", "decode", "encode_shape", "decode_shape"]


class Unencodable(TypeError):
    """A value a meta graph cannot carry (its type is in the message)."""


def encode_shape(s: Any) -> Optional[list]:
    s = as_shape(s)
    return None if s.rank is None else [None if d is None else int(d) for d in s.as_list()]


def decode_shape(v: Optional[list]) -> TensorShape:
    return TensorShape(None if v is None else [None if d is None else int(d) for d in v])


# the dtypes whose arrays a meta graph holds as raw little-endian bytes (complex: two floats each)
def _raw_ok(dt: np.dtype) -> bool:
    return dt.kind in "biuf" or dt in (np.dtype(np.complex64), np.dtype(np.complex128))


def _array(a: np.ndarray) -> dict:
    if a.dtype == object or a.dtype.kind in "SU":
        flat = [base64.b64encode(_dt.string_bytes(x)).decode("ascii") for x in a.reshape(-1)]
        return {"dtype": "string", "kind": a.dtype.kind, "shape": list(a.shape), "items": flat}
    if not _raw_ok(a.dtype):
        raise Unencodable(f"a NumPy array of dtype {a.dtype}")
    data = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
    return {"dtype": a.dtype.name, "shape": list(a.shape), "data": base64.b64encode(data).decode("ascii")}


def _unarray(d: dict) -> np.ndarray:
    shape = tuple(int(n) for n in d["shape"])
    if d["dtype"] == "string":
        items = [base64.b64decode(x) for x in d["items"]]
        if d.get("kind") == "U":
            return np.array([_dt.bytes_text(b) for b in items], dtype=str).reshape(shape)
        if d.get("kind") == "S":
            return np.array(items, dtype=bytes).reshape(shape)
        out = np.empty(len(items), dtype=object)
        out[:] = [_dt.bytes_text(b) for b in items]
        return out.reshape(shape)
    dt = np.dtype(d["dtype"])
    if not _raw_ok(dt):
        raise ValueError(f"array of dtype {dt} in a meta graph")
    raw = base64.b64decode(d["data"])
    if len(raw) != dt.itemsize * int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"array data of {len(raw)} bytes does not fill shape {shape} of {dt}")
    return np.frombuffer(raw, dtype=dt.newbyteorder("<")).astype(dt).reshape(shape)


def encode(v: Any) -> Any:
    """v as JSON-ready data; raises Unencodable for what a meta graph cannot hold."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int) and type(v) in (int,):
        return v
    if isinstance(v, float) and type(v) is float:
        return v
    if isinstance(v, np.generic):
        if v.dtype.kind not in "biuf":
            raise Unencodable(f"a NumPy scalar of dtype {v.dtype}")
        return {"$np": [v.dtype.name, v.item()]}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return {"$tuple": [encode(x) for x in v]}
    if isinstance(v, bytes):
        return {"$bytes": base64.b64encode(v).decode("ascii")}
    if isinstance(v, _dt.DType):
        return {"$dtype": v.name}
    if isinstance(v, TensorShape):
        return {"$shape": encode_shape(v)}
    if isinstance(v, np.ndarray):
        return {"$array": _array(v)}
    if isinstance(v, slice):
        return {"$slice": [encode(v.start), encode(v.stop), encode(v.step)]}
    if v is Ellipsis:
        return {"$ellipsis": 0}
    if isinstance(v, _g.Tensor):
        return {"$tensor": v.name}
    if isinstance(v, dict):
        return {"$dict": [[encode(k), encode(x)] for k, x in v.items()]}
    if isinstance(v, int):  # an int subclass (a Dimension): its value
        return int(v)
    raise Unencodable(f"a {type(v).__module__}.{type(v).__qualname__}")


def decode(v: Any, tensor: Callable[[str], Any]) -> Any:
    """The value `encode` wrote; `tensor(name)` resolves a tensor reference."""
    if isinstance(v, list):
        return [decode(x, tensor) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) != 1:
        raise ValueError(f"unknown tagged value with keys {sorted(v)}")
    (tag, x), = v.items()
    if tag == "$tuple":
        return tuple(decode(e, tensor) for e in x)
    if tag == "$bytes":
        return base64.b64decode(x)
    if tag == "$dtype":
        return _dt.as_dtype(x)
    if tag == "$shape":
        return decode_shape(x)
    if tag == "$array":
        return _unarray(x)
    if tag == "$slice":
        return slice(*(decode(e, tensor) for e in x))
    if tag == "$ellipsis":
        return Ellipsis
    if tag == "$tensor":
        return tensor(str(x))
    if tag == "$dict":
        return {_hashable(decode(k, tensor)): decode(e, tensor) for k, e in x}
    if tag == "$np":
        return np.dtype(x[0]).type(x[1])
    raise ValueError(f"unknown tag {tag!r}")


def _hashable(k: Any) -> Any:
    return tuple(_hashable(e) for e in k) if isinstance(k, list) else k
