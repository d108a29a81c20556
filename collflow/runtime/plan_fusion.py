"""Plan pass: producer/consumer fusion (kernels/registry.py `register_fusion`).

A `FusedNode` runs a consumer with one input computed inside the same kernel by its
producer, at the consumer's place in the order; the producer's output is never materialized
(e.g. the SGD update fused into the weight-gradient GEMM).  Not added to the user's graph.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set

from ..graph.graph import Operation, Tensor
from ..kernels.registry import KernelContext, get_fusion, has_fusions

__all__ = ["FusedNode"]


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
        if not isinstance(real, Operation) and getattr(real, "type", None) != "Const":
            return None  # an opaque node (a whole loop of a control-flow plan): never moved across
        if isinstance(real, Operation) and real.stateful:
            if not real.op_def.variable_state:  # state other than the variables it names
                return None
            for t in ins[o]:
                if t.dtype.name == "resource" and (_var_name(t) is None or _var_name(t) in targets):
                    return None
    return moved
