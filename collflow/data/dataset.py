"""tf.data.Dataset (TensorFlow 1.x): input pipelines described in Python, run on the host.

    ds = (cf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000, seed=1)
          .map(lambda x, y: (x / 255.0, y)).batch(32).repeat(2))
    xb, yb = ds.make_one_shot_iterator().get_next()     # graph tensors
    ...  sess.run(train_op) until cf.errors.OutOfRangeError

A Dataset is a description: a source (arrays, tensors, a range, a generator) and a chain
of transformations, with the structure, dtypes and static shapes of its elements
(`output_types`, `output_shapes`).  Nothing runs until an iterator's op runs in a Session
(data/iterator_ops.py): then the pipeline runs as Python generators over NumPy arrays on
the host, element by element, in the order TensorFlow defines.

Elements are nests (tuples, dicts) of arrays; a function given to `map` or `filter` gets
a tuple element's components as separate arguments, anything else as one argument.  The
function is traced once into its own small graph (placeholders for the element), and a
private Session of the iterator's Session runs it per element, so it may use any collflow
op, including random ones (seeded from the outer graph's seed), and tensors of the outer
graph (captured: read when the iterator is initialized).  Datasets built from graph tensors (a placeholder fed when
`iterator.initializer` runs, a constant) read their values when the iterator is
initialized.  Scalars in `batch`, `repeat`, `take`, `skip`, `shuffle` may be tensors too.
`num_parallel_calls` and `prefetch` are accepted; elements are produced on demand, in order.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, OpError
from ..graph import graph as _g
from ..graph import nest
from ..graph.ops.constant_op import _to_array  # TensorFlow's rules for Python values
from ..graph.ops.random_ops import get_seed
from ..graph.shape import TensorShape, as_shape
from . import sparse_elements as _sp

__all__ = ["Dataset"]

from .dataset_core import (_IDS, Element, IterationContext, TensorSpec, _TracedFunction, _digest, _frozen,
                           _most_specific_compatible, _normalize_structure)


# -- Dataset ---------------------------------------------------------------------------------------------

class Dataset:
    """A sequence of elements of one structure (TensorFlow 1.x's tf.data.Dataset)."""

    def __init__(self, structure: Any, inputs: Sequence["Dataset"] = (), captures: Sequence[_g.Tensor] = ()):
        self._structure = structure
        self._inputs = tuple(inputs)
        self._own_captures = list(captures)
        self._id = next(_IDS)

    # -- structure ----------------------------------------------------------------------------------
    @property
    def element_spec(self) -> Any:
        """The nest of TensorSpecs of an element."""
        return self._structure

    @property
    def output_types(self) -> Any:
        return nest.pack_sequence_as(self._structure, [s.dtype for s in nest.flatten(self._structure)])

    @property
    def output_shapes(self) -> Any:
        return nest.pack_sequence_as(self._structure, [s.shape for s in nest.flatten(self._structure)])

    @property
    def output_classes(self) -> Any:
        return nest.pack_sequence_as(self._structure, [_sp.SparseTensor if _sp.is_sparse(s) else _g.Tensor
                                                       for s in nest.flatten(self._structure)])

    def _flat_specs(self) -> List[TensorSpec]:
        return nest.flatten(self._structure)

    def _captures(self) -> List[_g.Tensor]:
        """The graph tensors this pipeline reads (its own and its inputs'), in a fixed order."""
        out: List[_g.Tensor] = []
        for d in self._inputs:
            out.extend(t for t in d._captures() if t not in out)
        out.extend(t for t in self._own_captures if t not in out)
        return out

    def _graph(self) -> Optional[_g.Graph]:
        graphs = {t.graph for t in self._captures()}
        if len(graphs) > 1:
            raise InvalidArgumentError("the dataset uses tensors of more than one graph")
        return graphs.pop() if graphs else None

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        raise NotImplementedError

    def _describe(self) -> str:
        return type(self).__name__

    def fingerprint_repr(self) -> str:
        """A description of the whole pipeline (for the graph's fingerprint)."""
        return f"{self._describe()}<{','.join(d.fingerprint_repr() for d in self._inputs)}>"

    def __iter__(self) -> Any:
        raise TypeError("a Dataset is not iterable in graph mode: use dataset.make_one_shot_iterator().get_next() "
                        "(or make_initializable_iterator) and run its tensors in a Session")

    def __repr__(self) -> str:
        return f"<{type(self).__name__.lstrip('_')}Dataset shapes: {self.output_shapes}, types: {self.output_types}>"

    # -- sources ------------------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any) -> "Dataset":
        """The slices of `tensors` (arrays, tensors, or tuples/dicts of them) along dimension 0."""
        return _TensorSlices(tensors)

    @staticmethod
    def from_tensors(tensors: Any) -> "Dataset":
        """One element: `tensors` itself."""
        return _Tensors(tensors)

    @staticmethod
    def range(*args: int) -> "Dataset":
        """int64 scalars like Python's range(stop) / range(start, stop[, step])."""
        return _Range(*args)

    @staticmethod
    def from_generator(generator: Callable[..., Any], output_types: Any, output_shapes: Any = None,
                       args: Optional[Sequence[Any]] = None) -> "Dataset":
        """The elements yielded by `generator(*args)` (called anew for each iteration),
        converted to `output_types` and checked against `output_shapes`."""
        return _Generator(generator, output_types, output_shapes, args)

    @staticmethod
    def zip(datasets: Any) -> "Dataset":
        """Elements combining one element of each dataset (a tuple or dict of datasets), until one ends."""
        return _Zip(datasets)

    # -- transformations ----------------------------------------------------------------------------------
    def map(self, map_func: Callable[..., Any], num_parallel_calls: Any = None) -> "Dataset":
        """`map_func` applied to every element (num_parallel_calls accepted; elements stay in order)."""
        return _Map(self, map_func)

    def filter(self, predicate: Callable[..., Any]) -> "Dataset":
        """The elements for which `predicate` (a scalar bool tensor of the element) is true."""
        return _Filter(self, predicate)

    def batch(self, batch_size: Any, drop_remainder: bool = False) -> "Dataset":
        """Consecutive elements stacked along a new dimension 0 (the last batch may be smaller,
        unless drop_remainder; the static batch dimension is known only then)."""
        return _Batch(self, batch_size, drop_remainder)

    def shuffle(self, buffer_size: Any, seed: Optional[int] = None,
                reshuffle_each_iteration: Optional[bool] = None) -> "Dataset":
        """Elements drawn at random from a buffer of `buffer_size` (TensorFlow's algorithm).

        seed: with the graph seed, fixes the order (TensorFlow's seed rules: an iterator
        initialized again replays it); without either, every pass differs.
        reshuffle_each_iteration (default True): each repeat epoch gets a new order; False
        repeats the first."""
        return _Shuffle(self, buffer_size, seed, True if reshuffle_each_iteration is None else reshuffle_each_iteration)

    def repeat(self, count: Any = None) -> "Dataset":
        """The dataset `count` times (None or -1: forever)."""
        return _Repeat(self, count)

    def take(self, count: Any) -> "Dataset":
        """The first `count` elements (-1: all)."""
        return _Take(self, count)

    def skip(self, count: Any) -> "Dataset":
        """All but the first `count` elements (-1: none)."""
        return _Skip(self, count)

    def shard(self, num_shards: int, index: int) -> "Dataset":
        """Every num_shards-th element starting at `index` (one rank's share)."""
        return _Shard(self, num_shards, index)

    def concatenate(self, dataset: "Dataset") -> "Dataset":
        """This dataset's elements, then those of `dataset` (same structure and types)."""
        return _Concatenate(self, dataset)

    def prefetch(self, buffer_size: Any) -> "Dataset":
        """Accepted for compatibility: elements are produced when get_next runs."""
        return _Passthrough(self, "prefetch")

    def apply(self, transformation_func: Callable[["Dataset"], "Dataset"]) -> "Dataset":
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError("`transformation_func` must return a Dataset.")
        return out

    # -- iterators ----------------------------------------------------------------------------------------
    def make_one_shot_iterator(self) -> Any:
        """An iterator that initializes itself at its first get_next in each Session."""
        from .iterator_ops import Iterator
        return Iterator._one_shot(self)

    def make_initializable_iterator(self, shared_name: Optional[str] = None) -> Any:
        """An iterator that starts (again) from the beginning whenever `iterator.initializer` runs."""
        from .iterator_ops import Iterator
        return Iterator._initializable(self, shared_name)


def _spec_of_array(a: np.ndarray, drop_first: bool) -> TensorSpec:
    return TensorSpec(a.shape[1:] if drop_first else a.shape, _dt.as_dtype(a.dtype))


def _lists_as_values(s: Any) -> Any:
    """A source's structure: tuples and dicts nest, a list is one value (as in TensorFlow)."""
    if isinstance(s, dict):
        return type(s)((k, _lists_as_values(v)) for k, v in s.items())
    if isinstance(s, tuple):
        parts = [_lists_as_values(x) for x in s]
        return type(s)(*parts) if hasattr(s, "_fields") else tuple(parts)
    if isinstance(s, list):
        return _to_array(s, None)
    return s


def _source_leaves(tensors: Any, slices: bool) -> Tuple[Any, List[Any], List[_g.Tensor]]:
    """(structure of TensorSpecs, leaves: frozen arrays or Tensors, captured Tensors)."""
    tensors = _lists_as_values(tensors)
    leaves, specs, caps = [], [], []
    for v in nest.flatten(tensors):
        conv = getattr(v, "_as_graph_element", None)  # a Variable reads as its value
        if conv is not None:
            v = conv()
        if isinstance(v, _g.Tensor):
            shp = v.shape
            if slices:
                if shp.rank == 0:
                    raise InvalidArgumentError(f"from_tensor_slices needs tensors of rank >= 1; {v.name} is a scalar")
                shp = TensorShape(None) if shp.rank is None else TensorShape(shp.dims[1:])
            leaves.append(v)
            specs.append(TensorSpec(shp, v.dtype))
            caps.append(v)
        else:
            a = _frozen(_to_array(v, None))
            if slices and a.ndim == 0:
                raise InvalidArgumentError(f"from_tensor_slices needs arrays of rank >= 1, got the scalar {v!r}")
            leaves.append(a)
            specs.append(_spec_of_array(a, slices))
    if not leaves:
        raise InvalidArgumentError("a dataset needs at least one component")
    if slices:
        sizes = {a.shape[0] for a in leaves if isinstance(a, np.ndarray)}
        sizes |= {t.shape.dims[0] for t in leaves if isinstance(t, _g.Tensor) and t.shape.rank
                  and t.shape.dims[0] is not None}
        if len(sizes) > 1:
            raise InvalidArgumentError(f"from_tensor_slices: the components have different sizes in dimension 0: "
                                       f"{sorted(sizes)}")
    return nest.pack_sequence_as(tensors, specs), leaves, caps


class _TensorSlices(Dataset):
    def __init__(self, tensors: Any):
        structure, self._leaves, caps = _source_leaves(tensors, slices=True)
        super().__init__(structure, captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        arrays = [ctx.value(v) for v in self._leaves]
        n = {a.shape[0] for a in arrays}
        if len(n) > 1:
            raise InvalidArgumentError(f"from_tensor_slices: the components have different sizes in dimension 0: "
                                       f"{sorted(n)}")
        for i in range(n.pop()):
            yield tuple(a[i, ...] for a in arrays)

    def _describe(self) -> str:
        return "slices(" + ",".join(v.name if isinstance(v, _g.Tensor) else _digest(v) for v in self._leaves) + ")"


class _Tensors(Dataset):
    def __init__(self, tensors: Any):
        structure, self._leaves, caps = _source_leaves(tensors, slices=False)
        super().__init__(structure, captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        yield tuple(ctx.value(v) for v in self._leaves)

    def _describe(self) -> str:
        return "tensors(" + ",".join(v.name if isinstance(v, _g.Tensor) else _digest(v) for v in self._leaves) + ")"


class _Range(Dataset):
    def __init__(self, *args: Any):
        if not 1 <= len(args) <= 3:
            raise InvalidArgumentError(f"Dataset.range takes 1 to 3 arguments (stop / start, stop[, step]), "
                                       f"got {len(args)}")
        got = [_scalar_arg(a, "Dataset.range's argument") for a in args]
        self._args = [v for v, _ in got]
        if all(isinstance(v, int) for v in self._args):
            range(*self._args)  # rejects step 0 now
        super().__init__(TensorSpec((), _dt.int64), captures=[t for _, caps in got for t in caps])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        vals = [ctx.int_value(v, "Dataset.range's argument") for v in self._args]
        if len(vals) == 3 and vals[2] == 0:
            raise InvalidArgumentError("Dataset.range: step must not be 0")
        for i in range(*vals):
            yield (np.array(i, dtype=np.int64),)

    def _describe(self) -> str:
        return f"range({','.join(_arg_repr(v) for v in self._args)})"


class _Generator(Dataset):
    def __init__(self, generator: Callable[..., Any], output_types: Any, output_shapes: Any, args: Any):
        if not callable(generator):
            raise TypeError("from_generator needs a callable returning an iterable (e.g. a generator function)")
        types = _normalize_structure(output_types)
        flat_types = [_dt.as_dtype(t) for t in nest.flatten(types)]
        if output_shapes is None:
            flat_shapes = [TensorShape(None)] * len(flat_types)
        else:
            shapes = _normalize_structure(output_shapes)
            # a shape is itself a tuple: pair it with the types' structure leaf by leaf
            flat_shapes = ([as_shape(output_shapes)] if not isinstance(types, (tuple, dict))
                           else [as_shape(s) for s in nest.flatten_up_to(types, shapes)])
        if len(flat_shapes) != len(flat_types):
            raise InvalidArgumentError(f"from_generator: output_shapes has {len(flat_shapes)} components, "
                                       f"output_types {len(flat_types)}")
        self._fn = generator
        self._args = [] if args is None else [a if isinstance(a, _g.Tensor) else _frozen(_to_array(a, None))
                                              for a in args]
        structure = nest.pack_sequence_as(types, [TensorSpec(s, t) for s, t in zip(flat_shapes, flat_types)])
        super().__init__(structure, captures=[a for a in self._args if isinstance(a, _g.Tensor)])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        specs = self._flat_specs()
        for item in self._fn(*[_dt.user_string_value(ctx.value(a)) for a in self._args]):
            item = _normalize_structure(item)
            try:
                flat = nest.flatten_up_to(self._structure, item)
            except (ValueError, TypeError):
                raise InvalidArgumentError(f"from_generator: an element {item!r} does not match the structure "
                                           f"{self.output_types}") from None
            out = []
            for k, (v, s) in enumerate(zip(flat, specs)):
                # yielded strings may be str or bytes; held as str
                a = _dt.string_array(v) if s.dtype == _dt.string else np.asarray(v, dtype=s.dtype.np)
                if not s.shape.matches_value(a.shape):
                    raise InvalidArgumentError(f"from_generator: component {k} of an element has shape {a.shape}, "
                                               f"expected {s.shape}")
                out.append(a)
            yield tuple(out)

    def _describe(self) -> str:
        return f"generator({getattr(self._fn, '__qualname__', 'fn')})"


class _Zip(Dataset):
    def __init__(self, datasets: Any):
        datasets = _normalize_structure(datasets)
        flat = nest.flatten(datasets)
        if not flat or not all(isinstance(d, Dataset) for d in flat):
            raise TypeError("Dataset.zip takes a tuple or dict of Datasets")
        self._nest = datasets
        super().__init__(nest.pack_sequence_as(datasets, [d._structure for d in flat]), inputs=flat)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        its = [d._elements(ctx) for d in self._inputs]
        for parts in zip(*its):
            yield tuple(c for p in parts for c in p)

    def _describe(self) -> str:
        return "zip"


class _Map(Dataset):
    def __init__(self, ds: Dataset, fn: Callable[..., Any]):
        self._fn = _TracedFunction(fn, ds._structure, "map", ds._graph() or _g.get_default_graph())
        super().__init__(self._fn.out_structure, inputs=[ds], captures=self._fn.captures.outer)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        call = self._fn.caller(ctx)
        specs = self._flat_specs()
        for el in self._inputs[0]._elements(ctx):
            try:
                out = call(*el)
            except OpError:
                if ctx.ignore_errors:
                    continue
                raise
            yield tuple(v if _sp.is_sparse(s) else np.asarray(v, dtype=s.dtype.np) for v, s in zip(out, specs))

    def _describe(self) -> str:
        return self._fn.describe()


class _Filter(Dataset):
    def __init__(self, ds: Dataset, predicate: Callable[..., Any]):
        self._fn = _TracedFunction(predicate, ds._structure, "filter", ds._graph() or _g.get_default_graph())
        out = self._fn.out_structure
        if not isinstance(out, TensorSpec) or out.dtype != _dt.bool_ or out.shape.rank not in (None, 0):
            raise InvalidArgumentError(f"`predicate` return type must be convertible to a scalar boolean tensor. "
                                       f"Was {out}.")
        super().__init__(ds._structure, inputs=[ds], captures=self._fn.captures.outer)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        call = self._fn.caller(ctx)
        for el in self._inputs[0]._elements(ctx):
            try:
                keep = bool(np.asarray(call(*el)[0]))
            except OpError:
                if ctx.ignore_errors:
                    continue
                raise
            if keep:
                yield el

    def _describe(self) -> str:
        return self._fn.describe()


def _scalar_arg(v: Any, what: str) -> Tuple[Any, List[_g.Tensor]]:
    """A Python int, or a scalar integer tensor read when the pipeline starts."""
    if isinstance(v, _g.Tensor):
        if not v.dtype.is_integer or v.shape.rank not in (None, 0):
            raise InvalidArgumentError(f"{what} must be an integer scalar, got {v.name} ({v.dtype.name} {v.shape})")
        return v, [v]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise InvalidArgumentError(f"{what} must be an integer (or an integer scalar tensor), got {v!r}")
    return int(v), []


def _arg_repr(v: Any) -> str:
    return v.name if isinstance(v, _g.Tensor) else str(v)


class _Batch(Dataset):
    def __init__(self, ds: Dataset, batch_size: Any, drop_remainder: bool):
        self._size, caps = _scalar_arg(batch_size, "batch_size")
        if isinstance(self._size, int) and self._size < 1:
            raise InvalidArgumentError(f"batch_size must be greater than zero, got {self._size}")
        self._drop = bool(drop_remainder)
        lead = self._size if self._drop and isinstance(self._size, int) else None
        specs = [type(s)(TensorShape(None) if s.shape.rank is None else TensorShape([lead] + list(s.shape.dims)),
                         s.dtype) for s in ds._flat_specs()]
        super().__init__(nest.pack_sequence_as(ds._structure, specs), inputs=[ds], captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        n = ctx.int_value(self._size, "batch_size")
        if n < 1:
            raise InvalidArgumentError(f"batch_size must be greater than zero, got {n}")
        buf: List[Element] = []
        for el in self._inputs[0]._elements(ctx):
            buf.append(el)
            if len(buf) == n:
                yield from self._combined(ctx, buf)
                buf = []
        if buf and not self._drop:
            yield from self._combined(ctx, buf)

    def _combined(self, ctx: IterationContext, buf: List[Element]) -> Iterator[Element]:
        try:
            out = self._combine(buf)
        except OpError:
            if ctx.ignore_errors:
                return  # the batch is left out
            raise
        yield out

    def _combine(self, buf: List[Element]) -> Element:
        """One batch of the buffered elements (padded_batch pads instead)."""
        return _stack(buf)

    def _describe(self) -> str:
        return f"batch({_arg_repr(self._size)},{self._drop})"


def _stack(elements: List[Element]) -> Element:
    out = []
    for k in range(len(elements[0])):
        parts = [e[k] for e in elements]
        if isinstance(parts[0], _sp.SparseTensorValue):
            out.append(_sp.batch_sparse(parts, k))
            continue
        first = np.shape(parts[0])
        for j, p in enumerate(parts):
            if np.shape(p) != first:
                raise InvalidArgumentError(
                    f"Cannot batch tensors with different shapes in component {k}. First element had shape "
                    f"{list(first)} and element {j} had shape {list(np.shape(p))}.")
        out.append(np.stack(parts))
    return tuple(out)


class _Shuffle(Dataset):
    def __init__(self, ds: Dataset, buffer_size: Any, seed: Optional[int], reshuffle: bool):
        self._buffer, caps = _scalar_arg(buffer_size, "buffer_size")
        if isinstance(self._buffer, int) and self._buffer < 1:
            raise InvalidArgumentError(f"buffer_size must be greater than zero, got {self._buffer}")
        self._seeds = get_seed(seed, ds._graph() or _g.get_default_graph())
        self._reshuffle = bool(reshuffle)
        super().__init__(ds._structure, inputs=[ds], captures=caps)

    def _rng(self, ctx: IterationContext) -> np.random.Generator:
        s1, s2 = self._seeds
        if s1 is None:
            if self._reshuffle:
                return ctx.unseeded_rng()  # neither graph nor op seed: a new order every time
            # reshuffle_each_iteration=False: one random order per run of the pipeline, kept
            # for every repeat epoch (as TF1)
            fixed = ctx.state.setdefault(("shuffle_seed", self._id), int(ctx.unseeded_rng().integers(1 << 62)))
            return np.random.default_rng(fixed)
        # which pass over this shuffle in this run of the pipeline: each repeat epoch differs,
        # while a new initialization starts the same sequence again (as TensorFlow's seeded shuffle)
        counter = ctx.state.setdefault(("shuffle", self._id), [0])
        epoch = counter[0]
        if self._reshuffle:
            counter[0] += 1
        return np.random.default_rng([s1 & 0xFFFFFFFFFFFF, s2 & 0xFFFFFFFFFFFF, epoch])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        size = ctx.int_value(self._buffer, "buffer_size")
        if size < 1:
            raise InvalidArgumentError(f"buffer_size must be greater than zero, got {size}")
        rng = self._rng(ctx)
        it = self._inputs[0]._elements(ctx)
        buf = list(itertools.islice(it, size))
        while buf:
            i = int(rng.integers(len(buf)))
            out = buf[i]
            nxt = next(it, None)
            if nxt is not None:
                buf[i] = nxt
            else:
                buf[i] = buf[-1]
                buf.pop()
            yield out

    def _describe(self) -> str:
        return f"shuffle({_arg_repr(self._buffer)},{self._seeds},{self._reshuffle})"


class _Repeat(Dataset):
    def __init__(self, ds: Dataset, count: Any):
        self._count, caps = _scalar_arg(-1 if count is None else count, "count")
        super().__init__(ds._structure, inputs=[ds], captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        n = ctx.int_value(self._count, "count")
        epoch = 0
        while n < 0 or epoch < n:
            produced = False
            for el in self._inputs[0]._elements(ctx):
                produced = True
                yield el
            if not produced:
                return  # an empty input repeated forever is still empty (as TensorFlow)
            epoch += 1

    def _describe(self) -> str:
        return f"repeat({_arg_repr(self._count)})"


class _Take(Dataset):
    def __init__(self, ds: Dataset, count: Any):
        self._count, caps = _scalar_arg(count, "count")
        super().__init__(ds._structure, inputs=[ds], captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        n = ctx.int_value(self._count, "count")
        it = self._inputs[0]._elements(ctx)
        yield from (it if n < 0 else itertools.islice(it, n))

    def _describe(self) -> str:
        return f"take({_arg_repr(self._count)})"


class _Skip(Dataset):
    def __init__(self, ds: Dataset, count: Any):
        self._count, caps = _scalar_arg(count, "count")
        super().__init__(ds._structure, inputs=[ds], captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        n = ctx.int_value(self._count, "count")
        it = self._inputs[0]._elements(ctx)
        if n < 0:
            for _ in it:
                pass
            return
        yield from itertools.islice(it, n, None)

    def _describe(self) -> str:
        return f"skip({_arg_repr(self._count)})"


class _Shard(Dataset):
    def __init__(self, ds: Dataset, num_shards: int, index: int):
        if int(num_shards) < 1:
            raise InvalidArgumentError(f"num_shards must be >= 1, got {num_shards}")
        if not 0 <= int(index) < int(num_shards):
            raise InvalidArgumentError(f"index must be in [0, num_shards), got index={index}, num_shards={num_shards}")
        self._n, self._i = int(num_shards), int(index)
        super().__init__(ds._structure, inputs=[ds])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        yield from itertools.islice(self._inputs[0]._elements(ctx), self._i, None, self._n)

    def _describe(self) -> str:
        return f"shard({self._n},{self._i})"


class _Concatenate(Dataset):
    def __init__(self, a: Dataset, b: Dataset):
        if not isinstance(b, Dataset):
            raise TypeError(f"concatenate takes a Dataset, got {type(b).__name__}")
        try:
            nest.assert_same_structure(a._structure, b._structure)
        except ValueError:
            raise InvalidArgumentError(f"concatenate: the datasets have different structures: {a.output_types} vs "
                                       f"{b.output_types}") from None
        fa, fb = a._flat_specs(), b._flat_specs()
        if [s.dtype for s in fa] != [s.dtype for s in fb]:
            raise InvalidArgumentError(f"concatenate: the datasets have different types: {a.output_types} vs "
                                       f"{b.output_types}")
        specs = [TensorSpec(_most_specific_compatible(x.shape, y.shape), x.dtype) for x, y in zip(fa, fb)]
        super().__init__(nest.pack_sequence_as(a._structure, specs), inputs=[a, b])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        yield from self._inputs[0]._elements(ctx)
        yield from self._inputs[1]._elements(ctx)

    def _describe(self) -> str:
        return "concatenate"


class _Passthrough(Dataset):
    def __init__(self, ds: Dataset, what: str):
        self._what = what
        super().__init__(ds._structure, inputs=[ds])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        return self._inputs[0]._elements(ctx)

    def _describe(self) -> str:
        return self._what
