"""Symbolic reverse-mode differentiation: `gradients(ys, xs, grad_ys)`.

The backward pass is built from the same ops as the forward pass (so it runs through the
same kernels and devices and can itself be differentiated).  Ops are visited in reverse
creation order, which is a reverse topological order of a graph without loops; each op's
gradient function receives the summed gradients of its outputs.  Gradients of gathers stay
IndexedSlices until something needs them dense.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Set, Union

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, UnimplementedError
from . import graph as _g
from .indexed_slices import IndexedSlices
from .shape import as_shape
from .registry import named_gradient


def loop_of(op: Any) -> Any:
    from .control_flow import loop_of as _loop_of
    return _loop_of(op)


def while_loop_gradient(loop: Any, exit_grads: list) -> list:
    from .control_flow import while_loop_gradient as _wlg
    return _wlg(loop, exit_grads)

__all__ = ["gradients", "aggregate_gradients"]

GradLike = Union[_g.Tensor, IndexedSlices, None]


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _as_source(x: Any) -> _g.Tensor:
    h = getattr(x, "handle", None)
    if isinstance(h, _g.Tensor):  # a Variable: differentiate w.r.t. all its reads
        return h
    if isinstance(x, _g.Tensor):
        return x
    raise TypeError(f"gradients: xs must be Tensors or Variables, got {type(x).__name__}")


def _zeros_for(t: _g.Tensor) -> Optional[_g.Tensor]:
    """The zero gradient of an output nothing differentiated (a cond branch not using a value):
    zeros of its shape, or for a variable handle (a fresh read switched into a branch) zeros of
    the variable's value; None for other dtypes."""
    from .ops import array_ops
    if t.dtype.is_floating or t.dtype.is_complex:
        return array_ops.zeros_like(t)
    if t.dtype == _dt.resource:
        from .ops.state_ops import variable_dtype_shape
        dt, shp = variable_dtype_shape(t)
        return t.graph.create_op("ZerosLikeVariable", [t], {"dtype": dt, "shape": shp}, name="zeros_like").outputs[0]
    return None


def _unconnected_zeros(x: _g.Tensor) -> _g.Tensor:
    """TF's zeros_like(x) for unconnected_gradients="zero", of any dtype (int xs too): zeros of
    a static shape need no value of x, so an uninitialized variable is not read."""
    from .ops import array_ops
    if x.dtype == _dt.resource:
        from .ops.state_ops import variable_dtype_shape
        dt, shp = variable_dtype_shape(x)
        shp = as_shape(shp)
        if shp.is_fully_defined():
            return array_ops.zeros(shp.as_list(), dt)
        return _zeros_for(x)  # zeros of the variable's run-time value
    if x.shape.is_fully_defined():
        return array_ops.zeros(x.shape.as_list(), x.dtype)
    return array_ops.zeros_like(x)


def used_gradient(grad: Any, t: _g.Tensor) -> Optional[_g.Tensor]:
    """grad (the gradient reaching output t of a multi-output op) as a tensor, or None where
    it is only the zeros filled in above because nothing differentiated t: a gradient function
    can then skip that term's work instead of adding zeros."""
    if grad is None:
        return None
    grad = _g.convert_to_tensor(grad)
    op = grad.op
    if op.type == "ZerosLike" and op.inputs and op.inputs[0].name == t.name and not op.attrs.get("dtype"):
        return None
    return grad


def _differentiable_dtype(t: _g.Tensor) -> bool:
    # complex tensors too: TF differentiates them (graph/ops/complex_ops.py has the convention)
    return t.dtype.is_floating or t.dtype.is_complex or t.dtype == _dt.resource


class AggregationMethod:
    """tf.AggregationMethod: how contributions to one gradient are summed.  Every method
    gives the sum (collflow adds them with one AddN, or concatenates IndexedSlices)."""
    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class UnconnectedGradients:
    """tf.UnconnectedGradients: what gradients() gives for an x that ys do not depend on."""
    NONE = "none"
    ZERO = "zero"


def gradients(ys: Any, xs: Any, grad_ys: Any = None, name: str = "gradients",
              colocate_gradients_with_ops: bool = False, gate_gradients: bool = False,
              aggregation_method: Any = None, stop_gradients: Any = None,
              unconnected_gradients: Any = UnconnectedGradients.NONE) -> List[GradLike]:
    """d(sum ys)/d(xs): one entry per x (None where x does not affect ys), TF1's signature.

    ys: Tensor or list; xs: Tensors or Variables; grad_ys: initial gradients (default ones).
    stop_gradients: tensors treated as constants.  unconnected_gradients="zero" gives zeros
    (of x's shape) instead of None.  colocate_gradients_with_ops (gradient ops on their
    forward op's device: what collflow's placer does anyway) and aggregation_method (every
    method sums) are accepted for TF1's programs and change nothing; gate_gradients gates each
    op's input gradients on each other with a tf.tuple, as TF1 (values unchanged, names as TF1's).
    """
    if aggregation_method not in (None, AggregationMethod.ADD_N, AggregationMethod.EXPERIMENTAL_TREE,
                                  AggregationMethod.EXPERIMENTAL_ACCUMULATE_N):
        raise InvalidArgumentError(f"gradients: invalid aggregation_method {aggregation_method!r}")
    mode = getattr(unconnected_gradients, "value", unconnected_gradients)
    if mode not in (UnconnectedGradients.NONE, UnconnectedGradients.ZERO):
        raise InvalidArgumentError(f"gradients: unconnected_gradients must be 'none' or 'zero', got "
                                   f"{unconnected_gradients!r}")
    out = _gradients(ys, xs, grad_ys, name, stop_gradients, bool(gate_gradients))
    if mode == UnconnectedGradients.ZERO and any(gr is None for gr in out):
        xs_l = [_as_source(x) for x in _as_list(xs)]
        with xs_l[0].graph.as_default():
            out = [gr if gr is not None else _unconnected_zeros(x) for gr, x in zip(out, xs_l)]
    return out


GATE_ATTR = "_gradient_gate"


def _mark_gates(grads: List[GradLike]) -> None:
    """Marks the gate's Identity ops: they order pure gradient ops only, so the plan may read
    through them (runtime/passes.py) and keep fusing a weight-gradient product with its
    update; a marked Identity that is fetched still gives the gated value."""
    for gr in grads:
        if gr is None:
            continue
        for t in (gr.values, gr.indices) if isinstance(gr, IndexedSlices) else (gr,):
            if isinstance(t, _g.Tensor) and t.op.type == "Identity":
                t.op.attrs[GATE_ATTR] = True


def _gradients(ys: Any, xs: Any, grad_ys: Any, name: str, stop_gradients: Any,
               gate_gradients: bool = False, only: Optional[Set[_g.Operation]] = None,
               capture: bool = False) -> List[GradLike]:
    """gradients()' work; `only` (a GradientTape's recorded ops) limits the backward pass to those ops;
    capture: ys and xs are outside the loop body being built, the gradient ops inside it (a jacobian's
    rows), reading the forward tensors through the body's captures."""
    ys_l = [_g.convert_to_tensor(y) if not isinstance(y, _g.Tensor) else y for y in _as_list(ys)]
    xs_l = [_as_source(x) for x in _as_list(xs)]
    gys = _as_list(grad_ys) if grad_ys is not None else [None] * len(ys_l)
    if len(gys) != len(ys_l):
        raise InvalidArgumentError(f"gradients: {len(ys_l)} ys but {len(gys)} grad_ys")
    if not ys_l:
        return [None] * len(xs_l)
    g = ys_l[0].graph
    for t in ys_l + xs_l:
        if t.graph is not g:
            raise InvalidArgumentError(f"gradients: {t.name} is in another graph than {ys_l[0].name}")
    ctx = g._get_control_flow_context()
    if ctx is not None and getattr(ctx, "grad_of", None) is None and not capture:
        # called inside a loop body or cond branch (TF1 allows it, e.g. opt.minimize in a body):
        # an outside x is seen there through its Enter or Switch, which is what ys depend on
        xs_l = ctx.process_inputs(xs_l)
    stops: Set[_g.Operation] = {(_as_source(s)).op for s in _as_list(stop_gradients)} if stop_gradients is not None else set()

    # ops on some path from an x to a y; a while loop counts as one node (its Exit ops),
    # whose inputs are the loop's initial values and the outside tensors its body captured
    back: Set[_g.Operation] = set()
    stack = [y.op for y in ys_l]
    while stack:
        op = stack.pop()
        if op in back:
            continue
        back.add(op)
        loop = loop_of(op) if op.type == "Exit" else None
        for t in (loop.external_inputs if loop is not None else op.inputs):
            stack.append(t.op)
    # forward from xs only through tensors that can carry a gradient (TF's IsTrainable: float,
    # complex, resource): an op reached only through integers (tf.shape(x) feeding a random
    # op's shape) is not between, so a missing gradient there raises nothing, as in TF
    between: Set[_g.Operation] = set()
    frontier: List[_g.Operation] = []
    for x in xs_l:
        if _differentiable_dtype(x):
            frontier.extend(c for c in x._consumers if c in back or c.type == "Enter")
    while frontier:
        op = frontier.pop()
        if op in between or op in stops or (only is not None and op not in only):
            continue
        if op.type == "NextIteration":
            continue  # gradients within one iteration: a path never crosses into the next
        loop = loop_of(op) if op.type == "Enter" else None
        if loop is not None:
            frontier.extend(x.op for x in loop.exits if x.op in back)
            continue
        if op not in back:
            continue
        between.add(op)
        for t in op.outputs:
            if _differentiable_dtype(t):
                frontier.extend(c for c in t._consumers if c in back or c.type == "Enter")

    from .control_flow import imported_control_flow
    imported = sorted(op.name for op in between if imported_control_flow(op))
    if imported:
        raise UnimplementedError(
            f"gradients: the path from xs to ys crosses a cond or while_loop imported from a meta graph "
            f"({', '.join(imported[:3])}{', ...' if len(imported) > 3 else ''}); collflow builds the gradient of "
            "a control-flow construct from its Python construction, which a meta graph does not carry. Build "
            "the gradient (e.g. the train_op) before exporting, or rebuild the model in Python")
    grads: Dict[_g.Tensor, List[GradLike]] = {}
    from .ops import array_ops
    with g.as_default(), g.name_scope(name), g.control_dependencies(None):
        for y, gy in zip(ys_l, gys):
            if gy is None:
                if not y.dtype.is_floating:
                    continue  # an integer y carries no gradient: its xs get None, as in TF1
                gy = array_ops.ones_like(y, name="grad_ys")
            elif not isinstance(gy, (_g.Tensor, IndexedSlices)):
                gy = _g.convert_to_tensor(gy, dtype=y.dtype)
            grads.setdefault(y, []).append(gy)

        done_loops: Set[Any] = set()
        for op in sorted(between, key=lambda o: o._id, reverse=True):
            loop = loop_of(op) if op.type == "Exit" else None
            if loop is not None:
                if id(loop) in done_loops:
                    continue
                done_loops.add(id(loop))
                exit_grads = [aggregate_gradients(grads.get(t)) for t in loop.exits]
                if all(gr is None for gr in exit_grads):
                    continue
                with g.name_scope(loop.name.replace("/", "_") + "_grad"):
                    in_grads = while_loop_gradient(loop, exit_grads)
                for t, gi in zip(loop.external_inputs, in_grads):
                    if gi is not None and _differentiable_dtype(t):
                        grads.setdefault(t, []).append(gi)
                continue
            out_grads = [aggregate_gradients(grads.get(t)) for t in op.outputs]
            if all(gr is None for gr in out_grads):
                continue
            od = op.op_def
            grad_fn = od.grad_fn
            override = op.attrs.get("_gradient_op_type")
            if override is not None:  # Graph.gradient_override_map: the function registered under that name
                found, grad_fn = named_gradient(override)
                if not found:
                    raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type}): "
                                      f"gradient_override_map names {override!r}, which tf.RegisterGradient "
                                      "did not register")
                if grad_fn is None:
                    continue
            elif od.differentiable is False:
                continue
            if grad_fn is None:  # TF1's error and type (a local import here once shadowed this name)
                raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type})")
            if len(out_grads) > 1:
                out_grads = [gr if gr is not None else _zeros_for(t) for gr, t in zip(out_grads, op.outputs)]
            # TF1's scope: "<gradients scope>/<op name>_grad", the op's own '/'s kept
            # ("gradients/dense/MatMul_grad/MatMul"), made unique within the gradients scope
            with g.name_scope(g.unique_name(op.name + "_grad") + "/"):
                in_grads = list(grad_fn(op, *out_grads))
                if gate_gradients and sum(gi is not None for gi in in_grads) > 1:
                    # TF1's gate: the op's input gradients become available together, as a
                    # tf.tuple in the op's gradient scope (names ".../tuple/control_dependency_1")
                    from .ops.case_ops import tuple as _tuple
                    with g.device(None):
                        in_grads = _tuple(in_grads)
                    _mark_gates(in_grads)
            if len(in_grads) != len(op.inputs):
                raise UnimplementedError(
                    f"gradient of {op.type} returned {len(in_grads)} gradients for {len(op.inputs)} inputs", op)
            for t, gi in zip(op.inputs, in_grads):
                if gi is None or not _differentiable_dtype(t):
                    continue
                if t.op in between or t in xs_l or t.op in back:
                    grads.setdefault(t, []).append(gi)

        out: List[GradLike] = []
        for x in xs_l:
            out.append(aggregate_gradients(grads.get(x)))
        return out


def aggregate_gradients(gs: Optional[List[GradLike]]) -> GradLike:
    """Sums gradient contributions: IndexedSlices concatenate; mixed ones densify and add."""
    if not gs:
        return None
    gs = [x for x in gs if x is not None]
    if not gs:
        return None
    if len(gs) == 1:
        return gs[0]
    from .ops import array_ops, math_ops
    if all(isinstance(x, IndexedSlices) for x in gs):
        idx = [x.indices for x in gs]
        if len({i.dtype for i in idx}) > 1:  # int32 and int64 indices (two gathers): int64, as TF
            idx = [i if i.dtype == _dt.int64 else math_ops.cast(i, _dt.int64) for i in idx]
        return IndexedSlices(array_ops.concat([x.values for x in gs], 0),
                             array_ops.concat(idx, 0),
                             gs[0].dense_shape, gs[0]._static_shape)
    dense = [_g.convert_to_tensor(x) for x in gs]
    return math_ops.add_n(dense)
