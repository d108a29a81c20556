"""HierarchicalCommunicator under mpiexec (-n 2 and -n 3 in scripts/test.sh; 4 ranks as 2 x 2
hosts in tests/test_hierarchical.py): every host layout the world allows, against the flat
MPICommunicator on the same data."""
import numpy as np
import pytest

pytestmark = pytest.mark.mpi

MPI = pytest.importorskip("mpi4py.MPI")

from collflow.comm import HierarchicalCommunicator, MPICommunicator  # noqa: E402


def _layouts(size):
    """Host labels per rank: every split of the ranks into consecutive hosts."""
    out = []
    for mask in range(1 << (size - 1)):
        labels, h = [0], 0
        for r in range(1, size):
            if mask >> (r - 1) & 1:
                h += 1
            labels.append(h)
        out.append(",".join(map(str, labels)))
    return out


@pytest.fixture(scope="module")
def comms():
    size = MPI.COMM_WORLD.Get_size()
    # the flat MPI path (as across hosts): a sum, then one division for "mean"
    flat = MPICommunicator(MPI.COMM_WORLD, timeout=60, shm=False)
    hier = {lay: HierarchicalCommunicator(MPI.COMM_WORLD, timeout=60, hosts=lay) for lay in _layouts(size)}
    yield flat, hier
    for c in hier.values():
        c.close()
    flat.close()


def _same_everywhere(flat, a):
    g = flat.allgather(np.ascontiguousarray(a).reshape(1, -1))
    return all(np.array_equal(g[i], g[0]) for i in range(g.shape[0]))


def test_topology(comms):
    flat, hier = comms
    for lay, c in hier.items():
        labels = lay.split(",")
        assert c.size == flat.size and c.rank == flat.rank
        assert c.num_hosts == len(set(labels)) and c.host == int(labels[c.rank])
        assert c.local_size == labels.count(labels[c.rank])
        assert c.is_leader == (labels.index(labels[c.rank]) == c.rank)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_allreduce_equals_the_flat_path_and_is_bit_identical_everywhere(comms, op):
    flat, hier = comms
    rng = np.random.default_rng(100 + flat.rank)
    exact = rng.integers(-1000, 1000, size=(33, 7)).astype(np.float64)   # sums are exact
    noisy = rng.standard_normal(4099).astype(np.float32)
    for lay, c in hier.items():
        got = c.allreduce(exact, op=op)
        np.testing.assert_array_equal(got, flat.allreduce(exact, op=op), err_msg=lay)
        r = c.allreduce(noisy, op=op)
        np.testing.assert_allclose(r, flat.allreduce(noisy, op=op), rtol=1e-5, atol=1e-5, err_msg=lay)
        assert _same_everywhere(flat, r), lay


def test_integers_and_many_in_flight_waited_in_any_order(comms):
    flat, hier = comms
    for lay, c in hier.items():
        xs = [np.full(5 + k, flat.rank + k, dtype=np.int64) for k in range(6)]
        hs = [c.allreduce_async(x, name=f"g{k}") for k, x in enumerate(xs)]
        order = [3, 0, 5, 1, 4, 2]
        got = {k: hs[k].wait() for k in order}
        for k in range(6):
            want = sum(r + k for r in range(flat.size))
            np.testing.assert_array_equal(got[k], np.full(5 + k, want), err_msg=lay)


def test_other_collectives_run_on_the_world(comms):
    flat, hier = comms
    for lay, c in hier.items():
        g = c.allgather(np.array([flat.rank]))
        np.testing.assert_array_equal(g, np.arange(flat.size))
        b = c.broadcast(np.array([flat.rank * 10.0]), root=flat.size - 1)
        assert b[0] == (flat.size - 1) * 10.0
        vals, counts = c.alltoallv(np.arange(flat.size, dtype=np.float64) + 100 * flat.rank,
                                   [1] * flat.size)
        np.testing.assert_array_equal(vals, np.arange(flat.size) * 100.0 + flat.rank)


def test_only_leaders_send_between_hosts(comms):
    flat, hier = comms
    x = np.ones(1000, dtype=np.float64)
    for lay, c in hier.items():
        c.reset_stats()
        c.allreduce(x)
        assert c.inter_host_bytes_sent == (x.nbytes if c.is_leader and c.num_hosts > 1 else 0), lay
