"""Every collective against NumPy, written once per rank and run in two worlds (tests/worlds.py):
on thread ranks (2 and 3) in the serial run, and on MPI ranks through both transports under
`mpiexec -n 2|3 ... --with-mpi` (scripts/test.sh runs this file in its MPI stages too); the
`world` fixture comes from tests/worlds.py through conftest.py.

Every rank generates every rank's input from seeds, so each can compute the expected result on
its own (with collflow.comm.local.reference and with plain NumPy).
"""
import numpy as np
import pytest

from collflow.comm.local import reference
from worlds import assert_close, rank_data

DTYPES = [np.float32, np.float64, np.int32, np.float16]
_ids = lambda d: np.dtype(d).name  # noqa: E731


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", DTYPES, ids=_ids)
def test_allreduce(world, dtype, op):
    def body(comm):
        if op == "mean" and np.dtype(dtype).kind != "f":
            pytest.skip("mean is for floating types")
        n, r = comm.size, comm.rank
        lo, hi = (1, 2) if op == "prod" else (-3, 3)
        xs = [rank_data(s, (5, 3), dtype, seed=1, low=lo, high=hi) for s in range(n)]
        got = comm.allreduce(xs[r], op=op, name=f"t/{op}")
        assert_close(got, reference("allreduce", xs, op=op)[r], dtype)
        if op == "sum":
            assert_close(got, np.sum(np.stack(xs).astype(np.float64), axis=0).astype(dtype), dtype)
        assert not np.shares_memory(got, xs[r])
    world.run(body)


def test_allreduce_bool_scalar_empty_and_large(world):
    def body(comm):
        n, r = comm.size, comm.rank
        bs = [rank_data(s, (7,), bool, seed=2) for s in range(n)]
        np.testing.assert_array_equal(comm.allreduce(bs[r], "max"), np.logical_or.reduce(bs))
        np.testing.assert_array_equal(comm.allreduce(bs[r], "min"), np.logical_and.reduce(bs))
        s = comm.allreduce(np.float64(r + 1))
        assert s.shape == () and s == n * (n + 1) / 2
        assert comm.allreduce(np.zeros((0, 4), np.float32)).shape == (0, 4)
        big = np.full(1 << 20, r + 1, dtype=np.float32)  # 4 MiB: several rounds inside MPI
        np.testing.assert_array_equal(comm.allreduce(big, "mean"), np.full(1 << 20, (n + 1) / 2, np.float32))
    world.run(body)


@pytest.mark.parametrize("dtype", DTYPES, ids=_ids)
def test_allgather(world, dtype):
    def body(comm):
        n, r = comm.size, comm.rank
        xs = [rank_data(s, (2, 3), dtype, seed=3) for s in range(n)]
        assert_close(comm.allgather(xs[r]), np.concatenate(xs), dtype)
        ss = [rank_data(s, (), dtype, seed=4) for s in range(n)]
        assert_close(comm.allgather(ss[r]), np.stack(ss), dtype)
    world.run(body)


@pytest.mark.parametrize("dtype", DTYPES, ids=_ids)
def test_allgatherv_variable_rows(world, dtype):
    def body(comm):
        n, r = comm.size, comm.rank
        rows = [(2 * s + 1) % 3 for s in range(n)]  # 1, 0, 2, ...: one rank may send nothing
        xs = [rank_data(s, (rows[s], 2, 2), dtype, seed=5) for s in range(n)]
        vals, counts = comm.allgatherv(xs[r], name="gv")
        assert_close(vals, np.concatenate(xs), dtype)
        np.testing.assert_array_equal(counts, rows)
        vals2, counts2 = comm.allgatherv(xs[r], counts=rows, name="gv-known")  # one phase when counts are known
        assert_close(vals2, np.concatenate(xs), dtype)
        np.testing.assert_array_equal(counts2, rows)
    world.run(body)


@pytest.mark.parametrize("dtype", DTYPES, ids=_ids)
def test_broadcast_from_every_root(world, dtype):
    def body(comm):
        n, r = comm.size, comm.rank
        xs = [rank_data(s, (4,), dtype, seed=6) for s in range(n)]
        for root in range(n):
            got = comm.broadcast(xs[r], root=root, name=f"b{root}")
            assert_close(got, xs[root], dtype)
            assert not np.shares_memory(got, xs[r])
    world.run(body)


@pytest.mark.parametrize("dtype", DTYPES, ids=_ids)
def test_alltoall(world, dtype):
    def body(comm):
        n, r = comm.size, comm.rank
        xs = [rank_data(s, (2 * n, 3), dtype, seed=7) for s in range(n)]
        got = comm.alltoall(xs[r])
        assert_close(got, reference("alltoall", xs)[r], dtype)
        assert_close(got, np.concatenate([xs[s][2 * r:2 * r + 2] for s in range(n)]), dtype)
    world.run(body)


@pytest.mark.parametrize("dtype", DTYPES, ids=_ids)
def test_alltoallv_variable_counts(world, dtype):
    def body(comm):
        n, r = comm.size, comm.rank
        sends = [[(s + 2 * d) % 3 for d in range(n)] for s in range(n)]  # zeros included
        xs = [rank_data(s, (sum(sends[s]), 2), dtype, seed=8) for s in range(n)]
        want_vals, want_counts = reference("alltoallv", xs, counts=sends)[r]
        vals, counts = comm.alltoallv(xs[r], sends[r], name="a2av")
        assert_close(vals, want_vals, dtype)
        np.testing.assert_array_equal(counts, want_counts)
        vals, counts = comm.alltoallv(xs[r], sends[r], recv_counts=[sends[s][r] for s in range(n)])
        assert_close(vals, want_vals, dtype)
    world.run(body)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=_ids)
def test_reduce_scatter_and_reduce(world, dtype):
    def body(comm):
        n, r = comm.size, comm.rank
        xs = [rank_data(s, (2 * n, 2), dtype, seed=9) for s in range(n)]
        assert_close(comm.reduce_scatter(xs[r]), reference("reduce_scatter", xs, counts=[[2] * n] * n)[r], dtype)
        counts = [s for s in range(n)]
        counts[0] += 2 * n - sum(counts)
        assert_close(comm.reduce_scatter(xs[r], counts=counts, op="max"),
               reference("reduce_scatter", xs, op="max", counts=[counts] * n)[r], dtype)
        for root in range(n):
            got = comm.reduce(xs[r], root=root)
            if r == root:
                assert_close(got, reference("reduce", xs, root=root)[r], dtype)
            else:
                assert got is None
    world.run(body)


def test_barrier_and_stats(world):
    def body(comm):
        r = comm.rank
        comm.reset_stats()
        comm.barrier()
        x = np.ones(100, np.float64)
        comm.allreduce(x)
        comm.broadcast(x, root=0)
        s = comm.stats
        assert s["barrier_calls"] == 1 and s["allreduce_calls"] == 1 and s["calls"] == 3
        assert s["allreduce_bytes_sent"] == 800
        assert s["broadcast_bytes_sent"] == (800 if r == 0 else 0)
        assert s["bytes_sent"] == 800 + (800 if r == 0 else 0)
    world.run(body)
