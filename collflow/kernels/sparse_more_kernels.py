"""Host kernels of tf.sparse.bincount (TF's DenseCountSparseOutput / SparseCountSparseOutput)
and of tf.SparseConditionalAccumulator (graph/ops/sparse_misc_ops.py, sparse_accumulator_ops.py).

The accumulator follows TF's SparseConditionalAccumulator kernel: a gradient whose local_step
is below the accumulator's global step is dropped unchecked; the first gradient after a take
is copied, later ones merged into it the way TF merges them (one pass over both index lists,
which TF assumes sorted), each index counting the gradients that had it; take_grad waits
for num_required gradients, divides each index's sum by its own count ("MEAN"), advances
the global step and starts over.  TF's InvalidArgumentError messages, raised when the op runs.
AccumulatorResource (count, global step, the waiting takes) is shared with the dense
tf.ConditionalAccumulator's kernels (accumulator_kernels.py), as TF's ConditionalAccumulatorBase.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, List, Optional, Tuple

import numpy as np

from ..errors import CancelledError, DeadlineExceededError, InvalidArgumentError
from .registry import KernelContext, current_cancellation_token, register_kernel

__all__ = ["AccumulatorResource", "SparseAccumulatorResource", "accumulator_maker", "take_timeout_ms"]

# how often a blocked take_grad looks for cancellation (seconds), as the queues do
_POLL_S = 0.05


def _dbg(shape: Tuple[int, ...]) -> str:
    """TF's TensorShape.DebugString: [2,3]."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


# -- bincount ------------------------------------------------------------------------------------------

def _counts(batch: np.ndarray, vals: np.ndarray, weights: Optional[np.ndarray], nbatch: int, minlength: int,
            maxlength: int, binary: bool, out_dtype: Any, is_1d: bool, op: Any) -> Tuple[np.ndarray, ...]:
    """TF 2.21's per-batch counting: a negative value is an error; values >= maxlength (when
    >= 0) skipped; entries sorted by (batch, value); the width maxlength (when >= 0), else
    max(largest counted + 1, minlength)."""
    if vals.size and vals.min() < 0:
        raise InvalidArgumentError("Input values must all be non-negative", op)
    keep = np.ones(vals.shape, bool)
    if maxlength >= 0:
        keep &= vals < maxlength
    b, v = batch[keep].astype(np.int64), vals[keep].astype(np.int64)
    top = int(v.max()) if v.size else 0
    width = maxlength if maxlength >= 0 else max(top + 1, minlength)
    key = b * max(width, 1) + v
    uniq, inv = np.unique(key, return_inverse=True)
    if binary:
        out = np.ones(uniq.size, out_dtype)
    elif weights is not None:
        out = np.zeros(uniq.size, out_dtype)
        np.add.at(out, inv, weights[keep].astype(out_dtype))  # in input order, as TF's += per entry
    else:
        out = np.bincount(inv, minlength=uniq.size).astype(out_dtype)
    ub, uv = uniq // max(width, 1), uniq % max(width, 1)
    if is_1d:
        return uv.reshape(-1, 1), out, np.array([width], np.int64)
    return np.stack([ub, uv], 1).reshape(-1, 2), out, np.array([nbatch, width], np.int64)


def _count_attrs(op: Any) -> Tuple[int, int, bool, Any]:
    a = op.attrs
    return int(a["minlength"]), int(a["maxlength"]), bool(a["binary_output"]), a["output_type"].np


@register_kernel("DenseCountSparseOutput")
def _dense_count(op: Any, ctx: KernelContext) -> Any:
    minlength, maxlength, binary, out_dtype = _count_attrs(op)

    def count(values: Any, weights: Any) -> Any:
        data, w = np.asarray(values), np.asarray(weights)
        if data.ndim not in (1, 2):
            raise InvalidArgumentError(f"Input must be a 1 or 2-dimensional tensor. Got: {_dbg(data.shape)}", op)
        use_w = w.size > 0
        if use_w and w.shape != data.shape:
            raise InvalidArgumentError(f"Weights and data must have the same shape. Weight shape: {_dbg(w.shape)}; "
                                       f"data shape: {_dbg(data.shape)}", op)
        if data.ndim == 2 and data.shape[0] == 0:
            raise InvalidArgumentError("Invalid input: Shapes dimension cannot be 0.", op)
        rows = data.reshape(1 if data.ndim == 1 else data.shape[0], -1)
        batch = np.repeat(np.arange(rows.shape[0]), rows.shape[1])
        return _counts(batch, rows.reshape(-1), w.reshape(-1) if use_w else None, rows.shape[0], minlength,
                       maxlength, binary, out_dtype, data.ndim == 1, op)
    return count


@register_kernel("SparseCountSparseOutput")
def _sparse_count(op: Any, ctx: KernelContext) -> Any:
    minlength, maxlength, binary, out_dtype = _count_attrs(op)

    def count(indices: Any, values: Any, shape: Any, weights: Any) -> Any:
        idx, vals, shp, w = (np.asarray(x) for x in (indices, values, shape, weights))
        if idx.ndim != 2:
            raise InvalidArgumentError(f"Input indices must be a 2-dimensional tensor. Got: {_dbg(idx.shape)}", op)
        if vals.ndim != 1:
            raise InvalidArgumentError(f"Input values must be a vector. Got: {_dbg(vals.shape)}", op)
        if shp.ndim != 1:
            raise InvalidArgumentError(f"Input shape must be a vector. Got: {_dbg(shp.shape)}", op)
        if vals.shape[0] != idx.shape[0]:
            raise InvalidArgumentError(f"Number of values must match first dimension of indices.Got "
                                       f"{vals.shape[0]} values, indices shape: {_dbg(idx.shape)}", op)
        if shp.shape[0] != idx.shape[1]:
            raise InvalidArgumentError(f"Number of dimensions must match second dimension of indices.Got "
                                       f"{shp.shape[0]} dimensions, indices shape: {_dbg(idx.shape)}", op)
        if shp.size == 0:
            raise InvalidArgumentError("The shape argument requires at least one element.", op)
        bad = np.argwhere((idx < 0) | (idx >= shp[None, :]))
        if bad.size:
            i, j = (int(x) for x in bad[0])
            raise InvalidArgumentError(f"Invalid index value at {i}: dimension {j} has value {int(idx[i, j])} which "
                                       f"is not in [0, {int(shp[j])}) (as given by dense shape "
                                       f"{shp.tolist()})", op)
        use_w = w.size > 0
        if use_w and w.shape != vals.shape:
            raise InvalidArgumentError(f"Weights and values must have the same shape. Weight shape: "
                                       f"{_dbg(w.shape)}; values shape: {_dbg(vals.shape)}", op)
        is_1d = shp.size == 1
        nbatch = 1 if is_1d else int(shp[0])
        if nbatch <= 0:
            raise InvalidArgumentError(f"Cannot allocate {nbatch} batches, is the dense shape too wide?", op)
        batch = np.zeros(idx.shape[0], np.int64) if is_1d else idx[:, 0]
        return _counts(batch, vals, w if use_w else None, nbatch, minlength, maxlength, binary, out_dtype, is_1d, op)
    return count


# -- SparseConditionalAccumulator ------------------------------------------------------------------------

class AccumulatorResource:
    """What TF's ConditionalAccumulatorBase keeps, shared by the dense and the sparse
    accumulators: the count of gradients, the global step, and the take_grad attempts
    waiting (served in arrival order, each honouring cancellation, session close and the
    operation timeout).  Subclasses hold the sum and define apply and _output."""

    KIND = "ConditionalAccumulator"

    def __init__(self, name: str, dtype: Any, shape: Optional[List[Optional[int]]], reduction_type: str):
        self.name = name
        self.dtype = dtype
        self.shape = shape  # None: unknown rank; None entries: unknown dimensions
        self.reduction_type = reduction_type
        self.cond = threading.Condition(threading.Lock())
        self.counter = 0
        self.global_step = 0
        self._line: deque = deque()

    def check_compatible(self, dtype: Any, op: Any) -> None:
        if dtype != self.dtype:
            raise InvalidArgumentError(f"shared accumulator {self.name!r} holds {self.dtype.name}; this op gives "
                                       f"{dtype.name}", op)

    def _output(self) -> Any:
        raise NotImplementedError

    def take(self, num_required: int, op: Any, session: Any, timeout_ms: Optional[float]) -> Any:
        if num_required <= 0:
            raise InvalidArgumentError(f"Argument num_required must be positive, but was {num_required}", op)
        ticket = object()
        token = current_cancellation_token()
        deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms else None
        with self.cond:
            self._line.append(ticket)
            try:
                while not (self._line[0] is ticket and self.counter >= num_required):
                    if token is not None and token.c:
                        raise CancelledError("TakeGrad operation was cancelled", op)
                    if session is not None and getattr(session, "_closed", False):
                        raise CancelledError("TakeGrad operation was cancelled: session closed", op)
                    wait = _POLL_S
                    if deadline is not None:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise DeadlineExceededError(
                                f"take_grad on accumulator {self.name!r} timed out after {timeout_ms:g} ms waiting "
                                f"for {num_required} gradients ({self.counter} accumulated)", op)
                        wait = min(wait, left)
                    self.cond.wait(wait)
                return self._output()
            finally:
                self._line.remove(ticket)
                self.cond.notify_all()

    def set_global_step(self, step: int) -> None:
        with self.cond:
            if step < self.global_step:
                from ..platform import tf_logging
                tf_logging.warning("Attempt to set current_global_step_ to smaller value: current_global_step_ = "
                                   "%d >= %d = new_global_step.", self.global_step, step)
            self.global_step = step


class SparseAccumulatorResource(AccumulatorResource):
    """One SparseConditionalAccumulator of a Session (TF's kernel state): besides the base's,
    the summed slices (indices in TF's merge order, values, per-index counts)."""

    KIND = "SparseConditionalAccumulator"

    def __init__(self, name: str, dtype: Any, shape: Optional[List[Optional[int]]], reduction_type: str):
        super().__init__(name, dtype, shape, reduction_type)
        self.idx = np.zeros(0, np.int64)
        self.vals: Any = None
        self.counts = np.zeros(0, np.int64)

    # -- apply ------------------------------------------------------------------------------------------
    def _validate(self, idx: np.ndarray, vals: np.ndarray, shape: Optional[np.ndarray], op: Any) -> None:
        """TF's GetAndValidateTensorInputForApplyGrad and ValidateShape, in their order."""
        if idx.ndim != 1:
            raise InvalidArgumentError(f"Input indices should be vector but received shape: {_dbg(idx.shape)}", op)
        if vals.ndim == 0:
            raise InvalidArgumentError("Values cannot be 0-dimensional.", op)
        if vals.shape[0] != idx.shape[0]:
            raise InvalidArgumentError(f"Expected {idx.shape[0]} non-empty input values, got {vals.shape[0]}", op)
        want = self.shape or []  # an unknown rank checks nothing
        if shape is not None:
            flat = shape.reshape(-1)
            if len(want) > flat.size:
                raise InvalidArgumentError(f"Shape mismatch: expected shape rank at least {len(want)}, got "
                                           f"{flat.size}", op)
            for i, d in enumerate(want):
                if d is not None and d != int(flat[i]):
                    raise InvalidArgumentError(f"Shape mismatch: expected shape dim {i} to be {d}, got "
                                               f"{int(flat[i])}", op)
        if want and want[0] is not None:
            over = np.nonzero(idx >= want[0])[0]
            if over.size:
                i = int(over[0])
                raise InvalidArgumentError(f"Shape mismatch: index of slice {i} exceeded limits of shape; index is "
                                           f"{int(idx[i])} exceeded {want[0]}", op)
        if self.counter > 0:
            if self.vals.ndim != vals.ndim:
                raise InvalidArgumentError(f"Shape mismatch: expected values rank {self.vals.ndim}, got {vals.ndim}",
                                           op)
            for i in range(1, vals.ndim):
                if self.vals.shape[i] != vals.shape[i]:
                    raise InvalidArgumentError(f"Shape mismatch: expected values dim {i} to be {self.vals.shape[i]}, "
                                               f"got {vals.shape[i]}", op)
        else:
            if len(want) > vals.ndim:
                raise InvalidArgumentError(f"Shape mismatch: expected values rank at least {len(want)}, got "
                                           f"{vals.ndim}", op)
            for i in range(1, len(want)):
                if want[i] is not None and want[i] != vals.shape[i]:
                    raise InvalidArgumentError(f"Shape mismatch: expected values dim {i} to be {want[i]}, got "
                                               f"{vals.shape[i]}", op)

    def _merge(self, idx: np.ndarray, vals: np.ndarray) -> None:
        """TF's AddToAccumGradFunction: one pass over both index lists (sorted, as TF assumes;
        for unsorted ones this keeps TF's order too), equal indices summed and counted."""
        a, b = self.idx.tolist(), idx.tolist()
        i = j = 0
        src_a: List[int] = []
        src_b: List[int] = []
        while i < len(a) and j < len(b):
            if a[i] < b[j]:
                src_a.append(i), src_b.append(-1)
                i += 1
            elif a[i] > b[j]:
                src_a.append(-1), src_b.append(j)
                j += 1
            else:
                src_a.append(i), src_b.append(j)
                i += 1
                j += 1
        src_a += list(range(i, len(a)))
        src_b += [-1] * (len(a) - i)
        src_a += [-1] * (len(b) - j)
        src_b += list(range(j, len(b)))
        sa, sb = np.asarray(src_a, np.int64), np.asarray(src_b, np.int64)
        ha, hb = sa >= 0, sb >= 0
        out = np.zeros((sa.size,) + vals.shape[1:], self.vals.dtype)
        out[ha] += self.vals[sa[ha]]
        out[hb] += vals[sb[hb]]
        new_idx = np.where(ha, self.idx[np.maximum(sa, 0)] if self.idx.size else 0,
                           idx[np.maximum(sb, 0)] if idx.size else 0)
        counts = np.where(ha, self.counts[np.maximum(sa, 0)] if self.counts.size else 0, 0) + hb
        self.idx, self.vals, self.counts = new_idx.astype(np.int64), out, counts.astype(np.int64)

    def apply(self, local_step: int, idx: Any, vals: Any, shape: Optional[Any], op: Any) -> None:
        idx, vals = np.asarray(idx), np.asarray(vals)
        with self.cond:
            if local_step < self.global_step:
                return  # a stale gradient: dropped without a look, as TF
            self._validate(idx, vals, None if shape is None else np.asarray(shape), op)
            if self.counter > 0:
                self._merge(idx.astype(np.int64), vals)
            else:
                self.idx = idx.astype(np.int64).copy()
                self.vals = np.array(vals, dtype=self.dtype.np, copy=True)
                self.counts = np.ones(idx.shape[0], np.int64)
            self.counter += 1
            self.cond.notify_all()

    # -- take -------------------------------------------------------------------------------------------
    def _output(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """TF's TakeGradLockedHelper: step advanced, sums averaged per index ("MEAN"), counter reset."""
        self.global_step += 1
        vals = self.vals
        if self.reduction_type == "MEAN":
            c = self.counts.reshape((-1,) + (1,) * (vals.ndim - 1))
            vals = (vals / c.astype(vals.dtype)).astype(vals.dtype)
        first = -1 if not self.shape or self.shape[0] is None else int(self.shape[0])
        shape = np.array([first] + list(vals.shape[1:]), np.int64)
        self.counter = 0
        return self.idx.copy(), vals, shape


_TF_NAMES = {"int8": "DT_INT8", "int16": "DT_INT16", "int32": "DT_INT32", "int64": "DT_INT64", "uint8": "DT_UINT8",
             "uint16": "DT_UINT16", "uint32": "DT_UINT32", "uint64": "DT_UINT64", "complex64": "DT_COMPLEX64",
             "complex128": "DT_COMPLEX128"}


def _acc(h: Any) -> Any:
    """The accumulator a handle value names (0-d object array where it was fed)."""
    return h.item() if isinstance(h, np.ndarray) else h


def accumulator_maker(op: Any, ctx: KernelContext, cls: type) -> Any:
    """The kernel of an accumulator-making op: the Session's accumulator of the shared name
    (made on first use), refused where TF has no kernel or the name holds another kind."""
    a = op.attrs

    def make() -> AccumulatorResource:
        if a["dtype"].name not in ("float16", "float32", "float64"):  # TF's kernels: the floats only
            raise InvalidArgumentError(
                f"No OpKernel was registered to support Op '{cls.KIND}' used by {{{{node "
                f"{op.name}}}}} with these attrs: [dtype={_TF_NAMES.get(a['dtype'].name, a['dtype'].name)}, "
                f"reduction_type=\"{a['reduction_type']}\"]; registered kernels: dtype in [DT_DOUBLE], "
                f"[DT_FLOAT], [DT_HALF]", op)
        acc = ctx.resources.get_or_create("accumulator", a["shared_name"], lambda: cls(
            a["shared_name"], a["dtype"], a["shape"], a["reduction_type"]))
        if not isinstance(acc, cls):
            raise InvalidArgumentError(f"shared accumulator {a['shared_name']!r} is a {acc.KIND}, not a "
                                       f"{cls.KIND}", op)
        acc.check_compatible(a["dtype"], op)
        return acc
    return make


@register_kernel("SparseConditionalAccumulator")
def _make_accumulator(op: Any, ctx: KernelContext) -> Any:
    return accumulator_maker(op, ctx, SparseAccumulatorResource)


def take_timeout_ms(ctx: KernelContext) -> Optional[float]:
    """The Session's operation timeout (ms) a blocked take_grad honours; None: wait on."""
    t = (ctx.config or {}).get("operation_timeout_in_ms")
    return float(t) if t and t > 0 else None


@register_kernel("SparseAccumulatorApplyGradient")
def _apply(op: Any, ctx: KernelContext) -> Any:
    known = bool(op.attrs["has_known_shape"])

    def apply(handle: Any, local_step: Any, indices: Any, values: Any, shape: Any) -> None:
        acc = _acc(handle)
        acc.check_compatible(op.attrs["dtype"], op)
        acc.apply(int(np.asarray(local_step)), indices, values, shape if known else None, op)
    return apply


@register_kernel("SparseAccumulatorTakeGradient")
def _take(op: Any, ctx: KernelContext) -> Any:
    timeout = take_timeout_ms(ctx)
    session = ctx.session
    return lambda handle, num_required: _acc(handle).take(int(np.asarray(num_required)), op, session, timeout)


@register_kernel("AccumulatorNumAccumulated")
def _num_accumulated(op: Any, ctx: KernelContext) -> Any:
    return lambda handle: np.array(_acc(handle).counter, np.int32)


@register_kernel("AccumulatorSetGlobalStep")
def _set_global_step(op: Any, ctx: KernelContext) -> Any:
    return lambda handle, step: _acc(handle).set_global_step(int(np.asarray(step)))
