"""collflow.models: the reference MLP and CNN used by scripts/train.py and the benchmarks."""
import numpy as np
import pytest

import collflow as cf
from collflow import models


def _batch(shape, n=32, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n,) + tuple(shape), dtype=np.float32), rng.integers(0, 10, n).astype(np.int32)


def test_mlp_shapes_params_and_training():
    g = cf.Graph()
    with g.as_default():
        m = models.build_mlp(20, (16, 8), 10, optimizer=models.make_optimizer("adam", 0.02))
        init = cf.global_variables_initializer()
    assert m.x.shape.as_list() == [None, 20] and m.y.shape.as_list() == [None]
    assert m.logits.shape.as_list() == [None, 10]
    assert m.num_params == 20 * 16 + 16 + 16 * 8 + 8 + 8 * 10 + 10
    assert [v.name for v in m.variables][:2] == ["mlp/dense0/kernel:0", "mlp/dense0/bias:0"]
    x, y = _batch((20,))
    with cf.Session(graph=g) as sess:
        sess.run(init)
        l0, a0 = sess.run([m.loss, m.accuracy], {m.x: x, m.y: y})
        for _ in range(100):
            sess.run(m.train_op, {m.x: x, m.y: y})
        l1, a1 = sess.run([m.loss, m.accuracy], {m.x: x, m.y: y})
        assert sess.run(m.global_step) == 100
    assert l1 < 0.5 * l0 and a1 > a0
    assert l0.dtype == np.float32 and 0.0 <= a0 <= 1.0


def test_mlp_init_is_deterministic_in_seed():
    def weights(seed):
        g = cf.Graph()
        with g.as_default():
            m = models.build_mlp(5, (4,), 3, seed=seed)
            init = cf.global_variables_initializer()
        with cf.Session(graph=g) as sess:
            sess.run(init)
            return sess.run(m.variables)
    a, b, c = weights(1), weights(1), weights(2)
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not np.array_equal(a[0], c[0])
    assert not np.any(a[1])  # biases start at zero


def test_mlp_without_optimizer_or_global_step():
    g = cf.Graph()
    with g.as_default():
        m = models.build_mlp(4, (), 3, activation="tanh")
        m2 = models.build_mlp(4, (3,), 3, optimizer=models.make_optimizer("momentum"), global_step=False)
    assert m.train_op is None and m.global_step is None and m.num_params == 15
    assert m2.train_op is not None and m2.global_step is None
    with pytest.raises(ValueError, match="unknown activation"):
        with cf.Graph().as_default():
            models.build_mlp(4, (3,), 3, activation="swish2")


@pytest.mark.parametrize("shape", [(8, 8, 1), (7, 9, 3)])
def test_cnn_shapes_and_one_step(shape):
    g = cf.Graph()
    with g.as_default():
        m = models.build_cnn(shape, 10, filters=(4, 6), dense=12, optimizer=models.make_optimizer("adam"))
        init = cf.global_variables_initializer()
    assert m.x.shape.as_list() == [None, *shape] and m.logits.shape.as_list() == [None, 10]
    x, y = _batch(shape, 8)
    with cf.Session(graph=g) as sess:
        sess.run(init)
        losses = [sess.run([m.loss, m.train_op], {m.x: x, m.y: y})[0] for _ in range(25)]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_make_optimizer():
    for name in models.OPTIMIZERS:
        opt = models.make_optimizer(name)
        assert isinstance(opt, cf.train.Optimizer)
    assert isinstance(models.make_optimizer("sgd"), cf.train.GradientDescentOptimizer)
    with pytest.raises(ValueError, match="unknown optimizer 'lbfgs'"):
        models.make_optimizer("lbfgs")
