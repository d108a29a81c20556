"""Iterators over a cf.data.Dataset: graph ops whose kernels run the pipeline on the host.

Three stateful ops, all on the host:
- IteratorV2: the iterator, a resource of the Session (one per op, or per shared_name);
  for a one-shot iterator it also starts the pipeline at its first run in a Session;
- MakeIterator (`iterator.initializer`): starts the dataset's pipeline from the beginning,
  reading the values of the graph tensors the dataset uses (fed placeholders included);
- IteratorGetNext (`get_next()`): the next element, or OutOfRangeError("End of sequence")
  once the pipeline is exhausted (every later call too, until re-initialization).
"""
from __future__ import annotations

import threading
from typing import Any, Iterator as _PyIterator, List, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..errors import FailedPreconditionError, InvalidArgumentError, OutOfRangeError
from ..graph import graph as _g
from ..graph import nest
from ..graph.registry import register_op, not_differentiable
from ..graph.shape import TensorShape, as_shape
from ..kernels.registry import register_kernel, KernelContext
from ..runtime.placement import register_host_only
from . import sparse_elements as _sp
from .dataset import Dataset
from .dataset_core import IterationContext, TensorSpec, _normalize_structure, _frozen

__all__ = ["Iterator", "make_one_shot_iterator", "make_initializable_iterator", "GLOBAL_ITERATORS"]

GLOBAL_ITERATORS = "iterators"  # TF1's collection of iterator handles


# -- ops ---------------------------------------------------------------------------------------------

def _iterator_spec(op: _g.Operation) -> list:
    return [(_dt.resource, TensorShape(()))]


_HANDLE_OPS = ("IteratorV2", "IteratorFromStringHandleV2")


def _iterator_op(handle: _g.Tensor) -> _g.Operation:
    if handle.dtype != _dt.resource or handle.op.type not in _HANDLE_OPS:
        raise ValueError(f"{handle.name} is not an iterator handle (the output of an IteratorV2 op)")
    return handle.op


def _check_dataset(op: _g.Operation, ds: Dataset) -> None:
    it = _iterator_op(op.inputs[0]).attrs
    types = [s.dtype for s in ds._flat_specs()]
    if types != list(it["output_types"]):
        raise ValueError(f"the iterator's elements have types {[t.name for t in it['output_types']]}; the dataset's "
                         f"have {[t.name for t in types]}")
    if [_sp.is_sparse(s) for s in ds._flat_specs()] != list(it.get("output_sparse") or [False] * len(types)):
        raise ValueError(f"the iterator's elements are {_classes(it)}; the dataset's are "
                         f"{['SparseTensor' if _sp.is_sparse(s) else 'Tensor' for s in ds._flat_specs()]}")
    for a, b in zip(it["output_shapes"], ds._flat_specs()):
        if not a.is_compatible_with(b.shape):
            raise ValueError(f"the iterator's elements have shapes {list(it['output_shapes'])}; the dataset's have "
                             f"{[s.shape for s in ds._flat_specs()]}")


def _make_iterator_spec(op: _g.Operation) -> list:
    _check_dataset(op, op.attrs["dataset"])
    return []


def _classes(attrs: Any) -> List[str]:
    sparse = attrs.get("output_sparse") or [False] * len(attrs["output_types"])
    return ["SparseTensor" if sp else "Tensor" for sp in sparse]


def _get_next_spec(op: _g.Operation) -> list:
    a = _iterator_op(op.inputs[0]).attrs
    sparse = a.get("output_sparse") or [False] * len(a["output_types"])
    out: list = []
    for t, shape, sp in zip(a["output_types"], a["output_shapes"], sparse):
        # a SparseTensor component is three outputs: indices, values, dense_shape
        out.extend(_sp.sparse_parts_specs(_sp.SparseTensorSpec(shape, t)) if sp else [(t, shape)])
    return out


def _to_string_handle_spec(op: _g.Operation) -> list:
    _iterator_op(op.inputs[0])
    return [(_dt.string, TensorShape(()))]


def _from_string_handle_spec(op: _g.Operation) -> list:
    h = op.inputs[0]
    if h.dtype != _dt.string or h.shape.rank not in (None, 0):
        raise InvalidArgumentError(f"Iterator.from_string_handle needs a scalar string handle, got {h.name} "
                                   f"({h.dtype.name} {h.shape})")
    return [(_dt.resource, TensorShape(()))]


register_op("IteratorV2", _iterator_spec, stateful=True, doc="an iterator over a dataset (a Session resource)")
register_op("IteratorToStringHandle", _to_string_handle_spec, stateful=True,
            doc="a string naming an iterator in its Session (feedable iterators)")
register_op("IteratorFromStringHandleV2", _from_string_handle_spec, stateful=True,
            doc="the iterator a string handle names, checked against the expected element types and shapes")
register_op("MakeIterator", _make_iterator_spec, stateful=True, doc="(re)starts an iterator on a dataset")
register_op("IteratorGetNext", _get_next_spec, stateful=True, doc="the next element of an iterator")
not_differentiable("IteratorV2", "MakeIterator", "IteratorGetNext", "IteratorToStringHandle",
                   "IteratorFromStringHandleV2")
register_host_only("IteratorV2", "MakeIterator", "IteratorGetNext", "IteratorToStringHandle",
                   "IteratorFromStringHandleV2")


# -- the resource and the kernels -------------------------------------------------------------------------

class IteratorResource:
    """The running pipeline of one iterator in one Session (a generator of flat elements)."""

    def __init__(self, name: str, specs: Sequence[TensorSpec]):
        self.name = name
        self.specs = list(specs)
        self._lock = threading.Lock()
        self._elements: Optional[_PyIterator[Any]] = None
        self.started = False
        # what iterator_state.py saves: the run's dataset, the values of its graph tensors and
        # its IterationContext (unseeded draws), and how many elements it has given out
        self.source: Optional[tuple] = None
        self.produced = 0
        self.exhausted = False

    def initialize(self, ds: Dataset, captures: Sequence[_g.Tensor], values: Sequence[Any], resources: Any,
                   entropy: Optional[int] = None) -> None:
        """Starts `ds` from its beginning with the given values of its graph tensors (entropy:
        the root of the run's unseeded draws, a restored run's; None: a new one)."""
        # a fed array may change after this run: the pipeline keeps a read-only copy (a constant's
        # value is read-only already)
        bound = {t: v if isinstance(v, np.ndarray) and not v.flags.writeable else _frozen(np.asarray(v))
                 for t, v in zip(captures, values)}
        ctx = IterationContext(resources, bound)
        # drawn now, not at the first unseeded draw: a position saved before that draw must
        # replay the draws the saved run makes after it
        ctx.entropy = entropy if entropy is not None else int(np.random.SeedSequence().entropy % (1 << 63))
        with self._lock:
            self._elements = ds._elements(ctx)
            self.started = True
            self.source = (ds, list(captures), [bound[t] for t in captures], ctx)
            self.produced, self.exhausted = 0, False

    def get_next(self, op: Any) -> tuple:
        with self._lock:
            if self._elements is None:
                raise FailedPreconditionError(
                    "GetNext() failed because the iterator has not been initialized. Ensure that you have run the "
                    "initializer operation for this iterator before getting the next element.", op)
            try:
                el = next(self._elements)
            except StopIteration:
                self.exhausted = True
                raise OutOfRangeError("End of sequence", op) from None
            except BaseException:
                self._elements = iter(())  # a pipeline that failed is over
                self.exhausted = True
                raise
            self.produced += 1
        out: List[Any] = []
        for k, (v, s) in enumerate(zip(el, self.specs)):
            if _sp.is_sparse(s):
                out.extend(_sp.check_sparse(v, s, f"iterator {self.name!r}", k, op))
                continue
            a = v if isinstance(v, np.ndarray) and v.dtype == s.dtype.np else np.asarray(v, dtype=s.dtype.np)
            if not s.shape.matches_value(a.shape):
                raise InvalidArgumentError(f"iterator {self.name!r}: component {k} of an element has shape "
                                           f"{a.shape}, expected {s.shape}", op)
            out.append(a)
        return tuple(out)


def resource_of(op: Any, resources: Any) -> IteratorResource:
    """The IteratorResource of an IteratorV2 op in a Session's resource container (made empty
    if the Session has not run the op yet)."""
    a = op.attrs
    sparse = a.get("output_sparse") or [False] * len(a["output_types"])
    specs = [_sp.SparseTensorSpec(s, t) if sp else TensorSpec(s, t)
             for s, t, sp in zip(a["output_shapes"], a["output_types"], sparse)]
    return resources.get_or_create("iterator", "iterator:" + a["shared_name"],
                                   lambda: IteratorResource(a["shared_name"], specs))


def _resource(op: Any, ctx: KernelContext) -> IteratorResource:
    return resource_of(op, ctx.resources)


@register_kernel("IteratorV2", "CPU")
def _iterator_kernel(op: Any, ctx: KernelContext) -> Any:
    res = _resource(op, ctx)
    ds: Optional[Dataset] = op.attrs.get("dataset")
    if ds is None:
        def handle() -> IteratorResource:
            return res
        handle.constant_result = True  # type: ignore[attr-defined]  (the plan calls it once)
        return handle
    caps = ds._captures()
    resources = ctx.resources

    def one_shot(*values: Any) -> IteratorResource:
        if not res.started:  # the first run in this Session starts the pipeline, once
            res.initialize(ds, caps, values, resources)
        return res
    return one_shot


_HANDLE_PREFIX = "iterator:"


@register_kernel("IteratorToStringHandle", "CPU")
def _to_string_handle_kernel(op: Any, ctx: KernelContext) -> Any:
    def to_string(res: IteratorResource) -> Any:
        return np.array(_HANDLE_PREFIX + res.name, dtype=object)
    return to_string


@register_kernel("IteratorFromStringHandleV2", "CPU")
def _from_string_handle_kernel(op: Any, ctx: KernelContext) -> Any:
    types, shapes = op.attrs["output_types"], op.attrs["output_shapes"]
    resources = ctx.resources

    def from_string(handle: Any) -> IteratorResource:
        h = np.asarray(handle).item()
        key = h.decode() if isinstance(h, bytes) else str(h)

        def missing() -> IteratorResource:
            raise InvalidArgumentError(
                f"Iterator.from_string_handle: {key!r} is not the string handle of an iterator of this Session "
                "(run iterator.string_handle() in this Session and feed what it returns)", op)
        if not key.startswith(_HANDLE_PREFIX):
            missing()
        res: IteratorResource = resources.get_or_create("iterator", key, missing)
        got_types = [s.dtype for s in res.specs]
        sparse = list(op.attrs.get("output_sparse") or [False] * len(types))
        if (got_types != list(types) or [_sp.is_sparse(s) for s in res.specs] != sparse
                or not all(a.is_compatible_with(s.shape) for a, s in zip(shapes, res.specs))):
            raise InvalidArgumentError(
                f"Iterator.from_string_handle: the iterator {res.name!r} yields "
                f"{[(t.name, str(s.shape)) for t, s in zip(got_types, res.specs)]}, this handle expects "
                f"{[(t.name, str(sh)) for t, sh in zip(types, shapes)]}", op)
        return res
    return from_string


@register_kernel("MakeIterator", "CPU")
def _make_iterator_kernel(op: Any, ctx: KernelContext) -> Any:
    ds: Dataset = op.attrs["dataset"]
    caps = ds._captures()
    resources = ctx.resources

    def make(res: IteratorResource, *values: Any) -> None:
        res.initialize(ds, caps, values, resources)
    return make


@register_kernel("IteratorGetNext", "CPU")
def _get_next_kernel(op: Any, ctx: KernelContext) -> Any:
    single = len(op.outputs) == 1

    def get_next(res: IteratorResource) -> Any:
        out = res.get_next(op)
        return out[0] if single else out
    return get_next


# -- the Python class ----------------------------------------------------------------------------------------

def _placeholders_upstream(ts: Sequence[_g.Tensor]) -> List[str]:
    """Names of the placeholders the tensors depend on (a one-shot iterator cannot feed them)."""
    seen, stack, found = set(), [t.op for t in ts], []
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "Placeholder":
            found.append(op.name)
        stack.extend(t.op for t in op.inputs)
    return sorted(found)


def _structure_of(output_types: Any, output_shapes: Any, output_classes: Any = None) -> Any:
    """The element structure (TensorSpecs) of the given types, shapes (None: unknown) and
    classes (SparseTensor for a sparse component; None: all dense)."""
    types = _normalize_structure(output_types)
    flat_types = [_dt.as_dtype(t) for t in nest.flatten(types)]
    if output_shapes is None:
        flat_shapes = [TensorShape(None)] * len(flat_types)
    else:
        flat_shapes = ([as_shape(output_shapes)] if not isinstance(types, (tuple, dict))
                       else [as_shape(s) for s in nest.flatten_up_to(types, _normalize_structure(output_shapes))])
    if output_classes is None:
        flat_sparse = [False] * len(flat_types)
    elif not isinstance(types, (tuple, dict)):
        flat_sparse = [output_classes is _sp.SparseTensor]
    else:
        flat_sparse = [c is _sp.SparseTensor for c in nest.flatten_up_to(types, _normalize_structure(output_classes))]
    return nest.pack_sequence_as(types, [_sp.SparseTensorSpec(s, t) if sp else TensorSpec(s, t)
                                         for s, t, sp in zip(flat_shapes, flat_types, flat_sparse)])


class Iterator:
    """An iterator over datasets of one structure (TensorFlow 1.x's tf.data.Iterator)."""

    def __init__(self, handle: _g.Tensor, initializer: Optional[_g.Operation], structure: Any):
        self._handle = handle
        self._initializer = initializer
        self._structure = structure

    # -- construction ----------------------------------------------------------------------------------
    @staticmethod
    def _make(structure: Any, graph: _g.Graph, shared_name: Optional[str], dataset: Optional[Dataset],
              inputs: Sequence[_g.Tensor], name: str) -> _g.Tensor:
        flat = nest.flatten(structure)
        attrs = {"output_types": tuple(s.dtype for s in flat), "output_shapes": tuple(s.shape for s in flat),
                 "output_sparse": tuple(_sp.is_sparse(s) for s in flat), "dataset": dataset}
        with graph.as_default():
            # by default the op's own name, unique in the graph, hence in its Session's container
            attrs["shared_name"] = shared_name or graph.unique_name(name, mark_as_used=False)
            handle = graph.create_op("IteratorV2", list(inputs), attrs, name=name).outputs[0]
            # TF1's "iterators" collection: what CheckpointInputPipelineHook saves
            graph.add_to_collection(GLOBAL_ITERATORS, handle)
            return handle

    @classmethod
    def _one_shot(cls, ds: Dataset) -> "Iterator":
        caps = ds._captures()
        fed = _placeholders_upstream(caps)
        if fed:
            raise InvalidArgumentError(
                f"make_one_shot_iterator: the dataset depends on placeholder(s) {fed}, which a one-shot iterator "
                "cannot be fed; use make_initializable_iterator() and feed them when running iterator.initializer")
        g = ds._graph() or _g.get_default_graph()
        handle = cls._make(ds._structure, g, None, ds, caps, "OneShotIterator")
        return cls(handle, None, ds._structure)

    @classmethod
    def _initializable(cls, ds: Dataset, shared_name: Optional[str]) -> "Iterator":
        g = ds._graph() or _g.get_default_graph()
        handle = cls._make(ds._structure, g, shared_name, None, [], "Iterator")
        it = cls(handle, None, ds._structure)
        it._initializer = it.make_initializer(ds)
        return it

    @staticmethod
    def from_structure(output_types: Any, output_shapes: Any = None, shared_name: Optional[str] = None,
                       output_classes: Any = None) -> "Iterator":
        """An iterator not bound to a dataset: `make_initializer(dataset)` makes the op that
        (re)starts it on any dataset of this structure (a reinitializable iterator)."""
        structure = _structure_of(output_types, output_shapes, output_classes)
        handle = Iterator._make(structure, _g.get_default_graph(), shared_name, None, [], "Iterator")
        return Iterator(handle, None, structure)

    # -- use ----------------------------------------------------------------------------------------------
    @property
    def initializer(self) -> _g.Operation:
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def make_initializer(self, dataset: Dataset, name: Optional[str] = None) -> _g.Operation:
        """An op that starts this iterator on `dataset` (from its beginning) when run."""
        if not isinstance(dataset, Dataset):
            raise TypeError(f"make_initializer takes a cf.data.Dataset, got {type(dataset).__name__}")
        g = self._handle.graph
        caps = dataset._captures()
        with g.as_default():
            return g.create_op("MakeIterator", [self._handle] + caps, {"dataset": dataset},
                               name=name or "make_initializer")

    def get_next(self, name: Optional[str] = None) -> Any:
        """Tensors holding the next element (a nest like the dataset's elements); running them
        advances the iterator (OutOfRangeError at the end)."""
        g = self._handle.graph
        with g.as_default():
            op = g.create_op("IteratorGetNext", [self._handle], {}, name=name or "IteratorGetNext")
        outs, leaves, i = list(op.outputs), [], 0
        for s in nest.flatten(self._structure):
            if _sp.is_sparse(s):
                leaves.append(_sp.SparseTensor(outs[i], outs[i + 1], outs[i + 2]))
                i += 3
            else:
                leaves.append(outs[i])
                i += 1
        return nest.pack_sequence_as(self._structure, leaves)

    def string_handle(self, name: Optional[str] = None) -> Any:
        """A string scalar naming this iterator in the Session that runs it: fetch it once and
        feed it to the placeholder of `Iterator.from_string_handle` (feedable iterators)."""
        g = self._handle.graph
        with g.as_default():
            return g.create_op("IteratorToStringHandle", [self._handle], {},
                               name=name or "IteratorToStringHandle").outputs[0]

    @staticmethod
    def from_string_handle(string_handle: Any, output_types: Any, output_shapes: Any = None,
                           output_classes: Any = None) -> "Iterator":
        """An iterator that, each run, is the iterator whose `string_handle()` value is fed to
        `string_handle` (a scalar string placeholder): one get_next for a training and a
        validation iterator, switched by the feed.  Elements of other types or incompatible
        shapes are refused when run."""
        structure = _structure_of(output_types, output_shapes, output_classes)
        flat = nest.flatten(structure)
        flat_types, flat_shapes = [t.dtype for t in flat], [t.shape for t in flat]
        h = _g.convert_to_tensor(string_handle)
        g = h.graph
        with g.as_default():
            handle = g.create_op("IteratorFromStringHandleV2", [h],
                                 {"output_types": tuple(flat_types), "output_shapes": tuple(flat_shapes),
                                  "output_sparse": tuple(_sp.is_sparse(s) for s in flat)},
                                 name="IteratorFromStringHandle").outputs[0]
        return Iterator(handle, None, structure)

    @property
    def output_types(self) -> Any:
        return nest.pack_sequence_as(self._structure, [s.dtype for s in nest.flatten(self._structure)])

    @property
    def output_shapes(self) -> Any:
        return nest.pack_sequence_as(self._structure, [s.shape for s in nest.flatten(self._structure)])

    @property
    def output_classes(self) -> Any:
        return nest.pack_sequence_as(self._structure, [_g.Tensor for _ in nest.flatten(self._structure)])

    @property
    def element_spec(self) -> Any:
        return self._structure


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """tf.compat.v1.data.make_one_shot_iterator."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset: Dataset, shared_name: Optional[str] = None) -> Iterator:
    """tf.compat.v1.data.make_initializable_iterator."""
    return dataset.make_initializable_iterator(shared_name)
