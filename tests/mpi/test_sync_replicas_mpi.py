"""Data-parallel equivalence under real MPI: N ranks with batch b = 1 process with batch N*b."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import collflow as cf  # noqa: E402
import dp_model as dp  # noqa: E402


@pytest.fixture(scope="module")
def comm():
    return cf.comm.init(backend="mpi", timeout=60)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("average", [False, True])
def test_gradients_computed_into_the_bucket_under_mpi(comm, average):
    """Small gradients computed by ops land in the bucket's send buffer (no packing copy), the
    large one goes on its own; every element of the sums/averages is right on every rank
    (random data: a layout slip would show); the send buffer and the receive buffers are
    kept from step to step when nobody holds the results."""
    n, r = comm.size, comm.rank
    shapes = [(6,), (2, 3), (5,), (70000,)]
    g = cf.Graph()
    with g.as_default():
        xs = [cf.placeholder(cf.float64, s) for s in shapes]
        vs = [cf.Variable(np.zeros(s), name=f"v{i}") for i, s in enumerate(shapes)]
        grads = [x * 2.0 for x in xs]
        opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(1.0), comm=comm)
        red = [t for t, _ in opt.reduce_gradients(list(zip(grads, vs)), average=average)]
        # consumed inside the step, so nothing holds the results between steps
        # (weighted sums: a permutation inside a gradient would show)
        weights = [1.0 + np.arange(int(np.prod(sh))).reshape(sh) / 7.0 for sh in shapes]
        digest = cf.stack([cf.reduce_sum(t * cf.constant(w)) for t, w in zip(red, weights)])
    addr = lambda a: a.__array_interface__["data"][0]  # noqa: E731
    seen = []
    with cf.Session(graph=g, config={"comm": comm}) as s:
        for step in range(6):
            feeds = [[np.random.default_rng(1000 * step + 10 * q + i).standard_normal(sh) for i, sh in
                      enumerate(shapes)] for q in range(n)]
            got = s.run(digest, dict(zip(xs, feeds[r])))
            want = []
            for i, sh in enumerate(shapes):
                tot = sum(2.0 * feeds[q][i] for q in range(n)) / (n if average else 1)
                want.append(np.sum(tot * weights[i]))
            np.testing.assert_allclose(got, want, rtol=1e-12)
            # the full arrays too, once
            if step == 0:
                full = s.run(red, dict(zip(xs, feeds[r])))
                for i, sh in enumerate(shapes):
                    tot = sum(2.0 * feeds[q][i] for q in range(n)) / (n if average else 1)
                    np.testing.assert_allclose(full[i], tot, rtol=1e-14)
                del full
            plan = s.plan_for(digest, dict(zip(xs, feeds[r])))
            k = [k for o, k in zip(plan.ops, plan.kernels) if o.type == "FusedAllReduce"][0]
            assert k.input_slots.bucket.placed == 3
            seen.append((addr(k.input_slots.bucket.buf), tuple(addr(b.buf) for b in k.result_buffers)))
    assert sum(a == b for a, b in zip(seen[1:], seen[2:])) >= 3, seen


@pytest.mark.mpi(min_size=2)
def test_variables_all_reduced_as_they_are_live_in_the_send_buffer_under_mpi(comm):
    """Variable reads as a bucket's gradients: after the first step the variables live in the
    send buffer (in shared memory where the communicator all-reduces there), later steps send
    them without packing, and the sums stay right while the variables are updated in place
    between steps (random values: a layout slip would show)."""
    n, r = comm.size, comm.rank
    shapes = [(6,), (2, 3), (5,), (9, 4)]
    inits = [[np.random.default_rng(10 * q + i).standard_normal(sh) for i, sh in enumerate(shapes)]
             for q in range(n)]
    g = cf.Graph()
    with g.as_default():
        vs = [cf.Variable(a, name=f"v{i}") for i, a in enumerate(inits[r])]
        opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(1.0), comm=comm)
        red = [t for t, _ in opt.reduce_gradients([(v.value(), v) for v in vs], average=False)]
        # in place, each rank by its own factor (the all-reduce runs again: the same sums)
        upd = cf.group(*[cf.assign_sub(v, (0.1 + 0.05 * r) * t) for v, t in zip(vs, red)])
        digest = cf.stack([cf.reduce_sum(t * (1.0 + cf.cast(cf.range(cf.size(t)), cf.float64)) / 3.0)
                           for t in [cf.reshape(t, [-1]) for t in red]])
    vals = [list(v) for v in inits]
    with cf.Session(graph=g, config={"comm": comm}) as s:
        s.run(cf.global_variables_initializer())
        plan = s.plan_for(digest, None)
        bucket = [k for o, k in zip(plan.ops, plan.kernels) if o.type == "FusedAllReduce"][0].send_bucket
        placed = []
        for step in range(4):
            got = s.run(digest)
            placed.append(bucket.placed)
            sums = [sum(vals[q][i] for q in range(n)) for i in range(len(shapes))]
            want = [np.sum(sm.reshape(-1) * (1.0 + np.arange(sm.size)) / 3.0) for sm in sums]
            np.testing.assert_allclose(got, want, rtol=1e-12)
            s.run(upd)
            vals = [[v - (0.1 + 0.05 * q) * sm for v, sm in zip(vals[q], sums)] for q in range(n)]
        for a, b in zip(s.run(vs), vals[r]):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    assert placed == [0] + [len(shapes)] * 3, placed


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_replicas_start_identical_without_an_explicit_broadcast(comm, opt):
    """As PyTorch's DDP does when wrapping a model: the first collective step of a session
    broadcasts rank 0's variables, so a program that forgot broadcast_global_variables still
    trains one model (here every rank initializes with its own seed)."""
    n, r = comm.size, comm.rank
    m = dp.build(opt, comm=comm, init_seed=100 + r)
    xs, ys, ids = dp.data(4, 4 * n)
    with cf.Session(graph=m["graph"], config={"comm": comm}) as s:
        s.run(m["init"])  # no s.run(m["bcast"])
        for k in range(4):
            sl = slice(r * 4, (r + 1) * 4)
            s.run(m["train"], {m["x"]: xs[k, sl], m["y"]: ys[k, sl], m["ids"]: ids[k, sl]})
        mine = s.run(m["vars"])
    ref = dp.train_single(dp.build(opt, sync=False, init_seed=100), steps=4, global_batch=4 * n)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
