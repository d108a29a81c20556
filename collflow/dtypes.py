"""DTypes and their NumPy mapping.

A DType wraps one NumPy dtype and carries the few predicates the graph layer needs
(is_floating for gradients, is_integer for indices).  `as_dtype` accepts a DType, a
NumPy dtype, a NumPy scalar type or a name such as "float32".
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "DType", "as_dtype", "float16", "float32", "float64", "int8", "int16", "int32",
    "int64", "uint8", "uint16", "uint32", "uint64", "bool_", "string", "resource", "double", "half",
    "complex64", "complex128", "qint8", "quint8", "qint16", "quint16", "qint32", "QUANTIZED_DTYPES",
]


class DType:
    """A tensor element type (a thin, hashable wrapper over a NumPy dtype)."""

    __slots__ = ("name", "np", "_hash", "_quantized")

    def __init__(self, name: str, np_dtype: Any, quantized: bool = False):
        self.name = name
        self.np = np.dtype(np_dtype)  # a quantized type's storage: the plain integer type
        self._hash = hash(name)
        self._quantized = quantized

    @property
    def as_numpy_dtype(self) -> Any:
        # TF names a quantized type's NumPy type by a one-field structured dtype
        # ([("qint8", "i1")]); its values are stored (and fetched) as the plain integers
        if self._quantized:
            return np.dtype([(self.name, self.np)])
        return self.np.type

    @property
    def is_floating(self) -> bool:
        return self.np.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.np.kind in "iu" and not self._quantized

    @property
    def is_bool(self) -> bool:
        return self.np.kind == "b"

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    size = itemsize  # TF1's DType.size

    # TF1 programs read these off a tensor's dtype (v.dtype.base_dtype: a variable's value
    # type); collflow has no reference dtypes, so base_dtype is the dtype itself
    @property
    def base_dtype(self) -> "DType":
        return self

    @property
    def real_dtype(self) -> "DType":
        """The type of a complex type's parts (float32 for complex64); any other type itself."""
        if self.np.kind == "c":
            return float32 if self.np.itemsize == 8 else float64
        return self

    @property
    def is_complex(self) -> bool:
        # TF's is_floating is False for complex types: the two predicates never overlap
        return self.np.kind == "c"

    @property
    def is_unsigned(self) -> bool:
        return self.np.kind == "u" and not self._quantized

    @property
    def is_quantized(self) -> bool:
        return self._quantized

    @property
    def is_numpy_compatible(self) -> bool:
        return True

    @property
    def min(self) -> Any:
        """The smallest value of the type (TF1's DType.min; TypeError for a quantized type, as TF)."""
        if self._quantized:
            raise TypeError(f"Cannot find minimum value of {self.name} (a quantized type).")
        if self.np.kind == "f":
            return float(np.finfo(self.np).min)
        if self.np.kind in "iu":
            return int(np.iinfo(self.np).min)
        raise TypeError(f"Cannot find minimum value of {self.name}.")

    @property
    def max(self) -> Any:
        """The largest value of the type (TF1's DType.max; TypeError for a quantized type, as TF)."""
        if self._quantized:
            raise TypeError(f"Cannot find maximum value of {self.name} (a quantized type).")
        if self.np.kind == "f":
            return float(np.finfo(self.np).max)
        if self.np.kind in "iu":
            return int(np.iinfo(self.np).max)
        raise TypeError(f"Cannot find maximum value of {self.name}.")

    def is_compatible_with(self, other: Any) -> bool:
        """Whether a value of `other`'s type may stand where this type is expected (equal types)."""
        try:
            return self == as_dtype(other)
        except (TypeError, ValueError):
            return False

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self.name == other.name
        try:
            return self.name == as_dtype(other).name  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"cf.{self.name}"


float16 = DType("float16", np.float16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
uint16 = DType("uint16", np.uint16)
uint32 = DType("uint32", np.uint32)
uint64 = DType("uint64", np.uint64)
bool_ = DType("bool", np.bool_)
string = DType("string", np.object_)
# handle to a resource (variable, queue) in the Session's container; never a user array
resource = DType("resource", np.object_)
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)
# TF's quantized types: integers that stand for floats of a range carried beside them (the
# quantization ops' min/max); only those ops (and casts, reshapes, ...) take them
qint8 = DType("qint8", np.int8, quantized=True)
quint8 = DType("quint8", np.uint8, quantized=True)
qint16 = DType("qint16", np.int16, quantized=True)
quint16 = DType("quint16", np.uint16, quantized=True)
qint32 = DType("qint32", np.int32, quantized=True)
QUANTIZED_DTYPES = frozenset((qint8, quint8, qint16, quint16, qint32))
double = float64  # TensorFlow's aliases (cf.bool is set in collflow/__init__.py)
half = float16

_BY_NAME = {d.name: d for d in (float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                                 bool_, string, complex64, complex128)}
_BY_NAME["resource"] = resource
_BY_NAME.update({d.name: d for d in QUANTIZED_DTYPES})
# TensorFlow 1.x's other names: tf.as_dtype("float") is float32, not NumPy's float64
_BY_NAME.update({"float": float32, "double": float64, "half": float16})
# a plain NumPy integer type is the plain integer DType; TF's structured NumPy names of the
# quantized types (qint8.as_numpy_dtype) map back to them
_BY_NP = {d.np: d for d in _BY_NAME.values() if d.name not in ("resource",) and not d.is_quantized}
_BY_NP.update({d.as_numpy_dtype: d for d in QUANTIZED_DTYPES})
_BY_NP[np.dtype(np.object_)] = string


def as_dtype(value: Any) -> DType:
    """Converts a DType, NumPy dtype/type or name to a collflow DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is bool:
        return bool_
    if value is float:
        return float32
    if value is int:
        return int32
    if value is complex:  # TF converts a Python complex to complex128
        return complex128
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"cannot convert {value!r} to a collflow dtype") from None
    if npd.kind in "US":
        return string
    d = _BY_NP.get(npd)
    if d is None:
        raise TypeError(f"unsupported dtype {npd}; supported: {sorted(_BY_NAME)}")
    return d


def string_bytes(x: Any) -> bytes:
    """The bytes a string element stands for: bytes as they are, a str encoded as UTF-8 with
    its surrogates turned back into the bytes they kept (collflow's strings are str)."""
    if isinstance(x, (bytes, bytearray, np.bytes_)):
        return bytes(x)
    return str(x).encode("utf-8", "surrogateescape")


def bytes_text(b: bytes) -> str:
    """bytes as collflow's str: UTF-8, undecodable bytes kept as surrogates (string_bytes undoes it)."""
    return bytes(b).decode("utf-8", "surrogateescape")


def string_text(x: Any) -> str:
    """A string element as collflow's str: bytes (what Session.run gives) decoded as bytes_text,
    anything else str() (string_bytes undoes it)."""
    return bytes_text(x) if isinstance(x, (bytes, bytearray, np.bytes_)) else str(x)


def string_array(value: Any) -> np.ndarray:
    """A string tensor's value as collflow holds it: an object array of Python str.

    Bytes (what TF1 programs feed and write, e.g. serialized records) are decoded as UTF-8
    with undecodable bytes kept as surrogates, so `s.encode("utf-8", "surrogateescape")`
    gives back the exact bytes; str stays as is; other elements are left to the caller's
    checks."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "U":
        return value.astype(object)
    if isinstance(value, (bytes, np.bytes_)):
        return np.array(bytes_text(value), dtype=object)
    try:
        a = np.asarray(value, dtype=object)
    except ValueError:
        raise ValueError(f"cannot make a string array from {value!r} (ragged nesting?)") from None
    if a.dtype != object:
        a = a.astype(object)
    flat = a.reshape(-1)
    if any(isinstance(x, (bytes, np.bytes_, np.str_)) for x in flat):
        a = a.copy()
        flat = a.reshape(-1)
        for i, x in enumerate(flat):
            if isinstance(x, (bytes, np.bytes_)):
                flat[i] = bytes_text(x)
            elif isinstance(x, np.str_):
                flat[i] = str(x)
    return a


def user_string_value(value: Any) -> Any:
    """user_strings, with a 0-d string array given as its one bytes object (what a fetch, a
    py_func argument or a checkpoint read hands over for a string scalar)."""
    if isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0:
        value = value[()]
    return user_strings(value)


def user_strings(value: Any) -> Any:
    """A string value as TensorFlow 1.x hands it to the user (Session.run, py_func, make_ndarray):
    bytes for collflow's str (`s.encode("utf-8", "surrogateescape")`, so undecodable bytes come
    back as they were), an object array of bytes for an array (a new one), anything else as is."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if not isinstance(value, np.ndarray) or value.dtype != object:
        return value
    out = np.empty(value.shape, dtype=object)
    items = [x.encode("utf-8", "surrogateescape") if isinstance(x, str) else x for x in value.reshape(-1).tolist()]
    flat = out.reshape(-1)
    if all(type(x) is bytes for x in items):
        flat[:] = items
    else:  # not only strings (e.g. handles): element by element, so nothing is broadcast
        for i, x in enumerate(items):
            flat[i] = x
    return out
