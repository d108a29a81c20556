"""Helpers for data-parallel training: start replicas identical and check that they stay so."""
from __future__ import annotations

import hashlib
from typing import Any, List, Optional, Sequence

import numpy as np

from ..comm import fusion as _fusion  # noqa: F401  (registers the fused collective kernels)
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.ops import state_ops
from ..graph.ops.constant_op import group
from ..graph.ops.fusion_ops import fused_broadcast
from ..graph.variables import Variable, global_variables
from ..kernels.device import to_host

__all__ = ["broadcast_global_variables", "replica_digest", "check_replicas_identical"]


def broadcast_global_variables(root_rank: int = 0, var_list: Optional[Sequence[Variable]] = None,
                               name: str = "broadcast_variables") -> _g.Operation:
    """An op that sets every variable to root_rank's value (run it after the initializer).

    All variables travel in one collective per dtype, so replicas start bit-identical even
    when each rank initialized them with a different seed.
    """
    vs = list(var_list) if var_list is not None else _replicated(_g.get_default_graph())
    if not vs:
        raise InvalidArgumentError("broadcast_global_variables: there are no variables")
    g = vs[0].graph
    with g.as_default(), g.name_scope(name), g.control_dependencies(None):
        vals = fused_broadcast([v.read_value() for v in vs], root=root_rank, key=name)
        return group(*[state_ops.assign(v, val).op for v, val in zip(vs, vals)], name="assign")


def _replicated(g: _g.Graph) -> List[Variable]:
    """Every global variable except parameter-server shards (each rank holds its own rows)."""
    from .sharded import replicated_variables
    return replicated_variables(g)


def replica_digest(sess: Any, var_list: Optional[Sequence[Variable]] = None) -> str:
    """SHA-256 over the bytes of the variables' current values in this session (sorted by name)."""
    vs = list(var_list) if var_list is not None else _replicated(sess.graph)
    h = hashlib.sha256()
    for v in sorted(vs, key=lambda v: v.name):
        st = sess.resources.variables.get(v.op.attrs["shared_name"])
        if st is not None:
            st.settle()
        if st is None or st.value is None:
            raise InvalidArgumentError(f"variable {v.name} is not initialized in this session")
        a = np.ascontiguousarray(to_host(st.value))  # a GPU variable's bytes come to the host
        h.update(v.name.encode())
        h.update(a.tobytes())
    return h.hexdigest()


def check_replicas_identical(sess: Any, comm: Any = None, var_list: Optional[Sequence[Variable]] = None) -> None:
    """Raises on every rank if any rank's variables differ bit-wise from rank 0's."""
    if comm is None:
        from ..comm import get
        comm = get()
    d = np.frombuffer(bytes.fromhex(replica_digest(sess, var_list)), dtype=np.uint8)
    allv = comm.allgather(d, name="check_replicas").reshape(comm.size, -1)
    bad = [r for r in range(comm.size) if not np.array_equal(allv[r], allv[0])]
    if bad:
        raise InvalidArgumentError(f"replicas diverged: the variables of rank(s) {bad} differ from rank 0's")
