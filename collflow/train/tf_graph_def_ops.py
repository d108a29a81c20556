"""The op-type table of tf_graph_def_import.py: how each TensorFlow node becomes collflow ops.

Each entry takes (importer, input tensors, decoded attrs) and returns the node's output
tensors (or an Operation for a node without outputs), reading the attrs as TF's op
definitions do: strides/ksize/dilations are 4-element lists in the node's data_format, NCHW
nodes run as NHWC between two transposes (collflow's kernels are NHWC), EXPLICIT padding is
a zero Pad and a VALID convolution, an axis/shape/perm input must be a constant (frozen
graphs hold them as Consts), and FusedBatchNorm with is_training false normalizes with the
given mean and variance and epsilon as the node has it (TF's raw op does not raise a small
epsilon; TF1's Python wrapper does).  Passing imp.name makes the op named as the node.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.shape import TensorShape
from ..graph.ops import array_ops as A
from ..graph.ops import constant_op as C
from ..graph.ops import depthwise_ops as D
from ..graph.ops import image_ops as I
from ..graph.ops import math_extra_ops as ME
from ..graph.ops import math_more_ops as MM
from ..graph.ops import math_ops as M
from ..graph.ops import misc_ops as MI
from ..graph.ops import nn_composites as NC
from ..graph.ops import nn_extra_ops as NE
from ..graph.ops import nn_ops as N
from ..graph.ops import slicing_ops as S
from ..graph.ops import special_ops as SP

__all__ = ["OPS"]

Fn = Callable[[Any, List[_g.Tensor], Dict[str, Any]], Any]
OPS: Dict[str, Fn] = {}


def _str(v: Any, default: str = "") -> str:
    if v is None:
        return default
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def _ints(v: Any) -> List[int]:
    return [int(x) for x in np.asarray(v).reshape(-1)]


def _fmt(a: Dict[str, Any]) -> str:
    df = _str(a.get("data_format"), "NHWC")
    if df not in ("NHWC", "NCHW"):
        raise InvalidArgumentError(f"data_format {df!r} is not imported (NHWC and NCHW are)")
    return df


def _hw(v: Any, df: str, what: str) -> List[int]:
    """(h, w) of TF's 4-element strides/ksize/dilations, whose order is the data_format's."""
    v = _ints(v)
    if len(v) != 4:
        raise InvalidArgumentError(f"{what} must have 4 elements, got {v}")
    n, h, w, c = (0, 1, 2, 3) if df == "NHWC" else (0, 2, 3, 1)
    if v[n] != 1 or v[c] != 1:
        raise InvalidArgumentError(f"{what} {v} over the batch or channel dimension are not supported")
    return [v[h], v[w]]


def _nhwc(x: _g.Tensor) -> _g.Tensor:
    return A.transpose(x, [0, 2, 3, 1])


def _nchw(x: _g.Tensor, name: Any = None) -> _g.Tensor:
    return A.transpose(x, [0, 3, 1, 2], name=name)


def _in_nhwc(imp: Any, df: str, x: _g.Tensor, body: Callable[[_g.Tensor, Any], _g.Tensor]) -> _g.Tensor:
    """body(x in NHWC, name) -> an NHWC result named `name`: collflow's image ops are NHWC, so
    an NCHW node's input and output are transposed around it (the node's name goes to the
    output's transpose, the tensor the rest of the graph refers to)."""
    if df == "NHWC":
        return body(x, imp.name)
    return _nchw(body(_nhwc(x), None), imp.name)


def _explicit(x: _g.Tensor, a: Dict[str, Any], df: str) -> _g.Tensor:
    """x (NHWC) zero-padded by an EXPLICIT padding's explicit_paddings (8 ints, data_format order)."""
    p = _ints(a.get("explicit_paddings", []))
    if len(p) != 8:
        raise InvalidArgumentError(f"EXPLICIT padding needs 8 explicit_paddings, got {p}")
    pairs = [[p[2 * i], p[2 * i + 1]] for i in range(4)]
    if df == "NCHW":
        pairs = [pairs[0], pairs[2], pairs[3], pairs[1]]
    return S.pad(x, pairs)


def _reg(*names: str) -> Callable[[Fn], Fn]:
    def deco(f: Fn) -> Fn:
        for n in names:
            OPS[n] = f
        return f
    return deco


# -- sources and plumbing --------------------------------------------------------------------

@_reg("Const")
def _const(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    value = a["value"]
    t = C.constant(value, dtype=a.get("dtype"), name=imp.name)
    imp.consts[id(t)] = value
    return t


@_reg("Placeholder")
def _placeholder(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    shape = a.get("shape")
    return C.placeholder(a["dtype"], None if shape is None or shape.rank is None else shape, name=imp.name)


@_reg("PlaceholderWithDefault")
def _pwd(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    shape = a.get("shape")
    return C.placeholder_with_default(ins[0], shape if shape is not None else ins[0].shape, name=imp.name)


@_reg("Identity", "Snapshot", "PreventGradient", "CheckNumerics", "EnsureShape")
def _identity(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return C.identity(ins[0], name=imp.name)


@_reg("StopGradient")
def _stop(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return C.stop_gradient(ins[0], name=imp.name)


@_reg("IdentityN")
def _identity_n(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.identity_n(ins, name=imp.name)


@_reg("NoOp")
def _noop(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return C.no_op(name=imp.name)


# -- element-wise ---------------------------------------------------------------------------

def _unary(f: Callable[..., Any]) -> Fn:
    return lambda imp, ins, a: f(ins[0], name=imp.name)


def _binary(f: Callable[..., Any]) -> Fn:
    return lambda imp, ins, a: f(ins[0], ins[1], name=imp.name)


for _names, _f in ((("Relu",), N.relu), (("Relu6",), NE.relu6), (("Elu",), NE.elu), (("Selu",), NE.selu),
                   (("Sigmoid",), N.sigmoid), (("Tanh",), N.tanh), (("Softplus",), NE.softplus),
                   (("Softsign",), NE.softsign), (("Rsqrt",), M.rsqrt), (("Sqrt",), M.sqrt), (("Square",), M.square),
                   (("Exp",), M.exp), (("Log",), M.log), (("Neg",), M.negative), (("Abs",), M.abs),
                   (("Floor",), ME.floor), (("Ceil",), ME.ceil), (("Round",), ME.round),
                   (("Reciprocal", "Inv"), M.reciprocal), (("Sin",), M.sin), (("Cos",), M.cos), (("Erf",), ME.erf),
                   (("Sign",), M.sign), (("LogicalNot",), M.logical_not), (("Log1p",), M.log1p),
                   (("Expm1",), MM.expm1), (("Tan",), MM.tan), (("IsNan",), ME.is_nan),
                   (("IsFinite",), ME.is_finite), (("ZerosLike",), A.zeros_like), (("OnesLike",), A.ones_like)):
    for _n in _names:
        OPS[_n] = _unary(_f)

for _n, _f in (("Atan", MM.atan), ("Asin", MM.asin), ("Acos", MM.acos), ("Sinh", MM.sinh), ("Cosh", MM.cosh),
               ("Asinh", MM.asinh), ("Acosh", MM.acosh), ("Atanh", MM.atanh), ("Erfc", SP.erfc)):
    OPS[_n] = _unary(_f)

for _names, _f in ((("Add", "AddV2"), M.add), (("Sub",), M.subtract), (("Mul",), M.multiply),
                   (("RealDiv",), ME.realdiv), (("Maximum",), M.maximum), (("Minimum",), M.minimum),
                   (("Pow",), M.pow), (("SquaredDifference",), M.squared_difference), (("FloorDiv",), M.floordiv),
                   (("FloorMod",), ME.floormod), (("TruncateDiv",), ME.truncatediv), (("Equal",), M.equal),
                   (("NotEqual",), M.not_equal), (("Less",), M.less), (("LessEqual",), M.less_equal),
                   (("Greater",), M.greater), (("GreaterEqual",), M.greater_equal),
                   (("LogicalAnd",), M.logical_and), (("LogicalOr",), M.logical_or)):
    for _n in _names:
        OPS[_n] = _binary(_f)


@_reg("Div")
def _div(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    # TF's Div op: C's truncating division for integers, true division otherwise
    f = ME.truncatediv if ins[0].dtype.is_integer else ME.realdiv
    return f(ins[0], ins[1], name=imp.name)


@_reg("AddN")
def _add_n(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return M.add_n(ins, name=imp.name) if len(ins) > 1 else C.identity(ins[0], name=imp.name)


@_reg("LeakyRelu")
def _leaky(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return N.leaky_relu(ins[0], alpha=float(a.get("alpha", 0.2)), name=imp.name)


@_reg("Softmax")
def _softmax(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return N.softmax(ins[0], axis=-1, name=imp.name)


@_reg("LogSoftmax")
def _log_softmax(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return N.log_softmax(ins[0], axis=-1, name=imp.name)


@_reg("ClipByValue")
def _clip(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return M.minimum(M.maximum(ins[0], ins[1]), ins[2], name=imp.name)


@_reg("Cast")
def _cast(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return M.cast(ins[0], a["DstT"], name=imp.name)


@_reg("Select")
def _select(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.where(ins[0], ins[1], ins[2], name=imp.name)


@_reg("SelectV2")
def _select_v2(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.where_v2(ins[0], ins[1], ins[2], name=imp.name)


# -- matrix products ------------------------------------------------------------------------

@_reg("MatMul")
def _matmul(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return M.matmul(ins[0], ins[1], transpose_a=bool(a.get("transpose_a", False)),
                    transpose_b=bool(a.get("transpose_b", False)), name=imp.name)


@_reg("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def _batch_matmul(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return M.matmul(ins[0], ins[1], adjoint_a=bool(a.get("adj_x", False)), adjoint_b=bool(a.get("adj_y", False)),
                    name=imp.name)


# -- convolutions, pooling, normalization ---------------------------------------------------

def _conv(f: Callable[..., Any]) -> Fn:
    def build(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
        df = _fmt(a)
        x, w = ins
        strides = _hw(a["strides"], df, "strides")
        dil = _hw(a.get("dilations", [1, 1, 1, 1]), df, "dilations")
        pad = _str(a.get("padding"))

        def body(xh: _g.Tensor, name: Any) -> _g.Tensor:
            p = pad
            if p == "EXPLICIT":
                xh, p = _explicit(xh, a, df), "VALID"
            return f(xh, w, strides=strides, padding=p, dilations=dil, name=name)
        return _in_nhwc(imp, df, x, body)
    return build


OPS["Conv2D"] = _conv(N.conv2d)
OPS["DepthwiseConv2dNative"] = _conv(D.depthwise_conv2d_native)


@_reg("Conv2DBackpropInput")
def _conv_transpose(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    df = _fmt(a)
    sizes, w, dy = ins
    pad = _str(a.get("padding"))
    if pad == "EXPLICIT":
        raise InvalidArgumentError("Conv2DBackpropInput with EXPLICIT padding is not imported")
    strides = _hw(a["strides"], df, "strides")
    dil = _hw(a.get("dilations", [1, 1, 1, 1]), df, "dilations")
    if df == "NCHW":
        sizes = S.gather(sizes, np.array([0, 2, 3, 1], np.int32))  # the NHWC order, at run time if need be
    hint = None
    try:
        hint = tuple(_ints(imp.const(ins[0], "input_sizes")))
        if df == "NCHW":
            hint = (hint[0], hint[2], hint[3], hint[1])
    except InvalidArgumentError:
        pass  # computed at run time (a batch size from tf.shape): the kernel reads it
    return _in_nhwc(imp, df, dy, lambda d, name: N.conv2d_backprop_input(
        sizes, w, d, strides, pad, dilations=dil, shape_hint=None if hint is None else TensorShape(hint), name=name))


def _pool(f: Callable[..., Any]) -> Fn:
    def build(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
        df = _fmt(a)
        pad = _str(a.get("padding"))
        if pad not in ("SAME", "VALID"):
            raise InvalidArgumentError(f"pooling with padding {pad!r} is not imported")
        k, s = _hw(a["ksize"], df, "ksize"), _hw(a["strides"], df, "strides")
        return _in_nhwc(imp, df, ins[0], lambda x, name: f(x, k, s, pad, name=name))
    return build


OPS["MaxPool"] = _pool(N.max_pool)
OPS["AvgPool"] = _pool(N.avg_pool)


def _channel_shape(x: _g.Tensor, df: str) -> List[int]:
    """The shape a per-channel vector takes to broadcast against x."""
    rank = x.shape.rank
    if df == "NHWC" or rank is None:
        if df == "NCHW":
            raise InvalidArgumentError("an NCHW input of unknown rank")
        return [-1]
    return [-1] + [1] * (rank - 2)


@_reg("BiasAdd", "BiasAddV1")
def _bias_add(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    df = _fmt(a)
    if df == "NHWC":
        return N.bias_add(ins[0], ins[1], name=imp.name)
    return M.add(ins[0], A.reshape(ins[1], _channel_shape(ins[0], df)), name=imp.name)


@_reg("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def _fused_bn(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    df = _fmt(a)
    x, scale, offset, mean, var = ins[:5]
    eps = float(a.get("epsilon", 1e-4))
    n_out = 6 if imp.node.op == "FusedBatchNormV3" else 5
    if bool(a.get("is_training", True)):
        xt = x if df == "NHWC" else _nhwc(x)
        y, bm, bv = NC.fused_batch_norm(xt, scale, offset, epsilon=eps, is_training=True)
        y = y if df == "NHWC" else _nchw(y)
        return [y, bm, bv, bm, bv, bm][:n_out]
    # y = x * scale / sqrt(var + eps) + (offset - mean * scale / sqrt(var + eps)), in float32 for half
    xf = M.cast(x, _dt.float32) if x.dtype == _dt.float16 else x
    inv = M.multiply(scale, M.rsqrt(M.add(var, C.constant(eps, dtype=var.dtype))))
    shift = M.subtract(offset, M.multiply(mean, inv))
    shape = _channel_shape(xf, df)
    if shape != [-1]:
        inv, shift = A.reshape(inv, shape), A.reshape(shift, shape)
    y = M.add(M.multiply(xf, inv), shift)
    if x.dtype == _dt.float16:
        y = M.cast(y, _dt.float16)
    return [y, mean, var, mean, var, mean][:n_out]


@_reg("LRN")
def _lrn(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return NE.lrn(ins[0], depth_radius=int(a.get("depth_radius", 5)), bias=float(a.get("bias", 1.0)),
                  alpha=float(a.get("alpha", 1.0)), beta=float(a.get("beta", 0.5)), name=imp.name)


@_reg("ResizeBilinear")
def _resize_bilinear(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return I.resize_bilinear(ins[0], ins[1], align_corners=bool(a.get("align_corners", False)),
                             half_pixel_centers=bool(a.get("half_pixel_centers", False)), name=imp.name)


@_reg("ResizeNearestNeighbor")
def _resize_nearest(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return I.resize_nearest_neighbor(ins[0], ins[1], align_corners=bool(a.get("align_corners", False)),
                                     half_pixel_centers=bool(a.get("half_pixel_centers", False)), name=imp.name)


# -- shapes ---------------------------------------------------------------------------------

@_reg("Reshape")
def _reshape(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.reshape(ins[0], ins[1], name=imp.name)


@_reg("Squeeze")
def _squeeze(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    dims = _ints(a.get("squeeze_dims", []))
    return A.squeeze(ins[0], axis=dims or None, name=imp.name)


@_reg("ExpandDims")
def _expand_dims(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.expand_dims(ins[0], int(_ints(imp.const(ins[1], "axis"))[0]), name=imp.name)


@_reg("Transpose")
def _transpose(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.transpose(ins[0], _ints(imp.const(ins[1], "perm")), name=imp.name)


@_reg("Shape")
def _shape(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.shape(ins[0], out_type=a.get("out_type", _dt.int32), name=imp.name)


@_reg("Size")
def _size(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.size(ins[0], out_type=a.get("out_type", _dt.int32), name=imp.name)


@_reg("Rank")
def _rank(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.rank(ins[0], name=imp.name)


@_reg("Fill")
def _fill(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.fill(ins[0], ins[1], name=imp.name)


@_reg("Range")
def _range(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return MI.range(ins[0], ins[1], ins[2], dtype=a.get("Tidx"), name=imp.name)


@_reg("Tile")
def _tile(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.tile(ins[0], _ints(imp.const(ins[1], "multiples")), name=imp.name)


# -- joining and splitting ------------------------------------------------------------------

@_reg("ConcatV2")
def _concat_v2(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.concat(ins[:-1], int(_ints(imp.const(ins[-1], "axis"))[0]), name=imp.name)


@_reg("Concat")
def _concat(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.concat(ins[1:], int(_ints(imp.const(ins[0], "concat_dim"))[0]), name=imp.name)


@_reg("Pack")
def _pack(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.stack(ins, axis=int(a.get("axis", 0)), name=imp.name)


@_reg("Unpack")
def _unpack(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.unstack(ins[0], num=int(a["num"]), axis=int(a.get("axis", 0)), name=imp.name)


@_reg("Split")
def _split(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    axis = int(_ints(imp.const(ins[0], "split_dim"))[0])
    return A.split(ins[1], int(a["num_split"]), axis=axis, name=imp.name)


@_reg("SplitV")
def _split_v(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    x = ins[0]
    sizes = _ints(imp.const(ins[1], "size_splits"))
    axis = int(_ints(imp.const(ins[2], "split_dim"))[0])
    if -1 in sizes:  # TF: the one -1 takes what the others leave
        dim = x.shape.as_list()[axis] if x.shape.rank is not None else None
        if dim is None:
            raise InvalidArgumentError("SplitV with a -1 size over a dimension of unknown size")
        sizes[sizes.index(-1)] = dim - sum(s for s in sizes if s != -1)
    return A.split(x, sizes, axis=axis, name=imp.name)


@_reg("Slice")
def _slice(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return S.slice(ins[0], _ints(imp.const(ins[1], "begin")), _ints(imp.const(ins[2], "size")), name=imp.name)


@_reg("StridedSlice")
def _strided_slice(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return S.strided_slice(ins[0], _ints(imp.const(ins[1], "begin")), _ints(imp.const(ins[2], "end")),
                           _ints(imp.const(ins[3], "strides")), begin_mask=int(a.get("begin_mask", 0)),
                           end_mask=int(a.get("end_mask", 0)), ellipsis_mask=int(a.get("ellipsis_mask", 0)),
                           new_axis_mask=int(a.get("new_axis_mask", 0)),
                           shrink_axis_mask=int(a.get("shrink_axis_mask", 0)), name=imp.name)


def _pairs(imp: Any, t: _g.Tensor) -> List[List[int]]:
    return np.asarray(imp.const(t, "paddings")).astype(np.int64).reshape(-1, 2).tolist()


@_reg("Pad")
def _pad(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return S.pad(ins[0], _pairs(imp, ins[1]), name=imp.name)


@_reg("PadV2")
def _pad_v2(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    c = np.asarray(imp.const(ins[2], "constant_values")).reshape(()).item()
    return S.pad(ins[0], _pairs(imp, ins[1]), constant_values=c, name=imp.name)


@_reg("MirrorPad")
def _mirror_pad(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return S.pad(ins[0], _pairs(imp, ins[1]), mode=_str(a.get("mode"), "REFLECT"), name=imp.name)


# -- reductions, indices --------------------------------------------------------------------

def _reduce(f: Callable[..., Any]) -> Fn:
    def build(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
        axis = _ints(imp.const(ins[1], "reduction_indices"))
        if not axis:  # TF: an empty axis list reduces nothing
            return C.identity(ins[0], name=imp.name)
        return f(ins[0], axis=axis, keepdims=bool(a.get("keep_dims", False)), name=imp.name)
    return build


for _n, _f in (("Mean", M.reduce_mean), ("Sum", M.reduce_sum), ("Max", M.reduce_max), ("Min", M.reduce_min),
               ("Prod", M.reduce_prod), ("Any", M.reduce_any), ("All", M.reduce_all)):
    OPS[_n] = _reduce(_f)


def _arg(f: Callable[..., Any]) -> Fn:
    def build(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
        axis = int(_ints(imp.const(ins[1], "dimension"))[0])
        return f(ins[0], axis=axis, output_type=a.get("output_type", _dt.int64), name=imp.name)
    return build


OPS["ArgMax"] = _arg(M.argmax)
OPS["ArgMin"] = _arg(M.argmin)


@_reg("GatherV2")
def _gather_v2(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    axis = int(_ints(imp.const(ins[2], "axis"))[0])
    return S.gather(ins[0], ins[1], axis=axis, batch_dims=int(a.get("batch_dims", 0)), name=imp.name)


@_reg("Gather")
def _gather(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return S.gather(ins[0], ins[1], name=imp.name)


@_reg("OneHot")
def _one_hot(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    depth = int(_ints(imp.const(ins[1], "depth"))[0])
    return A.one_hot(ins[0], depth, on_value=ins[2], off_value=ins[3], axis=int(a.get("axis", -1)),
                     dtype=ins[2].dtype, name=imp.name)


@_reg("TopKV2", "TopK")
def _top_k(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    k = int(a["k"]) if imp.node.op == "TopK" else int(_ints(imp.const(ins[1], "k"))[0])
    return list(MI.top_k(ins[0], k, sorted=bool(a.get("sorted", True)), name=imp.name))


@_reg("ResizeBicubic")
def _resize_bicubic(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    from ..graph.ops import image_ops2
    return image_ops2.resize_bicubic(ins[0], ins[1], align_corners=bool(a.get("align_corners", False)),
                                     half_pixel_centers=bool(a.get("half_pixel_centers", False)), name=imp.name)


@_reg("SpaceToBatchND")
def _space_to_batch(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    from ..graph.ops import block_ops
    return block_ops.space_to_batch_nd(ins[0], _ints(imp.const(ins[1], "block_shape")), _pairs(imp, ins[2]),
                                       name=imp.name)


@_reg("BatchToSpaceND")
def _batch_to_space(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    from ..graph.ops import block_ops
    return block_ops.batch_to_space_nd(ins[0], _ints(imp.const(ins[1], "block_shape")), _pairs(imp, ins[2]),
                                       name=imp.name)


def _depth_space(f: Callable[..., Any]) -> Fn:
    def build(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
        return _in_nhwc(imp, _fmt(a), ins[0], lambda x, name: f(x, int(a["block_size"]), name=name))
    return build


OPS["SpaceToDepth"] = _depth_space(NC.space_to_depth)
OPS["DepthToSpace"] = _depth_space(NC.depth_to_space)


@_reg("ReverseV2")
def _reverse(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    from ..graph.ops import reverse_ops
    axis = _ints(imp.const(ins[1], "axis"))
    return reverse_ops.reverse_v2(ins[0], axis, name=imp.name) if axis else C.identity(ins[0], name=imp.name)


def _scan(fname: str) -> Fn:
    def build(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
        from ..graph.ops import scan_ops
        axis = int(_ints(imp.const(ins[1], "axis"))[0])
        return getattr(scan_ops, fname)(ins[0], axis=axis, exclusive=bool(a.get("exclusive", False)),
                                        reverse=bool(a.get("reverse", False)), name=imp.name)
    return build


OPS["Cumsum"] = _scan("cumsum")
OPS["Cumprod"] = _scan("cumprod")


@_reg("Einsum")
def _einsum(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    from ..graph.ops import matrix_ops
    return matrix_ops.einsum(_str(a["equation"]), *ins, name=imp.name)


@_reg("GatherNd")
def _gather_nd(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    from ..graph.ops import index_ops
    return index_ops.gather_nd(ins[0], ins[1], name=imp.name)


@_reg("BroadcastTo")
def _broadcast_to(imp: Any, ins: List[_g.Tensor], a: Dict[str, Any]) -> Any:
    return A.broadcast_to(ins[0], _ints(imp.const(ins[1], "shape")), name=imp.name)
