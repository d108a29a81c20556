"""Dataset.window (TF 1.13-1.15): a dataset of windows, each window the elements of one
stretch of the input, one Dataset per component, taken apart again by flat_map:

    ds.window(5, shift=1, drop_remainder=True).flat_map(lambda w: w.batch(5))

Window k holds the input elements k*shift + i*stride for i < size; without drop_remainder the
last windows may be shorter (down to one element), as TF's.  The windows reach flat_map's
function as Datasets in the input's structure (a tuple's components as arguments, a dict's
as one dict); the function is traced once, as map's.  collflow supports flat_map of windows
(the common use); other transformations of the window dataset raise a clear error.
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Iterator, List

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import nest
from .dataset import Dataset
from .dataset_core import Element, IterationContext, TensorSpec
from .dataset_grouping import _outer, _Window
from .dataset_more import _DatasetFunction

__all__ = ["window"]


def _count(value: Any, what: str) -> int:
    v = int(np.asarray(value))
    if v < 1:
        raise InvalidArgumentError(f"Dataset.window: {what} must be greater than zero, got {v}")
    return v


def _windows(source: Iterator[Element], size: int, shift: int, stride: int, drop: bool) -> Iterator[List[Element]]:
    """The windows of the stream, each a list of its elements, as TF's WindowDataset cuts them."""
    buf: collections.deque = collections.deque()
    base = 0                       # the stream index of buf[0]
    done = False
    start = 0
    span = (size - 1) * stride + 1
    while True:
        while not done and base + len(buf) < start + span:
            try:
                buf.append(next(source))
            except StopIteration:
                done = True
        have = base + len(buf)
        if start >= have:
            return
        window = [buf[i - base] for i in range(start, min(start + span, have), stride)]
        if len(window) < size and drop:
            return
        yield window
        start += shift
        while buf and base < start:
            buf.popleft()
            base += 1


class _Windows:
    """The dataset of windows that Dataset.window returns (consumed by flat_map)."""

    def __init__(self, ds: Dataset, size: Any, shift: Any, stride: Any, drop_remainder: bool):
        self._ds = ds
        self._size = _count(size, "size")
        self._shift = self._size if shift is None else _count(shift, "shift")
        self._stride = _count(stride, "stride")
        self._drop = bool(drop_remainder)

    def flat_map(self, map_func: Callable[..., Any]) -> Dataset:
        """The elements of the Dataset map_func gives for each window, one after another."""
        return _WindowFlatMap(self, map_func)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise NotImplementedError(f"Dataset.window(...).{name}: collflow takes a window dataset apart with "
                                  "flat_map only (e.g. ds.window(n).flat_map(lambda w: w.batch(n)))")


class _WindowFlatMap(Dataset):
    def __init__(self, windows: _Windows, fn: Callable[..., Any]):
        ds = windows._ds
        self._w = windows
        leaves = nest.flatten(ds._structure)
        self._parts = [_Window(spec) for spec in leaves]
        packed = nest.pack_sequence_as(ds._structure, self._parts)

        def call(_: Any) -> Any:
            if isinstance(packed, tuple):
                return fn(*packed)
            return fn(packed)
        self._fn = _DatasetFunction(call, TensorSpec((), _dt.int64), "flat_map", _outer(ds))
        super().__init__(self._fn.inner._structure, inputs=[ds], captures=self._fn.captures.outer)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        run = self._fn.datasets(ctx)
        w = self._w
        for window in _windows(iter(self._inputs[0]._elements(ctx)), w._size, w._shift, w._stride, w._drop):
            for k, part in enumerate(self._parts):  # read while the function's dataset runs, drained before the next
                part.set([(el[k],) for el in window])
            yield from run((np.array(0, dtype=np.int64),))

    def _describe(self) -> str:
        w = self._w
        return f"window({w._size},{w._shift},{w._stride},{w._drop}):{self._fn.describe()}"


def window(self: Dataset, size: Any, shift: Any = None, stride: Any = 1, drop_remainder: bool = False) -> _Windows:
    """Windows of `size` elements (`stride` apart) starting every `shift` elements (default
    size), each a Dataset per component; the last ones shorter unless drop_remainder."""
    return _Windows(self, size, shift, stride, drop_remainder)


setattr(Dataset, "window", window)
