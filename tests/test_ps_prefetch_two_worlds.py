"""The next batch's route carried in this step's gradient push (embedding_lookup_many with
next_ids, cf.train.sharded.RoutePrefetch), written once per rank and run in two worlds
(tests/worlds.py): thread ranks in the serial run, MPI ranks under `mpiexec -n 2|3`.

It trains exactly the parameters of the usual lookup, makes one exchange a step fewer after
the first, and routes ids itself when they are not the ones routed the run before.  (Ranks
that feed unlike - one routes again, the others feed the carried route - issue different
collectives; the cross-rank collective check reports it on every rank, or MPI does
(MPI_ERR_TRUNCATE) when the unlike all-to-alls meet first: an error, not a hang, but not a
deterministic one, so it is not asserted here.)
"""
import numpy as np
import pytest

import collflow as cf
from collflow.train import sharded as sh
import ps_model as pm


@pytest.mark.parametrize("opt,strategy", [("adam", "mod"), ("adagrad", "div")])
def test_prefetched_routes_train_the_same_parameters(world, opt, strategy):
    def body(comm):
        plain = pm.train(pm.build("ps", opt, comm, strategy, seed=5), comm, steps=5)
        fetched = pm.train(pm.build("ps", opt, comm, strategy, seed=5, prefetch_routes=True), comm, steps=5)
        assert set(plain) == set(fetched)
        for name, (ids, val) in plain.items():
            np.testing.assert_array_equal(fetched[name][1], val, err_msg=name)
    world.run(body)


def _run(m, comm, steps, before_run=None):
    """(losses, all-to-all calls of each run) training with RoutePrefetch."""
    losses, calls = [], []
    with cf.Session(graph=m.graph, config={"comm": comm}) as s:
        s.run(m.init_op)
        s.run(m.bcast_op)
        pf = sh.RoutePrefetch(m.graph)
        for k, fd in enumerate(m.batches(steps)):
            if before_run is not None:
                fd = before_run(k, fd, pf)
            n0 = comm.stats["alltoallv_calls"]
            out = s.run([m.loss, m.train_op] + pf.fetches, pf.feed(fd))
            pf.update(out[2:])
            calls.append(comm.stats["alltoallv_calls"] - n0)
            losses.append(out[0])
    return losses, calls


def test_a_step_makes_one_exchange_fewer_after_the_first(world):
    def body(comm):
        _, calls = _run(pm.build("ps", "adam", comm, prefetch_routes=True), comm, steps=4)
        # first run: route, rows, push (+ the next route); then rows and push + next route only
        assert calls == [3, 2, 2, 2]
    world.run(body)


def test_ids_other_than_the_routed_ones_are_routed_again(world):
    def body(comm):
        def wrong_next(k, fd, pf):
            fd = dict(fd)
            if k == 1:  # every rank announces other ids than it will feed at step 2
                fd[m.next_ids] = (fd[m.next_ids] + 1) % pm.VOCAB
            return fd
        m = pm.build("ps", "adam", comm, prefetch_routes=True)
        losses, calls = _run(m, comm, steps=4, before_run=wrong_next)
        assert calls == [3, 2, 3, 2]  # step 2 routed its own ids
        plain = pm.train(pm.build("ps", "adam", comm), comm, steps=4)
        np.testing.assert_array_equal(losses, plain["__losses__"][1])
    world.run(body)


def test_route_prefetch_needs_a_prefetching_lookup_and_its_feeds(world):
    def body(comm):
        m = pm.build("ps", "adam", comm)
        with pytest.raises(cf.errors.InvalidArgumentError, match="no embedding_lookup_many"):
            sh.RoutePrefetch(m.graph)
        m = pm.build("ps", "adam", comm, prefetch_routes=True)
        pf = sh.RoutePrefetch(m.graph)
        fd = next(m.batches(1))
        del fd[m.next_ids]
        with pytest.raises(cf.errors.InvalidArgumentError, match="next ids"):
            pf.feed(fd)
        with pytest.raises(cf.errors.InvalidArgumentError, match="values of"):
            pf.update([])
    world.run(body)


def test_a_single_table_and_a_second_gradient_build(world):
    """One table looked up with next_ids (its own PSGatherN of one output) trains as the plain
    lookup; a second gradient of the same lookup (here: its norm, never run in the step) adds
    no exchange when RoutePrefetch is told the train op, nor by default (first build kept)."""
    def body(comm):
        def build(prefetch):
            g = cf.Graph()
            with g.as_default():
                ids = cf.placeholder(cf.int64, (None,), name="ids")
                nxt = cf.placeholder(cf.int64, (None,), name="next_ids") if prefetch else None
                sv = sh.ShardedVariable("tab", (pm.VOCAB, 2), cf.float64, initializer=0.3, comm=comm)
                (e,) = sh.embedding_lookup_many([sv], ids, next_ids=nxt)
                assert e.shape.as_list() == [None, 2]
                loss = cf.reduce_sum(e * e * cf.constant([1.0, 2.0], cf.float64))
                opt = sh.ShardedSyncReplicasOptimizer(cf.train.AdamOptimizer(0.1), comm=comm)
                train = opt.minimize(loss)
                extra = cf.gradients(loss * 2.0, [sv.shard.value()]) if prefetch else None
                init = cf.global_variables_initializer()
            return g, ids, nxt, sv, loss, train, init, extra
        rng = np.random.default_rng(comm.rank)
        batches = [rng.integers(0, pm.VOCAB, size=5 + comm.rank) for _ in range(5)]
        results = []
        for prefetch, pick in ((False, None), (True, "train_op"), (True, "default")):
            g, ids, nxt, sv, loss, train, init, extra = build(prefetch)
            with cf.Session(graph=g, config={"comm": comm}) as s:
                s.run(init)
                pf = (sh.RoutePrefetch(g, train) if pick == "train_op" else sh.RoutePrefetch(g)) if prefetch else None
                losses, calls = [], []
                for k, b in enumerate(batches):
                    fd = {ids: b}
                    n0 = comm.stats["alltoallv_calls"]
                    if pf is None:
                        losses.append(s.run([loss, train], fd)[0])
                    else:
                        fd[nxt] = batches[k + 1] if k + 1 < len(batches) else b
                        out = s.run([loss, train] + pf.fetches, pf.feed(fd))
                        pf.update(out[2:])
                        losses.append(out[0])
                    calls.append(comm.stats["alltoallv_calls"] - n0)
                results.append((losses, s.run(sv.shard.value()), calls))
        for losses, table, calls in results[1:]:
            np.testing.assert_array_equal(losses, results[0][0])
            np.testing.assert_array_equal(table, results[0][1])
            assert calls == [3, 2, 2, 2, 2]
    world.run(body)
