"""tf.layers' `data_format="channels_first"`: the channels-last layer between two transposes.

TF1 programs written for GPUs (the official ResNet, tf_cnn_benchmarks) build their
convolution and pooling layers channels-first.  The layer's variables are the same in both
formats (a kernel is [*window, in, out] either way), so a channels-first call moves the
channel axis last, runs the channels-last layer, and moves it back; the output transpose
sits in the layer's name scope (`conv2d/to_channels_first`).
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.ops import array_ops

_FIRST = ("channels_first", "NCHW", "NCW", "NCDHW")
_LAST = (None, "channels_last", "NHWC", "NWC", "NDHWC")


def accepts_channels_first(fn: Callable[..., _g.Tensor]) -> Callable[..., _g.Tensor]:
    """fn (a channels-last functional layer with `inputs` and `data_format` arguments) that
    also takes data_format="channels_first"."""
    sig = inspect.signature(fn)
    layer = fn.__name__

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> _g.Tensor:
        bound = sig.bind(*args, **kwargs)
        fmt = bound.arguments.get("data_format", "channels_last")
        if fmt in _LAST:
            return fn(*args, **kwargs)
        if fmt not in _FIRST:
            raise InvalidArgumentError(f"{layer}: data_format must be 'channels_last' or 'channels_first', got "
                                       f"{fmt!r}")
        x = _g.convert_to_tensor(bound.arguments["inputs"])
        r = x.shape.rank
        if r is None or r < 3:
            raise InvalidArgumentError(f"{layer}: a channels_first input needs a known rank of at least 3, got "
                                       f"shape {x.shape}")
        with x.graph.as_default():
            bound.arguments["inputs"] = array_ops.transpose(x, [0, *range(2, r), 1], name="to_channels_last")
            bound.arguments["data_format"] = "channels_last"
            y = fn(*bound.args, **bound.kwargs)
            # in the layer's scope: "conv2d/Relu" -> "conv2d/", a pool's "max_pooling2d" -> itself
            scope = y.op.name.rsplit("/", 1)[0] if "/" in y.op.name else y.op.name
            with x.graph.name_scope(scope + "/"):
                return array_ops.transpose(y, [0, r - 1, *range(1, r - 1)], name="to_channels_first")
    return wrapped
