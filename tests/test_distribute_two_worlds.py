"""tf.distribute with N replicas = N ranks, written once per rank (tests/worlds.py): on thread
ranks in the serial run, on MPI ranks under mpiexec.  Each rank checks on its own that a
TF 1.x custom training loop under MirroredStrategy ends where one process without a strategy
ends on the same global batches (TF's answer for N replicas), and the reductions' values."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(120)

RNG = np.random.RandomState(1)
X = RNG.randn(48, 4).astype(np.float32)
Y = (X @ RNG.randn(4, 1)).astype(np.float32)
IDS = RNG.randint(0, 10, size=(48, 2)).astype(np.int32)
GLOBAL = 12


def _loop(strategy, comm=None, steps=3, opt=lambda: tf.train.AdamOptimizer(0.05)):
    """A TF 1.x custom loop: per-replica loss scaled by the global batch, gradients summed."""
    g = tf.Graph()
    with g.as_default():
        ds = tf.data.Dataset.from_tensor_slices((X, Y, IDS)).batch(GLOBAL)

        def step(inputs):
            xb, yb, ib = inputs
            # each rank draws its own initial values: the replicas must start from rank 0's
            seed = 7 + (comm.rank if comm is not None else 0)
            w = tf.get_variable("w", [4, 1], initializer=tf.random_normal_initializer(seed=seed))
            emb = tf.get_variable("emb", [10, 1], initializer=tf.random_normal_initializer(seed=seed + 50))
            pred = tf.matmul(xb, w) + tf.reduce_sum(tf.gather(emb, ib), axis=1)
            loss = tf.reduce_sum(tf.square(pred - yb)) / float(GLOBAL)
            train = opt().minimize(loss)
            with tf.control_dependencies([train]):
                return tf.identity(loss)
        if strategy is None:
            it = tf.data.make_initializable_iterator(ds)
            loss = step(it.get_next())
            init_it = it.initializer
        else:
            with strategy.scope():
                it = strategy.make_dataset_iterator(ds)
                loss = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.experimental_run(step, it))
                init_it = it.initialize()
        with tf.Session(graph=g, config={"comm": comm} if comm is not None else None) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(init_it)
            losses = [sess.run(loss) for _ in range(steps)]
            ws = sess.run(tf.global_variables()[:2])
    return np.array(losses), ws


@pytest.mark.parametrize("opt", ["adam", "momentum"])
def test_mirrored_custom_loop_n_ranks_is_one_process(world, opt):
    make = {"adam": lambda: tf.train.AdamOptimizer(0.05),
            "momentum": lambda: tf.train.MomentumOptimizer(0.05, 0.9)}[opt]

    def body(comm):
        ref_l, ref_w = _loop(None, opt=make)
        l, ws = _loop(tf.distribute.MirroredStrategy(comm=comm), comm=comm, opt=make)
        np.testing.assert_allclose(l, ref_l, rtol=2e-5)
        for a, b in zip(ws, ref_w):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
        digest = np.concatenate([w.ravel() for w in ws])
        allv = np.asarray(comm.allgather(digest)).reshape(comm.size, -1)
        assert all(np.array_equal(allv[r], allv[0]) for r in range(comm.size))
    world.run(body)


def test_reductions_over_replicas(world):
    def body(comm):
        n, r = comm.size, comm.rank
        g = tf.Graph()
        with g.as_default():
            s = tf.distribute.MirroredStrategy(comm=comm)
            assert s.num_replicas_in_sync == n
            with s.scope():
                v = tf.fill([r + 1, 2], float(r + 1))   # replicas hold different numbers of rows

                def fn():
                    ctx = tf.distribute.get_replica_context()
                    return ctx.replica_id_in_sync_group, ctx.all_reduce("SUM", tf.constant([float(r + 1)])), \
                        ctx.all_reduce(tf.distribute.ReduceOp.MEAN, tf.constant([float(r + 1)]))
                rid, s_all, m_all = s.experimental_run_v2(fn)
                mean_rows = s.reduce(tf.distribute.ReduceOp.MEAN, v, axis=0)
                sum_rows = s.reduce(tf.distribute.ReduceOp.SUM, v, axis=0)
                total = s.reduce("MEAN", tf.constant(float(r)))
        with tf.Session(graph=g, config={"comm": comm}) as sess:
            got = sess.run([rid, s_all, m_all, mean_rows, sum_rows, total])
        tot = n * (n + 1) / 2
        assert got[0] == r
        np.testing.assert_allclose(got[1], [tot])
        np.testing.assert_allclose(got[2], [tot / n])
        sq = sum((k + 1) ** 2 for k in range(n))
        np.testing.assert_allclose(got[3], [sq / tot] * 2, rtol=1e-6)   # every row of every replica counts once
        np.testing.assert_allclose(got[4], [sq] * 2)
        np.testing.assert_allclose(got[5], (n - 1) / 2)
    world.run(body)


def test_input_is_dealt_out_as_tf_deals_it(world):
    def body(comm):
        n, r = comm.size, comm.rank
        g = tf.Graph()
        with g.as_default():
            s = tf.distribute.MirroredStrategy(comm=comm)
            with s.scope():
                # experimental_distribute_dataset: each global batch split, replica r its rows
                split_it = s.make_dataset_iterator(tf.data.Dataset.range(10).batch(5 * n))
                split = split_it.get_next()
                # make_input_fn_iterator: one pipeline of per-replica batches, dealt round robin,
                # ending when some replica would get none (7 batches of 1)
                seen = []
                dealt = s.make_input_fn_iterator(lambda ctx: seen.append(ctx) or tf.data.Dataset.range(7).batch(1))
                with pytest.raises(ValueError, match="batched dataset"):
                    s.experimental_distribute_dataset(tf.data.Dataset.range(3))
            w = tf.distribute.experimental.MultiWorkerMirroredStrategy(comm=comm)
            ctxs = []
            w.experimental_distribute_datasets_from_function(lambda ctx: ctxs.append(ctx) or tf.data.Dataset.range(2))
        assert (seen[0].num_input_pipelines, seen[0].input_pipeline_id, seen[0].num_replicas_in_sync) == (1, 0, n)
        assert (ctxs[0].num_input_pipelines, ctxs[0].input_pipeline_id) == (n, r)
        with tf.Session(graph=g, config={"comm": comm}) as sess:
            sess.run(dealt.initialize())
            got = []
            while True:
                try:
                    got.append(int(sess.run(dealt.get_next())[0]))
                except tf.errors.OutOfRangeError:
                    break
        assert got == list(range(r, 7 - 7 % n, n))
        with tf.Session(graph=g, config={"comm": comm}) as sess:
            sess.run(split_it.initialize())
            first = sess.run(split)
        rows = list(range(min(10, 5 * n)))
        per = -(-len(rows) // n)
        assert first.tolist() == rows[r * per:(r + 1) * per]
    world.run(body)
