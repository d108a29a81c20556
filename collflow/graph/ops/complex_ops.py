"""Complex numbers (TF1's tf.complex, tf.real, tf.imag, tf.conj, tf.angle and tf.abs of a
complex tensor) with TensorFlow's gradients.

TF's convention for complex gradients: for a real loss L of z = x + iy, the gradient it
returns is dL/dx + i dL/dy (the conjugate of the Wirtinger derivative dL/dz, times 2), and
each holomorphic op's rule multiplies the incoming gradient by the conjugate of its
derivative.  Kernels in kernels/complex_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import broadcast_static
from . import array_ops as _a
from . import math_ops as _m
from .op_util import single

__all__ = ["complex", "real", "imag", "conj", "angle", "complex_abs"]

_COMPLEX_OF = {_dt.float32: _dt.complex64, _dt.float64: _dt.complex128}


def _complex_spec(op: _g.Operation) -> list:
    x, y = op.inputs
    if x.dtype != y.dtype or x.dtype not in _COMPLEX_OF:
        raise TypeError(f"complex needs two float32 or two float64 parts, got {x.dtype.name} and {y.dtype.name}")
    return [(op.attrs["Tout"], broadcast_static(x.shape, y.shape))]


def _part_spec(op: _g.Operation) -> list:
    # Real/Imag/ComplexAbs/Angle: a float result; a real input is its own real part (as TF)
    x = op.inputs[0]
    return [(op.attrs["Tout"], x.shape)]


def _conj_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if not (x.dtype.is_complex or x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError(f"conj needs a numeric tensor, got {x.dtype.name}")
    return [(x.dtype, x.shape)]


register_op("Complex", _complex_spec)
for _n in ("Real", "Imag", "ComplexAbs", "Angle"):
    register_op(_n, _part_spec)
register_op("Conj", _conj_spec)


def _tensor(x: Any) -> _g.Tensor:
    return _g.convert_to_tensor(_m._as_value(x))


def complex(real: Any, imag: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A001 - TF name
    """real + i imag (tf.complex): float32 parts give complex64, float64 parts complex128."""
    real, imag = _m._operands(real, imag)
    if real.dtype not in _COMPLEX_OF or imag.dtype != real.dtype:
        raise TypeError(f"complex needs two float32 or two float64 parts, got {real.dtype.name} and "
                        f"{imag.dtype.name}")
    return single("Complex", [real, imag], {"Tout": _COMPLEX_OF[real.dtype]}, name=name or "Complex")


def real(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """The real part (tf.real); a real tensor is returned as it is, as TF."""
    x = _tensor(input)
    if not x.dtype.is_complex:
        return x
    return single("Real", [x], {"Tout": x.dtype.real_dtype}, name=name or "Real")


def imag(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """The imaginary part (tf.imag); zeros for a real tensor, as TF."""
    x = _tensor(input)
    if not x.dtype.is_complex:
        return _a.zeros_like(x, name=name)
    return single("Imag", [x], {"Tout": x.dtype.real_dtype}, name=name or "Imag")


def conj(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """The complex conjugate (tf.conj); a real tensor is returned as it is, as TF."""
    x = _tensor(x)
    if not x.dtype.is_complex:
        if not (x.dtype.is_floating or x.dtype.is_integer):
            raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype.name}")
        return x
    return single("Conj", [x], name=name or "Conj")


def angle(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """The argument atan2(imag, real) (tf.angle); for a real tensor TF gives pi where x < 0, else 0."""
    x = _tensor(input)
    if not x.dtype.is_complex:
        import math
        return _a.where(_m.less(x, _a.zeros_like(x)), _a.ones_like(x) * math.pi, _a.zeros_like(x))
    return single("Angle", [x], {"Tout": x.dtype.real_dtype}, name=name or "Angle")


def complex_abs(x: Any, name: Optional[str] = None) -> _g.Tensor:
    """|x| of a complex tensor as a float tensor (TF's ComplexAbs, what tf.abs builds for complex)."""
    x = _tensor(x)
    return single("ComplexAbs", [x], {"Tout": x.dtype.real_dtype}, name=name or "ComplexAbs")


def conj_if_complex(t: Any) -> Any:
    """conj(t) for a complex tensor, t itself otherwise: the gradient rules' conjugation, which
    adds nothing to a real graph."""
    return conj(t) if t.dtype.is_complex else t


# -- gradients (TF's math_grad.py rules) ------------------------------------------------------

@register_gradient("Complex")
def _complex_grad(op: _g.Operation, g: Any) -> list:
    x, y = op.inputs
    g = _g.convert_to_tensor(g)
    return [_m.sum_to_shape_of(real(g), x), _m.sum_to_shape_of(imag(g), y)]


@register_gradient("Real")
def _real_grad(op: _g.Operation, g: Any) -> list:
    g = _g.convert_to_tensor(g)
    return [complex(g, _a.zeros_like(g))]


@register_gradient("Imag")
def _imag_grad(op: _g.Operation, g: Any) -> list:
    g = _g.convert_to_tensor(g)
    return [complex(_a.zeros_like(g), g)]


register_gradient("Conj")(lambda op, g: [conj(_g.convert_to_tensor(g))])


@register_gradient("Angle")
def _angle_grad(op: _g.Operation, g: Any) -> list:
    # d angle: (-im dx + re dy) / |z|^2, i.e. -g / (im + i re) in TF's convention
    z = op.inputs[0]
    g = _g.convert_to_tensor(g)
    inv = _m.reciprocal(complex(imag(z), real(z)))
    return [-complex(g, _a.zeros_like(g)) * inv]


@register_gradient("ComplexAbs")
def _complex_abs_grad(op: _g.Operation, g: Any) -> list:
    # g z / |z|, and 0 at z = 0 (TF divides with div_no_nan there)
    from .math_more_ops import div_no_nan
    z, r = op.inputs[0], op.outputs[0]
    g = _g.convert_to_tensor(g)
    return [div_no_nan(complex(g, _a.zeros_like(g)) * z, complex(r, _a.zeros_like(r)))]
