"""tf.data.experimental's stateful transformations (TF 1.13-1.15): scan, group_by_window,
bucket_by_sequence_length and group_by_reducer (with Reducer), used as `dataset.apply(tf.data.experimental.X(...))`.

Their functions are traced once into private graphs (as map's, dataset.py); the windows of
group_by_window reach reduce_func as a Dataset whose elements are those of the window.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Iterator, List, Optional

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph import nest
from ..graph.shape import TensorShape, as_shape
from . import sparse_elements as _sp
from .dataset import Dataset, _source_leaves, _stack
from .dataset_core import (Element, IterationContext, TensorSpec, _most_specific_compatible, _normalize_structure,
                           _TracedFunction)
from .dataset_more import _DatasetFunction, _PaddedBatch

__all__ = ["scan", "group_by_window", "bucket_by_sequence_length", "Reducer", "group_by_reducer"]


def _outer(ds: Dataset) -> _g.Graph:
    return ds._graph() or _g.get_default_graph()


def _relaxed_state(state: Any, new_state: Any) -> Any:
    """The state's specs relaxed to also hold `new_state` (what a traced function returned for
    it), or None when they already do: TF's rule for scan and group_by_reducer states, which
    are traced again until their shapes hold.  TypeError for another structure or dtypes."""
    try:
        nest.assert_same_structure(state, new_state)
    except (ValueError, TypeError):
        raise TypeError(f"The element structure for the new state must match the initial state. Expected "
                        f"{state} but got {new_state}.") from None
    old, new = nest.flatten(state), nest.flatten(new_state)
    if [s.dtype for s in old] != [s.dtype for s in new]:
        raise TypeError(f"The element types for the new state must match the initial state. Expected "
                        f"{[s.dtype.name for s in old]}; got {[s.dtype.name for s in new]}.")
    relaxed = [TensorSpec(_most_specific_compatible(a.shape, b.shape), a.dtype) for a, b in zip(old, new)]
    return None if relaxed == old else nest.pack_sequence_as(state, relaxed)


# -- scan ------------------------------------------------------------------------------------------------

class _Scan(Dataset):
    def __init__(self, ds: Dataset, initial_state: Any, scan_func: Callable[..., Any]):
        state, self._init, caps = _source_leaves(_normalize_structure(initial_state), slices=False)
        if any(_sp.is_sparse(s) for s in ds._flat_specs()):
            raise TypeError("scan: collflow does not scan datasets of SparseTensors")
        for _ in range(4):  # TF's rule: trace again with the state's shapes relaxed until they hold
            fn = _TracedFunction(scan_func, (state, ds._structure), "scan", _outer(ds))
            out = fn.out_structure
            if not isinstance(out, tuple) or len(out) != 2:
                raise TypeError("The scan function must return a pair comprising the new state and the output value.")
            new_state, output = out
            relaxed = _relaxed_state(state, new_state)
            if relaxed is None:
                break
            state = relaxed
        self._fn, self._n_state = fn, len(nest.flatten(state))
        super().__init__(output, inputs=[ds], captures=caps + fn.captures.outer)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        call = self._fn.caller(ctx)
        state = [np.asarray(ctx.value(v)) for v in self._init]
        specs = self._fn.out_specs
        k = self._n_state
        for el in self._inputs[0]._elements(ctx):
            got = call(*state, *el)
            new = [np.asarray(v, dtype=s.dtype.np) for v, s in zip(got[:k], specs[:k])]
            for a, b, s in zip(state, new, specs[:k]):
                if not s.shape.matches_value(b.shape):
                    raise InvalidArgumentError(f"scan: the new state has shape {b.shape}, expected {s.shape}")
            state = new
            yield tuple(np.asarray(v, dtype=s.dtype.np) for v, s in zip(got[k:], specs[k:]))

    def _describe(self) -> str:
        return f"scan({self._fn.describe()})"


def scan(initial_state: Any, scan_func: Callable[..., Any]) -> Callable[[Dataset], Dataset]:
    """scan_func(state, element) -> (new_state, output): the outputs, the state carried
    from element to element, starting at initial_state."""
    return lambda ds: _Scan(ds, initial_state, scan_func)


# -- group_by_window -------------------------------------------------------------------------------------

class _Window(Dataset):
    """The elements of the window being reduced (set just before reduce_func's dataset runs)."""

    def __init__(self, structure: Any):
        self._local = threading.local()  # each thread running the pipeline has its own window
        super().__init__(structure)

    def set(self, window: List[Element]) -> None:
        self._local.current = window

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        return iter(list(getattr(self._local, "current", [])))

    def _describe(self) -> str:
        return "window"


def _key_function(fn: Callable[..., Any], ds: Dataset, what: str) -> _TracedFunction:
    f = _TracedFunction(fn, ds._structure, what, _outer(ds))
    out = f.out_structure
    if not isinstance(out, TensorSpec) or out.dtype != _dt.int64 or out.shape.rank not in (None, 0):
        raise ValueError(f"`{what}` must return a single tf.int64 scalar tensor, got {out}.")
    return f


class _GroupByWindow(Dataset):
    def __init__(self, ds: Dataset, key_func: Callable[..., Any], reduce_func: Callable[..., Any],
                 window_size: Any, window_size_func: Optional[Callable[..., Any]]):
        if (window_size is None) == (window_size_func is None):
            raise ValueError("Either the `window_size` argument or the `window_size_func` argument must be "
                             "specified.")
        self._key = _key_function(key_func, ds, "key_func")
        key_spec = TensorSpec((), _dt.int64)
        if window_size_func is None:
            size = window_size

            def window_size_func(_: Any) -> Any:
                from ..graph.ops.constant_op import constant  # a Python int or an int64 tensor
                return size if isinstance(size, _g.Tensor) else constant(int(size), _dt.int64)
        self._size = _TracedFunction(window_size_func, key_spec, "window_size_func", _outer(ds))
        if self._size.out_structure.dtype != _dt.int64 or self._size.out_structure.shape.rank not in (None, 0):
            raise ValueError(f"`window_size_func` must return a single tf.int64 scalar tensor, got "
                             f"{self._size.out_structure}.")
        self._window = _Window(ds._structure)
        window = self._window
        self._reduce = _DatasetFunction(lambda key: reduce_func(key, window), key_spec, "reduce_func", _outer(ds))
        caps = self._key.captures.outer + self._size.captures.outer + self._reduce.captures.outer
        super().__init__(self._reduce.inner._structure, inputs=[ds], captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        key_of, size_of, reduce = self._key.caller(ctx), self._size.caller(ctx), self._reduce.datasets(ctx)
        groups: Dict[int, List[Element]] = {}
        sizes: Dict[int, int] = {}

        def flush(key: int) -> Iterator[Element]:
            window = groups.pop(key)
            self._window.set(window)  # read whenever reduce_func's dataset reaches it; drained before the next
            yield from reduce((np.array(key, dtype=np.int64),))

        for el in self._inputs[0]._elements(ctx):
            key = int(np.asarray(key_of(*el)[0]))
            if key not in sizes:
                n = int(np.asarray(size_of(np.array(key, dtype=np.int64))[0]))
                if n < 1:
                    raise InvalidArgumentError(f"Window size must be greater than zero, but got {n}.")
                sizes[key] = n
            groups.setdefault(key, []).append(el)
            if len(groups[key]) == sizes[key]:
                yield from flush(key)
        for key in sorted(groups):  # the rest, in ascending key order (as TF)
            yield from flush(key)

    def _describe(self) -> str:
        return f"group_by_window({self._key.describe()},{self._size.describe()},{self._reduce.describe()})"


def group_by_window(key_func: Callable[..., Any], reduce_func: Callable[..., Any], window_size: Any = None,
                    window_size_func: Optional[Callable[..., Any]] = None) -> Callable[[Dataset], Dataset]:
    """Elements grouped by key_func (an int64 scalar); each group, when it holds its window
    size (window_size, or window_size_func(key)) elements - and what is left of every group
    at the end, in ascending key order - goes to reduce_func(key, window_dataset), a Dataset
    whose elements are output in turn."""
    return lambda ds: _GroupByWindow(ds, key_func, reduce_func, window_size, window_size_func)


# -- bucket_by_sequence_length ------------------------------------------------------------------------------

class _Bucketed(Dataset):
    def __init__(self, ds: Dataset, length_func: Callable[..., Any], boundaries: List[int], batch_sizes: List[int],
                 padded_shapes: Any, padding_values: Any, pad_to_bucket_boundary: bool, no_padding: bool,
                 drop_remainder: bool):
        if len(batch_sizes) != len(boundaries) + 1:
            raise ValueError("len(bucket_batch_sizes) must equal len(bucket_boundaries) + 1")
        self._bounds, self._sizes = [int(b) for b in boundaries], [int(b) for b in batch_sizes]
        self._length = _TracedFunction(length_func, ds._structure, "element_length_func", _outer(ds))
        out = self._length.out_structure
        if not isinstance(out, TensorSpec) or not out.dtype.is_integer or out.shape.rank not in (None, 0):
            raise ValueError(f"`element_length_func` must return an integer scalar tensor, got {out}")
        self._drop, self._pad_to_bound, self._no_pad = bool(drop_remainder), bool(pad_to_bucket_boundary), \
            bool(no_padding)
        specs = ds._flat_specs()
        if self._no_pad:
            self._batchers: List[Any] = []
            out_specs = [TensorSpec(TensorShape(None) if s.shape.rank is None
                                    else TensorShape([None] + list(s.shape.dims)), s.dtype) for s in specs]
        else:
            flat = [s.shape for s in specs] if padded_shapes is None else \
                [as_shape(p) for p in nest.flatten_up_to(ds._structure, padded_shapes)]
            self._batchers = []
            for b, size in enumerate(self._sizes):
                fill = None
                if self._pad_to_bound and b < len(self._bounds):
                    fill = self._bounds[b] - 1
                per = [p if p.rank is None else TensorShape([fill if d is None else d for d in p.dims]) for p in flat]
                stand_in = Dataset(ds._structure)
                self._batchers.append(_PaddedBatch(stand_in, size, nest.pack_sequence_as(ds._structure, per),
                                                   padding_values, False))
            out_specs = [TensorSpec(TensorShape(None) if p.rank is None else TensorShape([None] + list(p.dims)),
                                    s.dtype) for s, p in zip(specs, flat)]
        super().__init__(nest.pack_sequence_as(ds._structure, out_specs), inputs=[ds],
                         captures=self._length.captures.outer)

    def _bucket(self, n: int) -> int:
        mins = [np.iinfo(np.int32).min] + self._bounds
        maxs = self._bounds + [np.iinfo(np.int32).max]
        for b, (lo, hi) in enumerate(zip(mins, maxs)):
            if lo <= n < hi:
                return b
        raise InvalidArgumentError(f"bucket_by_sequence_length: element length {n} is in no bucket")

    def _batch(self, b: int, buf: List[Element]) -> Element:
        if self._no_pad:
            return _stack(buf)
        if self._pad_to_bound and b == len(self._bounds):
            raise InvalidArgumentError("When pad_to_bucket_boundary=True, elements must have length < "
                                       "max(bucket_boundaries).")
        return self._batchers[b]._combine(buf)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        length = self._length.caller(ctx)
        groups: Dict[int, List[Element]] = {}
        for el in self._inputs[0]._elements(ctx):
            b = self._bucket(int(np.asarray(length(*el)[0])))
            groups.setdefault(b, []).append(el)
            if len(groups[b]) == self._sizes[b]:
                yield self._batch(b, groups.pop(b))
        for b in sorted(groups):  # what is left, by bucket (a smaller batch, unless drop_remainder)
            if not self._drop:
                yield self._batch(b, groups[b])

    def _describe(self) -> str:
        return (f"bucket_by_sequence_length({self._length.describe()},{self._bounds},{self._sizes},"
                f"{[b._describe() for b in self._batchers]},{self._pad_to_bound},{self._no_pad},{self._drop})")


def bucket_by_sequence_length(element_length_func: Callable[..., Any], bucket_boundaries: List[int],
                              bucket_batch_sizes: List[int], padded_shapes: Any = None, padding_values: Any = None,
                              pad_to_bucket_boundary: bool = False, no_padding: bool = False,
                              drop_remainder: bool = False) -> Callable[[Dataset], Dataset]:
    """Elements put in buckets by element_length_func (bucket i: bucket_boundaries[i-1] <=
    length < bucket_boundaries[i]) and batched per bucket (bucket_batch_sizes[i] each),
    padded as padded_batch (to the batch's longest, or with pad_to_bucket_boundary to the
    bucket's boundary - 1), as TF's group_by_window of padded_batch."""
    return lambda ds: _Bucketed(ds, element_length_func, list(bucket_boundaries), list(bucket_batch_sizes),
                                padded_shapes, padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)


# -- group_by_reducer --------------------------------------------------------------------------------------

class Reducer:
    """tf.data.experimental.Reducer: init_func(key) -> the initial state of a group,
    reduce_func(state, element) -> the new state, finalize_func(state) -> the output."""

    def __init__(self, init_func: Callable[..., Any], reduce_func: Callable[..., Any],
                 finalize_func: Callable[..., Any]):
        self.init_func, self.reduce_func, self.finalize_func = init_func, reduce_func, finalize_func


class _GroupByReducer(Dataset):
    def __init__(self, ds: Dataset, key_func: Callable[..., Any], reducer: Reducer):
        if not isinstance(reducer, Reducer):
            raise TypeError(f"group_by_reducer takes a tf.data.experimental.Reducer, got {type(reducer).__name__}")
        if any(_sp.is_sparse(s) for s in ds._flat_specs()):
            raise TypeError("group_by_reducer: collflow does not reduce datasets of SparseTensors")
        self._key = _key_function(key_func, ds, "key_func")
        key_spec = TensorSpec((), _dt.int64)
        self._init = _TracedFunction(reducer.init_func, key_spec, "init_func", _outer(ds))
        state = self._init.out_structure
        for _ in range(4):  # the state's shapes relaxed until they hold, as scan's
            fn = _TracedFunction(reducer.reduce_func, (state, ds._structure), "reduce_func", _outer(ds))
            relaxed = _relaxed_state(state, fn.out_structure)
            if relaxed is None:
                break
            state = relaxed
        self._reduce = fn
        self._finalize = _TracedFunction(reducer.finalize_func, state, "finalize_func", _outer(ds))
        caps = [t for f in (self._key, self._init, self._reduce, self._finalize) for t in f.captures.outer]
        super().__init__(self._finalize.out_structure, inputs=[ds], captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        key_of, init, reduce = self._key.caller(ctx), self._init.caller(ctx), self._reduce.caller(ctx)
        finalize = self._finalize.caller(ctx)
        states: Dict[int, List[Any]] = {}  # in the order the keys first came (as TF)
        for el in self._inputs[0]._elements(ctx):
            key = int(np.asarray(key_of(*el)[0]))
            if key not in states:
                states[key] = list(init(np.array(key, dtype=np.int64)))
            states[key] = list(reduce(*states[key], *el))
        specs = self._finalize.out_specs
        for key, state in states.items():
            yield tuple(np.asarray(v, dtype=s.dtype.np) for v, s in zip(finalize(*state), specs))

    def _describe(self) -> str:
        return "group_by_reducer(" + ",".join(f.describe() for f in (self._key, self._init, self._reduce,
                                                                     self._finalize)) + ")"


def group_by_reducer(key_func: Callable[..., Any], reducer: Reducer) -> Callable[[Dataset], Dataset]:
    """Elements grouped by key_func (an int64 scalar), each group reduced by `reducer`; one
    output per key at the end of the input, in the order the keys first came."""
    return lambda ds: _GroupByReducer(ds, key_func, reducer)
