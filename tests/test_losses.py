"""cf.losses against TensorFlow 1.x's documented formulas, reductions and collections.

Gradients against finite differences live in gradtable_losses.py.
"""
import numpy as np
import pytest

import collflow as cf

R = cf.losses.Reduction
RNG = np.random.default_rng(3)


def _run(g, fetches, feed=None):
    with cf.Session(graph=g) as s:
        return s.run(fetches, feed)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


# -- reductions --------------------------------------------------------------------------------

LOSSES = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
WEIGHTS = np.array([[2.0], [0.0]], np.float32)  # [batch, 1]: broadcast over the 3 columns


@pytest.mark.parametrize("reduction, expected", [
    (R.NONE, LOSSES * WEIGHTS),
    (R.SUM, (LOSSES * WEIGHTS).sum()),
    (R.MEAN, (LOSSES * WEIGHTS).sum() / (np.ones_like(LOSSES) * WEIGHTS).sum()),
    (R.SUM_OVER_BATCH_SIZE, (LOSSES * WEIGHTS).sum() / LOSSES.size),
    (R.SUM_BY_NONZERO_WEIGHTS, (LOSSES * WEIGHTS).sum() / 3.0),   # 3 losses have a non-zero weight
])
def test_compute_weighted_loss_reductions(reduction, expected):
    g = cf.Graph()
    with g.as_default():
        loss = cf.losses.compute_weighted_loss(cf.constant(LOSSES), cf.constant(WEIGHTS), reduction=reduction)
    np.testing.assert_allclose(_run(g, loss), expected, rtol=1e-6)
    assert loss.dtype == cf.float32


def test_default_reduction_is_sum_by_nonzero_weights_and_scalar_weights_count_every_loss():
    g = cf.Graph()
    with g.as_default():
        default = cf.losses.compute_weighted_loss(cf.constant(LOSSES))
        scaled = cf.losses.compute_weighted_loss(cf.constant(LOSSES), 2.0)
    d, s = _run(g, [default, scaled])
    assert d == pytest.approx(LOSSES.mean())
    assert s == pytest.approx(2 * LOSSES.mean())


@pytest.mark.parametrize("reduction", [R.MEAN, R.SUM_BY_NONZERO_WEIGHTS, R.SUM_OVER_BATCH_SIZE])
def test_all_zero_weights_reduce_to_zero_not_nan(reduction):
    g = cf.Graph()
    with g.as_default():
        w = cf.placeholder(cf.float32, (2, 1))
        l = cf.placeholder(cf.float32, (2, 3))
        loss = cf.losses.compute_weighted_loss(l, w, reduction=reduction)
        gl = cf.gradients(loss, l)[0]
    v, gv = _run(g, [loss, gl], {w: np.zeros((2, 1), np.float32), l: LOSSES})
    assert v == 0.0
    assert np.all(np.isfinite(gv))


def test_empty_batch_sum_over_batch_size_is_zero():
    g = cf.Graph()
    with g.as_default():
        l = cf.placeholder(cf.float32, (None,))
        loss = cf.losses.compute_weighted_loss(l, reduction=R.SUM_OVER_BATCH_SIZE)
    assert _run(g, loss, {l: np.zeros(0, np.float32)}) == 0.0


def test_weights_that_do_not_broadcast_and_bad_reductions_are_clear_errors():
    g = cf.Graph()
    with g.as_default():
        with pytest.raises(cf.InvalidArgumentError, match="weights can not be broadcast"):
            cf.losses.compute_weighted_loss(cf.constant(LOSSES), cf.constant([1.0, 2.0]))   # rank 1 vs rank 2
        with pytest.raises(cf.InvalidArgumentError, match="weights can not be broadcast"):
            cf.losses.compute_weighted_loss(cf.constant(LOSSES), cf.constant(np.ones((2, 2), np.float32)))
        with pytest.raises(cf.InvalidArgumentError, match="Invalid Reduction Key"):
            cf.losses.compute_weighted_loss(cf.constant(LOSSES), reduction="mean")
        with pytest.raises(cf.InvalidArgumentError, match="labels must not be None"):
            cf.losses.mean_squared_error(None, cf.constant(LOSSES))
        with pytest.raises(cf.InvalidArgumentError, match="incompatible"):
            cf.losses.mean_squared_error(cf.constant(LOSSES), cf.constant(LOSSES[:, :2]))
    assert set(R.all()) == {"none", "weighted_sum", "weighted_mean", "weighted_sum_over_batch_size",
                            "weighted_sum_by_nonzero_weights"}
    assert R.SUM_OVER_NONZERO_WEIGHTS == R.SUM_BY_NONZERO_WEIGHTS


# -- the losses ------------------------------------------------------------------------------------

Y = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]], np.float32)
P = np.array([[0.5, -1.5, 2.5], [0.2, 3.0, -0.4]], np.float32)
W_ROW = np.array([[1.5], [0.0]], np.float32)


def _by_nonzero(elementwise, w=W_ROW):
    wb = np.broadcast_to(w, elementwise.shape)
    return (elementwise * wb).sum() / np.count_nonzero(wb)


@pytest.mark.parametrize("fn, ref", [
    (lambda y, p, w: cf.losses.mean_squared_error(y, p, w), lambda: (P - Y) ** 2),
    (lambda y, p, w: cf.losses.absolute_difference(y, p, w), lambda: np.abs(P - Y)),
    (lambda y, p, w: cf.losses.huber_loss(y, p, w, delta=1.0),
     lambda: np.where(np.abs(P - Y) <= 1, 0.5 * (P - Y) ** 2, np.abs(P - Y) - 0.5)),
    (lambda y, p, w: cf.losses.huber_loss(y, p, w, delta=2.0),
     lambda: np.where(np.abs(P - Y) <= 2, 0.5 * (P - Y) ** 2, 0.5 * 4 + 2 * (np.abs(P - Y) - 2))),
    (lambda y, p, w: cf.losses.hinge_loss(y, p, w), lambda: np.maximum(0, 1 - (2 * Y - 1) * P)),
    (lambda y, p, w: cf.losses.sigmoid_cross_entropy(y, p, w), lambda: _softplus(P) - P * Y),
    (lambda y, p, w: cf.losses.sigmoid_cross_entropy(y, p, w, label_smoothing=0.2),
     lambda: _softplus(P) - P * (Y * 0.8 + 0.1)),
], ids=["mse", "absolute_difference", "huber-1", "huber-2", "hinge", "sigmoid_xent", "sigmoid_xent-smoothing"])
def test_elementwise_losses_match_tf1_formulas(fn, ref):
    g = cf.Graph()
    with g.as_default():
        loss = fn(cf.constant(Y), cf.constant(P), cf.constant(W_ROW))
    np.testing.assert_allclose(_run(g, loss), _by_nonzero(ref()), rtol=1e-5)


def test_log_loss_and_cosine_distance():
    prob = 1 / (1 + np.exp(-P))
    u = P / np.linalg.norm(P, axis=1, keepdims=True)
    v = (Y + 0.1) / np.linalg.norm(Y + 0.1, axis=1, keepdims=True)
    g = cf.Graph()
    with g.as_default():
        ll = cf.losses.log_loss(cf.constant(Y), cf.constant(prob.astype(np.float32)), epsilon=1e-4)
        cd = cf.losses.cosine_distance(cf.constant(v.astype(np.float32)), cf.constant(u.astype(np.float32)), axis=1,
                                       reduction=R.NONE)
        with pytest.raises(cf.InvalidArgumentError, match="axis"):
            cf.losses.cosine_distance(cf.constant(v), cf.constant(u))
    got_ll, got_cd = _run(g, [ll, cd])
    ref = -Y * np.log(prob + 1e-4) - (1 - Y) * np.log(1 - prob + 1e-4)
    np.testing.assert_allclose(got_ll, ref.mean(), rtol=1e-5)
    np.testing.assert_allclose(got_cd, 1 - (u * v).sum(1, keepdims=True), rtol=1e-5)
    assert got_cd.shape == (2, 1)


def test_softmax_cross_entropy_with_label_smoothing_and_weights():
    onehot = np.eye(3, dtype=np.float32)[[1, 0, 2, 2]]
    logits = RNG.normal(size=(4, 3)).astype(np.float32)
    w = np.array([1.0, 0.0, 2.0, 0.5], np.float32)
    s = 0.3
    smooth = onehot * (1 - s) + s / 3
    per = -(smooth * np.log(_softmax(logits))).sum(1)
    g = cf.Graph()
    with g.as_default():
        loss = cf.losses.softmax_cross_entropy(cf.constant(onehot), cf.constant(logits), cf.constant(w),
                                               label_smoothing=s)
        none = cf.losses.softmax_cross_entropy(cf.constant(onehot), cf.constant(logits), reduction=R.NONE)
    got, got_none = _run(g, [loss, none])
    np.testing.assert_allclose(got, (per * w).sum() / 3, rtol=1e-5)
    np.testing.assert_allclose(got_none, -(onehot * np.log(_softmax(logits))).sum(1), rtol=1e-5)


def test_sparse_softmax_cross_entropy_squeezes_labels_and_weights_of_shape_batch_by_1():
    logits = RNG.normal(size=(4, 5)).astype(np.float32)
    ids = np.array([3, 0, 4, 1])
    w = np.array([2.0, 1.0, 0.0, 1.0], np.float32)
    per = -np.log(_softmax(logits)[np.arange(4), ids])
    g = cf.Graph()
    with g.as_default():
        a = cf.losses.sparse_softmax_cross_entropy(cf.constant(ids), cf.constant(logits), cf.constant(w))
        b = cf.losses.sparse_softmax_cross_entropy(cf.constant(ids[:, None]), cf.constant(logits),
                                                   cf.constant(w[:, None]))
        bad = cf.losses.sparse_softmax_cross_entropy(cf.constant([7, 0, 0, 0]), cf.constant(logits))
    va, vb = _run(g, [a, b])
    np.testing.assert_allclose([va, vb], [(per * w).sum() / 3] * 2, rtol=1e-5)
    with pytest.raises(cf.InvalidArgumentError):
        _run(g, bad)


def test_regression_losses_return_float32_and_cross_entropies_keep_float64():
    # TensorFlow 1.x casts the regression losses' inputs with to_float
    g = cf.Graph()
    with g.as_default():
        y64, p64 = cf.constant(Y.astype(np.float64)), cf.constant(P.astype(np.float64))
        mse = cf.losses.mean_squared_error(y64, p64)
        xent = cf.losses.sigmoid_cross_entropy(y64, p64)
    assert mse.dtype == cf.float32 and xent.dtype == cf.float64
    v = _run(g, xent)
    assert v.dtype == np.float64
    np.testing.assert_allclose(v, (_softplus(P.astype(np.float64)) - P * Y).mean(), rtol=1e-12)


def test_huber_gradient_is_the_clipped_error():
    err = np.array([-3.0, -0.5, 0.25, 2.0], np.float32)
    g = cf.Graph()
    with g.as_default():
        p = cf.placeholder(cf.float32, (4,))
        loss = cf.losses.huber_loss(cf.zeros((4,)), p, delta=1.0, reduction=R.SUM)
        gp = cf.gradients(loss, p)[0]
    np.testing.assert_allclose(_run(g, gp, {p: err}), np.clip(err, -1, 1))


# -- collections ---------------------------------------------------------------------------------


def test_every_loss_goes_to_the_losses_collection_unless_told_otherwise():
    g = cf.Graph()
    with g.as_default():
        y, p = cf.constant(Y), cf.constant(P)
        a = cf.losses.mean_squared_error(y, p)
        b = cf.losses.hinge_loss(y, p, scope="tower_1")
        cf.losses.absolute_difference(y, p, loss_collection=None)
        c = cf.losses.huber_loss(y, p, loss_collection="my_losses")
        assert cf.losses.get_losses() == [a, b]
        assert cf.get_collection(cf.GraphKeys.LOSSES) == [a, b]
        assert cf.losses.get_losses(loss_collection="my_losses") == [c]
        assert cf.losses.get_losses(scope="tower_1") == [b]
        t = cf.constant(3.0)
        cf.losses.add_loss(t)
        assert cf.losses.get_losses()[-1] is t


def test_total_loss_adds_the_regularization_losses():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(np.ones((2, 3), np.float32))
        h = cf.layers.dense(x, 2, kernel_initializer=cf.initializers.constant(0.5),
                            kernel_regularizer=lambda w: 0.1 * cf.nn.l2_loss(w))
        data = cf.losses.mean_squared_error(cf.zeros((2, 2)), h)
        total = cf.losses.get_total_loss()
        data_only = cf.losses.get_total_loss(add_regularization_losses=False)
        reg = cf.losses.get_regularization_loss()
        assert len(cf.losses.get_regularization_losses()) == 1
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        d, t, do, r = s.run([data, total, data_only, reg])
    assert r == pytest.approx(0.1 * 0.5 * 6 * 0.25)    # 0.1 * sum(w^2) / 2, w = 0.5 in a 3x2 kernel
    assert d == pytest.approx(1.5 ** 2)                 # every output is 3 * 0.5
    assert t == pytest.approx(d + r) and do == pytest.approx(d)


def test_total_loss_of_nothing_is_an_error_and_no_regularization_is_zero():
    g = cf.Graph()
    with g.as_default():
        with pytest.raises(cf.InvalidArgumentError, match="no losses"):
            cf.losses.get_total_loss()
        zero = cf.losses.get_regularization_loss()
    assert _run(g, zero) == 0.0
