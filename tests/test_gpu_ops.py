"""The GPU kernels the gradient table cannot reach, against the NumPy kernels.

tests/test_gpu.py compares every differentiable op (values and gradients); this file covers
the rest: comparisons and rounding, index and shape ops, variable updates and every
optimizer's dense and sparse apply ops (exact in float64), and the random ops (by their
distribution: the GPU draws other numbers than the CPU).  Skipped cleanly without a GPU.
"""
import numpy as np
import pytest

import collflow as cf
from collflow.kernels import gpu

pytestmark = pytest.mark.gpu

if gpu.setup() is None:
    pytest.skip("no CuPy or no GPU on this machine", allow_module_level=True)


def _x(rng, shape=(4, 5)):
    v = rng.normal(scale=3.0, size=shape)
    v.flat[0] = 2.5   # a tie for round/rint (banker's rounding in both)
    v.flat[1] = -0.0
    return v


def _ints(rng, shape=(4, 5), lo=-9, hi=10):
    v = rng.integers(lo, hi, size=shape)
    return np.where(v == 0, 3, v)


# name -> (inputs(rng), fn(*placeholders) -> list of tensors)
CASES = {
    "Floor/Ceil/Round/Rint/Sign": (lambda r: [_x(r)], lambda x: [cf.floor(x), cf.ceil(x), cf.round(x), cf.rint(x),
                                                                 cf.sign(x)]),
    "IsNan/IsInf/IsFinite": (lambda r: [np.array([1.0, np.nan, np.inf, -np.inf, 0.0])],
                             lambda x: [cf.is_nan(x), cf.is_inf(x), cf.is_finite(x)]),
    "comparisons": (lambda r: [_x(r), _x(r)], lambda a, b: [cf.equal(a, a), cf.not_equal(a, b), cf.less(a, b),
                                                            cf.less_equal(a, a), cf.greater(a, b),
                                                            cf.greater_equal(a, b)]),
    "logical": (lambda r: [r.random((3, 4)) > 0.5, r.random((3, 4)) > 0.5],
                lambda a, b: [cf.logical_and(a, b), cf.logical_or(a, b), cf.logical_not(a)]),
    "FloorDiv/TruncateDiv/TruncateMod (int)": (lambda r: [_ints(r), _ints(r)],
                                               lambda a, b: [cf.floordiv(a, b), cf.truncatediv(a, b),
                                                             cf.truncatemod(a, b)]),
    "FloorDiv (float)": (lambda r: [_x(r), _x(r) + 10.0], lambda a, b: [cf.floordiv(a, b)]),
    "ArgMax/ArgMin": (lambda r: [_x(r, (6, 7))], lambda x: [cf.argmax(x, 1), cf.argmin(x, 0), cf.argmax(x, -1)]),
    "OneHot": (lambda r: [r.integers(0, 5, size=(7,))], lambda i: [cf.one_hot(i, 5), cf.one_hot(i, 5, 2.0, -1.0)]),
    "OnesLike/ZerosLike/Shape/Size/Rank": (lambda r: [_x(r, (2, 3, 4))],
                                           lambda x: [cf.ones_like(x), cf.zeros_like(x), cf.shape(x), cf.size(x),
                                                      cf.rank(x)]),
    "Eye/Range": (lambda r: [np.array(5)], lambda n: [cf.eye(4, 3), cf.range(0, n, 1), cf.range(2.0, 7.5, 0.5)]),
    "Where (select)": (lambda r: [r.random((4, 5)) > 0.5, _x(r), _x(r)], lambda c, a, b: [cf.where(c, a, b)]),
    "InTopKV2": (lambda r: [r.normal(size=(6, 10)).astype(np.float32), r.integers(0, 10, size=(6,)).astype(np.int32)],
                 lambda p, t: [cf.nn.in_top_k(p, t, 3), cf.nn.in_top_k(p, t, 1)]),
    "StopGradient": (lambda r: [_x(r)], lambda x: [cf.stop_gradient(x) * 2.0]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_kernel_matches_numpy(name):
    make, fn = CASES[name]
    values = make(np.random.default_rng(3))
    g = cf.Graph()
    with g.as_default():
        xs = [cf.placeholder(cf.as_dtype(v.dtype), v.shape) for v in values]
        ys = fn(*xs)
    out = {}
    for dev in ("/cpu:0", "/gpu:0"):
        with cf.Session(graph=g, config={"device": dev}) as s:
            out[dev] = s.run(ys, dict(zip(xs, values)))
    for a, b in zip(out["/gpu:0"], out["/cpu:0"]):
        assert np.asarray(a).dtype == np.asarray(b).dtype and np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


OPTIMIZERS = {
    "sgd": lambda: cf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: cf.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda: cf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adam": lambda: cf.train.AdamOptimizer(0.01),
    "adagrad": lambda: cf.train.AdagradOptimizer(0.1),
    "rmsprop": lambda: cf.train.RMSPropOptimizer(0.01),
    "rmsprop-centered": lambda: cf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
    "adadelta": lambda: cf.train.AdadeltaOptimizer(1.0),
    "ftrl": lambda: cf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.01),
    "ftrl-power-shrinkage": lambda: cf.train.FtrlOptimizer(0.1, learning_rate_power=-0.7,
                                                           l2_shrinkage_regularization_strength=0.02),
}


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_optimizer_apply_ops_match_numpy(opt):
    """Dense (Apply*) and sparse (SparseApply*, from an embedding lookup) updates, 3 steps,
    float64: the variables equal the CPU run's to rounding."""
    g = cf.Graph()
    with g.as_default():
        ids = cf.placeholder(cf.int64, (None,))
        x = cf.placeholder(cf.float64, (None, 4))
        y = cf.placeholder(cf.int32, (None,))
        rng = np.random.default_rng(0)
        emb = cf.Variable(rng.normal(size=(20, 4)), name="emb")
        w = cf.Variable(rng.normal(size=(4, 3)), name="w")
        h = x + cf.nn.embedding_lookup(emb, ids)
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(h, w)))
        train = OPTIMIZERS[opt]().minimize(loss)
        init = cf.global_variables_initializer()
    types = {op.type for op in g.get_operations()}
    assert any("Sparse" in t for t in types) or "ScatterSub" in types or opt == "sgd"
    data = np.random.default_rng(1)
    feeds = [{ids: data.integers(0, 20, size=6), x: data.normal(size=(6, 4)), y: data.integers(0, 3, 6).astype(np.int32)}
             for _ in range(3)]
    got = {}
    for dev in ("/cpu:0", "/gpu:0"):
        with cf.Session(graph=g, config={"device": dev}) as s:
            s.run(init)
            for f in feeds:
                s.run(train, f)
            got[dev] = s.run([emb, w])
    for a, b in zip(got["/gpu:0"], got["/cpu:0"]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_variable_assign_and_scatter_ops_match_numpy():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.arange(12.0).reshape(4, 3), name="v")
        idx = cf.placeholder(cf.int32, (None,))
        upd = cf.placeholder(cf.float64, (None, 3))
        ops = [cf.assign_add(v, np.ones((4, 3))), cf.assign_sub(v, np.full((4, 3), 0.5)),
               cf.scatter_add(v, idx, upd), cf.scatter_sub(v, idx, upd), cf.scatter_update(v, idx, upd * 3.0)]
        init = cf.global_variables_initializer()
    feed = {idx: np.array([0, 2, 2, 3], dtype=np.int32), upd: np.random.default_rng(2).normal(size=(4, 3))}
    got = {}
    for dev in ("/cpu:0", "/gpu:0"):
        with cf.Session(graph=g, config={"device": dev}) as s:
            s.run(init)
            seen = []
            for op in ops[:4]:  # scatter_update with a repeated index picks one of the rows: last
                s.run(op, feed)
                seen.append(s.run(v))
            got[dev] = seen
    for a, b in zip(got["/gpu:0"], got["/cpu:0"]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_random_ops_on_gpu_have_their_distributions():
    g = cf.Graph()
    with g.as_default():
        n = 200_000
        normal = cf.random_normal([n], mean=1.0, stddev=2.0, seed=1)
        uniform = cf.random_uniform([n], minval=-1.0, maxval=3.0, seed=2)
        ints = cf.random_uniform([n], minval=0, maxval=7, dtype=cf.int32, seed=3)
        trunc = cf.truncated_normal([n], stddev=1.0, seed=4)
        shuffled = cf.random_shuffle(cf.range(1000), seed=5)
        draws = cf.multinomial(cf.log(cf.constant([[0.2, 0.5, 0.3]])), 50_000, seed=6)
        kept = cf.nn.dropout(cf.ones([n]), keep_prob=0.75, seed=7)
    with cf.Session(graph=g, config={"device": "/gpu:0"}) as s:
        nv, uv, iv, tv, sv, dv, kv = s.run([normal, uniform, ints, trunc, shuffled, draws, kept])
    assert nv.shape == (200_000,) and nv.dtype == np.float32
    assert abs(nv.mean() - 1.0) < 0.03 and abs(nv.std() - 2.0) < 0.03
    assert uv.min() >= -1.0 and uv.max() < 3.0 and abs(uv.mean() - 1.0) < 0.02
    assert iv.dtype == np.int32 and iv.min() == 0 and iv.max() == 6
    assert np.abs(tv).max() <= 2.0 and abs(tv.std() - 0.88) < 0.02  # std of N(0,1) cut at 2 sigma
    assert sorted(sv.tolist()) == list(range(1000)) and sv.tolist() != list(range(1000))
    freq = np.bincount(dv.reshape(-1), minlength=3) / dv.size
    np.testing.assert_allclose(freq, [0.2, 0.5, 0.3], atol=0.01)
    assert set(np.unique(kv).tolist()) <= {0.0, float(np.float32(1.0) / np.float32(0.75))}
    assert abs((kv > 0).mean() - 0.75) < 0.01


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_bias_add_grad_of_a_conv_sized_gradient_matches_numpy(dtype):
    """BiasAddGrad over a conv layer's gradient (many rows, few channels): the GPU sums it
    as a GEMV (float16 by CuPy's sum); checked against the float64 sum on the host."""
    from collflow.graph.ops.op_util import single
    gv = np.random.default_rng(4).normal(size=(32, 28, 28, 16)).astype(dtype)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(dtype, gv.shape)
        bgrad = single("BiasAddGrad", [x])
    with cf.Session(graph=g, config={"device": "/gpu:0"}) as s:
        got = s.run(bgrad, {x: gv})
    want = gv.astype(np.float64).reshape(-1, 16).sum(axis=0)
    assert got.dtype == dtype and got.shape == (16,)
    scale = np.abs(gv.astype(np.float64)).reshape(-1, 16).sum(axis=0).max()
    tol = {np.float64: 1e-12, np.float32: 1e-6, np.float16: 1e-3}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol * scale)
