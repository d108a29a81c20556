"""The rest of TF1's tf.layers: the functional layer conv3d_transpose, the classes
Conv2DTranspose, Conv3D, Conv3DTranspose, MaxPooling3D and AveragePooling3D (objects over the
functional layers, as nn/layer_classes.py's), and InputSpec (the shape and dtype a layer
accepts; tf.keras.layers.InputSpec is the same class).  Variables are named as TF1 names
them: conv3d_transpose/kernel [kd, kh, kw, filters, in], conv3d_transpose/bias [filters]."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

from ..graph import graph as _g
from ..graph.ops import conv3d_ops
from . import layers as _l
from .layer_classes import _Conv, _Pool
from .layer_formats import accepts_channels_first
from .layers3d import _triple, average_pooling3d, conv3d, max_pooling3d

__all__ = ["conv3d_transpose", "Conv2DTranspose", "Conv3D", "Conv3DTranspose", "MaxPooling3D", "AveragePooling3D",
           "InputSpec"]


def deconv_length(n: Any, kernel: int, stride: int, padding: str, output_padding: Optional[int] = None) -> Any:
    """The output length of a transposed convolution along one axis (an int, or a tensor for
    an unknown `n`): what the matching convolution maps back to n."""
    if output_padding is None:
        extra = 0 if padding == "SAME" else max(kernel - stride, 0)
        return n * stride + extra
    pad = kernel // 2 if padding == "SAME" else 0
    return (n - 1) * stride + kernel - 2 * pad + output_padding


def conv3d_transpose(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1, 1), padding: str = "valid",
                     data_format: str = "channels_last", activation: Any = None, use_bias: bool = True,
                     kernel_initializer: Any = None, bias_initializer: Any = None,
                     kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
                     trainable: bool = True, name: Optional[str] = None, reuse: Any = None,
                     output_padding: Any = None) -> _g.Tensor:
    """Transposed 3-D convolution layer on NDHWC inputs: [n, d, h, w, in] -> [n, d', h', w',
    filters], d' = d * stride ("same") or d * stride + max(kernel - stride, 0) ("valid").
    Variables: kernel [kd, kh, kw, filters, in] (glorot_uniform by default), bias [filters].
    `output_padding` (Keras's Conv3DTranspose) sets the extra size explicitly."""
    x, filters, in_ch = _l._conv_input(inputs, filters, data_format, "conv3d_transpose", 5,
                                       "an NDHWC input of rank 5")
    k, s = _triple(kernel_size, "kernel_size"), _triple(strides, "strides")
    op = _triple(output_padding, "output_padding") if output_padding is not None else (None,) * 3
    pad = _l._padding(padding)
    sizes = []
    for axis in range(3):
        n = x.shape.dims[axis + 1]
        if n is None:
            raise ValueError(f"conv3d_transpose: the input's spatial sizes must be known, got shape {x.shape}")
        sizes.append(int(deconv_length(int(n), k[axis], s[axis], pad, op[axis])))
    g = x.graph
    with g.as_default(), _l._scope(g, name, "conv3d_transpose", reuse):
        kernel = _l._make_var(g, "kernel", list(k) + [filters, in_ch], x.dtype, kernel_initializer,
                              kernel_regularizer, trainable)
        bias = _l._bias(g, filters, x.dtype, use_bias, bias_initializer, bias_regularizer, trainable)
        out_shape = [-1] + sizes + [filters]  # the batch from the input (static sizes: the op needs them)
        y = conv3d_ops.conv3d_transpose(x, kernel, out_shape, strides=[1, *s, 1], padding=pad)
        y.set_shape([x.shape.dims[0]] + sizes + [filters])
        return _l._finish(y, bias, activation)


conv3d_transpose = accepts_channels_first(conv3d_transpose)


class Conv2DTranspose(_Conv):
    """tf.layers.Conv2DTranspose: kernel [kh, kw, filters, in], bias [filters]."""
    _base = "conv2d_transpose"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 data_format: str = "channels_last", activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = None, bias_initializer: Any = None,
                 kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
                 trainable: bool = True, name: Optional[str] = None, **kwargs: Any):
        super().__init__(filters, kernel_size, strides, padding, data_format, 1, activation, use_bias,
                         kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, trainable,
                         name, **kwargs)
        self._cfg.pop("dilation_rate")

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        return _l.conv2d_transpose(x, trainable=self.trainable, name=name, reuse=reuse, **self._cfg)


class Conv3D(_Conv):
    """tf.layers.Conv3D over NDHWC inputs: kernel [kd, kh, kw, in, filters], bias [filters]."""
    _base = "conv3d"
    _fn = staticmethod(conv3d)

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1, 1), padding: str = "valid",
                 data_format: str = "channels_last", dilation_rate: Any = (1, 1, 1), **kwargs: Any):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs)


class Conv3DTranspose(Conv2DTranspose):
    """tf.layers.Conv3DTranspose over NDHWC inputs: kernel [kd, kh, kw, filters, in], bias [filters]."""
    _base = "conv3d_transpose"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1, 1), padding: str = "valid",
                 data_format: str = "channels_last", **kwargs: Any):
        super().__init__(filters, kernel_size, strides, padding, data_format, **kwargs)

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        return conv3d_transpose(x, trainable=self.trainable, name=name, reuse=reuse, **self._cfg)


class MaxPooling3D(_Pool):
    """tf.layers.MaxPooling3D."""
    _base = "max_pooling3d"
    _fn = staticmethod(max_pooling3d)


class AveragePooling3D(_Pool):
    """tf.layers.AveragePooling3D (padding not counted in the mean)."""
    _base = "average_pooling3d"
    _fn = staticmethod(average_pooling3d)


class InputSpec:
    """What a layer accepts: dtype, shape (None for any size), ndim / max_ndim / min_ndim, and
    axes ({axis: size}).  Keras layers read it to check their inputs; here it is a record (with
    TF's attributes, repr and get_config/from_config) for code that makes and reads one."""

    def __init__(self, dtype: Any = None, shape: Optional[Sequence[Any]] = None, ndim: Optional[int] = None,
                 max_ndim: Optional[int] = None, min_ndim: Optional[int] = None,
                 axes: Optional[Dict[int, int]] = None, allow_last_axis_squeeze: bool = False,
                 name: Optional[str] = None):
        self.dtype = None if dtype is None else getattr(dtype, "name", dtype)
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.allow_last_axis_squeeze, self.name = allow_last_axis_squeeze, name
        try:
            self.axes = {int(k): v for k, v in (axes or {}).items()}
        except (ValueError, TypeError):
            raise TypeError(f"The keys in axes must be integers. Received: axes={axes}") from None
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            top = (self.ndim if self.ndim is not None else self.max_ndim) - 1
            if max(self.axes) > top:
                raise ValueError(f"Axis {max(self.axes)} is greater than the maximum allowed value: {top}")

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in (("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
                                         ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
                                         ("axes", self.axes)) if v]
        return f"InputSpec({', '.join(parts)})"

    def get_config(self) -> Dict[str, Any]:
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim, "max_ndim": self.max_ndim,
                "min_ndim": self.min_ndim, "axes": self.axes}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "InputSpec":
        return cls(**config)
