"""tf.layers' 3-D layers on NDHWC volumes: conv3d (kernel [kd, kh, kw, in, filters], bias),
max_pooling3d and average_pooling3d, over the ops of graph/ops/conv3d_ops.py."""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.ops import conv3d_ops
from . import layers as _l
from .layer_formats import accepts_channels_first

__all__ = ["conv3d", "max_pooling3d", "average_pooling3d"]


def _triple(v: Any, what: str) -> Tuple[int, int, int]:
    if isinstance(v, int):
        return (int(v),) * 3
    t = tuple(int(a) for a in v)
    if len(t) != 3:
        raise ValueError(f"{what} must be an int or a triple, got {t}")
    return t  # type: ignore[return-value]


def _channels_last(data_format: str, layer: str) -> None:
    if data_format != "channels_last":
        raise InvalidArgumentError(f"{layer}: only data_format='channels_last' (NDHWC) is supported, got "
                                   f"{data_format!r}")


def conv3d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1, 1), padding: str = "valid",
           data_format: str = "channels_last", dilation_rate: Any = (1, 1, 1), activation: _l.Activation = None,
           use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
           kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
           trainable: bool = True, name: Optional[str] = None, reuse: Any = None) -> _g.Tensor:
    """3-D convolution layer: [n, d, h, w, in] -> [n, d', h', w', filters]; variables kernel
    [kd, kh, kw, in, filters] (glorot_uniform by default) and bias [filters]."""
    _channels_last(data_format, "conv3d")
    x, filters, in_ch = _l._conv_input(inputs, filters, "channels_last", "conv3d", 5, "an NDHWC input of rank 5")
    k = _triple(kernel_size, "kernel_size")
    g = x.graph
    with g.as_default(), _l._scope(g, name, "conv3d", reuse):
        kernel = _l._make_var(g, "kernel", list(k) + [in_ch, filters], x.dtype, kernel_initializer,
                              kernel_regularizer, trainable)
        bias = _l._bias(g, filters, x.dtype, use_bias, bias_initializer, bias_regularizer, trainable)
        y = conv3d_ops.conv3d(x, kernel, [1, *_triple(strides, "strides"), 1], _l._padding(padding),
                              dilations=[1, *_triple(dilation_rate, "dilation_rate"), 1])
        return _l._finish(y, bias, activation)


def _pool(fn: Any, layer: str, inputs: Any, pool_size: Any, strides: Any, padding: str, data_format: str,
          name: Optional[str]) -> _g.Tensor:
    _channels_last(data_format, layer)
    k = _triple(pool_size, "pool_size")
    s = _triple(strides, "strides") if strides is not None else k
    return fn(_l._input(inputs, layer, 5), [1, *k, 1], [1, *s, 1], _l._padding(padding), name=name or layer)


def max_pooling3d(inputs: Any, pool_size: Any, strides: Any = None, padding: str = "valid",
                  data_format: str = "channels_last", name: Optional[str] = None) -> _g.Tensor:
    """Max over pool_size windows of an NDHWC input (strides default to pool_size)."""
    return _pool(conv3d_ops.max_pool3d, "max_pooling3d", inputs, pool_size, strides, padding, data_format, name)


def average_pooling3d(inputs: Any, pool_size: Any, strides: Any = None, padding: str = "valid",
                      data_format: str = "channels_last", name: Optional[str] = None) -> _g.Tensor:
    """Mean over pool_size windows of an NDHWC input (padding not counted)."""
    return _pool(conv3d_ops.avg_pool3d, "average_pooling3d", inputs, pool_size, strides, padding, data_format, name)


conv3d = accepts_channels_first(conv3d)
max_pooling3d = accepts_channels_first(max_pooling3d)
average_pooling3d = accepts_channels_first(average_pooling3d)
