"""TF1's ops on the quantized dtypes (qint8, quint8, qint16, quint16, qint32): quantize
(QuantizeV2), dequantize, quantized_concat, and tf.nn's quantized_conv2d, quantized_avg_pool,
quantized_max_pool and quantized_relu_x.

A quantized tensor is an integer tensor that travels with two float32 tensors, the float
range [min, max] its integers stand for; each op takes the ranges of its inputs and returns
the range of its output.  The modes of quantize/dequantize (MIN_COMBINED, MIN_FIRST, SCALED)
are TF's; the kernels (kernels/quantized_kernels.py) reproduce TF's CPU kernels' float32
arithmetic, so results match bit for bit.  As in TF none of these ops has a gradient
(tf.gradients through them raises LookupError), and an op whose dtypes TF's CPU kernels do
not cover (quantized_concat of qint8, say) builds but fails when run (InvalidArgumentError).
"""
from __future__ import annotations

import collections
from typing import Any, List, Optional, Sequence

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_op
from ..shape import TensorShape
from .nn_ops import conv_output_size
from .op_util import make_op

__all__ = ["quantize", "quantize_v2", "dequantize", "quantized_concat", "quantized_conv2d", "quantized_avg_pool",
           "quantized_max_pool", "quantized_relu_x", "QUANTIZE_MODES", "ROUND_MODES"]

QUANTIZE_MODES = ("MIN_COMBINED", "MIN_FIRST", "SCALED")
ROUND_MODES = ("HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN")
_QNAMES = "qint8, quint8, qint32, qint16, quint16"
_SCALAR = TensorShape(())


def _tensor(x: Any, dtype: Optional[_dt.DType] = None) -> _g.Tensor:
    return x if isinstance(x, _g.Tensor) else _g.convert_to_tensor(x, dtype=dtype)


def _quantized(x: Any, param: str, what: str) -> _g.Tensor:
    t = _tensor(x)
    if not t.dtype.is_quantized:
        raise TypeError(f"Value passed to parameter '{param}' has DataType {t.dtype.name} not in list of allowed "
                        f"values: {_QNAMES} ({what})")
    return t


def _float(x: Any, param: str, op_type: str) -> _g.Tensor:
    t = _tensor(x, _dt.float32)
    if t.dtype != _dt.float32:
        raise TypeError(f"Input '{param}' of '{op_type}' Op has type {t.dtype.name} that does not match expected "
                        "type of float32.")
    return t


def _qtype(T: Any, param: str) -> _dt.DType:  # noqa: N803 - TF's name
    d = _dt.as_dtype(T)
    if not d.is_quantized:
        raise TypeError(f"Value passed to parameter '{param}' has DataType {d.name} not in list of allowed values: "
                        f"{_QNAMES}")
    return d


def _choice(value: str, allowed: Sequence[str], attr: str, op_type: str) -> str:
    if value not in allowed:
        raise ValueError(f"Attr '{attr}' of '{op_type}' Op passed string {value!r} not in: "
                         + ", ".join(f'"{a}"' for a in allowed) + ".")
    return value


def _rank_check(t: _g.Tensor, rank: int, op: _g.Operation, what: str) -> None:
    if t.shape.rank is not None and t.shape.rank != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {t.shape.rank} for '{op.name}' ({op.type}): {what}")


# -- quantize / dequantize ----------------------------------------------------------------

def _minmax_spec(op: _g.Operation) -> TensorShape:
    """The shape of the range inputs (and outputs): scalars, or [depth] along `axis`."""
    x, mn, mx = op.inputs[:3]
    axis = op.attrs["axis"]
    rank = 0 if axis == -1 else 1
    _rank_check(mn, rank, op, "min_range")
    _rank_check(mx, rank, op, "max_range")
    if axis == -1:
        return _SCALAR
    if x.shape.rank is not None and x.shape.rank < axis + 1:
        raise ValueError(f"Shape must be at least rank {axis + 1} but is rank {x.shape.rank} for '{op.name}' "
                         f"({op.type}): input")
    depth = x.shape.as_list()[axis] if x.shape.rank is not None else None
    for t in (mn, mx):
        d = t.shape.as_list()[0] if t.shape.rank == 1 else None
        if d is not None and depth is not None and d != depth:
            raise ValueError(f"Dimensions must be equal, but are {d} and {depth} for '{op.name}' ({op.type}): "
                             f"the ranges and the input's dimension {axis}")
        depth = depth if depth is not None else d
    return TensorShape([depth])


def _quantize_spec(op: _g.Operation) -> list:
    mm = _minmax_spec(op)
    return [(op.attrs["T"], op.inputs[0].shape), (_dt.float32, mm), (_dt.float32, mm)]


def _dequantize_spec(op: _g.Operation) -> list:
    _minmax_spec(op)
    return [(op.attrs["dtype"], op.inputs[0].shape)]


register_op("QuantizeV2", _quantize_spec)
register_op("Dequantize", _dequantize_spec)


def _axis(axis: Optional[int], x: _g.Tensor) -> int:
    """The axis attribute: -1 for none; a negative axis counted from the end (TF's wrappers)."""
    if axis is None:
        return -1
    axis = int(axis)
    if axis < 0:
        if x.shape.rank is None:
            raise ValueError("input should have known rank to use negative axis.")
        axis %= x.shape.rank
    return axis


def quantize(input: Any, min_range: Any, max_range: Any, T: Any,  # noqa: A002,N803 - TF's names
             mode: str = "MIN_COMBINED", round_mode: str = "HALF_AWAY_FROM_ZERO", name: Optional[str] = None,
             narrow_range: bool = False, axis: Optional[int] = None,
             ensure_minimum_range: float = 0.01) -> tuple:
    """float32 `input` quantized to the quantized type T over [min_range, max_range] (per
    slice along `axis` if given): (output, output_min, output_max), the ranges the op used."""
    return quantize_v2(input, min_range, max_range, T, mode, name, round_mode, narrow_range, axis,
                       ensure_minimum_range)


def quantize_v2(input: Any, min_range: Any, max_range: Any, T: Any,  # noqa: A002,N803 - TF's names
                mode: str = "MIN_COMBINED", name: Optional[str] = None, round_mode: str = "HALF_AWAY_FROM_ZERO",
                narrow_range: bool = False, axis: Optional[int] = None,
                ensure_minimum_range: float = 0.01) -> tuple:
    """tf.quantize_v2: tf.quantize with TF1's older argument order (name before round_mode)."""
    _choice(mode, QUANTIZE_MODES, "mode", "QuantizeV2")
    _choice(round_mode, ROUND_MODES, "round_mode", "QuantizeV2")
    qt = _qtype(T, "T")
    x = _float(input, "input", "QuantizeV2")
    with x.graph.as_default():
        mn, mx = _float(min_range, "min_range", "QuantizeV2"), _float(max_range, "max_range", "QuantizeV2")
        attrs = {"T": qt, "mode": mode, "round_mode": round_mode, "narrow_range": bool(narrow_range),
                 "axis": _axis(axis, x), "ensure_minimum_range": float(ensure_minimum_range)}
        return _triple(make_op("QuantizeV2", [x, mn, mx], attrs, name=name or "QuantizeV2"))


def dequantize(input: Any, min_range: Any, max_range: Any, mode: str = "MIN_COMBINED",  # noqa: A002
               name: Optional[str] = None, axis: Optional[int] = None, narrow_range: bool = False,
               dtype: Any = _dt.float32) -> _g.Tensor:
    """The float32 values a quantized `input` stands for, given its range (the inverse of
    tf.quantize in the same mode)."""
    _choice(mode, QUANTIZE_MODES, "mode", "Dequantize")
    out = _dt.as_dtype(dtype)
    if out != _dt.float32:  # TF also allows bfloat16, which collflow does not have
        raise TypeError(f"Value passed to parameter 'dtype' has DataType {out.name} not in list of allowed values: "
                        "bfloat16, float32")
    x = _quantized(input, "input", "dequantize")
    with x.graph.as_default():
        mn, mx = _float(min_range, "min_range", "Dequantize"), _float(max_range, "max_range", "Dequantize")
        attrs = {"T": x.dtype, "mode": mode, "narrow_range": bool(narrow_range), "axis": _axis(axis, x), "dtype": out}
        return make_op("Dequantize", [x, mn, mx], attrs, name=name or "Dequantize").outputs[0]


# TF's generated ops return namedtuples of these names (Session.run rebuilds them)
_RESULTS = {
    "QuantizeV2": collections.namedtuple("QuantizeV2", ["output", "output_min", "output_max"]),
    "QuantizedConcat": collections.namedtuple("QuantizedConcat", ["output", "output_min", "output_max"]),
    "QuantizedConv2D": collections.namedtuple("QuantizedConv2D", ["output", "min_output", "max_output"]),
    "QuantizedAvgPool": collections.namedtuple("QuantizedAvgPool", ["output", "min_output", "max_output"]),
    "QuantizedMaxPool": collections.namedtuple("QuantizedMaxPool", ["output", "min_output", "max_output"]),
    "QuantizedReluX": collections.namedtuple("QuantizedReluX", ["activations", "min_activations",
                                                                "max_activations"]),
}


def _triple(op: _g.Operation) -> tuple:
    return _RESULTS[op.type](*op.outputs)


# -- quantized_concat -----------------------------------------------------------------------

def _concat_spec(op: _g.Operation) -> list:
    n = op.attrs["N"]
    values = op.inputs[1:1 + n]
    for i, t in enumerate(op.inputs[1 + n:]):
        _rank_check(t, 0, op, "input_mins" if i < n else "input_maxes")
    dim = _static_int(op.inputs[0])
    shapes = [v.shape for v in values]
    if dim is None or any(s.rank is None for s in shapes):
        rank = next((s.rank for s in shapes if s.rank is not None), None)
        return [(op.attrs["T"], TensorShape([None] * rank) if rank is not None else TensorShape(None)),
                (_dt.float32, _SCALAR), (_dt.float32, _SCALAR)]
    rank = shapes[0].rank
    if not 0 <= dim < max(rank, 1):
        raise ValueError(f"Expected concat dimension in the range [0, {rank}), but got {dim} for '{op.name}'")
    out: List[Optional[int]] = list(shapes[0].as_list())
    for s in shapes[1:]:
        if s.rank != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {s.rank} for '{op.name}' (QuantizedConcat)")
        for j, d in enumerate(s.as_list()):
            if j == dim:
                out[j] = None if out[j] is None or d is None else out[j] + d
            elif out[j] is not None and d is not None and out[j] != d:
                raise ValueError(f"Dimension {j} in both shapes must be equal, but are {out[j]} and {d} for "
                                 f"'{op.name}' (QuantizedConcat)")
            elif out[j] is None:
                out[j] = d
    return [(op.attrs["T"], TensorShape(out)), (_dt.float32, _SCALAR), (_dt.float32, _SCALAR)]


def _static_int(t: _g.Tensor) -> Optional[int]:
    if t.op.type == "Const":
        return int(np.asarray(t.op.attrs["value"]))
    return None


register_op("QuantizedConcat", _concat_spec, host_inputs=(0,))


def quantized_concat(concat_dim: Any, values: Sequence[Any], input_mins: Sequence[Any], input_maxes: Sequence[Any],
                     name: Optional[str] = None) -> tuple:
    """Quantized tensors joined along concat_dim, each requantized to the common range:
    (output, output_min, output_max)."""
    values = list(values)
    if len(values) < 2:
        raise ValueError(f"List argument 'values' to 'QuantizedConcat' Op with length {len(values)} shorter than "
                         "minimum length 2.")
    vs = [_quantized(v, "values", "quantized_concat") for v in values]
    if len({v.dtype for v in vs}) != 1:
        raise TypeError("Tensors in list passed to 'values' of 'QuantizedConcat' Op have types "
                        f"[{', '.join(v.dtype.name for v in vs)}] that don't all match.")
    mins, maxes = list(input_mins), list(input_maxes)
    for what, lst in (("input_mins", mins), ("input_maxes", maxes)):
        if len(lst) != len(vs):
            raise ValueError(f"List argument '{what}' to 'QuantizedConcat' Op with length {len(lst)} must match "
                             f"length {len(vs)} of argument 'values'.")
    with vs[0].graph.as_default():
        dim = _tensor(concat_dim, _dt.int32)
        if dim.dtype != _dt.int32:
            raise TypeError(f"Input 'concat_dim' of 'QuantizedConcat' Op has type {dim.dtype.name} that does not "
                            "match expected type of int32.")
        fl = [_float(m, what, "QuantizedConcat") for m, what in
              [(m, "input_mins") for m in mins] + [(m, "input_maxes") for m in maxes]]
        op = make_op("QuantizedConcat", [dim] + vs + fl, {"N": len(vs), "T": vs[0].dtype},
                     name=name or "QuantizedConcat")
        return _triple(op)


# -- tf.nn: conv2d, pooling, relu_x ---------------------------------------------------------

def _list4(v: Any, what: str) -> List[int]:
    vals = [int(a) for a in v]
    if len(vals) != 4:
        raise ValueError(f"Sliding window {what} field must specify 4 dimensions")
    return vals


def _padding(p: Any) -> str:
    if isinstance(p, (bytes, str)):
        p = p.decode() if isinstance(p, bytes) else p
        if p in ("SAME", "VALID"):
            return p
    raise ValueError(f"Attr 'padding' passed string {p!r} not in: \"SAME\", \"VALID\".")


def _range_scalars(op: _g.Operation, first: int, names: Sequence[str]) -> None:
    for i, nm in enumerate(names):
        _rank_check(op.inputs[first + i], 0, op, nm)


def _conv_spec(op: _g.Operation) -> list:
    x, w = op.inputs[:2]
    _range_scalars(op, 2, ("min_input", "max_input", "min_filter", "max_filter"))
    if x.shape.rank not in (None, 4):
        raise ValueError(f"Shape must be rank 4 but is rank {x.shape.rank} for '{op.name}' (QuantizedConv2D): input")
    if w.shape.rank not in (None, 4):
        raise ValueError(f"Shape must be rank 4 but is rank {w.shape.rank} for '{op.name}' (QuantizedConv2D): filter")
    xs = x.shape.as_list() if x.shape.rank is not None else [None] * 4
    ws = w.shape.as_list() if w.shape.rank is not None else [None] * 4
    if xs[3] is not None and ws[2] is not None and xs[3] != ws[2]:
        raise ValueError(f"Dimensions must be equal, but are {xs[3]} and {ws[2]} for '{op.name}' (QuantizedConv2D): "
                         "the input's depth and the filter's input depth")
    s = op.attrs["strides"]
    h = conv_output_size(xs[1], ws[0], s[1], 1, op.attrs["padding"])[0] if ws[0] is not None else None
    wd = conv_output_size(xs[2], ws[1], s[2], 1, op.attrs["padding"])[0] if ws[1] is not None else None
    return [(op.attrs["out_type"], TensorShape([xs[0], h, wd, ws[3]])), (_dt.float32, _SCALAR),
            (_dt.float32, _SCALAR)]


def _pool_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    _range_scalars(op, 1, ("min_input", "max_input"))
    if x.shape.rank not in (None, 4):
        raise ValueError(f"Shape must be rank 4 but is rank {x.shape.rank} for '{op.name}' ({op.type}): input")
    xs = x.shape.as_list() if x.shape.rank is not None else [None] * 4
    k, s, p = op.attrs["ksize"], op.attrs["strides"], op.attrs["padding"]
    h = conv_output_size(xs[1], k[1], s[1], 1, p)[0]
    w = conv_output_size(xs[2], k[2], s[2], 1, p)[0]
    return [(x.dtype, TensorShape([xs[0], h, w, xs[3]])), (_dt.float32, _SCALAR), (_dt.float32, _SCALAR)]


def _relu_x_spec(op: _g.Operation) -> list:
    _range_scalars(op, 1, ("max_value", "min_features", "max_features"))
    return [(op.attrs["out_type"], op.inputs[0].shape), (_dt.float32, _SCALAR), (_dt.float32, _SCALAR)]


register_op("QuantizedConv2D", _conv_spec)
register_op("QuantizedAvgPool", _pool_spec)
register_op("QuantizedMaxPool", _pool_spec)
register_op("QuantizedReluX", _relu_x_spec)


def quantized_conv2d(input: Any, filter: Any, min_input: Any, max_input: Any, min_filter: Any,  # noqa: A002
                     max_filter: Any, strides: Sequence[int], padding: str, out_type: Any = _dt.qint32,
                     dilations: Sequence[int] = (1, 1, 1, 1), name: Optional[str] = None) -> tuple:
    """2-D convolution of quantized NHWC `input` with an HWIO `filter`, each counted from the
    level that stands for 0.0: (output, min_output, max_output), output in out_type (qint32)."""
    x = _quantized(input, "input", "quantized_conv2d")
    w = _quantized(filter, "filter", "quantized_conv2d")
    with x.graph.as_default():
        rng = [_float(v, nm, "QuantizedConv2D") for v, nm in ((min_input, "min_input"), (max_input, "max_input"),
                                                               (min_filter, "min_filter"), (max_filter, "max_filter"))]
        attrs = {"Tinput": x.dtype, "Tfilter": w.dtype, "out_type": _qtype(out_type, "out_type"),
                 "strides": _list4(strides, "strides"), "padding": _padding(padding),
                 "dilations": _list4(dilations, "dilations")}
        return _triple(make_op("QuantizedConv2D", [x, w] + rng, attrs, name=name or "QuantizedConv2D"))


def _pool(op_type: str, input: Any, min_input: Any, max_input: Any, ksize: Sequence[int],  # noqa: A002
          strides: Sequence[int], padding: str, name: Optional[str]) -> tuple:
    x = _quantized(input, "input", op_type)
    with x.graph.as_default():
        mn, mx = _float(min_input, "min_input", op_type), _float(max_input, "max_input", op_type)
        attrs = {"T": x.dtype, "ksize": _list4(ksize, "ksize"), "strides": _list4(strides, "strides"),
                 "padding": _padding(padding)}
        return _triple(make_op(op_type, [x, mn, mx], attrs, name=name or op_type))


def quantized_avg_pool(input: Any, min_input: Any, max_input: Any, ksize: Sequence[int],  # noqa: A002
                       strides: Sequence[int], padding: str, name: Optional[str] = None) -> tuple:
    """Average pooling of quantized NHWC `input` (each window's mean over its in-image levels,
    rounded half to even); the range passes through: (output, min_output, max_output)."""
    return _pool("QuantizedAvgPool", input, min_input, max_input, ksize, strides, padding, name)


def quantized_max_pool(input: Any, min_input: Any, max_input: Any, ksize: Sequence[int],  # noqa: A002
                       strides: Sequence[int], padding: str, name: Optional[str] = None) -> tuple:
    """Max pooling of quantized NHWC `input`; the range passes through."""
    return _pool("QuantizedMaxPool", input, min_input, max_input, ksize, strides, padding, name)


def quantized_relu_x(features: Any, max_value: Any, min_features: Any, max_features: Any,
                     out_type: Any = _dt.quint8, name: Optional[str] = None) -> tuple:
    """min(max(features, level of 0.0), level of max_value); the range passes through."""
    x = _quantized(features, "features", "quantized_relu_x")
    with x.graph.as_default():
        rng = [_float(v, nm, "QuantizedReluX") for v, nm in ((max_value, "max_value"),
                                                              (min_features, "min_features"),
                                                              (max_features, "max_features"))]
        attrs = {"Tinput": x.dtype, "out_type": _qtype(out_type, "out_type")}
        return _triple(make_op("QuantizedReluX", [x] + rng, attrs, name=name or "QuantizedReluX"))
