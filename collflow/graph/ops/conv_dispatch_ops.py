"""tf.nn.convolution and tf.nn.pool: TF1's rank-generic entry points, dispatched on the
filter's (or window's) rank to conv1d / conv2d / conv3d and the matching pools, with
spatial `strides` and `dilation_rate` lists (channels last, or first between transposes)."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ...errors import InvalidArgumentError, UnimplementedError
from .. import graph as _g
from . import array_ops as _a
from . import block_ops as _b
from . import conv3d_ops as _c3
from . import layout_ops as _lay
from . import nn_ops as _nn

__all__ = ["convolution", "pool", "max_pool1d", "avg_pool1d", "max_pool_v2", "avg_pool_v2"]


def _spatial(v: Any, n: int, what: str, fn: str) -> List[int]:
    out = [1] * n if v is None else ([int(v)] * n if isinstance(v, int) else [int(a) for a in v])
    if len(out) != n or any(a < 1 for a in out):
        raise InvalidArgumentError(f"{fn}: {what} must have {n} positive entries, got {v!r}")
    return out


_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


def _first(data_format: Optional[str], n: int, fn: str) -> bool:
    """Whether an n-d op's data_format is channels-first (TF's names per rank; None: last)."""
    last, first = _FORMATS[n]
    if data_format in (None, last):
        return False
    if data_format == first:
        return True
    raise InvalidArgumentError(f"{fn}: data_format must be '{last}' or '{first}', got {data_format!r}")


def convolution(input: Any, filter: Any, padding: str, strides: Optional[Sequence[int]] = None,  # noqa: A002
                dilation_rate: Optional[Sequence[int]] = None, name: Optional[str] = None,
                data_format: Optional[str] = None, filters: Any = None, dilations: Any = None) -> _g.Tensor:
    """An N-d convolution (N = 1, 2 or 3, the filter's rank minus 2) of [batch, *spatial, in]
    with filter [*window, in, out]; strides and dilation_rate per spatial dimension."""
    w = _g.convert_to_tensor(filter if filter is not None else filters)
    if w.shape.rank is None:
        raise InvalidArgumentError("convolution needs a filter of known rank")
    n = w.shape.rank - 2
    if n not in (1, 2, 3):
        raise UnimplementedError(f"convolution: {n}-d convolutions are not supported (1, 2 or 3)")
    first = _first(data_format, n, "convolution")
    st = _spatial(strides, n, "strides", "convolution")
    dr = _spatial(dilation_rate if dilation_rate is not None else dilations, n, "dilation_rate", "convolution")
    if any(s > 1 for s in st) and any(d > 1 for d in dr):
        raise InvalidArgumentError("convolution: strides > 1 are not supported together with dilation_rate > 1 (TF's "
                                   "rule)")
    x = _g.convert_to_tensor(input)
    if first:   # channels-last between transposes
        return _lay.in_nhwc(x, True, name, "convolution", lambda xx, nm: convolution(
            xx, w, padding, st, dr, nm))
    with x.graph.as_default(), x.graph.name_scope(name or "convolution"):
        if n == 1:
            x4, w4 = _a.expand_dims(x, 1), _a.expand_dims(w, 0)
            y = _nn.conv2d(x4, w4, strides=[1, 1, st[0], 1], padding=padding, dilations=[1, 1, dr[0], 1])
            return _a.squeeze(y, [1])
        if n == 2:
            return _nn.conv2d(x, w, strides=[1, *st, 1], padding=padding, dilations=[1, *dr, 1])
        return _c3.conv3d(x, w, [1, *st, 1], padding, dilations=[1, *dr, 1])


def pool(input: Any, window_shape: Sequence[int], pooling_type: str, padding: str,  # noqa: A002
         dilation_rate: Optional[Sequence[int]] = None, strides: Optional[Sequence[int]] = None,
         name: Optional[str] = None, data_format: Optional[str] = None, dilations: Any = None) -> _g.Tensor:
    """N-d max or average pooling (N = len(window_shape): 1, 2 or 3) of [batch, *spatial,
    channels] (or channels-first: NCW, NCHW, NCDHW); strides per spatial dimension (default 1).  A dilation_rate
    above 1 (VALID padding, stride 1, as TF requires) pools the space-to-batch blocks."""
    n = len(window_shape)
    if n not in (1, 2, 3):
        raise UnimplementedError(f"pool: {n}-d pooling is not supported (1, 2 or 3)")
    kind = pooling_type.upper()
    if kind not in ("MAX", "AVG"):
        raise InvalidArgumentError(f"pool: pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}")
    first = _first(data_format, n, "pool")
    dr = _spatial(dilation_rate if dilation_rate is not None else dilations, n, "dilation_rate", "pool")
    k, st = _spatial(window_shape, n, "window_shape", "pool"), _spatial(strides, n, "strides", "pool")
    # TF's own refusals (nn_ops.pool and _get_strides_and_dilation_rate)
    if any(s > 1 for s in st) and any(d > 1 for d in dr):
        raise InvalidArgumentError(f"pool: strides > 1 are not supported together with dilation_rate > 1, got "
                                   f"strides={st} and dilation_rate={dr}")
    if padding == "SAME" and any(d > 1 for d in dr):
        raise InvalidArgumentError(f"pool: pooling with 'SAME' padding is not implemented for dilation_rate > 1, "
                                   f"got dilation_rate={dr}")
    if any(s > w for s, w in zip(st, k)):
        raise InvalidArgumentError(f"pool: strides > window_shape are not supported (TF refuses them for the "
                                   f"inconsistency between its CPU and GPU kernels), got strides={st} and "
                                   f"window_shape={k}")
    return _pool(input, k, kind, padding, st, dr, name, first)


def _pool(input: Any, k: List[int], kind: str, padding: str, st: List[int], dr: List[int],  # noqa: A002
          name: Optional[str], first: bool) -> _g.Tensor:
    """The pooling of `pool` without tf.nn.pool's own refusals (max_pool1d and TF2's
    max_pool/avg_pool take strides larger than the window); channels-first between transposes."""
    n = len(k)
    x = _g.convert_to_tensor(input)
    if first:
        return _lay.in_nhwc(x, True, name, kind.lower() + "_pool",
                            lambda xx, nm: _pool(xx, k, kind, padding, st, dr, nm, False))

    def undilated(xx: Any, _n: int, pad: str) -> _g.Tensor:
        if n == 3:
            fn3 = _c3.max_pool3d if kind == "MAX" else _c3.avg_pool3d
            return fn3(xx, [1, *k, 1], [1, *st, 1], pad)
        fn2 = _nn.max_pool2d if kind == "MAX" else _nn.avg_pool2d
        if n == 2:
            return fn2(xx, [1, *k, 1], [1, *st, 1], pad)
        y = fn2(_a.expand_dims(xx, 1), [1, 1, k[0], 1], [1, 1, st[0], 1], pad)
        return _a.squeeze(y, [1])

    with x.graph.as_default(), x.graph.name_scope(name or (kind.lower() + "_pool")):
        if all(d == 1 for d in dr):
            return undilated(x, n, padding)
        return _b.with_space_to_batch(x, dr, padding, undilated)


def _window_1d(v: Any, what: str, fn: str) -> List[int]:
    """ksize / strides of a 1-d pool: an int, [k] or [1, k, 1] (TF's forms)."""
    vals = [int(v)] if isinstance(v, int) else [int(a) for a in v]
    if len(vals) == 3:
        if vals[0] != 1 or vals[2] != 1:
            raise InvalidArgumentError(f"{fn}: {what} must be 1 in the batch and channel dimensions, got {v!r}")
        vals = vals[1:2]
    return _spatial(vals, 1, what, fn)


def _pool1d(kind: str, fn: str, default: str, input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
            data_format: str, name: Optional[str]) -> _g.Tensor:
    first = _first(data_format, 1, fn)
    if first:   # [1, c, w] lists read as [1, w, c]
        ksize, strides = _lay.nhwc_order(ksize, True, 3), _lay.nhwc_order(strides, True, 3)
    return _pool(input, _window_1d(ksize, "ksize", fn), kind, padding, _window_1d(strides, "strides", fn), [1],
                 name or default, first)


def max_pool1d(input: Any, ksize: Any, strides: Any, padding: str, data_format: str = "NWC",  # noqa: A002
               name: Optional[str] = None) -> _g.Tensor:
    """Max pooling of [batch, width, channels] over windows of ksize, stepping strides."""
    return _pool1d("MAX", "max_pool1d", "MaxPool1d", input, ksize, strides, padding, data_format, name)


def avg_pool1d(input: Any, ksize: Any, strides: Any, padding: str, data_format: str = "NWC",  # noqa: A002
               name: Optional[str] = None) -> _g.Tensor:
    """Average pooling of [batch, width, channels] over windows of ksize, stepping strides."""
    return _pool1d("AVG", "avg_pool1d", "AvgPool1d", input, ksize, strides, padding, data_format, name)


def _nd_pool(kind: str, input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
             data_format: Optional[str], name: Optional[str]) -> _g.Tensor:
    x = _g.convert_to_tensor(input)
    if x.shape.rank is None:
        raise InvalidArgumentError(f"{kind.lower()}_pool_v2 needs an input of known rank")
    n = x.shape.rank - 2
    if n not in _FORMATS:
        raise UnimplementedError(f"{kind.lower()}_pool_v2: {n}-d pooling is not supported (1, 2 or 3)")
    first = _first(data_format, n, f"{kind.lower()}_pool_v2")

    def spatial(v: Any, what: str) -> List[int]:
        vals = [int(v)] * n if isinstance(v, int) else [int(a) for a in v]
        if len(vals) == n + 2:   # with the batch and channel entries, in the data format's order
            vals = vals[2:] if first else vals[1:-1]
        elif len(vals) == 1:
            vals = vals * n
        return _spatial(vals, n, what, f"{kind.lower()}_pool_v2")
    return _pool(x, spatial(ksize, "ksize"), kind, padding, spatial(strides, "strides"), [1] * n, name, first)


def max_pool_v2(input: Any, ksize: Any, strides: Any, padding: str, data_format: Optional[str] = None,  # noqa: A002
                name: Optional[str] = None) -> _g.Tensor:
    """TF2's tf.nn.max_pool: 1-, 2- or 3-d by the input's rank; ksize/strides an int, one
    per spatial dimension, or with the batch and channel entries."""
    return _nd_pool("MAX", input, ksize, strides, padding, data_format, name)


def avg_pool_v2(input: Any, ksize: Any, strides: Any, padding: str, data_format: Optional[str] = None,  # noqa: A002
                name: Optional[str] = None) -> _g.Tensor:
    """TF2's tf.nn.avg_pool: 1-, 2- or 3-d by the input's rank."""
    return _nd_pool("AVG", input, ksize, strides, padding, data_format, name)
