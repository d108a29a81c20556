"""More of tf.keras.layers (TF 1.15, graph mode): AlphaDropout, ThresholdedReLU, the 3-D
resizing layers (Cropping3D, UpSampling3D, ZeroPadding3D), SpatialDropout3D, the 3-D global
poolings, Conv3DTranspose and SeparableConv1D.  Weights carry TF 1.15's Keras names and shapes
(conv3d_transpose/kernel [kd, kh, kw, filters, in], separable_conv1d/depthwise_kernel
[k, in, depth_multiplier], ...), so weights files load either way.  Every layer here infers
its output shape (compute_output_shape) by building itself on placeholders in a scratch graph."""
from __future__ import annotations

from typing import Any, Optional

from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import random_ops as _r
from ..graph.ops.slicing_ops import pad
from ..nn import layer_classes as _lc
from .layers import _GlobalPool, _KerasMixin, _Stateless, _activation, _initializer, _input_shape_kwargs
from .layers_attention import ShapeProbe
from .layers_more import _Noise, _SpatialDropout, _image_format

__all__ = ["AlphaDropout", "ThresholdedReLU", "SpatialDropout3D", "Cropping3D", "UpSampling3D", "ZeroPadding3D",
           "GlobalAveragePooling3D", "GlobalMaxPooling3D", "Conv3DTranspose", "SeparableConv1D"]


def _first(data_format: Optional[str], layer: str) -> bool:
    """Keras's data_format: True for channels_first (None: K.image_data_format())."""
    return _image_format(data_format, layer) == "channels_first"


def _triple(v: Any) -> tuple:
    return (int(v),) * 3 if isinstance(v, int) else tuple(int(d) for d in v)


def _pairs3(v: Any) -> tuple:
    """((a, b), (c, d), (e, f)) from an int, three ints or three pairs (Keras's 3-D padding forms)."""
    if isinstance(v, int):
        return ((v, v),) * 3
    return tuple((int(e), int(e)) if isinstance(e, int) else (int(e[0]), int(e[1])) for e in v)


class _StatelessProbe(ShapeProbe, _Stateless):
    def _probe(self, x: Any) -> Any:
        return self._fn(x)


class _NoiseProbe(ShapeProbe):
    def _probe(self, x: Any) -> Any:
        return x  # the identity's shape, in training too


class AlphaDropout(_NoiseProbe, _Noise):
    """Dropout that keeps a SELU network's mean and variance: in training each dropped unit is
    set to SELU's negative saturation -alpha * scale, then all are mapped by the affine a * x + b
    that restores zero mean and unit variance; the identity otherwise."""
    _base = "alpha_dropout"
    _supports_masking = True

    def __init__(self, rate: float, noise_shape: Any = None, seed: Optional[int] = None, **kwargs: Any):
        super().__init__(rate, **kwargs)
        self.noise_shape, self.seed = noise_shape, seed

    def _call(self, x: Any, name: Any, reuse: Any, training: Any = False) -> Any:
        if not 0.0 < self.rate < 1.0:
            return x  # Keras's: a rate outside (0, 1) leaves the input as it is
        return super()._call(x, name, reuse, training)

    def _noisy(self, x: Any) -> Any:
        # SELU's constants: the value a very negative input saturates to is -alpha * scale
        alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
        sat = -alpha * scale
        p = self.rate
        shape = _a.shape(x) if self.noise_shape is None else self.noise_shape
        kept = _m.cast(_m.greater_equal(_r.random_uniform(shape, dtype=x.dtype, seed=self.seed), p), x.dtype)
        a = ((1.0 - p) * (1.0 + p * sat ** 2)) ** -0.5
        b = -a * sat * p
        return a * (x * kept + sat * (1.0 - kept)) + b


class ThresholdedReLU(_StatelessProbe):
    """x where x > theta, 0 elsewhere."""
    _base = "thresholded_re_lu"
    _supports_masking = True

    def __init__(self, theta: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        if theta is None or float(theta) < 0:
            raise ValueError(f"Theta of a Thresholded ReLU layer cannot be None or negative, got {theta}")
        self.theta = float(theta)

    def _fn(self, x: Any) -> Any:
        return x * _m.cast(_m.greater(x, self.theta), x.dtype)


class SpatialDropout3D(_NoiseProbe, _SpatialDropout):
    """Drops whole channels of an NDHWC (or channels_first) volume in training (kept ones
    scaled by 1 / (1 - rate))."""
    _base = "spatial_dropout3d"



class Cropping3D(_StatelessProbe):
    """Crops ((d1, d2), (h1, h2), (w1, w2)) off an NDHWC volume's three spatial axes."""
    _base = "cropping3d"

    def __init__(self, cropping: Any = ((1, 1), (1, 1), (1, 1)), data_format: Optional[str] = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.first = _first(data_format, "Cropping3D")
        self.cropping = _pairs3(cropping)

    def _fn(self, x: Any) -> Any:
        idx = [slice(None)] * (2 if self.first else 1)
        for axis, (a, b) in enumerate(self.cropping, start=2 if self.first else 1):
            n = x.shape.dims[axis]
            if n is not None and a + b >= n:
                raise ValueError(f"Argument `cropping` must be smaller than the input's spatial size; got cropping "
                                 f"{self.cropping} for input shape {x.shape}")
            idx.append(slice(a, (n - b) if n is not None else (-b if b else None)))
        return x[tuple(idx) + (() if self.first else (slice(None),))]


def _repeat_axis(x: Any, axis: int, n: int) -> Any:
    """Each entry along `axis` repeated n times in place (Keras's repeat_elements)."""
    if n == 1:
        return x
    dims = x.shape.as_list()
    tiled = _a.tile(_a.expand_dims(x, axis + 1), [1] * (axis + 1) + [n] + [1] * (len(dims) - axis - 1))
    new = [-1 if d is None else d for d in dims]
    new[axis] = dims[axis] * n if dims[axis] is not None else -1
    if new.count(-1) > 1:  # an unknown batch and axis: the batch from the input's own shape
        new[0] = _a.shape(x)[0]
        return _a.reshape(tiled, _a.stack(new))
    return _a.reshape(tiled, new)


class UpSampling3D(_StatelessProbe):
    """Repeats each voxel size[0] x size[1] x size[2] times (nearest neighbour)."""
    _base = "up_sampling3d"

    def __init__(self, size: Any = (2, 2, 2), data_format: Optional[str] = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.first = _first(data_format, "UpSampling3D")
        self.size = _triple(size)

    def _fn(self, x: Any) -> Any:
        for axis, n in enumerate(self.size, start=2 if self.first else 1):
            x = _repeat_axis(x, axis, n)
        return x


class ZeroPadding3D(_StatelessProbe):
    """Zeros added before and after each spatial axis of an NDHWC volume."""
    _base = "zero_padding3d"

    def __init__(self, padding: Any = (1, 1, 1), data_format: Optional[str] = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.first = _first(data_format, "ZeroPadding3D")
        self.padding = _pairs3(padding)

    def _fn(self, x: Any) -> Any:
        spatial = [list(p) for p in self.padding]
        return pad(x, [[0, 0], [0, 0]] + spatial if self.first else [[0, 0]] + spatial + [[0, 0]])


class GlobalAveragePooling3D(ShapeProbe, _GlobalPool):
    _base = "global_average_pooling3d"

    def _probe(self, x: Any) -> Any:
        return self._fn(x)


class GlobalMaxPooling3D(GlobalAveragePooling3D):
    _base = "global_max_pooling3d"
    _reduce = staticmethod(_m.reduce_max)


class Conv3DTranspose(ShapeProbe, _KerasMixin, _lc.Layer):
    """Transposed 3-D convolution (NDHWC): kernel [kd, kh, kw, filters, in], bias [filters];
    output size d * s ("same"), d * s + max(k - s, 0) ("valid"), or (d - 1) * s + k - 2 * pad +
    output_padding when output_padding is given."""
    _base = "conv3d_transpose"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1, 1), padding: str = "valid",
                 output_padding: Any = None, data_format: Optional[str] = None, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None, **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        if tuple(_triple(kwargs.pop("dilation_rate", 1))) != (1, 1, 1):  # tf_keras 2.x's argument
            raise NotImplementedError("Conv3DTranspose(dilation_rate > 1) is not supported by collflow")
        fmt = "channels_first" if _first(data_format, "Conv3DTranspose") else "channels_last"
        super().__init__(kwargs.pop("trainable", True), kwargs.pop("name", None), **kwargs)
        s = _triple(strides)
        if output_padding is not None and any(p >= st for p, st in zip(_triple(output_padding), s)):
            raise ValueError(f"Stride {s} must be greater than output padding {_triple(output_padding)}")
        self.filters = int(filters)
        self._cfg = dict(filters=self.filters, kernel_size=kernel_size, strides=strides, padding=padding,
                         activation=_activation(activation), use_bias=use_bias,
                         kernel_initializer=_initializer(kernel_initializer),
                         bias_initializer=_initializer(bias_initializer), kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer, output_padding=output_padding, data_format=fmt)

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        from ..nn.layer_classes3d import conv3d_transpose
        return conv3d_transpose(x, trainable=self.trainable, name=name, reuse=reuse, **self._cfg)


class SeparableConv1D(ShapeProbe, _KerasMixin, _lc.SeparableConv1D):
    """Depthwise-separable 1-D convolution: depthwise_kernel [k, in, depth_multiplier],
    pointwise_kernel [1, in * depth_multiplier, filters], bias [filters]."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: Optional[str] = None, dilation_rate: Any = 1, depth_multiplier: int = 1,
                 activation: Any = None, use_bias: bool = True, depthwise_initializer: Any = "glorot_uniform",
                 pointwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 depthwise_regularizer: Any = None, pointwise_regularizer: Any = None, bias_regularizer: Any = None,
                 **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        fmt = "channels_first" if _first(data_format, "SeparableConv1D") else "channels_last"
        super().__init__(filters, kernel_size, strides, padding, fmt, dilation_rate, depth_multiplier,
                         activation=_activation(activation), use_bias=use_bias,
                         depthwise_initializer=_initializer(depthwise_initializer),
                         pointwise_initializer=_initializer(pointwise_initializer),
                         bias_initializer=_initializer(bias_initializer), depthwise_regularizer=depthwise_regularizer,
                         pointwise_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer, **kwargs)

