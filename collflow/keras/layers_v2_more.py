"""tf_keras 2.x-only weighted layers (optional in a TF 1.15 port), graph mode:
Conv1DTranspose (kernel [k, filters, in]), DepthwiseConv1D (depthwise_kernel [k, in,
depth_multiplier]), EinsumDense (equations without "..."; kernel and bias shapes from the
equation, output_shape and bias_axes, as tf_keras derives them) and MultiHeadAttention
(inputs [batch, steps, features]; EinsumDense sublayers query / key / value /
attention_output, with their variables under multi_head_attention/query/kernel, ...)."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.depthwise_ops import depthwise_conv2d
from ..graph.ops.matrix_ops import einsum
from ..graph.ops.nn_ops import softmax
from ..graph.ops.nn_more_tf1_ops import conv1d_transpose
from ..graph.variable_scope import variable_scope
from .. import nn as _nn
from .layers import _activation, _initializer, mask_of
from .layers_attention import ShapeProbe, _causal_mask
from .layers_more import _Weighted

__all__ = ["Conv1DTranspose", "Convolution1DTranspose", "DepthwiseConv1D", "EinsumDense", "MultiHeadAttention"]


def _one(v: Any) -> int:
    return int(v) if isinstance(v, int) else int(tuple(v)[0])


def _channels_first(data_format: Any) -> bool:
    from . import backend as K
    return K.normalize_data_format(data_format) == "channels_first"


class _ChannelsFirst1D:
    """A 1-D layer whose `_last(x)` works on [batch, steps, channels]: with `_first`
    ([batch, channels, steps]) it runs between two transposes, with the same weights."""
    _first = False

    def _build_call(self, x: Any) -> Any:
        if self._first:
            return _a.transpose(self._last(_a.transpose(x, [0, 2, 1])), [0, 2, 1])
        return self._last(x)

    def _last(self, x: Any) -> Any:
        raise NotImplementedError


class Conv1DTranspose(_ChannelsFirst1D, ShapeProbe, _Weighted):
    """Transposed 1-D convolution: [batch, steps, in] -> [batch, steps', filters]."""
    _base = "conv1d_transpose"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 output_padding: Any = None, data_format: Optional[str] = None, dilation_rate: Any = 1,
                 activation: Any = None, use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if _one(dilation_rate) != 1:
            raise NotImplementedError("Conv1DTranspose: collflow supports dilation_rate=1 only")
        self._first = _channels_first(data_format)
        self.filters, self.kernel_size, self.strides = int(filters), _one(kernel_size), _one(strides)
        self.padding = str(padding).upper()
        self.output_padding = None if output_padding is None else _one(output_padding)
        if self.output_padding is not None and self.output_padding >= self.strides:
            raise ValueError(f"Stride {self.strides} must be greater than output padding {self.output_padding}")
        self.activation, self.use_bias = _activation(activation), use_bias
        self._inits = (_initializer(kernel_initializer), _initializer(bias_initializer))
        self._regs = (kernel_regularizer, bias_regularizer)

    def _last(self, x: Any) -> Any:
        from ..nn.layer_classes3d import deconv_length
        n = x.shape.dims[1]
        if n is None:
            raise ValueError("Conv1DTranspose: collflow needs the input's steps known")
        out = int(deconv_length(int(n), self.kernel_size, self.strides, self.padding, self.output_padding))
        c = int(x.shape.dims[-1])
        k = self._var_new("kernel", [self.kernel_size, self.filters, c], x.dtype, self._inits[0], self._regs[0])
        shape = _a.stack([_a.shape(x)[0], out, self.filters])
        y = conv1d_transpose(x, k, shape, self.strides, padding=self.padding)
        y.set_shape([x.shape.dims[0], out, self.filters])
        if self.use_bias:
            y = _nn.bias_add(y, self._var_new("bias", [self.filters], x.dtype, self._inits[1], self._regs[1]))
        return y if self.activation is None else self.activation(y)


Convolution1DTranspose = Conv1DTranspose


class DepthwiseConv1D(_ChannelsFirst1D, ShapeProbe, _Weighted):
    """Each input channel filtered on its own, depth_multiplier times: depthwise_kernel
    [k, in, depth_multiplier], bias [in * depth_multiplier]."""
    _base = "depthwise_conv1d"

    def __init__(self, kernel_size: Any, strides: Any = 1, padding: str = "valid", depth_multiplier: int = 1,
                 data_format: Optional[str] = None, dilation_rate: Any = 1, activation: Any = None,
                 use_bias: bool = True, depthwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 depthwise_regularizer: Any = None, bias_regularizer: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._first = _channels_first(data_format)
        self.kernel_size, self.strides, self.dilation_rate = _one(kernel_size), _one(strides), _one(dilation_rate)
        self.padding, self.depth_multiplier = str(padding).upper(), int(depth_multiplier)
        self.activation, self.use_bias = _activation(activation), use_bias
        self._inits = (_initializer(depthwise_initializer), _initializer(bias_initializer))
        self._regs = (depthwise_regularizer, bias_regularizer)

    def _last(self, x: Any) -> Any:
        c = int(x.shape.dims[-1])
        k = self._var_new("depthwise_kernel", [self.kernel_size, c, self.depth_multiplier], x.dtype, self._inits[0],
                          self._regs[0])
        rate = None if self.dilation_rate == 1 else [1, self.dilation_rate]
        y = depthwise_conv2d(_a.expand_dims(x, 1), _a.expand_dims(k, 0), [1, 1, self.strides, 1], self.padding,
                             rate=rate)
        y = _a.squeeze(y, [1])
        if self.use_bias:
            y = _nn.bias_add(y, self._var_new("bias", [c * self.depth_multiplier], x.dtype, self._inits[1],
                                              self._regs[1]))
        return y if self.activation is None else self.activation(y)


def _einsum_shapes(equation: str, bias_axes: Optional[str], input_shape: List[Any],
                   output_shape: List[Any]) -> Tuple[List[int], Optional[List[int]], List[Any]]:
    """(kernel shape, bias shape or None, full output shape) of an EinsumDense equation."""
    if "..." in equation:
        raise NotImplementedError("EinsumDense equations with '...' are not supported by collflow")
    lhs, out_spec = equation.replace(" ", "").split("->")
    in_spec, k_spec = lhs.split(",")
    if len(in_spec) != len(input_shape):
        raise ValueError(f"Input shape {input_shape} does not match the equation {equation}")
    full = [input_shape[0]] + list(output_shape)
    if len(full) != len(out_spec):
        raise ValueError(f"Output shape {output_shape} (without the batch) does not match the equation {equation}")
    full = [input_shape[in_spec.index(c)] if d is None and c in in_spec else d for c, d in zip(out_spec, full)]
    kernel = []
    for c in k_spec:
        d = input_shape[in_spec.index(c)] if c in in_spec else full[out_spec.index(c)]
        if d is None:
            raise ValueError(f"EinsumDense: the size of '{c}' in {equation} is unknown")
        kernel.append(int(d))
    bias = None
    if bias_axes:
        for c in bias_axes:
            if c not in out_spec:
                raise ValueError(f"Bias dimension {c} was requested, but is not part of the output spec {out_spec}")
        first = min(out_spec.find(c) for c in bias_axes)
        bias = [int(full[out_spec.find(c)]) if c in bias_axes else 1 for c in out_spec[first:]]
    return kernel, bias, full


class EinsumDense(ShapeProbe, _Weighted):
    """einsum(equation, x, kernel) (+ bias over bias_axes) (activation): a dense layer of any
    contraction; output_shape is the output's shape without the batch (None: the input's)."""
    _base = "einsum_dense"

    def __init__(self, equation: str, output_shape: Any, activation: Any = None, bias_axes: Optional[str] = None,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.equation = equation
        self.partial_output_shape = [output_shape] if isinstance(output_shape, int) else list(output_shape)
        self.bias_axes, self.activation = bias_axes, _activation(activation)
        self._inits = (_initializer(kernel_initializer), _initializer(bias_initializer))
        self._regs = (kernel_regularizer, bias_regularizer)

    def _build_call(self, x: Any) -> Any:
        kshape, bshape, full = _einsum_shapes(self.equation, self.bias_axes, x.shape.as_list(),
                                              self.partial_output_shape)
        k = self._var_new("kernel", kshape, x.dtype, self._inits[0], self._regs[0])
        y = einsum(self.equation, x, k)
        if bshape is not None:
            y = y + self._var_new("bias", bshape, x.dtype, self._inits[1], self._regs[1])
        return y if self.activation is None else self.activation(y)


class MultiHeadAttention(ShapeProbe, _Weighted):
    """Multi-head attention (tf_keras 2.x) over [batch, steps, features] query / value (/ key):
    softmax(q k^T / sqrt(key_dim)) v per head, masked by attention_mask [batch, Tq, Tv], the
    inputs' Keras masks and use_causal_mask, then projected to output_shape (the query's
    features by default).  dropout on the attention probabilities in the learning phase."""
    _base = "multi_head_attention"
    _takes_training = True
    _supports_masking = True  # the output keeps the query's mask

    def __init__(self, num_heads: int, key_dim: int, value_dim: Optional[int] = None, dropout: float = 0.0,
                 use_bias: bool = True, output_shape: Any = None, attention_axes: Any = None,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        if attention_axes is not None:
            raise NotImplementedError("MultiHeadAttention(attention_axes=...) is not supported by collflow")
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = int(value_dim) if value_dim is not None else self.key_dim
        self.dropout, self.use_bias, self.output_shape_ = float(dropout), bool(use_bias), output_shape
        self._dense_args = dict(kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                                kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer)

    def __call__(self, query: Any, value: Any = None, key: Any = None, attention_mask: Any = None,
                 return_attention_scores: bool = False, training: Any = None, use_causal_mask: bool = False,
                 **kwargs: Any) -> Any:
        if value is None and isinstance(query, (list, tuple)):  # a functional model's replay
            query, value, key = (list(query) + [None])[:3]
        from .mixed_precision import cast_inputs  # value and key in the policy's compute dtype, as the query
        cast_value, cast_key = cast_inputs(getattr(self, "_dtype_policy", None), [value, key])
        self._call_args = (cast_value, cast_key, attention_mask, return_attention_scores, use_causal_mask)
        try:
            out = super().__call__(query, training=training, **kwargs)
        finally:
            self._call_args = None
        # the model graph: this call's inputs are query, value (and key); the node list is the
        # one the outputs' history holds, so it is changed in place
        nodes = self.__dict__.get("_keras_nodes")
        if nodes:
            nodes[-1][:] = [t for t in (query, value, key) if t is not None]
        return out

    def compute_output_shape(self, query_shape: Any, value_shape: Any = None, key_shape: Any = None) -> Any:
        from ..graph.shape import TensorShape
        q = TensorShape(query_shape).as_list()
        out = self.output_shape_ if self.output_shape_ is not None else q[-1]
        return TensorShape(q[:-1] + ([out] if isinstance(out, int) else list(out)))

    def _dense(self, x: Any, name: str, equation: str, out_shape: List[Any], bias_axes: str) -> Any:
        with variable_scope(name):
            kshape, bshape, _ = _einsum_shapes(equation, bias_axes if self.use_bias else None, x.shape.as_list(),
                                               out_shape)
            k = self._var_new("kernel", kshape, x.dtype, _initializer(self._dense_args["kernel_initializer"]),
                              self._dense_args["kernel_regularizer"])
            y = einsum(equation, x, k)
            if bshape is not None:
                y = y + self._var_new("bias", bshape, x.dtype, _initializer(self._dense_args["bias_initializer"]),
                                      self._dense_args["bias_regularizer"])
            return y

    def _build_call(self, query: Any, training: Any = False) -> Any:
        value, key, attention_mask, return_scores, causal = self._call_args or (query, None, None, False, False)
        value = _g.convert_to_tensor(value)
        key = value if key is None else _g.convert_to_tensor(key)
        if query.shape.rank != 3 or value.shape.rank != 3:
            raise NotImplementedError("MultiHeadAttention: collflow supports [batch, steps, features] inputs only")
        n, kd, vd = self.num_heads, self.key_dim, self.value_dim
        q = self._dense(query, "query", "abc,cde->abde", [None, n, kd], "de")
        k = self._dense(key, "key", "abc,cde->abde", [None, n, kd], "de")
        v = self._dense(value, "value", "abc,cde->abde", [None, n, vd], "de")
        q = q * (1.0 / float(kd) ** 0.5)
        scores = einsum("aecd,abcd->acbe", k, q)  # [batch, heads, Tq, Tv]
        keep = self._mask(query, value, key, attention_mask, causal, scores)
        if keep is not None:
            if keep.shape.rank == 2:  # the causal mask alone: [Tq, Tv] for every sample
                keep = _a.expand_dims(keep, 0)
            scores = scores + (1.0 - _m.cast(_a.expand_dims(keep, 1), scores.dtype)) * -1e9
        probs = softmax(scores, axis=-1)
        if self.dropout > 0.0:
            from ..graph.control_flow import cond
            from ..graph.ops.constant_op import identity
            drop = lambda: _nn.dropout(probs, rate=self.dropout)  # noqa: E731
            probs = (drop() if training else probs) if isinstance(training, bool) else \
                cond(_g.convert_to_tensor(training), drop, lambda: identity(probs))
        ctx = einsum("acbe,aecd->abcd", probs, v)  # [batch, Tq, heads, value_dim]
        out_dim = self.output_shape_ if self.output_shape_ is not None else int(query.shape.dims[-1])
        out_dims = [out_dim] if isinstance(out_dim, int) else list(out_dim)
        letters = "efgh"[:len(out_dims)]
        out = self._dense(ctx, "attention_output", f"abcd,cd{letters}->ab{letters}", [None] + out_dims, letters)
        return [out, probs] if return_scores else out

    def _mask(self, query: Any, value: Any, key: Any, attention_mask: Any, causal: bool, scores: Any) -> Any:
        """[batch, Tq, Tv] bool of the pairs attended to (None: all)."""
        keep = None
        qm, vm, km = mask_of(query), mask_of(value), mask_of(key)
        if qm is not None:
            keep = _a.expand_dims(qm, -1)
        for m in (vm, km):
            if m is not None:
                e = _a.expand_dims(m, -2)
                keep = e if keep is None else _m.logical_and(keep, e)
        if causal:
            c = _causal_mask(scores)
            keep = c if keep is None else _m.logical_and(keep, c)
        if attention_mask is not None:
            am = _m.cast(_g.convert_to_tensor(attention_mask), "bool")
            keep = am if keep is None else _m.logical_and(keep, am)
        return keep
