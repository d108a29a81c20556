"""Plan-level fusion (runtime/plan_fusion.py `_fuse_pairs`, kernels/fused_kernels.py) and the
binding of NumPy's BLAS (kernels/blas.py): fused pairs give the unfused graph's results (up to
rounding), keep every read and update in its place, and are left alone when the
intermediate is needed elsewhere."""
import numpy as np
import pytest

import collflow as cf
from collflow import models
from collflow.kernels import blas

needs_blas = pytest.mark.skipif(not blas.available(), reason="NumPy's BLAS cannot be called directly here")


def _types(plan):
    return [op.type for op in plan.ops]


# -- the BLAS binding ------------------------------------------------------------------------


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("layout", ["CC", "CF", "FC", "FF"])
def test_gemm_matches_numpy(dtype, ta, tb, layout):
    rng = np.random.default_rng(0)
    m, k, n = 7, 5, 6
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    a = np.asfortranarray(a) if layout[0] == "F" else a
    b = np.asfortranarray(b) if layout[1] == "F" else b
    prod = (a.T if ta else a) @ (b.T if tb else b)
    c0 = rng.standard_normal((m, n)).astype(dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    c = c0.copy()
    assert blas.gemm(a, ta, b, tb, c, -0.25, 1.0)
    np.testing.assert_allclose(c, c0 - 0.25 * prod, **tol)
    c = np.full((m, n), np.nan, dtype)  # beta = 0 ignores what c held
    assert blas.gemm(a, ta, b, tb, c, 1.0, 0.0)
    np.testing.assert_allclose(c, prod, **tol)


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_into_a_block_of_columns_leaves_the_rest(dtype):
    """c may be a block of columns of a wider matrix (BLAS's ldc): only the block changes."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal((5, 3)).astype(dtype)
    wide = np.full((4, 9), 7.0, dtype)
    assert blas.gemm(a, False, b, True, wide[:, 3:8], 1.0, 0.0)
    np.testing.assert_allclose(wide[:, 3:8], a @ b.T, rtol=1e-5)
    assert (wide[:, :3] == 7).all() and (wide[:, 8:] == 7).all()
    assert not blas.gemm(a, False, b, True, wide[:, 3:8][::-1], 1.0, 0.0)  # rows backwards


@needs_blas
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_stepper_products_and_their_checks(beta):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 5))
    w = rng.standard_normal((5, 6))
    c = rng.standard_normal((3, 4, 6))
    c0 = c.copy()
    run = blas.stepper(a, w, c, beta=beta)
    run(2)
    np.testing.assert_allclose(c[2], a[2] @ w + beta * c0[2], rtol=1e-12)
    np.testing.assert_array_equal(c[:2], c0[:2])
    with pytest.raises(IndexError):
        run(3)
    with pytest.raises(IndexError):
        run(-1)
    # per-step blocks of a larger array (rows contiguous, a row stride and a step stride of
    # their own), a fixed left operand, a transposed per-step right operand, a fixed result
    big = rng.standard_normal((4, 9, 7))
    wl = rng.standard_normal((6, 4))
    acc = np.zeros((6, 5))
    run = blas.stepper(wl, big[:3, 1:5, 2:7], acc, beta=1.0)  # one result: summed over the steps
    for t in range(3):
        run(t)
    np.testing.assert_allclose(acc, np.einsum("ij,tjk->ik", wl, big[:3, 1:5, 2:7]), rtol=1e-12)
    acc2 = np.zeros((3, 6, 5))
    run = blas.stepper(wl, big[:3, 1:5, 2:7], acc2)
    for t in range(3):
        run(t)
    np.testing.assert_allclose(acc2, np.einsum("ij,tjk->tik", wl, big[:3, 1:5, 2:7]), rtol=1e-12)
    dw = np.ones((6, 4))
    run = blas.stepper(acc2, big[:3, 1:5, 2:7], dw, tb=True, beta=1.0)
    for t in range(3):
        run(t)
    np.testing.assert_allclose(dw, 1 + np.einsum("tik,tjk->ij", acc2, big[:3, 1:5, 2:7]), rtol=1e-12)
    assert blas.stepper(a[:, :, ::2], w[::2], c) is None  # rows not contiguous
    assert blas.stepper(a, w.astype(np.float32), c) is None  # mixed dtypes
    assert blas.stepper(a, w[:4], c) is None  # shapes
    assert blas.stepper(a, w, c[:2]) is None  # different numbers of steps
    assert blas.stepper(a[0], w, c[0]) is None  # no per-step array
    assert blas.stepper(np.zeros((3, 4, 0)), np.zeros((0, 6)), c) is None  # an empty product


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transposer_copies_each_step_transposed_and_scaled(dtype):
    rng = np.random.default_rng(3)
    big = rng.standard_normal((4, 9, 7)).astype(dtype)
    src = big[:3, 1:5, 2:7]                       # per-step blocks of a larger array
    out = np.full((3, 5, 6), 9.0, dtype=dtype)
    run = blas.transposer(src, out[:, :, :4], 0.5)
    if run is None:
        pytest.skip("this BLAS has no omatcopy")
    for t in (2, 0):
        run(t)
    np.testing.assert_array_equal(out[2, :, :4], 0.5 * src[2].T)
    np.testing.assert_array_equal(out[0, :, :4], 0.5 * src[0].T)
    assert (out[1] == 9).all() and (out[:, :, 4:] == 9).all()  # other steps and columns untouched
    with pytest.raises(IndexError):
        run(3)
    one = np.zeros((5, 4), dtype=dtype)           # a per-step source into one fixed matrix
    run = blas.transposer(src, one)
    run(1)
    np.testing.assert_array_equal(one, src[1].T)
    m = rng.standard_normal((6, 8)).astype(dtype)  # two plain matrices: one step
    mt = np.empty((4, 6), dtype=dtype)
    blas.transposer(m[:, 2:6], mt)(0)
    np.testing.assert_array_equal(mt, m[:, 2:6].T)
    assert blas.transposer(src, out[:2, :, :4]) is None  # different numbers of steps
    assert blas.transposer(src, np.zeros((3, 4, 5), dtype)) is None  # shapes not transposed
    assert blas.transposer(src[:, :, ::2], np.zeros((3, 3, 4), dtype)) is None  # rows not contiguous
    assert blas.transposer(src.astype(np.float16), out[:, :, :4]) is None  # dtypes
    assert blas.transposer(big[0, :4, :4], big[0, 2:6, :4]) is None  # overlapping memory


@needs_blas
def test_wide_nt_product_equals_numpy_and_declines_what_it_should(monkeypatch):
    from collflow.kernels.math_kernels import wide_nt_product
    rng = np.random.default_rng(4)
    dtype = np.float32
    a, b = rng.standard_normal((24, 300)).astype(dtype), rng.standard_normal((700, 300)).astype(dtype)
    want = a @ b.T
    tol = 1e-5
    np.testing.assert_allclose(wide_nt_product(a, b), want, rtol=tol, atol=tol * 10)
    wide = np.full((24, 710), 5.0, dtype=dtype)  # into a block of columns
    assert wide_nt_product(a, b, wide[:, 3:703]) is not None
    np.testing.assert_allclose(wide[:, 3:703], want, rtol=tol, atol=tol * 10)
    assert (wide[:, :3] == 5).all() and (wide[:, 703:] == 5).all()
    with monkeypatch.context() as m:  # no omatcopy: NumPy transposes back
        m.setattr(blas, "transposer", lambda *a, **k: None)
        np.testing.assert_allclose(wide_nt_product(a, b), want, rtol=tol, atol=tol * 10)
    assert wide_nt_product(a[:, :8], b[:, :8]) is None                 # too little work
    assert wide_nt_product(rng.standard_normal((200, 300)).astype(dtype), b) is None  # not short
    assert wide_nt_product(a, b[:60]) is None                          # not wide
    assert wide_nt_product(a, b.astype(np.float16)) is None            # mixed dtypes
    assert wide_nt_product(a, b[:, :299]) is None                      # shapes
    assert wide_nt_product(a.astype(np.float64), b.astype(np.float64)) is None  # float64: slower swapped


@needs_blas
def test_gemm_declines_what_it_cannot_do():
    a = np.ones((3, 4), np.float32)
    b = np.ones((4, 2), np.float32)
    c = np.zeros((3, 2), np.float32)
    assert not blas.gemm(a.astype(np.float64), False, b, False, c, 1.0, 0.0)  # mixed dtypes
    assert not blas.gemm(a.astype(np.int32), False, b.astype(np.int32), False, c.astype(np.int32), 1.0, 0.0)
    assert not blas.gemm(a, False, b, False, np.zeros((3, 3), np.float32), 1.0, 0.0)  # shapes
    assert not blas.gemm(a, True, b, False, c, 1.0, 0.0)
    assert not blas.gemm(a, False, b, False, np.zeros((2, 3), np.float32).T, 1.0, 0.0)  # c not C-order
    assert not blas.gemm(np.ones((3, 8), np.float32)[:, ::2], False, b, False, c, 1.0, 0.0)  # strided
    np.testing.assert_array_equal(c, 0)
    empty = np.ones((3, 0), np.float32)  # an empty sum: c is only scaled
    c2 = np.full((3, 2), 2.0, np.float32)
    assert blas.gemm(empty, False, np.ones((0, 2), np.float32), False, c2, 1.0, 1.0)
    np.testing.assert_array_equal(c2, 2.0)
    assert blas.gemm(empty, False, np.ones((0, 2), np.float32), False, c2, 1.0, 0.0)
    np.testing.assert_array_equal(c2, 0.0)


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axpy_and_scal_match_numpy(dtype):
    rng = np.random.default_rng(4)
    for order in ("C", "F"):
        x = np.asarray(rng.standard_normal((6, 5)), dtype=dtype, order=order)
        y0 = np.asarray(rng.standard_normal((6, 5)), dtype=dtype, order=order)
        y = y0.copy(order=order)
        assert blas.axpy(y, -0.5, x) and blas.scal(y, 3.0)
        np.testing.assert_allclose(y, 3.0 * (y0 - 0.5 * x), rtol=1e-5 if dtype == np.float32 else 1e-12)
    y = np.zeros((6, 5), dtype)
    assert not blas.axpy(y, 1.0, np.ones((6, 5), dtype, order="F"))  # elements would not pair up
    assert not blas.axpy(y, 1.0, np.ones((6, 5), np.float16))
    assert not blas.scal(np.ones((6, 5), np.int64), 2.0)
    assert not blas.scal(np.ones((6, 10), dtype)[:, ::2], 2.0)
    np.testing.assert_array_equal(y, 0)


# -- fused plans vs unfused plans ------------------------------------------------------------


def _train_mlp(fuse: bool, dtype=cf.float32, steps: int = 3, optimizer=None):
    rng = np.random.default_rng(0)
    npdt = dtype.np
    xv = rng.standard_normal((16, 12)).astype(npdt)
    yv = rng.integers(0, 4, 16).astype(np.int32)
    g = cf.Graph()
    with g.as_default():
        m = models.build_mlp(12, (10, 8), 4, optimizer=optimizer or cf.train.GradientDescentOptimizer(0.1),
                             seed=3, dtype=dtype, global_step=False)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g, config={"fuse_ops": fuse}) as s:
        s.run(init)
        fetches = [m.loss, m.train_op]
        losses = [s.run(fetches, {m.x: xv, m.y: yv})[0] for _ in range(steps)]
        plan = s.plan_for(fetches, {m.x: xv, m.y: yv})
        return losses, s.run(m.variables), plan


@pytest.mark.host_only("the GEMM+update fusion is a NumPy BLAS path")
@pytest.mark.parametrize("dtype", [cf.float32, cf.float64])
def test_fused_sgd_step_equals_unfused(dtype):
    l1, w1, p1 = _train_mlp(True, dtype)
    l0, w0, p0 = _train_mlp(False, dtype)
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == cf.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(l1, l0, **tol)
    for a, b in zip(w1, w0):
        np.testing.assert_allclose(a, b, **tol)
    assert not any("+" in t for t in _types(p0))
    assert _types(p1).count("MatMul+ApplyGradientDescent") == 3  # every dense layer's weight


@pytest.mark.host_only("the GEMM+update fusion is a NumPy BLAS path")
@pytest.mark.parametrize("momentum", [False, True])
def test_fused_update_without_numpy_blas_takes_the_numpy_path(monkeypatch, momentum):
    opt = (lambda: cf.train.MomentumOptimizer(0.1, 0.9)) if momentum else \
        (lambda: cf.train.GradientDescentOptimizer(0.1))
    l0, w0, _ = _train_mlp(False, optimizer=opt())
    monkeypatch.setattr(blas, "_fns", {})
    monkeypatch.setattr(blas, "_axpy", {})
    l1, w1, p1 = _train_mlp(True, optimizer=opt())
    assert ("MatMul+ApplyMomentum" if momentum else "MatMul+ApplyGradientDescent") in _types(p1)
    np.testing.assert_allclose(l1, l0, rtol=2e-5)
    for a, b in zip(w1, w0):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


@pytest.mark.host_only("the GEMM+update fusion is a NumPy BLAS path")
@pytest.mark.parametrize("dtype", [cf.float32, cf.float64])
def test_fused_momentum_step_equals_unfused(dtype):
    opt = lambda: cf.train.MomentumOptimizer(0.1, 0.9)  # noqa: E731
    l1, w1, p1 = _train_mlp(True, dtype, steps=4, optimizer=opt())
    l0, w0, p0 = _train_mlp(False, dtype, steps=4, optimizer=opt())
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == cf.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(l1, l0, **tol)
    for a, b in zip(w1, w0):
        np.testing.assert_allclose(a, b, **tol)
    assert _types(p1).count("MatMul+ApplyMomentum") == 3
    assert "MatMul+ApplyMomentum" not in _types(p0)


def test_nesterov_stays_unfused():
    _, _, p = _train_mlp(True, optimizer=cf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True))
    assert not any(t.endswith("+ApplyMomentum") for t in _types(p))


def test_gradient_with_a_second_consumer_is_not_fused():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="x")
        w = cf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        gw2 = cf.matmul(x, cf.ones_like(x)[:, :2], transpose_a=True)
        upd = cf.train.GradientDescentOptimizer(0.5).apply_gradients([(gw2, w)])
        norm = cf.reduce_sum(gw2)  # a second consumer of the product
        init = cf.global_variables_initializer()
    xv = np.array([[1.0, 2.0, 3.0]], np.float32)
    with cf.Session(graph=g) as s:
        s.run(init)
        n, _ = s.run([norm, upd], {x: xv})
        assert "MatMul+ApplyGradientDescent" not in _types(s.plan_for([norm, upd], {x: xv}))
        expect = np.arange(6, dtype=np.float32).reshape(3, 2) - 0.5 * (xv.T @ np.ones((1, 2), np.float32))
        np.testing.assert_allclose(s.run(w), expect)
        assert n == pytest.approx(12.0)


def _read_between_graph():
    """An update whose gradient product is computed before a read of the same variable, and
    applied after it: the read must see the value before the update (the unfused order)."""
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="x")
        d = cf.placeholder(cf.float32, (None, 2), name="d")
        w = cf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        grad = cf.matmul(x, d, transpose_a=True)
        seen = w.read_value() * 1.0  # created between the product and the update
        upd = cf.train.GradientDescentOptimizer(0.5).apply_gradients([(grad, w)])
        init = cf.global_variables_initializer()
    return g, x, d, w, seen, upd, init


@pytest.mark.host_only("the GEMM+update fusion is a NumPy BLAS path")
@pytest.mark.parametrize("fuse", [True, False])
def test_a_read_between_product_and_update_sees_the_old_value(fuse):
    g, x, d, w, seen, upd, init = _read_between_graph()
    xv = np.array([[1.0, 2.0, 3.0]], np.float32)
    dv = np.array([[1.0, -1.0]], np.float32)
    w0 = np.arange(6, dtype=np.float32).reshape(3, 2)
    with cf.Session(graph=g, config={"fuse_ops": fuse}) as s:
        s.run(init)
        sv, _ = s.run([seen, upd], {x: xv, d: dv})
        np.testing.assert_array_equal(sv, w0)
        np.testing.assert_allclose(s.run(w), w0 - 0.5 * xv.T @ dv)
        types = _types(s.plan_for([seen, upd], {x: xv, d: dv}))
        assert ("MatMul+ApplyGradientDescent" in types) == fuse
        # the fused update stays after the read
        if fuse:
            assert types.index("ReadVariable") < types.index("MatMul+ApplyGradientDescent")


def test_fused_update_moves_up_past_unrelated_ops_only():
    _, _, plan = _train_mlp(True)
    order = plan.ops
    for i, op in enumerate(order):
        if op.type != "MatMul+ApplyGradientDescent":
            continue
        var = op.inputs[0].op.attrs["shared_name"]
        # every read of this variable ran before its update
        reads = [j for j, o in enumerate(order) if o.type == "ReadVariable"
                 and o.inputs[0].op.attrs["shared_name"] == var]
        assert reads and max(reads) < i


def test_fetched_gradient_is_not_fused():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 2), name="x")
        w = cf.Variable(np.eye(2, dtype=np.float32), name="w")
        gw = cf.matmul(x, x, transpose_a=True)
        upd = cf.train.GradientDescentOptimizer(0.5).apply_gradients([(gw, w)])
        init = cf.global_variables_initializer()
    xv = np.array([[1.0, 2.0]], np.float32)
    with cf.Session(graph=g) as s:
        s.run(init)
        gv, _ = s.run([gw, upd], {x: xv})
        assert "MatMul+ApplyGradientDescent" not in _types(s.plan_for([gw, upd], {x: xv}))
        np.testing.assert_array_equal(gv, xv.T @ xv)
        np.testing.assert_allclose(s.run(w), np.eye(2) - 0.5 * xv.T @ xv)


# -- conv -> ReLU -> max pool: ReLU's gradient applied at the pooled size ---------------------


def _relu_pool_gradient(fuse, k, s, upstream_inf=False):
    """d loss / d z for z = conv(x) + b, r = relu(z), max_pool(r): the input has a flat
    background (ties among positive values where b > 0, among ReLU's zeros where b < 0)."""
    rng = np.random.default_rng(k + 10 * s)
    x = np.zeros((2, 8, 9, 1))
    x[:, 2:6, 3:7, 0] = rng.standard_normal((2, 4, 4))
    g = cf.Graph()
    with g.as_default():
        xp = cf.placeholder(cf.float64, x.shape)
        w = cf.constant(rng.standard_normal((3, 3, 1, 2)))
        z = cf.nn.conv2d(xp, w, [1, 1, 1, 1], "SAME") + cf.constant([0.1, -0.1], cf.float64)
        p = cf.nn.max_pool2d(cf.nn.relu(z), k, s, "SAME")
        up = rng.standard_normal(tuple(p.shape.as_list()))
        if upstream_inf:
            up[0, 0, 0, :] = np.inf
            up[1, 1, 1, 0] = np.nan
        (gz,) = cf.gradients(cf.reduce_sum(p * cf.constant(up)), [z])
    with cf.Session(graph=g, config={"fuse_ops": fuse}) as sess:
        return sess.run(gz, {xp: x}), _types(sess.plan_for(gz, {xp: x}))


@pytest.mark.parametrize("upstream_inf", [False, True])
@pytest.mark.parametrize("k,s", [(2, 2), (3, 3), (2, 3)])
def test_relu_gradient_through_max_pool_fused_equals_unfused(k, s, upstream_inf):
    got, fused = _relu_pool_gradient(True, k, s, upstream_inf)
    want, plain = _relu_pool_gradient(False, k, s, upstream_inf)
    assert "MaxPoolGrad+ReluGrad" in fused and "MaxPoolGrad+ReluGrad" not in plain
    np.testing.assert_array_equal(got, want)  # bit for bit, NaN and inf where the unfused has them
    assert (got == 0).mean() > 0.5  # most cells take no gradient: the ties really were ties


def test_relu_gradient_through_overlapping_pool_windows_stays_unfused():
    """Overlapping windows (stride < ksize) can route two gradients to one cell; ReLU's mask
    at the pooled size would then round differently (sum then mask): not fused."""
    got, fused = _relu_pool_gradient(True, 3, 2)
    want, _ = _relu_pool_gradient(False, 3, 2)
    assert "MaxPoolGrad+ReluGrad" not in fused
    np.testing.assert_array_equal(got, want)


def test_relu_gradient_of_another_tensor_than_the_pools_input_stays_unfused():
    g = cf.Graph()
    with g.as_default():
        xp = cf.placeholder(cf.float64, (1, 4, 4, 1))
        r = cf.nn.relu(xp)
        p = cf.nn.max_pool2d(r * 2.0, 2, 2, "VALID")  # the pool reads 2r, not r
        (gz,) = cf.gradients(cf.reduce_sum(p), [xp])
    xv = np.arange(16.0).reshape(1, 4, 4, 1) - 8
    with cf.Session(graph=g) as sess:
        out = sess.run(gz, {xp: xv})
        assert "MaxPoolGrad+ReluGrad" not in _types(sess.plan_for(gz, {xp: xv}))
    want = np.zeros((4, 4))
    want[1, 1] = want[1, 3] = want[3, 1] = want[3, 3] = 2.0
    want[xv.reshape(4, 4) <= 0] = 0
    np.testing.assert_array_equal(out.reshape(4, 4), want)


@pytest.mark.host_only("the GEMM+update fusion is a NumPy BLAS path")
def test_gradient_gates_are_read_through_and_still_fetchable():
    """TF1's default gate_gradients=GATE_OP wraps each op's input gradients in a tf.tuple; the
    plan reads through those Identity gates (runtime/passes.py), so the weight-gradient product
    still fuses with its update, and a fetched gate gives the gradient's value."""
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((5, 3)).astype(np.float32)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="x")
        w = cf.Variable(rng.standard_normal((3, 2)).astype(np.float32), name="w")
        loss = cf.reduce_sum(cf.square(cf.matmul(x, w)))
        opt = cf.train.GradientDescentOptimizer(0.1)
        (gw, _), = opt.compute_gradients(loss, [w])
        assert gw.name == "gradients/MatMul_grad/tuple/control_dependency_1:0"
        train = opt.minimize(loss)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        w0 = s.run(w)
        np.testing.assert_allclose(s.run(gw, {x: xv}), 2 * xv.T @ (xv @ w0), rtol=1e-5)
        assert "MatMul+ApplyGradientDescent" in _types(s.plan_for([train], {x: xv}))
        s.run(train, {x: xv})
        np.testing.assert_allclose(s.run(w), w0 - 0.1 * 2 * xv.T @ (xv @ w0), rtol=1e-5)
