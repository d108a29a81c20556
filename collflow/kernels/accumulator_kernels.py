"""Host kernels of the dense tf.ConditionalAccumulator (graph/ops/sparse_accumulator_ops.py),
after TF's ConditionalAccumulator kernel: a gradient whose local_step is below the global
step is dropped unchecked; the first one after a take is copied, later ones added (same
shape as the sum, and compatible with the accumulator's shape, else TF's "Shape mismatch");
take_grad waits for num_required (sparse_more_kernels.AccumulatorResource, shared with the
sparse accumulator), divides the sum by the count ("MEAN"), advances the global step and
starts over.  num_accumulated and set_global_step are the shared ops' kernels."""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel
from .sparse_more_kernels import AccumulatorResource, accumulator_maker, take_timeout_ms

__all__ = ["DenseAccumulatorResource"]


def _dbg(shape: Any) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _partial_dbg(shape: Optional[List[Optional[int]]]) -> str:
    """TF's PartialTensorShape.DebugString: [?,2], <unknown> for an unknown rank."""
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(int(d)) for d in shape) + "]"


class DenseAccumulatorResource(AccumulatorResource):
    """One ConditionalAccumulator of a Session: besides the base's, the summed gradient."""

    KIND = "ConditionalAccumulator"

    def __init__(self, name: str, dtype: Any, shape: Optional[List[Optional[int]]], reduction_type: str):
        super().__init__(name, dtype, shape, reduction_type)
        self.accum: Optional[np.ndarray] = None

    def _validate(self, grad: np.ndarray, op: Any) -> None:
        """TF's ValidateShape: the sum's shape once there is one, then the declared shape."""
        if self.counter > 0 and self.accum is not None and self.accum.shape != grad.shape:
            raise InvalidArgumentError(f"Shape mismatch: expected {_dbg(self.accum.shape)}, got {_dbg(grad.shape)}",
                                       op)
        want = self.shape
        if want is not None and (len(want) != grad.ndim
                                 or any(d is not None and d != g for d, g in zip(want, grad.shape))):
            raise InvalidArgumentError(f"Shape mismatch: expected {_partial_dbg(want)}, got {_dbg(grad.shape)}", op)

    def apply(self, local_step: int, grad: Any, op: Any) -> None:
        g = np.asarray(grad)
        with self.cond:
            if local_step < self.global_step:
                return  # a stale gradient: dropped without a look, as TF
            self._validate(g, op)
            if self.counter > 0 and self.accum is not None:
                self.accum = (self.accum + g).astype(self.dtype.np)
            else:
                self.accum = np.array(g, dtype=self.dtype.np, copy=True)
            self.counter += 1
            self.cond.notify_all()

    def _output(self) -> np.ndarray:
        """TF's TakeGradLockedHelper: step advanced, the sum divided by the count ("MEAN")."""
        self.global_step += 1
        out = self.accum
        assert out is not None  # take waits for counter >= num_required >= 1
        if self.reduction_type == "MEAN":
            out = (out / np.asarray(self.counter, out.dtype)).astype(out.dtype)
        self.counter = 0
        self.accum = None
        return out


def _dense(h: Any, op: Any) -> DenseAccumulatorResource:
    """The dense accumulator a handle value names (0-d object array where it was fed)."""
    acc = h.item() if isinstance(h, np.ndarray) else h
    if not isinstance(acc, DenseAccumulatorResource):
        raise InvalidArgumentError(f"{op.type} needs a ConditionalAccumulator, got a {acc.KIND}", op)
    acc.check_compatible(op.attrs["dtype"], op)
    return acc


@register_kernel("ConditionalAccumulator")
def _make(op: Any, ctx: KernelContext) -> Any:
    return accumulator_maker(op, ctx, DenseAccumulatorResource)


@register_kernel("AccumulatorApplyGradient")
def _apply(op: Any, ctx: KernelContext) -> Any:
    def apply(handle: Any, local_step: Any, gradient: Any) -> None:
        _dense(handle, op).apply(int(np.asarray(local_step)), gradient, op)
    return apply


@register_kernel("AccumulatorTakeGradient")
def _take(op: Any, ctx: KernelContext) -> Any:
    timeout = take_timeout_ms(ctx)
    session = ctx.session

    def take(handle: Any, num_required: Any) -> np.ndarray:
        return _dense(handle, op).take(int(np.asarray(num_required)), op, session, timeout)
    return take
