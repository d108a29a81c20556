"""nn ops: values against NumPy references, errors, dropout seeding, sparse embedding gradients.

Gradients against finite differences live in gradtable_nn.py (run by test_gradients.py).
"""
import itertools

import numpy as np
import pytest

import collflow as cf

RNG = np.random.default_rng(0)


def _run(g, fetches, feed=None):
    with cf.Session(graph=g) as s:
        return s.run(fetches, feed)


def _eval(fn, *arrays):
    """fn applied to placeholders fed with `arrays`, run once."""
    g = cf.Graph()
    with g.as_default():
        phs = [cf.placeholder(cf.as_dtype(a.dtype), a.shape) for a in arrays]
        out = fn(*phs)
    return _run(g, out, dict(zip(phs, arrays)))


# -- NumPy references ----------------------------------------------------------------------


def _same_pads(size, k, s, d=1):
    eff = (k - 1) * d + 1
    out = -(-size // s)
    total = max((out - 1) * s + eff - size, 0)
    return out, total // 2


def ref_conv2d(x, w, stride, padding, dilation=(1, 1)):
    """Direct loops over every output pixel (the definition)."""
    n, h, wd, c = x.shape
    kh, kw, _, co = w.shape
    sh, sw = stride
    dh, dw = dilation
    if padding == "SAME":
        oh, pt = _same_pads(h, kh, sh, dh)
        ow, pl = _same_pads(wd, kw, sw, dw)
    else:
        oh, pt = (h - (kh - 1) * dh - 1) // sh + 1, 0
        ow, pl = (wd - (kw - 1) * dw - 1) // sw + 1, 0
    out = np.zeros((n, oh, ow, co))
    for b, i, j in itertools.product(range(n), range(oh), range(ow)):
        for p, q in itertools.product(range(kh), range(kw)):
            r, s = i * sh + p * dh - pt, j * sw + q * dw - pl
            if 0 <= r < h and 0 <= s < wd:
                out[b, i, j] += x[b, r, s] @ w[p, q]
    return out


def ref_pool(x, k, stride, padding, how):
    n, h, wd, c = x.shape
    (kh, kw), (sh, sw) = k, stride
    if padding == "SAME":
        oh, pt = _same_pads(h, kh, sh)
        ow, pl = _same_pads(wd, kw, sw)
    else:
        oh, pt = (h - kh) // sh + 1, 0
        ow, pl = (wd - kw) // sw + 1, 0
    out = np.zeros((n, oh, ow, c))
    for i, j in itertools.product(range(oh), range(ow)):
        r0, c0 = i * sh - pt, j * sw - pl
        win = x[:, max(r0, 0):min(r0 + kh, h), max(c0, 0):min(c0 + kw, wd), :]
        out[:, i, j] = win.max(axis=(1, 2)) if how == "max" else win.mean(axis=(1, 2))
    return out


def ref_log_softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


# -- activations ---------------------------------------------------------------------------


def test_activations_match_numpy():
    x = RNG.uniform(-3, 3, (4, 5)).astype(np.float32)
    r, lr, lr15, s, t = _eval(lambda p: [cf.nn.relu(p), cf.nn.leaky_relu(p), cf.nn.leaky_relu(p, alpha=1.5),
                                         cf.nn.sigmoid(p), cf.nn.tanh(p)], x)
    np.testing.assert_allclose(r, np.maximum(x, 0))
    np.testing.assert_allclose(lr, np.where(x > 0, x, 0.2 * x), rtol=1e-6)
    np.testing.assert_allclose(lr15, np.where(x > 0, x, 1.5 * x), rtol=1e-6)
    np.testing.assert_allclose(s, 1 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(t, np.tanh(x), rtol=1e-6)
    assert r.dtype == s.dtype == np.float32


def test_sigmoid_saturates_without_overflow():
    x = np.array([-1000.0, -100.0, 0.0, 100.0, 1000.0], dtype=np.float32)
    s = _eval(cf.nn.sigmoid, x)  # warnings are errors: an overflowing exp would fail here
    np.testing.assert_allclose(s, [0, 0, 0.5, 1, 1], atol=1e-30)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_is_accurate_relative_to_tiny_results(dtype):
    # TF1's kernel: sigmoid(-17) is 4.14e-8 in float32 (not 5.96e-8, the 0.5 tanh(x/2) + 0.5
    # form's rounding), and log(sigmoid(x)) stays finite far below -20, as its gradient does
    x = np.concatenate([-np.geomspace(1e-3, 80, 200), np.geomspace(1e-3, 80, 200)]).astype(dtype)
    s = _eval(cf.nn.sigmoid, x)
    ref = np.where(x < 0, np.exp(np.minimum(x, 0).astype(np.float64))
                   / (1 + np.exp(np.minimum(x, 0).astype(np.float64))),
                   1 / (1 + np.exp(-np.maximum(x, 0).astype(np.float64))))
    np.testing.assert_allclose(s, ref, rtol=4 * np.finfo(dtype).eps, atol=0)
    g = cf.Graph()
    with g.as_default():
        xt = cf.constant(np.array([-30.0, -60.0], dtype))
        ls = cf.log(cf.nn.sigmoid(xt))
        (dx,) = cf.gradients(ls, [xt])
    lv, dv = _run(g, [ls, dx])
    np.testing.assert_allclose(lv, [-30.0, -60.0], rtol=1e-6)
    np.testing.assert_allclose(dv, [1.0, 1.0], rtol=1e-6)


def test_activation_gradients_use_fused_ops():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (3,))
        grads = cf.gradients([cf.nn.relu(x), cf.nn.sigmoid(x), cf.nn.tanh(x)], [x])
    types = {op.type for op in g.get_operations()}
    assert {"ReluGrad", "SigmoidGrad", "TanhGrad"} <= types
    xv = np.array([-1.0, 0.5, 2.0], np.float32)
    sg = 1 / (1 + np.exp(-xv))
    expect = (xv > 0) + sg * (1 - sg) + (1 - np.tanh(xv) ** 2)
    np.testing.assert_allclose(_run(g, grads[0], {x: xv}), expect, rtol=1e-6)


# -- softmax and cross entropy ---------------------------------------------------------------


def test_softmax_is_stable_for_large_logits():
    z = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -1000.0]], dtype=np.float32)
    sm, lsm = _eval(lambda p: [cf.nn.softmax(p), cf.nn.log_softmax(p)], z)
    e = np.exp(z - z.max(1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(lsm, ref_log_softmax(z.astype(np.float64)), rtol=1e-6)
    assert np.all(np.isfinite(lsm))


def test_softmax_axis():
    z = RNG.standard_normal((3, 4, 5))
    a0, a1 = _eval(lambda p: [cf.nn.softmax(p, axis=0), cf.nn.log_softmax(p, dim=1)], z)
    np.testing.assert_allclose(a0, np.exp(ref_log_softmax(z, 0)), rtol=1e-12)
    np.testing.assert_allclose(a1, ref_log_softmax(z, 1), rtol=1e-12)


@pytest.mark.parametrize("classes", [5, 300])  # both kernel layouts (few and many classes)
def test_sparse_xent_matches_formula(classes):
    z = RNG.standard_normal((6, classes)) * 3
    z[0, 0] = 5000.0  # stable for huge logits
    y = RNG.integers(0, classes, 6).astype(np.int64)
    g = cf.Graph()
    with g.as_default():
        zp = cf.placeholder(cf.float64, (None, classes))
        yp = cf.placeholder(cf.int64, (None,))
        loss = cf.nn.sparse_softmax_cross_entropy_with_logits(labels=yp, logits=zp)
        (gz,) = cf.gradients(cf.reduce_sum(loss), [zp])
    lv, gv = _run(g, [loss, gz], {zp: z, yp: y})
    lsm = ref_log_softmax(z)
    np.testing.assert_allclose(lv, -lsm[np.arange(6), y], rtol=1e-10)
    onehot = np.eye(classes)[y]
    np.testing.assert_allclose(gv, np.exp(lsm) - onehot, rtol=1e-9, atol=1e-12)


def test_sparse_xent_higher_rank_and_int32_labels():
    z = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    y = RNG.integers(0, 4, (2, 3)).astype(np.int32)
    loss = _eval(lambda zp, yp: cf.nn.sparse_softmax_cross_entropy_with_logits(labels=yp, logits=zp), z, y)
    ref = -np.take_along_axis(ref_log_softmax(z.astype(np.float64)), y[..., None], -1)[..., 0]
    assert loss.shape == (2, 3) and loss.dtype == np.float32
    np.testing.assert_allclose(loss, ref, rtol=1e-5)


@pytest.mark.parametrize("bad", [7, -1])
def test_sparse_xent_out_of_range_label_is_named(bad):
    g = cf.Graph()
    with g.as_default():
        z = cf.placeholder(cf.float32, (None, 5))
        y = cf.placeholder(cf.int32, (None,))
        loss = cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z)
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.InvalidArgumentError, match=rf"label {bad} \(at labels\[2\]\) is out of range.*\[0, 5\)"):
            s.run(loss, {z: np.zeros((3, 5)), y: [0, 4, bad]})


def test_xent_construction_errors():
    g = cf.Graph()
    with g.as_default():
        z = cf.placeholder(cf.float32, (4, 5))
        with pytest.raises(cf.InvalidArgumentError, match="labels must be int32 or int64"):
            cf.nn.sparse_softmax_cross_entropy_with_logits(labels=cf.placeholder(cf.float32, (4,)), logits=z)
        with pytest.raises(cf.InvalidArgumentError, match="do not match logits"):
            cf.nn.sparse_softmax_cross_entropy_with_logits(labels=cf.placeholder(cf.int32, (3,)), logits=z)
        with pytest.raises(cf.InvalidArgumentError, match="must have rank 1"):
            cf.nn.sparse_softmax_cross_entropy_with_logits(labels=cf.placeholder(cf.int32, (4, 5)), logits=z)
        with pytest.raises(cf.InvalidArgumentError, match="only named arguments"):
            cf.nn.sparse_softmax_cross_entropy_with_logits(cf.placeholder(cf.int32, (4,)), z)
        with pytest.raises(cf.InvalidArgumentError, match="do not match logits"):
            cf.nn.softmax_cross_entropy_with_logits(labels=cf.placeholder(cf.float32, (4, 3)), logits=z)


def test_dense_xent_matches_formula_and_v1_stops_label_gradient():
    z = RNG.standard_normal((4, 6))
    y = RNG.dirichlet(np.ones(6), 4)
    g = cf.Graph()
    with g.as_default():
        zp, yp = cf.placeholder(cf.float64, (4, 6)), cf.placeholder(cf.float64, (4, 6))
        l1 = cf.nn.softmax_cross_entropy_with_logits(labels=yp, logits=zp)
        l2 = cf.nn.softmax_cross_entropy_with_logits_v2(labels=yp, logits=zp)
        g1 = cf.gradients(cf.reduce_sum(l1), [zp, yp])
        g2 = cf.gradients(cf.reduce_sum(l2), [zp, yp])
    assert g1[1] is None and g2[1] is not None
    lv, gz, gy = _run(g, [l2, g2[0], g2[1]], {zp: z, yp: y})
    lsm = ref_log_softmax(z)
    np.testing.assert_allclose(lv, -(y * lsm).sum(1), rtol=1e-10)
    np.testing.assert_allclose(gz, np.exp(lsm) - y, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gy, -lsm, rtol=1e-10)
    np.testing.assert_allclose(_run(g, l1, {zp: z, yp: y}), lv)


def test_sigmoid_xent():
    x = np.array([-50.0, -1.0, 0.0, 2.0, 60.0])
    z = np.array([0.0, 1.0, 0.5, 0.0, 1.0])
    v = _eval(lambda a, b: cf.nn.sigmoid_cross_entropy_with_logits(labels=b, logits=a), x, z)
    np.testing.assert_allclose(v, np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))), rtol=1e-12)


# -- convolution ----------------------------------------------------------------------------


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_matches_naive_loops(padding, stride):
    x = RNG.standard_normal((2, 7, 6, 3))
    w = RNG.standard_normal((3, 2, 3, 4))
    out = _eval(lambda a, b: cf.nn.conv2d(a, b, strides=[1, stride, stride, 1], padding=padding), x, w)
    np.testing.assert_allclose(out, ref_conv2d(x, w, (stride, stride), padding), rtol=1e-10, atol=1e-12)


def test_conv2d_dilation_asymmetric_strides_and_static_shape():
    x = RNG.standard_normal((1, 9, 8, 2))
    w = RNG.standard_normal((3, 3, 2, 2))
    g = cf.Graph()
    with g.as_default():
        xp, wp = cf.placeholder(cf.float64, (None, 9, 8, 2)), cf.placeholder(cf.float64, (3, 3, 2, 2))
        a = cf.nn.conv2d(xp, wp, strides=(2, 1), padding="SAME", dilations=[1, 2, 2, 1])
        b = cf.nn.conv2d(xp, filters=wp, strides=1, padding="VALID", dilations=2)
    assert a.shape.as_list() == [None, 5, 8, 2] and b.shape.as_list() == [None, 5, 4, 2]
    av, bv = _run(g, [a, b], {xp: x, wp: w})
    np.testing.assert_allclose(av, ref_conv2d(x, w, (2, 1), "SAME", (2, 2)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bv, ref_conv2d(x, w, (1, 1), "VALID", (2, 2)), rtol=1e-10, atol=1e-12)


def test_conv2d_gradients_with_unknown_batch_match_static():
    x = RNG.standard_normal((3, 6, 6, 2)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 2, 4)).astype(np.float32)
    res = []
    for shape in [(3, 6, 6, 2), (None, 6, 6, 2), (None, None, None, None)]:
        g = cf.Graph()
        with g.as_default():
            xp, wp = cf.placeholder(cf.float32, shape), cf.placeholder(cf.float32, (3, 3, 2, 4))
            y = cf.nn.conv2d(xp, wp, strides=2, padding="SAME")
            res.append(_run(g, cf.gradients(cf.reduce_sum(y * y), [xp, wp]), {xp: x, wp: w}))
    for r in res[1:]:
        np.testing.assert_allclose(r[0], res[0][0], rtol=1e-5)
        np.testing.assert_allclose(r[1], res[0][1], rtol=1e-5)
    assert res[0][0].shape == x.shape and res[0][1].shape == w.shape


def test_conv2d_errors():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (1, 5, 5, 3))
        with pytest.raises(cf.InvalidArgumentError, match="3 channels .* filter expects 2"):
            cf.nn.conv2d(x, cf.placeholder(cf.float32, (3, 3, 2, 4)), strides=1, padding="SAME")
        w = cf.placeholder(cf.float32, (3, 3, 3, 4))
        with pytest.raises(cf.InvalidArgumentError, match="padding must be 'SAME' or 'VALID'"):
            cf.nn.conv2d(x, w, strides=1, padding="FULL")
        with pytest.raises(cf.InvalidArgumentError, match=r"\[1, height, width, 1\]"):
            cf.nn.conv2d(x, w, strides=[2, 1, 1, 1], padding="SAME")
        with pytest.raises(cf.InvalidArgumentError, match="larger than the input"):
            cf.nn.conv2d(x, cf.placeholder(cf.float32, (7, 7, 3, 1)), strides=1, padding="VALID")
        with pytest.raises(cf.InvalidArgumentError, match="NHWC"):
            cf.nn.conv2d(x, w, strides=1, padding="SAME", data_format="HWCN")
        xd = cf.placeholder(cf.float32, (None, None, None, 3))
        y = cf.nn.conv2d(xd, cf.placeholder_with_default(np.zeros((5, 5, 3, 1), np.float32), (5, 5, 3, 1)),
                         strides=1, padding="VALID")
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.InvalidArgumentError, match="larger than the input"):
            s.run(y, {xd: np.zeros((1, 3, 3, 3), np.float32)})


# -- pooling -------------------------------------------------------------------------------


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("k,s", [(2, 2), (3, 2), (3, 1)])
def test_pools_match_naive_loops(padding, k, s):
    x = RNG.standard_normal((2, 7, 6, 3))
    mx, av = _eval(lambda p: [cf.nn.max_pool(p, [1, k, k, 1], [1, s, s, 1], padding),
                              cf.nn.avg_pool2d(p, k, s, padding)], x)
    np.testing.assert_allclose(mx, ref_pool(x, (k, k), (s, s), padding, "max"))
    np.testing.assert_allclose(av, ref_pool(x, (k, k), (s, s), padding, "avg"), rtol=1e-12)


def test_max_pool_gradient_goes_to_first_maximum():
    x = np.array([[1.0, 3.0], [3.0, 2.0]]).reshape(1, 2, 2, 1)
    g = cf.Graph()
    with g.as_default():
        xp = cf.placeholder(cf.float64, (1, 2, 2, 1))
        (gx,) = cf.gradients(cf.nn.max_pool2d(xp, 2, 2, "VALID"), [xp])
    assert _run(g, gx, {xp: x}).reshape(2, 2).tolist() == [[0.0, 1.0], [0.0, 0.0]]


def _first_max_grad(x, g, k, s, padding):
    """TF's MaxPoolGrad rule by loops: each window's gradient goes to its first maximum
    (row-major), every other cell gets exactly 0 (a NaN/inf gradient is not spread)."""
    n, h, w, c = x.shape
    if padding == "SAME":
        oh, ow = -(-h // s), -(-w // s)
        pt, pl = max((oh - 1) * s + k - h, 0) // 2, max((ow - 1) * s + k - w, 0) // 2
    else:
        oh, ow, pt, pl = (h - k) // s + 1, (w - k) // s + 1, 0, 0
    dx = np.zeros_like(x)
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for ch in range(c):
                    best = None
                    for a in range(k):
                        for e in range(k):
                            r, q = i * s - pt + a, j * s - pl + e
                            if 0 <= r < h and 0 <= q < w and (best is None or x[b, r, q, ch] > x[b, best[0], best[1], ch]):
                                best = (r, q)
                    dx[b, best[0], best[1], ch] += g[b, i, j, ch]
    return dx


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("k,s", [(2, 2), (3, 3), (3, 2), (2, 1)])
def test_max_pool_gradient_with_ties_and_non_finite_gradients(padding, k, s):
    """Many ties (ReLU's zeros, repeated values) go to the first maximum; an inf or NaN
    gradient stays in its window's one cell, as in TF (the other cells are 0, not NaN)."""
    rng = np.random.default_rng(k * 10 + s)
    x = np.maximum(np.round(rng.standard_normal((2, 6, 7, 3))), 0.0)
    g = cf.Graph()
    with g.as_default():
        xp = cf.placeholder(cf.float64, x.shape)
        y = cf.nn.max_pool2d(xp, k, s, padding)
        gp = cf.placeholder(cf.float64, y.shape)
        (gx,) = cf.gradients(y, [xp], grad_ys=[gp])
    gv = rng.standard_normal(tuple(y.shape.as_list()))
    gv[0, 0, 0, 0], gv[1, -1, -1, 2] = np.inf, np.nan
    got = _run(g, gx, {xp: x, gp: gv})
    # rtol: overlapping windows add in another order; 0 stays exactly 0 (atol 0)
    np.testing.assert_allclose(got, _first_max_grad(x, gv, k, s, padding), rtol=1e-12, atol=0)


def test_max_pool_gradient_tie_next_to_a_nan_window():
    """A NaN window (no maximum equals its NaN) beside a tied one: as many hits as windows in
    all, yet the tie still goes to its first maximum only."""
    x = np.array([[np.nan, 1.0, 2.0, 2.0], [0.0, 0.0, 1.0, 0.0]]).reshape(1, 2, 4, 1)
    g = cf.Graph()
    with g.as_default():
        xp = cf.placeholder(cf.float64, x.shape)
        (gx,) = cf.gradients(cf.nn.max_pool2d(xp, 2, 2, "VALID"), [xp])
    got = _run(g, gx, {xp: x}).reshape(2, 4)
    assert got[:, 2:].tolist() == [[1.0, 0.0], [0.0, 0.0]]


def test_avg_pool_same_excludes_padding_from_the_count():
    x = np.ones((1, 3, 3, 1))
    v = _eval(lambda p: cf.nn.avg_pool(p, 2, 2, "SAME"), x)
    np.testing.assert_allclose(v, np.ones((1, 2, 2, 1)))


# -- bias, dropout, embeddings, losses -----------------------------------------------------


def test_bias_add_and_its_gradient():
    x = RNG.standard_normal((2, 3, 4))
    b = RNG.standard_normal(4)
    g = cf.Graph()
    with g.as_default():
        xp, bp = cf.placeholder(cf.float64, (None, 3, 4)), cf.placeholder(cf.float64, (4,))
        y = cf.nn.bias_add(xp, bp)
        gx, gb = cf.gradients(cf.reduce_sum(y * 2.0), [xp, bp])
        xw = cf.nn.xw_plus_b(cf.placeholder_with_default(np.eye(4), (4, 4)),
                             cf.placeholder_with_default(x[0].T, (4, 3)), cf.placeholder_with_default(b[:3], (3,)))
        with pytest.raises(cf.InvalidArgumentError, match="does not match the last dimension"):
            cf.nn.bias_add(xp, cf.placeholder(cf.float64, (3,)))
    yv, gxv, gbv, xwv = _run(g, [y, gx, gb, xw], {xp: x, bp: b})
    np.testing.assert_allclose(yv, x + b)
    np.testing.assert_allclose(gxv, np.full(x.shape, 2.0))
    np.testing.assert_allclose(gbv, np.full(4, 12.0))
    np.testing.assert_allclose(xwv, x[0].T + b[:3])


def test_dropout_scales_kept_values_and_drops_about_rate():
    x = np.ones((200, 100), np.float32)
    g = cf.Graph()
    with g.as_default():
        xp = cf.placeholder(cf.float32, (None, 100))
        d = cf.nn.dropout(xp, rate=0.25, seed=1)
        k = cf.nn.dropout(xp, keep_prob=0.75, seed=1)
        (gx,) = cf.gradients(cf.reduce_sum(d), [xp])
    with cf.Session(graph=g) as s:
        dv, kv = s.run([d, k], {xp: x})
        assert set(np.unique(dv)) == {0.0, np.float32(1 / 0.75)}
        assert abs((dv == 0).mean() - 0.25) < 0.02
        np.testing.assert_array_equal(dv, kv)  # same seed, same (graph seed, op seed) stream
        dv2, gv = s.run([d, gx], {xp: x})
        assert not np.array_equal(dv, dv2)  # a new mask every run
        np.testing.assert_array_equal(gv != 0, dv2 != 0)  # the gradient is the same mask (same run)
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(d, {xp: x}), dv)  # reproducible per session


def test_dropout_keep_prob_placeholder_noise_shape_and_identity():
    x = np.ones((4, 50), np.float32)
    g = cf.Graph()
    with g.as_default():
        kp = cf.placeholder(cf.float32, ())
        d = cf.nn.dropout(x, keep_prob=kp, seed=2)
        cols = cf.nn.dropout(x, rate=0.5, noise_shape=[1, 50], seed=3)
        same = cf.nn.dropout(x, rate=0.0)
        with pytest.raises(cf.InvalidArgumentError, match="exactly one of rate= and keep_prob="):
            cf.nn.dropout(x)
        with pytest.raises(cf.InvalidArgumentError, match=r"rate must be in \[0, 1\)"):
            cf.nn.dropout(x, rate=1.0)
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(d, {kp: 1.0}), x)
        half = s.run(d, {kp: 0.5})
        assert set(np.unique(half)) <= {0.0, 2.0}
        c = s.run(cols)
        assert np.all(c == c[0:1])  # one mask row broadcast over the batch
        np.testing.assert_array_equal(s.run(same), x)
        with pytest.raises(cf.InvalidArgumentError, match=r"keep_prob must be in \(0, 1\], got 0.0"):
            s.run(d, {kp: 0.0})


def test_embedding_lookup_variable_gives_indexed_slices():
    table = RNG.standard_normal((6, 3)).astype(np.float32)
    ids = np.array([[1, 4], [1, 0]], np.int32)
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(table, name="emb")
        e = cf.nn.embedding_lookup(w, ids)
        (gw,) = cf.gradients(cf.reduce_sum(e * 3.0), [w])
        init = cf.global_variables_initializer()
    assert isinstance(gw, cf.IndexedSlices)
    with cf.Session(graph=g) as s:
        s.run(init)
        ev, gv = s.run([e, gw])
    np.testing.assert_allclose(ev, table[ids])
    dense = np.zeros_like(table)
    np.add.at(dense, gv.indices, gv.values)
    expect = np.zeros_like(table)
    np.add.at(expect, ids.reshape(-1), 3.0)
    np.testing.assert_allclose(dense, expect)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_sharded(strategy):
    full = RNG.standard_normal((10, 2))
    n = 3
    if strategy == "mod":
        shards = [full[p::n] for p in range(n)]
    else:
        shards = [full[0:4], full[4:7], full[7:10]]
    ids = np.array([0, 9, 4, 5, 4, 3], np.int64)
    g = cf.Graph()
    with g.as_default():
        ps = [cf.placeholder(cf.float64, s.shape) for s in shards]
        ip = cf.placeholder(cf.int64, (None,))
        e = cf.nn.embedding_lookup(ps, ip, partition_strategy=strategy)
        grads = cf.gradients(cf.reduce_sum(e * e), ps)
    assert all(isinstance(gr, cf.IndexedSlices) for gr in grads)
    with cf.Session(graph=g) as s:
        feed = dict(zip(ps, shards))
        feed[ip] = ids
        ev, gvs = s.run([e, grads], feed)
    np.testing.assert_allclose(ev, full[ids])
    dense_full = np.zeros_like(full)
    np.add.at(dense_full, ids, 2 * full[ids])
    for p, (gv, sh) in enumerate(zip(gvs, shards)):
        dense = np.zeros_like(sh)
        np.add.at(dense, gv.indices, gv.values)
        expect = dense_full[p::n] if strategy == "mod" else dense_full[[0, 4, 7][p]:[4, 7, 10][p]]
        np.testing.assert_allclose(dense, expect)


def test_l2_loss_and_moments():
    x = RNG.standard_normal((4, 3, 2))
    g = cf.Graph()
    with g.as_default():
        xp = cf.placeholder(cf.float64, (None, 3, 2))
        l2 = cf.nn.l2_loss(xp)
        m, v = cf.nn.moments(xp, axes=[0, 1])
        mk, vk = cf.nn.moments(xp, axes=[0], keep_dims=True)
        gv = cf.gradients(cf.reduce_sum(v), [xp])[0]
    l2v, mv, vv, mkv, vkv, gvv = _run(g, [l2, m, v, mk, vk, gv], {xp: x})
    np.testing.assert_allclose(l2v, (x ** 2).sum() / 2)
    assert l2v.shape == () and mv.shape == (2,) and mkv.shape == (1, 3, 2)
    np.testing.assert_allclose(mv, x.mean((0, 1)))
    np.testing.assert_allclose(vv, x.var((0, 1)))
    np.testing.assert_allclose(vkv, x.var(0, keepdims=True))
    np.testing.assert_allclose(gvv, 2 * (x - x.mean((0, 1))) / 12)


@pytest.mark.parametrize("n", [5, 1 << 16, (1 << 16) + 3, 3_000_001])
def test_l2_loss_float32_is_accurate_on_large_tensors(n):
    # one float32 BLAS dot over millions of weights lost the fourth digit of weight decay
    # (1.4e-4 relative on AlexNet's 26M-weight fc6); TF's reduction keeps it to ~1e-7
    x = np.random.default_rng(n).normal(0, 0.01, n).astype(np.float32)
    v = np.asarray(_eval(cf.nn.l2_loss, x))
    assert v.dtype == np.float32 and v.shape == ()
    exact = 0.5 * np.sum(x.astype(np.float64) ** 2)
    assert abs(float(v) - exact) <= 2e-6 * exact


def test_mlp_training_step_decreases_loss():
    r = np.random.default_rng(1)
    xb = r.standard_normal((64, 8)).astype(np.float32)
    yb = (xb[:, 0] > 0).astype(np.int32)
    g = cf.Graph()
    with g.as_default():
        x, y = cf.placeholder(cf.float32, (None, 8)), cf.placeholder(cf.int32, (None,))
        w1 = cf.Variable(cf.truncated_normal((8, 16), stddev=0.3, seed=1))
        b1 = cf.Variable(cf.zeros((16,)))
        w2 = cf.Variable(cf.random_normal((16, 2), stddev=0.3, seed=2))
        logits = cf.matmul(cf.nn.relu(cf.nn.bias_add(cf.matmul(x, w1), b1)), w2)
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        params = [w1, b1, w2]
        grads = cf.gradients(loss, params)
        step = cf.group(*[p.assign_sub(gr * 0.5) for p, gr in zip(params, grads)])
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        first = s.run(loss, {x: xb, y: yb})
        for _ in range(30):
            s.run(step, {x: xb, y: yb})
        assert s.run(loss, {x: xb, y: yb}) < first * 0.5
