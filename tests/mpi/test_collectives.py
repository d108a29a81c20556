"""The MPI backend under mpiexec (pytest-mpi): graph ops, overlap through the executor, timeouts
that name the missing rank, named mismatches, MPI's own paths (float16 without MPI float16,
local ranks).  Every collective against NumPy is tests/test_collectives_two_worlds.py (one
body, run on thread ranks serially and on these MPI ranks).

    mpiexec -n 2 --oversubscribe python -m pytest -q -p no:cacheprovider tests/mpi --with-mpi
    mpiexec -n 3 --oversubscribe python -m pytest -q -p no:cacheprovider tests/mpi --with-mpi

Every rank generates every rank's input from seeds, so each can compute the expected
result on its own (with collflow.comm.local.reference and with plain NumPy).
"""
import time

import numpy as np
import pytest

import collflow as cf
import collflow.comm as cc
from collflow.comm.local import reference
from worlds import assert_close, rank_data
from collflow.errors import DeadlineExceededError, InvalidArgumentError

pytestmark = pytest.mark.mpi(min_size=2)

DTYPES = [np.float32, np.float64, np.int32, np.float16]
_ids = lambda d: np.dtype(d).name  # noqa: E731


@pytest.fixture(scope="module", params=["mpi", "shm"])
def comm(request):
    """Both transports of the MPI backend: MPI's collectives, and all-reduces through shared
    memory (every rank of these runs is on one host)."""
    from mpi4py import MPI
    c = cc.MPICommunicator(MPI.COMM_WORLD, timeout=30, shm=request.param == "shm")
    assert c.shm_active == (request.param == "shm")
    yield c
    c.close()


@pytest.fixture(scope="module")
def mpi_comm():
    """MPI's collectives only (the tests of its blocking-call negotiation)."""
    from mpi4py import MPI
    c = cc.MPICommunicator(MPI.COMM_WORLD, timeout=30, shm=False)
    yield c
    c.close()


# -- every collective against NumPy -----------------------------------------------------------
def test_local_rank(comm):
    import socket
    assert 0 <= comm.local_rank < comm.local_size <= comm.size
    host = np.frombuffer(socket.gethostname().encode().ljust(64, b"\0")[:64], dtype=np.uint8)
    hosts = comm.allgather(host).reshape(comm.size, 64)
    locals_ = comm.allgather(np.array([comm.local_rank, comm.local_size]))
    mine = [s for s in range(comm.size) if np.array_equal(hosts[s], host)]
    assert len(mine) == comm.local_size
    assert sorted(int(locals_[2 * s]) for s in mine) == list(range(comm.local_size))


def test_float16_where_mpi_has_no_float16(comm):
    """Without MPI float16, reductions run in float32 and data moves as raw 16-bit words."""
    n, r = comm.size, comm.rank
    calls = comm._calls  # the collective methods (mpi_collectives.MPICollectives)
    was, calls._f16_native = calls._f16_native, False
    try:
        xs = [rank_data(s, (2 * n, 3), np.float16, seed=15) for s in range(n)]
        for op in ("sum", "mean", "max"):
            assert_close(comm.allreduce(xs[r], op), reference("allreduce", xs, op=op)[r], np.float16)
        np.testing.assert_array_equal(comm.allgatherv(xs[r][:r + 1])[0], np.concatenate([x[:s + 1] for s, x in
                                                                                         enumerate(xs)]))
        np.testing.assert_array_equal(comm.allgather(xs[r]), np.concatenate(xs))
        np.testing.assert_array_equal(comm.broadcast(xs[r], root=n - 1), xs[n - 1])
        np.testing.assert_array_equal(comm.alltoall(xs[r]), reference("alltoall", xs)[r])
        np.testing.assert_array_equal(comm.alltoallv(xs[r], [2] * n)[0], reference("alltoall", xs)[r])
        assert_close(comm.reduce_scatter(xs[r]), reference("reduce_scatter", xs, counts=[[2] * n] * n)[r], np.float16)
        got = comm.reduce(xs[r], root=0)
        if r == 0:
            assert_close(got, reference("reduce", xs)[0], np.float16)
    finally:
        calls._f16_native = was


# -- asynchronous handles ---------------------------------------------------------------------
def test_many_handles_in_flight_waited_in_any_order(comm):
    n, r = comm.size, comm.rank
    rows = [s + 1 for s in range(n)]
    hs = []
    for i in range(6):
        # two-phase allgathervs interleaved with one-phase collectives: second phases must
        # start in the same order on every rank whatever finishes first
        hs.append(("gv", i, comm.allgatherv_async(np.full((rows[r], 2), 10 * i + r, np.int64), name=f"gv{i}")))
        hs.append(("ar", i, comm.allreduce_async(np.full(1000, i + r, np.float64), name=f"ar{i}")))
        hs.append(("a2", i, comm.alltoallv_async(np.full(n, 100 * i + r, np.int32), [1] * n, name=f"a2{i}")))
    assert comm.pending >= 0
    for kind, i, h in reversed(hs):
        v = h.wait()
        if kind == "gv":
            np.testing.assert_array_equal(v[0], np.concatenate([np.full((rows[s], 2), 10 * i + s) for s in range(n)]))
        elif kind == "ar":
            np.testing.assert_array_equal(v, np.full(1000, n * i + n * (n - 1) / 2))
        else:
            np.testing.assert_array_equal(v[0], [100 * i + s for s in range(n)])
        assert h.done()
    assert comm.pending == 0


def test_progress_thread_completes_collectives_in_the_background(comm):
    # shared memory: the background runs the reduction only with a core to spare; insist here
    background = getattr(comm, "shm_background", True)
    comm.shm_background = True
    try:
        big = np.ones(1 << 20, np.float32)
        h = comm.allreduce_async(big, name="background")
        end = time.monotonic() + 10
        while comm.pending and time.monotonic() < end:  # nobody waits or tests: only the progress thread
            time.sleep(0.01)
        assert comm.pending == 0
        np.testing.assert_array_equal(h.wait(), np.full(1 << 20, comm.size, np.float32))
    finally:
        comm.shm_background = background


# -- graph ops in Sessions --------------------------------------------------------------------
def test_graph_collectives_and_gradients(comm):
    n, r = comm.size, comm.rank
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (None, 3), name="x")
        w = cf.placeholder(cf.float64, (None, 3), name="w")
        y = cc.all_reduce(x, op="mean", name="avg")
        z = cc.allgather(x, name="gather")
        b = cc.broadcast(x, root=n - 1, name="bcast")
        gy, = cf.gradients(cf.reduce_sum(y * w), x)
        gz, = cf.gradients(cf.reduce_sum(z * w), x)
        gb, = cf.gradients(cf.reduce_sum(b * w), x)
    xs = [rank_data(s, (2, 3), np.float64, seed=11) for s in range(n)]
    ws = [rank_data(s, (2, 3), np.float64, seed=12) for s in range(n)]
    wz = [rank_data(s, (2 * n, 3), np.float64, seed=13) for s in range(n)]
    with cf.Session(graph=g, config={"comm": comm}) as sess:
        yv, bv, gyv, gbv = sess.run([y, b, gy, gb], {x: xs[r], w: ws[r]})
        zv, gzv = sess.run([z, gz], {x: xs[r], w: wz[r]})
    np.testing.assert_allclose(yv, sum(xs) / n)
    np.testing.assert_allclose(bv, xs[n - 1])
    np.testing.assert_allclose(gyv, sum(ws) / n)                           # all_reduce(mean) of the gradient
    np.testing.assert_allclose(gbv, sum(ws) if r == n - 1 else np.zeros((2, 3)))  # summed on the root
    np.testing.assert_allclose(zv, np.concatenate(xs))
    np.testing.assert_allclose(gzv, sum(wz)[2 * r:2 * r + 2])             # this rank's rows, summed


def test_graph_alltoall_with_splits_and_reduce_scatter(comm):
    n, r = comm.size, comm.rank
    splits = [[(s + d) % 2 + 1 for d in range(n)] for s in range(n)]
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 2))
        sp = cf.placeholder(cf.int32, (n,))
        a, rs = cc.alltoall(x, splits=sp)
        e = cc.alltoall(cf.concat([x[:1]] * n, 0))
        q = cc.reduce_scatter(cf.concat([x[:1]] * n, 0))
    xs = [rank_data(s, (sum(splits[s]), 2), np.float32, seed=14) for s in range(n)]
    with cf.Session(graph=g, config={"comm": comm}) as sess:
        av, rv, ev, qv = sess.run([a, rs, e, q], {x: xs[r], sp: np.array(splits[r], np.int32)})
    want, cnt = reference("alltoallv", xs, counts=splits)[r]
    np.testing.assert_allclose(av, want)
    np.testing.assert_array_equal(rv, cnt)
    assert rv.dtype == np.int32
    np.testing.assert_allclose(ev, np.concatenate([xs[s][:1] for s in range(n)]))
    np.testing.assert_allclose(qv, sum(xs[s][:1] for s in range(n)), rtol=1e-6)


_PROBE = "CollflowTestPendingProbe"


def _register_probe():
    """A test op whose kernel waits (up to 10 s) for the communicator to have nothing in flight."""
    from collflow.graph.registry import registered_ops, register_op
    from collflow.kernels.registry import register_kernel
    if _PROBE in registered_ops():
        return
    register_op(_PROBE, lambda op: [(cf.float32, cf.TensorShape(()))], stateful=True)

    @register_kernel(_PROBE)
    def _probe(op, ctx):
        c = ctx.config["comm"]

        def run(v):
            end = time.monotonic() + 10
            while c.pending and time.monotonic() < end:
                time.sleep(0.005)
            return np.asarray(0.0 if c.pending else 1.0, dtype=np.float32)
        return run


def test_executor_overlaps_a_collective_with_other_kernels(comm):
    """The all-reduce is issued first and completes while another kernel runs (no wait yet)."""
    background = getattr(comm, "shm_background", True)
    comm.shm_background = True  # shared memory: insist on the background even without a spare core
    try:
        _overlap_with_probe(comm)
    finally:
        comm.shm_background = background


def _overlap_with_probe(comm):
    _register_probe()
    from collflow.graph.ops.op_util import single
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None,))
        v = cf.placeholder(cf.float32, ())
        y = cc.all_reduce(x, name="grad")
        done_during = single(_PROBE, [v])
        out = y * done_during
    big = np.ones(1 << 20, np.float32)
    with cf.Session(graph=g, config={"comm": comm}) as sess:
        res = sess.run(out, {x: big, v: np.float32(0)})
        order = [op.type for op in sess.plan_for(out, {x: big, v: np.float32(0)}).ops]
    assert order.index("AllReduce") < order.index(_PROBE)
    np.testing.assert_array_equal(res, np.full(1 << 20, comm.size, np.float32))  # probe said 1.0


# -- failures: named, never hung ---------------------------------------------------------------
@pytest.mark.parametrize("shm", [False, True], ids=["mpi", "shm"])
def test_timeout_names_the_rank_that_skipped_the_collective(shm):
    from mpi4py import MPI
    c = cc.MPICommunicator(MPI.COMM_WORLD, timeout=0.5, shm=shm)  # its own: a timeout breaks it for good
    n, r = c.size, c.rank
    missing = n - 1
    c.allreduce(np.ones(2), name="warmup")
    t = time.monotonic()
    if r != missing:
        with pytest.raises(DeadlineExceededError, match=f"rank {missing} did not arrive") as e:
            c.allreduce(np.ones(2), name="step/grads")
        assert time.monotonic() - t < 10
        assert "'step/grads'" in str(e.value) and f"rank {missing} is at collective #0" in str(e.value)
    else:
        time.sleep(1.5)  # skips step/grads; by now its peers have given up and said so
        with pytest.raises(DeadlineExceededError, match=f"reported: .*rank {missing} did not arrive"):
            c.allreduce(np.ones(2), name="after")
    c.close()
    MPI.COMM_WORLD.Barrier()


@pytest.mark.parametrize("shm", [False, True], ids=["mpi", "shm"])
def test_mismatched_collectives_are_named_on_every_rank(shm):
    from mpi4py import MPI
    c = cc.MPICommunicator(MPI.COMM_WORLD, timeout=10, shm=shm)
    r = c.rank
    name = "layer1/grad" if r == 0 else "layer2/grad"  # same shape and dtype: MPI alone would not notice
    with pytest.raises(InvalidArgumentError, match=r"mismatched collectives.*'layer1/grad'.*'layer2/grad'"):
        c.allreduce(np.ones(4), name=name)
        c.barrier(name="after")  # if the first one completed before the records arrived
        c.barrier(name="after2")
    c.close()
    MPI.COMM_WORLD.Barrier()


def test_wait_now_collectives_block_only_when_every_rank_waits_at_once(mpi_comm):
    comm = mpi_comm
    n, r = comm.size, comm.rank
    x = [rank_data(q, (1000,), np.float64, seed=31) for q in range(n)]
    want = np.sum(x, axis=0)
    before = comm.blocking_calls
    # every rank waits at once: one blocking MPI call
    np.testing.assert_allclose(comm.allreduce(x[r], name="wn/all"), want, rtol=1e-12)
    assert comm.blocking_calls == before + 1
    # the ranks disagree (rank 0 would block, the others overlap): all take the nonblocking call
    h = comm.allreduce_async(x[r], name="wn/mixed", wait_now=(r == 0))
    np.testing.assert_allclose(h.wait(), want, rtol=1e-12)
    assert comm.blocking_calls == before + 1
    # a later collective launched before waiting for a wait-now one: order is kept
    h1 = comm.allreduce_async(x[r], name="wn/first", wait_now=True)
    h2 = comm.allreduce_async(2 * x[r], name="wn/second")
    np.testing.assert_allclose(h2.wait(), 2 * want, rtol=1e-12)
    np.testing.assert_allclose(h1.wait(), want, rtol=1e-12)
    # a receive buffer handed in is the one filled
    out = np.empty_like(x[r])
    assert comm.allreduce(x[r], name="wn/out", out=out) is out


def test_graph_allreduce_waited_at_once_uses_the_blocking_call(mpi_comm):
    comm = mpi_comm
    n, r = comm.size, comm.rank
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(rank_data(r, (64, 8), np.float32, seed=32), name="v")
        opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), comm=comm)
        (red, _), = opt.reduce_gradients([(v.value(), v)])
        (sums, _), = opt.reduce_gradients([(v.value() * 2.0, v)], average=False)
    with cf.Session(graph=g, config={"comm": comm}) as s:
        s.run(v.initializer)
        before = comm.blocking_calls
        got, got_sums = s.run(red), s.run(sums)
        assert comm.blocking_calls == before + 2
    want = np.sum([rank_data(q, (64, 8), np.float32, seed=32) for q in range(n)], axis=0)
    np.testing.assert_allclose(got, want / n, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_sums, 2 * want, rtol=1e-5, atol=1e-5)


def test_timeline_records_negotiation_blocking_and_nonblocking_collectives(mpi_comm):
    comm = mpi_comm
    import json
    import os
    import tempfile
    from mpi4py import MPI
    # one directory for all ranks (rank 0 picks it), one file per rank
    d = MPI.COMM_WORLD.bcast(tempfile.mkdtemp(prefix="cf_timeline_") if comm.rank == 0 else None, root=0)
    path = comm.start_timeline(os.path.join(d, "tl_{rank}.json"))
    assert path == os.path.join(d, f"tl_{comm.rank}.json")
    x = np.ones(1000, np.float32)
    comm.allreduce(x, name="tl/blocking")
    comm.allreduce_async(x, name="tl/overlapped").wait()
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.ones((4, 4), np.float32), name="v")
        w = cf.Variable(np.ones((3,), np.float32), name="w")
        opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), comm=comm)
        red = [t for t, _ in opt.reduce_gradients([(v.value(), v), (w.value(), w)])]
    with cf.Session(graph=g, config={"comm": comm}) as s:
        s.run([v.initializer, w.initializer])
        s.run(red)
    assert comm.stop_timeline() == path
    assert comm.timeline is None
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    spans = {(e["name"], e.get("args", {}).get("mode")) for e in events if e["ph"] in ("X", "b")}
    assert ("tl/blocking", "blocking") in spans
    assert ("NEGOTIATE tl/blocking", None) in spans
    assert ("tl/overlapped", "nonblocking") in spans
    assert any(name.startswith("PACK SyncReplicas/bucket0") for name, _ in spans)
    assert all(e["pid"] == comm.rank for e in events)
    MPI.COMM_WORLD.Barrier()
    if comm.rank == 0:
        import shutil
        shutil.rmtree(d, ignore_errors=True)

