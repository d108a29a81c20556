"""SyncReplicasOptimizer on simulated ranks (threads): buckets, bucket views, replicas' digests,
averaged parameters.  N ranks = one process with N x batch, compression and sparse gradients
are tested in both worlds (threads and MPI) by tests/test_training_two_worlds.py."""
import numpy as np
import pytest

import collflow as cf
from collflow.comm import ThreadWorld
import dp_model as dp


def test_fusion_buckets_follow_the_threshold():
    m = dp.build("sgd", sync=True, fusion=0)
    assert len(m["opt"].buckets) == 3  # one collective per gradient
    m = dp.build("sgd", sync=True, fusion=1 << 20)
    assert len(m["opt"].buckets) == 1
    # backward order: the last layer's gradient comes first
    assert m["opt"].buckets[0][0] == "w2"
    m = dp.build("sgd", sync=True, fusion=8 * (dp.HID * dp.OUT + dp.HID))
    assert m["opt"].buckets == [["w2", "b1"], ["w1"]]


def test_sparse_gradients_do_not_use_a_dense_all_reduce():
    m = dp.build("sgd", sync=True, sparse=True)
    types = [op.type for op in m["graph"].get_operations()]
    assert "SparseAllGather" in types
    emb_bucket = [b for b in m["opt"].buckets if "emb" in b]
    assert not emb_bucket


def test_broadcast_makes_replicas_identical_and_digest_checks_it():
    world = ThreadWorld(2, timeout=30)
    models = [dp.build("sgd", comm=world.comm(r), init_seed=7 + r) for r in range(2)]

    def fn(c):
        m = models[c.rank]
        with cf.Session(graph=m["graph"], config={"comm": c}) as s:
            s.run(m["init"])
            before = cf.train.replica_digest(s)
            s.run(m["bcast"])
            cf.train.check_replicas_identical(s, comm=c)
            return before, cf.train.replica_digest(s)
    (b0, a0), (b1, a1) = world.run(fn)
    assert b0 != b1 and a0 == a1 == b0


def test_check_replicas_identical_names_the_diverged_rank():
    world = ThreadWorld(2, timeout=30)
    models = [dp.build("sgd", comm=world.comm(r), init_seed=7 + r) for r in range(2)]

    def fn(c):
        m = models[c.rank]
        with cf.Session(graph=m["graph"], config={"comm": c}) as s:
            s.run(m["init"])
            with pytest.raises(cf.errors.InvalidArgumentError, match=r"rank\(s\) \[1\]"):
                cf.train.check_replicas_identical(s, comm=c)
    world.run(fn)


def test_bad_arguments():
    with pytest.raises(cf.errors.InvalidArgumentError, match="compression"):
        cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), compression="int8")
    with pytest.raises(TypeError):
        cf.train.SyncReplicasOptimizer("sgd")


def test_fused_buckets_mixing_large_and_small_gradients_and_reused_results():
    """Large gradients are all-reduced where they are, small ones packed; a result the caller
    still holds is never overwritten by the next step (the receive buffers are reused only
    when nobody holds them)."""
    from collflow.comm.buckets import DIRECT_ELEMENTS
    shapes = [(DIRECT_ELEMENTS,), (3, 5), (2, DIRECT_ELEMENTS // 2 + 1), (7,)]
    world = ThreadWorld(2, timeout=30)

    def rank(c):
        g = cf.Graph()
        with g.as_default():
            xs = [cf.placeholder(cf.float64, s) for s in shapes]
            vs = [cf.Variable(np.zeros(s), name=f"v{i}") for i, s in enumerate(shapes)]
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(1.0), comm=c)
            sums = [t for t, _ in opt.reduce_gradients(list(zip(xs, vs)), average=False)]
            means = [t for t, _ in opt.reduce_gradients(list(zip(xs, vs)))]
        out = []
        with cf.Session(graph=g, config={"comm": c}) as s:
            for step in range(3):
                feed = {x: np.full(sh, 10.0 * step + c.rank + i) for i, (x, sh) in enumerate(zip(xs, shapes))}
                out.append((s.run(sums, feed), s.run(means, feed)))
        return out

    res = world.run(rank)
    for r in range(2):
        for step, (sums, means) in enumerate(res[r]):  # the held results of every step are intact
            for i, sh in enumerate(shapes):
                want = (10.0 * step + i) * 2 + 1
                np.testing.assert_array_equal(sums[i], np.full(sh, want))
                np.testing.assert_allclose(means[i], np.full(sh, want / 2))


def _bucket_of(sess, fetches, feed):
    plan = sess.plan_for(fetches, feed)
    ks = [k for op, k in zip(plan.ops, plan.kernels) if op.type == "FusedAllReduce"]
    assert len(ks) == 1
    return ks[0].input_slots.bucket


@pytest.mark.host_only("gradients and variables computed into the send buffer are NumPy paths")
@pytest.mark.parametrize("average", [False, True])
def test_gradients_computed_into_the_bucket(average):
    """Producers with an into-variant compute their gradient straight into the bucket's send
    buffer (no packing copy); a fetched gradient is left alone; other readers of a gradient
    see its local value; results equal the packed path's, step after step."""
    shapes = [(3, 4), (5,), (2, 2, 2), (7,), (1,), (6, 1)]
    world = ThreadWorld(2, timeout=30)

    def rank(c, views):
        g = cf.Graph()
        with g.as_default():
            xs = [cf.placeholder(cf.float64, s) for s in shapes]
            vs = [cf.Variable(np.zeros(s), name=f"v{i}") for i, s in enumerate(shapes)]
            grads = [x * 2.0 for x in xs[:-2]] + [cf.reduce_sum(xs[-2] * xs[-2], axis=[0], keepdims=False)
                                                  * 1.0, xs[-1] + 0.0]
            grads[-2] = cf.reshape(grads[-2], (1,))  # Reshape: no into-variant (packed as usual)
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(1.0), comm=c)
            red = [t for t, _ in opt.reduce_gradients(list(zip(grads, vs)), average=average)]
            local_sum = cf.reduce_sum(grads[0])  # reads gradient 0 itself, not its sum
        out = []
        with cf.Session(graph=g, config={"comm": c, "bucket_views": views}) as s:
            fetches = [red, local_sum, grads[1]]  # grads[1] fetched: computed as usual
            for step in range(3):
                feed = {x: np.full(sh, 1.0 + step + c.rank + i) for i, (x, sh) in enumerate(zip(xs, shapes))}
                out.append(s.run(fetches, feed))
            bucket = _bucket_of(s, fetches, feed)
            out.append(bucket.placed)
        return out

    on = world.run(lambda c: rank(c, True))
    off = ThreadWorld(2, timeout=30).run(lambda c: rank(c, False))
    for r in range(2):
        assert on[r][-1] == 4  # the Mul and Add gradients but the fetched one; not the Reshape
        assert off[r][-1] == 0
        for step in range(3):
            red_on, ls_on, g1_on = on[r][step]
            red_off, ls_off, g1_off = off[r][step]
            assert ls_on == ls_off == (1.0 + step + r) * 2.0 * 12
            np.testing.assert_array_equal(g1_on, g1_off)
            for a, b in zip(red_on, red_off):
                np.testing.assert_allclose(a, b, rtol=1e-15)
            want0 = sum((1.0 + step + q) * 2.0 for q in range(2)) / (2 if average else 1)
            np.testing.assert_allclose(red_on[0], np.full((3, 4), want0))


@pytest.mark.host_only("gradients and variables computed into the send buffer are NumPy paths")
def test_a_held_gradient_is_not_overwritten_by_the_next_step():
    """A view of a gradient computed into the bucket that the user keeps (fetched through a
    Reshape, which returns a view) stays as it was: the next step claims a fresh buffer."""
    world = ThreadWorld(2, timeout=30)

    def rank(c):
        g = cf.Graph()
        with g.as_default():
            xs = [cf.placeholder(cf.float64, (4,)) for _ in range(3)]
            vs = [cf.Variable(np.zeros(4), name=f"v{i}") for i in range(3)]
            grads = [x * 1.0 for x in xs]
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(1.0), comm=c)
            red = [t for t, _ in opt.reduce_gradients(list(zip(grads, vs)), average=False)]
            seen = cf.reshape(grads[0], (2, 2))
        kept, sums = [], []
        with cf.Session(graph=g, config={"comm": c}) as s:
            for step in range(3):
                feed = {x: np.full(4, 10.0 * step + i) for i, x in enumerate(xs)}
                r, v = s.run([red, seen], feed)
                kept.append(v)
                sums.append(r)
            placed = _bucket_of(s, [red, seen], feed).placed
        return kept, sums, placed

    for kept, sums, placed in world.run(rank):
        assert placed == 3  # grads[0] too: its Reshape is fetched, not it; the view pins the old buffer
        for step, (v, r) in enumerate(zip(kept, sums)):
            np.testing.assert_array_equal(v, np.full((2, 2), 10.0 * step))
            for i in range(3):
                np.testing.assert_array_equal(r[i], np.full(4, 2 * (10.0 * step + i)))


def test_send_bucket_belongs_to_one_step_at_a_time():
    """The send buffer whose views producers compute into: the thread that takes a slot owns
    it until its collective has read it; another thread meanwhile gets no slot (it computes
    as usual and packs into a buffer of its own); a buffer someone still references is
    replaced when the next step claims it."""
    import threading
    from collflow.comm.fusion import _SendBucket
    b = _SendBucket([(2, 3), (4,)], np.float32)
    v0 = b.slot(0)
    assert v0.shape == (2, 3) and b.slot(1).shape == (4,) and b.slot(0) is v0
    other = []
    t = threading.Thread(target=lambda: other.extend([b.slot(0), b.take()]))
    t.start()
    t.join()
    assert other == [None, None]  # claimed by this thread's step
    buf = b.take()
    assert buf.size == 10 and np.shares_memory(buf, v0)
    assert b.slot(1) is None  # in flight: not even the owner writes into it
    b.release()
    addr = buf.ctypes.data
    del buf, v0  # nobody holds last step's gradients
    t = threading.Thread(target=lambda: other.append(b.slot(1).ctypes.data))
    t.start()
    t.join()
    assert other[-1] == addr + 6 * 4  # free again: the same buffer
    b.release()
    held = b.slot(0).reshape(6)  # someone keeps a view of a gradient
    b.take()
    b.release()
    assert not np.shares_memory(b.slot(0), held)  # a fresh buffer; the held one is left alone
    b.release()
    del held
    addr = b.buf.ctypes.data
    assert b.take().ctypes.data == addr  # nothing held now: kept


@pytest.mark.host_only("gradients and variables computed into the send buffer are NumPy paths")
def test_mlp_bias_gradients_are_computed_into_the_bucket():
    """In a real backward pass the small gradients (the biases' BiasAddGrad, the small weights'
    MatMul) are computed into the bucket; a large weight gradient goes to the all-reduce
    where it is; training gives bit for bit what it gives with bucket views off."""
    from collflow import models

    def rank(c, views):
        g = cf.Graph()
        with g.as_default():
            # the gradient path (plain SGD would average the updated variables instead)
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), comm=c,
                                                 average_parameters=False)
            m = models.build_mlp(784, [300, 100], 10, optimizer=opt, seed=0, global_step=False)
            init = cf.global_variables_initializer()
        rng = np.random.default_rng(c.rank)
        feeds = [{m.x: rng.standard_normal((8, 784)).astype(np.float32),
                  m.y: rng.integers(0, 10, 8).astype(m.y.dtype.np)} for _ in range(3)]
        with cf.Session(graph=g, config={"comm": c, "bucket_views": views}) as s:
            s.run(init)
            for feed in feeds:
                s.run(m.train_op, feed)
            bucket = _bucket_of(s, m.train_op, feeds[0])
            return bucket.placed, len(bucket.views), s.run(m.variables)

    on = ThreadWorld(2, timeout=30).run(lambda c: rank(c, True))
    off = ThreadWorld(2, timeout=30).run(lambda c: rank(c, False))
    for r in range(2):
        # packed: the biases (300, 100, 10) and the 300x100 and 100x10 weights (784x300 goes direct)
        assert on[r][:2] == (5, 5) and off[r][:2] == (0, 5)
        for a, b, c0 in zip(on[r][2], off[r][2], on[0][2]):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, c0)  # replicas identical


def test_buffers_are_reused_when_nobody_holds_the_results():
    """Step after step, the same send buffer and receive buffers serve the bucket when the
    results are only consumed inside the step (no allocation, no page faults per step).  In
    a thread world a peer's thread may still hold this rank's send buffer when the next step
    starts (it is then rightly replaced), so most steps, not all, must reuse."""
    world = ThreadWorld(2, timeout=30)

    def rank(c):
        g = cf.Graph()
        with g.as_default():
            xs = [cf.placeholder(cf.float64, (6,)) for _ in range(4)] + [cf.placeholder(cf.float64, (70000,))]
            vs = [cf.Variable(np.zeros(x.shape.as_list()), name=f"v{i}") for i, x in enumerate(xs)]
            grads = [x * 1.0 for x in xs]
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(1.0), comm=c)
            red = [t for t, _ in opt.reduce_gradients(list(zip(grads, vs)), average=True)]
            total = cf.add_n([cf.reduce_sum(t) for t in red])
        seen = []
        with cf.Session(graph=g, config={"comm": c}) as s:
            for step in range(10):
                feed = {x: np.full(x.shape.as_list(), float(step + c.rank)) for x in xs}
                got = s.run(total, feed)
                assert got == pytest.approx((step + 0.5) * (4 * 6 + 70000))
                plan = s.plan_for(total, feed)
                k = [k for o, k in zip(plan.ops, plan.kernels) if o.type == "FusedAllReduce"][0]
                # (not .ctypes: its object keeps a reference to the array until collected)
                addr = lambda a: a.__array_interface__["data"][0]  # noqa: E731
                seen.append((addr(k.input_slots.bucket.buf), tuple(addr(r.buf) for r in k.result_buffers)))
        return seen

    for seen in world.run(rank):
        assert len(seen[0][1]) == 2  # the packed small ones, the large one on its own
        kept = sum(a == b for a, b in zip(seen, seen[1:]))
        assert kept >= 6, seen


def _lone_bucket_session(make_grads, feed_shapes, dtype=cf.float64, average=False, check_outputs=True):
    from collflow.comm.local import LocalCommunicator
    from collflow.graph.ops.fusion_ops import fused_all_reduce
    g = cf.Graph()
    with g.as_default():
        phs = [cf.placeholder(dtype, s) for s in feed_shapes]
        grads, deps = make_grads(*phs)
        with cf.control_dependencies(deps):
            red = fused_all_reduce(grads, key="b", average=average)
    return cf.Session(graph=g, config={"comm": LocalCommunicator(), "check_outputs": check_outputs}), phs, red


@pytest.mark.host_only("gradients and variables computed into the send buffer are NumPy paths")
def test_a_failed_step_gives_up_its_claim_on_the_bucket():
    """A step that fails after its producers computed into the bucket (here an op the
    collective waits on fails on a bad feed) leaves the buffer free: other threads' later
    steps still compute into it."""
    import threading

    def grads(x, bad):
        g1, g2 = x * 2.0, x * 3.0
        failing = cf.reshape(bad * cf.reduce_sum(g1) * cf.reduce_sum(g2), (3,))
        return [g1, g2], [failing]
    s, (x, bad), red = _lone_bucket_session(grads, [(4,), (None,)])
    good = {x: np.ones(4), bad: np.ones(3)}
    with s:
        s.run(red, good)
        bucket = _bucket_of(s, red, good)
        errors = []

        def failing_step():
            try:
                s.run(red, {x: np.ones(4), bad: np.ones(4)})
            except cf.errors.InvalidArgumentError as e:
                errors.append(e)
        t = threading.Thread(target=failing_step)
        t.start()
        t.join()
        assert errors and bucket.owner is None and not bucket.inflight
        for step in range(3):
            bucket.placed = -1
            out = s.run(red, {x: np.full(4, float(step)), bad: np.ones(3)})
            assert bucket.placed == 2
            np.testing.assert_array_equal(out[1], np.full(4, 3.0 * step))


@pytest.mark.host_only("gradients and variables computed into the send buffer are NumPy paths")
def test_a_collective_failing_to_start_frees_the_bucket():
    """An error inside the collective's kernel after it took the bucket (a gradient whose
    runtime shape contradicts its static one) frees the bucket for the next step."""
    def grads(x, y):
        g2 = cf.reshape(y, (-1,))
        g2.set_shape((3,))  # static (3,); the runtime shape follows the feed
        return [x * 2.0, g2], []
    # (unchecked outputs: the mismatch must reach the collective's kernel)
    s, (x, y), red = _lone_bucket_session(grads, [(4,), (None,)], check_outputs=False)
    good = {x: np.ones(4), y: np.ones(3)}
    with s:
        s.run(red, good)
        bucket = _bucket_of(s, red, good)
        with pytest.raises(cf.errors.CollflowError):
            s.run(red, {x: np.ones(4), y: np.ones(5)})
        assert bucket.owner is None and not bucket.inflight
        bucket.placed = -1
        out = s.run(red, {x: np.full(4, 5.0), y: np.arange(3.0)})
        assert bucket.placed == 1
        np.testing.assert_array_equal(out[0], np.full(4, 10.0))
        np.testing.assert_array_equal(out[1], np.arange(3.0))


def test_float16_averages_do_not_overflow():
    """16-bit gradients are scaled by 1/ranks while packing (their sum may not fit in
    float16: 2 x 40000 > 65504); wider ones are divided after the sum."""
    from collflow.graph.ops.fusion_ops import fused_all_reduce

    def rank(c):
        g = cf.Graph()
        with g.as_default():
            xs = [cf.placeholder(cf.float16, (3,)), cf.placeholder(cf.float16, (2,))]
            red = fused_all_reduce([x * 1.0 for x in xs], key="h", average=True)
            lone = fused_all_reduce([xs[0] * 1.0], key="h1", average=True)
        with cf.Session(graph=g, config={"comm": c}) as s:
            return s.run([red, lone], {xs[0]: np.full(3, 40000, np.float16), xs[1]: np.full(2, 40000, np.float16)})

    for (a, b), lone in ThreadWorld(2, timeout=30).run(rank):
        for v in (a, b, lone[0] if isinstance(lone, (list, tuple)) else lone):
            assert v.dtype == np.float16
            np.testing.assert_array_equal(v, 40000)


# -- plain SGD: each rank steps, then the variables are averaged in place ----------------------
def _sgd_model(c, average_parameters, seed=0, sparse_as_dense=False, embedding=False):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (None, 6), name="x")
        y = cf.placeholder(cf.int32, (None,), name="y")
        w1 = cf.Variable(np.random.default_rng(seed).normal(size=(6, 8)) * 0.5, name="w1")
        b1 = cf.Variable(np.zeros(8), name="b1")
        w2 = cf.Variable(np.random.default_rng(seed + 1).normal(size=(8, 3)) * 0.5, name="w2")
        h = cf.nn.relu(cf.matmul(x, w1) + b1)
        if embedding:
            ids = cf.placeholder(cf.int32, (None,), name="ids")
            emb = cf.Variable(np.random.default_rng(seed + 2).normal(size=(10, 8)), name="emb")
            h = h + cf.nn.embedding_lookup(emb, ids)
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(h, w2)))
        opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.5), comm=c,
                                             average_parameters=average_parameters, sparse_as_dense=sparse_as_dense)
        train = opt.minimize(loss)
        init = cf.global_variables_initializer()
    return g, x, y, train, init, [w1, b1, w2], opt


def _batches(rank, steps=4):
    rng = np.random.default_rng(100 + rank)
    return [(rng.normal(size=(5, 6)), rng.integers(0, 3, 5).astype(np.int32)) for _ in range(steps)]


@pytest.mark.host_only("gradients and variables computed into the send buffer are NumPy paths")
@pytest.mark.parametrize("n", [2, 3])
def test_sgd_averages_the_updated_variables_instead_of_the_gradients(n):
    """The average of W - lr*g_r is W - lr*mean(g_r): the same training as averaging gradients
    (up to rounding), replicas bit-identical, no gradient all-reduce and no update pass:
    the weight update keeps its fused form (one BLAS call)."""
    def rank(c, avg):
        g, x, y, train, init, vs, _ = _sgd_model(c, avg)
        with cf.Session(graph=g, config={"comm": c}) as s:
            s.run(init)
            for xb, yb in _batches(c.rank):
                s.run(train, {x: xb, y: yb})
            types = [op.type for op in s.plan_for(train, {x: xb, y: yb}).ops]
            return s.run(vs), types

    on = ThreadWorld(n, timeout=30).run(lambda c: rank(c, True))
    off = ThreadWorld(n, timeout=30).run(lambda c: rank(c, False))
    for r in range(n):
        (vals_on, types_on), (vals_off, types_off) = on[r], off[r]
        assert "AverageVariables" in types_on and "FusedAllReduce" not in types_on
        assert "MatMul+ApplyGradientDescent" in types_on  # the fused update survives
        assert "FusedAllReduce" in types_off and "AverageVariables" not in types_off
        for a, b, a0 in zip(vals_on, vals_off, on[0][0]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
            np.testing.assert_array_equal(a, a0)  # replicas bit-identical


def test_variables_live_in_their_bucket_and_fetched_values_stay_snapshots():
    def rank(c):
        g, x, y, train, init, vs, opt = _sgd_model(c, True)
        batches = _batches(c.rank)
        with cf.Session(graph=g, config={"comm": c}) as s:
            s.run(init)
            s.run(train, {x: batches[0][0], y: batches[0][1]})
            plan = s.plan_for(train, {x: batches[0][0], y: batches[0][1]})
            bucket = [k for op, k in zip(plan.ops, plan.kernels) if op.type == "AverageVariables"][0].bucket
            states = [s.resources.variables[v.handle.op.attrs["shared_name"]] for v in vs]
            assert all(any(st.value is ref() for ref in bucket.parts) for st in states)
            assert all(np.shares_memory(st.value, bucket.flat) for st in states)
            held = s.run(vs[0])                  # fetched: a snapshot the next steps must not touch
            copy = held.copy()
            snap = states[2].live_snapshot()     # an async checkpoint's zero-copy snapshot of w2
            snap_copy = snap.array.copy()
            for xb, yb in batches[1:]:
                s.run(train, {x: xb, y: yb})
            np.testing.assert_array_equal(held, copy)
            np.testing.assert_array_equal(snap.array, snap_copy)
            assert not np.array_equal(s.run(vs[0]), copy)  # the variable itself moved on
            assert states[2].value is not snap.array
            return opt.buckets

    for buckets in ThreadWorld(2, timeout=30).run(rank):
        assert sorted(sum(buckets, [])) == ["b1", "w1", "w2"]


def test_average_parameters_only_where_the_update_is_linear_in_the_gradient():
    with pytest.raises(cf.errors.InvalidArgumentError, match="linear in the gradient"):
        cf.train.SyncReplicasOptimizer(cf.train.AdamOptimizer(0.1), average_parameters=True)

    def rank(c, avg, sparse_as_dense):
        g, *_, opt = _sgd_model(c, avg, embedding=True, sparse_as_dense=sparse_as_dense)
        return sorted({op.type for op in g.get_operations()})

    # an embedding's IndexedSlices gradient: never a dense average of the table unless asked
    types = ThreadWorld(2, timeout=30).run(lambda c: rank(c, None, False))[0]
    assert "SparseAllGather" in types and "AverageVariables" not in types
    with pytest.raises(cf.errors.InvalidArgumentError, match="average the whole table"):
        ThreadWorld(2, timeout=30).run(lambda c: rank(c, True, False))
    types = ThreadWorld(2, timeout=30).run(lambda c: rank(c, True, True))[0]
    assert "AverageVariables" in types and "SparseAllGather" not in types


def test_by_default_variables_are_averaged_only_through_shared_memory():
    """The default road depends on the communicator: shared memory (where the mean is exact
    for equal replicas) averages variables; other transports average gradients."""
    class SharedMemoryLike:  # what SyncReplicasOptimizer reads of a communicator at build time
        size, shm_active = 2, True
    for comm, want in ((SharedMemoryLike(), True), (ThreadWorld(2).comm(0), False)):
        g = cf.Graph()
        with g.as_default():
            w = cf.Variable(np.ones((3, 2)), name="w")
            x = cf.placeholder(cf.float64, (None, 3))
            cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), comm=comm).minimize(
                cf.reduce_sum(cf.matmul(x, w)))
        assert ("AverageVariables" in {op.type for op in g.get_operations()}) == want


def test_variables_of_unknown_shape_keep_the_gradient_road():
    def build(avg):
        g = cf.Graph()
        with g.as_default():
            w = cf.Variable(np.ones((3, 2)), shape=(None, 2), name="w")
            x = cf.placeholder(cf.float64, (None, 3))
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1),
                                                 comm=ThreadWorld(2).comm(0), average_parameters=avg)
            opt.minimize(cf.reduce_sum(cf.matmul(x, w)))
        return {op.type for op in g.get_operations()}
    assert "FusedAllReduce" in build(None)
    with pytest.raises(cf.errors.InvalidArgumentError, match="unknown shape"):
        build(True)


def _send_bucket(sess, fetches):
    plan = sess.plan_for(fetches, None)
    ks = [k for op, k in zip(plan.ops, plan.kernels) if op.type == "FusedAllReduce"]
    assert len(ks) == 1
    return ks[0].send_bucket


@pytest.mark.host_only("gradients and variables computed into the send buffer are NumPy paths")
def test_variables_all_reduced_as_they_are_live_in_the_send_buffer():
    """A bucket whose gradients are variable reads (accumulators, weights exchanged as they
    are): after the first step the variables live in the send buffer, so later steps send
    without packing; their sums stay right while the optimizer updates them in place, a
    fetched value stays a snapshot, and an assigned variable moves out and back."""
    shapes = [(3, 4), (5,), (2, 2, 2), (7,)]
    world = ThreadWorld(2, timeout=30)

    def rank(c):
        g = cf.Graph()
        with g.as_default():
            vs = [cf.Variable(np.full(s, 1.0 + c.rank + i), name=f"v{i}") for i, s in enumerate(shapes)]
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.25), comm=c)
            red = [t for t, _ in opt.reduce_gradients([(v.value(), v) for v in vs], average=False)]
            # in place, as an optimizer's update (it runs the all-reduce again: same sums)
            train = cf.group(*[cf.assign_sub(v, 0.25 * t) for v, t in zip(vs, red)])
            reset = vs[1].assign(np.full(shapes[1], 100.0 + c.rank))
        out = {"sums": [], "placed": [], "kept": []}
        with cf.Session(graph=g, config={"comm": c}) as s:
            s.run(cf.global_variables_initializer())
            bucket = _send_bucket(s, [red])
            for step in range(5):
                if step == 3:
                    s.run(reset)  # a new array: packed once, then lives in the buffer again
                got = s.run(red)
                out["sums"].append(got)
                out["placed"].append(bucket.placed)
                out["kept"].append(s.run(vs[0]))
                s.run(train)  # v -= 0.25 * (sum over ranks of v)
                if step == 2:
                    parts = [st for st in bucket.hosts.values()]
                    out["moved"] = all(np.shares_memory(st.value, bucket.buf) for st in parts)
            out["final"] = s.run(vs)
        return out

    res = world.run(rank)
    # the same computation in NumPy
    vals = [[np.full(s, 1.0 + r + i) for i, s in enumerate(shapes)] for r in range(2)]
    for step in range(5):
        if step == 3:
            for r in range(2):
                vals[r][1] = np.full(shapes[1], 100.0 + r)
        sums = [vals[0][i] + vals[1][i] for i in range(len(shapes))]
        for r in range(2):
            for i in range(len(shapes)):
                np.testing.assert_array_equal(res[r]["sums"][step][i], sums[i])
            np.testing.assert_array_equal(res[r]["kept"][step], vals[r][0])
        for r in range(2):
            vals[r] = [v - 0.25 * sm for v, sm in zip(vals[r], sums)]
    for r in range(2):
        assert res[r]["moved"]
        # packed on the first step (then moved); in place since, but the reassigned one
        assert res[r]["placed"] == [0, 4, 4, 3, 4], res[r]["placed"]
        for a, b in zip(res[r]["final"], vals[r]):
            np.testing.assert_array_equal(a, b)
        # the fetched snapshots were not changed by the updates after them
        assert res[r]["kept"][0][0, 0] == 1.0 + r


@pytest.mark.host_only("gradients and variables computed into the send buffer are NumPy paths")
def test_a_variable_read_by_two_inputs_lives_in_one_slot():
    """Two inputs of a bucket reading one variable: it lives in the first one's slot (the
    other is copied in each step), instead of moving between them; the sums stay right."""
    world = ThreadWorld(2, timeout=30)

    def rank(c):
        g = cf.Graph()
        with g.as_default():
            v = cf.Variable(np.full(4, 1.0 + c.rank), name="v")
            w = cf.Variable(np.full(3, 10.0 * (c.rank + 1)), name="w")
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), comm=c)
            red = [t for t, _ in opt.reduce_gradients([(v.value(), v), (w.value(), w), (v.read_value(), v)],
                                                      average=False)]
        with cf.Session(graph=g, config={"comm": c}) as s:
            s.run(cf.global_variables_initializer())
            bucket = _send_bucket(s, [red])
            got = [s.run(red) for _ in range(3)]
            return got, bucket.placed, sorted(bucket.hosts)

    for got, placed, hosted in world.run(rank):
        assert hosted == [0, 1]
        for r in got:
            np.testing.assert_array_equal(r[0], np.full(4, 3.0))
            np.testing.assert_array_equal(r[1], np.full(3, 30.0))
            np.testing.assert_array_equal(r[2], np.full(4, 3.0))
        assert placed >= 2
