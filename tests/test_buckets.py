"""The bucket planner (collflow/comm/buckets.py): which gradients travel together."""
import numpy as np
import pytest

import collflow as cf
from collflow.comm.buckets import DIRECT_ELEMENTS, Bucket, GradSpec, plan_buckets, split_direct


def _f32(n, device=None):
    return GradSpec(n, "float32", 4, device)


def test_buckets_fill_up_to_the_threshold_in_order():
    grads = [_f32(100), _f32(100), _f32(100), _f32(300), _f32(50)]
    assert plan_buckets(grads, 800) == [Bucket((0, 1), 800), Bucket((2,), 400), Bucket((3,), 1200),
                                        Bucket((4,), 200)]
    assert plan_buckets(grads, 1 << 20) == [Bucket((0, 1, 2, 3, 4), 2600)]


def test_threshold_zero_gives_every_gradient_its_own_bucket():
    assert [b.members for b in plan_buckets([_f32(1), _f32(2), _f32(3)], 0)] == [(0,), (1,), (2,)]


def test_a_bucket_holds_one_dtype_on_one_device():
    grads = [_f32(1), _f32(1), GradSpec(1, "float64", 8), _f32(1), _f32(1, "/gpu:0"), _f32(1, "/gpu:0")]
    assert [b.members for b in plan_buckets(grads, 1 << 20)] == [(0, 1), (2,), (3,), (4, 5)]


def test_a_gradient_of_unknown_size_closes_its_bucket():
    grads = [_f32(10), _f32(None), _f32(10)]
    assert [b.members for b in plan_buckets(grads, 1 << 20)] == [(0,), (1,), (2,)]


def test_split_direct_sends_large_and_lone_gradients_where_they_are():
    big, small = DIRECT_ELEMENTS, DIRECT_ELEMENTS - 1
    assert split_direct([big, small, None, 2 * big]) == ([0, 3], [1, 2])
    assert split_direct([None]) == ([0], [])          # a lone gradient never needs packing
    assert split_direct([big, small], pack_all=True) == ([], [0, 1])


def test_the_optimizer_builds_one_collective_per_planned_bucket():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(np.ones((4, 8), np.float32))
        ws = [cf.Variable(np.ones((8, 8), np.float32), name=f"w{i}") for i in range(5)]
        h = x
        for w in ws:
            h = cf.matmul(h, w)
        loss = cf.reduce_sum(h)
        opt = cf.train.SyncReplicasOptimizer(cf.train.AdamOptimizer(0.1), comm=cf.comm.ThreadWorld(2).comm(0),
                                             fusion_threshold_bytes=2 * 8 * 8 * 4)
        opt.minimize(loss)
    # gradients arrive last layer first; two 256-byte gradients per 512-byte bucket
    assert opt.buckets == [["w4", "w3"], ["w2", "w1"], ["w0"]]


# -- reduce hooks (PyTorch DDP's communication hooks) ----------------------------------------------


def _hook_world(hook, n=2, steps=3):
    """n ranks of a two-layer model with Momentum; returns every rank's final weights and the
    buckets the hook saw."""
    world = cf.comm.ThreadWorld(n, timeout=30)
    seen = []
    models = []
    for r in range(n):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, (None, 3))
            w1 = cf.Variable(np.linspace(-1, 1, 12).reshape(3, 4), name="w1")
            w2 = cf.Variable(np.linspace(1, -1, 4).reshape(4, 1), name="w2")
            loss = cf.reduce_mean(cf.square(cf.matmul(cf.tanh(cf.matmul(x, w1)), w2) - 1.0))

            def spy(bucket, _r=r):
                if _r == 0:
                    seen.append([v.op.name for v in bucket.variables])
                return hook(bucket)
            opt = cf.train.SyncReplicasOptimizer(cf.train.MomentumOptimizer(0.1, 0.9), comm=world.comm(r),
                                                 fusion_threshold_bytes=0, reduce_hook=spy if hook else None)
            train = opt.minimize(loss)
            models.append((g, x, train, [w1, w2], cf.global_variables_initializer()))

    def fn(c):
        g, x, train, ws, init = models[c.rank]
        with cf.Session(graph=g, config={"comm": c}) as s:
            s.run(init)
            for k in range(steps):
                s.run(train, {x: np.full((2, 3), 0.1 * (c.rank + 1) + 0.01 * k)})
            return s.run(ws)
    return world.run(fn), seen


def test_the_default_hook_is_the_fused_average():
    plain, _ = _hook_world(None)
    hooked, seen = _hook_world(lambda b: b.all_reduce())
    assert seen == [["w2"], ["w1"]]   # one bucket per gradient (threshold 0), backward order
    for r in range(2):
        for a, b in zip(plain[r], hooked[r]):
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_a_hook_decides_how_gradients_combine():
    # sum instead of mean: every step moves as if the learning rate were doubled (2 ranks),
    # which for the first step of Momentum is exactly twice the averaged update
    summed, _ = _hook_world(lambda b: b.all_reduce(average=False), steps=1)
    mean, _ = _hook_world(lambda b: b.all_reduce(), steps=1)
    init = [np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(1, -1, 4).reshape(4, 1)]
    for a, b, w0 in zip(summed[0], mean[0], init):
        np.testing.assert_allclose(a - w0, 2 * (b - w0), rtol=1e-10, atol=1e-14)
    # replicas agree, as with the default
    for a, b in zip(summed[0], summed[1]):
        assert np.array_equal(a, b)


def test_a_hook_returning_the_wrong_tensors_is_named():
    with pytest.raises(cf.errors.InvalidArgumentError, match="reduce_hook returned 0 tensors for bucket 0"):
        _hook_world(lambda b: [])
    with pytest.raises(cf.errors.InvalidArgumentError, match="reduce_hook returned float32"):
        _hook_world(lambda b: [cf.cast(g, cf.float32) for g in b.gradients])
    with pytest.raises(cf.errors.InvalidArgumentError, match="cannot be used with average_parameters=True"):
        cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), reduce_hook=lambda b: b.all_reduce(),
                                       average_parameters=True)
