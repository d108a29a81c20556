"""tf.data's TF 1.13-1.15 extras: Dataset.list_files, tf.data.Options with
Dataset.with_options / options(), Dataset.unbatch, and the transformation functions of
tf.data.experimental used as `dataset.apply(tf.data.experimental.X(...))`:
shuffle_and_repeat, map_and_batch, parallel_interleave, unbatch, ignore_errors,
enumerate_dataset, and the sources choose_from_datasets and sample_from_datasets.
(scan, group_by_window and bucket_by_sequence_length are in dataset_grouping.py.)

Orders are TensorFlow's for the deterministic ones; the random ones (list_files' shuffle,
shuffle_and_repeat, sample_from_datasets) follow TF's seed rules with collflow's own random
streams.
"""
from __future__ import annotations

import copy
import glob
from typing import Any, Callable, Dict, Iterator, List, Optional

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, OpError
from ..graph import graph as _g
from ..graph import nest
from ..graph.ops.random_ops import get_seed
from ..graph.registry import not_differentiable, register_op
from ..graph.shape import TensorShape
from ..kernels.registry import KernelContext, register_kernel
from ..runtime.placement import register_host_only
from . import sparse_elements as _sp
from .dataset import Dataset, _Batch, _Map, _Repeat, _scalar_arg, _Shuffle
from .dataset_core import Element, IterationContext, TensorSpec, _most_specific_compatible
from .dataset_more import _Interleave

__all__ = ["Options", "shuffle_and_repeat", "map_and_batch", "parallel_interleave", "unbatch", "ignore_errors",
           "enumerate_dataset", "choose_from_datasets", "sample_from_datasets", "get_single_element"]


# -- list_files ----------------------------------------------------------------------------------------

class _MatchingFiles(Dataset):
    """The sorted names of the files matching one or more glob patterns (read when the
    pipeline starts); no match at all is TF's InvalidArgumentError."""

    def __init__(self, pattern: Any):
        if isinstance(pattern, _g.Tensor):
            if pattern.dtype != _dt.string or pattern.shape.rank not in (None, 0, 1):
                raise InvalidArgumentError(f"list_files: file_pattern must be a string scalar or vector, got "
                                           f"{pattern.dtype.name} {pattern.shape}")
            self._pattern: Any = pattern
        else:
            pats = [pattern] if isinstance(pattern, (str, bytes)) else list(pattern)
            self._pattern = [p.decode() if isinstance(p, bytes) else str(p) for p in pats]
        super().__init__(TensorSpec((), _dt.string), captures=[pattern] if isinstance(pattern, _g.Tensor) else [])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        pats = [p.decode() if isinstance(p, bytes) else str(p)
                for p in np.atleast_1d(np.asarray(ctx.value(self._pattern), dtype=object)).ravel()]
        names = set()
        for p in pats:
            names.update(glob.glob(p))
        if not names:
            raise InvalidArgumentError(f"assertion failed: [No files matched pattern: {', '.join(pats)}]")
        for n in sorted(names):
            yield (np.array(n, dtype=object),)

    def _describe(self) -> str:
        return f"list_files({self._pattern.name if isinstance(self._pattern, _g.Tensor) else self._pattern!r})"


def list_files(file_pattern: Any, shuffle: Optional[bool] = None, seed: Optional[int] = None,
               name: Optional[str] = None) -> Dataset:
    """The files matching `file_pattern` (a glob, a list of globs, or a string tensor of
    them), sorted, then shuffled (shuffle None: True, as TF) with TF's seed rules; a
    pattern matching nothing is an InvalidArgumentError ("No files matched pattern") at the
    first get_next (TF: when the iterator is initialized).  As TF, each repeat epoch gets a
    new order."""
    ds: Dataset = _MatchingFiles(file_pattern)
    if shuffle is None or shuffle:
        ds = _Shuffle(ds, 1 << 62, seed, True)  # a buffer over all the files: a uniform permutation
    return ds


Dataset.list_files = staticmethod(list_files)  # type: ignore[attr-defined]


# -- Options -------------------------------------------------------------------------------------------

class _OptionsBase:
    """Options objects: known attributes only (TF: setting another is an AttributeError),
    unset ones None."""
    _FIELDS: Dict[str, Callable[[], Any]] = {}

    def __init__(self) -> None:
        for k, make in self._FIELDS.items():
            object.__setattr__(self, k, make())

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._FIELDS:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, k) == getattr(other, k) for k in self._FIELDS)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(type(self))

    def _merged(self, other: "_OptionsBase") -> "_OptionsBase":
        out = copy.deepcopy(self)
        for k in self._FIELDS:
            mine, theirs = getattr(self, k), getattr(other, k)
            if isinstance(mine, _OptionsBase):
                object.__setattr__(out, k, mine._merged(theirs))
            elif theirs is not None:
                object.__setattr__(out, k, theirs)  # the later one wins (TF 2's rule)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in self._FIELDS)})"


def _plain(*names: str) -> Dict[str, Callable[[], Any]]:
    return {n: (lambda: None) for n in names}


class MapVectorizationOptions(_OptionsBase):
    """TF 1.15's options of the map vectorization rewrite (recorded; collflow does not rewrite)."""
    _FIELDS = _plain("enabled", "use_choose_fastest")


class OptimizationOptions(_OptionsBase):
    _FIELDS = dict(_plain("apply_default_optimizations", "autotune", "autotune_buffers", "autotune_cpu_budget",
                          "autotune_ram_budget", "filter_fusion", "filter_with_random_uniform_fusion",
                          "hoist_random_uniform", "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion",
                          "map_parallelization", "noop_elimination", "parallel_batch",
                          "shuffle_and_repeat_fusion", "inject_prefetch"),
                   map_vectorization=MapVectorizationOptions)  # TF 1.15's: an options object of its own


class ThreadingOptions(_OptionsBase):
    _FIELDS = _plain("max_intra_op_parallelism", "private_threadpool_size")


class DistributeOptions(_OptionsBase):
    _FIELDS = _plain("auto_shard", "auto_shard_policy", "num_devices")


class StatsOptions(_OptionsBase):
    _FIELDS = _plain("aggregator", "counter_prefix", "latency_all_edges", "prefix")


class Options(_OptionsBase):
    """tf.data.Options: kept with the dataset (Dataset.with_options) and returned by
    Dataset.options().  collflow produces elements in order, on demand, whatever they say."""
    _FIELDS = dict(_plain("experimental_deterministic", "experimental_slack", "experimental_external_state_policy",
                          "deterministic", "experimental_warm_start", "experimental_symbolic_checkpoint"),
                   experimental_optimization=OptimizationOptions, experimental_threading=ThreadingOptions,
                   experimental_distribute=DistributeOptions, experimental_stats=StatsOptions)

    def merge(self, options: "Options") -> "Options":
        if not isinstance(options, Options):
            raise TypeError(f"Options.merge takes Options, got {type(options).__name__}")
        return self._merged(options)  # type: ignore[return-value]


class _WithOptions(Dataset):
    def __init__(self, ds: Dataset, options: Options):
        if not isinstance(options, Options):
            raise TypeError(f"with_options takes a tf.data.Options, got {type(options).__name__}")
        self._options = copy.deepcopy(options)
        super().__init__(ds._structure, inputs=[ds])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        return self._inputs[0]._elements(ctx)

    def _describe(self) -> str:
        return "with_options"


def _options(self: Dataset) -> Options:
    """The options of this dataset and its inputs, merged (inputs first, later ones win)."""
    out = Options()
    for d in self._inputs:
        out = out.merge(_options(d))
    own = getattr(self, "_options", None)
    return out.merge(own) if isinstance(own, Options) else out


def with_options(self: Dataset, options: Options, name: Optional[str] = None) -> Dataset:
    """This dataset with `options` (merged with those it has)."""
    return _WithOptions(self, options)


Dataset.options = _options  # type: ignore[attr-defined]
Dataset.with_options = with_options  # type: ignore[attr-defined]


# -- unbatch -------------------------------------------------------------------------------------------

class _Unbatch(Dataset):
    def __init__(self, ds: Dataset):
        specs = ds._flat_specs()
        if any(_sp.is_sparse(s) for s in specs):
            raise TypeError("unbatch: collflow does not unbatch SparseTensor components")
        if any(s.shape.rank == 0 for s in specs):
            raise ValueError("Cannot unbatch an input with scalar components.")
        known = {s.shape.dims[0] for s in specs if s.shape.rank and s.shape.dims[0] is not None}
        if len(known) > 1:
            raise ValueError("Cannot unbatch an input whose components have different batch sizes.")
        out = [TensorSpec(TensorShape(None) if s.shape.rank is None else TensorShape(s.shape.dims[1:]), s.dtype)
               for s in specs]
        super().__init__(nest.pack_sequence_as(ds._structure, out), inputs=[ds])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        for el in self._inputs[0]._elements(ctx):
            arrays = [np.asarray(v) for v in el]
            if any(a.ndim == 0 for a in arrays):
                raise InvalidArgumentError("Input element must have a non-scalar value in each component.")
            n = arrays[0].shape[0]
            if any(a.shape[0] != n for a in arrays):
                raise InvalidArgumentError(f"Input element components must have the same leading dimension "
                                           f"size: {[a.shape[0] for a in arrays]}")
            for i in range(n):
                yield tuple(a[i] for a in arrays)

    def _describe(self) -> str:
        return "unbatch"


def unbatch() -> Callable[[Dataset], Dataset]:
    """Splits each element's components along dimension 0 into that many elements."""
    return _Unbatch


Dataset.unbatch = lambda self, name=None: _Unbatch(self)  # type: ignore[attr-defined]


# -- transformation functions ----------------------------------------------------------------------------

def shuffle_and_repeat(buffer_size: Any, count: Any = None, seed: Optional[int] = None) -> Callable[[Dataset], Dataset]:
    """shuffle(buffer_size, seed) then repeat(count): each epoch a new order (TF's fused op)."""
    return lambda ds: _Repeat(_Shuffle(ds, buffer_size, seed, True), count)


def map_and_batch(map_func: Callable[..., Any], batch_size: Any, num_parallel_batches: Any = None,
                  drop_remainder: bool = False, num_parallel_calls: Any = None) -> Callable[[Dataset], Dataset]:
    """map(map_func) then batch(batch_size, drop_remainder) (the parallelism is accepted)."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("The `num_parallel_batches` and `num_parallel_calls` arguments are mutually exclusive.")
    return lambda ds: _Batch(_Map(ds, map_func), batch_size, drop_remainder)


def parallel_interleave(map_func: Callable[..., Any], cycle_length: Any, block_length: Any = 1, sloppy: bool = False,
                        buffer_output_elements: Any = None,
                        prefetch_input_elements: Any = None) -> Callable[[Dataset], Dataset]:
    """interleave(map_func, cycle_length, block_length) in interleave's order (sloppy=True
    allows any order; collflow keeps this one); the buffers are accepted."""
    return lambda ds: _Interleave(ds, map_func, cycle_length, block_length)


class _IgnoreErrors(Dataset):
    def __init__(self, ds: Dataset):
        super().__init__(ds._structure, inputs=[ds])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        inner = copy.copy(ctx)  # shares the run's values and state
        inner.ignore_errors = True  # map, filter and batch below skip an element that fails
        it = self._inputs[0]._elements(inner)
        while True:
            try:
                el = next(it)
            except StopIteration:
                return
            except OpError:
                return  # a source that failed cannot go on: its elements end here
            yield el

    def _describe(self) -> str:
        return "ignore_errors"


def ignore_errors(log_warning: bool = False) -> Callable[[Dataset], Dataset]:
    """The input's elements, leaving out those whose map/filter function or batch fails
    (TF's errors, e.g. a failed check_numerics); an error of a source ends the elements.
    log_warning is accepted (nothing is logged)."""
    return _IgnoreErrors


class _Enumerate(Dataset):
    def __init__(self, ds: Dataset, start: Any):
        self._start, caps = _scalar_arg(start, "start")
        super().__init__((TensorSpec((), _dt.int64), ds._structure), inputs=[ds], captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        i = ctx.int_value(self._start, "start")
        for el in self._inputs[0]._elements(ctx):
            yield (np.array(i, dtype=np.int64),) + tuple(el)
            i += 1

    def _describe(self) -> str:
        return f"enumerate({self._start})"


def enumerate_dataset(start: Any = 0) -> Callable[[Dataset], Dataset]:
    """(index, element) pairs, the index an int64 counting from `start`."""
    return lambda ds: _Enumerate(ds, start)


Dataset.enumerate = lambda self, start=0: _Enumerate(self, start)  # type: ignore[attr-defined]


# -- choosing among datasets -------------------------------------------------------------------------------

def _common_structure(datasets: List[Dataset], what: str) -> Any:
    if not datasets or not all(isinstance(d, Dataset) for d in datasets):
        raise TypeError(f"{what}: `datasets` must be a non-empty list of Datasets")
    first = datasets[0]
    specs = first._flat_specs()
    for d in datasets[1:]:
        try:
            nest.assert_same_structure(first._structure, d._structure)
        except (ValueError, TypeError):
            raise TypeError(f"Datasets must have the same structure: {first.output_types} vs "
                            f"{d.output_types}") from None
        other = d._flat_specs()
        if [s.dtype for s in specs] != [s.dtype for s in other]:
            raise TypeError(f"Datasets must have the same types: {first.output_types} vs {d.output_types}")
        specs = [TensorSpec(_most_specific_compatible(a.shape, b.shape), a.dtype) for a, b in zip(specs, other)]
    return nest.pack_sequence_as(first._structure, specs)


class _Choose(Dataset):
    def __init__(self, datasets: List[Dataset], choice: Dataset, stop_on_empty: bool = False):
        self._stop = bool(stop_on_empty)
        structure = _common_structure(datasets, "choose_from_datasets")
        if not isinstance(choice, Dataset) or not isinstance(choice._structure, TensorSpec) or \
                choice._structure.dtype != _dt.int64 or choice._structure.shape.rank not in (None, 0):
            raise TypeError("`choice_dataset` must be a dataset of scalar `tf.int64` tensors.")
        super().__init__(structure, inputs=[choice] + list(datasets))

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        its: List[Optional[Iterator[Element]]] = [d._elements(ctx) for d in self._inputs[1:]]
        n = len(its)
        for (c,) in self._inputs[0]._elements(ctx):
            i = int(c)
            if not 0 <= i < n:
                raise InvalidArgumentError(f"Selector index out of range: {i} >= {n}")
            it = its[i]
            if it is None:
                continue  # an input that ended is skipped (TF 1.15's rule)
            el = next(it, None)
            if el is None:
                its[i] = None
                if self._stop or all(x is None for x in its):
                    return
                continue
            yield el

    def _describe(self) -> str:
        return f"choose_from_datasets({self._stop})"


def choose_from_datasets(datasets: List[Dataset], choice_dataset: Dataset,
                         stop_on_empty_dataset: bool = False) -> Dataset:
    """For each int64 scalar of choice_dataset, the next element of datasets[choice]
    (an input that has ended is passed over; with stop_on_empty_dataset the elements end)."""
    return _Choose(list(datasets), choice_dataset, stop_on_empty_dataset)


class _Sample(Dataset):
    def __init__(self, datasets: List[Dataset], weights: Any, seed: Optional[int], stop_on_empty: bool = False):
        self._stop = bool(stop_on_empty)
        structure = _common_structure(datasets, "sample_from_datasets")
        n = len(datasets)
        caps: List[_g.Tensor] = []
        if weights is None:
            self._weights: Any = np.full(n, 1.0 / n)
        elif isinstance(weights, _g.Tensor):
            if not weights.dtype.is_floating or weights.shape.rank not in (None, 1) or \
                    (weights.shape.rank == 1 and weights.shape.dims[0] not in (None, n)):
                raise ValueError(f"`weights` must be a vector of {n} floats, got {weights.dtype.name} {weights.shape}")
            self._weights, caps = weights, [weights]
        elif isinstance(weights, Dataset):
            raise TypeError("sample_from_datasets: collflow takes `weights` as a list or a tensor, not a Dataset")
        else:
            w = np.asarray(weights, dtype=np.float64)
            if w.shape != (n,):
                raise ValueError(f"`weights` must have one weight per dataset ({n}), got shape {w.shape}")
            self._weights = w
        g = None
        for d in datasets:
            g = g or d._graph()
        self._seeds = get_seed(seed, g or _g.get_default_graph())
        super().__init__(structure, inputs=list(datasets), captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        w = np.asarray(ctx.value(self._weights), dtype=np.float64).reshape(-1)
        if w.shape[0] != len(self._inputs) or (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise InvalidArgumentError(f"sample_from_datasets: weights must be {len(self._inputs)} non-negative "
                                       f"finite numbers, not all 0; got {w.tolist()}")
        s1, s2 = self._seeds
        if s1 is None:
            rng = ctx.unseeded_rng()
        else:  # each pass in a run differs, a new initialization replays them (as shuffle)
            counter = ctx.state.setdefault(("sample", self._id), [0])
            rng = np.random.default_rng([s1 & 0xFFFFFFFFFFFF, s2 & 0xFFFFFFFFFFFF, counter[0], 7])
            counter[0] += 1
        its: List[Optional[Iterator[Element]]] = [d._elements(ctx) for d in self._inputs]
        live = w.copy()
        while live.sum() > 0:
            i = int(rng.choice(len(live), p=live / live.sum()))
            el = next(its[i], None)  # type: ignore[arg-type]
            if el is None:
                if self._stop:
                    return
                live[i] = 0.0  # ended: drawn no more
                its[i] = None
                continue
            yield el

    def _describe(self) -> str:
        w = self._weights
        return f"sample({w.name if isinstance(w, _g.Tensor) else list(w)},{self._seeds},{self._stop})"


def sample_from_datasets(datasets: List[Dataset], weights: Any = None, seed: Optional[int] = None,
                         stop_on_empty_dataset: bool = False) -> Dataset:
    """Elements drawn from the datasets at random, datasets[i] with probability weights[i]
    (default uniform) among those that have not ended; ends when all have (with
    stop_on_empty_dataset: when one drawn has)."""
    return _Sample(list(datasets), weights, seed, stop_on_empty_dataset)



# -- get_single_element --------------------------------------------------------------------------------------

def _single_element_spec(op: _g.Operation) -> list:
    return [(s.dtype, s.shape) for s in op.attrs["dataset"]._flat_specs()]


register_op("DatasetToSingleElement", _single_element_spec, stateful=True,
            doc="the one element of a dataset, its pipeline run anew at each run")
not_differentiable("DatasetToSingleElement")
register_host_only("DatasetToSingleElement")


@register_kernel("DatasetToSingleElement", "CPU")
def _single_element_kernel(op: Any, ctx: KernelContext) -> Any:
    ds: Dataset = op.attrs["dataset"]
    caps = ds._captures()
    specs = ds._flat_specs()
    resources = ctx.resources

    def run(*values: Any) -> Any:
        it = ds._elements(IterationContext(resources, dict(zip(caps, values))))
        el = next(it, None)
        if el is None:
            raise InvalidArgumentError("Dataset was empty.", op)
        if next(it, None) is not None:
            raise InvalidArgumentError("Dataset had more than one element.", op)
        out = []
        for k, (v, s) in enumerate(zip(el, specs)):
            a = np.asarray(v, dtype=s.dtype.np)
            if not s.shape.matches_value(a.shape):
                raise InvalidArgumentError(f"get_single_element: component {k} has shape {a.shape}, expected "
                                           f"{s.shape}", op)
            out.append(a)
        return out[0] if len(out) == 1 else tuple(out)
    return run


def get_single_element(dataset: Dataset) -> Any:
    """The tensors of the one element of `dataset` (its pipeline runs at each Session run);
    an empty dataset, or one of more than one element, is an InvalidArgumentError."""
    if not isinstance(dataset, Dataset):
        raise TypeError("`dataset` must be a `tf.data.Dataset` object.")
    if any(_sp.is_sparse(s) for s in dataset._flat_specs()):
        raise TypeError("get_single_element: collflow does not return SparseTensor components")
    g = dataset._graph() or _g.get_default_graph()
    with g.as_default():
        op = g.create_op("DatasetToSingleElement", dataset._captures(), {"dataset": dataset},
                         name="DatasetToSingleElement")
    return nest.pack_sequence_as(dataset._structure, list(op.outputs))
