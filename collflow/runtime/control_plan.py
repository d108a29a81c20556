"""Plans with control flow, compiled into structured straight-line Python.

The dynamic executor (dynamic_executor.py) interprets a graph with Switch/Merge/Enter/Exit/
NextIteration op by op, iteration by iteration, with a ready queue: every op firing costs a
few microseconds of bookkeeping.  Here the same graph becomes one generated function, like
a static plan (executor.py), with Python's own control flow doing the frames' work:

- every while loop built by cf.while_loop (its `_Loop` record names its parts) becomes a
  Python `while True:` block: the merges are variables, the ops that compute the loop
  condition run first in each iteration, `if not pred: break`, then the body's ops, then the
  NextIteration values become the merges' values; the exits are the merges' last values.
  Loops nest as nested blocks; loop invariants (constant Enters) are plain references.
- conds (and the Switch/Merge ops their gradients are made of) are *predicated*: a tensor
  downstream of a Switch output carries a guard, a Python bool computed once (the Switch's
  predicate, and-ed with its input's guard), and an op runs under `if guard:`; a Merge takes
  the first input whose guard holds.  Ops outside any cond have no guard and no test.  A
  saved forward value read back in a backward loop may be absent (its branch was not taken
  in that iteration): its guard is computed when it is read.

Each op is one kernel call and a store, as in a static plan; a value is dropped after its
last use in its block.  Graphs whose control flow is not in this shape (raw Switch/Merge
loops not built by cf.while_loop) raise `Unstructured`, and the caller falls back to the
dynamic executor.
"""
from __future__ import annotations

import heapq
import time

import numpy as np
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

from ..errors import CancelledError, InternalError, InvalidArgumentError
from ..graph.graph import Operation, Tensor
from ..kernels.control_flow_kernels import DEAD
from .codegen import _abandon_handles
from .executor import CancellationToken, Plan, check_outputs, raise_op_error

__all__ = ["Unstructured", "compile_control_plan"]


class Unstructured(Exception):
    """The control flow is not in the shape cf.cond / cf.while_loop build."""


def _frame_of(op: Operation) -> Any:
    """The while-loop context whose frame `op` runs in (None at the top level)."""
    ctx = getattr(op, "_ctx", None)  # (a constant folded by the passes has none)
    while ctx is not None and not hasattr(ctx, "frame_name"):
        ctx = ctx.outer
    return ctx


class _Loop:
    """One while loop of the plan: its parts, and the blocks of its condition and body."""

    def __init__(self, ctx: Any, ins: Dict[Any, List[Any]]):
        self.ctx = ctx
        self.ins = ins                             # op -> its inputs as the plan reads them
        self.merges: List[Operation] = []          # loop variables, in creation order
        self.enter_of: Dict[Operation, Operation] = {}   # merge -> its Enter
        self.next_of: Dict[Operation, Operation] = {}    # merge -> its NextIteration
        self.loop_cond: Optional[Operation] = None
        self.switches: List[Operation] = []        # Switch ops on the loop condition
        self.exits: List[Operation] = []           # in the parent frame
        self.const_enters: List[Operation] = []
        self.cond: List[Any] = []                  # items computing the condition
        self.body: List[Any] = []                  # items of the body
        self.members: Set[Operation] = set()       # every op in this frame
        self._id = 0                               # ordering key in the parent block
        self.name = ""

    # what the parent block sees: a node with inputs (the Enters' inputs) and the exits; to the
    # static plans' passes (run on the top block) an opaque node they never move ops across
    type = "while"

    @property
    def control_inputs(self) -> List[Operation]:
        return self.external_controls()

    def external_inputs(self) -> List[Tensor]:
        ins = [self.ins[e][0] for e in self.enter_of.values()] + [self.ins[e][0] for e in self.const_enters]
        return ins

    def external_controls(self) -> List[Operation]:
        ctl = []
        for e in list(self.enter_of.values()) + self.const_enters:
            ctl.extend(e.control_inputs)
        return ctl


class _Analysis:
    """Splits the needed ops into the top-level block and one _Loop per frame."""

    def __init__(self, needed: Set[Operation], ins: Dict[Any, List[Any]], async_ops: Set[Any] = frozenset()):
        self.needed = needed
        self.ins = ins
        self.async_ops = async_ops
        frames: Dict[Any, List[Operation]] = {}
        for op in needed:
            f = None if op.type == "Exit" else _frame_of(op)
            if op.type == "Exit":
                f = _frame_of(op)  # exits belong to the parent frame (their _ctx is the outer one)
            frames.setdefault(f, []).append(op)
        self.loops: Dict[Any, _Loop] = {}
        for ctx in frames:
            if ctx is not None:
                self.loops[ctx] = _Loop(ctx, ins)
        for ctx, ops in frames.items():
            if ctx is not None:
                self._fill_loop(self.loops[ctx], ops)
        # exits: attach to their loop (they sit in the parent frame)
        for op in needed:
            if op.type == "Exit":
                sw = ins[op][0].op
                inner = _frame_of(sw)
                if inner not in self.loops:
                    raise Unstructured(f"exit {op.name} without its loop")
                self.loops[inner].exits.append(op)
        for lp in self.loops.values():
            lp.exits.sort(key=lambda o: o._id)
            ids = [o._id for o in lp.members] + [o._id for o in lp.exits]
            lp._id = min(ids)
            lp.name = getattr(lp.ctx, "frame_name", "while")
        self.top = self._block([op for op in frames.get(None, []) if op.type != "Exit"],
                               [lp for lp in self.loops.values() if _parent(lp.ctx) is None], top=True)
        for lp in self.loops.values():
            self._blocks_of(lp)

    def _fill_loop(self, lp: _Loop, ops: List[Operation]) -> None:
        lp.members = set(ops)
        ins = self.ins
        for op in ops:
            if op.type == "Merge" and len(ins[op]) == 2 and ins[op][1].op.type == "NextIteration":
                if ins[op][0].op.type != "Enter":
                    raise Unstructured(f"loop merge {op.name} is not fed by an Enter")
                lp.merges.append(op)
                lp.enter_of[op] = ins[op][0].op
                lp.next_of[op] = ins[op][1].op
            elif op.type == "LoopCond":
                if lp.loop_cond is not None:
                    raise Unstructured(f"two loop conditions in frame {lp.ctx.frame_name}")
                lp.loop_cond = op
            elif op.type == "Enter" and op.attrs.get("is_constant"):
                lp.const_enters.append(op)
        if lp.loop_cond is None:
            raise Unstructured(f"frame {getattr(lp.ctx, 'frame_name', '?')} has no loop condition")
        lc = lp.loop_cond.outputs[0]
        for op in ops:
            if op.type == "Switch" and ins[op][1] is lc:
                lp.switches.append(op)
            elif op.type == "Enter" and not op.attrs.get("is_constant") and not any(
                    c.type == "Merge" for c in op.outputs[0]._consumers if c in lp.members):
                raise Unstructured(f"enter {op.name} feeds no loop merge")
        lp.merges.sort(key=lambda o: o._id)
        lp.const_enters.sort(key=lambda o: o._id)
        lp.switches.sort(key=lambda o: o._id)

    def _blocks_of(self, lp: _Loop) -> None:
        structural = set(lp.merges) | set(lp.enter_of.values()) | set(lp.next_of.values()) | set(lp.const_enters)
        structural |= set(lp.switches) | {lp.loop_cond}
        inner = [il for il in self.loops.values() if _parent(il.ctx) is lp.ctx]
        # the condition: ancestors of LoopCond within the frame (stopping at merges and enters)
        cond_ops: Set[Operation] = set()
        cond_loops: Set[_Loop] = set()
        stack = [t.op for t in self.ins[lp.loop_cond]] + list(lp.loop_cond.control_inputs)
        exit_loop = {x: il for il in inner for x in il.exits}
        while stack:
            op = stack.pop()
            if op in structural or op in cond_ops:
                continue
            if op in exit_loop:
                il = exit_loop[op]
                if il not in cond_loops:
                    cond_loops.add(il)
                    stack.extend(t.op for t in il.external_inputs())
                    stack.extend(il.external_controls())
                continue
            if op not in lp.members:
                continue  # a value from outside the frame cannot reach here but through an Enter
            cond_ops.add(op)
            stack.extend(t.op for t in self.ins[op])
            stack.extend(op.control_inputs)
        body_ops = [op for op in lp.members if op not in structural and op not in cond_ops and op.type != "Exit"]
        body_ops += [x for x in lp.members if x.type == "Exit" and x not in exit_loop]
        lp.cond = self._block(sorted(cond_ops, key=lambda o: o._id), sorted(cond_loops, key=lambda x: x._id))
        lp.body = self._block(sorted(body_ops, key=lambda o: o._id),
                              sorted((il for il in inner if il not in cond_loops), key=lambda x: x._id))

    def _block(self, ops: List[Operation], loops: List[_Loop], top: bool = False) -> List[Any]:
        """Topological order of ops and loop nodes (loop exits stand for their loop).  In the
        top block, as in static plans: collectives as early as their inputs allow, their
        consumers as late (the plan waits for a collective just before its first consumer)."""
        items: List[Any] = list(ops) + list(loops)
        producer: Dict[Operation, Any] = {op: op for op in ops}
        for lp in loops:
            for x in lp.exits:
                producer[x] = lp
        deps: Dict[Any, Set[Any]] = {}
        for it in items:
            if isinstance(it, _Loop):
                srcs = [t.op for t in it.external_inputs()] + it.external_controls()
            else:
                srcs = [t.op for t in self.ins[it]] + list(it.control_inputs)
            deps[it] = {producer[s] for s in srcs if s in producer and producer[s] is not it}
        users: Dict[Any, List[Any]] = {it: [] for it in items}
        indeg = {}
        for it, ds in deps.items():
            indeg[it] = len(ds)
            for d in ds:
                users[d].append(it)
        asy = self.async_ops if top else frozenset()

        def prio(it: Any) -> int:
            if it in asy:
                return 0
            return 2 if any(d in asy for d in deps[it]) else 1

        heap = [(prio(it), it._id, k, it) for k, it in enumerate(items) if indeg[it] == 0]
        heapq.heapify(heap)
        seq = {it: k for k, it in enumerate(items)}
        order: List[Any] = []
        while heap:
            it = heapq.heappop(heap)[-1]
            order.append(it)
            for u in users[it]:
                indeg[u] -= 1
                if indeg[u] == 0:
                    heapq.heappush(heap, (prio(u), u._id, seq[u], u))
        if len(order) != len(items):
            raise Unstructured("a cycle outside while-loop frames")
        return order


def _parent(ctx: Any) -> Any:
    """The while context enclosing while context `ctx` (None at the top level)."""
    c = ctx.outer
    while c is not None and not hasattr(c, "frame_name"):
        c = c.outer
    return c


# -- code generation --------------------------------------------------------------------------------


class _Gen:
    """Emits the plan function's source for the analysed blocks."""

    def __init__(self, session: Any, feeds: List[Tensor], fetches: List[Optional[Tensor]],
                 kernels: Dict[Operation, Callable], async_ops: Set[Operation], trace: bool,
                 ins: Dict[Any, List[Any]], inplace: Optional[Dict[Operation, Any]] = None):
        self.kernels = kernels
        self.ins = ins
        self.inplace = inplace or {}
        self.forwarded: List[Operation] = []    # ops given their in-place kernel (buffer forwarding)
        # collectives of the top block issued and not yet waited for: op -> (handle variable,
        # items emitted when it was issued)
        self.pending: Dict[Operation, Any] = {}
        self.emitted = 0
        self.async_ops = async_ops
        self.trace = trace
        self.check = bool(session._config.get("check_outputs", False))
        self.names: Dict[str, Any] = {"_DEAD": DEAD, "_int32": _int32, "_ONE": _int32(1)}
        self.lines: List[str] = []
        self.slot: Dict[Tensor, str] = {}
        self.guard: Dict[Tensor, Optional[str]] = {}
        self.op_guard: Dict[Operation, Optional[str]] = {}
        self.ops: List[Operation] = []          # plan order (trace records and errors index it)
        self.index: Dict[Operation, int] = {}
        self.feeds = feeds
        self.fetches = fetches
        self.fetch_set = {t for t in fetches if t is not None}
        self.n = 0
        for k, t in enumerate(feeds):
            self.slot[t] = f"f{k}"
            self.guard[t] = None

    def var(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def _register(self, op: Operation) -> int:
        i = self.index.get(op)
        if i is None:
            i = len(self.ops)
            self.ops.append(op)
            self.index[op] = i
        return i

    # guards -------------------------------------------------------------------------------
    def conj(self, depth: int, guards: Sequence[Optional[str]]) -> Optional[str]:
        gs = list(dict.fromkeys(g for g in guards if g is not None))
        if not gs:
            return None
        if len(gs) == 1:
            return gs[0]
        v = self.var("g")
        self.emit(depth, f"{v} = {' and '.join(gs)}")
        return v

    def input_guard(self, depth: int, op: Operation) -> Optional[str]:
        gs = [self.guard.get(t) for t in self.ins[op] if t in self.slot]
        gs += [self.op_guard.get(c) for c in op.control_inputs if c in self.op_guard]
        return self.conj(depth, gs)

    # blocks -------------------------------------------------------------------------------
    def block(self, items: List[Any], depth: int, keep: Set[Tensor], top: bool = False) -> None:
        """Emits `items` at `depth`; frees values defined here after their last use here,
        except those in `keep` (needed after the block: loop-carried values, fetches).

        A cond Switch's outputs are its input under a guard (the same variable), so uses are
        counted per root value: a value is freed after the last use of any of its aliases."""
        ins = self.ins
        uses: Dict[Tensor, int] = {}
        for k, it in enumerate(items):
            for t in _inputs_of(it, ins):
                uses[_root(t, ins)] = k
        keep_roots = {_root(t, ins) for t in keep} | {_root(t, ins) for t in self.fetch_set}
        # a collective in flight may still read its inputs: never overwritten in place (they
        # are freed after their last use all the same: the collective holds what it reads)
        in_flight = {_root(t, ins) for it in items if it in self.async_ops for t in ins[it]} if top else set()
        defined: Set[Tensor] = set(self.feeds) if top else set()
        for k, it in enumerate(items):
            if top and self.pending:
                self._wait_for(it, depth)
            self.emitted += 1
            if isinstance(it, _Loop):
                self.loop(it, depth)
                defined.update(x.outputs[0] for x in it.exits)
            else:
                self.op(it, depth, self._forwardable(it, k, uses, defined, keep_roots | in_flight), top)
                if it.type != "Switch":
                    defined.update(it.outputs)
            freed = set()
            for t in _inputs_of(it, ins):
                r = _root(t, ins)
                if (uses.get(r) == k and r in defined and r not in keep_roots and r not in freed
                        and r in self.slot and not self.slot[r].startswith("c")):
                    self.emit(depth, f"{self.slot[r]} = None")
                    freed.add(r)
        for a in list(self.pending) if top else ():  # every collective completes within the run
            self.wait(a, depth)

    def _wait_for(self, it: Any, depth: int) -> None:
        """Emits the waits for the pending collectives item `it` reads (data or control, in
        nested loops too), before it."""
        ts, ops = _needs(it, self.ins)
        for a in list(self.pending):
            if a in ops or any(t.op is a for t in ts):
                self.wait(a, depth)

    def wait(self, a: Operation, depth: int) -> None:
        hv, at = self.pending.pop(a)
        i = self.index[a]
        outs, tgt = self._outputs(a, None)
        self.emit(depth, f"_i = {i}")
        if self.trace:
            self.emit(depth, "_t0 = _clock()")
        self.emit(depth, f"{tgt}{hv}.wait()")
        if self.trace:
            self.emit(depth, f"_tr.append(({i}, 2, _t0, _clock()))")
        self.emit(depth, f"{hv} = None")
        if self.check and outs:
            self.emit(depth, f"_chk({i}, ({', '.join(outs)},))")
        hints = getattr(self.kernels.get(a), "launch_hints", None)
        if isinstance(hints, dict):
            # nothing ran in between: no overlap to lose (the collective may block in MPI)
            hints["wait_now"] = self.emitted == at

    def _outputs(self, op: Any, guard: Optional[str]) -> Any:
        """Fresh variables for op's outputs (under `guard`), and the assignment target text."""
        outs = []
        for o in op.outputs:
            v = self.var("v")
            self.slot[o] = v
            self.guard[o] = guard
            outs.append(v)
        tgt = ("" if not outs else (outs[0] if len(outs) == 1 else ", ".join(outs) + ",")) + (" = " if outs else "")
        return outs, tgt

    def _forwardable(self, op: Operation, k: int, uses: Dict[Tensor, int], defined: Set[Tensor],
                     keep_roots: Set[Tensor]) -> bool:
        """Buffer forwarding, as in static plans (plan_buffers.py): whether `op` may run its
        in-place kernel, the value it may overwrite dying at item k of this block.  Only a
        value computed in this block (a value from outside is read again by every iteration),
        not kept past it (loop-carried, fetched, read by the loop body), not a feed or a plan
        constant, read once by the op and not by a collective.  The kernel still checks at
        run time that nobody else holds the array (a saved stack value, a merge's variable)."""
        ip = self.inplace.get(op)
        if ip is None or getattr(self.kernels.get(op), "computes_into_slot", False):
            return False  # (an op computing into a collective's bucket keeps that kernel)
        j = ip[1]
        row = self.ins[op]
        if j >= len(row):
            return False
        r = _root(row[j], self.ins)
        slot = self.slot.get(r, "")
        return (uses.get(r) == k and r in defined and r not in keep_roots and r not in self.feeds
                and sum(_root(x, self.ins) is r for x in row) == 1 and r.op not in self.async_ops
                and r.dtype.name != "resource" and not slot.startswith(("c", "f")))

    def op(self, op: Operation, depth: int, forward: bool = False, top: bool = False) -> None:
        i = self._register(op)
        t = op.type
        if t == "Switch":
            data, pred = self.ins[op]
            g = self.input_guard(depth, op)
            self.op_guard[op] = g
            p = self.var("p")
            pre = f"{g} and " if g else ""
            self.emit(depth, f"{p} = {pre}bool({self.slot[pred]})")
            pf = self.var("g")
            self.emit(depth, f"{pf} = {pre}not {p}")
            for o, gv in ((op.outputs[0], pf), (op.outputs[1], p)):
                self.slot[o] = self.slot[data]
                self.guard[o] = gv
            return
        if t == "Merge":
            # the first input that exists; unguarded inputs always exist
            v, idx = self.var("v"), self.var("x")
            ins = list(enumerate(self.ins[op]))
            always = any(self.guard.get(x) is None for _, x in ins)
            first = True
            for k, x in ins:
                gx = self.guard.get(x)
                if gx is None:
                    self.emit(depth, "else:" if not first else "if True:")
                    self.emit(depth + 1, f"{v} = {self.slot[x]}; {idx} = {k}")
                    first = False
                    break
                self.emit(depth, f"{'if' if first else 'elif'} {gx}:")
                self.emit(depth + 1, f"{v} = {self.slot[x]}; {idx} = {k}")
                first = False
            if not always:
                self.emit(depth, "else:")
                self.emit(depth + 1, f"{v} = None; {idx} = -1")
            gv = None
            if not always:
                gv = self.var("g")
                self.emit(depth, f"{gv} = {idx} >= 0")
            self.slot[op.outputs[0]] = v
            self.slot[op.outputs[1]] = idx + "_i"
            self.emit(depth, f"{idx}_i = _int32({idx})")
            self.guard[op.outputs[0]] = gv
            self.guard[op.outputs[1]] = gv
            self.op_guard[op] = gv
            return
        if t in ("Enter", "Exit", "NextIteration", "LoopCond"):
            raise Unstructured(f"{t} op {op.name} outside its loop's structure")
        g = self.input_guard(depth, op)
        self.op_guard[op] = g
        kernel = self.kernels[op]
        args = []
        for x in self.ins[op]:
            args.append(self.slot[x])
        if t == "StackPush":
            # the token passes on; the value is saved only where it exists (its guard is in g)
            tok, it_, _val = self.ins[op]
            kname = f"k{i}"
            self.names[kname] = kernel
            out = self.var("v")
            self.slot[op.outputs[0]] = out
            self.guard[op.outputs[0]] = self.conj(depth, [self.guard.get(tok), self.guard.get(it_)])
            self.emit(depth, f"{out} = {self.slot[tok]}")
            inner = depth
            if g:
                self.emit(depth, f"if {g}:")
                inner = depth + 1
            self.emit(inner, f"_i = {i}; {kname}({', '.join(args)})")
            return
        if (getattr(kernel, "constant_result", False) and not self.trace and not self.ins[op] and op not in self.async_ops
                and len(op.outputs) == 1 and g is None):
            c = f"c{i}"
            self.names[c] = kernel()
            self.slot[op.outputs[0]] = c
            self.guard[op.outputs[0]] = None
            return
        kname = f"k{i}"
        if forward:
            kernel = self.inplace[op][0]
            self.forwarded.append(op)
        self.names[kname] = kernel
        if top and op in self.async_ops and g is None:
            # issued here, waited for before its first consumer (block/_wait_for): the rest of
            # the step, backward loops included, runs while it is in flight
            hv = f"h{i}"
            self.emit(depth, f"_i = {i}")
            self.emit(depth, "if _tok.c: _cancelled(_i, _tok)")
            if self.trace:
                self.emit(depth, "_t0 = _clock()")
            self.emit(depth, f"{hv} = {kname}({', '.join(args)})")
            if self.trace:
                self.emit(depth, f"_tr.append(({i}, 1, _t0, _clock()))")
            self.pending[op] = (hv, self.emitted)
            return
        outs, tgt = self._outputs(op, g)
        inner = depth
        if g:
            self.emit(depth, f"if {g}:")
            inner = depth + 1
        self.emit(inner, f"_i = {i}")
        self.emit(inner, "if _tok.c: _cancelled(_i, _tok)")
        call = f"{kname}({', '.join(args)})"
        if op in self.async_ops:
            call += ".wait()"  # inside control flow a collective completes where it is issued
        if self.trace:
            self.emit(inner, "_t0 = _clock()")
        self.emit(inner, f"{tgt}{call}")
        if self.trace:
            self.emit(inner, f"_tr.append(({i}, 0, _t0, _clock()))")
        if self.check and outs and t != "StackRead":
            self.emit(inner, f"_chk({i}, ({', '.join(outs)},))")
        if t == "StackRead" and op.attrs.get("maybe_absent", True):
            # absent: the value lay on a cond branch not taken in that forward iteration
            gr = self.var("g")
            self.emit(depth, f"{gr} = {'(' + g + ') and ' if g else ''}{outs[0]} is not _DEAD")
            self.guard[op.outputs[0]] = gr
        elif t == "StackRead":
            # saved in every forward iteration: absent would be a bug, not a branch
            self.emit(inner, f"if {outs[0]} is _DEAD: _absent(_i)")
            if g:
                self.emit(depth, "else:")
                self.emit(depth + 1, f"{outs[0]} = None")
        elif g and outs:
            # outputs of a skipped op are undefined: give them a value so later frees work
            self.emit(depth, "else:")
            self.emit(depth + 1, f"{tgt}{'None' if len(outs) == 1 else ', '.join(['None'] * len(outs))}")

    def loop(self, lp: _Loop, depth: int) -> None:
        g = self.conj(depth, [self.guard.get(t) for t in lp.external_inputs() if t in self.slot]
                      + [self.op_guard.get(c) for c in lp.external_controls() if c in self.op_guard])
        inner = depth
        exits = [x.outputs[0] for x in lp.exits]
        if g:
            self.emit(depth, f"if {g}:")
            inner = depth + 1
        # loop invariants are the outside values themselves
        for e in lp.const_enters:
            self.slot[e.outputs[0]] = self.slot[self.ins[e][0]]
            self.guard[e.outputs[0]] = None
            self._register(e)
        mvars = {}
        for m in lp.merges:
            mv = self.var("m")
            mvars[m] = mv
            e = lp.enter_of[m]
            self._register(e)
            self._register(m)
            self.emit(inner, f"{mv} = {self.slot[self.ins[e][0]]}")
            self.slot[m.outputs[0]] = mv
            self.guard[m.outputs[0]] = None
            self.slot[m.outputs[1]] = "_ONE"  # value_index of a loop merge: never read in practice
            self.guard[m.outputs[1]] = None
        self.emit(inner, "while True:")
        body_depth = inner + 1
        ins = self.ins
        carried = {ins[lp.next_of[m]][0] for m in lp.merges}
        # values of the condition block that the body reads stay until the body is done
        self.block(lp.cond, body_depth, keep=carried | set(ins[lp.loop_cond]) | _reads(lp.body, ins))
        lc = ins[lp.loop_cond][0]
        self._register(lp.loop_cond)
        if self.guard.get(lc):
            raise Unstructured(f"the condition of loop {lp.name} lies on a cond branch")
        self.slot[lp.loop_cond.outputs[0]] = self.slot[lc]
        self.guard[lp.loop_cond.outputs[0]] = None
        self.emit(body_depth, f"if not {self.slot[lc]}: break")
        for sw in lp.switches:
            self._register(sw)
            self.slot[sw.outputs[1]] = self.slot[ins[sw][0]]
            self.guard[sw.outputs[1]] = None
            self.slot[sw.outputs[0]] = self.slot[ins[sw][0]]  # read by the exits, after the loop
            self.guard[sw.outputs[0]] = None
        self.block(lp.body, body_depth, keep=carried)
        nexts = []
        for m in lp.merges:
            nx = lp.next_of[m]
            self._register(nx)
            src = ins[nx][0]
            gs = self.guard.get(src)
            if gs:  # a loop variable must exist at the end of every iteration
                self.emit(body_depth, f"if not {gs}: _dead_next({self._register(nx)})")
            nexts.append((mvars[m], self.slot[src]))
        if nexts:  # all at once: a next value may be another variable's current value
            self.emit(body_depth, ", ".join(a for a, _ in nexts) + " = " + ", ".join(b for _, b in nexts))
        for x in lp.exits:
            self._register(x)
            v = self.var("v")
            self.emit(inner, f"{v} = {self.slot[ins[x][0]]}")
            self.slot[x.outputs[0]] = v
            self.guard[x.outputs[0]] = g
            self.op_guard[x] = g
        for m in lp.merges:
            self.emit(inner, f"{mvars[m]} = None")
        if g:
            self.emit(depth, "else:")
            for x in exits:
                self.emit(depth + 1, f"{self.slot[x]} = None")


def _int32(v: int) -> Any:
    return np.asarray(v, dtype=np.int32)


def _root(t: Tensor, ins: Dict[Any, List[Any]]) -> Tensor:
    """The value a tensor is an alias of: a cond Switch passes its input on under a guard."""
    while t.op.type == "Switch":
        row = ins.get(t.op) or t.op.inputs
        if row[1].op.type == "LoopCond":
            break
        t = row[0]
    return t


def _reads(items: List[Any], ins: Dict[Any, List[Any]]) -> Set[Tensor]:
    """Every tensor the items read, those of nested loops included."""
    out: Set[Tensor] = set()
    for it in items:
        out.update(_inputs_of(it, ins))
        if isinstance(it, _Loop):
            out.update(_reads(it.cond, ins))
            out.update(_reads(it.body, ins))
            out.update(ins[it.next_of[m]][0] for m in it.merges)
    return out


def _needs(it: Any, ins: Dict[Any, List[Any]]) -> Any:
    """(tensors, ops): what item `it` reads by data and control edges, nested loops included."""
    if not isinstance(it, _Loop):
        return set(ins[it]), set(it.control_inputs)
    ts = _reads([it], ins)
    ops = set(it.external_controls())
    for sub in it.cond + it.body:
        t2, o2 = _needs(sub, ins)
        ts |= t2
        ops |= o2
    return ts, ops


def _inputs_of(it: Any, ins: Dict[Any, List[Any]]) -> List[Tensor]:
    if isinstance(it, _Loop):
        out = it.external_inputs()
        # values of this block read inside the loop (by nested items) count as used here
        return out
    return list(ins[it])


def compile_control_plan(session: Any, needed: Set[Operation], feeds: List[Tensor],
                         fetches: List[Optional[Tensor]], kernels: Dict[Operation, Callable],
                         async_ops: Set[Operation], trace: bool = False,
                         inplace: Optional[Dict[Operation, Any]] = None,
                         ins: Optional[Dict[Any, List[Any]]] = None,
                         top_passes: Optional[Callable[[List[Any], Dict[Any, List[Any]]], Any]] = None) -> Plan:
    """The plan of a graph with cf.cond / cf.while_loop control flow (raises Unstructured).
    `inplace`: op -> (in-place kernel, index of the input it may overwrite), for buffer
    forwarding; `ins`: op -> the inputs it reads (the passes may have redirected some to an
    equal value or a folded constant; default: the graph's).  `top_passes(items, ins)` ->
    (items, failure hooks): the static plans' passes, run on the top block (loops are opaque
    nodes there), e.g. producer/consumer fusion and bucket views (executor.py)."""
    if ins is None:
        ins = {op: list(op.inputs) for op in needed}
    an = _Analysis(needed, ins, async_ops)
    on_fail: Sequence[Callable[[], None]] = ()
    if top_passes is not None:
        an.top, on_fail = top_passes(an.top, ins)
    for t in fetches:
        if t is not None and _frame_of(t.op) is not None and t.op.type != "Exit":
            raise InvalidArgumentError(f"cannot fetch {t.name}: it lives inside a while loop (fetch what the loop "
                                       "returns instead)", t.op)
    gen = _Gen(session, feeds, fetches, kernels, async_ops, trace, ins, inplace)
    if trace:
        gen.emit(2, "_tr = _tok.trace if _tok.trace is not None else []")
    for k in range(len(feeds)):
        gen.emit(2, f"f{k} = _feeds[{k}]")
    try:
        gen.block(an.top, 2, keep=set(), top=True)
    except KeyError as e:  # an input that is not in scope where it is read: not our shape
        raise Unstructured(f"a value used outside its frame ({e})") from None
    ret = []
    for t in fetches:
        if t is None:
            ret.append("None")
            continue
        g = gen.guard.get(t)
        if g:
            gen.emit(2, f"if not {g}: _dead_fetch({gen._register(t.op)})")
        ret.append(gen.slot[t])
    gen.emit(2, f"return [{', '.join(ret)}]")
    src = ("def _plan(_feeds, _tok):\n"
           "    _i = -1\n"
           "    try:\n"
           + "\n".join(gen.lines) + "\n"
           "    except BaseException as _e:\n"
           "        _fail(_i, _e, locals())\n")
    ops_t = gen.ops
    slot = gen.slot

    def _cancelled(i: int, tok: CancellationToken) -> None:
        raise CancelledError("run cancelled" + (f": {tok.reason}" if tok.reason else "")
                             + f" before op {ops_t[i].name!r}", ops_t[i])

    def _dead_fetch(i: int) -> None:
        op = ops_t[i]
        raise InvalidArgumentError(f"fetch {op.name} has no value: it lies on a branch of a cond that was not taken",
                                   op)

    def _fail(i: int, e: BaseException, frame: dict) -> None:
        _abandon_handles(frame)  # collectives issued and not waited for
        for hook in on_fail:     # e.g. give up fusion-buffer claims of this run's producers
            try:
                hook()
            except Exception:
                pass
        if isinstance(e, (KeyboardInterrupt, SystemExit)) or i < 0:
            raise e
        op = ops_t[i]
        raise_op_error(op, e, [frame.get(slot.get(t, ""), gen.names.get(slot.get(t, ""))) for t in ins[op]])

    def _chk(i: int, outs: tuple) -> None:
        check_outputs(ops_t[i], outs)

    def _dead_next(i: int) -> None:
        raise InternalError(f"{ops_t[i].name}: the loop variable has no value at the end of an iteration (it was "
                            "computed on a cond branch not taken)", ops_t[i])

    def _absent(i: int) -> None:
        raise InternalError(f"{ops_t[i].name}: a forward value the backward loop needs was not saved", ops_t[i])

    gen.names.update(_cancelled=_cancelled, _fail=_fail, _chk=_chk, _clock=time.perf_counter,
                     _dead_fetch=_dead_fetch, _dead_next=_dead_next, _absent=_absent)
    try:
        code = compile(src, f"<collflow control-flow plan {len(ops_t)} ops>", "exec")
    except (SyntaxError, RecursionError) as e:  # pragma: no cover - nesting beyond Python's limits
        raise Unstructured(f"generated code does not compile: {e}") from None
    exec(code, gen.names)
    plan = Plan(list(ops_t), list(feeds), list(fetches), gen.names["_plan"], src,
                [kernels.get(o) for o in ops_t], async_ops)
    plan.forwarded = [o.name for o in gen.forwarded]
    return plan
