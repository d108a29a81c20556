"""The pieces under tf.data's Datasets: element specs (TensorSpec), the per-iterator
IterationContext, and the functions given to map/filter/... traced into graphs of their own
and run by private sessions (data/dataset.py describes how a pipeline runs)."""
from __future__ import annotations

import hashlib
import itertools
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph import nest
from ..graph.ops.constant_op import placeholder
from ..graph.shape import TensorShape
from ..graph.type_spec import TensorSpec  # noqa: F401  (its home: element specs are tf.TensorSpecs)
from ..runtime.session import Session
from . import sparse_elements as _sp

__all__ = ["TensorSpec", "IterationContext", "Captures", "trace_into", "Element"]

Element = Tuple[np.ndarray, ...]  # the flat components of one element
_IDS = itertools.count()


def _most_specific_compatible(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.rank is None or b.rank is None or a.rank != b.rank:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims)])


def _normalize_structure(s: Any) -> Any:
    """Lists become tuples, as TensorFlow treats a list element as a tuple."""
    if isinstance(s, list):
        return tuple(_normalize_structure(x) for x in s)
    if isinstance(s, tuple) and not hasattr(s, "_fields"):
        return tuple(_normalize_structure(x) for x in s)
    if isinstance(s, dict):
        return type(s)((k, _normalize_structure(v)) for k, v in s.items())
    return s


def _frozen(a: np.ndarray) -> np.ndarray:
    """A private, read-only C-ordered copy: slices handed out can never be changed by anyone."""
    out = np.array(a, order="C", copy=True)
    out.setflags(write=False)
    return out


def _digest(a: np.ndarray) -> str:
    data = repr(a.tolist()).encode() if a.dtype == object else np.ascontiguousarray(a).tobytes()
    return f"{a.dtype}{a.shape}:" + hashlib.sha256(data).hexdigest()[:16]


# -- the run-time side ---------------------------------------------------------------------------------

class IterationContext:
    """What one run of a pipeline (an iterator's initialization) needs: the values of the
    dataset's graph tensors, the Session's resource container (the private sessions of
    dataset functions live there), and the run's own state (passes of each shuffle)."""

    ignore_errors = False  # under tf.data.experimental.ignore_errors: map, filter, batch skip a failing element

    def __init__(self, resources: Any, captured: Dict[_g.Tensor, np.ndarray]):
        self.resources = resources
        self.captured = captured
        self.state: Dict[Any, Any] = {}
        # the root of the run's unseeded random draws, drawn at the first one; a restored
        # iterator sets the saved one so its replay draws what the saved run drew
        self.entropy: Optional[int] = None
        self._draws = 0

    def unseeded_rng(self) -> np.random.Generator:
        """A generator for an op with neither graph nor op seed: a new stream per call, all
        derived from this run's entropy (so a replay of the run from its start repeats them)."""
        if self.entropy is None:
            self.entropy = int(np.random.SeedSequence().entropy % (1 << 63))
        self._draws += 1
        return np.random.default_rng([self.entropy, self._draws])

    def value(self, v: Any) -> Any:
        return self.captured[v] if isinstance(v, _g.Tensor) else v

    def int_value(self, v: Any, what: str) -> int:
        x = np.asarray(self.value(v))
        if x.shape != () or x.dtype.kind not in "iu":
            raise InvalidArgumentError(f"{what} must be an integer scalar, got {x.dtype} of shape {x.shape}")
        return int(x)


class Captures:
    """The tensors of enclosing graphs a dataset function uses (TF's captured inputs): while
    the function is traced, each one given to an op becomes a placeholder of the private
    graph; the dataset reads the outer tensors' values where it reads its own (when the
    iterator is initialized, or per element inside flat_map and interleave) and feeds them."""

    def __init__(self, graph: _g.Graph):
        self.graph = graph
        self.outer: List[_g.Tensor] = []
        self.inner: List[_g.Tensor] = []

    def __call__(self, t: _g.Tensor) -> _g.Tensor:
        for o, p in zip(self.outer, self.inner):
            if o is t:
                return p
        g = self.graph
        ctx = g._get_control_flow_context()
        g._set_control_flow_context(None)  # fed once per call, outside any loop of the function
        try:
            p = placeholder(t.dtype, t.shape, name=f"capture{len(self.inner)}")
        finally:
            g._set_control_flow_context(ctx)
        self.outer.append(t)
        self.inner.append(p)
        return p

    def values(self, ctx: "IterationContext") -> List[Any]:
        return [ctx.captured[t] for t in self.outer]


def trace_into(graph: _g.Graph, what: str, in_structure: Any, fn: Callable[..., Any]) -> Tuple[List[_g.Tensor], Captures, Any]:
    """Traces fn on placeholders for an element of `in_structure` into `graph`: (the
    placeholders, the Captures it made, fn's result)."""
    flat = nest.flatten(in_structure)
    caps = Captures(graph)
    with graph.as_default(), graph.name_scope(f"Dataset_{what}"):
        made = [_sp.graph_arg(s, f"arg{i}") for i, s in enumerate(flat)]  # a SparseTensor for a sparse one
        args = [p for _, ps in made for p in ps]
        packed = nest.pack_sequence_as(in_structure, [a for a, _ in made])
        graph._capture = caps
        try:
            out = fn(*packed) if type(packed) is tuple else fn(packed)
        finally:
            graph._capture = None
    return args, caps, out


class _PrivateFunction:
    """A Python function traced once into a private graph (map, filter, flat_map, ...), run
    by a private Session of that graph kept with the iterator's resources."""

    def __init__(self, fn: Callable[..., Any], in_structure: Any, what: str, outer: Optional[_g.Graph]):
        if not callable(fn):
            raise TypeError(f"Dataset.{what} needs a function, got {type(fn).__name__}")
        self.what = what
        self.graph = _g.Graph()
        self.graph.seed = outer.seed if outer is not None else None  # random ops follow the outer graph's seed
        self.args, self.captures, self.traced = trace_into(self.graph, what, in_structure, fn)
        self.in_specs = nest.flatten(in_structure)
        self.id = next(_IDS)

    def _bound(self, ctx: IterationContext, fetches: List[_g.Tensor]) -> Callable[..., List[Any]]:
        """fn(*flat element) -> the values of `fetches`, the captured outer values fed too."""
        def make() -> Callable[..., List[Any]]:
            if not fetches:
                return lambda *a: []
            sess = Session(graph=self.graph, config={"device": "/cpu:0"})
            sess._strings_as_bytes = False  # the values stay inside the pipeline: collflow's str
            tables = self.graph.get_collection(_g.GraphKeys.TABLE_INITIALIZERS)
            if tables:  # lookup tables made inside the function: TF initializes them with it
                sess.run(tables, dict(zip(self.captures.inner, self.captures.values(ctx))))
            return sess.make_callable(fetches, feed_list=self.args + self.captures.inner)
        call = ctx.resources.get_or_create("dataset_function", f"dataset_function:{self.id}", make)
        if any(_sp.is_sparse(s) for s in self.in_specs):  # a sparse component is fed as its three parts
            plain, specs = call, self.in_specs
            call = lambda *el: plain(*_sp.expand(specs, el))  # noqa: E731
        if not self.captures.outer:
            return call  # type: ignore[no-any-return]
        extra = self.captures.values(ctx)
        return lambda *el: call(*el, *extra)


class _TracedFunction(_PrivateFunction):
    """A Python function on element tensors, giving element tensors."""

    def __init__(self, fn: Callable[..., Any], in_structure: Any, what: str, outer: Optional[_g.Graph]):
        super().__init__(fn, in_structure, what, outer)
        out = self.traced
        with self.graph.as_default(), self.graph.name_scope(f"Dataset_{what}"):
            if out is None:
                raise InvalidArgumentError(f"the function given to Dataset.{what} returned None")
            out = _normalize_structure(out)
            specs, self.outputs = [], []
            for x in nest.flatten(out):
                spec, ts = _sp.output_spec(x)
                if spec is None:
                    t = _g.convert_to_tensor(x)
                    ts = [t if t.graph is self.graph else self.captures(t)]  # an outer tensor returned as it is
                    spec = TensorSpec(ts[0].shape, ts[0].dtype)
                specs.append(spec)
                self.outputs.extend(ts)
        self.graph.finalize()
        self.out_specs = specs
        self.out_structure = nest.pack_sequence_as(out, specs)

    def caller(self, ctx: IterationContext) -> Callable[..., List[Any]]:
        """fn(*flat element) -> flat outputs, run by this Session's private session of the graph."""
        call = self._bound(ctx, self.outputs)
        if not any(_sp.is_sparse(s) for s in self.out_specs):
            return call
        specs = self.out_specs
        return lambda *el: _sp.regroup(specs, call(*el))

    def describe(self) -> str:
        return f"{self.what}:{self.graph.fingerprint()[:16]}"
