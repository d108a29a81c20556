"""collflow.horovod under real MPI: Horovod's TF1 API, values against one process."""
import numpy as np
import pytest

import collflow as cf
import collflow.horovod as hvd

D, K = 5, 3


@pytest.fixture(scope="module")
def world():
    hvd.init()
    return cf.comm.get()


def _data(n_total, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n_total, D)), rng.integers(0, K, n_total).astype(np.int32)


def _model(opt_fn, w0):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (None, D), name="x")
        y = cf.placeholder(cf.int32, (None,), name="y")
        w = cf.Variable(w0.copy(), name="w")
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(x, w)))
        step = cf.train.get_or_create_global_step()
        train = opt_fn().minimize(loss, global_step=step)
        init = [cf.global_variables_initializer(), cf.local_variables_initializer()]
    return g, x, y, w, train, init, step


@pytest.mark.mpi(min_size=2)
def test_world_matches_mpi(world):
    from mpi4py import MPI
    assert hvd.size() == MPI.COMM_WORLD.Get_size() and hvd.rank() == MPI.COMM_WORLD.Get_rank()
    assert 0 <= hvd.local_rank() < hvd.local_size() <= hvd.size()


@pytest.mark.mpi(min_size=2)
def test_collectives(world):
    n, r = hvd.size(), hvd.rank()
    g = cf.Graph()
    with g.as_default():
        t = cf.constant(np.full(3, float(r + 1)))
        avg, tot = hvd.allreduce(t), hvd.allreduce(t, op=hvd.Sum)
        gathered = hvd.allgather(cf.constant(np.full((r + 1, 2), float(r))))
        b = hvd.broadcast(cf.constant([float(r)]), root_rank=n - 1)
    with cf.Session(graph=g) as s:
        a, sm, ga, bb = s.run([avg, tot, gathered, b])
    total = n * (n + 1) / 2
    np.testing.assert_allclose(a, np.full(3, total / n))
    np.testing.assert_allclose(sm, np.full(3, total))
    assert ga.shape == (n * (n + 1) // 2, 2)
    np.testing.assert_array_equal(ga[:, 0], np.concatenate([np.full(k + 1, float(k)) for k in range(n)]))
    assert bb.tolist() == [float(n - 1)]
    with pytest.raises(NotImplementedError, match="Adasum"):
        hvd.allreduce(t, op=hvd.Adasum)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_distributed_optimizer_reproduces_one_process(world, opt):
    n, r = hvd.size(), hvd.rank()
    make = {"sgd": lambda: cf.train.GradientDescentOptimizer(0.5),
            "adam": lambda: cf.train.AdamOptimizer(0.05)}[opt]
    w0 = np.random.default_rng(1).normal(size=(D, K))
    xs, ys = _data(4 * n * 3)
    # N ranks, 4 examples each, rank 0's initial values broadcast by the hook
    g, x, y, w, train, init, _ = _model(lambda: hvd.DistributedOptimizer(make()), w0 + r)
    hook = hvd.BroadcastGlobalVariablesHook(0)
    with g.as_default():
        hook.begin()
    with cf.Session(graph=g) as s:
        s.run(init)
        hook.after_create_session(s, None)
        for k in range(3):
            lo = k * 4 * n + 4 * r
            s.run(train, {x: xs[lo:lo + 4], y: ys[lo:lo + 4]})
        mine = s.run(w)
    # one process, the same global batch
    g1, x1, y1, w1, train1, init1, _ = _model(make, w0)
    with cf.Session(graph=g1) as s:
        s.run(init1)
        for k in range(3):
            s.run(train1, {x1: xs[k * 4 * n:(k + 1) * 4 * n], y1: ys[k * 4 * n:(k + 1) * 4 * n]})
        ref = s.run(w1)
    np.testing.assert_allclose(mine, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.mpi(min_size=2)
def test_compute_gradients_returns_the_average_over_ranks(world):
    n, r = hvd.size(), hvd.rank()
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.ones(2), name="w")
        loss = cf.reduce_sum(w * float(r + 1))
        opt = hvd.DistributedOptimizer(cf.train.GradientDescentOptimizer(1.0))
        (gw, _), = opt.compute_gradients(loss)
        # clipping between compute and apply sees the average, as in Horovod
        clipped, norm = cf.clip_by_global_norm([gw], 1.0) if hasattr(cf, "clip_by_global_norm") else ([gw], None)
        train = opt.apply_gradients([(clipped[0], w)])
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        np.testing.assert_allclose(s.run(gw), np.full(2, (n + 1) / 2))
        s.run(train)
        got = s.run(w)
    mean = (n + 1) / 2
    step = mean * min(1.0, 1.0 / (mean * np.sqrt(2))) if norm is not None else mean
    np.testing.assert_allclose(got, 1.0 - step)


@pytest.mark.mpi(min_size=2)
def test_backward_passes_per_step_accumulates_then_applies(world):
    n, r = hvd.size(), hvd.rank()
    w0 = np.random.default_rng(2).normal(size=(D, K))
    xs, ys = _data(2 * 4 * n, seed=3)
    g, x, y, w, train, init, step = _model(
        lambda: hvd.DistributedOptimizer(cf.train.GradientDescentOptimizer(0.5), backward_passes_per_step=2,
                                         average_aggregated_gradients=True), w0)
    with cf.Session(graph=g) as s:
        s.run(init)
        lo = 4 * r
        s.run(train, {x: xs[lo:lo + 4], y: ys[lo:lo + 4]})
        np.testing.assert_array_equal(s.run(w), w0)        # first pass: accumulated only
        assert s.run(step) == 0
        lo = 4 * n + 4 * r
        s.run(train, {x: xs[lo:lo + 4], y: ys[lo:lo + 4]})
        mine, st = s.run([w, step])
    assert st == 1
    # the same as one step on all 2 * 4 * n examples (mean of equal-sized means)
    g1, x1, y1, w1, train1, init1, _ = _model(lambda: cf.train.GradientDescentOptimizer(0.5), w0)
    with cf.Session(graph=g1) as s:
        s.run(init1)
        s.run(train1, {x1: xs, y1: ys})
        ref = s.run(w1)
    np.testing.assert_allclose(mine, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.mpi(min_size=2)
def test_horovods_tf1_mnist_example_runs_unchanged(world, tmp_path_factory):
    """Horovod's tensorflow_mnist.py, with only the imports and the data changed: a conv net,
    DistributedOptimizer(Adam(lr * size)), BroadcastGlobalVariablesHook, StopAtStepHook,
    MonitoredTrainingSession with checkpoints on rank 0. Replicas end bit-identical and the
    loss falls."""
    import collflow.compat.v1 as tf
    from collflow.data.datasets import load_digits
    d = load_digits(as_images=True)
    comm = cf.comm.get()
    ckpt = str(tmp_path_factory.mktemp("hvd")) if hvd.rank() == 0 else None
    g = tf.Graph()
    with g.as_default():
        image = tf.placeholder(tf.float32, [None, 8, 8, 1])
        label = tf.placeholder(tf.int32, [None])
        h = tf.layers.conv2d(image, 8, [3, 3], activation=tf.nn.relu, padding="same",
                             kernel_initializer=tf.glorot_uniform_initializer(seed=1 + hvd.rank()))
        h = tf.layers.max_pooling2d(h, 2, 2)
        logits = tf.layers.dense(tf.layers.flatten(h), 10, kernel_initializer=tf.glorot_uniform_initializer(seed=7))
        loss = tf.losses.sparse_softmax_cross_entropy(label, logits)
        global_step = tf.train.get_or_create_global_step()
        opt = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.001 * hvd.size()))
        train_op = opt.minimize(loss, global_step=global_step)
        hooks = [hvd.BroadcastGlobalVariablesHook(0), tf.train.StopAtStepHook(last_step=30)]
        losses = []
        with tf.train.MonitoredTrainingSession(checkpoint_dir=ckpt, hooks=hooks, save_checkpoint_steps=10,
                                               log_step_count_steps=None, save_summaries_steps=None) as sess:
            step = 0
            while not sess.should_stop():
                lo = (step * 32 * hvd.size() + 32 * hvd.rank()) % 1400
                _, l = sess.run([train_op, loss], {image: d.x_train[lo:lo + 32], label: d.y_train[lo:lo + 32]})
                losses.append(l)
                step += 1
            weights = sess.run([v for v in tf.trainable_variables()])
    assert len(losses) == 30 and np.mean(losses[-5:]) < np.mean(losses[:5])
    flat = np.concatenate([w.ravel() for w in weights])
    allw = comm.allgather(flat).reshape(comm.size, -1)
    assert all(np.array_equal(allw[r], allw[0]) for r in range(comm.size))
    if ckpt is not None:
        assert tf.train.latest_checkpoint(ckpt) is not None
