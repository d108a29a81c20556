"""collflow.comm without MPI: the size-1 backend, the thread world, handles, the factory,
the abort hook, and the collective graph ops in Sessions (one rank, and ranks as threads).

The same collectives under mpiexec are in tests/mpi/test_collectives.py.
"""
import io
import os
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import collflow as cf
import collflow.comm as cc
from collflow.comm import abort as cabort
from collflow.comm.base import CompletedHandle, default_timeout
from collflow.errors import DeadlineExceededError, InvalidArgumentError, UnavailableError

DTYPES = [np.float32, np.float64, np.int32, np.float16]


@pytest.fixture(autouse=True)
def _fresh_default():
    """Every test starts and ends without a process-default communicator."""
    cc.shutdown()
    yield
    cc.shutdown()


def _data(rank, shape, dtype, seed=0):
    rng = np.random.default_rng(1000 * seed + rank)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-2, 2, size=shape).astype(dtype)
    return rng.integers(-50, 50, size=shape).astype(dtype)


def _close(a, b, dtype):
    if np.dtype(dtype) == np.float16:
        np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), rtol=1e-2, atol=1e-2)
    elif np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(a, b)
    assert a.dtype == np.dtype(dtype)


# -- the world of one process -----------------------------------------------------------------
def test_local_communicator_collectives_are_identities_on_fresh_arrays():
    c = cc.LocalCommunicator()
    assert (c.rank, c.size, c.local_rank, c.local_size, c.backend) == (0, 1, 0, 1, "local")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    outs = [c.allreduce(x), c.allreduce(x, "mean"), c.allreduce(x, "max"), c.allgather(x), c.broadcast(x),
            c.alltoall(x), c.reduce_scatter(x), c.reduce(x), c.allgatherv(x)[0], c.alltoallv(x, [4])[0]]
    for o in outs:
        np.testing.assert_array_equal(o, x)
        assert o.dtype == x.dtype and not np.shares_memory(o, x)
    np.testing.assert_array_equal(c.allgatherv(x)[1], [4])
    np.testing.assert_array_equal(c.alltoallv(x, [4])[1], [4])
    assert c.allgather(np.float64(2.5)).shape == (1,)
    assert c.barrier() is None
    assert c.stats["calls"] == 14 and c.stats["allreduce_calls"] == 3
    assert c.stats["bytes_sent"] == 0  # nothing leaves a world of one
    c.reset_stats()
    assert c.stats["calls"] == 0


def test_handles_done_wait_then():
    c = cc.LocalCommunicator()
    h = c.allreduce_async(np.ones(3))
    assert h.done()
    np.testing.assert_array_equal(h.wait(), np.ones(3))
    h2 = c.allreduce_async(np.ones(3)).then(lambda v: v * 2)
    assert h2.done()
    np.testing.assert_array_equal(h2.wait(), [2, 2, 2])
    assert isinstance(h, cf.kernels.AsyncHandle)
    assert CompletedHandle(5).wait() == 5


@pytest.mark.parametrize("call, match", [
    (lambda c: c.allreduce(np.ones(2), op="avg"), "op must be one of"),
    (lambda c: c.allreduce(np.ones(2, np.int32), op="mean"), "floating-point"),
    (lambda c: c.allreduce(np.ones(2, bool), op="sum"), "bool"),
    (lambda c: c.allreduce(np.ones(2, np.complex64)), "not supported"),
    (lambda c: c.broadcast(np.ones(2), root=1), "root must be a rank"),
    (lambda c: c.alltoall(np.float32(1)), "scalar"),
    (lambda c: c.alltoallv(np.ones(3), [2]), "add up to"),
    (lambda c: c.alltoallv(np.ones(3), [1, 2]), "one per rank"),
    (lambda c: c.allgatherv(np.ones(3), counts=[2]), "this rank has 3 rows"),
])
def test_bad_arguments_name_what_was_expected(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call(cc.LocalCommunicator())


def test_timeout_setting(monkeypatch):
    monkeypatch.delenv("COLLFLOW_COLLECTIVE_TIMEOUT", raising=False)
    assert default_timeout() == 300.0
    monkeypatch.setenv("COLLFLOW_COLLECTIVE_TIMEOUT", "2.5")
    assert cc.LocalCommunicator().timeout == 2.5
    assert cc.LocalCommunicator(timeout=7).timeout == 7.0
    monkeypatch.setenv("COLLFLOW_COLLECTIVE_TIMEOUT", "soon")
    with pytest.raises(InvalidArgumentError, match="COLLFLOW_COLLECTIVE_TIMEOUT"):
        default_timeout()
    with pytest.raises(InvalidArgumentError, match="positive"):
        cc.LocalCommunicator(timeout=0)


# -- the factory ------------------------------------------------------------------------------
def test_init_get_and_accessors():
    assert not cc.is_initialized()
    c = cc.get()  # first use initializes: no MPI launcher here, so a world of one
    assert isinstance(c, cc.LocalCommunicator) and cc.is_initialized()
    assert cc.init() is c  # a plain second init keeps it
    assert (cc.rank(), cc.size(), cc.local_rank(), cc.local_size()) == (0, 1, 0, 1)
    c2 = cc.init(backend="local", timeout=3)
    assert c2 is not c and cc.get() is c2 and c2.timeout == 3
    w = cc.ThreadWorld(2)
    assert cc.init(comm=w.comm(1), abort_on_exception=False) is w.comm(1)
    assert (cc.rank(), cc.size()) == (1, 2)
    cc.shutdown()
    assert not cc.is_initialized()


def test_init_rejects_unknown_backends():
    with pytest.raises(InvalidArgumentError, match="unknown communicator backend"):
        cc.init(backend="nccl2")
    with pytest.raises(InvalidArgumentError, match="ThreadWorld"):
        cc.init(backend="threads")
    with pytest.raises(InvalidArgumentError, match="takes no comm"):
        cc.init(comm=object(), backend="local")


def test_launcher_without_mpi4py_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # makes `import mpi4py` fail
    with pytest.raises(UnavailableError, match="pip install mpi4py"):
        cc.init()


# -- ranks as threads (every collective against NumPy: tests/test_collectives_two_worlds.py) ---
def test_thread_world_counts_bytes_and_async_handles():
    world = cc.ThreadWorld(2)

    def body(c):
        x = np.full(4, c.rank + 1.0)
        hs = [c.allreduce_async(x, name=f"g{i}") for i in range(3)]
        got = [h.wait() for h in reversed(hs)]  # waits in any order
        return got, dict(c.stats)

    (g0, s0), (g1, s1) = world.run(body)
    for g in (g0, g1):
        for v in g:
            np.testing.assert_array_equal(v, [3.0] * 4)
    assert s0["allreduce_calls"] == 3 and s0["bytes_sent"] == 3 * 32 and s0["allreduce_bytes_sent"] == 96


def test_thread_world_timeout_names_the_missing_rank():
    world = cc.ThreadWorld(3, timeout=0.3)

    def body(c):
        if c.rank == 2:
            time.sleep(0.6)  # skips the collective, then tries the next one
            with pytest.raises(DeadlineExceededError, match="reported: .*rank 2 did not arrive"):
                c.allreduce(np.ones(2), name="next")
            return "aborted"
        t = time.monotonic()
        with pytest.raises(DeadlineExceededError, match="rank 2 did not arrive") as e:
            c.allreduce(np.ones(2), name="step")
        assert time.monotonic() - t < 5
        assert "'step'" in str(e.value)
        return "timed out"

    assert world.run(body, timeout=20) == ["timed out", "timed out", "aborted"]


def test_thread_world_mismatch_names_both_collectives():
    world = cc.ThreadWorld(2, timeout=5)

    def body(c):
        with pytest.raises(InvalidArgumentError, match=r"mismatched collectives.*rank 0: allreduce 'a'.*"
                                                       r"rank 1: allreduce 'b'"):
            if c.rank == 1:
                time.sleep(0.05)  # rank 0 first, so both messages list rank 0 first
            c.allreduce(np.ones(3), name="a" if c.rank == 0 else "b")
        return True

    assert world.run(body) == [True, True]


def test_thread_world_shape_mismatch():
    world = cc.ThreadWorld(2, timeout=5)

    def body(c):
        with pytest.raises(InvalidArgumentError, match=r"float32\(3,\).*float32\(4,\)|float32\(4,\).*float32\(3,\)"):
            c.allreduce(np.ones(3 + c.rank, np.float32), name="g")
        return True

    assert world.run(body) == [True, True]


# -- the abort hook ---------------------------------------------------------------------------
class _FakeComm:
    rank, size = 3, 4

    def __init__(self):
        self.aborted = None

    def abort(self, code=1):
        self.aborted = code


def test_abort_hook_prints_rank_prefixed_traceback_then_aborts(monkeypatch):
    fake = _FakeComm()
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    old = sys.excepthook
    cc.install_abort_handler(fake)
    try:
        assert sys.excepthook is not old
        try:
            raise ValueError("boom")
        except ValueError as e:
            sys.excepthook(type(e), e, e.__traceback__)
    finally:
        cc.uninstall_abort_handler()
    assert sys.excepthook is old
    assert fake.aborted == 1
    lines = err.getvalue().splitlines()
    assert lines and all(ln.startswith("[rank 3] ") for ln in lines)
    assert any("ValueError: boom" in ln for ln in lines)
    assert "aborting all 4 ranks" in lines[-1]


def test_init_installs_the_hook_only_with_several_ranks():
    cc.init(backend="local")
    assert not cabort.is_installed()
    w = cc.ThreadWorld(2)
    cc.init(comm=w.comm(0))
    assert cabort.is_installed()
    cc.shutdown()
    assert not cabort.is_installed()


# -- graph ops, one rank ----------------------------------------------------------------------
def test_graph_ops_in_a_session_of_one_rank():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="x")
        y = cc.all_reduce(x, op="mean", name="avg")
        z = cc.allgather(x)
        b = cc.broadcast(x, root=0)
        a = cc.alltoall(x)
        av, rs = cc.alltoall(x, splits=cf.constant(np.array([4], np.int32)))
        s = cc.reduce_scatter(x)
    assert y.shape.as_list() == [None, 3] and z.shape.as_list() == [None, 3] and rs.shape.as_list() == [None]
    assert y.op.attrs["key"] == "avg" and cc.collective_key(y) == "AllReduce:avg"
    assert cf.all_reduce is cc.all_reduce if hasattr(cf, "all_reduce") else True
    xv = np.arange(12, dtype=np.float32).reshape(4, 3)
    with cf.Session(graph=g) as sess:
        outs = sess.run([y, z, b, a, av, rs, s], {x: xv})
        plan = sess.plan_for([y, z, b, a, av, rs, s], {x: xv})
    for o in outs[:5] + outs[6:]:
        np.testing.assert_array_equal(o, xv)
    np.testing.assert_array_equal(outs[5], [4])
    assert {op.type for op in plan.async_ops} == {"AllReduce", "Allgather", "Broadcast", "AllToAll",
                                                  "ReduceScatter"}


@pytest.mark.parametrize("build, match", [
    (lambda x: cc.all_reduce(cf.cast(x, cf.int32), op="mean"), "floating-point"),
    (lambda x: cc.all_reduce(x, op="prod"), "op must be one of"),
    (lambda x: cc.reduce_scatter(x, op="max"), "'sum' or 'mean'"),
    (lambda x: cc.alltoall(cf.reduce_sum(x)), "scalar"),
    (lambda x: cc.alltoall(x, splits=cf.constant([1.0, 2.0])), "splits must be integers"),
])
def test_graph_op_construction_errors(build, match):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (4, 3))
        with pytest.raises(InvalidArgumentError, match=match):
            build(x)


def test_broadcast_root_outside_the_world_fails_at_plan_time():
    g = cf.Graph()
    with g.as_default():
        y = cc.broadcast(cf.constant([1.0, 2.0]), root=1)
    with cf.Session(graph=g) as sess:
        with pytest.raises(InvalidArgumentError, match="root 1 is not a rank of this world of size 1"):
            sess.run(y)


# -- graph ops, ranks as threads --------------------------------------------------------------
def _run_graph_on_threads(world, g, fetches, feeds_for_rank, config=None):
    def body(c):
        with cf.Session(graph=g, config=dict(config or {}, comm=c)) as sess:
            return sess.run(fetches, feeds_for_rank(c.rank))
    return world.run(body)


def test_graph_collectives_and_gradients_across_thread_ranks():
    n = 2
    world = cc.ThreadWorld(n, timeout=10)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (None, 3), name="x")
        w = cf.placeholder(cf.float64, (None, 3), name="w")      # per-rank loss weights
        wg = cf.placeholder(cf.float64, (None, 3), name="wg")    # weights of the gathered rows
        sp = cf.placeholder(cf.int32, (n,), name="splits")
        y = cc.all_reduce(x)
        m = cc.all_reduce(x, op="max")
        z = cc.allgather(x)
        b = cc.broadcast(x, root=1)
        a, rsplits = cc.alltoall(x, splits=sp)
        losses = [cf.reduce_sum(y * w), cf.reduce_sum(m * w), cf.reduce_sum(z * wg), cf.reduce_sum(b * w),
                  cf.reduce_sum(a * wg)]
        grads = [cf.gradients(l, x)[0] for l in losses]
    rows = [2, 3]                                   # ranks have different batch sizes
    xs = [np.random.default_rng(r).normal(size=(rows[r], 3)) for r in range(n)]
    ws = [np.random.default_rng(10 + r).normal(size=(rows[r], 3)) for r in range(n)]
    wgs = [np.random.default_rng(20 + r).normal(size=(sum(rows), 3)) for r in range(n)]
    splits = [np.array([1, 1], np.int32), np.array([2, 1], np.int32)]  # rank r sends splits[r][s] rows to s

    # alltoall: rank r receives splits[s][r] rows from each s
    recv_rows = [sum(int(splits[s][r]) for s in range(n)) for r in range(n)]
    with pytest.raises(InvalidArgumentError, match="mismatched collectives"):
        # all_reduce needs equal shapes: 2 rows on one rank and 3 on the other is named, not hung
        _run_graph_on_threads(cc.ThreadWorld(n, timeout=5), g, y, lambda r: {x: xs[r]})

    # all_reduce/broadcast need equal shapes: use 2 rows everywhere for those
    xs_eq = [v[:2] for v in xs]
    ws_eq = [v[:2] for v in ws]

    def feeds_eq(r):
        return {x: xs_eq[r], w: ws_eq[r]}
    res = _run_graph_on_threads(world, g, [y, m, b, grads[0], grads[1], grads[3]], feeds_eq)
    tot = xs_eq[0] + xs_eq[1]
    mx = np.maximum(xs_eq[0], xs_eq[1])
    for r in range(n):
        yv, mv, bv, g_sum, g_max, g_b = res[r]
        np.testing.assert_allclose(yv, tot)
        np.testing.assert_allclose(mv, mx)
        np.testing.assert_allclose(bv, xs_eq[1])
        np.testing.assert_allclose(g_sum, ws_eq[0] + ws_eq[1])                      # sum over ranks
        np.testing.assert_allclose(g_max, (ws_eq[0] + ws_eq[1]) * (xs_eq[r] == mx))  # to the holder of the max
        np.testing.assert_allclose(g_b, (ws_eq[0] + ws_eq[1]) if r == 1 else np.zeros_like(ws_eq[r]))

    # allgather with different batch sizes, and its gradient: the rank's rows summed over ranks
    res = _run_graph_on_threads(cc.ThreadWorld(n, timeout=10), g, [z, grads[2]],
                                lambda r: {x: xs[r], wg: wgs[r]})
    off = [0, rows[0]]
    for r in range(n):
        zv, gz = res[r]
        np.testing.assert_allclose(zv, np.concatenate(xs))
        np.testing.assert_allclose(gz, (wgs[0] + wgs[1])[off[r]:off[r] + rows[r]])

    # alltoall with splits, and its gradient: the loss weights travel back to the senders
    wa = [np.random.default_rng(30 + r).normal(size=(recv_rows[r], 3)) for r in range(n)]
    res = _run_graph_on_threads(cc.ThreadWorld(n, timeout=10), g, [a, rsplits, grads[4]],
                                lambda r: {x: xs[r], wg: wa[r], sp: splits[r]})
    for r in range(n):
        av, rv, ga = res[r]
        want = np.concatenate([xs[s][sum(splits[s][:r]):sum(splits[s][:r + 1])] for s in range(n)])
        np.testing.assert_allclose(av, want)
        np.testing.assert_array_equal(rv, [splits[s][r] for s in range(n)])
        # rows x_r[block s] went to rank s, arriving after the rows rank s got from ranks < r
        back = []
        for s in range(n):
            start = sum(int(splits[q][s]) for q in range(r))
            back.append(wa[s][start:start + int(splits[r][s])])
        np.testing.assert_allclose(ga, np.concatenate(back))


def test_graph_reduce_scatter_and_its_gradient_across_thread_ranks():
    n = 2
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (4, 2))
        sizes = cf.constant(np.array([1, 3], np.int32))
        w = cf.placeholder(cf.float64, (None, 2))
        s = cc.reduce_scatter(x, sizes)
        gs = cf.gradients(cf.reduce_sum(s * w), x)[0]
    xs = [np.random.default_rng(r).normal(size=(4, 2)) for r in range(n)]
    ws = [np.random.default_rng(5 + r).normal(size=(1 + 2 * r, 2)) for r in range(n)]
    res = _run_graph_on_threads(cc.ThreadWorld(n, timeout=10), g, [s, gs], lambda r: {x: xs[r], w: ws[r]})
    tot = xs[0] + xs[1]
    np.testing.assert_allclose(res[0][0], tot[:1])
    np.testing.assert_allclose(res[1][0], tot[1:])
    for r in range(n):  # the gradient of every rank's x is every rank's weight block, gathered
        np.testing.assert_allclose(res[r][1], np.concatenate(ws))


def test_graph_collective_timeout_from_the_session_config():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2,))
        y = cc.all_reduce(x, name="grads/sum")
    world = cc.ThreadWorld(2)  # default timeout 300 s: the session's 0.3 s must win

    def body(c):
        if c.rank == 1:
            return "skipped"
        with cf.Session(graph=g, config={"comm": c, "collective_timeout": 0.3}) as sess:
            t = time.monotonic()
            with pytest.raises(DeadlineExceededError, match=r"'grads/sum'.*rank 1 did not arrive") as e:
                sess.run(y, {x: np.ones(2, np.float32)})
            assert time.monotonic() - t < 5
            assert e.value.op is not None and e.value.op.name == "grads/sum"
        return "timed out"

    assert world.run(body) == ["timed out", "skipped"]


def test_async_collective_overlaps_other_kernels_in_the_executor():
    """The executor starts the collective first and only waits where its value is needed."""
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (3,))
        v = cf.placeholder(cf.float32, (50, 50))
        y = cc.all_reduce(x)
        busy = cf.reduce_sum(cf.matmul(v, v))
        out = y * busy
    world = cc.ThreadWorld(2, timeout=10)

    def body(c):
        with cf.Session(graph=g, config={"comm": c}) as sess:
            plan = sess.plan_for(out, {x: np.ones(3, np.float32), v: np.ones((50, 50), np.float32)})
            types = [op.type for op in plan.ops]
            r = sess.run(out, {x: np.ones(3, np.float32), v: np.ones((50, 50), np.float32)})
        return types, r

    for types, r in world.run(body):
        assert types.index("AllReduce") < types.index("MatMul")  # issued before the compute
        np.testing.assert_allclose(r, np.full(3, 2.0 * 50 * 50 * 50))


# -- whole MPI jobs that fail (each starts its own mpiexec) -----------------------------------
# They must end quickly, non-zero, with the culprit's error shown.  Skipped when this file
# itself runs under mpiexec with --with-mpi.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIEXEC = shutil.which("mpiexec") or shutil.which("mpirun")


def _run_job(tmp_path, n, script, env_extra=None, limit=60):
    pytest.importorskip("mpi4py")
    if MPIEXEC is None:
        pytest.skip("no mpiexec on PATH")
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(script))
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.update(env_extra or {})
    t = time.monotonic()
    p = subprocess.run([MPIEXEC, "-n", str(n), "--oversubscribe", sys.executable, str(path)],
                       env=env, capture_output=True, text=True, timeout=limit)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t


@pytest.mark.mpi_skip
def test_uncaught_exception_on_one_rank_aborts_every_rank(tmp_path):
    rc, out, secs = _run_job(tmp_path, 2, """
        import numpy as np
        import collflow as cf
        comm = cf.comm.init()            # installs the abort hook (2 ranks)
        comm.allreduce(np.ones(3))
        if comm.rank == 1:
            raise ValueError("boom from rank 1")
        comm.allreduce(np.ones(3))       # rank 0 would wait here for the 300 s default timeout
        print("rank 0 must never get here", flush=True)
    """)
    assert rc != 0, out
    assert "[rank 1] ValueError: boom from rank 1" in out, out
    assert "[rank 1] Traceback" in out
    assert "must never get here" not in out
    assert secs < 45, f"the job took {secs:.1f} s to die"


@pytest.mark.mpi_skip
def test_uncaught_timeout_names_the_missing_rank_and_ends_the_job(tmp_path):
    rc, out, secs = _run_job(tmp_path, 3, """
        import time
        import numpy as np
        import collflow as cf
        comm = cf.comm.init()
        comm.allreduce(np.ones(3), name="warmup")
        if comm.rank == 2:
            time.sleep(60)               # skips the next collective and never comes back
        comm.allreduce(np.ones(3), name="step/grads")
        print("nobody must get here", flush=True)
    """, env_extra={"COLLFLOW_COLLECTIVE_TIMEOUT": "1"})
    assert rc != 0, out
    assert "DeadlineExceededError" in out and "rank 2 did not arrive" in out and "'step/grads'" in out, out
    assert "nobody must get here" not in out
    assert secs < 45, f"the job took {secs:.1f} s to die"


def test_thread_world_run_a_failing_rank_releases_the_others():
    world = cc.ThreadWorld(2)  # 300 s timeout: the others must not wait for it
    seen = []

    def body(c):
        if c.rank == 0:
            raise KeyError("rank 0 broke")
        try:
            c.allreduce(np.ones(2))
        except cf.errors.AbortedError as e:
            seen.append(str(e))

    t = time.monotonic()
    with pytest.raises(KeyError, match="rank 0 broke"):
        world.run(body)
    assert time.monotonic() - t < 10
    assert len(seen) == 1 and "rank 0 failed: KeyError" in seen[0]


def test_timeline_files_per_rank_and_chrome_trace_format(tmp_path):
    import json
    from collflow.comm.timeline import CommTimeline, timeline_path
    assert timeline_path(str(tmp_path / "t.json"), 0) == str(tmp_path / "t.json")
    assert timeline_path(str(tmp_path / "t.json"), 2) == str(tmp_path / "t.rank2.json")
    assert timeline_path(str(tmp_path / "t_{rank}.json"), 3) == str(tmp_path / "t_3.json")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        CommTimeline(str(tmp_path / "missing" / "t.json"))
    c = cf.comm.LocalCommunicator()
    path = c.start_timeline(str(tmp_path / "t.json"))
    c.timeline.span("NEGOTIATE g", 1, 1.0, 1.5, args={"seq": 0})
    c.timeline.flight("g", 0, 1.5, 2.0, args={"mode": "nonblocking"})
    assert c.stop_timeline() == path and c.stop_timeline() is None
    with open(path) as f:
        doc = json.load(f)
    names = [(e["ph"], e["name"]) for e in doc["traceEvents"]]
    assert ("X", "NEGOTIATE g") in names and ("b", "g") in names and ("e", "g") in names
    x = next(e for e in doc["traceEvents"] if e["ph"] == "X")
    assert x["dur"] == pytest.approx(5e5)
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]  # written atomically
