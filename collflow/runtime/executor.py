"""The executor: compiles (fetches, feeds, targets) into a plan once, then runs it.

A plan is the pruned subgraph the fetches need, cut at the fed tensors, ordered
topologically and turned into one generated Python function of straight-line code:

    _i = 7; v12 = k7(v3, v9)     # call the kernel bound at compile time
    v3 = None                   # free an intermediate right after its last consumer

so the per-op cost is one Python call plus a store, and peak memory is the live set.
Asynchronous kernels return an AsyncHandle; the plan issues them as early as the order
allows, keeps running ready ops, and waits on a handle only right before the first op
that needs its value.  Between ops the plan checks its cancellation token.  Any error is
re-raised as a collflow error naming the op, its type, input shapes and creation site.
"""
from __future__ import annotations

import heapq
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..errors import (CancelledError, CollflowError, InternalError, InvalidArgumentError,
                      ResourceExhaustedError, UnimplementedError)
from ..graph.graph import Operation, Tensor
from ..kernels.device import get_device
from ..kernels.registry import KernelContext, get_fusion, get_inplace, get_into, get_kernel, has_fusions

__all__ = ["Plan", "CancellationToken", "compile_plan", "register_plan_check"]

# functions(session, ordered ops) run once per compiled plan, before it first runs (the comm
# layer checks that every rank issues the same collectives)
_PLAN_CHECKS: List[Callable[[Any, List[Any]], None]] = []


def register_plan_check(fn: Callable[[Any, List[Any]], None]) -> None:
    if fn not in _PLAN_CHECKS:
        _PLAN_CHECKS.append(fn)

# ops that may run on a device's host side only; the GPU layer consults this too
_PRIORITY_ASYNC, _PRIORITY_NORMAL, _PRIORITY_WAIT = 0, 1, 2


class CancellationToken:
    """Set `cancel()` from any thread; a run checks it between ops and raises CancelledError."""

    __slots__ = ("c", "reason", "trace")

    def __init__(self) -> None:
        self.c = False
        self.reason = ""
        self.trace: Optional[list] = None  # a traced run's event records (runtime/tracing.py)

    def cancel(self, reason: str = "") -> None:
        self.reason = reason
        self.c = True

    @property
    def cancelled(self) -> bool:
        return self.c


class Plan:
    """A compiled, cached execution of one (fetches, feeds, targets) signature."""

    def __init__(self, ops: List[Operation], feeds: List[Tensor], fetches: List[Optional[Tensor]],
                 fn: Callable, source: str, kernels: List[Callable], async_ops: Set[Operation]):
        self.placement: Dict[str, str] = {}
        self.copies: List[str] = []
        self.ops = ops
        self.feeds = feeds
        self.fetches = fetches
        self.fn = fn
        self.source = source
        self.kernels = kernels
        self.async_ops = async_ops
        self.num_runs = 0

    def __call__(self, feed_values: Sequence[Any], token: CancellationToken) -> list:
        self.num_runs += 1
        return self.fn(feed_values, token)


def _needed_ops(fetch_tensors: Sequence[Tensor], targets: Sequence[Operation], fed: Set[Tensor],
                resolve: Optional[Callable[[Any], Any]] = None) -> Set[Operation]:
    needed: Set[Operation] = set()
    stack: List[Operation] = [t.op for t in fetch_tensors if t not in fed] + list(targets)
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        for t in op.inputs:
            if resolve is not None:
                t = resolve(t)
            if t not in fed and t.op not in needed:
                stack.append(t.op)
        for c in op.control_inputs:
            if c not in needed:
                stack.append(c)
    return needed


def _schedule(nodes: List[Any], ins: Dict[Any, List[Any]], fed: Set[Tensor], async_ops: Set[Any]) -> List[Any]:
    """Topological order; async ops as early as possible, consumers of their values late."""
    seq = {n: k for k, n in enumerate(nodes)}
    nodeset = set(nodes)
    indeg: Dict[Any, int] = {}
    users: Dict[Any, List[Any]] = {n: [] for n in nodes}
    for op in nodes:
        deps = {t.op for t in ins[op] if t not in fed and t.op in nodeset}
        deps.update(c for c in op.control_inputs if c in nodeset)
        indeg[op] = len(deps)
        for d in deps:
            users[d].append(op)

    def prio(op: Any) -> Tuple[int, int]:
        if op in async_ops:
            return (_PRIORITY_ASYNC, seq[op])
        if any(t.op in async_ops for t in ins[op] if t not in fed) or any(c in async_ops for c in op.control_inputs):
            return (_PRIORITY_WAIT, seq[op])
        return (_PRIORITY_NORMAL, seq[op])

    heap = [(prio(op), op) for op, n in indeg.items() if n == 0]
    heapq.heapify(heap)
    order: List[Any] = []
    while heap:
        _, op = heapq.heappop(heap)
        order.append(op)
        for u in users[op]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(heap, (prio(u), u))
    if len(order) != len(nodes):
        stuck = [op for op in nodes if indeg.get(op, 0) > 0]
        raise InvalidArgumentError(
            "the graph has a cycle among: " + ", ".join(o.name for o in stuck[:10])
            + " (loops must use cf.while_loop)")
    return order


class CopyNode:
    """A plan-level Send/Recv: copies tensor `src` from its device to device `dst`.

    It is not added to the user's graph; the plan schedules it like an op.
    """

    type = "_DeviceCopy"
    control_inputs: List[Any] = []
    attrs: Dict[str, Any] = {}

    def __init__(self, src: Tensor, src_dev: str, dst_dev: str):
        self.src = src
        self.src_dev = src_dev
        self.dst_dev = dst_dev
        self.name = f"{src.op.name}:{src.value_index}->{dst_dev}"
        self.graph = src.graph
        self._id = src.op._id
        self.outputs = [_CopyTensor(self, src)]

    def creation_site(self) -> str:
        return self.src.op.creation_site()

    def __repr__(self) -> str:
        return f"<copy {self.name}>"


class _CopyTensor:
    __slots__ = ("op", "value_index", "dtype", "shape", "name")

    def __init__(self, op: CopyNode, src: Tensor):
        self.op, self.value_index, self.dtype, self.shape = op, 0, src.dtype, src.shape
        self.name = op.name


def _is_folded(t: Any) -> bool:
    from .passes import FoldedConst
    return isinstance(t.op, FoldedConst)


def compile_plan(session: Any, fetch_tensors: List[Optional[Tensor]], targets: List[Operation],
                 feeds: List[Tensor], trace: bool = False) -> Plan:
    """Builds the plan for these fetches (None entries are op fetches), targets and feeds.
    `trace`: the plan records every kernel call's start and end into its run token's
    `trace` list (runtime/tracing.py)."""
    fed = set(feeds)
    real_fetches = [t for t in fetch_tensors if t is not None]
    needed = _needed_ops(real_fetches, targets, fed)
    for op in needed:
        if op.type == "Placeholder":
            raise InvalidArgumentError(
                f"You must feed a value for placeholder {op.name!r} "
                f"(dtype {op.attrs['dtype'].name}, shape {op.attrs['shape']})", op)
        if op.graph is not session.graph:
            raise InvalidArgumentError(f"op {op.name} is not in the session's graph", op)

    from ..graph.ops.control_flow_ops import CONTROL_FLOW_TYPES
    dynamic = any(op.type in CONTROL_FLOW_TYPES for op in needed)
    rw = None
    if not dynamic and session._config.get("optimize", True) and str(session._default_device).startswith("/cpu"):
        # constant folding and common-subexpression elimination (runtime/passes.py)
        from .passes import optimize
        rw = optimize(needed, fed, targets, session)
        if rw:
            fetch_tensors = [rw.resolve(t) if t is not None else None for t in fetch_tensors]
            real_fetches = [t for t in fetch_tensors if t is not None]
            needed = _needed_ops([t for t in real_fetches if not _is_folded(t)], targets, fed, rw.resolve)
            needed |= {t.op for t in real_fetches if _is_folded(t)}
            needed |= {rw.resolve(t).op for op in list(needed) if isinstance(op, Operation)
                       for t in op.inputs if _is_folded(rw.resolve(t))}
    if dynamic:
        # the frame-aware executor runs on one device per op, without copy nodes
        placement = {op: session._device_for(op) for op in needed}
    else:
        from .placement import place
        placement = place({op for op in needed if isinstance(op, Operation)}, session)
        placement.update({op: "/cpu:0" for op in needed if not isinstance(op, Operation)})

    # bind kernels: one factory call per op, on its device
    kernels: Dict[Any, Callable] = {}
    inplace: Dict[Any, Tuple[Callable, int]] = {}
    async_ops: Set[Any] = set()
    contexts: Dict[str, KernelContext] = {}

    def context(dev_name: str) -> KernelContext:
        ctx = contexts.get(dev_name)
        if ctx is None:
            dev = get_device(dev_name)
            ctx = KernelContext(dev.xp, dev, session._resources, session, session._config)
            contexts[dev_name] = ctx
        return ctx

    for op in sorted(needed, key=lambda o: o._id):
        if not isinstance(op, Operation):  # a constant folded by the passes
            kernels[op] = op.kernel()
            continue
        ctx = context(placement[op])
        factory, is_async = get_kernel(op, ctx.device.device_type)
        try:
            kernels[op] = factory(op, ctx)
        except CollflowError:
            raise
        except Exception as e:  # a factory rejecting its attributes
            raise InvalidArgumentError(f"cannot build the kernel of {op.type} op {op.name!r}: {e}", op) from e
        if is_async:
            async_ops.add(op)
        else:
            ip = get_inplace(op.type)
            if ip is not None:
                fn = ip[0](op, ctx)
                if fn is not None:
                    inplace[op] = (fn, ip[1])

    if dynamic:
        for check in _PLAN_CHECKS:
            check(session, sorted(needed, key=lambda o: o._id))
        cplan: Any = None
        if session._config.get("control_flow", "compile") != "interpret":
            # loops and conds built by cf.while_loop / cf.cond compile to structured code;
            # anything else is interpreted frame by frame
            from .control_plan import Unstructured, compile_control_plan
            try:
                cplan = compile_control_plan(session, needed, feeds, fetch_tensors, kernels, async_ops, trace=trace)
            except Unstructured:
                cplan = None
        if cplan is None:
            from .dynamic_executor import DynamicPlan
            cplan = DynamicPlan(session, needed, feeds, fetch_tensors, kernels, async_ops, trace=trace)
        cplan.placement = {op.name: placement[op] for op in needed}
        return cplan  # type: ignore[no-any-return]

    # edges that cross devices get a copy node (feeds arrive on the host)
    ins: Dict[Any, List[Any]] = {}
    copies: Dict[Tuple[Tensor, str], CopyNode] = {}
    resolve = rw.resolve if rw else (lambda t: t)
    for op in needed:
        dst = placement[op]
        row = []
        for t in map(resolve, op.inputs):
            src = "/cpu:0" if t in fed else placement[t.op]
            if src != dst and t.dtype.name != "resource":
                cn = copies.get((t, dst))
                if cn is None:
                    cn = CopyNode(t, src, dst)
                    copies[(t, dst)] = cn
                    ins[cn] = [t]
                    kernels[cn], is_async = _copy_kernel(get_device(src), get_device(dst))
                    if is_async:
                        async_ops.add(cn)
                row.append(cn.outputs[0])
            else:
                row.append(t)
        ins[op] = row
    nodes = sorted(needed, key=lambda o: o._id)
    for cn in copies.values():
        nodes.append(cn)
    nodes.sort(key=lambda n: (n._id, isinstance(n, CopyNode)))
    order = _schedule(nodes, ins, fed, async_ops)
    for check in _PLAN_CHECKS:
        check(session, order)
    if session._config.get("fuse_ops", True):
        order = _fuse_pairs(order, ins, feeds, fetch_tensors, kernels, async_ops, placement, context)
    if session._config.get("buffer_forwarding", True):
        _forward_buffers(order, ins, feeds, fetch_tensors, kernels, inplace, async_ops)
    on_fail: List[Callable[[], None]] = []
    if session._config.get("bucket_views", True):
        on_fail = _place_outputs(order, ins, feeds, fetch_tensors, kernels, async_ops, placement, context)
    plan = _codegen(session, order, ins, feeds, fetch_tensors, kernels, async_ops, on_fail, trace)
    plan.placement = {op.name: placement[op] for op in needed}
    plan.copies = [cn.name for cn in copies.values()]
    return plan


class FusedNode:
    """A plan-level node running `consumer` with its input `index` computed inside the same
    kernel by `producer` (kernels/registry.py `register_fusion`), at the consumer's place in
    the order; the producer's output is never materialized.  Not added to the user's graph.
    """

    control_inputs: List[Any]

    def __init__(self, producer: Operation, consumer: Operation, index: int):
        self.producer = producer
        self.consumer = consumer
        self.index = index
        self.type = f"{producer.type}+{consumer.type}"
        self.name = consumer.name
        self.graph = consumer.graph
        self._id = consumer._id
        self.attrs = consumer.attrs
        self.outputs = consumer.outputs
        self.inputs = list(consumer.inputs[:index]) + list(producer.inputs) + list(consumer.inputs[index + 1:])
        self.control_inputs = list(dict.fromkeys(list(consumer.control_inputs) + list(producer.control_inputs)))

    def creation_site(self) -> str:
        return self.consumer.creation_site()

    def __repr__(self) -> str:
        return f"<fused {self.type} {self.name}>"


def _fuse_pairs(order: List[Any], ins: Dict[Any, List[Any]], feeds: List[Tensor],
                fetch_tensors: List[Optional[Tensor]], kernels: Dict[Any, Callable], async_ops: Set[Any],
                placement: Dict[Any, str], context: Callable[[str], KernelContext]) -> List[Any]:
    """Replaces (producer, consumer) pairs that have a registered fused kernel with one node.

    A pair qualifies when the consumer's input is the producer's only output, used by the
    consumer alone (once) in this plan, neither fed nor fetched, both ops are synchronous,
    on one device, no op waits on the producer by a control edge, and the fused kernel's
    factory accepts the pair.  The node runs where the consumer ran, so every effect keeps
    its place in the order; a node that updates a variable moves up to where the producer
    ran when that reorders nothing observable (`_hoistable`), so it reads the producer's
    inputs while they are still in cache.  Returns the new order.
    """
    keep = set(feeds) | {t for t in fetch_tensors if t is not None}
    uses: Dict[Any, int] = {}
    waited_on: Set[Any] = set()
    for op in order:
        for t in ins[op]:
            uses[t] = uses.get(t, 0) + 1
        waited_on.update(op.control_inputs)
    pos = {op: i for i, op in enumerate(order)}
    # slots[i]: what runs at the place of order[i] (empty once its op was fused away)
    slots: List[List[Any]] = [[op] for op in order]
    nodes: List[FusedNode] = []
    fused: Set[Any] = set()
    for op in order:
        if not isinstance(op, Operation) or op in async_ops or not has_fusions(op.type):
            continue
        for k, t in enumerate(ins[op]):
            p = t.op
            if not isinstance(p, Operation) or p not in pos or p in fused:
                continue
            factory = get_fusion(op.type, p.type)
            if (factory is None or t in keep or len(p.outputs) != 1 or uses.get(t) != 1 or p in async_ops
                    or p in waited_on or placement.get(p) != placement.get(op)):
                continue
            fn = factory(p, op, k, context(placement[op]))
            if fn is None:
                continue
            node = FusedNode(p, op, k)
            ins[node] = list(ins[op][:k]) + list(ins[p]) + list(ins[op][k + 1:])
            kernels[node] = fn
            fused.update((p, op))
            slots[pos[p]] = []
            slots[pos[op]] = [node]
            nodes.append(node)
            break
    if not nodes:
        return order
    where = {o: i for i, sl in enumerate(slots) for o in sl}  # the slot each op runs in now
    for node in nodes:
        lo, hi = pos[node.producer], pos[node.consumer]
        moved = _hoistable(node, [o for sl in slots[lo + 1:hi] for o in sl], ins)
        if moved is not None:
            for o in moved + [node]:  # input-less ops the node needs move up with it
                slots[where[o]].remove(o)
                where[o] = lo
            slots[lo] = moved + [node]
    return [o for sl in slots for o in sl]



def _var_name(t: Any) -> Optional[str]:
    """The shared name of the variable a resource tensor is the handle of, or None if unknown."""
    op = t.op
    return op.attrs.get("shared_name") if isinstance(op, Operation) and op.type == "VarHandle" else None


def _hoistable(node: "FusedNode", between: List[Any], ins: Dict[Any, List[Any]]) -> Optional[List[Any]]:
    """Whether a fused node whose consumer updates a variable (and its slots) may run at its
    producer's place, ahead of the ops `between` (those that ran between producer and consumer).

    It may when none of them touches those variables (no op between reads or writes state
    except other variables through their handles), none is one of the consumer's control
    inputs, and every input of the node produced between is a constant or a variable
    handle (no inputs: they move up too).  Returns those ops to move up, or None.
    Values of the variable read before stay valid either way: an in-place update copies a
    variable whose old value is still referenced (VariableState.writable).
    """
    if not node.consumer.stateful:
        return None
    targets = {_var_name(t) for t in ins[node] if t.dtype.name == "resource"}  # the variable and its slots
    if not targets or None in targets:
        return None
    need = {t.op for t in ins[node]}
    ctrl = set(node.control_inputs)
    moved = []
    for o in between:
        if o in ctrl:
            return None
        if o in need:
            if isinstance(o, Operation) and o.type in ("Const", "VarHandle") and not o.inputs \
                    and not o.control_inputs:
                moved.append(o)
                continue
            return None
        real = o.consumer if isinstance(o, FusedNode) else o
        if isinstance(real, Operation) and real.stateful:
            if not real.op_def.variable_state:  # state other than the variables it names
                return None
            for t in ins[o]:
                if t.dtype.name == "resource" and (_var_name(t) is None or _var_name(t) in targets):
                    return None
    return moved


def _forward_buffers(order: List[Any], ins: Dict[Any, List[Any]], feeds: List[Tensor],
                     fetch_tensors: List[Optional[Tensor]], kernels: Dict[Any, Callable],
                     inplace: Dict[Any, Tuple[Callable, int]], async_ops: Set[Any]) -> None:
    """Swaps in the in-place kernel variant where the overwritable input dies at that op."""
    last: Dict[Any, int] = {}
    for i, op in enumerate(order):
        for t in ins[op]:
            last[t] = i
    keep = set(feeds) | {t for t in fetch_tensors if t is not None}
    # an async op (a collective) may still be reading its inputs after later ops ran
    keep.update(t for op in order if op in async_ops for t in ins[op])
    for i, op in enumerate(order):
        ip = inplace.get(op)
        if ip is None:
            continue
        fn, k = ip
        row = ins[op]
        if k >= len(row):
            continue
        t = row[k]
        if (last.get(t) == i and t not in keep and row.count(t) == 1 and t.op not in async_ops
                and t.dtype.name != "resource"):
            kernels[op] = fn


def _place_outputs(order: List[Any], ins: Dict[Any, List[Any]], feeds: List[Tensor],
                   fetch_tensors: List[Optional[Tensor]], kernels: Dict[Any, Callable], async_ops: Set[Any],
                   placement: Dict[Any, str], context: Callable[[str], KernelContext]) -> List[Callable[[], None]]:
    """Lets producers compute straight into the slots their asynchronous consumers offer.

    An async kernel may offer `input_slots` (a FusedAllReduce: a view of its send buffer per
    packed gradient); a producer of such an input whose op has an into-variant
    (kernels/registry.py `register_into`) then writes its result there, and the collective
    finds the bucket already packed (PyTorch DDP's gradient_as_bucket_view).  Only for a
    synchronous op with one output on the consumer's device, that output neither fed nor
    fetched (a fetched gradient would be overwritten by the next step) and passed to the
    consumer once.  Other ops may read it too: async ops' inputs are never overwritten in
    place (`_forward_buffers`), and the consumer only reads its slots.  At run time the slot
    may be refused (another thread's step owns the buffer, or something still holds last
    step's gradient); the producer then computes as usual and the collective packs it.
    Returns the offers' `abort`s: a failed run calls them, so the claim its producers made
    on a buffer ends with the step.
    """
    keep = set(feeds) | {t for t in fetch_tensors if t is not None}
    present = set(order)
    placed: Set[Any] = set()
    aborts: List[Callable[[], None]] = []
    for op in order:
        offer = getattr(kernels.get(op), "input_slots", None) if op in async_ops else None
        if offer is None:
            continue
        used = False
        row = ins[op]
        for i, t in enumerate(row):
            p = t.op
            if (not isinstance(p, Operation) or p not in present or p in async_ops or p in placed
                    or len(p.outputs) != 1 or t in keep or row.count(t) != 1
                    or placement.get(p) != placement.get(op)):
                continue
            slot = offer.slot_for(i)
            factory = get_into(p.type)
            if slot is None or factory is None:
                continue
            into = factory(p, context(placement[p]))
            if into is None:
                continue
            kernels[p] = _placed_kernel(kernels[p], into, slot)
            placed.add(p)
            used = True
        if used:
            aborts.append(offer.abort)
    return aborts


def _placed_kernel(kernel: Callable, into: Callable, slot: Callable[[], Any]) -> Callable:
    """The producer's kernel computing into slot() when one is given, as usual otherwise."""
    def placed(*args: Any) -> Any:
        out = slot()
        if out is None:
            return kernel(*args)
        return into(*args, out=out)
    return placed


def _copy_kernel(src: Any, dst: Any) -> Tuple[Callable, bool]:
    from ..kernels.device import copy_between
    fn = copy_between(src, dst)
    return fn, bool(getattr(fn, "is_async", False))


# ops whose outputs all have at most this many elements (statically) cost about nothing:
# a collective waited for right after them has no overlap to lose
_TRIVIAL_ELEMENTS = 64


def _trivial(node: Any, async_ops: Set[Any]) -> bool:
    if node in async_ops or isinstance(node, CopyNode):
        return False
    for t in node.outputs:
        n = t.shape.num_elements() if t.shape.is_fully_defined() else None
        if n is None or n > _TRIVIAL_ELEMENTS:
            return False
    return True


def _codegen(session: Any, order: List[Any], ins: Dict[Any, List[Any]], feeds: List[Tensor],
             fetch_tensors: List[Optional[Tensor]], kernels: Dict[Any, Callable], async_ops: Set[Any],
             on_fail: Sequence[Callable[[], None]] = (), trace: bool = False) -> Plan:
    slot: Dict[Tensor, str] = {}
    names: Dict[str, Any] = {}
    lines: List[str] = []
    emit = lines.append
    check = bool(session._config.get("check_outputs", False))
    pos = {op: i for i, op in enumerate(order)}
    fetch_set = {t for t in fetch_tensors if t is not None}

    for k, t in enumerate(feeds):
        slot[t] = f"f{k}"
        emit(f"f{k} = _feeds[{k}]")

    # last use of each tensor (by position); fetched tensors live to the end
    last_use: Dict[Tensor, int] = {}
    for i, op in enumerate(order):
        for t in ins[op]:
            last_use[t] = i
    # first position needing an async op's completion (data or control)
    first_need: Dict[Operation, int] = {}
    for i, op in enumerate(order):
        for t in ins[op]:
            if t.op in async_ops and t not in slot and t.op not in first_need:
                first_need[t.op] = i
        for c in op.control_inputs:
            if c in async_ops and c not in first_need:
                first_need[c] = i
    waits_before: Dict[int, List[Operation]] = {}
    end = len(order)
    for op in async_ops:
        waits_before.setdefault(first_need.get(op, end), []).append(op)
        # an async kernel that offers launch hints learns whether the plan waits for it at once
        # (nothing runs in between: no overlap to lose, so e.g. a collective may block in MPI)
        hints = getattr(kernels[op], "launch_hints", None)
        if isinstance(hints, dict):
            between = order[pos[op] + 1:first_need.get(op, end)]
            hints["wait_now"] = all(_trivial(n, async_ops) for n in between)

    def out_targets(op: Operation) -> str:
        outs = []
        for t in op.outputs:
            if t in slot:  # fed: the fed value wins, the computed one is dropped
                outs.append("_")
            elif t in last_use or t in fetch_set:
                s = f"v{pos[op]}_{t.value_index}"
                slot[t] = s
                outs.append(s)
            else:
                outs.append("_")
        if not outs:
            return ""
        if len(outs) == 1:
            return outs[0]
        return ", ".join(outs) + ","

    def emit_wait(a: Operation) -> None:
        tgt = out_targets(a)
        emit(f"_i = {pos[a]}")
        if trace:
            emit("_t0 = _clock()")
        emit(f"{tgt + ' = ' if tgt else ''}h{pos[a]}.wait()")
        if trace:
            emit(f"_tr.append(({pos[a]}, 2, _t0, _clock()))")
        emit(f"h{pos[a]} = None")

    if trace:  # the run's recorder (a traced run always has one)
        emit("_tr = _tok.trace if _tok.trace is not None else []")

    consts: Set[str] = set()
    for i, op in enumerate(order):
        for a in waits_before.get(i, ()):
            emit_wait(a)
        kernel = kernels[op]
        if (getattr(kernel, "constant_result", False) and not trace and not ins[op] and op not in async_ops
                and len(op.outputs) == 1 and op.outputs[0] not in slot):
            # a kernel that returns the same object on every call (a variable's handle): called
            # once now, its result a global of the plan (a variable read then costs one call)
            cname = f"c{i}"
            names[cname] = kernel()
            consts.add(cname)
            slot[op.outputs[0]] = cname
            continue
        kname = f"k{i}"
        names[kname] = kernel
        args = ", ".join(slot[t] for t in ins[op])
        emit(f"_i = {i}")
        emit("if _tok.c: _cancelled(_i, _tok)")
        if trace:
            emit("_t0 = _clock()")
        if op in async_ops:
            emit(f"h{i} = {kname}({args})")
            if trace:
                emit(f"_tr.append(({i}, 1, _t0, _clock()))")
        else:
            tgt = out_targets(op)
            emit(f"{tgt + ' = ' if tgt else ''}{kname}({args})")
            if trace:
                emit(f"_tr.append(({i}, 0, _t0, _clock()))")
            if check and op.outputs:
                outs = [slot.get(t, "None") for t in op.outputs]
                emit(f"_chk({i}, ({', '.join(outs)},))")
        # free inputs whose last consumer this was (feeds included: the caller keeps its own)
        for t in dict.fromkeys(ins[op]):
            if last_use.get(t) == i and t not in fetch_set and t in slot and slot[t] not in consts:
                emit(f"{slot[t]} = None")
    for a in waits_before.get(end, ()):
        emit_wait(a)

    ret = []
    for t in fetch_tensors:
        ret.append("None" if t is None else slot[t])
    emit(f"return [{', '.join(ret)}]")

    body = "\n".join("        " + ln for ln in lines)
    src = (
        "def _plan(_feeds, _tok):\n"
        "    _i = -1\n"
        "    try:\n"
        f"{body}\n"
        "    except BaseException as _e:\n"
        "        _fail(_i, _e, locals())\n"
    )
    ops_t = tuple(order)

    def _cancelled(i: int, tok: CancellationToken) -> None:
        raise CancelledError("run cancelled" + (f": {tok.reason}" if tok.reason else "")
                             + f" before op {ops_t[i].name!r}", ops_t[i])

    fail_hooks = tuple(on_fail)

    def _fail(i: int, e: BaseException, frame: dict) -> None:
        _abandon_handles(frame)
        for hook in fail_hooks:  # e.g. give up fusion-buffer claims of this run's producers
            try:
                hook()
            except Exception:
                pass
        if isinstance(e, (KeyboardInterrupt, SystemExit)) or i < 0:
            raise e
        op = ops_t[i]
        raise_op_error(op, e, [names[s] if s in consts else frame.get(s, None)
                               for s in (slot.get(t, "") for t in ins[op])])

    def _chk(i: int, outs: tuple) -> None:
        check_outputs(ops_t[i], outs)

    names.update(_cancelled=_cancelled, _fail=_fail, _chk=_chk, _clock=time.perf_counter)
    code = compile(src, f"<collflow plan {len(order)} ops>", "exec")
    exec(code, names)
    return Plan(list(order), list(feeds), list(fetch_tensors), names["_plan"], src,
                [kernels[o] for o in order], async_ops)


def raise_op_error(op: Operation, e: BaseException, inputs: Sequence[Any]) -> None:
    """Re-raises `e` from running `op` as a collflow error naming the op and its inputs."""
    if isinstance(e, CollflowError):
        if e.op is None:
            raise type(e)(e.message, op) from e
        raise e
    shapes = []
    for v in inputs:
        shp = getattr(v, "shape", None)
        shapes.append(f"{tuple(shp)} {getattr(v, 'dtype', '')}" if shp is not None else type(v).__name__)
    msg = (f"{op.type} op {op.name!r} failed: {type(e).__name__}: {e}"
           + (f"\n  input shapes: {', '.join(shapes)}" if shapes else ""))
    if isinstance(e, MemoryError):
        raise ResourceExhaustedError(msg, op) from e
    if isinstance(e, (ValueError, TypeError, IndexError, ArithmeticError)):
        raise InvalidArgumentError(msg, op) from e
    raise InternalError(msg, op) from e


def check_outputs(op: Operation, outs: Sequence[Any]) -> None:
    """Verifies a kernel's outputs against the op's static dtypes and shapes."""
    for t, v in zip(op.outputs, outs):
        if v is None or t.dtype.name == "resource":
            continue
        dt = getattr(v, "dtype", None)
        if dt is None or np.dtype(dt) != t.dtype.np:
            raise InternalError(f"kernel of {op.type} returned dtype {dt} for output {t.name}, "
                                f"expected {t.dtype.name}", op)
        if not t.shape.matches_value(v.shape):
            raise InternalError(f"kernel of {op.type} returned shape {tuple(v.shape)} for output "
                                f"{t.name}, static shape says {t.shape}", op)


def _abandon_handles(frame: dict) -> None:
    """After a failure, give outstanding async handles a chance to clean up."""
    for k, v in frame.items():
        if k.startswith("h") and v is not None and hasattr(v, "wait"):
            abandon = getattr(v, "abandon", None)
            try:
                if abandon is not None:
                    abandon()
            except Exception:
                pass
