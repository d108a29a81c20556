"""More of tf.data (TensorFlow 1.x): Dataset.padded_batch, flat_map, interleave, cache, and
TextLineDataset.

Installed as Dataset methods when collflow.data loads.  flat_map's and interleave's
function returns a Dataset; it is traced once into a private graph (as map's function is,
dataset.py), and per input element the graph tensors that Dataset reads are evaluated with
the element fed, then the Dataset runs with those values.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterator, List, Optional

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, NotFoundError
from ..graph import graph as _g
from ..graph import nest
from ..graph.shape import TensorShape, as_shape
from .dataset import Dataset, _arg_repr, _Batch, _Generator, _scalar_arg
from .dataset_core import Element, IterationContext, TensorSpec, _PrivateFunction

__all__ = ["TextLineDataset"]


# -- padded_batch ---------------------------------------------------------------------------------------

def _padded_specs(ds: Dataset, padded_shapes: Any) -> List[TensorShape]:
    specs = ds._flat_specs()
    if padded_shapes is None:  # (TF 2's default) every dimension padded to the batch's largest
        return [TensorShape([None] * s.shape.rank) if s.shape.rank is not None else TensorShape(None)
                for s in specs]
    try:
        flat = nest.flatten_up_to(ds._structure, padded_shapes)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"padded_batch: padded_shapes must have the structure of the dataset's "
                                   f"elements {ds._structure}: {e}") from None
    out = []
    for k, (s, p) in enumerate(zip(specs, flat)):
        shp = as_shape([None if d is not None and int(d) == -1 else d for d in p]
                       if isinstance(p, (list, tuple)) else p)
        if shp.rank is None or (s.shape.rank is not None and s.shape.rank != shp.rank):
            raise InvalidArgumentError(f"padded_batch: padded shape {shp} of component {k} does not match the "
                                       f"rank of the element's shape {s.shape}")
        if s.shape.rank is not None:
            for d, (have, want) in enumerate(zip(s.shape.dims, shp.dims)):
                if have is not None and want is not None and have > want:
                    raise InvalidArgumentError(
                        f"padded_batch: component {k} has {have} in dimension {d}, more than its padded shape {shp}")
        out.append(shp)
    return out


def _padding_values(ds: Dataset, padding_values: Any) -> List[Any]:
    specs = ds._flat_specs()
    if padding_values is None:
        return ["" if s.dtype == _dt.string else s.dtype.np.type(0) for s in specs]  # (strings are str)
    flat = nest.flatten_up_to(ds._structure, padding_values)
    out = []
    for k, (s, v) in enumerate(zip(specs, flat)):
        a = np.asarray(v.decode() if isinstance(v, bytes) else v)
        if a.shape != ():
            raise InvalidArgumentError(f"padded_batch: the padding value of component {k} must be a scalar, "
                                       f"got shape {a.shape}")
        out.append(a.item() if s.dtype == _dt.string else s.dtype.np.type(a))
    return out


class _PaddedBatch(_Batch):
    def __init__(self, ds: Dataset, batch_size: Any, padded_shapes: Any, padding_values: Any,
                 drop_remainder: bool):
        super().__init__(ds, batch_size, drop_remainder)  # batch's checks; the shapes are padded ones
        self._shapes = _padded_specs(ds, padded_shapes)
        self._pads = _padding_values(ds, padding_values)
        lead = self._size if self._drop and isinstance(self._size, int) else None
        specs = [TensorSpec(TensorShape(None) if p.rank is None else TensorShape([lead] + list(p.dims)), s.dtype)
                 for s, p in zip(ds._flat_specs(), self._shapes)]
        self._structure = nest.pack_sequence_as(ds._structure, specs)

    def _combine(self, buf: List[Element]) -> Element:
        out = []
        for k, (shp, pad) in enumerate(zip(self._shapes, self._pads)):
            parts = [np.asarray(e[k]) for e in buf]
            rank = parts[0].ndim
            for j, p in enumerate(parts):
                if p.ndim != rank:
                    raise InvalidArgumentError(f"padded_batch: elements of component {k} differ in rank: "
                                               f"{parts[0].shape} and element {j}'s {p.shape}")
            dims = shp.dims if shp.rank is not None else [None] * rank
            if len(dims) != rank:
                raise InvalidArgumentError(f"padded_batch: component {k} has shape {parts[0].shape}, "
                                           f"of another rank than its padded shape {shp}")
            full = []
            for d in range(rank):
                biggest = max(p.shape[d] for p in parts)
                if dims[d] is not None and biggest > dims[d]:
                    raise InvalidArgumentError(
                        f"Attempted to pad to a smaller size than the input element: component {k} has "
                        f"{biggest} in dimension {d}, padded shape {shp}")
                full.append(biggest if dims[d] is None else dims[d])
            dt = parts[0].dtype if parts[0].dtype != object else object
            batch = np.full([len(parts)] + full, pad, dtype=dt)
            for j, p in enumerate(parts):
                batch[(j,) + tuple(slice(0, n) for n in p.shape)] = p
            out.append(batch)
        return tuple(out)

    def _describe(self) -> str:
        return f"padded_batch({_arg_repr(self._size)},{self._drop},{self._shapes},{self._pads})"


def padded_batch(self: Dataset, batch_size: Any, padded_shapes: Any = None, padding_values: Any = None,
                 drop_remainder: bool = False) -> Dataset:
    """Consecutive elements stacked along a new dimension 0, each component padded (with
    `padding_values`, default 0 or "") to `padded_shapes` (None or -1 in a dimension: the
    largest in the batch; padded_shapes None: every dimension so)."""
    return _PaddedBatch(self, batch_size, padded_shapes, padding_values, drop_remainder)


# -- functions that return a Dataset -------------------------------------------------------------------

class _DatasetFunction(_PrivateFunction):
    """A Python function from an element to a Dataset."""

    def __init__(self, fn: Callable[..., Any], in_structure: Any, what: str, outer: Optional[_g.Graph]):
        super().__init__(fn, in_structure, what, outer)
        out = self.traced
        if not isinstance(out, Dataset):
            raise TypeError(f"the function given to Dataset.{what} must return a Dataset, got {type(out).__name__}")
        self.inner = out
        self.reads = out._captures()
        with self.graph.as_default():  # a tensor of an enclosing graph (a nested map's capture) is fed in
            self.fetches = [t if t.graph is self.graph else self.captures(t) for t in self.reads]
        self.graph.finalize()

    def datasets(self, ctx: IterationContext) -> Callable[[Element], Iterator[Element]]:
        """element -> the elements of the Dataset the function gives for it."""
        call = self._bound(ctx, self.fetches)

        def run(el: Element) -> Iterator[Element]:
            values = call(*el)
            inner = IterationContext(ctx.resources, dict(zip(self.reads, values)))
            return self.inner._elements(inner)
        return run

    def describe(self) -> str:
        return f"{self.what}:{self.graph.fingerprint()[:16]}:{self.inner.fingerprint_repr()}"


class _FlatMap(Dataset):
    def __init__(self, ds: Dataset, fn: Callable[..., Any]):
        self._fn = _DatasetFunction(fn, ds._structure, "flat_map", ds._graph() or _g.get_default_graph())
        super().__init__(self._fn.inner._structure, inputs=[ds], captures=self._fn.captures.outer)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        run = self._fn.datasets(ctx)
        for el in self._inputs[0]._elements(ctx):
            yield from run(el)

    def _describe(self) -> str:
        return self._fn.describe()


def flat_map(self: Dataset, map_func: Callable[..., Any]) -> Dataset:
    """The elements of the Dataset map_func gives for each element, one Dataset after another."""
    return _FlatMap(self, map_func)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _Interleave(Dataset):
    def __init__(self, ds: Dataset, fn: Callable[..., Any], cycle_length: Any, block_length: Any):
        self._fn = _DatasetFunction(fn, ds._structure, "interleave", ds._graph() or _g.get_default_graph())
        self._cycle, c1 = _scalar_arg(-1 if cycle_length is None else cycle_length, "cycle_length")
        self._block, c2 = _scalar_arg(block_length, "block_length")
        super().__init__(self._fn.inner._structure, inputs=[ds], captures=self._fn.captures.outer + c1 + c2)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        cycle = ctx.int_value(self._cycle, "cycle_length")
        block = ctx.int_value(self._block, "block_length")
        if cycle == -1:  # AUTOTUNE (TF 1.15's default): the schedulable cores, as TF
            cycle = _cores()
        if cycle < 1 or block < 1:
            raise InvalidArgumentError(f"interleave: cycle_length ({cycle}) and block_length ({block}) must be "
                                       "greater than zero (cycle_length may be AUTOTUNE)")
        run = self._fn.datasets(ctx)
        source = self._inputs[0]._elements(ctx)
        slots: List[Optional[Iterator[Element]]] = [None] * cycle
        open_, at, taken, exhausted = 0, 0, 0, False
        # TF's order: take `block` elements from the slot at `at`, then the next slot; an empty
        # slot first opens the next input element's Dataset; a finished one is closed
        while not exhausted or open_ > 0:
            it = slots[at]
            if it is not None:
                el = next(it, None)
                if el is not None:
                    yield el
                    taken += 1
                    if taken == block:
                        at, taken = (at + 1) % cycle, 0
                    continue
                slots[at] = None
                open_ -= 1
                at, taken = (at + 1) % cycle, 0
            elif not exhausted:
                nxt = next(source, None)
                if nxt is None:
                    exhausted = True
                else:
                    slots[at] = iter(run(nxt))
                    open_ += 1
            else:
                at, taken = (at + 1) % cycle, 0

    def _describe(self) -> str:
        return f"interleave({_arg_repr(self._cycle)},{_arg_repr(self._block)},{self._fn.describe()})"


def interleave(self: Dataset, map_func: Callable[..., Any], cycle_length: Any = -1, block_length: Any = 1,
               num_parallel_calls: Any = None) -> Dataset:
    """The Datasets map_func gives for the elements, cycle_length of them open at a time,
    block_length elements from each in turn (TF's order; cycle_length AUTOTUNE (-1, the
    default): the schedulable cores).  num_parallel_calls is accepted: the order is the same."""
    return _Interleave(self, map_func, cycle_length, block_length)


# -- cache ---------------------------------------------------------------------------------------------

class _Cache(Dataset):
    def __init__(self, ds: Dataset, filename: str):
        self._filename = str(filename)
        super().__init__(ds._structure, inputs=[ds])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        store: Dict[str, Any] = ctx.state.setdefault(("cache", id(self)), {})
        done = store.get("elements")
        if done is not None:
            yield from done
            return
        seen: List[Element] = []
        for el in self._inputs[0]._elements(ctx):
            seen.append(el)
            yield el
        store["elements"] = seen  # complete: later passes replay it (a partial pass is not kept)

    def _describe(self) -> str:
        return f"cache({self._filename!r})"


def cache(self: Dataset, filename: str = "") -> Dataset:
    """The input's elements, read from the input once per iterator initialization and replayed
    from memory on later passes (after `repeat`), as TF's in-memory cache.  A `filename` is
    accepted but the cache stays in memory (nothing is written to disk)."""
    return _Cache(self, filename)


for _fn in (padded_batch, flat_map, interleave, cache):
    setattr(Dataset, _fn.__name__, _fn)


# -- files ---------------------------------------------------------------------------------------------

def TextLineDataset(filenames: Any, compression_type: Optional[str] = None,  # noqa: N802 - TF's name
                    buffer_size: Optional[int] = None) -> Dataset:
    """The lines of one or more text files, in order, as string scalars without their line
    ending ("\n" or "\r\n") (tf.data.TextLineDataset).  filenames: a path, a list of paths,
    or a string tensor of them (read when the iterator starts); compression_type: None/"",
    "GZIP" or "ZLIB"; buffer_size is accepted (files are read line by line)."""
    kind = (compression_type or "").upper()
    if kind not in ("", "GZIP", "ZLIB"):
        raise InvalidArgumentError(f"TextLineDataset: compression_type must be '', 'GZIP' or 'ZLIB', got "
                                   f"{compression_type!r}")

    def lines(names: Any) -> Iterator[bytes]:
        import gzip
        import io
        import zlib
        for name in np.atleast_1d(np.asarray(names)).ravel():
            path = name.decode() if isinstance(name, bytes) else str(name)
            try:
                if kind == "GZIP":
                    f: Any = gzip.open(path, "rb")
                elif kind == "ZLIB":
                    with open(path, "rb") as raw:
                        f = io.BytesIO(zlib.decompress(raw.read()))
                else:
                    f = open(path, "rb")
            except OSError as e:
                raise NotFoundError(f"TextLineDataset: cannot read {path}: {e.strerror or e}") from None
            with f:
                for line in f:
                    # collflow's strings are Python str (see docs/tf1_compat.md); undecodable
                    # bytes survive as surrogates
                    yield line.rstrip(b"\n").rstrip(b"\r").decode("utf-8", "surrogateescape")

    src = filenames if isinstance(filenames, _g.Tensor) else np.asarray(
        [filenames] if isinstance(filenames, (str, bytes)) else list(filenames), dtype=object).astype(bytes)
    return _Generator(lines, _dt.string, [], [src])
