"""Kernels of the debug ops."""
from __future__ import annotations

import time
from typing import Any

from ..errors import CancelledError, InvalidArgumentError
from .registry import register_kernel, KernelContext, current_cancellation_token


@register_kernel("Delay")
def _delay(op: Any, ctx: KernelContext) -> Any:
    def delay(x: Any, seconds: Any) -> Any:
        end = time.perf_counter() + float(seconds)
        tok = current_cancellation_token()
        while True:
            left = end - time.perf_counter()
            if left <= 0:
                return x
            if tok is not None and tok.c:
                raise CancelledError("run cancelled" + (f": {tok.reason}" if tok.reason else "")
                                     + f" during {op.name!r}", op)
            time.sleep(min(left, 0.001))
    return delay


@register_kernel("EnsureShape")
def _ensure_shape(op, ctx):  # type: ignore[no-untyped-def]
    """x, or InvalidArgumentError when its shape does not match (graph/ops/check_more_ops.py)."""
    want = op.attrs["shape"]

    def ensure_shape(x):  # type: ignore[no-untyped-def]
        if not want.matches_value(x.shape):
            raise InvalidArgumentError(f"Shape of tensor {op.inputs[0].name} {list(x.shape)} is not compatible "
                                       f"with expected shape {want}.", op)
        return x
    return ensure_shape
