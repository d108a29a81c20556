"""Before a plan's first collective runs, the ranks compare the plan's collectives.

Every rank compiles the same plan from the same graph; if the sequences of collectives
(op type, key, dtypes and static shapes, in plan order) differ — a rank built a different
model, a different bucket layout, another shard count — each rank raises one error naming
the first collective that differs and what every rank has there, instead of hanging or
corrupting data.  One small allgather per compiled plan (not per step).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, List

import numpy as np

from ..errors import DeadlineExceededError, InvalidArgumentError
from ..graph.graph import Operation
from ..runtime.executor import register_plan_check

__all__ = ["collective_signature", "check_plan"]


def _shape_repr(t: Any, ragged: bool) -> str:
    shp = t.shape
    if ragged and shp.rank:
        return "(?" + "".join(f", {d}" for d in shp.dims[1:]) + ")"
    return str(shp)


def collective_signature(op: Any) -> str:
    key = op.attrs.get("key", op.name)
    if op.type == "AverageVariables":  # its inputs are handles: the variables' dtypes and shapes
        from ..graph.ops.state_ops import variable_dtype_shape
        ins = ",".join(f"{dt.name}{shp}" for dt, shp in map(variable_dtype_shape, op.inputs))
    else:
        # a ragged collective's inputs may differ in their first dimension between ranks
        # (Horovod's allgather of per-rank batches, a sparse gradient's rows, PS lookups)
        ragged = op.op_def.ragged
        ins = ",".join(f"{t.dtype.name}{_shape_repr(t, ragged)}" for t in op.inputs)
    return f"{op.type} {key!s} [{ins}]"


def check_plan(session: Any, order: List[Any]) -> None:
    """Raises InvalidArgumentError on every rank when the ranks' collective sequences differ."""
    colls = [op for op in order if isinstance(op, Operation) and op.op_def.collective]
    if not colls:
        return
    sigs = [collective_signature(op) for op in colls]
    comm = session._config.get("comm")
    if comm is None:
        from . import get, is_initialized
        if not is_initialized():
            return
        comm = get()
    if comm.size <= 1:
        return
    digest = np.frombuffer(hashlib.sha256("\n".join(sigs).encode()).digest(), dtype=np.uint8)
    # a sequence already agreed on (another plan issuing the same collectives, such as a
    # backup rank's catch-up run) needs no new round: only some ranks may compile that plan
    verified = session.__dict__.setdefault("_verified_collectives", set())
    key = (id(comm), digest.tobytes())
    if key in verified:
        return
    timeout = session._config.get("collective_timeout")
    try:
        allv = comm.allgather_async(digest, name="plan_check/digest").wait(timeout).reshape(comm.size, -1)
    except DeadlineExceededError as e:
        first = colls[0]
        err = DeadlineExceededError(
            f"before collective {first.attrs.get('key', first.name)!r}, the ranks compare their plans' collectives: "
            f"{e.message}", first)
        err.missing_ranks = getattr(e, "missing_ranks", [])  # type: ignore[attr-defined]
        raise err from None
    if all(np.array_equal(allv[r], allv[0]) for r in range(comm.size)):
        verified.add(key)
        return
    blob = np.frombuffer(json.dumps(sigs).encode(), dtype=np.uint8)
    data, counts = comm.allgatherv(blob, name="plan_check/sequences")
    seqs, o = [], 0
    for c in counts:
        seqs.append(json.loads(bytes(data[o:o + int(c)]).decode()))
        o += int(c)
    n = max(len(s) for s in seqs)
    for k in range(n):
        col = [s[k] if k < len(s) else "<nothing>" for s in seqs]
        if len(set(col)) > 1:
            parts = "; ".join(f"rank {r}: {c}" for r, c in enumerate(col))
            raise InvalidArgumentError(
                f"mismatched collectives before the first one ran: the plan's collective #{k} differs across "
                f"ranks ({parts}). Every rank must build the same graph (same model, optimizer, fusion and "
                "compression settings) and run the same fetches")
    raise InvalidArgumentError("mismatched collectives: the ranks' plans differ")


register_plan_check(check_plan)
