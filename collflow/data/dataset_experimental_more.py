"""More of TF 1.15's tf.data.experimental: unique, take_while, Counter, RandomDataset,
dense_to_sparse_batch, copy_to_device / prefetch_to_device (identity: collflow's pipelines
run on the host), TFRecordWriter, parse_example_dataset, make_batched_features_dataset,
and get_next_as_optional with Optional.

RandomDataset draws from collflow's own seeded stream (TF's seed rules; the values differ
from TF's Philox numbers).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional as _Opt

import numpy as np

from .. import dtypes as _dt
from ..errors import DataLossError, InvalidArgumentError
from ..graph import graph as _g
from ..graph import nest
from ..graph.ops.random_ops import get_seed
from ..graph.registry import not_differentiable, register_op
from ..graph.shape import TensorShape
from ..kernels.registry import KernelContext, register_kernel
from ..runtime.placement import register_host_only
from . import cardinality as _card
from . import sparse_elements as _sp
from .dataset import Dataset, _Batch, _Map, _Passthrough, _Repeat, _scalar_arg, _Shuffle
from .dataset_core import Element, IterationContext, TensorSpec, _TracedFunction
from .dataset_more import _Interleave

__all__ = ["unique", "take_while", "Counter", "RandomDataset", "dense_to_sparse_batch", "copy_to_device",
           "prefetch_to_device", "TFRecordWriter", "parse_example_dataset", "make_batched_features_dataset",
           "Optional", "get_next_as_optional", "latency_stats", "bytes_produced_stats", "filter_for_shard"]


# -- unique / take_while ----------------------------------------------------------------------------------

class _Unique(Dataset):
    def __init__(self, ds: Dataset):
        specs = ds._flat_specs()
        if len(specs) != 1 or _sp.is_sparse(specs[0]) or specs[0].dtype not in (_dt.int32, _dt.int64, _dt.string):
            raise TypeError("`tf.data.experimental.unique()` only supports inputs with a single `tf.int32`, "
                            "`tf.int64`, or `tf.string` component.")
        super().__init__(ds._structure, inputs=[ds])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        seen = set()
        for el in self._inputs[0]._elements(ctx):
            a = np.asarray(el[0])
            key = (a.shape, tuple(a.ravel().tolist()))
            if key not in seen:
                seen.add(key)
                yield el

    def _describe(self) -> str:
        return "unique"


def unique() -> Callable[[Dataset], Dataset]:
    """The elements not seen before, in their first order (one int32/int64/string component)."""
    return _Unique


class _TakeWhile(Dataset):
    def __init__(self, ds: Dataset, predicate: Callable[..., Any]):
        self._fn = _TracedFunction(predicate, ds._structure, "take_while", ds._graph() or _g.get_default_graph())
        out = self._fn.out_structure
        if not isinstance(out, TensorSpec) or out.dtype != _dt.bool_ or out.shape.rank not in (None, 0):
            raise ValueError(f"`predicate` must return a scalar boolean tensor, got {out}.")
        super().__init__(ds._structure, inputs=[ds], captures=self._fn.captures.outer)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        call = self._fn.caller(ctx)
        for el in self._inputs[0]._elements(ctx):
            if not bool(np.asarray(call(*el)[0])):
                return
            yield el

    def _describe(self) -> str:
        return self._fn.describe()


def take_while(predicate: Callable[..., Any]) -> Callable[[Dataset], Dataset]:
    """The elements up to (not including) the first for which `predicate` is false."""
    return lambda ds: _TakeWhile(ds, predicate)


# -- sources ------------------------------------------------------------------------------------------------

class _Counter(Dataset):
    def __init__(self, start: Any, step: Any, dtype: Any):
        self._start, c1 = _scalar_arg(start, "start")
        self._step, c2 = _scalar_arg(step, "step")
        self._dtype = _dt.as_dtype(dtype)
        super().__init__(TensorSpec((), self._dtype), captures=c1 + c2)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        v, step = ctx.int_value(self._start, "start"), ctx.int_value(self._step, "step")
        while True:
            yield (np.array(v, dtype=self._dtype.np),)
            v += step

    def _describe(self) -> str:
        return f"counter({self._start},{self._step},{self._dtype.name})"


def Counter(start: Any = 0, step: Any = 1, dtype: Any = _dt.int64) -> Dataset:  # noqa: N802 - TF's name
    """start, start + step, ... forever (TF 1.15: an infinite dataset)."""
    return _Counter(start, step, dtype)


class _Random(Dataset):
    def __init__(self, seed: _Opt[int]):
        self._seeds = get_seed(seed, _g.get_default_graph())
        super().__init__(TensorSpec((), _dt.int64))

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        s1, s2 = self._seeds
        rng = ctx.unseeded_rng() if s1 is None else np.random.default_rng([s1 & 0xFFFFFFFFFFFF, s2 & 0xFFFFFFFFFFFF])
        while True:
            yield (np.array(rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, dtype=np.int64,
                                         endpoint=True)),)

    def _describe(self) -> str:
        return f"random({self._seeds})"


def RandomDataset(seed: _Opt[int] = None) -> Dataset:  # noqa: N802 - TF's name
    """Random int64 scalars forever; seeded by TF's rules (collflow's generator, not TF's values)."""
    return _Random(seed)


_card.rule("_Counter", "_Random")(lambda ds, ctx: _card.INF)
_card.rule("_DenseToSparseBatch")(_card._RULES["_Batch"])


# -- dense_to_sparse_batch ------------------------------------------------------------------------------

class _DenseToSparseBatch(Dataset):
    def __init__(self, ds: Dataset, batch_size: Any, row_shape: Any):
        specs = ds._flat_specs()
        if len(specs) != 1 or _sp.is_sparse(specs[0]):
            raise TypeError("dense_to_sparse_batch needs elements of one dense component")
        self._size, caps = _scalar_arg(batch_size, "batch_size")
        self._row = [int(d) if d is not None else -1 for d in np.asarray(row_shape, dtype=object).ravel()]
        for d in self._row:
            if d < 0:
                raise ValueError(f"Dimension {d} must be >= 0")
        self._drop = False
        shape = TensorShape([None] + [None if d < 0 else d for d in self._row])
        super().__init__(_sp.SparseTensorSpec(shape, specs[0].dtype), inputs=[ds], captures=caps)

    def _batch(self, buf: List[np.ndarray]) -> _sp.SparseTensorValue:
        rank = len(self._row)
        for a in buf:
            if a.ndim != rank:
                raise InvalidArgumentError(f"Input element had shape ({', '.join(map(str, a.shape))}) that is "
                                           f"incompatible with the row shape {self._row}.")
            for d, r in zip(a.shape, self._row):
                if r >= 0 and d > r:
                    # TF's kernel reports a too-large element as DataLossError
                    raise DataLossError(f"Input element had shape ({', '.join(map(str, a.shape))}) that exceeds "
                                        f"the row shape {self._row}.")
        dims = [r if r >= 0 else max([a.shape[i] for a in buf] + [0]) for i, r in enumerate(self._row)]
        idx, vals = [], []
        for b, a in enumerate(buf):
            for pos in np.ndindex(*a.shape):
                idx.append((b,) + pos)
                vals.append(a[pos])
        indices = np.array(idx, dtype=np.int64).reshape(-1, rank + 1)
        values = np.array(vals, dtype=self._structure.dtype.np).reshape(-1)
        return _sp.SparseTensorValue(indices, values, np.array([len(buf)] + dims, dtype=np.int64))

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        n = ctx.int_value(self._size, "batch_size")
        buf: List[np.ndarray] = []
        for el in self._inputs[0]._elements(ctx):
            buf.append(np.asarray(el[0]))
            if len(buf) == n:
                yield (self._batch(buf),)
                buf = []
        if buf:
            yield (self._batch(buf),)

    def _describe(self) -> str:
        return f"dense_to_sparse_batch({self._size},{self._row})"


def dense_to_sparse_batch(batch_size: Any, row_shape: Any) -> Callable[[Dataset], Dataset]:
    """Batches of `batch_size` elements as one SparseTensor of dense shape [batch, *row_shape]
    holding every entry of each element (no larger than row_shape)."""
    return lambda ds: _DenseToSparseBatch(ds, batch_size, row_shape)


# -- devices ------------------------------------------------------------------------------------------------

def copy_to_device(target_device: str, source_device: str = "/cpu:0") -> Callable[[Dataset], Dataset]:
    """Accepted: collflow's pipelines run on the host, so the dataset is unchanged."""
    return lambda ds: _Passthrough(ds, "copy_to_device")


def prefetch_to_device(device: str, buffer_size: Any = None) -> Callable[[Dataset], Dataset]:
    """Accepted: collflow's pipelines run on the host, so the dataset is unchanged."""
    return lambda ds: _Passthrough(ds, "prefetch_to_device")


def latency_stats(tag: str) -> Callable[[Dataset], Dataset]:
    """Accepted: collflow records no tf.data statistics, so the dataset is unchanged."""
    return lambda ds: _Passthrough(ds, "latency_stats")


def bytes_produced_stats(tag: str) -> Callable[[Dataset], Dataset]:
    """Accepted: collflow records no tf.data statistics, so the dataset is unchanged."""
    return lambda ds: _Passthrough(ds, "bytes_produced_stats")


def filter_for_shard(num_shards: int, shard_index: int) -> Callable[[Dataset], Dataset]:
    """TF 1.15's deprecated form of Dataset.shard: every num_shards-th element from shard_index."""
    return lambda ds: ds.shard(num_shards, shard_index)


# -- TFRecordWriter --------------------------------------------------------------------------------------

register_op("DatasetToTFRecord", lambda op: [], stateful=True, doc="writes a dataset of strings to a TFRecord file")
not_differentiable("DatasetToTFRecord")
register_host_only("DatasetToTFRecord")


@register_kernel("DatasetToTFRecord", "CPU")
def _to_tfrecord_kernel(op: Any, ctx: KernelContext) -> Any:
    from ..platform import tfrecord as _tfr
    ds: Dataset = op.attrs["dataset"]
    caps = ds._captures()
    resources = ctx.resources

    def run(filename: Any, compression: Any, *values: Any) -> None:
        path = filename.decode() if isinstance(filename, bytes) else str(np.asarray(filename, dtype=object).item())
        kind = str(np.asarray(compression, dtype=object).item() or "")
        with _tfr.TFRecordWriter(path, kind or None) as w:
            for el in ds._elements(IterationContext(resources, dict(zip(caps, values)))):
                v = np.asarray(el[0], dtype=object).item()
                w.write(v)
    return run


class TFRecordWriter:
    """tf.data.experimental.TFRecordWriter: `write(dataset)` is an op that writes the
    dataset's string scalars to `filename` as TFRecords (compression_type None, "GZIP", "ZLIB")."""

    def __init__(self, filename: Any, compression_type: _Opt[str] = None):
        from .record_datasets import _kind
        self._filename = filename
        self._kind = _kind(compression_type, "TFRecordWriter")

    def write(self, dataset: Dataset) -> _g.Operation:
        if not isinstance(dataset, Dataset):
            raise TypeError(f"`dataset` must be a `tf.data.Dataset` object, got {type(dataset).__name__}")
        specs = dataset._flat_specs()
        if len(specs) != 1 or _sp.is_sparse(specs[0]) or specs[0].dtype != _dt.string \
                or specs[0].shape.rank not in (None, 0):
            raise TypeError(f"`dataset` must produce scalar `DT_STRING` tensors whereas it produces shape "
                            f"{dataset.output_shapes} and types {dataset.output_types}")
        from ..graph.ops.constant_op import constant
        g = dataset._graph() or _g.get_default_graph()
        with g.as_default():
            fname = self._filename if isinstance(self._filename, _g.Tensor) else constant(str(self._filename))
            comp = constant(self._kind)
            return g.create_op("DatasetToTFRecord", [fname, comp] + dataset._captures(), {"dataset": dataset},
                               name="DatasetToTFRecord")


# -- parsing -------------------------------------------------------------------------------------------------

def parse_example_dataset(features: Dict[str, Any], num_parallel_calls: Any = 1) -> Callable[[Dataset], Dataset]:
    """A transformation parsing vectors of serialized tf.Example protos with `parse_example`
    into dicts of feature tensors (FixedLen, VarLen -> SparseTensor, Sparse features)."""
    if features is None:
        raise ValueError("Missing: features was None.")
    from ..graph.ops.parsing_ops import parse_example

    def apply(ds: Dataset) -> Dataset:
        specs = ds._flat_specs()
        if len(specs) != 1 or specs[0].dtype != _dt.string:
            raise TypeError("Input dataset should be a dataset of vectors of strings")
        return _Map(ds, lambda s: parse_example(s, features))
    return apply


def make_batched_features_dataset(file_pattern: Any, batch_size: int, features: Dict[str, Any], reader: Any = None,
                                  label_key: _Opt[str] = None, reader_args: _Opt[List[Any]] = None,
                                  num_epochs: _Opt[int] = None, shuffle: bool = True, shuffle_buffer_size: int = 10000,
                                  shuffle_seed: _Opt[int] = None, prefetch_buffer_size: Any = None,
                                  reader_num_threads: int = 1, parser_num_threads: int = 2,
                                  sloppy_ordering: bool = False, drop_final_batch: bool = False) -> Dataset:
    """Batches of parsed tf.Examples read from files, as TF 1.15's pipeline: files listed
    (shuffled with `shuffle`), read with `reader` (TFRecordDataset) interleaved
    `reader_num_threads` at a time, shuffled and repeated `num_epochs` times (None: forever),
    batched (the last partial batch dropped when num_epochs is None or drop_final_batch),
    parsed; with `label_key`, (features, label)."""
    from .dataset_experimental import list_files
    from .record_datasets import TFRecordDataset
    if label_key is not None and label_key not in features:
        raise ValueError(f"The `label_key` provided ({label_key!r}) must be one of the `features` keys.")
    read = reader or TFRecordDataset
    args = list(reader_args or [])
    ds = list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed)
    ds = _Interleave(ds, lambda f: read(f, *args), reader_num_threads, 1)
    if ds.output_types == (_dt.string, _dt.string):
        ds = _Map(ds, lambda _, v: v)
    if num_epochs != 1 and shuffle:
        ds = _Repeat(_Shuffle(ds, shuffle_buffer_size, shuffle_seed, True), num_epochs)
    elif num_epochs != 1:
        ds = _Repeat(ds, num_epochs)
    elif shuffle:
        ds = _Shuffle(ds, shuffle_buffer_size, shuffle_seed, True)
    ds = _Batch(ds, batch_size, drop_remainder=drop_final_batch or num_epochs is None)
    ds = parse_example_dataset(features, parser_num_threads)(ds)
    if label_key is not None:
        def split(f: Dict[str, Any]) -> Any:
            f = dict(f)
            label = f.pop(label_key)
            return f, label
        ds = _Map(ds, split)
    return ds


# -- get_next_as_optional ------------------------------------------------------------------------------------

def _optional_next_spec(op: _g.Operation) -> list:
    from .iterator_ops import _iterator_op
    a = _iterator_op(op.inputs[0]).attrs
    return [(_dt.bool_, TensorShape(()))] + [(t, TensorShape(None)) for t in a["output_types"]]


def _optional_value_spec(op: _g.Operation) -> list:
    return [(t, s) for t, s in zip(op.attrs["types"], op.attrs["shapes"])]


register_op("IteratorGetNextAsOptional", _optional_next_spec, stateful=True,
            doc="the next element of an iterator with a flag saying whether there was one")
register_op("OptionalGetValue", _optional_value_spec, doc="an Optional's value (an error when it has none)")
not_differentiable("IteratorGetNextAsOptional", "OptionalGetValue")
register_host_only("IteratorGetNextAsOptional", "OptionalGetValue")


@register_kernel("IteratorGetNextAsOptional", "CPU")
def _optional_next_kernel(op: Any, ctx: KernelContext) -> Any:
    from ..errors import OutOfRangeError
    types = [t for t, _ in _optional_next_spec(op)[1:]]

    def run(res: Any) -> Any:
        try:
            return (np.array(True),) + tuple(res.get_next(op))
        except OutOfRangeError:
            return (np.array(False),) + tuple(np.zeros((), dtype=t.np) if t != _dt.string
                                              else np.array("", dtype=object) for t in types)
    return run


@register_kernel("OptionalGetValue", "CPU")
def _optional_value_kernel(op: Any, ctx: KernelContext) -> Any:
    def run(has: Any, *values: Any) -> Any:
        if not bool(has):
            raise InvalidArgumentError("The optional variant does not have a value.", op)
        return values[0] if len(values) == 1 else tuple(values)
    return run


class Optional:
    """tf.data.experimental.Optional: a value that may be absent (`has_value()`, `get_value()`)."""

    def __init__(self, has: _g.Tensor, parts: List[_g.Tensor], structure: Any):
        self._has, self._parts, self._structure = has, parts, structure

    @staticmethod
    def from_value(value: Any) -> "Optional":
        from ..graph.ops.constant_op import constant
        flat = [_g.convert_to_tensor(v) for v in nest.flatten(value)]
        structure = nest.pack_sequence_as(value, [TensorSpec(t.shape, t.dtype) for t in flat])
        return Optional(constant(True), flat, structure)

    @property
    def value_structure(self) -> Any:
        return self._structure

    def has_value(self, name: _Opt[str] = None) -> _g.Tensor:
        """A bool scalar: whether there is a value."""
        return self._has

    def get_value(self, name: _Opt[str] = None) -> Any:
        """The value's tensors; running them without a value is InvalidArgumentError."""
        specs = nest.flatten(self._structure)
        g = self._has.graph
        with g.as_default():
            op = g.create_op("OptionalGetValue", [self._has] + list(self._parts),
                             {"types": [s.dtype for s in specs], "shapes": [s.shape for s in specs]},
                             name=name or "OptionalGetValue")
        return nest.pack_sequence_as(self._structure, list(op.outputs))



def get_next_as_optional(iterator: Any) -> Optional:
    """An Optional holding the iterator's next element, or no value at its end."""
    structure = iterator._structure
    if any(_sp.is_sparse(s) for s in nest.flatten(structure)):
        raise TypeError("get_next_as_optional: collflow does not carry SparseTensor components in an Optional")
    g = iterator._handle.graph
    with g.as_default():
        op = g.create_op("IteratorGetNextAsOptional", [iterator._handle], {}, name="IteratorGetNextAsOptional")
    return Optional(op.outputs[0], list(op.outputs[1:]), structure)


# TF 2.x's methods for two of them (TF 1.15 had the transformations only)
Dataset.unique = lambda self, name=None: _Unique(self)  # type: ignore[attr-defined]
Dataset.take_while = lambda self, predicate, name=None: _TakeWhile(self, predicate)  # type: ignore[attr-defined]
