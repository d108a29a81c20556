"""Channels-first data formats (NCHW, NCW, NCDHW) and explicit padding for the image ops.

collflow's image kernels are channels-last (NHWC).  An NCHW call of conv2d, its two
gradients, conv2d_transpose, the 2-D pools or bias_add runs the NHWC op between two
transposes, as TensorFlow's own layout optimizer does on a CPU; the output transpose takes
the op's name, so `Conv2D:0` is still the tensor the rest of the graph refers to.  An
explicit padding list (TF 1.14+: `[[0, 0], [top, bottom], [left, right], [0, 0]]` in the
data format's order) becomes a zero Pad followed by the VALID op, which is what EXPLICIT
padding computes.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

import numpy as np

from ...errors import InvalidArgumentError
from .. import graph as _g
from ..shape import TensorShape
from . import array_ops as _a
from . import slicing_ops as _s

_FIRST = ("NCHW", "NCW", "NCDHW", "NC...")
_LAST = (None, "NHWC", "NWC", "NDHWC", "N...C")


def channels_first(data_format: Optional[str], what: str, last: str = "NHWC", first: str = "NCHW") -> bool:
    """True for a channels-first format (NCHW, NCW, NCDHW, TF's "NC..."), False for a
    channels-last one or None; anything else is refused, naming the op's two formats."""
    if data_format in _LAST:
        return False
    if data_format in _FIRST:
        return True
    raise InvalidArgumentError(f"{what}: data_format must be '{last}' or '{first}', got {data_format!r}")


def nhwc_order(v: Any, first: bool, rank: int = 4, what: str = "strides, ksize or dilations") -> Any:
    """A rank-long strides/ksize/dilations list in the data format's order, channels last
    ([n, c, *spatial] -> [n, *spatial, c]); other forms (an int, spatial values only) mean
    the same in both formats."""
    if not first or v is None or isinstance(v, (int, np.integer)):
        return v
    vals = list(np.asarray(v).reshape(-1)) if not isinstance(v, (list, tuple)) else list(v)
    if len(vals) != rank:
        return v
    if int(vals[0]) != 1 or int(vals[1]) != 1:
        raise InvalidArgumentError(f"{what} {list(v)}: a channels-first list must be 1 over the batch and channel "
                                   f"dimensions ([1, 1, spatial...])")
    return [vals[0], *vals[2:], vals[1]]


def explicit_padding(padding: Any, first: bool, what: str) -> Optional[List[List[int]]]:
    """The NHWC pairs of an explicit padding list (None for a string such as "SAME"), checked
    as TF checks them: 4 pairs of 2, none negative, 0 in the batch and channel dimensions."""
    if isinstance(padding, str):
        if padding.upper() == "EXPLICIT":
            raise InvalidArgumentError(f"{what}: 'EXPLICIT' is not a valid value for `padding`. To use explicit "
                                       "padding, `padding` must be a list.")
        return None
    if not isinstance(padding, (list, tuple)):
        return None                               # the op's own check names the bad value
    pairs = []
    for i, p in enumerate(padding):
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            raise InvalidArgumentError(f"{what}: when `padding` is a list, each element of `padding` must be a "
                                       f"list/tuple of size 2. Received: padding={padding} (element {i})")
        pairs.append([int(p[0]), int(p[1])])
    if len(pairs) != 4:
        raise InvalidArgumentError(f"{what}: when padding is a list, it must be of size 4. Received: "
                                   f"padding={padding} of size {len(pairs)}")
    nhwc = [pairs[0], pairs[2], pairs[3], pairs[1]] if first else pairs
    if any(v < 0 for p in nhwc for v in p):
        raise InvalidArgumentError(f"{what}: padding {padding} has a negative amount")
    if any(nhwc[0]) or any(nhwc[3]):
        raise InvalidArgumentError(f"{what}: padding {padding} pads the batch or channel dimension; only the "
                                   "spatial dimensions may be padded")
    return nhwc


def pad_spatial(x: Any, pairs: List[List[int]]) -> _g.Tensor:
    """x (NHWC) with zeros added as the explicit padding says."""
    return _s.pad(x, pairs)


def crop_spatial(x: Any, pairs: List[List[int]], sizes: Any, name: Optional[str]) -> _g.Tensor:
    """The inverse of pad_spatial: the cells of x (NHWC) inside the padding, `sizes` of them."""
    return _s.slice(x, [0, pairs[1][0], pairs[2][0], 0], sizes, name=name)


def _rank(x: _g.Tensor, what: str) -> int:
    r = x.shape.rank
    if r is None or r < 3:
        raise InvalidArgumentError(f"{what}: a channels-first input needs a known rank of at least 3, got shape "
                                   f"{x.shape}")
    return r


def to_nhwc(x: Any) -> _g.Tensor:
    """x with its channel axis (1) moved last, any rank from 3."""
    x = _g.convert_to_tensor(x)
    r = _rank(x, "to_nhwc")
    return _a.transpose(x, [0, *range(2, r), 1], name="to_nhwc")


def in_nhwc(x: Any, first: bool, name: Optional[str], default: str,
            body: Callable[[_g.Tensor, Optional[str]], _g.Tensor], out_nchw: bool = True) -> _g.Tensor:
    """body(x channels-last, op name) -> the channels-last result (any rank from 3).
    Channels-first: x is transposed in, and (out_nchw) the result back; the inner ops sit
    under the op's name as a scope and the output transpose takes the name itself."""
    if not first:
        return body(x, name)
    x = _g.convert_to_tensor(x)
    g = x.graph
    with g.as_default():
        full = g.unique_name(name or default, mark_as_used=False)
        with g.name_scope(full + "/"):
            y = body(to_nhwc(x), None)
        if not out_nchw:
            return y
        r = _rank(y, default)
        return _a.transpose(y, [0, r - 1, *range(1, r - 1)], name=name or default)


def nhwc_shape(shape: Any) -> Any:
    """A static NCHW shape (a shape hint) in NHWC order; None or an unknown rank as given."""
    if shape is None or TensorShape(shape).rank != 4:
        return shape
    return TensorShape([TensorShape(shape).dims[i] for i in (0, 2, 3, 1)])


def nhwc_sizes(sizes: Any, rank: int = 4) -> Any:
    """A channels-first shape (a list or a 1-D int tensor of `rank` entries), channels last."""
    perm = [0, *range(2, rank), 1]
    if isinstance(sizes, _g.Tensor):
        return _s.gather(sizes, np.array(perm, np.int32))
    vals = [int(d) for d in np.asarray(sizes).reshape(-1)]
    if len(vals) != rank:
        raise InvalidArgumentError(f"the output/input sizes must have {rank} elements, got {vals}")
    return [vals[i] for i in perm]
