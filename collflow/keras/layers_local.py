"""tf.keras.layers.LocallyConnected1D / LocallyConnected2D (TF 1.15, implementation=1): a
convolution whose filter is not shared, each output position has its own.  Weights as Keras
makes them, so weights files load either way: LocallyConnected1D kernel [out_len, k * in,
filters] and bias [out_len, filters]; LocallyConnected2D kernel [out_rows * out_cols,
kh * kw * in, filters] and bias [out_rows, out_cols, filters].  Each position's patch is
flattened in (row, column, channel) order, as Keras flattens it; channels_first in (channel,
row, column) order, its output [batch, filters, *positions] and its bias reshaped (Keras's
bias_add reshapes, it does not transpose)."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from .layers import _activation, _initializer
from .layers_attention import ShapeProbe
from .layers_more import _Weighted

__all__ = ["LocallyConnected1D", "LocallyConnected2D"]


def _ints(v: Any, n: int) -> Tuple[int, ...]:
    return (int(v),) * n if isinstance(v, int) else tuple(int(d) for d in v)


def _out_len(n: int, k: int, s: int, padding: str) -> int:
    return (n - k) // s + 1 if padding == "valid" else (n + s - 1) // s


class _LocallyConnected(ShapeProbe, _Weighted):
    _rank = 1

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: Optional[str] = None, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None, implementation: int = 1,
                 **kwargs: Any):
        super().__init__(**kwargs)
        from . import backend as K
        self.data_format = K.normalize_data_format(data_format)
        self._first = self.data_format == "channels_first"
        if str(padding).lower() != "valid":
            # TF 1.15's implementation 1 takes only "valid"
            raise ValueError(f"Invalid border mode for LocallyConnected{self._rank}D (only \"valid\" is supported): "
                             f"{padding}")
        if implementation != 1:
            raise NotImplementedError(f"{type(self).__name__}(implementation={implementation}) is not supported by "
                                      "collflow (implementation=1 is)")
        self.filters = int(filters)
        self.kernel_size, self.strides = _ints(kernel_size, self._rank), _ints(strides, self._rank)
        self.padding, self.implementation = "valid", implementation
        self.activation, self.use_bias = _activation(activation), bool(use_bias)
        self._inits = (_initializer(kernel_initializer), _initializer(bias_initializer))
        self._regs = (kernel_regularizer, bias_regularizer)

    def _patches(self, x: Any, outs: List[int]) -> Tuple[Any, int]:
        """[positions, batch, prod(kernel) * in]: each output position's input patch, flattened."""
        flat = int(x.shape.dims[1 if self._first else -1])
        for k in self.kernel_size:
            flat *= k
        pieces = []
        for pos in _positions(outs):
            window = [slice(p * s, p * s + k) for p, s, k in zip(pos, self.strides, self.kernel_size)]
            # flattened as Keras flattens a patch: (channel, row, column) when channels_first
            idx = [slice(None)] + ([slice(None)] + window if self._first else window + [slice(None)])
            pieces.append(_a.reshape(x[tuple(idx)], [-1, flat]))
        return _a.stack(pieces), flat

    def _build_call(self, x: Any) -> Any:
        if x.shape.rank != self._rank + 2 or any(d is None for d in x.shape.dims[1:]):
            raise ValueError(f"{type(self).__name__} needs an input of rank {self._rank + 2} with known non-batch "
                             f"sizes, got {x.shape}")
        spatial = x.shape.dims[2:] if self._first else x.shape.dims[1:-1]
        outs = [_out_len(int(n), k, s, self.padding) for n, k, s in zip(spatial, self.kernel_size, self.strides)]
        if any(o <= 0 for o in outs):
            raise ValueError(f"{type(self).__name__}: the kernel {self.kernel_size} does not fit the input {x.shape}")
        patches, flat = self._patches(x, outs)
        npos = len(_positions(outs))
        kernel = self._var_new("kernel", [npos, flat, self.filters], x.dtype, self._inits[0], self._regs[0])
        y = _m.matmul(patches, kernel)  # [positions, batch, filters]
        y = _a.reshape(y, outs + [-1, self.filters])
        r = self._rank
        # batch first, then the filters (channels_first) or the positions
        y = _a.transpose(y, [r, r + 1] + list(range(r)) if self._first else [r] + list(range(r)) + [r + 1])
        if self.use_bias:
            bias = self._var_new("bias", outs + [self.filters], x.dtype, self._inits[1], self._regs[1])
            # channels_first: Keras's bias_add reshapes (not transposes) the bias to [1, filters, *outs]
            y = y + (_a.reshape(bias, [1, self.filters] + outs) if self._first else bias)
        return y if self.activation is None else self.activation(y)

    @property
    def kernel(self) -> Any:
        return self._var("kernel")

    @property
    def bias(self) -> Any:
        return self._var("bias")


def _positions(outs: List[int]) -> List[Tuple[int, ...]]:
    """The output positions, row-major (the order of Keras's kernel rows)."""
    out: List[Tuple[int, ...]] = [()]
    for n in outs:
        out = [p + (i,) for p in out for i in range(n)]
    return out


class LocallyConnected1D(_LocallyConnected):
    """[batch, steps, in] -> [batch, out_len, filters] with a kernel per output step."""
    _base = "locally_connected1d"
    _rank = 1


class LocallyConnected2D(_LocallyConnected):
    """[batch, rows, cols, in] -> [batch, out_rows, out_cols, filters] with a kernel per output pixel."""
    _base = "locally_connected2d"
    _rank = 2

    # the whole signature again: a saved config lists every argument of the class's own __init__
    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 data_format: Optional[str] = None, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None, implementation: int = 1,
                 **kwargs: Any):
        super().__init__(filters, kernel_size, strides, padding, data_format, activation, use_bias,
                         kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, implementation,
                         **kwargs)
