"""More of tf.keras.layers (TF1 graph mode): transposed, separable and depthwise convolutions,
resizing and padding layers, the activation layers, LayerNormalization, the merge layers,
Permute/RepeatVector, GaussianNoise/GaussianDropout, and the wrappers TimeDistributed and
Bidirectional.  Weights carry TF 1.15's Keras names (conv2d_transpose/kernel,
bidirectional/forward_lstm/kernel, p_re_lu/alpha, ...)."""
from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List, Optional

from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import random_ops as _r
from ..graph.control_flow import cond
from ..graph.ops.constant_op import identity
from ..graph.ops.depthwise_ops import depthwise_conv2d
from ..graph.ops.math_extra_ops import floor
from ..graph.ops.reverse_ops import reverse
from ..graph.ops.slicing_ops import pad
from ..graph.variable_scope import get_variable, variable_scope
from ..nn import layer_classes as _lc
from ..nn import layers as _fl
from .. import nn as _nn
from .layers import mask_of, register_call, set_mask, _GlobalPool, _KerasMixin, _Merge, _Stateless, _activation, _initializer, _input_shape_kwargs

__all__ = ["Conv2DTranspose", "SeparableConv2D", "DepthwiseConv2D", "UpSampling2D", "ZeroPadding2D", "Cropping2D",
           "LeakyReLU", "ReLU", "ELU", "Softmax", "PReLU", "LayerNormalization", "Multiply", "Subtract", "Average",
           "Maximum", "Minimum", "multiply", "subtract", "average", "maximum", "minimum", "Permute", "RepeatVector",
           "GlobalAveragePooling1D", "GlobalMaxPooling1D", "GaussianNoise", "GaussianDropout", "TimeDistributed",
           "Bidirectional", "Conv3D", "MaxPooling3D", "MaxPool3D", "AveragePooling3D", "AvgPool3D", "UpSampling1D",
           "ZeroPadding1D", "Cropping1D", "SpatialDropout1D", "SpatialDropout2D", "ActivityRegularization"]


def _pair(v: Any) -> tuple:
    return (int(v), int(v)) if isinstance(v, int) else tuple(int(d) for d in v)


class _Weighted(_KerasMixin, _lc.Layer):
    """A Keras layer whose `_build_call(x)` makes its variables with get_variable in its scope."""

    def __init__(self, **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(kwargs.pop("trainable", True), kwargs.pop("name", None), **kwargs)

    def _call(self, x: Any, name: Any, reuse: Any, **kwargs: Any) -> Any:
        with variable_scope(name, reuse=reuse):
            return self._build_call(x, **kwargs)

    def _var_new(self, vname: str, shape: List[int], dtype: Any, init: Any, reg: Any = None) -> Any:
        return get_variable(vname, shape, dtype, init, reg, trainable=self.trainable)

    def _build_call(self, x: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class Conv2DTranspose(_KerasMixin, _lc.Layer):
    _base = "conv2d_transpose"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 data_format: Optional[str] = None, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None, output_padding: Any = None,
                 **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        if _pair(kwargs.pop("dilation_rate", 1)) != (1, 1):
            raise NotImplementedError("Conv2DTranspose(dilation_rate > 1) is not supported by collflow")
        super().__init__(kwargs.pop("trainable", True), kwargs.pop("name", None), **kwargs)
        if output_padding is not None and any(p >= st for p, st in zip(_pair(output_padding), _pair(strides))):
            raise ValueError(f"Stride {_pair(strides)} must be greater than output padding {_pair(output_padding)}")
        self.output_padding = output_padding
        self._cfg = dict(filters=int(filters), kernel_size=kernel_size, strides=strides, padding=padding,
                         output_padding=output_padding,
                         data_format=_image_format(data_format, "Conv2DTranspose"), activation=_activation(activation),
                         use_bias=use_bias, kernel_initializer=_initializer(kernel_initializer),
                         bias_initializer=_initializer(bias_initializer), kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer)

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        return _fl.conv2d_transpose(x, trainable=self.trainable, name=name, reuse=reuse, **self._cfg)


class SeparableConv2D(_KerasMixin, _lc.SeparableConv2D):
    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 data_format: Optional[str] = None, dilation_rate: Any = (1, 1), depth_multiplier: int = 1,
                 activation: Any = None, use_bias: bool = True, depthwise_initializer: Any = "glorot_uniform",
                 pointwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 depthwise_regularizer: Any = None, pointwise_regularizer: Any = None, bias_regularizer: Any = None,
                 **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(filters, kernel_size, strides, padding, _image_format(data_format, "SeparableConv2D"),
                         dilation_rate,
                         depth_multiplier, _activation(activation), use_bias, _initializer(depthwise_initializer),
                         _initializer(pointwise_initializer), _initializer(bias_initializer), depthwise_regularizer,
                         pointwise_regularizer, bias_regularizer, **kwargs)


class DepthwiseConv2D(_Weighted):
    """depthwise_kernel [kh, kw, in, depth_multiplier] (+ bias [in * depth_multiplier])."""
    _base = "depthwise_conv2d"

    def __init__(self, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid", depth_multiplier: int = 1,
                 data_format: Optional[str] = None, activation: Any = None, use_bias: bool = True,
                 depthwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 depthwise_regularizer: Any = None, bias_regularizer: Any = None, dilation_rate: Any = (1, 1),
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.kernel_size, self.strides, self.padding = _pair(kernel_size), _pair(strides), padding.upper()
        self.depth_multiplier, self.activation, self.use_bias = int(depth_multiplier), _activation(activation), use_bias
        self.dilation_rate = _pair(dilation_rate)
        self.data_format = _image_format(data_format, "DepthwiseConv2D")
        self._inits = (_initializer(depthwise_initializer), _initializer(bias_initializer))
        self._regs = (depthwise_regularizer, bias_regularizer)

    def _build_call(self, x: Any) -> Any:
        # channels_first runs as channels_last between two transposes (the same values)
        return _as_channels_last(x, self.data_format, self._nhwc)

    def _nhwc(self, x: Any) -> Any:
        c = int(x.shape.dims[-1])
        k = self._var_new("depthwise_kernel", list(self.kernel_size) + [c, self.depth_multiplier], x.dtype,
                          self._inits[0], self._regs[0])
        rate = None if self.dilation_rate == (1, 1) else list(self.dilation_rate)
        y = depthwise_conv2d(x, k, [1, self.strides[0], self.strides[1], 1], self.padding, rate=rate)
        if self.use_bias:
            y = _nn.bias_add(y, self._var_new("bias", [c * self.depth_multiplier], x.dtype, self._inits[1],
                                              self._regs[1]))
        return y if self.activation is None else self.activation(y)


class UpSampling2D(_Stateless):
    _base = "up_sampling2d"

    def __init__(self, size: Any = (2, 2), data_format: Optional[str] = None, interpolation: str = "nearest",
                 **kwargs: Any):
        super().__init__(**kwargs)
        if interpolation not in ("nearest", "bilinear"):   # TF 1.15's two
            raise ValueError('`interpolation` argument should be one of `"nearest"` or `"bilinear"`.')
        self.size = _pair(size)
        self.data_format = _image_format(data_format, "UpSampling2D")
        self.interpolation = interpolation

    def _fn(self, x: Any) -> Any:
        # Keras's own call: backend.resize_images (half-pixel centres, as TF's resize v2)
        from .backend_more import resize_images
        return resize_images(x, self.size[0], self.size[1], self.data_format, interpolation=self.interpolation)


def _image_format(data_format: Optional[str], layer: str) -> str:
    """Keras's data_format argument: None is K.image_data_format() (when the layer is made)."""
    from . import backend as K
    return K.normalize_data_format(data_format)


def _as_channels_last(x: Any, data_format: str, fn: Callable[[Any], Any]) -> Any:
    """fn (written for NHWC) applied to a channels_first x: moved to NHWC and back."""
    if data_format != "channels_first":
        return fn(x)
    return _a.transpose(fn(_a.transpose(x, [0, 2, 3, 1])), [0, 3, 1, 2])


def _pad_spec(padding: Any) -> tuple:
    if isinstance(padding, int):
        return ((padding, padding), (padding, padding))
    a, b = padding
    return (_pair(a) if not isinstance(a, int) else (a, a), _pair(b) if not isinstance(b, int) else (b, b))


class ZeroPadding2D(_Stateless):
    _base = "zero_padding2d"

    def __init__(self, padding: Any = (1, 1), data_format: Optional[str] = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.padding = _pad_spec(padding)
        self.data_format = _image_format(data_format, "ZeroPadding2D")

    def _fn(self, x: Any) -> Any:
        (t, b), (left, r) = self.padding
        if self.data_format == "channels_first":
            return pad(x, [[0, 0], [0, 0], [t, b], [left, r]])
        return pad(x, [[0, 0], [t, b], [left, r], [0, 0]])


class Cropping2D(_Stateless):
    _base = "cropping2d"

    def __init__(self, cropping: Any = ((0, 0), (0, 0)), data_format: Optional[str] = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.cropping = _pad_spec(cropping)
        self.data_format = _image_format(data_format, "Cropping2D")

    def _fn(self, x: Any) -> Any:
        (t, b), (left, r) = self.cropping
        if self.data_format == "channels_first":
            h, w = x.shape.dims[2], x.shape.dims[3]
            return x[:, :, t:h - b, left:w - r]
        h, w = x.shape.dims[1], x.shape.dims[2]
        return x[:, t:h - b, left:w - r, :]


class LeakyReLU(_Stateless):
    _base = "leaky_re_lu"

    def __init__(self, alpha: float = 0.3, **kwargs: Any):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def _fn(self, x: Any) -> Any:
        return _nn.leaky_relu(x, alpha=self.alpha)


class ReLU(_Stateless):
    _base = "re_lu"

    def __init__(self, max_value: Optional[float] = None, negative_slope: float = 0.0, threshold: float = 0.0,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.max_value, self.negative_slope, self.threshold = max_value, float(negative_slope), float(threshold)

    def _fn(self, x: Any) -> Any:
        y = _a.where(x >= self.threshold, x, self.negative_slope * (x - self.threshold))
        return y if self.max_value is None else _m.minimum(y, float(self.max_value))


class ELU(_Stateless):
    _base = "elu"

    def __init__(self, alpha: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def _fn(self, x: Any) -> Any:
        return _a.where(x > 0, x, self.alpha * (_m.exp(x) - 1.0))


class Softmax(_Stateless):
    _base = "softmax"

    def __init__(self, axis: int = -1, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = axis

    def _fn(self, x: Any) -> Any:
        return _nn.softmax(x, axis=self.axis)


class PReLU(_Weighted):
    """max(x, 0) + alpha * min(x, 0) with a learned alpha per input unit (shared over shared_axes)."""
    _base = "p_re_lu"

    def __init__(self, alpha_initializer: Any = "zeros", alpha_regularizer: Any = None, alpha_constraint: Any = None,
                 shared_axes: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._init, self._reg = _initializer(alpha_initializer), alpha_regularizer
        self.shared_axes = [shared_axes] if isinstance(shared_axes, int) else list(shared_axes or [])

    def _build_call(self, x: Any) -> Any:
        shape = [int(d) for d in x.shape.dims[1:]]
        for ax in self.shared_axes:
            shape[ax - 1] = 1
        alpha = self._var_new("alpha", shape, x.dtype, self._init, self._reg)
        return _nn.relu(x) - alpha * _nn.relu(-x)


class LayerNormalization(_Weighted):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over `axis` (gamma, beta per feature)."""
    _base = "layer_normalization"

    def __init__(self, axis: Any = -1, epsilon: float = 1e-3, center: bool = True, scale: bool = True,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = [axis] if isinstance(axis, int) else list(axis)
        self.epsilon, self.center, self.scale = float(epsilon), center, scale
        self._inits = (_initializer(beta_initializer), _initializer(gamma_initializer))
        self._regs = (beta_regularizer, gamma_regularizer)

    def _build_call(self, x: Any) -> Any:
        rank = x.shape.rank
        axes = sorted(a % rank for a in self.axis)
        pshape = [int(x.shape.dims[a]) for a in axes]
        mean, var = _nn.moments(x, axes, keep_dims=True)
        y = (x - mean) * _m.rsqrt(var + self.epsilon)
        bshape = [int(x.shape.dims[a]) if a in axes else 1 for a in range(rank)]
        if self.scale:
            y = y * _a.reshape(self._var_new("gamma", pshape, x.dtype, self._inits[1], self._regs[1]), bshape)
        if self.center:
            y = y + _a.reshape(self._var_new("beta", pshape, x.dtype, self._inits[0], self._regs[0]), bshape)
        return y


def _merge(base: str, fn: Callable[[List[Any]], Any]) -> type:
    cls = type(base.title().replace("_", ""), (_Merge,), {"_base": base, "_merge": lambda self, xs: fn(xs)})
    return cls


def _fold(op: Callable[[Any, Any], Any]) -> Callable[[List[Any]], Any]:
    def f(xs: List[Any]) -> Any:
        out = xs[0]
        for x in xs[1:]:
            out = op(out, x)
        return out
    return f


Multiply = _merge("multiply", _fold(_m.multiply))
Maximum = _merge("maximum", _fold(_m.maximum))
Minimum = _merge("minimum", _fold(_m.minimum))
Average = _merge("average", lambda xs: _fold(_m.add)(xs) / float(len(xs)))


class Subtract(_Merge):
    _base = "subtract"

    def _merge(self, xs: List[Any]) -> Any:
        if len(xs) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs")
        return xs[0] - xs[1]


def multiply(inputs: List[Any], **kwargs: Any) -> Any:
    return Multiply(**kwargs)(list(inputs))


def subtract(inputs: List[Any], **kwargs: Any) -> Any:
    return Subtract(**kwargs)(list(inputs))


def average(inputs: List[Any], **kwargs: Any) -> Any:
    return Average(**kwargs)(list(inputs))


def maximum(inputs: List[Any], **kwargs: Any) -> Any:
    return Maximum(**kwargs)(list(inputs))


def minimum(inputs: List[Any], **kwargs: Any) -> Any:
    return Minimum(**kwargs)(list(inputs))


class Permute(_Stateless):
    _base = "permute"

    def __init__(self, dims: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)

    def _fn(self, x: Any) -> Any:
        return _a.transpose(x, (0,) + self.dims)


class RepeatVector(_Stateless):
    _base = "repeat_vector"

    def __init__(self, n: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.n = int(n)

    def _fn(self, x: Any) -> Any:
        return _a.tile(_a.expand_dims(x, 1), [1, self.n, 1])


class GlobalAveragePooling1D(_GlobalPool):
    _base = "global_average_pooling1d"
    _default_format = "channels_last"   # Keras's 1-D default, not image_data_format()
    _consumes_mask = True  # the mean over the real steps; no mask after it (TF 1.15's)

    def _call(self, x: Any, name: Any, reuse: Any, *args: Any, mask: Any = None, **kwargs: Any) -> Any:
        from .masking import masked_mean_over_steps
        with _g.name_scope(name or self._base):
            if mask is None:
                return self._fn(x)
            if self.data_format == "channels_first":  # the steps on axis 2
                x = _a.transpose(x, [0, 2, 1])
            y = masked_mean_over_steps(x, mask)
            if self.keepdims:  # the steps axis kept as size 1, where the data format has it
                y = _a.expand_dims(y, 2 if self.data_format == "channels_first" else 1)
            return y


class GlobalMaxPooling1D(_GlobalPool):
    _base = "global_max_pooling1d"
    _default_format = "channels_last"
    _reduce = staticmethod(_m.reduce_max)


class _Noise(_KerasMixin, _lc.Layer):
    """A layer active only in the learning phase."""
    _has_vars = False
    _takes_training = True

    def __init__(self, rate: float, **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(True, kwargs.pop("name", None), **kwargs)
        self.rate = float(rate)

    def _call(self, x: Any, name: Any, reuse: Any, training: Any = False) -> Any:
        with _g.name_scope(name or self._base):
            if isinstance(training, bool):
                return self._noisy(x) if training else x
            return cond(_g.convert_to_tensor(training), lambda: self._noisy(x), lambda: identity(x))


class GaussianNoise(_Noise):
    """Adds N(0, stddev) noise in training."""
    _base = "gaussian_noise"

    def __init__(self, stddev: float, **kwargs: Any):
        # Keras's argument is `stddev` (GaussianNoise(stddev=0.1)), not a rate
        super().__init__(stddev, **kwargs)
        self.stddev = float(stddev)

    def _noisy(self, x: Any) -> Any:
        return x + _r.random_normal(_a.shape(x), stddev=self.stddev, dtype=x.dtype)


class GaussianDropout(_Noise):
    """Multiplies by N(1, rate / (1 - rate)) noise in training."""
    _base = "gaussian_dropout"

    def _noisy(self, x: Any) -> Any:
        std = (self.rate / (1.0 - self.rate)) ** 0.5
        return x * _r.random_normal(_a.shape(x), mean=1.0, stddev=std, dtype=x.dtype)


class TimeDistributed(_KerasMixin, _lc.Layer):
    """Applies `layer` to every time step ([batch, time, ...]) with one set of weights."""
    _has_vars = False
    _base = "time_distributed"

    def __init__(self, layer: Any, **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(True, kwargs.pop("name", None), **kwargs)
        self.layer = layer

    def __call__(self, inputs: Any, training: Any = None, **kwargs: Any) -> Any:
        x = _g.convert_to_tensor(inputs)
        if self._name is None:
            from .layers import _unique_name
            self._name = getattr(self, "_auto_name", None) or _unique_name(self._base)
        rest = [int(d) for d in x.shape.dims[2:]]
        t = x.shape.dims[1] if x.shape.dims[1] is not None else _a.shape(x)[1]
        if not getattr(self.layer, "built", False):
            # the inner weights are the wrapper's (time_distributed/kernel): the inner layer enters
            # the wrapper's name as its scope, as it is, not a unique scope of its own
            self.layer._name = self._name
            self.layer._unique_scope = False
        with _g.name_scope(self._name):
            flat = _a.reshape(x, [-1] + rest)
            y = self.layer(flat)
            out_rest = y.shape.as_list()[1:]
            out = _a.reshape(y, _a.stack([_a.shape(x)[0], t] + out_rest) if not isinstance(t, int)
                             else [-1, t] + out_rest)
        set_mask(out, mask_of(inputs))  # the steps stay the same steps
        register_call(self, inputs, out)
        return out

    @property
    def weights(self) -> List[Any]:
        return self.layer.weights

    @property
    def trainable_weights(self) -> List[Any]:
        return self.layer.trainable_weights

    @property
    def non_trainable_weights(self) -> List[Any]:
        return self.layer.non_trainable_weights

    variables = weights

    @property
    def updates(self) -> List[Any]:
        return getattr(self.layer, "updates", [])

    @updates.setter
    def updates(self, v: Any) -> None:
        pass

    @property
    def losses(self) -> List[Any]:
        return getattr(self.layer, "losses", [])

    @losses.setter
    def losses(self, v: Any) -> None:
        pass


class Bidirectional(_KerasMixin, _lc.Layer):
    """A recurrent layer run forwards and (a copy) backwards; merge_mode "concat", "sum", "mul",
    "ave" or None (a list).  Weights: bidirectional/forward_<name>/..., backward_<name>/..."""
    _has_vars = False
    _base = "bidirectional"

    def __init__(self, layer: Any, merge_mode: Optional[str] = "concat", weights: Any = None,
                 backward_layer: Any = None, **kwargs: Any):
        if merge_mode not in ("sum", "mul", "ave", "concat", None):
            raise ValueError(f"Invalid merge mode. Merge mode should be one of {{'sum', 'mul', 'ave', 'concat', "
                             f"None}}, got {merge_mode}")
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(True, kwargs.pop("name", None), **kwargs)
        inner = layer._base
        self.forward_layer = layer
        self.backward_layer = backward_layer or copy.copy(layer)
        if backward_layer is None:
            self.backward_layer.go_backwards = not layer.go_backwards
            self.backward_layer._scope, self.backward_layer._vars, self.backward_layer.built = None, [], False
        # a layer from a saved config already carries the prefix
        fname, bname = layer._name or inner, self.backward_layer._name or inner
        self.forward_layer._name = fname if fname.startswith("forward_") else f"forward_{fname}"
        bname = bname[len("forward_"):] if bname.startswith("forward_") else bname
        self.backward_layer._name = bname if bname.startswith("backward_") else f"backward_{bname}"
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state

    def __call__(self, inputs: Any, initial_state: Any = None, training: Any = None, **kwargs: Any) -> Any:
        if self._name is None:
            from .layers import _unique_name
            self._name = getattr(self, "_auto_name", None) or _unique_name(self._base)
        scope = getattr(self, "_bi_scope", None)
        # a mask given to the call wins over the one the inputs carry; initial_state is the
        # forward layer's states then the backward layer's (Keras splits the list in halves)
        mask = kwargs.pop("mask", None)
        mask = mask_of(inputs) if mask is None else mask
        fkw: Dict[str, Any] = {} if mask is None else {"mask": mask}
        bkw = dict(fkw)
        if initial_state is not None:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            if len(states) % 2:
                raise ValueError(f"When passing `initial_state` to a Bidirectional RNN, the state should be a list "
                                 f"containing the states of the underlying RNNs. Received: {initial_state}")
            fkw["initial_state"], bkw["initial_state"] = states[:len(states) // 2], states[len(states) // 2:]
        with (variable_scope(scope) if scope is not None else variable_scope(None, default_name=self._name)) as vs:
            self._bi_scope = vs
            f = self.forward_layer(inputs, **fkw)
            b = self.backward_layer(inputs, **bkw)
        fs, bs = (f[1:], b[1:]) if self.return_state else ([], [])
        fo, bo = (f[0], b[0]) if self.return_state else (f, b)
        if self.return_sequences:
            bo = reverse(bo, [1])  # the backward layer's outputs, back in time order
            if mask is not None:
                # Keras forces zero_output_for_mask on both directions when they return
                # sequences: a masked step's output is zeros (not the previous step's)
                keep = _a.expand_dims(_m.cast(mask, fo.dtype), -1)
                fo, bo = fo * keep, bo * keep
        if self.merge_mode == "concat":
            out: Any = _a.concat([fo, bo], -1)
        elif self.merge_mode == "sum":
            out = fo + bo
        elif self.merge_mode == "ave":
            out = (fo + bo) / 2.0
        elif self.merge_mode == "mul":
            out = fo * bo
        else:
            out = [fo, bo]
        res = ([out] if not isinstance(out, list) else out) + list(fs) + list(bs) if self.return_state else out
        if self.return_sequences:
            set_mask(res[0] if isinstance(res, list) else res, mask_of(inputs))
        register_call(self, inputs, res)
        return res

    @property
    def stateful(self) -> bool:
        """Keras: stateful as its recurrent layers (each then holds its own states)."""
        return bool(getattr(self.forward_layer, "stateful", False))

    def reset_states(self, states: Any = None) -> None:
        """Resets both directions' states to zeros (Keras's Bidirectional.reset_states); `states`
        gives the forward layer's then the backward layer's state arrays."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
            return
        if not isinstance(states, (list, tuple)):
            raise ValueError(f"Unrecognized value for `states`. Expected `states` to be list or tuple. "
                             f"Received: {states}")
        values = list(states)
        half = len(values) // 2
        self.forward_layer.reset_states(values[:half])
        self.backward_layer.reset_states(values[half:])

    @property
    def weights(self) -> List[Any]:
        return self.forward_layer.weights + self.backward_layer.weights

    def _checkpoint_children(self) -> List[Any]:
        return [("forward_layer", self.forward_layer), ("backward_layer", self.backward_layer)]  # Keras's

    variables = weights

    @property
    def trainable_weights(self) -> List[Any]:
        return self.forward_layer.trainable_weights + self.backward_layer.trainable_weights

    @property
    def non_trainable_weights(self) -> List[Any]:
        return []

    @property
    def updates(self) -> List[Any]:
        return []

    @updates.setter
    def updates(self, v: Any) -> None:
        pass

    @property
    def losses(self) -> List[Any]:
        return getattr(self.forward_layer, "losses", []) + getattr(self.backward_layer, "losses", [])

    @losses.setter
    def losses(self, v: Any) -> None:
        pass



# -- 3-D and 1-D variants, spatial dropout, activity regularization --------------------------------

class Conv3D(_KerasMixin, _lc.Layer):
    """NDHWC convolution: kernel [kd, kh, kw, in, filters] (+ bias)."""
    _base = "conv3d"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1, 1), padding: str = "valid",
                 data_format: Optional[str] = None, dilation_rate: Any = (1, 1, 1), activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None, **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        kwargs.pop("groups", None) if kwargs.get("groups", 1) == 1 else None
        super().__init__(kwargs.pop("trainable", True), kwargs.pop("name", None), **kwargs)
        self._cfg = dict(filters=int(filters), kernel_size=kernel_size, strides=strides, padding=padding,
                         data_format=_image_format(data_format, "Conv3D"), dilation_rate=dilation_rate,
                         activation=_activation(activation), use_bias=use_bias,
                         kernel_initializer=_initializer(kernel_initializer),
                         bias_initializer=_initializer(bias_initializer), kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer)

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        from ..nn.layers3d import conv3d
        return conv3d(x, trainable=self.trainable, name=name, reuse=reuse, **self._cfg)


def _pool3d(fn_name: str, base: str) -> type:
    def init(self: Any, pool_size: Any = (2, 2, 2), strides: Any = None, padding: str = "valid",
             data_format: Optional[str] = None, **kwargs: Any) -> None:
        _Stateless.__init__(self, **kwargs)
        self._cfg = dict(pool_size=pool_size, strides=strides, padding=padding,
                         data_format=_image_format(data_format, base))

    def fn(self: Any, x: Any) -> Any:
        from ..nn import layers3d
        return getattr(layers3d, fn_name)(x, **self._cfg)
    return type("".join(p.title() for p in base.split("_")).replace("3d", "3D"), (_Stateless,),
                {"_base": base, "__init__": init, "_fn": fn})


MaxPooling3D = MaxPool3D = _pool3d("max_pooling3d", "max_pooling3d")
AveragePooling3D = AvgPool3D = _pool3d("average_pooling3d", "average_pooling3d")


class UpSampling1D(_Stateless):
    _base = "up_sampling1d"

    def __init__(self, size: int = 2, **kwargs: Any):
        super().__init__(**kwargs)
        self.size = int(size)

    def _fn(self, x: Any) -> Any:
        t = x.shape.dims[1]
        rest = [int(d) for d in x.shape.dims[2:]]
        return _a.reshape(_a.tile(_a.expand_dims(x, 2), [1, 1, self.size] + [1] * len(rest)),
                          [-1, t * self.size if t is not None else -1] + rest)


class ZeroPadding1D(_Stateless):
    _base = "zero_padding1d"

    def __init__(self, padding: Any = 1, **kwargs: Any):
        super().__init__(**kwargs)
        self.padding = (padding, padding) if isinstance(padding, int) else tuple(padding)

    def _fn(self, x: Any) -> Any:
        return pad(x, [[0, 0], list(self.padding), [0, 0]])


class Cropping1D(_Stateless):
    _base = "cropping1d"

    def __init__(self, cropping: Any = (1, 1), **kwargs: Any):
        super().__init__(**kwargs)
        self.cropping = (cropping, cropping) if isinstance(cropping, int) else tuple(cropping)

    def _fn(self, x: Any) -> Any:
        a, b = self.cropping
        return x[:, a:x.shape.dims[1] - b, :]


class _SpatialDropout(_Noise):
    """Drops whole feature maps (channels) in training, the kept ones scaled by 1/(1-rate);
    the channels are axis 1 with data_format="channels_first" (2-D and 3-D)."""
    _has_format = True

    def __init__(self, rate: float, data_format: Optional[str] = None, **kwargs: Any):
        if not self._has_format and data_format is not None:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments ['data_format']")
        super().__init__(rate, **kwargs)
        # the 1-D one is always channels-last, whatever image_data_format() says
        self.data_format = _image_format(data_format, type(self).__name__) if self._has_format else "channels_last"

    def _noisy(self, x: Any) -> Any:
        shape = _a.shape(x)
        if self.data_format == "channels_first":
            noise = _a.stack([shape[0], shape[1]] + [1] * (x.shape.rank - 2))
        else:
            noise = _a.stack([shape[0]] + [1] * (x.shape.rank - 2) + [shape[-1]])
        keep = 1.0 - self.rate
        kept = floor(_r.random_uniform(noise, dtype=x.dtype) + keep)  # 1 with probability keep
        return x * kept / keep


class SpatialDropout1D(_SpatialDropout):
    _base = "spatial_dropout1d"
    _has_format = False   # Keras's SpatialDropout1D has no data_format


class SpatialDropout2D(_SpatialDropout):
    _base = "spatial_dropout2d"


class ActivityRegularization(_Stateless):
    """The identity, adding l1 * sum|x| + l2 * sum(x^2) to the model's loss (per batch mean)."""
    _base = "activity_regularization"

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.l1, self.l2 = float(l1), float(l2)

    def _fn(self, x: Any) -> Any:
        batch = _m.cast(_a.shape(x)[0], x.dtype)
        penalty = (self.l1 * _m.reduce_sum(_m.abs(x)) + self.l2 * _m.reduce_sum(_m.square(x))) / batch
        self.losses = getattr(self, "losses", []) + [penalty]
        return identity(x)
