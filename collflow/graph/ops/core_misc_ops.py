"""TF1's small core ops: tf.timestamp, tf.fingerprint, tf.guarantee_const, tf.to_complex64/128.

- Timestamp: the wall-clock time in float64 seconds when the op runs; stateful, so it is
  never constant-folded or merged with another Timestamp (the registry's `stateful` fact).
- Fingerprint ("farmhash64", the only method TF has): uint8 [dim0, 8], each row of `data`
  hashed with FarmHash's Fingerprint64 and stored little-endian.  A numeric row is hashed
  as its bytes in memory; a string row of one string is that string's fingerprint, a row of
  several strings the fingerprint of their fingerprints' 8-byte little-endian encodings.
- GuaranteeConst: the identity (TF's promise that the value is constant); like TF's it has
  no gradient registered, so tf.gradients through it is a LookupError.
Kernels in kernels/core_misc_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from . import math_ops as _m
from .op_util import same_shape_fn, single

__all__ = ["timestamp", "fingerprint", "guarantee_const", "to_complex64", "to_complex128"]

register_op("Timestamp", lambda op: [(_dt.float64, TensorShape(()))], stateful=True, host_only=True)
not_differentiable("Timestamp")


def timestamp(name: Optional[str] = None) -> _g.Tensor:
    """Seconds since the Unix epoch (float64) at the time the op runs."""
    return single("Timestamp", [], name=name or "Timestamp")


def _fingerprint_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.shape.rank is not None and x.shape.rank < 1:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{op.name}' (op: 'Fingerprint') "
                         "with input shapes: []")
    d0 = x.shape.as_list()[0] if x.shape.rank is not None else None
    return [(_dt.uint8, TensorShape([d0, 8]))]


register_op("Fingerprint", _fingerprint_spec, host_only=True)
not_differentiable("Fingerprint")


def fingerprint(data: Any, method: str = "farmhash64", name: Optional[str] = None) -> _g.Tensor:
    """uint8 [data.shape[0], 8]: FarmHash Fingerprint64 of each row of `data` (rank >= 1)."""
    x = _g.convert_to_tensor(data)
    with x.graph.as_default():
        m = _g.convert_to_tensor(method, dtype=_dt.string)
        return single("Fingerprint", [x, m], name=name or "Fingerprint")


register_op("GuaranteeConst", same_shape_fn)


def guarantee_const(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF's name
    """`input` itself, promised constant for the run (TF uses the promise to fold; no gradient)."""
    return single("GuaranteeConst", [_g.convert_to_tensor(input)], name=name or "GuaranteeConst")


def to_complex64(x: Any, name: str = "ToComplex64") -> _g.Tensor:
    """tf.cast(x, complex64) (TF1's deprecated tf.to_complex64)."""
    return _m.cast(x, _dt.complex64, name=name)


def to_complex128(x: Any, name: str = "ToComplex128") -> _g.Tensor:
    """tf.cast(x, complex128) (TF1's deprecated tf.to_complex128)."""
    return _m.cast(x, _dt.complex128, name=name)
