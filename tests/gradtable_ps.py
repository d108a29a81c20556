"""Gradient-check cases for the sharded parameter server's ops (a world of one rank).

At size 1 the routed lookup is a gather and its push the scatter of the gradient rows; the
multi-rank gradients (summed over every rank's loss) are checked against NumPy in
tests/test_ps.py (thread world) and against all-reduce training in tests/mpi/test_ps_mpi.py.
"""
import numpy as np

import collflow as cf
from collflow.comm import ps as _ps
from collflow.comm import ps_kernels as _ps_kernels  # noqa: F401  (registers the kernels)
from collflow.graph.ops import ps_ops
from gradcheck import Case


def _lookup(shard, ids_value, strategy="mod"):
    rows, dim = shard.shape.as_list()
    lay = _ps.ShardLayout("table", rows, (dim,), "float64", strategy, 1, 0)
    ids = cf.constant(np.asarray(ids_value, dtype=np.int64))
    routed = ps_ops.route(ids, lay, key="ps/route")
    return ps_ops.gather(shard, routed, ids, lay, key="ps/table")


def _lookup_many(a, b, ids_value):
    lays = [_ps.ShardLayout(nm, t.shape.as_list()[0], tuple(t.shape.as_list()[1:]), "float64", "mod", 1, 0)
            for nm, t in (("a", a), ("b", b))]
    ids = cf.constant(np.asarray(ids_value, dtype=np.int64))
    routed = ps_ops.route(ids, lays[0], key="ps/route")
    return ps_ops.gather_many([a, b], routed, ids, lays, key="ps/a+b")


CASES = [
    # repeated ids: their gradient rows add up
    Case("PSGather", lambda t: _lookup(t, [[3, 0, 3], [1, 3, 4]]), [(5, 2)], id="PSGather-2d-ids"),
    Case("PSGather", lambda t: _lookup(t, [4, 2, 2, 0], "div"), [(6, 3)], id="PSGather-div"),
    # two tables in one exchange (and their gradients in one push)
    Case("PSGatherN", lambda a, b: _lookup_many(a, b, [[3, 0, 3], [1, 3, 4]]), [(5, 2), (5, 1)], id="PSGatherN"),
    Case("PSGatherN", lambda a, b: _lookup_many(a, b, [2, 2, 2]), [(4, 3), (4, 2, 2)], id="PSGatherN-2d-rows"),
]
