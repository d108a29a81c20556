"""Kernels of the TensorArray ops (collflow/graph/tensor_array.py): the run-time storage."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..errors import InvalidArgumentError
from ..graph.shape import as_shape
from .registry import KernelContext, register_kernel

__all__ = ["TensorArrayState"]


class TensorArrayState:
    """Run-time storage of one TensorArray: a [capacity, *element] buffer allocated on first write.

    A forward array is write-once (a second write to an index is an error); a gradient array
    (`aggregate`) adds repeated writes and reads unwritten elements as zeros.  Stack hands
    out the buffer itself and Unstack adopts its input without copying; a later write then
    copies first (`shared`), so no array anyone else holds is ever modified.  A `dynamic`
    array grows on a write past its end (capacity doubles, so n writes cost O(n) copies).
    """

    __slots__ = ("name", "size", "dtype", "xp", "buf", "written", "elem_shape", "aggregate", "forward",
                 "grads", "shared", "dynamic")

    def __init__(self, name: str, size: int, dtype: Any, xp: Any, elem_shape: Optional[tuple] = None,
                 aggregate: bool = False, forward: Optional["TensorArrayState"] = None, dynamic: bool = False):
        self.name = name
        self.size = size
        self.dtype = dtype
        self.xp = xp
        self.buf: Any = None
        self.written = [False] * size
        self.elem_shape = elem_shape
        self.aggregate = aggregate
        self.forward = forward
        self.grads: dict = {}
        self.shared = False
        self.dynamic = dynamic

    def element_shape(self) -> Optional[tuple]:
        if self.elem_shape is None and self.forward is not None:
            return self.forward.element_shape()
        return self.elem_shape

    def _index(self, i: Any, what: str) -> int:
        k = int(i)
        if k >= self.size and self.dynamic and what == "write" and k >= 0:
            self._grow(k + 1)
        if not 0 <= k < self.size:
            raise InvalidArgumentError(f"TensorArray {self.name}: cannot {what} index {k}; the array has "
                                       f"{self.size} elements")
        return k

    def _grow(self, n: int) -> None:
        self.written.extend([False] * (n - self.size))
        self.size = n
        if self.buf is not None and self.buf.shape[0] < n:
            cap = max(n, 2 * self.buf.shape[0])
            new = self.xp.zeros((cap,) + tuple(self.buf.shape[1:]), dtype=self.dtype)
            new[:self.buf.shape[0]] = self.buf
            self.buf, self.shared = new, False

    def _writable(self, shape: tuple) -> None:
        es = self.element_shape()
        if es is not None and tuple(shape) != tuple(es):
            raise InvalidArgumentError(f"TensorArray {self.name}: elements have shape {tuple(es)}, "
                                       f"got one of shape {tuple(shape)}")
        if self.buf is None:
            self.elem_shape = tuple(shape)
            self.buf = self.xp.zeros((self.size,) + self.elem_shape, dtype=self.dtype)
        elif self.shared:
            self.buf = self.buf.copy()
            self.shared = False

    def _own(self, v: Any) -> Any:
        """v on this array's device: a write from an op placed on another device (a CPU op
        writing into a GPU array, say) moves the value, as TF copies into the array's device."""
        on_gpu = type(v).__module__.startswith("cupy")
        if self.xp is np:
            return v.get() if on_gpu else v
        return v if on_gpu else self.xp.asarray(v)

    def write(self, i: Any, v: Any) -> None:
        k = self._index(i, "write")
        v = self._own(v)
        self._writable(v.shape)
        if self.written[k]:
            if not self.aggregate:
                raise InvalidArgumentError(f"TensorArray {self.name}: element {k} was already written "
                                           "(a TensorArray is write-once)")
            self.buf[k] += v
        else:
            self.buf[k] = v
            self.written[k] = True

    def read(self, i: Any) -> Any:
        k = self._index(i, "read")
        if not self.written[k]:
            es = self.element_shape()
            if not self.aggregate or es is None:
                raise InvalidArgumentError(f"TensorArray {self.name}: cannot read element {k}, it has not "
                                           "been written")
            return self.xp.zeros(es, dtype=self.dtype)
        # a gradient array may still add into this element: hand out a copy
        return self.buf[k].copy() if self.aggregate else self.buf[k]

    def stack(self, like: Any = None, static: Optional[tuple] = None) -> Any:
        """All elements; with none written, zeros shaped by the array, `like`, or the static
        element shape the graph inferred for this stack (`static`)."""
        if self.buf is None:
            es = self.element_shape()
            es = static if es is None else es
            if es is None:
                if like is None:
                    raise InvalidArgumentError(f"TensorArray {self.name}: cannot stack an array with no "
                                               "element written and an unknown element shape")
                es = tuple(like.shape)
            return self.xp.zeros((self.size,) + tuple(es), dtype=self.dtype)
        self.shared = True
        return self.buf if self.buf.shape[0] == self.size else self.buf[:self.size]

    def unstack(self, value: Any) -> None:
        value = self._own(value)
        if value.shape[0] != self.size:
            if not (self.dynamic and value.shape[0] > self.size):
                raise InvalidArgumentError(f"TensorArray {self.name}: cannot unstack a value of shape "
                                           f"{tuple(value.shape)} into {self.size} elements")
            self._grow(value.shape[0])
        if self.buf is None:
            es = self.element_shape()
            if es is not None and tuple(value.shape[1:]) != tuple(es):
                raise InvalidArgumentError(f"TensorArray {self.name}: elements have shape {tuple(es)}, "
                                           f"cannot unstack a value of shape {tuple(value.shape)}")
            self.buf, self.shared = value, True
            self.elem_shape = tuple(value.shape[1:])
            self.written = [True] * self.size
            return
        for k in range(value.shape[0]):
            self.write(k, value[k])


def _np_dtype(op: Any) -> Any:
    return op.attrs["dtype"].np


@register_kernel("TensorArrayV3")
def _k_create(op: Any, ctx: KernelContext) -> Any:
    xp, dt, name = ctx.xp, _np_dtype(op), op.name
    es = as_shape(op.attrs["element_shape"])
    static = tuple(es.dims) if es.is_fully_defined() else None
    dynamic = bool(op.attrs.get("dynamic_size", False))

    def create(size: Any) -> tuple:
        n = int(size)
        if n < 0:
            raise InvalidArgumentError(f"TensorArray {name}: size must be >= 0, got {n}", op)
        return TensorArrayState(name, n, dt, xp, static, dynamic=dynamic), xp.zeros((), dtype=xp.float32)
    return create


@register_kernel("TensorArrayWriteV3")
def _k_write(op: Any, ctx: KernelContext) -> Any:
    def write(ta: TensorArrayState, i: Any, v: Any, flow: Any) -> Any:
        ta.write(i, v)
        return flow
    return write


register_kernel("TensorArrayReadV3")(lambda op, ctx: lambda ta, i, flow: ta.read(i))


@register_kernel("TensorArrayStackV3")
def _k_stack(op: Any, ctx: KernelContext) -> Any:
    es = as_shape(op.attrs["element_shape"])
    static = tuple(es.dims) if es.is_fully_defined() else None
    return lambda ta, flow, like=None: ta.stack(like, static)


@register_kernel("TensorArraySizeV3")
def _k_size(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda ta, flow: xp.asarray(ta.size, dtype=xp.int32)


@register_kernel("TensorArrayUnstackV3")
def _k_unstack(op: Any, ctx: KernelContext) -> Any:
    def unstack(ta: TensorArrayState, value: Any, flow: Any) -> Any:
        ta.unstack(value)
        return flow
    return unstack


@register_kernel("TensorArraySplitV3")
def _k_split(op: Any, ctx: KernelContext) -> Any:
    def split(ta: TensorArrayState, value: Any, flow: Any) -> Any:
        n = ta.size
        rows = value.shape[0]
        if (n == 0 and rows) or (n and rows % n):
            raise InvalidArgumentError(f"TensorArray {ta.name}: cannot split {rows} rows evenly into {n} "
                                       "elements", op)
        es = ta.element_shape() if n == 0 else None
        if es is not None and all(isinstance(d, (int, np.integer)) for d in es):
            # splitting into no elements (a zero-step sequence) writes nothing: the rows an
            # element would have come from the array's element shape, not from the 0 rows
            ta.unstack(value.reshape((0,) + tuple(es)))
        else:
            ta.unstack(value.reshape((n, rows // n if n else 0) + tuple(value.shape[1:])))
        return flow
    return split


@register_kernel("TensorArrayGatherV3")
def _k_gather(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    es = as_shape(op.attrs["element_shape"])
    static = tuple(es.dims) if es.is_fully_defined() else None

    def gather(ta: TensorArrayState, indices: Any, flow: Any) -> Any:
        idx = [int(i) for i in np.asarray(indices).reshape(-1).tolist()]
        if idx:
            return xp.stack([ta.read(i) for i in idx])
        shape = ta.element_shape() or static
        if shape is None:
            raise InvalidArgumentError(f"TensorArray {ta.name}: cannot gather no elements of an unknown "
                                       "element shape", op)
        return xp.zeros((0,) + tuple(shape), dtype=ta.dtype)
    return gather


@register_kernel("TensorArrayScatterV3")
def _k_scatter(op: Any, ctx: KernelContext) -> Any:
    def scatter(ta: TensorArrayState, indices: Any, value: Any, flow: Any) -> Any:
        idx = [int(i) for i in np.asarray(indices).reshape(-1).tolist()]
        if len(idx) != value.shape[0]:
            raise InvalidArgumentError(f"TensorArray {ta.name}: {len(idx)} indices for a value of shape "
                                       f"{tuple(value.shape)}", op)
        for k, i in enumerate(idx):
            ta.write(i, value[k])
        return flow
    return scatter


@register_kernel("TensorArrayGradV3")
def _k_grad(op: Any, ctx: KernelContext) -> Any:
    source = op.attrs["source"]

    def grad(ta: TensorArrayState, flow: Any) -> tuple:
        st = ta.grads.get(source)
        if st is None:
            st = TensorArrayState(f"{ta.name}@{source}", ta.size, ta.dtype, ta.xp, None, aggregate=True, forward=ta)
            ta.grads[source] = st
        return st, flow
    return grad
