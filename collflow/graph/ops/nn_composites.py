"""More of TensorFlow 1.x's tf.nn, composed from other ops as TF composes them (so their
gradients come from the parts): zero_fraction, swish/silu, crelu, relu_layer,
space_to_depth/depth_to_space (also tf.space_to_depth), the moment helpers
(sufficient_statistics, normalize_moments, weighted_moments), log_poisson_loss and
fused_batch_norm.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import layout_ops as _lay
from . import math_ops as _m
from . import nn_impl as _ni
from . import nn_ops as _n
from . import slicing_ops as _sl
from .constant_op import constant, identity, stop_gradient

__all__ = ["zero_fraction", "swish", "silu", "crelu", "relu_layer", "space_to_depth", "depth_to_space",
           "sufficient_statistics", "normalize_moments", "weighted_moments", "log_poisson_loss",
           "fused_batch_norm"]


def _t(x: Any) -> _g.Tensor:
    return _g.convert_to_tensor(x)


def _like(v: Any, x: _g.Tensor) -> _g.Tensor:
    return v if isinstance(v, _g.Tensor) else _g.convert_to_tensor(v, dtype=x.dtype, graph=x.graph)


def zero_fraction(value: Any, name: Optional[str] = None) -> _g.Tensor:
    """The fraction of `value`'s entries that are zero, a float32 scalar (the sparsity summaries
    of TF1's CIFAR-10 tutorial)."""
    x = _t(value)
    with x.graph.as_default(), x.graph.name_scope(name or "zero_fraction"):
        zero = constant(0, dtype=x.dtype)
        return _m.reduce_mean(_m.cast(_m.equal(x, zero), _dt.float32), name="fraction")


def swish(features: Any, beta: float = 1.0, name: Optional[str] = None) -> _g.Tensor:
    """features * sigmoid(beta * features) (also `silu`)."""
    x = _t(features)
    with x.graph.as_default(), x.graph.name_scope(name or "swish"):
        z = x if beta == 1.0 else x * constant(beta, dtype=x.dtype)
        return _m.multiply(x, _n.sigmoid(z), name="swish")


silu = swish


def crelu(features: Any, name: Optional[str] = None, axis: int = -1) -> _g.Tensor:
    """Concatenated ReLU: concat([relu(x), relu(-x)], axis), twice the depth along `axis`."""
    x = _t(features)
    with x.graph.as_default(), x.graph.name_scope(name or "CRelu"):
        return _n.relu(_a.concat([x, _m.negative(x)], axis), name="CRelu")


def relu_layer(x: Any, weights: Any, biases: Any, name: Optional[str] = None) -> _g.Tensor:
    """relu(matmul(x, weights) + biases)."""
    x = _t(x)
    with x.graph.as_default(), x.graph.name_scope(name or "relu_layer"):
        return _n.relu(_n.bias_add(_m.matmul(x, weights), biases), name="Relu")


def _block(block_size: Any, what: str) -> int:
    b = int(block_size)
    if b < 2:
        raise InvalidArgumentError(f"{what}: block_size must be at least 2, got {block_size}")
    return b


def _nhwc4(x: _g.Tensor, data_format: str, what: str) -> Tuple[Any, Any, Any, Any]:
    if data_format != "NHWC":
        raise InvalidArgumentError(f"{what}: only data_format='NHWC' is supported, got {data_format!r}")
    if x.shape.rank != 4:
        raise InvalidArgumentError(f"{what} needs a 4-D NHWC input (rank known statically), got shape {x.shape}")
    return tuple(x.shape.dims)


def _dims(x: _g.Tensor, static: Tuple[Any, ...]) -> list:
    """Each dim: its static value, else a run-time scalar of shape(x)."""
    dyn = None
    out = []
    for k, d in enumerate(static):
        if d is None:
            dyn = _a.shape(x) if dyn is None else dyn
            out.append(dyn[k])
        else:
            out.append(int(d))
    return out


def space_to_depth(input: Any, block_size: int, name: Optional[str] = None,  # noqa: A002 - TF name
                   data_format: str = "NHWC") -> _g.Tensor:
    """[n, h, w, c] -> [n, h / b, w / b, b * b * c]: each b x b block of pixels becomes the
    depth of one pixel, row-major within the block then channel (as TF)."""
    x = _t(input)
    b = _block(block_size, "space_to_depth")
    n, h, w, c = _nhwc4(x, data_format, "space_to_depth")
    for d, what in ((h, "height"), (w, "width")):
        if d is not None and d % b:
            raise InvalidArgumentError(f"space_to_depth: the {what} {d} is not divisible by block_size {b} "
                                       f"(input shape {x.shape})")
    with x.graph.as_default(), x.graph.name_scope(name or "SpaceToDepth"):
        nn_, hh, ww, cc = _dims(x, (n, h, w, c))
        six = _a.reshape(x, [nn_, hh // b, b, ww // b, b, cc])
        out = _a.transpose(six, [0, 1, 3, 2, 4, 5])
        return _a.reshape(out, [nn_, hh // b, ww // b, cc * (b * b)], name="SpaceToDepth")


def depth_to_space(input: Any, block_size: int, name: Optional[str] = None,  # noqa: A002 - TF name
                   data_format: str = "NHWC") -> _g.Tensor:
    """[n, h, w, b * b * c] -> [n, h * b, w * b, c]: the inverse of space_to_depth."""
    x = _t(input)
    b = _block(block_size, "depth_to_space")
    n, h, w, c = _nhwc4(x, data_format, "depth_to_space")
    if c is not None and c % (b * b):
        raise InvalidArgumentError(f"depth_to_space: the depth {c} is not divisible by block_size * block_size "
                                   f"= {b * b} (input shape {x.shape})")
    with x.graph.as_default(), x.graph.name_scope(name or "DepthToSpace"):
        nn_, hh, ww, cc = _dims(x, (n, h, w, c))
        six = _a.reshape(x, [nn_, hh, ww, b, b, cc // (b * b)])
        out = _a.transpose(six, [0, 1, 3, 2, 4, 5])
        return _a.reshape(out, [nn_, hh * b, ww * b, cc // (b * b)], name="DepthToSpace")


def _axes(axes: Any) -> list:
    return [int(a) for a in ([axes] if isinstance(axes, (int, np.integer)) else axes)]


def _count(x: _g.Tensor, axes: list) -> _g.Tensor:
    """How many entries of x one reduction over `axes` covers, in x's dtype: a constant when
    the graph knows those sizes."""
    rank = x.shape.rank
    dims = list(x.shape.dims) if rank is not None else None
    if dims is not None and all(dims[a] is not None for a in axes):
        return constant(float(np.prod([dims[a] for a in axes])), dtype=x.dtype, name="count")
    if rank is not None:
        idx: Any = [a % rank for a in axes]
    else:  # negative axes count from the run-time rank
        idx = _m.mod(constant(axes, dtype=_dt.int32), _a.rank(x))
    return _m.cast(_m.reduce_prod(_sl.gather(_a.shape(x), idx)), x.dtype, name="count")


def sufficient_statistics(x: Any, axes: Any, shift: Any = None, keep_dims: Optional[bool] = None,
                          name: Optional[str] = None, keepdims: Optional[bool] = None) -> Tuple[Any, ...]:
    """(count, sum(x - shift), sum((x - shift) ** 2), shift) over `axes`; without a shift, the
    plain sums and shift None.  count is x's dtype."""
    keep = bool(keepdims if keepdims is not None else keep_dims)
    x = _t(x)
    axes = _axes(axes)
    with x.graph.as_default(), x.graph.name_scope(name or "sufficient_statistics"):
        count = _count(x, axes)
        if shift is not None:
            shift = _like(shift, x)
            m_ss = _m.reduce_sum(_m.subtract(x, shift), axes, keepdims=keep, name="mean_ss")
            v_ss = _m.reduce_sum(_m.squared_difference(x, shift), axes, keepdims=keep, name="var_ss")
        else:
            m_ss = _m.reduce_sum(x, axes, keepdims=keep, name="mean_ss")
            v_ss = _m.reduce_sum(_m.square(x), axes, keepdims=keep, name="var_ss")
        return count, m_ss, v_ss, shift


def normalize_moments(counts: Any, mean_ss: Any, variance_ss: Any, shift: Any,
                      name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(mean, variance) from sufficient_statistics' outputs."""
    m_ss = _t(mean_ss)
    with m_ss.graph.as_default(), m_ss.graph.name_scope(name or "normalize"):
        divisor = _m.reciprocal(_like(counts, m_ss), name="divisor")
        shifted_mean = _m.multiply(m_ss, divisor, name="shifted_mean")
        mean = _m.add(shifted_mean, _like(shift, m_ss), name="mean") if shift is not None else shifted_mean
        variance = _m.subtract(_m.multiply(_like(variance_ss, m_ss), divisor), _m.square(shifted_mean),
                               name="variance")
        return mean, variance


def weighted_moments(x: Any, axes: Any, frequency_weights: Any, name: Optional[str] = None,
                     keep_dims: Optional[bool] = None, keepdims: Optional[bool] = None) -> Tuple[Any, Any]:
    """(mean, variance) of x over `axes`, each entry counted frequency_weights times (the
    weights broadcast against x); float16 is reduced in float32."""
    keep = bool(keepdims if keepdims is not None else keep_dims)
    x = _t(x)
    axes = _axes(axes)
    with x.graph.as_default(), x.graph.name_scope(name or "weighted_moments"):
        w = _like(frequency_weights, x)
        half = x.dtype == _dt.float16
        if half:
            x = _m.cast(x, _dt.float32)
        if w.dtype != x.dtype:  # TF casts the weights (int counts, say) to x's dtype
            w = _m.cast(w, x.dtype)
        w_sum_x = _m.reduce_sum(w * x, axes, keepdims=True)
        w_total = _m.reduce_sum(w + _a.zeros_like(x), axes, keepdims=True)
        divisor = _m.reciprocal(w_total)
        mean = _m.multiply(w_sum_x, divisor, name="weighted_mean")
        var = _m.multiply(_m.reduce_sum(w * _m.squared_difference(x, mean), axes, keepdims=True), divisor,
                          name="weighted_variance")
        if not keep:
            mean, var = _a.squeeze(mean, axes), _a.squeeze(var, axes)
        if half:
            mean, var = _m.cast(mean, _dt.float16), _m.cast(var, _dt.float16)
        return mean, var


def log_poisson_loss(targets: Any, log_input: Any, compute_full_loss: bool = False,
                     name: Optional[str] = None) -> _g.Tensor:
    """exp(log_input) - log_input * targets, elementwise; with compute_full_loss, plus
    Stirling's approximation of log(targets!) where targets > 1 (as TF)."""
    li = _t(log_input)
    with li.graph.as_default(), li.graph.name_scope(name or "log_poisson_loss"):
        z = _like(targets, li)
        if z.shape.rank is not None and li.shape.rank is not None and not z.shape.is_compatible_with(li.shape):
            raise InvalidArgumentError(f"log_poisson_loss: log_input {li.shape} and targets {z.shape} must have "
                                       "the same shape")
        result = _m.exp(li) - li * z
        if not compute_full_loss:
            return result
        zeros, ones = _a.zeros_like(z), _a.ones_like(z)
        stirling = (z * _m.log(z)) - z + constant(0.5, dtype=z.dtype) * _m.log(constant(2 * math.pi,
                                                                                         dtype=z.dtype) * z)
        small = _m.logical_and(_m.greater_equal(z, zeros), _m.less_equal(z, ones))
        return result + _a.where(small, zeros, stirling)


def fused_batch_norm(x: Any, scale: Any, offset: Any, mean: Any = None, variance: Any = None,
                     epsilon: float = 0.001, data_format: str = "NHWC", is_training: bool = True,
                     name: Optional[str] = None, exponential_avg_factor: float = 1.0) -> Tuple[Any, Any, Any]:
    """TF1's fused batch norm of an NHWC (or NCHW) input over (N, H, W): (y, batch_mean,
    batch_variance).

    Training: normalized with the batch's mean and (biased) variance; the variance returned
    is the unbiased one (n / (n - 1): what the moving averages take, as TF's kernel returns
    it); `mean`/`variance` must not be given.  Inference: normalized with the given `mean`
    and `variance`, which are returned.  epsilon below 1.001e-5 is raised to it (as TF1's
    wrapper, for cuDNN).  A float16 input is normalized in float32 (scale and offset are
    float32).  Gradients flow from y to x, scale and offset only, as TF's."""
    x = _t(x)
    first = _lay.channels_first(data_format, "fused_batch_norm")   # NCHW: normalized as NHWC in between
    if x.shape.rank not in (None, 4):
        raise InvalidArgumentError(f"fused_batch_norm needs a 4-D {data_format} input, got shape {x.shape}")
    if exponential_avg_factor != 1.0:
        raise InvalidArgumentError("fused_batch_norm: exponential_avg_factor other than 1.0 is not supported")
    epsilon = max(float(epsilon), 1.001e-5)
    with x.graph.as_default(), x.graph.name_scope(name or "FusedBatchNorm"):
        xf = _m.cast(x, _dt.float32) if x.dtype == _dt.float16 else x
        if first:
            xf = _lay.to_nhwc(xf)
        scale, offset = _like(scale, xf), _like(offset, xf)
        if is_training:
            if mean is not None or variance is not None:
                raise InvalidArgumentError("fused_batch_norm: mean and variance must be None when is_training "
                                           "(the batch's own are used)")
            batch_mean, batch_var = _n.moments(xf, [0, 1, 2])
            y = _ni.batch_normalization(xf, batch_mean, batch_var, offset, scale, epsilon)
            count = _count(xf, [0, 1, 2])
            one = constant(1.0, dtype=xf.dtype)
            unbiased = batch_var * (count / _m.maximum(count - one, one))
        else:
            if mean is None or variance is None:
                raise InvalidArgumentError("fused_batch_norm: inference (is_training=False) needs mean and variance")
            # TF's gradient gives mean and variance nothing (not even in inference, where y
            # depends on them)
            batch_mean, unbiased = stop_gradient(_like(mean, xf)), stop_gradient(_like(variance, xf))
            y = _ni.batch_normalization(xf, batch_mean, unbiased, offset, scale, epsilon)
        if first:
            y = _a.transpose(y, [0, 3, 1, 2])
        if x.dtype == _dt.float16:
            y = _m.cast(y, _dt.float16)
        # the batch statistics pass no gradient back either (TF's gradient reads y's alone)
        return identity(y, name="y"), stop_gradient(batch_mean), stop_gradient(unbiased)
