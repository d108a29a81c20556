"""Plan passes on buffers: forwarding an input's buffer to an op's output when the input
dies there (in-place kernels), and placing outputs straight into the buffer a collective
reads (bucket views: an all-reduce's send buffer)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ..graph.graph import Operation, Tensor
from ..kernels.registry import KernelContext, get_into

__all__: List[str] = []


def _forward_buffers(order: List[Any], ins: Dict[Any, List[Any]], feeds: List[Tensor],
                     fetch_tensors: List[Optional[Tensor]], kernels: Dict[Any, Callable],
                     inplace: Dict[Any, Tuple[Callable, int]], async_ops: Set[Any]) -> List[Any]:
    """Swaps in the in-place kernel variant where the overwritable input dies at that op;
    returns those ops."""
    last: Dict[Any, int] = {}
    for i, op in enumerate(order):
        for t in ins[op]:
            last[t] = i
    keep = set(feeds) | {t for t in fetch_tensors if t is not None}
    # an async op (a collective) may still be reading its inputs after later ops ran
    keep.update(t for op in order if op in async_ops for t in ins[op])
    done: List[Any] = []
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
            done.append(op)
    return done


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
    placed.computes_into_slot = True  # type: ignore[attr-defined]
    return placed
