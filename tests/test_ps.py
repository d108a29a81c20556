"""The sharded parameter server on simulated ranks (ThreadWorld): layouts, routed lookups and
pushes, PS-vs-all-reduce equivalence, errors, resharding checkpoints, wide_deep."""
import numpy as np
import pytest

import collflow as cf
from collflow.comm import ThreadWorld
from collflow.comm import ps as P
from collflow.models.wide_deep import ClickData, build_wide_deep
from collflow.nn.embedding_ps import Embedding
from collflow.train import sharded as sh
from collflow.train.sharded_checkpoint import ShardedSaver, restore_shards, save_shards, shard_files
import ps_model as pm


# -- layouts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("vocab,n", [(1, 1), (10, 1), (10, 3), (11, 2), (2, 3), (100, 7), (7, 7)])
def test_layout_partitions_every_row_exactly_once(strategy, vocab, n):
    lays = [P.ShardLayout("t", vocab, (2,), "float32", strategy, n, k) for k in range(n)]
    ids = np.concatenate([lay.global_ids() for lay in lays])
    assert sorted(ids.tolist()) == list(range(vocab))
    assert sum(lay.rows() for lay in lays) == vocab
    all_ids = np.arange(vocab)
    owner = lays[0].owner(all_ids)
    local = lays[0].local_rows(all_ids)
    for k, lay in enumerate(lays):
        g = lay.global_ids()
        assert np.array_equal(owner[g], np.full(g.shape, k))
        assert np.array_equal(local[g], np.arange(g.shape[0]))
    if strategy == "div":  # contiguous ranges, the first vocab % n shards one row longer
        assert all(np.array_equal(lay.global_ids(), np.arange(lay.start(), lay.start() + lay.rows())) for lay in lays)
        sizes = [lay.rows() for lay in lays]
        assert sizes == sorted(sizes, reverse=True) and max(sizes) - min(sizes) <= 1


def test_plan_requests_dedups_and_orders_by_owner():
    lay = P.ShardLayout("t", 10, (), "float32", "mod", 3, 0)
    ids = np.array([5, 3, 5, 0, 9, 3, 4])
    rows, counts, inv = P.plan_requests(lay, ids)
    assert counts.tolist() == [3, 1, 1]        # owners of {0, 3, 9}, {4}, {5}
    # the owner-ordered unique ids, reconstructed, give back every id
    owner_ids = np.concatenate([rows[:3] * 3 + 0, rows[3:4] * 3 + 1, rows[4:5] * 3 + 2])
    assert np.array_equal(owner_ids[inv], ids)


def test_segment_sum_is_a_fixed_order_sum():
    rng = np.random.default_rng(0)
    vals = rng.normal(size=(50, 3))
    seg = rng.integers(0, 7, size=50)
    ref = np.zeros((7, 3))
    np.add.at(ref, seg, vals)
    np.testing.assert_allclose(P.segment_sum(vals, seg, 7), ref, rtol=1e-13)
    assert P.segment_sum(vals[:0], seg[:0], 2).shape == (2, 3)


# -- lookups and gradients across ranks ---------------------------------------------------------


V, D = 11, 3
FULL = np.arange(V * D, dtype=np.float64).reshape(V, D) / 10.0


def _lookup_world(n, strategy, ids_by_rank, w_by_rank):
    world = ThreadWorld(n, timeout=30)
    models = []
    for r in range(n):
        g = cf.Graph()
        with g.as_default():
            ids = cf.placeholder(cf.int64, (None, 2), name="ids")
            w = cf.placeholder(cf.float64, (None, 2, D), name="w")
            sv = sh.get_variable("emb", (V, D), cf.float64, initializer=FULL, partitioner=strategy,
                                 comm=world.comm(r))
            y = sh.embedding_lookup(sv, ids)
            grad, = cf.gradients(cf.reduce_sum(y * w), [sv.shard])
            models.append((g, ids, w, sv, y, grad, cf.global_variables_initializer()))

    def fn(c):
        g, ids, w, sv, y, grad, init = models[c.rank]
        with cf.Session(graph=g, config={"comm": c}) as s:
            s.run(init)
            c.reset_stats()
            yv, gv = s.run([y, grad], {ids: ids_by_rank[c.rank], w: w_by_rank[c.rank]})
            return yv, gv, sv.owned_ids(), dict(c.stats)
    return world.run(fn)


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_routed_lookup_and_its_gradient_match_the_whole_table(n, strategy):
    rng = np.random.default_rng(n)
    ids = rng.integers(0, V, size=(n, 6, 2))
    ids[0, :, :] = ids[0, 0, 0]  # one rank asks for one row only (others get empty requests)
    w = rng.normal(size=(n, 6, 2, D))
    res = _lookup_world(n, strategy, ids, w)
    ref_grad = np.zeros_like(FULL)
    for r in range(n):
        np.add.at(ref_grad, ids[r].reshape(-1), w[r].reshape(-1, D))
    for r in range(n):
        yv, gv, owned, _ = res[r]
        assert yv.shape == (6, 2, D)
        np.testing.assert_array_equal(yv, FULL[ids[r]])
        # the shard's gradient: every rank's rows for this rank's ids, summed over ranks
        dense = np.zeros((owned.shape[0], D))
        np.add.at(dense, gv.indices, gv.values)
        np.testing.assert_allclose(dense, ref_grad[owned], rtol=1e-13)


def test_only_the_requested_rows_travel():
    n = 2
    ids = np.array([[[0, 2], [2, 0]], [[1, 1], [3, 3]]])  # mod over 2: rank 0 owns even ids
    w = np.ones((n, 2, 2, D))
    res = _lookup_world(n, "mod", ids, w)
    H = P.ROUTE_HEADER
    for r in range(n):
        # every id is local: only the route header and the push's flag row go to the other rank
        assert res[r][3]["alltoallv_bytes_sent"] == 8 * H + 8 * D
    # rank 0 looks up ids 1 and 3 (rank 1's), rank 1 looks up id 0 (rank 0's)
    ids2 = np.array([[[1, 1], [3, 3]], [[0, 0], [0, 0]]])
    res2 = _lookup_world(n, "mod", ids2, w)
    # rank 0: asks for 2 rows, serves 1 row, pushes a flag row and 2 gradient rows
    assert res2[0][3]["alltoallv_bytes_sent"] == 8 * (H + 2) + 8 * D + 8 * (D + 2 * D)
    # rank 1: asks for 1 row, serves 2 rows, pushes a flag row and 1 gradient row
    assert res2[1][3]["alltoallv_bytes_sent"] == 8 * (H + 1) + 8 * 2 * D + 8 * (D + D)


def _many_world(n, fused, ids_by_rank, seed=0):
    """Tables a [V, 3], b [V, 1] (mod), c [V, 2] (read by no loss), d [V, 2] (div: its own
    route): looked up with embedding_lookup_many (fused) or one by one; values, gradients
    (None where no loss reads the table) and the exchanges made."""
    world = ThreadWorld(n, timeout=30)
    rng = np.random.default_rng(seed)
    inits = {"a": rng.normal(size=(V, 3)), "b": rng.normal(size=(V, 1)), "c": rng.normal(size=(V, 2)),
             "d": rng.normal(size=(V, 2))}
    wts = {k: rng.normal(size=(6, 2) + v.shape[1:]) for k, v in inits.items()}
    models = []
    for r in range(n):
        g = cf.Graph()
        with g.as_default():
            ids = cf.placeholder(cf.int64, (None, 2), name="ids")
            svs = [sh.get_variable(k, v.shape, cf.float64, initializer=v, partitioner="div" if k == "d" else "mod",
                                   comm=world.comm(r)) for k, v in sorted(inits.items())]
            if fused:
                ys = sh.embedding_lookup_many(svs, ids)
            else:
                ys = [sh.embedding_lookup(sv, ids) for sv in svs]
            loss = sum(cf.reduce_sum(y * wts[k]) for k, y in zip(sorted(inits), ys) if k != "c")
            grads = cf.gradients(loss, [sv.shard for sv in svs])
            models.append((g, ids, svs, ys, grads, cf.global_variables_initializer()))

    def fn(c):
        g, ids, svs, ys, grads, init = models[c.rank]
        assert grads[2] is None  # table c: no loss reads it
        with cf.Session(graph=g, config={"comm": c}) as s:
            s.run(init)
            c.reset_stats()
            out = s.run([ys, [gr for gr in grads if gr is not None]], {ids: ids_by_rank[c.rank]})
            stats = dict(c.stats)
        types = [op.type for op in g.get_operations()]
        return out, [sv.owned_ids() for sv in svs], stats, types
    return world.run(fn)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lookup_many_exchanges_tables_together_with_the_same_answers(n):
    rng = np.random.default_rng(10 + n)
    ids = rng.integers(0, V, size=(n, 6, 2))
    fused = _many_world(n, True, ids)
    apart = _many_world(n, False, ids)
    for r in range(n):
        (ys_f, gs_f), owned, stats_f, types_f = fused[r]
        (ys_a, gs_a), _, stats_a, types_a = apart[r]
        for yf, ya in zip(ys_f, ys_a):
            np.testing.assert_array_equal(yf, ya)
        for gf, ga in zip(gs_f, gs_a):
            np.testing.assert_array_equal(gf.indices, ga.indices)
            np.testing.assert_allclose(gf.values, ga.values, rtol=1e-13)
        # a, b, c share a route and one exchange each way; d is split otherwise: its own
        assert types_f.count("PSRoute") == 2 and types_f.count("PSGatherN") == 1
        assert types_f.count("PSGather") == 1 and types_f.count("PSPushN") == 1 and types_f.count("PSPush") == 1
        assert types_a.count("PSGather") == 4 and types_a.count("PSPush") == 3
        # route, rows and push for {a, b, c}, and for d: 6 exchanges against 2 routes + 4 + 3
        assert stats_f["alltoallv_calls"] == 6 and stats_a["alltoallv_calls"] == 9


def test_lookup_many_falls_back_for_tables_it_cannot_fuse():
    g = cf.Graph()
    with g.as_default():
        ids = cf.constant(np.array([[1, 2]], dtype=np.int64))
        plain = cf.Variable(np.ones((V, 2)))
        sv = sh.get_variable("t", (V, 2), cf.float64, initializer=np.zeros((V, 2)), partitioner="mod")
        y_plain, y_sv = sh.embedding_lookup_many([plain, sv], ids)
        types = [op.type for op in g.get_operations()]
        assert "PSGatherN" not in types and types.count("PSGather") == 1
        with cf.Session(graph=g) as s:
            s.run(cf.global_variables_initializer())
            a, b = s.run([y_plain, y_sv])
    np.testing.assert_array_equal(a, np.ones((1, 2, 2)))
    np.testing.assert_array_equal(b, np.zeros((1, 2, 2)))


# -- PS mode == all-reduce mode: tests/test_ps_two_worlds.py (both worlds); the hybrid step here ----


def test_hybrid_step_pushes_shards_and_all_reduces_the_rest():
    world = ThreadWorld(2, timeout=30)
    m = pm.build("ps", "adam", world.comm(0))
    types = [op.type for op in m.graph.get_operations()]
    assert types.count("PSRoute") == 1            # both tables share the route of their ids
    # ... and one exchange each way: their rows side by side (PSGatherN, PSPushN)
    assert types.count("PSGatherN") == 1 and types.count("PSPushN") == 1
    assert "PSGather" not in types and "PSPush" not in types
    assert "SparseAllGather" not in types and "IndexedSlicesToDense" not in types
    buckets = [v for b in m.optimizer.buckets for v in b]
    assert not any(name.startswith(("embedding", "wide/part")) for name in buckets)
    assert "deep/w0" in buckets
    # shards and their slots are per-rank state: never broadcast, saved by every rank
    rep = {v.op.name for v in sh.replicated_variables(m.graph)}
    assert not any("part_" in name for name in rep) and "deep/w0" in rep
    assert sorted(sh.shard_state_variables(m.graph)) == [
        "embedding", "embedding/Adam", "embedding/Adam_1", "wide", "wide/Adam", "wide/Adam_1"]


def test_wide_deep_loss_falls_in_both_modes():
    for mode in ("ps", "allreduce"):
        m = build_wide_deep(vocab_size=2000, embedding_dim=8, mode=mode, num_fields=4, hidden=(16,),
                            optimizer="adam", learning_rate=0.02, batch_size=128, sync=False)
        with cf.Session(graph=m.graph) as s:
            s.run(m.init_op)
            losses = [s.run([m.loss, m.train_op], fd)[0] for fd in m.batches(60)]
        first, last = np.mean(losses[:5]), np.mean(losses[-10:])
        assert first > 0.6 and last < first - 0.08, (mode, first, last)


def test_click_data_is_zipf_and_the_same_for_any_number_of_ranks():
    d = ClickData(10_000, num_fields=4, zipf_exponent=1.2, seed=3)
    ids, dense, labels = d.global_batch(5, 600)
    assert ids.shape == (600, 4) and dense.shape == (600, 4) and labels.shape == (600,)
    counts = np.bincount(ids.reshape(-1), minlength=10_000)
    assert counts.max() > 30 * counts.mean()   # a few ids dominate
    parts = [d.batch(5, r, 3, 200) for r in range(3)]
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), ids)
    assert 0 < d.fraction_touched(5, 600) < 0.2


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["vocab", "strategy", "dtype", "shards"])
def test_mismatched_layouts_are_caught_by_the_initializer_on_every_rank(what):
    world = ThreadWorld(2, timeout=30)
    inits = []
    for r in range(2):
        g = cf.Graph()
        with g.as_default():
            kw = dict(name="emb", shape=(V, D), dtype=cf.float64, partition_strategy="mod", comm=world.comm(r))
            if r == 1:
                if what == "vocab":
                    kw["shape"] = (V + 1, D)
                elif what == "strategy":
                    kw["partition_strategy"] = "div"
                elif what == "dtype":
                    kw["dtype"] = cf.float32
                else:
                    kw.update(num_shards=3, shard_index=1)
            sh.ShardedVariable(**kw)
            inits.append((g, cf.global_variables_initializer()))

    def fn(c):
        g, init = inits[c.rank]
        with cf.Session(graph=g, config={"comm": c}) as s:
            with pytest.raises(cf.errors.InvalidArgumentError, match="mismatched shard layouts") as ei:
                s.run(init)
            return str(ei.value)
    msgs = world.run(fn)
    first = [m.split(" (op ")[0].splitlines()[0] for m in msgs]
    assert first[0] == first[1] and "'emb'" in first[0] and "rank 1" in first[0], msgs
    if what == "shards":
        assert "3 shard(s) but the job has 2" in msgs[0]


def test_mismatched_layouts_are_caught_by_the_first_lookup_without_initializer():
    # e.g. shards set from elsewhere: the route's header still catches it before any update
    world = ThreadWorld(2, timeout=30)
    models = []
    for r in range(2):
        g = cf.Graph()
        with g.as_default():
            ids = cf.placeholder(cf.int64, (None,), name="ids")
            sv = sh.ShardedVariable("emb", (V + r, D), cf.float64, initializer=0.0, comm=world.comm(r))
            models.append((g, ids, sv, sh.embedding_lookup(sv, ids)))

    def fn(c):
        g, ids, sv, y = models[c.rank]
        with cf.Session(graph=g, config={"comm": c}) as s:
            sv.shard.load(np.zeros(sv.layout.shard_shape), s)
            with pytest.raises(cf.errors.InvalidArgumentError, match="mismatched shard layouts"):
                s.run(y, {ids: [0, 1]})
    world.run(fn)


def test_sharded_variable_has_no_dense_value_and_bad_arguments_are_named():
    g = cf.Graph()
    with g.as_default():
        sv = sh.get_variable("t", (5, 2), partitioner="div")
        assert isinstance(sv, sh.ShardedVariable) and sv.partition_strategy == "div"
        with pytest.raises(TypeError, match="no value on one rank"):
            cf.convert_to_tensor(sv)
        with pytest.raises(cf.errors.InvalidArgumentError, match="partition strategy"):
            sh.ShardedVariable("u", (5, 2), partition_strategy="range")
        with pytest.raises(cf.errors.InvalidArgumentError, match="partitioner"):
            sh.get_variable("v", (5, 2), partitioner=lambda shape, dtype: [4, 1])
        with pytest.raises(cf.errors.InvalidArgumentError, match="does not fill"):
            sh.ShardedVariable("w", (5, 2), initializer=np.zeros((4, 2)))
        plain = sh.get_variable("p", (3,), initializer=np.ones(3))
        assert isinstance(plain, cf.Variable) and not sh.is_shard_variable(plain)
        assert sh.is_shard_variable(sv.shard) and sh.sharded_variable_of(sv.shard) is sv


def test_embedding_layer_modes_start_from_the_same_table():
    table = np.random.default_rng(0).normal(size=(7, 2))
    ids = np.array([[6, 0], [3, 3]])
    for mode in ("ps", "allreduce"):
        g = cf.Graph()
        with g.as_default():
            emb = Embedding(7, 2, mode=mode, initializer=table, dtype=cf.float64)
            y = emb(cf.constant(ids))
            init = cf.global_variables_initializer()
        with cf.Session(graph=g) as s:
            s.run(init)
            np.testing.assert_array_equal(s.run(y), table[ids])
        assert len(emb.variables) == 1
    with pytest.raises(cf.errors.InvalidArgumentError, match="mode"):
        Embedding(3, 2, mode="nccl")


# -- checkpoints that reshard -------------------------------------------------------------------------


def _ckpt_world(n, strategy, seed):
    world = ThreadWorld(n, timeout=60)
    models = [pm.build("ps", "adam", world.comm(r), strategy, seed=seed + r) for r in range(n)]
    savers = []
    for r, m in enumerate(models):
        with m.graph.as_default():
            savers.append(ShardedSaver(comm=world.comm(r)))
    return world, models, savers


def test_checkpoint_reshards_3_to_2_and_back(tmp_path):
    w3, m3, s3 = _ckpt_world(3, "mod", 5)

    def train_and_save(c):
        m = m3[c.rank]
        with cf.Session(graph=m.graph, config={"comm": c}) as s:
            s.run(m.init_op)
            s.run(m.bcast_op)
            for fd in m.batches(2):
                s.run(m.train_op, fd)
            path = s3[c.rank].save(s, str(tmp_path / "ckpt"), global_step=m.global_step)
            return path, pm.state(s, m)
    res3 = w3.run(train_and_save)
    path3 = res3[0][0]
    assert len(shard_files(path3)) == 3
    before = pm.assemble([r[1] for r in res3])

    # onto 2 ranks, with the other partition strategy too: the same tables, slots and dense state
    w2, m2, s2 = _ckpt_world(2, "div", 50)

    def restore_train_save(c):
        m = m2[c.rank]
        with cf.Session(graph=m.graph, config={"comm": c}) as s:
            res = s2[c.rank].restore(s, path3)
            got = pm.state(s, m)
            for fd in m.batches(1, start=2):
                s.run(m.train_op, fd)
            path = s2[c.rank].save(s, str(tmp_path / "ckpt"), global_step=m.global_step)
            return got, path, pm.state(s, m), res.global_step
    res2 = w2.run(restore_train_save)
    after = pm.assemble([r[0] for r in res2])
    assert res2[0][3] == 2
    for name, val in before.items():
        if name != "__losses__":
            np.testing.assert_array_equal(after[name], val, err_msg=name)

    # and back onto 3 ranks
    trained2 = pm.assemble([r[2] for r in res2])
    path2 = res2[0][1]
    assert len(shard_files(path2)) == 2
    w3b, m3b, s3b = _ckpt_world(3, "mod", 500)

    def restore3(c):
        m = m3b[c.rank]
        with cf.Session(graph=m.graph, config={"comm": c}) as s:
            s3b[c.rank].restore(s, path2)
            return pm.state(s, m)
    back = pm.assemble(w3b.run(restore3))
    for name, val in trained2.items():
        if name != "__losses__":
            np.testing.assert_array_equal(back[name], val, err_msg=name)


def test_shard_restore_reports_what_does_not_match(tmp_path):
    world = ThreadWorld(1)
    c = world.comm(0)
    g = cf.Graph()
    with g.as_default():
        sh.ShardedVariable("emb", (V, D), cf.float64, initializer=FULL, comm=c)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g, config={"comm": c}) as s:
        s.run(init)
        save_shards(s, str(tmp_path / "a.h5"), c)
    g2 = cf.Graph()
    with g2.as_default():
        sh.ShardedVariable("emb", (V + 1, D), cf.float64, comm=c)
        sh.ShardedVariable("other", (V, D), cf.float64, comm=c)
    with cf.Session(graph=g2, config={"comm": c}) as s:
        with pytest.raises(cf.errors.InvalidArgumentError) as ei:
            restore_shards(s, str(tmp_path / "a.h5"), c)
        msg = str(ei.value)
        assert "emb: checkpoint table (11, 3), graph (12, 3)" in msg and "missing from the checkpoint: other" in msg
        with pytest.raises(cf.errors.NotFoundError, match="no shard files"):
            restore_shards(s, str(tmp_path / "b.h5"), c)
