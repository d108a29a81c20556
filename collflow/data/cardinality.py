"""tf.data.experimental.cardinality / assert_cardinality and the constants
INFINITE_CARDINALITY (-1) and UNKNOWN_CARDINALITY (-2).

`cardinality(ds)` is an int64 scalar tensor computed when it runs, from the dataset's
description and the values of the tensors it reads, by TF's rules: sources of known size
(tensor slices, tensors, range) know theirs; shuffle, prefetch, cache, enumerate and
scan keep their input's; batch, take, skip, repeat, shard, zip and concatenate combine
theirs as TF computes them; map (TF1's map keeps no cardinality), filter, flat_map,
interleave, readers, generators, unbatch and the other data-dependent ones are UNKNOWN;
repeat() of anything but an empty dataset is INFINITE (an UNKNOWN one too, as TF).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator

import numpy as np

from .. import dtypes as _dt
from ..errors import FailedPreconditionError, InvalidArgumentError
from ..graph import graph as _g
from ..graph.registry import not_differentiable, register_op
from ..graph.shape import TensorShape
from ..kernels.registry import KernelContext, register_kernel
from ..runtime.placement import register_host_only
from . import dataset as _d
from .dataset import Dataset, _scalar_arg
from .dataset_core import Element, IterationContext

__all__ = ["INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality", "assert_cardinality", "static_cardinality"]

INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2
INF, UNK = INFINITE_CARDINALITY, UNKNOWN_CARDINALITY

# class name -> rule(dataset, ctx) giving its cardinality; other classes are UNKNOWN
_RULES: Dict[str, Callable[[Any, IterationContext], int]] = {}


def rule(*names: str) -> Callable[[Callable[[Any, IterationContext], int]], Callable[[Any, IterationContext], int]]:
    """Registers a cardinality rule for the dataset classes named (other modules add theirs)."""
    def deco(fn: Callable[[Any, IterationContext], int]) -> Callable[[Any, IterationContext], int]:
        for n in names:
            _RULES[n] = fn
        return fn
    return deco


def _card(ds: Dataset, ctx: IterationContext) -> int:
    fn = _RULES.get(type(ds).__name__)
    return UNK if fn is None else int(fn(ds, ctx))


def _first(ds: Any, ctx: IterationContext) -> int:
    return _card(ds._inputs[0], ctx)


# TF1's Dataset.map does not preserve cardinality (preserve_cardinality=False): UNKNOWN
rule("_Shuffle", "_Passthrough", "_Cache", "_Enumerate", "_Scan", "_WithOptions")(_first)


@rule("_TensorSlices")
def _slices(ds: Any, ctx: IterationContext) -> int:
    return int(np.shape(ctx.value(ds._leaves[0]))[0])


rule("_Tensors")(lambda ds, ctx: 1)


@rule("_Range")
def _range(ds: Any, ctx: IterationContext) -> int:
    vals = [ctx.int_value(v, "Dataset.range's argument") for v in ds._args]
    return len(range(*vals)) if not (len(vals) == 3 and vals[2] == 0) else 0


@rule("_Batch", "_PaddedBatch")
def _batch(ds: Any, ctx: IterationContext) -> int:
    n = _first(ds, ctx)
    if n < 0:
        return n
    b = ctx.int_value(ds._size, "batch_size")
    return n // b if ds._drop else -(-n // b)


@rule("_Repeat")
def _repeat(ds: Any, ctx: IterationContext) -> int:
    n, count = _first(ds, ctx), ctx.int_value(ds._count, "count")
    if count < 0:
        return 0 if n == 0 else INF  # TF: even an UNKNOWN input repeated forever is INFINITE
    if count == 0:
        return 0
    return n if n < 0 else n * count


@rule("_Take")
def _take(ds: Any, ctx: IterationContext) -> int:
    n, count = _first(ds, ctx), ctx.int_value(ds._count, "count")
    if n == UNK:
        return UNK
    if count < 0:
        return n
    return count if n == INF else min(n, count)


@rule("_Skip")
def _skip(ds: Any, ctx: IterationContext) -> int:
    n, count = _first(ds, ctx), ctx.int_value(ds._count, "count")
    if n < 0:
        return n
    return 0 if count < 0 else max(0, n - count)


@rule("_Shard")
def _shard(ds: Any, ctx: IterationContext) -> int:
    n = _first(ds, ctx)
    if n < 0:
        return n
    return n // ds._n + (1 if ds._i < n % ds._n else 0)


@rule("_Zip")
def _zip(ds: Any, ctx: IterationContext) -> int:
    ns = [_card(d, ctx) for d in ds._inputs]
    if UNK in ns:
        return UNK
    finite = [n for n in ns if n != INF]
    return min(finite) if finite else INF


@rule("_Concatenate")
def _concatenate(ds: Any, ctx: IterationContext) -> int:
    a, b = (_card(d, ctx) for d in ds._inputs)
    if INF in (a, b):
        return INF
    if UNK in (a, b):
        return UNK
    return a + b


# -- the ops ----------------------------------------------------------------------------------------------

register_op("DatasetCardinality", lambda op: [(_dt.int64, TensorShape(()))], stateful=True,
            doc="the number of elements of a dataset (-1 infinite, -2 unknown)")
not_differentiable("DatasetCardinality")
register_host_only("DatasetCardinality")


@register_kernel("DatasetCardinality", "CPU")
def _cardinality_kernel(op: Any, ctx: KernelContext) -> Any:
    ds: Dataset = op.attrs["dataset"]
    caps = ds._captures()
    resources = ctx.resources

    def run(*values: Any) -> np.ndarray:
        return np.array(_card(ds, IterationContext(resources, dict(zip(caps, values)))), dtype=np.int64)
    return run


def static_cardinality(dataset: Dataset) -> int:
    """The cardinality computed now, for a dataset that reads no graph tensors (else UNKNOWN)."""
    if dataset._captures():
        return UNK
    return _card(dataset, IterationContext(None, {}))


def cardinality(dataset: Dataset) -> _g.Tensor:
    """An int64 scalar tensor: the number of elements of `dataset`, INFINITE_CARDINALITY (-1)
    or UNKNOWN_CARDINALITY (-2) (tf.data.experimental.cardinality)."""
    if not isinstance(dataset, Dataset):
        raise TypeError(f"cardinality takes a Dataset, got {type(dataset).__name__}")
    g = dataset._graph() or _g.get_default_graph()
    with g.as_default():
        return g.create_op("DatasetCardinality", dataset._captures(), {"dataset": dataset},
                           name="DatasetCardinality").outputs[0]


class _AssertCardinality(Dataset):
    def __init__(self, ds: Dataset, expected: Any):
        self._expected, caps = _scalar_arg(expected, "expected_cardinality")
        super().__init__(ds._structure, inputs=[ds], captures=caps)

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        want = ctx.int_value(self._expected, "expected_cardinality")
        got = 0
        for el in self._inputs[0]._elements(ctx):
            got += 1
            if want != INF and got > want:
                raise FailedPreconditionError(f"Input dataset was expected to contain {_count(want)} but contained "
                                              f"at least {_count(got)}.")
            yield el
        if want != got:
            raise FailedPreconditionError(f"Input dataset was expected to contain {_count(want)} but contained only "
                                          f"{_count(got)}.")

    def _describe(self) -> str:
        return f"assert_cardinality({_d._arg_repr(self._expected)})"


def _count(n: int) -> str:
    if n == INF:
        return "an infinite number of elements"
    return f"{n} element{'' if n == 1 else 's'}"


rule("_AssertCardinality")(lambda ds, ctx: ctx.int_value(ds._expected, "expected_cardinality"))


def assert_cardinality(expected_cardinality: Any) -> Callable[[Dataset], Dataset]:
    """A transformation asserting the dataset has `expected_cardinality` elements: cardinality()
    then gives that number, and iterating raises FailedPreconditionError where it differs."""
    if isinstance(expected_cardinality, (int, np.integer)) and int(expected_cardinality) < INF:
        raise InvalidArgumentError(f"expected_cardinality must be >= -1, got {expected_cardinality}")
    return lambda ds: _AssertCardinality(ds, expected_cardinality)


# TF 2.x's method (TF 1.15 had the function only); harmless on TF1 code
Dataset.cardinality = cardinality  # type: ignore[attr-defined]
