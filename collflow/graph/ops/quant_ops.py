"""tf.quantization's float-to-float simulations of quantization (TF1 also has the fake_quant
names at the top level): fake_quant_with_min_max_args/vars/vars_per_channel with their
*_gradient ops, and quantize_and_dequantize (the QuantizeAndDequantizeV2 op).

FakeQuant nudges [min, max] so that 0.0 falls exactly on the integer grid of
[quant_min, quant_max] = [narrow_range ? 1 : 0, 2^num_bits - 1], clamps to the nudged range
and rounds to the grid (floor(x / scale + 0.5)), in float32 as TF computes it.  Its
gradient is straight-through inside the nudged range; the vars forms give min the summed
gradient of the inputs below the range and max that of the inputs above it.

quantize_and_dequantize rounds to a signed or unsigned num_bits grid scaled so that the
range (given, or the input's min and max) fits; its gradient is the identity (V2's);
quantize_and_dequantize_v2 (the V4 op) computes the same values and passes the gradient
only where the input lies in [input_min, input_max].
Kernels in kernels/quant_kernels.py.  The ops on the quantized dtypes (qint8, ...):
tf.quantize/dequantize/quantized_concat and tf.nn.quantized_* are in quantized_ops.py.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from .op_util import dense, make_op, single

__all__ = ["fake_quant_with_min_max_args", "fake_quant_with_min_max_args_gradient",
           "fake_quant_with_min_max_vars", "fake_quant_with_min_max_vars_gradient",
           "fake_quant_with_min_max_vars_per_channel", "fake_quant_with_min_max_vars_per_channel_gradient",
           "quantize_and_dequantize", "quantize_and_dequantize_v2"]


def _f32(x: Any, what: str) -> _g.Tensor:
    t = _g.convert_to_tensor(x, dtype=_dt.float32) if not isinstance(x, _g.Tensor) else x
    if t.dtype != _dt.float32:
        raise TypeError(f"{what}: expected float32, got {t.dtype.name}")
    return t


def _x_spec(op: _g.Operation) -> list:
    return [(_dt.float32, op.inputs[0].shape)]


def _check_scalar(t: _g.Tensor, what: str, op: _g.Operation) -> None:
    if t.shape.rank not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {t.shape.rank} for '{op.name}': {what}")


def _vars_spec(op: _g.Operation) -> list:
    _check_scalar(op.inputs[1], "min", op)
    _check_scalar(op.inputs[2], "max", op)
    return [(_dt.float32, op.inputs[0].shape)]


def _channel_spec(op: _g.Operation) -> list:
    x, mn, mx = op.inputs[:3]
    for t, what in ((mn, "min"), (mx, "max")):
        if t.shape.rank not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.rank} for '{op.name}': {what}")
    if x.shape.rank is not None and x.shape.rank < 1:
        raise ValueError(f"Shape must be at least rank 1 for '{op.name}': inputs")
    d = x.shape.as_list()[-1] if x.shape.rank is not None else None
    for t, what in ((mn, "min"), (mx, "max")):
        if d is not None and t.shape.rank == 1 and t.shape.as_list()[0] not in (None, d):
            raise ValueError(f"Dimensions must be equal, but are {d} and {t.shape.as_list()[0]} for "
                             f"'{op.name}': inputs' last dimension and {what}")
    return [(_dt.float32, x.shape)]


def _vars_grad_spec(op: _g.Operation) -> list:
    g, x = op.inputs[:2]
    return [(_dt.float32, x.shape), (_dt.float32, TensorShape(())), (_dt.float32, TensorShape(()))]


def _channel_grad_spec(op: _g.Operation) -> list:
    x, mn = op.inputs[1], op.inputs[2]
    return [(_dt.float32, x.shape), (_dt.float32, mn.shape), (_dt.float32, mn.shape)]


register_op("FakeQuantWithMinMaxArgs", _x_spec)
register_op("FakeQuantWithMinMaxArgsGradient", _x_spec)
register_op("FakeQuantWithMinMaxVars", _vars_spec)
register_op("FakeQuantWithMinMaxVarsGradient", _vars_grad_spec)
register_op("FakeQuantWithMinMaxVarsPerChannel", _channel_spec)
register_op("FakeQuantWithMinMaxVarsPerChannelGradient", _channel_grad_spec)
not_differentiable("FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxVarsGradient",
                   "FakeQuantWithMinMaxVarsPerChannelGradient")


def _args_attrs(min: float, max: float, num_bits: int, narrow_range: bool) -> dict:
    return {"min": float(min), "max": float(max), "num_bits": int(num_bits), "narrow_range": bool(narrow_range)}


def fake_quant_with_min_max_args(inputs: Any, min: float = -6.0, max: float = 6.0, num_bits: int = 8,  # noqa: A002
                                 narrow_range: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """inputs (float32) quantized to num_bits over the nudged [min, max] and back."""
    x = _f32(inputs, "fake_quant_with_min_max_args")
    return single("FakeQuantWithMinMaxArgs", [x], _args_attrs(min, max, num_bits, narrow_range),
                  name=name or "FakeQuantWithMinMaxArgs")


def fake_quant_with_min_max_args_gradient(gradients: Any, inputs: Any, min: float = -6.0,  # noqa: A002
                                          max: float = 6.0, num_bits: int = 8,  # noqa: A002
                                          narrow_range: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """gradients where inputs lie in the nudged [min, max], else 0."""
    g = _f32(gradients, "fake_quant_with_min_max_args_gradient")
    x = _f32(inputs, "fake_quant_with_min_max_args_gradient")
    return single("FakeQuantWithMinMaxArgsGradient", [g, x], _args_attrs(min, max, num_bits, narrow_range),
                  name=name or "FakeQuantWithMinMaxArgsGradient")


def _nb(num_bits: int, narrow_range: bool) -> dict:
    return {"num_bits": int(num_bits), "narrow_range": bool(narrow_range)}


def fake_quant_with_min_max_vars(inputs: Any, min: Any, max: Any, num_bits: int = 8,  # noqa: A002
                                 narrow_range: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """fake_quant_with_min_max_args with min and max as float32 scalar tensors."""
    x = _f32(inputs, "fake_quant_with_min_max_vars")
    with x.graph.as_default():
        mn, mx = _f32(min, "min"), _f32(max, "max")
        return single("FakeQuantWithMinMaxVars", [x, mn, mx], _nb(num_bits, narrow_range),
                      name=name or "FakeQuantWithMinMaxVars")


def fake_quant_with_min_max_vars_gradient(gradients: Any, inputs: Any, min: Any, max: Any,  # noqa: A002
                                          num_bits: int = 8, narrow_range: bool = False,
                                          name: Optional[str] = None) -> tuple:
    """(backprops wrt input, wrt min, wrt max) of fake_quant_with_min_max_vars."""
    g = _f32(gradients, "fake_quant_with_min_max_vars_gradient")
    with g.graph.as_default():
        x, mn, mx = _f32(inputs, "inputs"), _f32(min, "min"), _f32(max, "max")
        return tuple(make_op("FakeQuantWithMinMaxVarsGradient", [g, x, mn, mx], _nb(num_bits, narrow_range),
                             name=name or "FakeQuantWithMinMaxVarsGradient").outputs)


def fake_quant_with_min_max_vars_per_channel(inputs: Any, min: Any, max: Any, num_bits: int = 8,  # noqa: A002
                                             narrow_range: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """fake quantization with a [min, max] per entry of the inputs' last dimension."""
    x = _f32(inputs, "fake_quant_with_min_max_vars_per_channel")
    with x.graph.as_default():
        mn, mx = _f32(min, "min"), _f32(max, "max")
        return single("FakeQuantWithMinMaxVarsPerChannel", [x, mn, mx], _nb(num_bits, narrow_range),
                      name=name or "FakeQuantWithMinMaxVarsPerChannel")


def fake_quant_with_min_max_vars_per_channel_gradient(gradients: Any, inputs: Any, min: Any, max: Any,  # noqa: A002
                                                      num_bits: int = 8, narrow_range: bool = False,
                                                      name: Optional[str] = None) -> tuple:
    """(backprops wrt input, wrt min [d], wrt max [d]) of the per-channel fake quantization."""
    g = _f32(gradients, "fake_quant_with_min_max_vars_per_channel_gradient")
    with g.graph.as_default():
        x, mn, mx = _f32(inputs, "inputs"), _f32(min, "min"), _f32(max, "max")
        return tuple(make_op("FakeQuantWithMinMaxVarsPerChannelGradient", [g, x, mn, mx], _nb(num_bits, narrow_range),
                             name=name or "FakeQuantWithMinMaxVarsPerChannelGradient").outputs)


@register_gradient("FakeQuantWithMinMaxArgs")
def _args_grad(op: _g.Operation, grad: Any) -> list:
    a = op.attrs
    return [fake_quant_with_min_max_args_gradient(dense(grad), op.inputs[0], a["min"], a["max"], a["num_bits"],
                                                  a["narrow_range"])]


@register_gradient("FakeQuantWithMinMaxVars")
def _vars_grad(op: _g.Operation, grad: Any) -> list:
    x, mn, mx = op.inputs
    return list(fake_quant_with_min_max_vars_gradient(dense(grad), x, mn, mx, op.attrs["num_bits"],
                                                      op.attrs["narrow_range"]))


@register_gradient("FakeQuantWithMinMaxVarsPerChannel")
def _channel_grad(op: _g.Operation, grad: Any) -> list:
    x, mn, mx = op.inputs
    return list(fake_quant_with_min_max_vars_per_channel_gradient(dense(grad), x, mn, mx, op.attrs["num_bits"],
                                                                  op.attrs["narrow_range"]))


# -- quantize_and_dequantize (QuantizeAndDequantizeV2) ----------------------------------------

def _qdq_spec(op: _g.Operation) -> list:
    x, mn, mx = op.inputs
    if not x.dtype.is_floating:
        raise TypeError(f"quantize_and_dequantize: input must be a float tensor, got {x.dtype.name}")
    axis = op.attrs["axis"]
    want = 0 if axis == -1 else 1
    for t, what in ((mn, "input_min"), (mx, "input_max")):
        if t.shape.rank not in (None, want):
            raise ValueError(f"Shape must be rank {want} but is rank {t.shape.rank} for '{op.name}': {what}")
    if axis != -1 and x.shape.rank is not None and not -x.shape.rank <= axis < x.shape.rank:
        raise ValueError(f"quantize_and_dequantize: axis {axis} is out of range for rank {x.shape.rank}")
    return [(x.dtype, x.shape)]


register_op("QuantizeAndDequantizeV2", _qdq_spec)
register_op("QuantizeAndDequantizeV4", _qdq_spec)


@register_gradient("QuantizeAndDequantizeV2")
def _qdq_grad(op: _g.Operation, grad: Any) -> list:
    return [grad, None, None]


@register_gradient("QuantizeAndDequantizeV4")
def _qdq_v4_grad(op: _g.Operation, grad: Any) -> list:
    # straight-through where input_min <= x <= input_max (the range tensors, even when the
    # op took the input's own range, as TF's V4 gradient does); min and max get zeros
    from . import array_ops as _a
    from . import math_ops as _m
    x, mn, mx = op.inputs
    axis = op.attrs["axis"]
    if axis != -1:
        if x.shape.rank is None:
            raise ValueError("quantize_and_dequantize_v2: the gradient along an axis needs the input's rank")
        shape = [1] * x.shape.rank
        shape[axis] = -1
        mn, mx = _a.reshape(mn, shape), _a.reshape(mx, shape)
    inside = _m.logical_and(_m.greater_equal(x, mn), _m.less_equal(x, mx))
    grad = dense(grad)
    return [grad * _m.cast(inside, grad.dtype), _a.zeros_like(op.inputs[1]), _a.zeros_like(op.inputs[2])]


def quantize_and_dequantize(input: Any, input_min: Any, input_max: Any, signed_input: bool = True,  # noqa: A002
                            num_bits: int = 8, range_given: bool = False, round_mode: str = "HALF_TO_EVEN",
                            name: Optional[str] = None, narrow_range: bool = False,
                            axis: Optional[int] = None, _op_type: str = "QuantizeAndDequantizeV2") -> _g.Tensor:
    """input rounded to a num_bits grid spanning the range and back (per slice along `axis`
    if given); range_given=False takes the input's own min and max."""
    if round_mode not in ("HALF_TO_EVEN", "HALF_UP"):
        raise ValueError(f"Attr 'round_mode' of '{_op_type}' Op passed string {round_mode!r} not in: "
                         "\"HALF_TO_EVEN\", \"HALF_UP\".")
    x = _g.convert_to_tensor(input)
    with x.graph.as_default():
        mn = _g.convert_to_tensor(input_min, dtype=x.dtype)
        mx = _g.convert_to_tensor(input_max, dtype=x.dtype)
        ax = -1 if axis is None else int(axis)
        if ax < 0 and axis is not None and x.shape.rank is not None:
            ax += x.shape.rank
        attrs = {"signed_input": bool(signed_input), "num_bits": int(num_bits), "range_given": bool(range_given),
                 "round_mode": round_mode, "narrow_range": bool(narrow_range), "axis": ax}
        return single(_op_type, [x, mn, mx], attrs, name=name or _op_type)


def quantize_and_dequantize_v2(input: Any, input_min: Any, input_max: Any, signed_input: bool = True,  # noqa: A002
                               num_bits: int = 8, range_given: bool = False, round_mode: str = "HALF_TO_EVEN",
                               name: Optional[str] = None, narrow_range: bool = False,
                               axis: Optional[int] = None) -> _g.Tensor:
    """quantize_and_dequantize's values (the V4 op), with a gradient that is 0 where the
    input lies outside [input_min, input_max]."""
    return quantize_and_dequantize(input, input_min, input_max, signed_input, num_bits, range_given, round_mode,
                                   name, narrow_range, axis, _op_type="QuantizeAndDequantizeV4")
