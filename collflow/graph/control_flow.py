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
from ..errors import InvalidArgumentError, UnimplementedError
from . import graph as _g
from . import nest
from .indexed_slices import IndexedSlices
from .ops import control_flow_ops as cfo
from .ops import array_ops, math_ops
from .ops.constant_op import constant, identity
from .ops.op_util import make_op
from .registry import register_gradient
from .shape import TensorShape, as_shape
from .tensor_array import TensorArray

__all__ = ["cond", "while_loop", "ImportedContext", "imported_control_flow"]


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


class ImportedContext(ControlFlowContext):
    """The cond branch or loop body an op imported from a meta graph was built in.

    It marks the op as inside control flow (plans keep such ops out of constant folding and
    deduplication) without the Python-side state a gradient of the construct needs:
    tf.gradients refuses to differentiate through it (see `imported_control_flow`)."""

    def __init__(self, graph: _g.Graph, kind: str, outer: Optional[ControlFlowContext]):
        self.graph = graph
        self.outer = outer
        self.ops = []
        self.kind = kind


def imported_control_flow(op: _g.Operation) -> bool:
    """Whether `op` sits in a cond or while_loop that came from a meta graph."""
    return isinstance(op._ctx, ImportedContext)


class CondContext(ControlFlowContext):
    """One branch of a cond: outside tensors come in through Switch(t, pred)[branch]."""

    def __init__(self, graph: _g.Graph, pred: _g.Tensor, pivot: _g.Tensor, branch: int,
                 pred_here: Optional[_g.Tensor] = None):
        super().__init__(graph)
        self.pred = pred
        self.pivot = pivot
        self.branch = branch
        # the predicate as this branch sees it: switch_pred's output for this branch, dead
        # when the other branch runs (the predicate read as is would stay live there, and
        # the Merge could take a value from the branch not taken)
        self.pred_here = pred_here
        self._switched: Dict[_g.Tensor, _g.Tensor] = {}

    def process_inputs(self, tensors: List[_g.Tensor]) -> List[_g.Tensor]:
        out = []
        for t in tensors:
            if t is self.pred and self.pred_here is not None:
                t = self.pred_here
            elif self.is_external(t) and t is not self.pred and t is not self.pivot:
                s = self._switched.get(t)
                if s is None:
                    # the Switch belongs to the outer context: control dependencies opened
                    # inside the branch apply to the consumer, not to the routing (a
                    # dependency on a branch op would kill the Switch, and with it the
                    # gradient of the branch that was taken)
                    with self.in_outer(), self.graph.control_dependencies(None):
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
        # keyed by the tensor the Enter reads: for a loop nested in another loop (or in a
        # cond) that is the enclosing context's version of the outside tensor, which is what
        # the loop's gradient must hand its captured gradients to
        self.captured: Dict[_g.Tensor, _g.Tensor] = {}
        self._capture_cache: Dict[_g.Tensor, _g.Tensor] = {}
        self._reads: Dict[_g.Tensor, _g.Tensor] = {}  # forward tensor -> its value here (backward loops)
        self._pending_saves: List[Any] = []           # (forward tensor, its StackRead op)
        self.pivot = None
        self.loop: Any = None

    def capture(self, t: _g.Tensor) -> _g.Tensor:
        """The in-frame version of outside tensor `t` (a constant Enter, made once)."""
        e = self._capture_cache.get(t)
        if e is None:
            # outside the body's control dependencies: an edge from an op in the frame to
            # its own Enter could never be satisfied
            with self.in_outer(), self.graph.control_dependencies(None):
                e = cfo.enter(t, self.frame_name, is_constant=True,
                              parallel_iterations=self.parallel_iterations, name="capture")
            e.op._ctx = self
            self._capture_cache[t] = e
            self._capture_cache[e.op.inputs[0]] = e
            self.captured[e.op.inputs[0]] = e
        return e

    # set while a backward loop's body is built: the forward loop it differentiates and
    # the forward iteration this backward iteration stands for
    grad_of: Any = None
    grad_index: Optional[_g.Tensor] = None

    def process_inputs(self, tensors: List[_g.Tensor]) -> List[_g.Tensor]:
        out = []
        for t in tensors:
            if self.grad_of is not None and _frame_ctx(t.op._ctx) is self.grad_of.ctx:
                t = self._forward_value(t)
            elif self.is_external(t):
                t = self.capture(t)
            out.append(t)
        return out

    def _forward_value(self, t: _g.Tensor) -> _g.Tensor:
        """Forward tensor `t` as this backward iteration sees it: the value it had in the
        matching forward iteration (saved on the forward loop's stack), a loop invariant
        entered here, or a constant made again."""
        reads = self._reads
        r = reads.get(t)
        if r is not None:
            return r
        fwd = self.grad_of
        op = t.op
        if op.type == "Enter" and op.attrs.get("is_constant") and op._ctx is fwd.ctx:
            r = self.capture(op.inputs[0])
        elif op.type == "Const":
            with self.graph.control_dependencies(None):
                r = make_op("Const", [], dict(op.attrs), name="fwd_const").outputs[0]
        else:
            # the push is added only if this read turns out to be needed (finish_saves):
            # gradient functions also build gradients for inputs nobody asked about
            with self.graph.control_dependencies(None):
                r = make_op("StackRead", [self.capture(fwd.stack_exit), self.grad_index],
                            {"slot": None, "dtype": t.dtype, "shape": t.shape,
                             "maybe_absent": _on_a_branch(t, fwd.ctx)}, name="saved").outputs[0]
            self._pending_saves.append((t, r.op))
        reads[t] = r
        return r

    def finish_saves(self, outputs: List[_g.Tensor]) -> None:
        """Saves, in the forward loop, the values this backward body's `outputs` read."""
        needed: set = set()
        stack = [t.op for t in outputs]
        while stack:
            op = stack.pop()
            if op in needed or not self.contains(op._ctx):
                continue
            needed.add(op)
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
        for t, read in self._pending_saves:
            if read in needed:
                read.attrs["slot"] = self.grad_of.save(t)
        self._pending_saves = []

    def add_op(self, op: _g.Operation) -> None:
        super().add_op(op)
        # an op fed only by loop invariants would also run in the exit iteration: pin it to the pivot
        if op.inputs and self.pivot is not None and not op.control_inputs:
            caps = set(map(id, self.captured.values()))
            if all(id(t) in caps for t in op.inputs):
                op._add_control_input(self.pivot.op)


# -- cond -------------------------------------------------------------------------------


def cond(pred: Any, true_fn: Optional[Callable[[], Any]] = None, false_fn: Optional[Callable[[], Any]] = None,
         strict: bool = False, name: Optional[str] = None, fn1: Optional[Callable[[], Any]] = None,
         fn2: Optional[Callable[[], Any]] = None) -> Any:
    """Runs true_fn's ops if pred else false_fn's; only the taken branch executes.

    Both functions return the same structure of tensors; the result has that structure,
    except that (TF1's non-strict mode, the default) a branch result that is a list or tuple
    of one item gives that item; strict=True keeps it.  fn1/fn2: TF1's old names.
    """
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): true_fn and fn1 may not be set simultaneously.")
        true_fn = fn1
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): false_fn and fn2 may not be set simultaneously.")
        false_fn = fn2
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    out = _cond(pred, true_fn, false_fn, name)
    if not strict and isinstance(out, (list, tuple)) and not hasattr(out, "_fields") and len(out) == 1:
        return out[0]
    return out


def _cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any], name: Optional[str] = None) -> Any:
    """cond's work: the structure of the branches' results kept as it is."""
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
            ctx = CondContext(g, pred, pivot, branch, pred_here=p)
            pivot.op._ctx = ctx
            with ctx.entered():
                r = fn()
                if r is None:
                    raise InvalidArgumentError("cond: true_fn and false_fn must return tensors (got None)")
                flat = []
                for x in nest.flatten(r):
                    if isinstance(x, _g.Operation):
                        # an op (a train op, a group): its branch's pivot after it, as TF1 builds
                        # it, so the cond returns a bool tensor that runs the taken branch's op
                        with g.control_dependencies([x]):
                            x = identity(pivot)
                    elif isinstance(x, TensorArray):
                        x = x.flow  # rebuilt around the merged flow below
                    flat.append(_g.convert_to_tensor(x))
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
            merged.append(cfo.merge([b, a], pred=pred, name="Merge")[0])
        return _with_tas(rt, merged)


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
    """What the gradient of a while loop needs to know about its forward loop.

    Values the backward loop needs are saved lazily: the first time a gradient op asks for
    a forward tensor, a StackPush of it (keyed by the iteration counter) joins the chain of
    pushes the loop's save token runs through, and the backward loop reads it back by
    iteration index.  A loop nobody differentiates saves nothing.
    """

    def __init__(self) -> None:
        self.ctx: Optional[WhileContext] = None
        self.structure: Any = None
        self.var_inputs: List[_g.Tensor] = []      # initial values of the user's loop variables
        self.body_inputs: List[_g.Tensor] = []     # loop variables as the body sees them
        self.body_outputs: List[_g.Tensor] = []    # what the body returns (into NextIteration)
        self.exits: List[_g.Tensor] = []           # user's loop variables after the loop
        self.counter_in: Optional[_g.Tensor] = None    # this iteration's index, in the frame
        self.counter_exit: Optional[_g.Tensor] = None  # number of iterations run
        self.token_next: Optional[_g.Operation] = None  # NextIteration closing the push chain
        self.stack_exit: Optional[_g.Tensor] = None
        self.saved: Dict[_g.Tensor, int] = {}      # forward tensor -> its slot in the stack
        self.name = ""

    def fingerprint_repr(self) -> str:
        return f"loop:{self.name}"

    @property
    def external_inputs(self) -> List[_g.Tensor]:
        return list(self.var_inputs) + list(self.ctx.captured)  # type: ignore[union-attr]

    def save(self, t: _g.Tensor) -> int:
        """The stack slot holding forward tensor `t` per iteration (adds the push once)."""
        slot = self.saved.get(t)
        if slot is not None:
            return slot
        slot = len(self.saved)
        nx = self.token_next
        g = t.graph
        prev = g._get_control_flow_context()
        # the push sits in the forward frame, outside any cond branch: a value from an
        # untaken branch arrives dead and the push passes the token on without saving it
        g._set_control_flow_context(self.ctx)
        try:
            with g.control_dependencies(None), g.name_scope(self.name + "/save/"):
                push = make_op("StackPush", [nx.inputs[0], self.counter_in, t], {"slot": slot},
                               name="push").outputs[0]
        finally:
            g._set_control_flow_context(prev)
        nx._update_input(0, push)
        self.saved[t] = slot
        return slot


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10, back_prop: bool = True,
               swap_memory: bool = False, name: Optional[str] = None, maximum_iterations: Any = None,
               return_same_structure: bool = False) -> Any:
    """Repeats `body` while `cond` holds, inside the graph (one frame per loop); TF1's signature.

    loop_vars: a (nested) structure of tensors and TensorArrays; body returns the same
      structure (a TensorArray's flow is what the loop carries; see _ta_flows).
    shape_invariants: per-variable shapes allowed to change across iterations (None dims).
    maximum_iterations: stop after this many iterations at most.
    return_same_structure: False (TF1's default) returns a one-variable loop's result as the
      tensor itself, not a one-element list.  back_prop=False stops gradients at the loop's
    outputs; swap_memory is accepted (values saved for the gradient stay in host memory).
    """
    out = _while_loop(cond, body, loop_vars, shape_invariants, parallel_iterations, maximum_iterations, name)
    if not back_prop:
        from .ops.constant_op import stop_gradient
        flat = [stop_gradient(t) if isinstance(t, _g.Tensor) else t for t in nest.flatten(out)]
        out = nest.pack_sequence_as(out, flat)
    if (not return_same_structure and isinstance(out, (list, tuple)) and not hasattr(out, "_fields")
            and len(out) == 1 and len(nest.flatten(out)) == 1):
        return out[0]
    return out


def _while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any, shape_invariants: Any,
                parallel_iterations: int, maximum_iterations: Any, name: Optional[str]) -> Any:
    ta_vars, loop_vars = loop_vars, _ta_flows(loop_vars)
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
    inv = _ta_invariants(ta_vars, inv)
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
        loop.structure = loop_vars
        n = len(flat_init)
        with g.control_dependencies(None):
            counter0 = constant(0, dtype=_dt.int32, name="counter_init")
            stack0 = make_op("StackCreate", [], name="stack").outputs[0]
        all_init = flat_init + [counter0, stack0]
        all_inv = inv + [TensorShape(()), TensorShape(())]
        enters = []
        for t in all_init:
            e = cfo.enter(t, frame, is_constant=False, parallel_iterations=parallel_iterations, name="Enter")
            e.op._ctx = ctx
            for c in outer_ctrl:
                e.op._add_control_input(c)
            enters.append(e)
        # what the Enters read: inside a cond branch or an enclosing loop, the context's
        # version of each initial value (its gradient goes there)
        loop.var_inputs = [e.op.inputs[0] for e in enters[:n]]
        merges = []
        for e, s in zip(enters, all_inv):
            m = cfo.merge([e, e], shape=s, name="Merge")[0]
            m.op._ctx = ctx
            merges.append(m)
        with ctx.entered():
            # constants in cond run once per iteration: tie them to the first Merge
            ctx.pivot = merges[0]
            vars_struct = _with_tas(ta_vars, merges[:n])
            c = cond(*_as_args(vars_struct))
            c = _g.convert_to_tensor(c)
            if c.dtype != _dt.bool_ or c.shape.rank not in (None, 0):
                raise InvalidArgumentError(f"while_loop: cond must return a scalar bool, got {c.dtype.name} {c.shape}")
            if maximum_iterations is not None:
                mx = _g.convert_to_tensor(maximum_iterations, dtype=_dt.int32)
                c = math_ops.logical_and(c, math_ops.less(merges[n], mx))
            lc = cfo.loop_cond(c, name="loop_cond")
            switches = [cfo.switch(m, lc, name="Switch") for m in merges]
            ctx.pivot = identity(cfo.switch(lc, lc, name="switch_pivot")[1], name="pivot")
            body_in = [identity(sw[1], name="body_in") for sw in switches]
            loop.body_inputs = body_in[:n]
            out = body(*_as_args(_with_tas(ta_vars, body_in[:n])))
            if n == 1 and not isinstance(loop_vars, (list, tuple, dict)) and isinstance(out, (list, tuple)) and len(out) == 1:
                out = out[0]
            elif isinstance(loop_vars, (list, tuple)) and len(loop_vars) == 1 and not isinstance(out, (list, tuple, dict)):
                out = type(loop_vars)([out]) if not hasattr(loop_vars, "_fields") else out  # as TensorFlow allows
            try:
                nest.assert_same_structure(loop_vars, out)
            except ValueError:
                raise InvalidArgumentError(f"while_loop: body must return the structure of loop_vars "
                                           f"({loop_vars!r}), got {out!r}") from None
            ta_out, out = out, _ta_flows(out, ta_vars)
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
            # the save token: gradients add their pushes between body_in[n + 1] and its
            # NextIteration (loop.save); without a gradient the stack holds nothing
            nexts = [cfo.next_iteration(o, name="NextIteration") for o in flat_out + [counter_next, body_in[n + 1]]]
            loop.body_outputs = flat_out
            loop.counter_in = body_in[n]
            loop.token_next = nexts[-1].op
        for m, nx in zip(merges, nexts):
            m.op._update_input(1, nx)
        exits = []
        for sw in switches:
            x = cfo.exit(sw[0], name="Exit")
            x.op._ctx = ctx.outer
            x.op.attrs["loop"] = loop
            exits.append(x)
        for e in enters:
            e.op.attrs["loop"] = loop
        loop.exits = exits[:n]
        loop.counter_exit = exits[n]
        loop.stack_exit = exits[n + 1]
        return _with_tas(ta_out, exits[:n])


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


# -- TensorArrays as loop variables ------------------------------------------------------
# TensorFlow lets a TensorArray be a loop variable: the loop carries its flow (a float32
# scalar) and the body and the caller see TensorArrays rebuilt around the flow's versions.


def _ta_flows(struct: Any, template: Any = None) -> Any:
    """`struct` with each TensorArray replaced by its flow.  With `template` (the loop
    variables), a TensorArray must sit exactly where the template has one."""
    flat = nest.flatten(struct)
    if template is not None:
        for i, (t, x) in enumerate(zip(nest.flatten(template), flat)):
            if isinstance(t, TensorArray) != isinstance(x, TensorArray):
                kind = "a TensorArray" if isinstance(t, TensorArray) else "a tensor"
                raise InvalidArgumentError(f"while_loop: loop variable {i} enters the loop as {kind} but the body "
                                           f"returns {x!r} in its place")
            if isinstance(t, TensorArray) and x.handle is not t.handle:
                raise InvalidArgumentError(f"while_loop: loop variable {i}: the body must return the TensorArray "
                                           "that entered the loop (after its writes), not another one")
    if not any(isinstance(x, TensorArray) for x in flat):
        return struct
    return nest.pack_sequence_as(struct, [x.flow if isinstance(x, TensorArray) else x for x in flat])


def _with_tas(template: Any, tensors: List[_g.Tensor]) -> Any:
    """`tensors` packed as `template`, each TensorArray of it rebuilt around its tensor."""
    flat = nest.flatten(template)
    return nest.pack_sequence_as(template, [t.with_flow(x) if isinstance(t, TensorArray) else x
                                            for t, x in zip(flat, tensors)])


def _ta_invariants(template: Any, inv: List[TensorShape]) -> List[TensorShape]:
    """A TensorArray's flow is a scalar whatever invariant was given for the array."""
    return [TensorShape(()) if isinstance(t, TensorArray) else s for t, s in zip(nest.flatten(template), inv)]


def loop_of(op: _g.Operation) -> Optional[_Loop]:
    """The while loop an Exit or Enter op belongs to (None for other ops)."""
    if op.type in ("Exit", "Enter"):
        loop = op.attrs.get("loop")
        if loop is None and op.type == "Enter":
            loop = getattr(op._ctx, "loop", None)  # an Enter capturing an outside tensor
        return loop
    return None


def _frame_ctx(ctx: Any) -> Optional[WhileContext]:
    """The innermost while loop a context sits in (None at the top level)."""
    while ctx is not None and not isinstance(ctx, WhileContext):
        ctx = ctx.outer
    return ctx


def _on_a_branch(t: _g.Tensor, frame: Any) -> bool:
    """Whether forward tensor `t` may be absent in an iteration of `frame` (it lies on a cond
    branch inside the loop body): its saved value is then read back as maybe-dead."""
    if t.op.type == "Switch":
        return True
    ctx = t.op._ctx
    while ctx is not None and ctx is not frame:
        if isinstance(ctx, CondContext):
            return True
        ctx = ctx.outer
    return False


def _differentiable(t: _g.Tensor) -> bool:
    """Floats and complex numbers, and variable handles (a read's gradient flows to its handle)."""
    if t.dtype.is_floating or t.dtype.is_complex:
        return True
    if t.dtype != _dt.resource:
        return False
    from .ops.state_ops import variable_dtype_shape
    try:
        variable_dtype_shape(t)
    except InvalidArgumentError:
        return False  # a TensorArray, queue or stack handle
    return True


def _zeros_for(t: _g.Tensor) -> _g.Tensor:
    """Zeros shaped like the gradient of `t` (a variable handle's: its value's)."""
    if t.dtype != _dt.resource:
        return array_ops.zeros_like(t)
    from .ops.state_ops import variable_dtype_shape
    dt, shp = variable_dtype_shape(t)
    if shp.is_fully_defined():
        return array_ops.zeros(shp.as_list(), dtype=dt)
    return array_ops.zeros_like(make_op("ReadVariable", [t], name="read").outputs[0])


def while_loop_gradient(loop: _Loop, exit_grads: List[Any]) -> List[Any]:
    """Gradients for loop.external_inputs given gradients of loop.exits (None allowed).

    The backward loop runs as many iterations as the forward one, last first.  Its body
    holds the gradient ops of one forward iteration, built by cf.gradients from the
    forward body's outputs to its inputs; every forward value those ops read comes from the
    forward loop's stack (see _Loop.save), so the forward body is never run again: stateful
    ops, random draws and side effects happen once, as in TensorFlow.
    """
    from .gradients import gradients as _gradients
    fl = [i for i, t in enumerate(loop.var_inputs) if t.dtype.is_floating or t.dtype.is_complex]
    captured = [t for t in loop.ctx.captured if _differentiable(t)]  # type: ignore[union-attr]
    g0 = []
    for i in fl:
        gi = exit_grads[i]
        g0.append(array_ops.zeros_like(loop.exits[i]) if gi is None else _g.convert_to_tensor(gi))
    acc0 = [_zeros_for(t) for t in captured]
    fwd_caps = [loop.ctx.captured[t] for t in captured]  # type: ignore[union-attr]

    def bcond(k: Any, *rest: Any) -> Any:
        return math_ops.greater(k, constant(0, dtype=_dt.int32))

    def bbody(k: Any, *rest: Any) -> Any:
        gvars = list(rest[:len(fl)])
        accs = list(rest[len(fl):])
        idx = k - constant(1, dtype=_dt.int32)
        bctx = _g.get_default_graph()._get_control_flow_context()
        bctx.grad_of = loop          # forward values now resolve to their saved copies
        bctx.grad_index = idx
        ys = [loop.body_outputs[i] for i in fl]
        xs = [loop.body_inputs[i] for i in fl] + fwd_caps
        grads = _gradients(ys, xs, grad_ys=gvars) if ys else [None] * len(xs)
        new_g = []
        for j, i in enumerate(fl):
            gj = grads[j]
            new_g.append(array_ops.zeros_like(gvars[j]) if gj is None else _g.convert_to_tensor(gj))
        new_acc = []
        for j, a in enumerate(accs):
            gj = grads[len(fl) + j]
            new_acc.append(a if gj is None else a + _g.convert_to_tensor(gj))
        bctx.finish_saves(new_g + new_acc)
        return [idx] + new_g + new_acc

    if loop.ctx.grad_of is not None:  # type: ignore[union-attr]
        # this loop is itself a backward loop: its saved forward values would need their own
        # gradient (the forward loop's, again), which is not built; better no answer than a
        # silently partial one
        raise UnimplementedError(
            f"second-order gradients through a while loop are not supported (differentiating {loop.name}, "
            f"the backward loop of {loop.ctx.grad_of.name})")  # type: ignore[union-attr]
    res = _while_loop(bcond, bbody, [loop.counter_exit] + g0 + acc0, None,
                      loop.ctx.parallel_iterations, None, "while_grad")  # type: ignore[union-attr]
    res = list(res)
    var_grads: List[Any] = [None] * len(loop.var_inputs)
    for j, i in enumerate(fl):
        var_grads[i] = res[1 + j]
    cap_grads = {t: res[1 + len(fl) + j] for j, t in enumerate(captured)}
    return var_grads + [cap_grads.get(t) for t in loop.ctx.captured]  # type: ignore[union-attr]
