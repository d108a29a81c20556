"""The scaling model (collflow/profile/): its formulas against hand-computed cases, its
calibration against a fake transport of known alpha and beta, its profiles of real steps."""
import math

import numpy as np
import pytest

import collflow as cf
from collflow.comm.base import CompletedHandle, Communicator
from collflow.errors import InvalidArgumentError
from collflow.profile import (Cluster, Constant, CostModel, FlatRing, Hierarchical, Link, LoopbackCommunicator,
                              Lognormal, Measured, ProfileFamily, ScaleModel, Segment, StepProfile, backup_speedup,
                              expected_unique, expected_unique_fields, fit_affine, link_from_fit, order_stat_mean,
                              order_stat_quantile, pairwise_alltoall, profile_step, replay, ring_allgather,
                              ring_allreduce, ring_reduce_scatter, time_collective, time_sync_point,
                              zipf_probabilities)
from collflow.profile import published
from collflow.profile.stragglers import Distribution

FAST = Link("fast", 1e-6, 1e-10)
FREE = Link("free", 0.0, 0.0)
SLOW = Link("slow", 1e-5, 1e-9)


# -- collective costs ---------------------------------------------------------------------------------

def test_ring_costs_by_hand():
    # 2(n-1) alpha + 2(n-1)/n bytes beta, n = 4: 6e-5 + 1.5e-3
    assert ring_allreduce(1e6, 4, SLOW) == pytest.approx(6e-5 + 1.5e-3)
    assert ring_reduce_scatter(1e6, 4, SLOW) == pytest.approx(3e-5 + 0.75e-3)
    assert ring_allgather(1e6, 4, SLOW) == pytest.approx(3 * (1e-5 + 1e-3))
    assert pairwise_alltoall(1e6, 4, SLOW) == pytest.approx(3e-5 + 0.75e-3)
    for f in (ring_allreduce, ring_reduce_scatter, ring_allgather, pairwise_alltoall):
        assert f(1e6, 1, SLOW) == 0.0


def test_link_from_line_rate():
    link = Link.from_rate("x", 2e-6, gbit_per_s=25)
    assert link.beta == pytest.approx(8 / 25e9)
    assert Link.from_rate("y", 0, gbyte_per_s=100, efficiency=0.5).bandwidth == pytest.approx(50e9)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        Link.from_rate("z", 0)
    with pytest.raises(InvalidArgumentError, match="alpha and beta"):
        Link("bad", -1.0, 0.0)


def test_flat_ring_waits_for_its_slowest_hop():
    c = Cluster("2/host", 2, FAST, SLOW)
    ring = FlatRing(c)
    # one host: the intra-host ring
    assert ring.allreduce(4e6, 2) == pytest.approx(ring_allreduce(4e6, 2, FAST))
    # two hosts: 6 steps of 1e6 bytes, each as slow as the inter-host hop: 1e-5 + 1e-3
    assert ring.allreduce(4e6, 4) == pytest.approx(6 * (1e-5 + 1e-3))
    assert ring.allgather(1e6, 4) == pytest.approx(3 * (1e-5 + 1e-3))
    # all-to-all of a 4 MB buffer: 1 MB per destination; the 2 ranks of a host share the NIC
    # for the 2 MB each sends off the host: 3 alpha + max(1e6 * 1e-10, 2 * 2e6 * 1e-9)
    assert ring.alltoall(4e6, 4) == pytest.approx(3e-5 + 4e-3)
    assert ring.cost("allgatherv", 1e6, 4) == ring.allgather(1e6, 4)
    # a software overhead per call, on more than one rank
    assert FlatRing(c, overhead=1e-4).cost("allreduce", 4e6, 4) == pytest.approx(6 * (1e-5 + 1e-3) + 1e-4)
    assert FlatRing(c, overhead=1e-4).cost("allreduce", 4e6, 1) == 0.0
    assert ring.cost("allreduce", 1e6, 1) == 0.0
    with pytest.raises(InvalidArgumentError, match="kind"):
        ring.cost("gossip", 1, 4)


def test_hierarchical_allreduce_by_hand():
    c = Cluster("2/host", 2, FAST, SLOW)
    h = Hierarchical(c)
    # reduce-scatter and all-gather in the host: 2 x (1e-6 + 0.5 * 4e6 * 1e-10) = 4.02e-4;
    # the hosts' all-reduce of 2 MB shards, two rings sharing one NIC: 2e-5 + 4e-3
    assert h.allreduce(4e6, 4) == pytest.approx(4.02e-4 + 2e-5 + 4e-3)
    assert h.allreduce(4e6, 4) < FlatRing(c).allreduce(4e6, 4)
    # one host: the plain ring; many hosts: latency grows with hosts, not ranks
    assert h.allreduce(4e6, 2) == pytest.approx(ring_allreduce(4e6, 2, FAST))
    c8 = Cluster("8/host", 8, FAST, SLOW)
    assert Hierarchical(c8).allreduce(0.0, 512) == pytest.approx(2 * 7 * 1e-6 + 2 * 63 * 1e-5)
    assert FlatRing(c8).allreduce(0.0, 512) == pytest.approx(2 * 511 * 1e-5)


def test_measured_costs_are_the_fits():
    m = Measured({("allreduce", 2): (1e-4, 2e-9)})
    assert m.allreduce(1e6, 2) == pytest.approx(1e-4 + 2e-3)
    assert m.cost("allreduce", 1e6, 1) == 0.0
    with pytest.raises(InvalidArgumentError, match="no measured allgather for 2 ranks"):
        m.allgather(1.0, 2)


# -- calibration against a fake transport ---------------------------------------------------------------

class _FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class _FakeTransport(Communicator):
    """Rank 0 of n whose collectives take exactly their ring cost on `link` (+ jitter) on a
    fake clock."""

    backend = "fake"

    def __init__(self, n, link, clock, jitter=0.0, seed=0):
        super().__init__()
        self._n, self.link, self.clock, self.jitter = n, link, clock, jitter
        self.rng = np.random.default_rng(seed)

    @property
    def rank(self):
        return 0

    @property
    def size(self):
        return self._n

    def _take(self, seconds):
        self.clock.t += seconds * (1 + self.jitter * self.rng.uniform(-1, 1))

    def allreduce_async(self, x, op="sum", name=None, out=None):
        self._take(ring_allreduce(np.asarray(x).nbytes, self._n, self.link))
        return CompletedHandle(np.array(x, copy=True))

    def allgatherv_async(self, x, counts=None, name=None):
        self._take(ring_allgather(x.nbytes, self._n, self.link))
        return CompletedHandle((np.concatenate([x] * self._n), np.full(self._n, x.shape[0])))

    def alltoallv_async(self, x, send_counts, recv_counts=None, name=None):
        self._take(pairwise_alltoall(x.nbytes, self._n, self.link))
        return CompletedHandle((x.copy(), np.asarray(send_counts)))


def test_sync_point_timing_on_a_fake_transport():
    # every iteration: 3 s of work, then an all-reduce of 8 bytes costing 2 alpha on 2 ranks
    clock = _FakeClock()
    comm = _FakeTransport(2, Link("l", 0.25, 0.0), clock)

    def work():
        clock.t += 3.0
    with_sync, alone = time_sync_point(comm, work, iterations=4, repeats=3, clock=clock)
    assert (with_sync, alone) == (pytest.approx(3.5), pytest.approx(3.0))


@pytest.mark.parametrize("kind", ["allreduce", "allgather", "alltoall"])
def test_calibration_recovers_a_known_alpha_and_beta(kind):
    link = Link("true", 7e-6, 1 / 3e9)
    clock = _FakeClock()
    comm = _FakeTransport(4, link, clock, jitter=0.02)
    t = time_collective(comm, kind, [1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22], repeats=9, clock=clock)
    assert t.n == 4 and len(t.seconds) == 5
    got = link_from_fit(kind, 4, *fit_affine(t.sizes, t.seconds))
    assert got.alpha == pytest.approx(link.alpha, rel=0.05)
    assert got.beta == pytest.approx(link.beta, rel=0.05)


def test_fit_affine_exact_and_bad_input():
    a, b = fit_affine([1, 10, 100], [2 + 3 * 1, 2 + 3 * 10, 2 + 3 * 100])
    assert (a, b) == (pytest.approx(2), pytest.approx(3))
    with pytest.raises(InvalidArgumentError, match="two different sizes"):
        fit_affine([5, 5], [1, 1])
    with pytest.raises(InvalidArgumentError, match="positive"):
        fit_affine([1, 2], [1, 0])
    with pytest.raises(InvalidArgumentError, match="kind"):
        time_collective(_FakeTransport(2, FAST, _FakeClock()), "gossip", [64])


# -- the replay -----------------------------------------------------------------------------------------

class _BytesAreSeconds(CostModel):
    name = "bytes are seconds"

    def allreduce(self, nbytes, n):
        return float(nbytes)


def _toy_profile():
    return StepProfile([Segment("compute", 10.0), Segment("launch", 0, "A", (("allreduce", 5.0),)),
                        Segment("compute", 3.0), Segment("launch", 0, "B", (("allreduce", 4.0),)),
                        Segment("compute", 2.0), Segment("wait", 0, "A"), Segment("wait", 0, "B"),
                        Segment("compute", 1.0)])


def test_replay_overlapped_by_hand():
    # A runs 10-15, B 15-19 (the network is busy with A until 15); compute ends at 15;
    # waiting for B until 19, then 1 more: 20
    assert replay(_toy_profile(), _BytesAreSeconds(), 2, overlap=True) == (20.0, 16.0, 9.0)
    # compute twice as slow: A 20-25, B 26-30, compute reaches 30 at the waits: 32
    assert replay(_toy_profile(), _BytesAreSeconds(), 2, overlap=True, slowdown=2.0)[0] == 32.0


def test_replay_without_overlap_runs_collectives_at_their_waits():
    # compute 15, then A (5) and B (4) at the waits, then 1: 25
    assert replay(_toy_profile(), _BytesAreSeconds(), 2, overlap=False) == (25.0, 16.0, 9.0)
    # a cost per point where computing ranks meet: wait A follows compute, wait B does not
    assert replay(_toy_profile(), _BytesAreSeconds(), 2, overlap=False, sync_s=0.5) == (25.5, 16.0, 9.5)
    assert replay(_toy_profile(), _BytesAreSeconds(), 1, overlap=False, sync_s=0.5)[0] == 16.0
    # or a function of the compute since the last meeting point: the step's last 1 s (before
    # the next step's first wait) and its first 15 s
    assert replay(_toy_profile(), _BytesAreSeconds(), 2, overlap=False, sync_s=lambda dt: 0.1 * dt)[0] == \
        pytest.approx(25 + 1.6)
    # one rank: nothing to communicate
    assert replay(_toy_profile(), FlatRing(Cluster("c", 1, FAST, SLOW)), 1)[0] == 16.0


def test_scale_model_synthetic_step_by_hand():
    # forward 1 s, backward 2 s producing 2 GB in 2 buckets; ring of 2 over 1 GB/s: each
    # bucket 2 * 1/2 * 1e9 * 1e-9 = 1 s.  Bucket 0 runs 2-3, bucket 1 3-4: the step is 4 s
    prof = StepProfile.synthetic(1.0, 2.0, 2e9, buckets=2)
    link = Link("1GB/s", 0.0, 1e-9)
    m = ScaleModel(prof, FlatRing(Cluster("1/host", 1, link, link)), batch_per_rank=10)
    p = m.predict(2)
    assert p.step_s == pytest.approx(4.0)
    assert p.efficiency == pytest.approx(0.75)
    assert p.samples_per_s == pytest.approx(20 / 4.0)
    assert p.exposed_comm_s == pytest.approx(1.0) and p.comm_s == pytest.approx(2.0)
    assert m.predict(1).efficiency == 1.0
    no_overlap = ScaleModel(prof, m.costs, 10, overlap=False).predict(2)
    assert no_overlap.step_s == pytest.approx(5.0)


def test_scale_model_stragglers_and_backup_ranks():
    prof = StepProfile.synthetic(1.0, 1.0, 0.0)
    costs = FlatRing(Cluster("c", 1, FREE, FREE))
    # a constant delay: every rank 0.5 s late, with or without backups
    assert ScaleModel(prof, costs, 1, straggler=Constant(0.5)).predict(4).step_s == pytest.approx(2.5)
    # uniform delays on [0, 1]: the slowest of 4 is 4/5 on average, the 3rd of 4 is 3/5,
    # and the quorum of 3 counts 3 ranks' samples
    uni = _Uniform()
    b0 = ScaleModel(prof, costs, 1, straggler=uni).predict(4)
    b1 = ScaleModel(prof, costs, 1, straggler=uni, backup_ranks=1, quorum_s=0.01).predict(4)
    assert b0.step_s == pytest.approx(2.8, abs=1e-3)
    assert b1.step_s == pytest.approx(2.61, abs=1e-3)
    assert b1.samples_per_s == pytest.approx(3 / 2.61, rel=1e-3)
    assert b1.straggler_s == pytest.approx(0.61, abs=1e-3)
    with pytest.raises(InvalidArgumentError, match="backup ranks need more"):
        ScaleModel(prof, costs, 1, backup_ranks=4).predict(4)


def test_profile_family_extends_linearly_in_n():
    def prof(n):
        return StepProfile([Segment("compute", 1.0 + n), Segment("launch", 0, "A", (("allgather", 8.0),)),
                            Segment("wait", 0, "A")], n)
    fam = ProfileFamily({1: StepProfile([Segment("compute", 2.0)], 1), 2: prof(2), 4: prof(4)})
    assert fam.at(1).compute_s == 2.0
    assert fam.at(8).compute_s == pytest.approx(9.0)
    assert fam.at(8).collectives()[0].calls == (("allgather", 8.0),)
    # a segment that only varies a little (noise) keeps its median instead of a slope
    noisy = {n: StepProfile([Segment("compute", t)], n) for n, t in ((2, 10.0), (3, 10.5), (4, 9.8), (8, 10.2))}
    assert ProfileFamily(noisy).at(512).compute_s == pytest.approx(10.1)
    with pytest.raises(InvalidArgumentError, match="different segments"):
        ProfileFamily({2: prof(2), 3: StepProfile([Segment("compute", 1.0)], 3)})
    # independent waits in another order at another size: matched by op, not position
    w = [Segment("launch", 0, "A", (("allreduce", 1.0),)), Segment("launch", 0, "B", (("allreduce", 1.0),))]
    p2 = StepProfile(w + [Segment("wait", 0, "A"), Segment("wait", 0, "B"), Segment("compute", 2.0, "u")], 2)
    p4 = StepProfile(w + [Segment("wait", 0, "B"), Segment("wait", 0, "A"), Segment("compute", 4.0, "u")], 4)
    assert ProfileFamily({2: p2, 4: p4}).at(8).compute_s == pytest.approx(8.0)


# -- order statistics -----------------------------------------------------------------------------------

class _Uniform(Distribution):
    def quantile(self, u):
        return np.asarray(u, dtype=np.float64)


class _Exponential(Distribution):
    def quantile(self, u):
        return -np.log1p(-np.asarray(u, dtype=np.float64))


@pytest.mark.parametrize("k,n", [(1, 1), (3, 5), (10, 10), (1, 10), (511, 512), (512, 512)])
def test_order_statistic_means_of_the_uniform(k, n):
    assert order_stat_mean(_Uniform(), k, n) == pytest.approx(k / (n + 1), rel=1e-3)


@pytest.mark.parametrize("n", [1, 2, 50, 512])
def test_the_slowest_exponential_rank_takes_the_harmonic_number(n):
    assert order_stat_mean(_Exponential(), n, n) == pytest.approx(sum(1 / j for j in range(1, n + 1)), rel=2e-3)


def test_order_statistic_medians():
    assert order_stat_quantile(_Uniform(), 2, 2) == pytest.approx(math.sqrt(0.5), rel=1e-6)
    assert order_stat_quantile(_Uniform(), 1, 1) == pytest.approx(0.5, rel=1e-6)
    # a lognormal's median is its `median`; sigma = 0 is a constant
    assert order_stat_quantile(Lognormal(2.0, 0.7), 1, 1) == pytest.approx(2.0, rel=1e-6)
    assert order_stat_mean(Lognormal(3.0, 0.0), 7, 9) == pytest.approx(3.0)
    # the mean of a lognormal: median * exp(sigma^2 / 2)
    assert order_stat_mean(Lognormal(1.0, 0.5), 1, 1) == pytest.approx(math.exp(0.125), rel=1e-3)
    with pytest.raises(InvalidArgumentError, match="k must be"):
        order_stat_mean(_Uniform(), 0, 3)


def test_processor_sharing_by_hand():
    from collflow.profile.stragglers import processor_sharing, shared_cores_kth
    assert processor_sharing([0, 0], 1.0, 1).tolist() == [2.0, 2.0]
    assert processor_sharing([1, 0], 1.0, 1).tolist() == [2.0, 1.0]
    assert processor_sharing([0, 0, 0], 3.0, 2) == pytest.approx([4.5] * 3)
    # a core each: arrival + work
    assert processor_sharing([0.5, 0, 2], 1.0, 3) == pytest.approx([1.5, 1.0, 3.0])
    assert shared_cores_kth(Constant(0.0), 4, 4, 1.0, 2) == pytest.approx(2.0)
    # with a core each, the k-th finish is the k-th delay plus the work: 2/3 + 1 for the
    # larger of two uniform delays
    assert shared_cores_kth(_Uniform(), 2, 2, 1.0, 2, q=None, samples=4000) == pytest.approx(5 / 3, rel=0.02)


def test_stragglers_sharing_cores_leave_them_to_the_others():
    # 4 ranks on 2 cores, 1 s of compute each at a fair share (2 s replayed): a constant
    # delay makes no difference to who computes with whom; a delay of 1 s for two of them
    # lets the other two compute alone first
    prof = StepProfile([Segment("compute", 1.0)], 4)
    costs = FlatRing(Cluster("c", 4, FREE, FREE))
    m = ScaleModel(prof, costs, 1, slowdown=2.0, straggler=Constant(0.5), cores=2, statistic="median")
    assert m.predict(4).step_s == pytest.approx(2.5)
    assert ScaleModel(prof, costs, 1, slowdown=2.0, straggler=Constant(0.5)).predict(4).step_s == pytest.approx(2.5)


def test_backup_speedup_is_the_tensorflow_papers_definition():
    # t(0) = 2.2 s, t(4) = 1.93 s for 50 workers: 2.2 / 1.93 * 50 / 54
    assert backup_speedup(1.93, 2.2, 50, 4) == pytest.approx(2.2 / 1.93 * 50 / 54)


# -- distinct rows --------------------------------------------------------------------------------------

def test_expected_unique_closed_forms():
    v, m = 1000, 500
    uniform = np.full(v, 1.0 / v)
    assert expected_unique(uniform, m) == pytest.approx(v * (1 - (1 - 1 / v) ** m))
    assert expected_unique([1.0], 10) == pytest.approx(1.0)
    assert expected_unique(uniform, 0) == 0.0
    p = zipf_probabilities(5, 1.0)
    assert p == pytest.approx(np.array([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5]) / (137 / 60))
    assert expected_unique_fields(50, 1.0, 1, 20) == pytest.approx(expected_unique(zipf_probabilities(50, 1.0), 20))
    # two fields drawing the same law, one shifted: disjoint heads for a wide enough vocab
    with pytest.raises(InvalidArgumentError, match="probability vector"):
        expected_unique([0.5, 0.2], 3)


def test_expected_unique_matches_wide_deep_click_data():
    from collflow.models.wide_deep import ClickData
    data = ClickData(5000, num_fields=4, num_dense=1, zipf_exponent=1.0, seed=3)
    got = np.mean([np.unique(data.global_batch(s, 256)[0]).size for s in range(8)])
    assert got == pytest.approx(expected_unique_fields(5000, 1.0, 4, 256), rel=0.03)


# -- the loopback communicator and profiles of real steps -----------------------------------------------

def test_loopback_collectives_are_those_of_equal_ranks():
    comm = LoopbackCommunicator(4)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    h = comm.allreduce_async(x, "sum", name="a")
    assert comm.calls[-1].kind == "allreduce" and comm.calls[-1].nbytes == 24
    assert np.array_equal(h.wait(), 4 * x)
    assert np.array_equal(comm.allreduce(x, "mean"), x)
    vals, counts = comm.allgatherv(x, name="g")
    assert vals.shape == (12, 2) and counts.tolist() == [3, 3, 3, 3]
    assert np.array_equal(comm.reduce_scatter(np.ones(8, np.float32)), np.full(2, 4.0))
    # peers with data of their own: rank p contributes p + x
    peers = LoopbackCommunicator(3, peers=lambda kind, name, x, p: x + p)
    assert np.array_equal(peers.allreduce(np.zeros(2)), np.full(2, 3.0))
    # all-to-alls are mirrored: rank p sends this rank what it sends rank p
    vals, counts = comm.alltoallv(x, [1, 0, 2, 0])
    assert np.array_equal(vals, x) and counts.tolist() == [1, 0, 2, 0]
    with pytest.raises(InvalidArgumentError, match="recv_counts"):
        comm.alltoallv(x, [1, 0, 2, 0], [1, 1, 1, 0])
    shifted = LoopbackCommunicator(2, peers=lambda kind, name, block, p: block + 10 * p)
    assert np.array_equal(shifted.alltoallv(x, [2, 1])[0], np.concatenate([x[:2], x[2:] + 10]))
    # the time computing each result is recorded as a stand-in for the transfer
    assert len(comm.standins) == len([c for c in comm.calls]) and comm.standin_s >= 0
    with pytest.raises(InvalidArgumentError, match="not a rank"):
        LoopbackCommunicator(2, rank=2)


def _mlp(comm, average_parameters):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 32), name="x")
        y = cf.placeholder(cf.int32, (None,), name="y")
        w1 = cf.Variable(np.full((32, 300), 0.01, np.float32), name="w1")   # 9,600 elements
        w2 = cf.Variable(np.full((300, 300), 0.01, np.float32), name="w2")  # 90,000: all-reduced on its own
        b2 = cf.Variable(np.zeros(300, np.float32), name="b2")
        w3 = cf.Variable(np.full((300, 10), 0.01, np.float32), name="w3")
        h = cf.nn.relu(cf.matmul(cf.nn.relu(cf.matmul(x, w1)), w2) + b2)
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(h, w3)))
        opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.01), comm=comm,
                                             fusion_threshold_bytes=200_000, average_parameters=average_parameters)
        train = opt.minimize(loss)
        init = cf.global_variables_initializer()
    sess = cf.Session(graph=g, config={"comm": comm})
    sess.run(init)
    rng = np.random.default_rng(0)
    feed = {x: rng.random((16, 32), dtype=np.float32), y: rng.integers(0, 10, 16).astype(np.int32)}
    return sess, train, feed, opt


@pytest.mark.parametrize("average_parameters", [False, True])
def test_profile_of_a_loopback_step_has_the_bucket_plan(average_parameters):
    comm = LoopbackCommunicator(8)
    sess, train, feed, opt = _mlp(comm, average_parameters)
    prof = profile_step(sess, train, feed, comm=comm, traces=2, repeats=2, warmup=1)
    launches = prof.collectives()
    assert len(launches) == len(opt.buckets) >= 2
    # every parameter's bytes go through an all-reduce once per step
    params = 4 * (32 * 300 + 300 * 300 + 300 + 300 * 10)
    assert prof.comm_bytes() == {"allreduce": params}
    # the gradient path sends w2 (90,000 elements >= 65,536) as a call of its own
    if not average_parameters:
        assert any(("allreduce", 4 * 90_000) in s.calls for s in launches)
    waits = [s.op for s in prof.segments if s.kind == "wait"]
    assert sorted(waits) == sorted(s.op for s in launches)
    assert prof.step_s > 0 and 0 < prof.compute_s <= prof.step_s * 1.5
    # the model's step on 8 ranks of a free network is the profile's compute
    free = FlatRing(Cluster("free", 8, FREE, FREE))
    assert ScaleModel(prof, free, 16).predict(8).step_s == pytest.approx(prof.compute_s)
    sess.close()


def test_from_step_stats_needs_a_trace():
    from collflow.profile import from_step_stats
    with pytest.raises(InvalidArgumentError, match="trace_level"):
        from_step_stats(cf.RunMetadata().step_stats)


# -- published configurations -------------------------------------------------------------------------

def test_horovod_configurations_predict_an_efficiency():
    for run in published.HOROVOD_RUNS:
        prof = published.horovod_profile(run)
        assert prof.compute_s == pytest.approx(run.step_s)
        assert prof.comm_bytes()["allreduce"] == pytest.approx(4 * run.params)
        p = ScaleModel(prof, published.horovod_cluster(), run.batch).predict(run.gpus)
        assert 0 < p.efficiency < 1
    # a faster network never predicts a lower efficiency
    run = published.HOROVOD_RUNS[1]
    eff = [ScaleModel(published.horovod_profile(run), published.horovod_cluster(net), run.batch).predict(128).efficiency
           for net in ("25GbE-TCP", "25GbE-RoCE", "100GbE-RoCE")]
    assert eff[0] <= eff[1] <= eff[2] < 1
