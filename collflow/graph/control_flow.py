"""cf.cond and cf.while_loop, built from Switch/Merge/Enter/Exit/NextIteration.

While a branch or loop body is being built, a context on the graph intercepts every new
op's inputs: a cond branch routes outside tensors through a Switch on the predicate (so an
untaken branch is dead, and gradients leave the branch through a Merge); a loop body
passes outside tensors through a constant Enter into the loop's frame, once per tensor.
Ops with no inputs created inside get a control input from the branch/loop pivot, so they
too run only when the branch is taken, and once per iteration.

Gradients: cond needs nothing special (Switch's gradient is a Merge, Merge's a Switch).  A
while loop is differentiated as a whole: the forward loop pushes each iteration's loop
variables on a per-run stack (pruned away unless a gradient needs it); the backward loop
runs the same number of iterations, pops them, rebuilds the body from them and
back-propagates through it, accumulating gradients of the tensors the body captured.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from . import graph as _g
from . import nest
from .indexed_slices import IndexedSlices
from .ops import control_flow_ops as cfo
from .ops import array_ops, math_ops
from .ops.constant_op import constant, identity
from .ops.op_util import make_op
from .registry import register_gradient
from .shape import TensorShape, as_shape

__all__ = ["cond", "while_loop"]


class ControlFlowContext:
    """Base: knows its outer context and which ops were built inside it."""

    def __init__(self, graph: _g.Graph):
        self.graph = graph
        self.outer = graph._get_control_flow_context()
        self.ops: List[_g.Operation] = []

    def contains(self, ctx: Any) -> bool:
        """True when `ctx` is this context or nested inside it."""
        while ctx is not None:
            if ctx is self:
                return True
            ctx = ctx.outer
        return False

    def is_external(self, t: _g.Tensor) -> bool:
        return not self.contains(t.op._ctx)

    @contextlib.contextmanager
    def entered(self) -> Iterator["ControlFlowContext"]:
        prev = self.graph._get_control_flow_context()
        self.graph._set_control_flow_context(self)
        try:
            yield self
        finally:
            self.graph._set_control_flow_context(prev)

    @contextlib.contextmanager
    def in_outer(self) -> Iterator[None]:
        prev = self.graph._get_control_flow_context()
        self.graph._set_control_flow_context(self.outer)
        try:
            yield
        finally:
            self.graph._set_control_flow_context(prev)

    def add_op(self, op: _g.Operation) -> None:
        self.ops.append(op)
        if not op.inputs and not op.control_inputs and self.pivot is not None:
            # a constant or stateful source inside: tie it to the branch / iteration
            op._add_control_input(self.pivot.op)

    pivot: Optional[_g.Tensor] = None

    def process_inputs(self, tensors: List[_g.Tensor]) -> List[_g.Tensor]:  # pragma: no cover
        raise NotImplementedError


class CondContext(ControlFlowContext):
    """One branch of a cond: outside tensors come in through Switch(t, pred)[branch]."""

    def __init__(self, graph: _g.Graph, pred: _g.Tensor, pivot: _g.Tensor, branch: int):
        super().__init__(graph)
        self.pred = pred
        self.pivot = pivot
        self.branch = branch
        self._switched: Dict[_g.Tensor, _g.Tensor] = {}

    def process_inputs(self, tensors: List[_g.Tensor]) -> List[_g.Tensor]:
        out = []
        for t in tensors:
            if self.is_external(t) and t is not self.pred and t is not self.pivot:
                s = self._switched.get(t)
                if s is None:
                    with self.in_outer():
                        s = cfo.switch(t, self.pred, name="switch_in")[self.branch]
                    s.op._ctx = self  # the chosen output lives in this branch
                    self._switched[t] = s
                t = s
            out.append(t)
        return out


class WhileContext(ControlFlowContext):
    """A loop body: outside tensors enter the frame once, as loop invariants."""

    def __init__(self, graph: _g.Graph, frame_name: str, parallel_iterations: int):
        super().__init__(graph)
        self.frame_name = frame_name
        self.parallel_iterations = parallel_iterations
        self.captured: Dict[_g.Tensor, _g.Tensor] = {}
        self.pivot = None
        self.loop: Any = None

    def capture(self, t: _g.Tensor) -> _g.Tensor:
        """The in-frame version of outside tensor `t` (a constant Enter, made once)."""
        e = self.captured.get(t)
        if e is None:
            with self.in_outer():
                e = cfo.enter(t, self.frame_name, is_constant=True,
                              parallel_iterations=self.parallel_iterations, name="capture")
            e.op._ctx = self
            self.captured[t] = e
        return e

    def process_inputs(self, tensors: List[_g.Tensor]) -> List[_g.Tensor]:
        return [self.capture(t) if self.is_external(t) else t for t in tensors]

    def add_op(self, op: _g.Operation) -> None:
        super().add_op(op)
        # an op fed only by loop invariants would also run in the exit iteration: pin it to the pivot
        if op.inputs and self.pivot is not None and not op.control_inputs:
            caps = set(map(id, self.captured.values()))
            if all(id(t) in caps for t in op.inputs):
                op._add_control_input(self.pivot.op)


# -- cond -------------------------------------------------------------------------------


def cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any], name: Optional[str] = None) -> Any:
    """Runs true_fn's ops if pred else false_fn's; only the taken branch executes.

    Both functions return the same structure of tensors; the result has that structure.
    """
    g = _g.get_default_graph()
    pred = _g.convert_to_tensor(pred)
    g = pred.graph
    if pred.dtype != _dt.bool_ or pred.shape.rank not in (None, 0):
        raise InvalidArgumentError(f"cond: pred must be a scalar bool tensor, got {pred.dtype.name} {pred.shape}")
    with g.as_default(), g.name_scope(name or "cond"):
        pf, pt = cfo.switch(pred, pred, name="switch_pred")
        results = []
        for branch, fn, p in ((1, true_fn, pt), (0, false_fn, pf)):
            pivot = identity(p, name="pivot_t" if branch else "pivot_f")
            ctx = CondContext(g, pred, pivot, branch)
            pivot.op._ctx = ctx
            with ctx.entered():
                r = fn()
                if r is None:
                    raise InvalidArgumentError("cond: true_fn and false_fn must return tensors (got None)")
                flat = [_g.convert_to_tensor(x) for x in nest.flatten(r)]
                # a branch returning an outside tensor as is must still route it through its Switch
                flat = [ctx.process_inputs([x])[0] for x in flat]
            results.append((r, flat))
        (rt, ft), (rf, ff) = results
        try:
            nest.assert_same_structure(rt, rf)
        except ValueError:
            raise InvalidArgumentError(f"cond: true_fn and false_fn return different structures: {rt!r} vs {rf!r}") from None
        merged = []
        for a, b in zip(ft, ff):
            if a.dtype != b.dtype:
                raise InvalidArgumentError(f"cond: branches return different dtypes {a.dtype.name} (true) and "
                                           f"{b.dtype.name} (false)")
            merged.append(cfo.merge([b, a], pred=pred, name="merge")[0])
        return nest.pack_sequence_as(rt, merged)


@register_gradient("Switch")
def _switch_grad(op: _g.Operation, g_false: Any, g_true: Any) -> list:
    # only the taken branch's gradient is live; Merge forwards it
    pred = op.inputs[1]
    gf = _g.convert_to_tensor(g_false) if g_false is not None else None
    gt = _g.convert_to_tensor(g_true) if g_true is not None else None
    return [cfo.merge([gf, gt], pred=pred, name="switch_grad")[0], None]


@register_gradient("Merge")
def _merge_grad(op: _g.Operation, g: Any, _g_index: Any) -> list:
    pred = op.attrs.get("pred")
    if pred is None:
        raise InvalidArgumentError("gradient of a raw loop Merge: build loops with cf.while_loop", op)
    gf, gt = cfo.switch(_g.convert_to_tensor(g), pred, name="merge_grad")
    return [gf, gt]


# -- while_loop -------------------------------------------------------------------------


class _Loop:
    """What the gradient of a while loop needs to know about its forward loop."""

    def __init__(self) -> None:
        self.ctx: Optional[WhileContext] = None
        self.body: Optional[Callable] = None
        self.structure: Any = None
        self.var_inputs: List[_g.Tensor] = []      # initial values of the user's loop variables
        self.body_inputs: List[_g.Tensor] = []     # loop variables as the body sees them
        self.exits: List[_g.Tensor] = []           # user's loop variables after the loop
        self.counter_exit: Optional[_g.Tensor] = None
        self.stack_exit: Optional[_g.Tensor] = None
        self.name = ""

    def fingerprint_repr(self) -> str:
        return f"loop:{self.name}"

    @property
    def external_inputs(self) -> List[_g.Tensor]:
        return list(self.var_inputs) + list(self.ctx.captured)  # type: ignore[union-attr]


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10,
               maximum_iterations: Any = None, name: Optional[str] = None) -> Any:
    """Repeats `body` while `cond` holds, inside the graph (one frame per loop).

    loop_vars: a (nested) structure of tensors; body returns the same structure.
    shape_invariants: per-variable shapes allowed to change across iterations (None dims).
    maximum_iterations: stop after this many iterations at most.
    """
    flat_init = [_g.convert_to_tensor(v) for v in nest.flatten(loop_vars)]
    if not flat_init:
        raise InvalidArgumentError("while_loop: loop_vars must not be empty")
    g = flat_init[0].graph
    if shape_invariants is not None:
        inv = [as_shape(s) for s in _flatten_shapes(shape_invariants)]
        if len(inv) != len(flat_init):
            raise InvalidArgumentError(f"while_loop: {len(inv)} shape_invariants for {len(flat_init)} loop variables")
    else:
        inv = [t.shape for t in flat_init]
    for i, (t, s) in enumerate(zip(flat_init, inv)):
        if not s.is_compatible_with(t.shape):
            raise InvalidArgumentError(f"while_loop: loop variable {i} has shape {t.shape}, incompatible with its "
                                       f"shape invariant {s}")
    loop = _Loop()
    outer_ctrl = g._current_control_inputs()
    # control dependencies of the caller apply to the loop's Enter ops only: an edge from
    # the outer frame into the body could never be satisfied inside the frame
    with g.as_default(), g.control_dependencies(None), g.name_scope(name or "while") as scope:
        frame = scope.rstrip("/")
        loop.name = frame
        ctx = WhileContext(g, frame, parallel_iterations)
        ctx.loop = loop
        loop.ctx = ctx
        loop.body = body
        loop.structure = loop_vars
        loop.var_inputs = flat_init
        n = len(flat_init)
        with g.control_dependencies(None):
            counter0 = constant(0, dtype=_dt.int32, name="counter_init")
            stack0 = make_op("StackCreate", [], name="stack").outputs[0]
        all_init = flat_init + [counter0, stack0]
        all_inv = inv + [TensorShape(()), TensorShape(())]
        enters = []
        for t in all_init:
            e = cfo.enter(t, frame, is_constant=False, parallel_iterations=parallel_iterations, name="enter")
            e.op._ctx = ctx
            for c in outer_ctrl:
                e.op._add_control_input(c)
            enters.append(e)
        merges = []
        for e, s in zip(enters, all_inv):
            m = cfo.merge([e, e], shape=s, name="merge")[0]
            m.op._ctx = ctx
            merges.append(m)
        with ctx.entered():
            # constants in cond run once per iteration: tie them to the first Merge
            ctx.pivot = merges[0]
            vars_struct = nest.pack_sequence_as(loop_vars, merges[:n])
            c = cond(*_as_args(vars_struct))
            c = _g.convert_to_tensor(c)
            if c.dtype != _dt.bool_ or c.shape.rank not in (None, 0):
                raise InvalidArgumentError(f"while_loop: cond must return a scalar bool, got {c.dtype.name} {c.shape}")
            if maximum_iterations is not None:
                mx = _g.convert_to_tensor(maximum_iterations, dtype=_dt.int32)
                c = math_ops.logical_and(c, math_ops.less(merges[n], mx))
            lc = cfo.loop_cond(c, name="loop_cond")
            switches = [cfo.switch(m, lc, name="switch") for m in merges]
            ctx.pivot = identity(cfo.switch(lc, lc, name="switch_pivot")[1], name="pivot")
            body_in = [identity(sw[1], name="body_in") for sw in switches]
            loop.body_inputs = body_in[:n]
            out = body(*_as_args(nest.pack_sequence_as(loop_vars, body_in[:n])))
            if n == 1 and not isinstance(loop_vars, (list, tuple, dict)) and isinstance(out, (list, tuple)) and len(out) == 1:
                out = out[0]
            elif isinstance(loop_vars, (list, tuple)) and len(loop_vars) == 1 and not isinstance(out, (list, tuple, dict)):
                out = type(loop_vars)([out]) if not hasattr(loop_vars, "_fields") else out  # as TensorFlow allows
            try:
                nest.assert_same_structure(loop_vars, out)
            except ValueError:
                raise InvalidArgumentError(f"while_loop: body must return the structure of loop_vars "
                                           f"({loop_vars!r}), got {out!r}") from None
            flat_out = [ctx.process_inputs([_g.convert_to_tensor(o)])[0] for o in nest.flatten(out)]
            for i, (o, t, s) in enumerate(zip(flat_out, flat_init, inv)):
                if o.dtype != t.dtype:
                    raise InvalidArgumentError(f"while_loop: loop variable {i} enters as {t.dtype.name} but the body "
                                               f"returns {o.dtype.name}")
                if not s.is_compatible_with(o.shape):
                    raise InvalidArgumentError(
                        f"while_loop: loop variable {i} has shape {s} entering the loop but shape {o.shape} after "
                        "one iteration; pass shape_invariants (with None for the dimensions that change) to allow it")
            counter_next = math_ops.add(body_in[n], constant(1, dtype=_dt.int32), name="counter_next")
            # save this iteration's variables for the backward loop (pruned unless a gradient runs)
            push = make_op("StackPush", [body_in[n + 1]] + body_in[:n], name="stack_push").outputs[0]
            nexts = [cfo.next_iteration(o, name="next") for o in flat_out + [counter_next, push]]
        for m, nx in zip(merges, nexts):
            m.op._update_input(1, nx)
        exits = []
        for sw in switches:
            x = cfo.exit(sw[0], name="exit")
            x.op._ctx = ctx.outer
            x.op.attrs["loop"] = loop
            exits.append(x)
        for e in enters:
            e.op.attrs["loop"] = loop
        loop.exits = exits[:n]
        loop.counter_exit = exits[n]
        loop.stack_exit = exits[n + 1]
        return nest.pack_sequence_as(loop_vars, exits[:n])


def _as_args(struct: Any) -> list:
    return list(struct) if isinstance(struct, (list, tuple)) and not hasattr(struct, "_fields") else [struct]


def _flatten_shapes(s: Any) -> list:
    if isinstance(s, TensorShape) or s is None:
        return [s]
    if isinstance(s, dict):
        return [x for k in sorted(s) for x in _flatten_shapes(s[k])]
    if isinstance(s, (list, tuple)) and (len(s) == 0 or not all(isinstance(d, int) or d is None for d in s)):
        return [x for e in s for x in _flatten_shapes(e)]
    return [s]


def loop_of(op: _g.Operation) -> Optional[_Loop]:
    """The while loop an Exit or Enter op belongs to (None for other ops)."""
    if op.type in ("Exit", "Enter"):
        loop = op.attrs.get("loop")
        if loop is None and op.type == "Enter":
            loop = getattr(op._ctx, "loop", None)  # an Enter capturing an outside tensor
        return loop
    return None


def while_loop_gradient(loop: _Loop, exit_grads: List[Any]) -> List[Any]:
    """Gradients for loop.external_inputs given gradients of loop.exits (None allowed)."""
    from .gradients import gradients as _gradients
    fl = [i for i, t in enumerate(loop.var_inputs) if t.dtype.is_floating]
    captured = [t for t in loop.ctx.captured if t.dtype.is_floating]  # type: ignore[union-attr]
    g0 = []
    for i in fl:
        gi = exit_grads[i]
        g0.append(array_ops.zeros_like(loop.exits[i]) if gi is None else _g.convert_to_tensor(gi))
    acc0 = [array_ops.zeros_like(t) for t in captured]
    dtypes = [t.dtype for t in loop.body_inputs]
    shapes = [t.shape for t in loop.body_inputs]

    def bcond(k: Any, *rest: Any) -> Any:
        return math_ops.greater(k, constant(0, dtype=_dt.int32))

    stack = loop.stack_exit

    def bbody(k: Any, *rest: Any) -> Any:
        gvars = list(rest[:len(fl)])
        accs = list(rest[len(fl):])
        idx = k - constant(1, dtype=_dt.int32)
        vals = make_op("StackRead", [stack, idx], {"dtypes": dtypes, "shapes": shapes}, name="stack_read").outputs
        bctx = _g.get_default_graph()._get_control_flow_context()
        out = loop.body(*_as_args(nest.pack_sequence_as(loop.structure, list(vals))))
        flat_out = [_g.convert_to_tensor(o) for o in nest.flatten(out)]
        inner_caps = [bctx.capture(t) for t in captured]
        ys = [flat_out[i] for i in fl]
        xs = [vals[i] for i in fl] + inner_caps
        grads = _gradients(ys, xs, grad_ys=gvars) if ys else [None] * len(xs)
        new_g = []
        for j, i in enumerate(fl):
            gj = grads[j]
            new_g.append(array_ops.zeros_like(vals[i]) if gj is None else _g.convert_to_tensor(gj))
        new_acc = []
        for j, a in enumerate(accs):
            gj = grads[len(fl) + j]
            new_acc.append(a if gj is None else a + _g.convert_to_tensor(gj))
        return [idx] + new_g + new_acc

    res = while_loop(bcond, bbody, [loop.counter_exit] + g0 + acc0, name="while_grad")
    res = list(res)
    var_grads: List[Any] = [None] * len(loop.var_inputs)
    for j, i in enumerate(fl):
        var_grads[i] = res[1 + j]
    cap_grads = {t: res[1 + len(fl) + j] for j, t in enumerate(captured)}
    return var_grads + [cap_grads.get(t) for t in loop.ctx.captured]  # type: ignore[union-attr]
