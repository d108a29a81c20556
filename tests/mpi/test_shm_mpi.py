"""The shared-memory all-reduce (collflow.comm.shm) under mpiexec: every rank of these runs is
on one host, so MPICommunicator runs its all-reduces there.

    mpiexec -n 2 --oversubscribe python -m pytest -q -p no:cacheprovider tests/mpi --with-mpi

Covers where the buffers lie (arena or private memory, in place), pieces larger than the
staging area, bit-identical results, the arena pool (fallback when full, blocks given back),
failures (mismatches against MPI collectives and in shared memory, never a hang), ordering
against MPI collectives waited in another order, and fusion buckets computed into the arena.
"""
import glob
import gc
import os
import time
import weakref

import numpy as np
import pytest

import collflow as cf
import collflow.comm as cc
from collflow.errors import InvalidArgumentError

pytestmark = pytest.mark.mpi(min_size=2)


def _world():
    from mpi4py import MPI
    return MPI.COMM_WORLD


def _comm(monkeypatch=None, timeout=30, **env):
    if monkeypatch is not None:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
    c = cc.MPICommunicator(_world(), timeout=timeout, shm=True)
    assert c.shm_active, c.shm_reason
    return c


def _data(rank, shape, dtype, seed):
    rng = np.random.default_rng(1000 * seed + rank)
    if np.dtype(dtype).kind == "b":
        return np.asarray(rng.random(shape) > 0.5)
    return np.asarray((rng.standard_normal(shape) * 4).astype(dtype))


def _reference(xs, op):
    if op == "mean" and len(xs) == 2 and xs[0].dtype.itemsize >= 4:
        return (xs[0] + xs[1]) * xs[0].dtype.type(0.5)
    if op == "mean":  # relative to rank 0's values, as the owners compute it
        d = xs[1] - xs[0]
        for a in xs[2:]:
            d += a - xs[0]
        return xs[0] + d / xs[0].dtype.type(len(xs))
    f = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}[op]
    if xs[0].dtype == np.bool_:
        f = np.logical_or if op == "max" else np.logical_and
    acc = xs[0].copy()
    for a in xs[1:]:
        f(acc, a, out=acc)  # rank order, as the owners reduce
    return acc


def _same_on_every_rank(a):
    got = _world().allgather(np.ascontiguousarray(a).tobytes())
    assert all(g == got[0] for g in got), "ranks got different bits"


@pytest.fixture(scope="module")
def comm():
    c = _comm()
    yield c
    c.close()


@pytest.mark.parametrize("where", ["private", "arena", "arena-in-private-out", "in-place-arena",
                                   "in-place-private"])
@pytest.mark.parametrize("dtype,op", [(np.float32, "sum"), (np.float64, "mean"), (np.int32, "max"),
                                      (np.int64, "prod"), (np.float16, "sum"), (np.bool_, "min"),
                                      (np.uint8, "min")])
def test_allreduce_wherever_the_buffers_lie(comm, where, dtype, op):
    n, r = comm.size, comm.rank
    for shape in [(), (1,), (5,), (33, 7), (70_001,)]:
        xs = [_data(q, shape, dtype, seed=len(shape)) for q in range(n)]
        want = _reference(xs, op)
        x = xs[r].copy()
        if where.startswith(("arena", "in-place-arena")):
            x = comm.empty(shape, dtype)
            x[...] = xs[r]
        out = None
        if where == "arena":
            out = comm.empty(shape, dtype)
        elif where == "arena-in-private-out":
            out = np.empty(shape, dtype)
        elif where.startswith("in-place"):
            out = x
        got = comm.allreduce(x, op=op, out=out) if out is not None else comm.allreduce(x, op=op)
        if out is not None:
            assert got is out
        if where in ("private", "arena", "arena-in-private-out"):
            np.testing.assert_array_equal(x, xs[r])  # the input is only read
        assert got.shape == want.shape and got.dtype == want.dtype
        if dtype == np.float16 and n > 2:
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=2e-2)
        else:
            np.testing.assert_array_equal(got, want)
        _same_on_every_rank(got)


def test_pieces_larger_than_the_staging_area(monkeypatch):
    c = _comm(monkeypatch, COLLFLOW_SHM_STAGING_MB="0.01")  # 10 KiB pieces
    try:
        n, r = c.size, c.rank
        for where in ("private", "arena", "in-place"):
            xs = [_data(q, (12_345,), np.float64, seed=5) for q in range(n)]
            x = xs[r].copy() if where == "private" else c.empty((12_345,), np.float64)
            x[...] = xs[r]
            got = c.allreduce(x, out=x if where == "in-place" else None)
            np.testing.assert_array_equal(got, _reference(xs, "sum"))
            _same_on_every_rank(got)
    finally:
        c.close()


def test_arena_arrays_go_back_to_the_pool(comm):
    shm = comm._shm
    gc.collect()
    before = shm.pool_in_use
    a = comm.empty((1000, 3), np.float32)
    b = comm.empty(5000, np.float64)
    assert a.shape == (1000, 3) and b.shape == (5000,)
    assert shm.offset_of(a) >= 0 and shm.offset_of(b) >= 0
    assert shm.pool_in_use >= before + a.nbytes + b.nbytes
    view = a[10:20]
    del a, b
    gc.collect()
    assert shm.pool_in_use > before  # the view keeps its block
    del view
    gc.collect()
    assert shm.pool_in_use == before


def test_a_full_arena_falls_back_to_private_memory(monkeypatch):
    c = _comm(monkeypatch, COLLFLOW_SHM_ARENA_MB="0.5", COLLFLOW_SHM_STAGING_MB="0.1")
    try:
        n, r = c.size, c.rank
        big = c.empty(1 << 20, np.float32)  # 4 MiB: more than the arena holds
        assert c._shm.offset_of(big) == -1
        xs = [_data(q, (1 << 20,), np.float32, seed=6) for q in range(n)]
        big[...] = xs[r]
        got = c.allreduce(big)
        np.testing.assert_array_equal(got, _reference(xs, "sum"))
    finally:
        c.close()


def test_no_file_is_left_in_dev_shm(comm):
    left = glob.glob(f"/dev/shm/collflow-{os.getuid()}-*")
    # every rank looks before any goes on (the next test plants a file on purpose)
    _world().Barrier()
    assert not left


def test_a_file_left_by_a_rank_killed_at_start_up_is_removed_by_the_next_job():
    import subprocess
    import sys
    w = _world()
    stale = None
    if w.rank == 0:
        p = subprocess.Popen([sys.executable, "-c", "pass"])
        p.wait()  # a pid no process has (a rank that died in the handshake)
        stale = f"/dev/shm/collflow-{os.getuid()}-0badc0de-1-{p.pid}"
        with open(stale, "wb") as f:
            f.write(b"left behind")
        os.utime(stale, (1, 1))
    stale = w.bcast(stale, root=0)
    c = _comm()
    try:
        assert c.shm_active, c.shm_reason
        assert not os.path.exists(stale)
        w.Barrier()  # every rank has unlinked its own file
        assert not glob.glob(f"/dev/shm/collflow-{os.getuid()}-*")
    finally:
        c.close()
        if w.rank == 0 and os.path.exists(stale):
            os.unlink(stale)


def test_sizes_that_differ_are_named_on_every_rank(monkeypatch):
    c = _comm(monkeypatch, timeout=10)
    r = c.rank
    try:
        with pytest.raises(InvalidArgumentError, match=r"mismatched collectives.*\(4,\).*\(5,\)"):
            c.allreduce(np.ones(4 if r == 0 else 5), name="grad")
    finally:
        c.close()
    _world().Barrier()


def test_allreduce_against_an_mpi_collective_is_named_not_hung(monkeypatch):
    c = _comm(monkeypatch, timeout=20)
    r = c.rank
    t = time.monotonic()
    try:
        with pytest.raises(InvalidArgumentError, match=r"mismatched collectives.*allreduce 'w'.*allgather 'w'|"
                                                       r"mismatched collectives.*allgather 'w'.*allreduce 'w'"):
            if r == 0:
                c.allreduce(np.ones(4), name="w")     # shared memory
            else:
                c.allgather(np.ones(4), name="w")     # MPI
            c.barrier(name="after")
    finally:
        c.close()
    assert time.monotonic() - t < 15
    _world().Barrier()


def test_collectives_of_both_transports_waited_in_any_order(comm):
    n, r = comm.size, comm.rank
    for rep in range(3):
        h_ar = comm.allreduce_async(np.full(1000, r + rep, np.float64), name=f"ar{rep}")
        h_ag = comm.allgather_async(np.full(3, r, np.int64), name=f"ag{rep}")
        h_ar2 = comm.allreduce_async(np.full(10, 2.0), name=f"ar2{rep}")
        order = [h_ag, h_ar2, h_ar] if (r + rep) % 2 else [h_ar2, h_ar, h_ag]  # differs across ranks
        for h in order:
            h.wait()
        np.testing.assert_array_equal(h_ar.wait(), np.full(1000, n * rep + n * (n - 1) / 2))
        np.testing.assert_array_equal(h_ag.wait(), np.repeat(np.arange(n), 3))
        np.testing.assert_array_equal(h_ar2.wait(), np.full(10, 2.0 * n))
    assert comm.pending == 0


def test_training_step_computes_gradients_into_the_arena(comm):
    """SyncReplicasOptimizer's buckets (packed, and the large gradient's own) are arena buffers
    the backward pass writes into; the replicas stay bit-identical and match MPI's sums."""
    n, r = comm.size, comm.rank
    mpi = cc.MPICommunicator(_world(), timeout=30, shm=False)
    rng = np.random.default_rng(r)
    xb = rng.standard_normal((32, 600)).astype(np.float32)
    yb = rng.integers(0, 10, 32).astype(np.int32)
    finals = {}
    for name, c in (("shm", comm), ("mpi", mpi)):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float32, (None, 600))
            y = cf.placeholder(cf.int32, (None,))
            w1 = cf.Variable(cf.random_normal((600, 128), stddev=0.05, seed=1), name="w1")  # 300 KiB: its own
            b1 = cf.Variable(cf.zeros((128,)), name="b1")
            w2 = cf.Variable(cf.random_normal((128, 10), stddev=0.05, seed=2), name="w2")
            h = cf.nn.relu(cf.matmul(x, w1) + b1)
            loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(h, w2)))
            opt = cf.train.SyncReplicasOptimizer(cf.train.MomentumOptimizer(0.1, 0.9), comm=c)
            train = opt.minimize(loss)
            init = cf.global_variables_initializer()
        with cf.Session(graph=g, config={"comm": c}) as s:
            s.run(init)
            for _ in range(4):
                s.run(train, {x: xb, y: yb})
            finals[name] = s.run([w1, b1, w2])
            if name == "shm":
                plan = s.plan_for(train, {x: xb, y: yb})
                kernels = [k for o, k in zip(plan.ops, plan.kernels) if o.type == "FusedAllReduce"]
                slots = [k.input_slots for k in kernels if getattr(k, "input_slots", None) is not None]
                bufs = [b.buf for sl in slots for b in sl.buckets if b.buf is not None]
                assert bufs and all(c._shm.offset_of(b) >= 0 for b in bufs)
                assert sum(b.placed for sl in slots for b in sl.buckets) >= 1
                assert all(rb.buf is None or c._shm.offset_of(rb.buf) >= 0
                           for k in kernels for rb in k.result_buffers)
    mpi.close()
    for a, b in zip(finals["shm"], finals["mpi"]):
        _same_on_every_rank(a)
        if n == 2:  # a + b is b + a: the same bits whoever adds
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sgd_variables_are_averaged_in_the_arena(comm):
    """Plain SGD averages the updated variables in place: they live in the arena between
    steps, the ranks' replicas are bit-identical, and training matches the gradient path."""
    n, r = comm.size, comm.rank
    rng = np.random.default_rng(r)
    batches = [(rng.standard_normal((16, 50)), rng.integers(0, 4, 16).astype(np.int32)) for _ in range(3)]
    finals = {}
    for avg in (None, False):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, (None, 50))
            y = cf.placeholder(cf.int32, (None,))
            w1 = cf.Variable(np.random.default_rng(1).normal(size=(50, 70)) * 0.1, name="w1")
            b1 = cf.Variable(np.zeros(70), name="b1")
            w2 = cf.Variable(np.random.default_rng(2).normal(size=(70, 4)) * 0.1, name="w2")
            h = cf.nn.relu(cf.matmul(x, w1) + b1)
            loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(h, w2)))
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.3), comm=comm,
                                                 fusion_threshold_bytes=20_000, average_parameters=avg)
            train = opt.minimize(loss)
            init = cf.global_variables_initializer()
        with cf.Session(graph=g, config={"comm": comm}) as s:
            s.run(init)
            for xb, yb in batches:
                s.run(train, {x: xb, y: yb})
            if avg is None:
                assert len(opt.buckets) >= 2  # w1 (28 KB) alone, then the rest
                states = [s.resources.variables[v.handle.op.attrs["shared_name"]] for v in (w1, b1, w2)]
                assert all(comm._shm.offset_of(st.value) >= 0 for st in states)
            finals[avg] = s.run([w1, b1, w2])
    for a, b in zip(finals[None], finals[False]):
        _same_on_every_rank(a)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_variable_read_during_its_average_is_the_average(comm):
    """Accesses to variables whose average is in flight wait for it: a value read (and
    fetched) after the local update is the averaged one, and stays what the run computed."""
    r = comm.rank
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (None, 3))
        w = cf.Variable(np.ones((3, 2)), name="w")
        train = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(1.0), comm=comm).minimize(
            cf.reduce_sum(cf.matmul(x, w)))
        upd = [op for op in g.get_operations() if op.type == "ApplyGradientDescent"]
        with g.control_dependencies(upd):
            seen = w.read_value()
            doubled = seen * 2.0
    with cf.Session(graph=g, config={"comm": comm}) as sess:
        sess.run(w.initializer)
        _, a, b = sess.run([train, seen, doubled], {x: np.full((1, 3), float(r + 1))})
        mean_grad = np.mean([q + 1.0 for q in range(comm.size)])
        np.testing.assert_allclose(a, 1.0 - mean_grad)
        np.testing.assert_array_equal(b, 2.0 * a)
        np.testing.assert_array_equal(sess.run(w), a)


def test_a_queued_allreduce_progresses_while_its_caller_blocks_elsewhere(comm):
    """An all-reduce launched but not waited for, then a blocking MPI call of the caller's
    own: the progress thread runs it (as MPI progresses its nonblocking collectives)."""
    from mpi4py import MPI
    t = time.monotonic()
    h = comm.allreduce_async(np.ones(10), name="queued")
    if comm.rank == 0:
        MPI.COMM_WORLD.Barrier()  # the peers wait in shared memory for this rank meanwhile
        got = h.wait()
    else:
        got = h.wait()
        MPI.COMM_WORLD.Barrier()
    np.testing.assert_array_equal(got, np.full(10, float(comm.size)))
    assert time.monotonic() - t < 10


def test_alternating_plans_share_their_variable_buckets(comm):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 4))
        w = cf.Variable(np.ones((4, 3), np.float32), name="w")
        loss = cf.reduce_sum(cf.matmul(x, w))
        train = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), comm=comm).minimize(loss)
    with cf.Session(graph=g, config={"comm": comm}) as sess:
        sess.run(w.initializer)
        st = sess.resources.variables[w.handle.op.attrs["shared_name"]]
        sess.run(train, {x: np.ones((2, 4), np.float32)})
        home = weakref.ref(st.value)  # not held: holding it would make the next step move it
        for k in range(6):  # two plans, one bucket: the variable stays where it is
            sess.run(train if k % 2 else [train, loss], {x: np.ones((2, 4), np.float32)})
            assert st.value is home()


def test_wait_timeout_bounds_the_collectives_run_before(monkeypatch):
    from collflow.errors import DeadlineExceededError
    c = _comm(monkeypatch, timeout=60)
    try:
        if c.rank == 0:
            h1 = c.allreduce_async(np.ones(4), name="first")
            h2 = c.allreduce_async(np.ones(4), name="second")
            t = time.monotonic()
            with pytest.raises(DeadlineExceededError):
                h2.wait(timeout=1.0)  # runs "first" too: the peers never come
            assert time.monotonic() - t < 5
            del h1
        else:
            time.sleep(3)
    finally:
        c.close()
    _world().Barrier()


def test_closing_with_queued_allreduces_tells_the_peers(monkeypatch):
    from collflow.errors import AbortedError
    c = _comm(monkeypatch, timeout=60)
    t = time.monotonic()
    if c.rank == 0:
        c.allreduce_async(np.ones(4), name="never run")
        c.close()                   # the peers must not wait their 60 s
    else:
        with pytest.raises(AbortedError, match="closed its communicator"):
            c.allreduce(np.ones(4), name="never run")
        c.close()
    assert time.monotonic() - t < 10
    _world().Barrier()


def test_ranks_agree_on_the_arena_layout(monkeypatch):
    if _world().rank == 1:  # a different setting on one rank: rank 0's wins
        monkeypatch.setenv("COLLFLOW_SHM_STAGING_MB", "0.02")
    c = _comm()
    try:
        assert c._shm.staging_bytes == _world().bcast(c._shm.staging_bytes, root=0)
        xs = [_data(q, (50_000,), np.float64, seed=9) for q in range(c.size)]
        np.testing.assert_array_equal(c.allreduce(xs[c.rank]), _reference(xs, "sum"))
    finally:
        c.close()
