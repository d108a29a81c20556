"""The executor: compiles (fetches, feeds, targets) into a plan once, then runs it.

Compilation in stages, one module each: pruning, placement and copy nodes (here); constant
folding and CSE (passes.py); producer/consumer fusion (plan_fusion.py); buffer forwarding and
outputs placed into collective buffers (plan_buffers.py); code generation (codegen.py); the
plan object and its nodes (plan.py).  Graphs with loops and conds compile to structured
code by control_plan.py on the same kernels.

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
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..errors import CollflowError, InvalidArgumentError
from ..graph.graph import Operation, Tensor
from ..kernels.device import get_device
from ..kernels.registry import KernelContext, get_inplace, get_kernel
# the plan object, its passes and its code generation are modules of their own (the names
# below stay importable from here)
from .codegen import _codegen, check_outputs, raise_op_error
from .plan import _PRIORITY_ASYNC, _PRIORITY_NORMAL, _PRIORITY_WAIT, CancellationToken, CopyNode, Plan, _copy_kernel
from .plan_buffers import _forward_buffers, _place_outputs
from .plan_fusion import _fuse_pairs

__all__ = ["Plan", "CancellationToken", "compile_plan", "register_plan_check", "check_outputs", "raise_op_error"]

# functions(session, ordered ops) run once per compiled plan, before it first runs (the comm
# layer checks that every rank issues the same collectives)
_PLAN_CHECKS: List[Callable[[Any, List[Any]], None]] = []


def register_plan_check(fn: Callable[[Any, List[Any]], None]) -> None:
    if fn not in _PLAN_CHECKS:
        _PLAN_CHECKS.append(fn)


def needed_ops(fetch_tensors: Sequence[Tensor], targets: Sequence[Operation], fed: Set[Tensor],
               resolve: Optional[Callable[[Any], Any]] = None) -> Set[Operation]:
    """The ops a run of `fetch_tensors` and `targets` executes: their data and control
    inputs, transitively, stopping at fed tensors."""
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
            # a control edge out of a fed Placeholder waits for the feed, not the op (TF's rule)
            if c not in needed and not (c.type == "Placeholder" and any(o in fed for o in c.outputs)):
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


def _is_folded(t: Any) -> bool:
    from .passes import FoldedConst
    return isinstance(t.op, FoldedConst)


def compile_plan(session: Any, fetch_tensors: List[Optional[Tensor]], targets: List[Operation],
                 feeds: List[Tensor], trace: bool = False, passes: bool = True) -> Plan:
    """Builds the plan for these fetches (None entries are op fetches), targets and feeds.
    `trace`: the plan records every kernel call's start and end into its run token's
    `trace` list (runtime/tracing.py).  `passes=False` skips folding and CSE."""
    given_fetches = list(fetch_tensors)
    fed = set(feeds)
    real_fetches = [t for t in fetch_tensors if t is not None]
    needed = needed_ops(real_fetches, targets, fed)
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
    interpret = dynamic and session._config.get("control_flow", "compile") == "interpret"
    want = session._config.get("optimize", True)  # a bool, or ConfigProto's {"cse": .., "fold": ..}
    want = want if isinstance(want, dict) else {"cse": bool(want), "fold": bool(want)}
    if passes and not interpret and (want["cse"] or want["fold"]):
        # constant folding and common-subexpression elimination (runtime/passes.py); with
        # control flow, on the ops outside loops and conds; folding only for CPU plans
        from .passes import optimize
        rw = optimize(needed, fed, targets, session, top_level_only=dynamic,
                      fold=want["fold"] and str(session._default_device).startswith("/cpu"), cse=want["cse"])
        if rw:
            fetch_tensors = [rw.resolve(t) if t is not None else None for t in fetch_tensors]
            real_fetches = [t for t in fetch_tensors if t is not None]
            needed = needed_ops([t for t in real_fetches if not _is_folded(t)], targets, fed, rw.resolve)
            needed |= {t.op for t in real_fetches if _is_folded(t)}
            needed |= {rw.resolve(t).op for op in list(needed) if isinstance(op, Operation)
                       for t in op.inputs if _is_folded(rw.resolve(t))}
            # what folded constants must still run after (a shape-only op's input producer)
            needed |= needed_ops([], [c for op in needed if not isinstance(op, Operation)
                                       for c in op.control_inputs], fed, rw.resolve)
    # one placer for every plan; plans with control flow then move values across devices
    # inside the kernels (placement.bridge_devices) instead of through copy nodes
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
        from .placement import bridge_devices
        bridge_devices(kernels, placement, needed, inplace)
        cplan: Any = None
        if not interpret:
            # loops and conds built by cf.while_loop / cf.cond compile to structured code;
            # anything else is interpreted frame by frame
            from .control_plan import Unstructured, compile_control_plan
            resolve_d = rw.resolve if rw else (lambda t: t)
            ins_d = {op: [resolve_d(t) for t in op.inputs] for op in needed}
            cfg = session._config
            # kernels made by the passes are not bridged across devices: host-only plans only
            on_host = all(get_device(d).xp is np for d in set(placement.values()))

            def top_passes(items: List[Any], ins_t: Dict[Any, List[Any]]) -> Tuple[List[Any], List[Callable]]:
                # the static plans' fusion and bucket views on the top block (loops are opaque)
                if not on_host:
                    return items, []
                for it in items:
                    if it not in ins_t:
                        ins_t[it] = it.external_inputs()
                if cfg.get("fuse_ops", True):
                    items = _fuse_pairs(items, ins_t, feeds, fetch_tensors, kernels, async_ops, placement, context)
                aborts: List[Callable] = []
                if cfg.get("bucket_views", True):
                    aborts = _place_outputs(items, ins_t, feeds, fetch_tensors, kernels, async_ops, placement, context)
                return items, aborts
            try:
                forward = inplace if cfg.get("buffer_forwarding", True) else {}
                cplan = compile_control_plan(session, needed, feeds, fetch_tensors, kernels, async_ops, trace=trace,
                                             inplace=forward, ins=ins_d, top_passes=top_passes)
            except Unstructured:
                if rw:  # the interpreter runs the graph as it is: compile again without the rewrites
                    return compile_plan(session, given_fetches, targets, feeds, trace, passes=False)
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
        od = op.op_def if isinstance(op, Operation) else None  # (a folded constant has none)
        meta, host = (od.metadata_only, od.host_inputs) if od is not None else (False, ())
        for i, t in enumerate(map(resolve, op.inputs)):
            src = "/cpu:0" if t in fed else placement[t.op]
            # TF's HostMemory: shape readers take their input where it is; shape arguments
            # are read on the host (OpDef.metadata_only / host_inputs)
            want = src if meta else ("/cpu:0" if i in host else dst)
            if src != want and t.dtype.name != "resource":
                cn = copies.get((t, want))
                if cn is None:
                    cn = CopyNode(t, src, want)
                    copies[(t, want)] = cn
                    ins[cn] = [t]
                    kernels[cn], is_async = _copy_kernel(get_device(src), get_device(want))
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
    forwarded: List[Any] = []
    if session._config.get("buffer_forwarding", True):
        forwarded = _forward_buffers(order, ins, feeds, fetch_tensors, kernels, inplace, async_ops)
    on_fail: List[Callable[[], None]] = []
    if session._config.get("bucket_views", True):
        on_fail = _place_outputs(order, ins, feeds, fetch_tensors, kernels, async_ops, placement, context)
    plan = _codegen(session, order, ins, feeds, fetch_tensors, kernels, async_ops, on_fail, trace)
    plan.placement = {op.name: placement[op] for op in needed}
    plan.copies = [cn.name for cn in copies.values()]
    plan.forwarded = [op.name for op in forwarded]
    return plan
