"""Gradient-check cases for the collective ops (run in a world of one rank).

At size 1 every collective is the identity, so these check the gradient wiring (which op,
which outputs, which splits).  The multi-rank values of the same gradients are checked
against NumPy formulas in tests/test_comm.py (thread world) and tests/mpi/ (MPI).
"""
import numpy as np

import collflow as cf
from collflow.graph.ops import collective_ops as co
from gradcheck import Case


def _distinct(shape):
    # max/min gradients are defined away from ties; distinct values keep the check clean
    return lambda rng: [rng.permutation(np.prod(shape)).reshape(shape) * 0.1 + rng.uniform(0, 0.01, shape)]


CASES = [
    Case("AllReduce", lambda a: cf.comm.all_reduce(a), [(3, 4)], id="AllReduce-sum"),
    Case("AllReduce", lambda a: cf.comm.all_reduce(a, op="mean"), [(3, 4)], id="AllReduce-mean"),
    Case("AllReduce", lambda a: cf.comm.all_reduce(a, op="max"), [(3, 4)], make_inputs=_distinct((3, 4)),
         id="AllReduce-max"),
    Case("AllReduce", lambda a: cf.comm.all_reduce(a, op="min"), [(5,)], make_inputs=_distinct((5,)),
         id="AllReduce-min"),
    Case("Allgather", lambda a: cf.comm.allgather(a) * 2.0, [(3, 2)]),
    Case("Broadcast", lambda a: cf.comm.broadcast(a, root=0), [(2, 3)]),
    Case("AllToAll", lambda a: cf.comm.alltoall(a), [(4, 2)], id="AllToAll-equal"),
    Case("AllToAll", lambda a: cf.comm.alltoall(a, splits=cf.constant(np.array([4], np.int32)))[0], [(4, 2)],
         id="AllToAll-splits"),
    Case("ReduceScatter", lambda a: cf.comm.reduce_scatter(a), [(4, 3)], id="ReduceScatter-sum"),
    Case("ReduceScatter", lambda a: cf.comm.reduce_scatter(a, op="mean"), [(4, 3)], id="ReduceScatter-mean"),
    Case("CollectiveReduce", lambda a: co._collective_reduce(a, root=0), [(3,)]),
]
