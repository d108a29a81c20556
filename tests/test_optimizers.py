"""Optimizers against NumPy references (dense and sparse), slots, global step, schedules."""
import math

import numpy as np
import pytest

import collflow as cf
from collflow import initializers, layers
from collflow.kernels import training_kernels
from tf1_hyper import f32, f32_power

# -- NumPy references (TensorFlow's formulas) ------------------------------------------------
# TF1's optimizers turn a Python-float hyperparameter into a float32 tensor and cast it to the
# variable's dtype at each update (Adam's beta powers are float32 variables): a float64 model
# steps with float64(float32(0.1)).  test_dense_matches_numpy sets _F32_HYPER for float64.
_F32_HYPER = {0: False}


def _hp(*vals):
    return f32(*vals) if _F32_HYPER[0] else vals


def _power(b, t):
    """beta ** t as TF1's beta power accumulates it: in float32 when the hyperparameters are."""
    return f32_power(b, t) if _F32_HYPER[0] else b ** t



def ref_gd(var, slots, g, t, lr=0.1):
    (lr,) = _hp(lr)
    var -= lr * g


def ref_momentum(var, slots, g, t, lr=0.1, momentum=0.9, nesterov=False):
    acc = slots["momentum"]
    lr, momentum = _hp(lr, momentum)
    acc[...] = momentum * acc + g
    if nesterov:
        var -= lr * g + lr * momentum * acc
    else:
        var -= lr * acc


def ref_adam(var, slots, g, t, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    m, v = slots["m"], slots["v"]
    b1p, b2p = _power(b1, t), _power(b2, t)
    lr, b1, b2, eps = _hp(lr, b1, b2, eps)
    m[...] = b1 * m + (1 - b1) * g
    v[...] = b2 * v + (1 - b2) * g * g
    lr_t = lr * math.sqrt(1 - b2p) / (1 - b1p)
    var -= lr_t * m / (np.sqrt(v) + eps)


def ref_adagrad(var, slots, g, t, lr=0.1):
    acc = slots["accumulator"]
    (lr,) = _hp(lr)
    acc += g * g
    var -= lr * g / np.sqrt(acc)


def ref_rmsprop(var, slots, g, t, lr=0.01, rho=0.9, momentum=0.5, eps=1e-10, centered=False):
    ms, mom = slots["rms"], slots["momentum"]
    lr, rho, momentum, eps = _hp(lr, rho, momentum, eps)
    ms[...] = rho * ms + (1 - rho) * g * g
    denom = ms + eps
    if centered:
        mg = slots["mg"]
        mg[...] = rho * mg + (1 - rho) * g
        denom = ms - mg * mg + eps
    mom[...] = momentum * mom + lr * g / np.sqrt(denom)
    var -= mom


def ref_adadelta(var, slots, g, t, lr=1.0, rho=0.9, eps=1e-6):
    a, au = slots["accum"], slots["accum_update"]
    lr, rho, eps = _hp(lr, rho, eps)
    a[...] = rho * a + (1 - rho) * g * g
    u = np.sqrt(au + eps) / np.sqrt(a + eps) * g
    au[...] = rho * au + (1 - rho) * u * u
    var -= lr * u


def ref_ftrl(var, slots, g, t, lr=0.1, l1=0.01, l2=0.02, power=-0.5, shrink=0.0):
    """TF1's FTRL-proximal (training_ops' ApplyFtrlV2)."""
    accum, linear = slots["accum"], slots["linear"]
    lr, l1, l2, power, shrink = _hp(lr, l1, l2, power, shrink)
    new = accum + g * g
    linear += g + 2 * shrink * var - (new ** -power - accum ** -power) / lr * var
    quad = new ** -power / lr + 2 * l2
    var[...] = np.where(np.abs(linear) > l1, (np.sign(linear) * l1 - linear) / quad, 0.0)
    accum[...] = new


INITIAL_SLOTS = {"momentum": 0.0, "m": 0.0, "v": 0.0, "accumulator": 0.1, "rms": 1.0, "mg": 0.0,
                 "accum": 0.0, "accum_update": 0.0, "linear": 0.0}

OPTIMIZERS = {
    "sgd": (lambda: cf.train.GradientDescentOptimizer(0.1), ref_gd),
    "momentum": (lambda: cf.train.MomentumOptimizer(0.1, 0.9), ref_momentum),
    "nesterov": (lambda: cf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
                 lambda *a: ref_momentum(*a, nesterov=True)),
    "adam": (lambda: cf.train.AdamOptimizer(0.01), ref_adam),
    "adagrad": (lambda: cf.train.AdagradOptimizer(0.1), ref_adagrad),
    "rmsprop": (lambda: cf.train.RMSPropOptimizer(0.01, momentum=0.5), ref_rmsprop),
    "rmsprop_centered": (lambda: cf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
                         lambda *a: ref_rmsprop(*a, centered=True)),
    "adadelta": (lambda: cf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6), ref_adadelta),
    "ftrl": (lambda: cf.train.FtrlOptimizer(0.1, initial_accumulator_value=0.0, l1_regularization_strength=0.01,
                                            l2_regularization_strength=0.02), ref_ftrl),
    "ftrl_power_shrinkage": (lambda: cf.train.FtrlOptimizer(0.1, learning_rate_power=-0.7, initial_accumulator_value=0.0,
                                                            l1_regularization_strength=0.01,
                                                            l2_regularization_strength=0.02,
                                                            l2_shrinkage_regularization_strength=0.03),
                             lambda *a: ref_ftrl(*a, power=-0.7, shrink=0.03)),
}


@pytest.fixture(params=[True, False], ids=["blas", "numpy"])
def blas(request):
    """Runs a test with the BLAS fast path (NumPy's own BLAS) and with plain NumPy."""
    was = training_kernels.blas_enabled()
    if request.param and not was:
        try:
            training_kernels.set_blas_enabled(True)
        except RuntimeError:
            pytest.skip("NumPy's BLAS cannot be called directly here")
    if not request.param:
        training_kernels.set_blas_enabled(False)
    yield request.param
    training_kernels.set_blas_enabled(was)


def _tol(dtype):
    return dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)


# (300, 250) is larger than a kernel chunk (65536 float32 / 32768 float64), with a partial last chunk
@pytest.mark.parametrize("shape", [(37, 11), (300, 250)], ids=["small", "chunked"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_dense_matches_numpy(name, dtype, shape, blas, monkeypatch):
    make, ref = OPTIMIZERS[name]
    monkeypatch.setitem(_F32_HYPER, 0, dtype == np.float64)
    rng = np.random.default_rng(1)
    w0 = rng.normal(size=shape).astype(dtype)
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(w0, name="w")
        grad = cf.placeholder(dtype, shape, name="grad")
        opt = make()
        train = opt.apply_gradients([(grad, w)])
        slots = {n: opt.get_slot(w, n) for n in opt.get_slot_names()}
        init = cf.global_variables_initializer()
    ref_w = w0.copy()
    ref_slots = {n: np.full(shape, INITIAL_SLOTS[n], dtype) for n in slots}
    with cf.Session(graph=g) as sess:
        sess.run(init)
        for t in range(1, 6 if shape[0] < 100 else 3):
            gv = rng.normal(size=shape).astype(dtype)
            sess.run(train, {grad: gv})
            ref(ref_w, ref_slots, gv, t)
            np.testing.assert_allclose(sess.run(w), ref_w, **_tol(dtype))
            for n, s in slots.items():
                np.testing.assert_allclose(sess.run(s), ref_slots[n], **_tol(dtype), err_msg=n)
        assert sess.run(w).dtype == dtype


# every optimizer's sparse update touches only the looked-up rows, as in TF1, except Adam's:
# TF1's AdamOptimizer decays every row's moments (LazyAdamOptimizer is the touched-rows one)
LAZY = {**{k: v for k, v in OPTIMIZERS.items() if k != "adam"},
        "lazy_adam": (lambda: cf.train.LazyAdamOptimizer(0.01), ref_adam)}


@pytest.mark.parametrize("name", sorted(LAZY))
def test_sparse_matches_numpy_and_touches_only_looked_up_rows(name, blas):
    make, ref = LAZY[name]
    rng = np.random.default_rng(2)
    shape = (20, 3)
    w0 = rng.normal(size=shape).astype(np.float32)
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(w0, name="emb")
        vals = cf.placeholder(cf.float32, (None, 3), name="vals")
        idx = cf.placeholder(cf.int64, (None,), name="idx")
        grad = cf.IndexedSlices(vals, idx, cf.constant(np.array(shape, np.int64)))
        opt = make()
        train = opt.apply_gradients([(grad, w)])
        assert any(op.type.startswith("SparseApply") for op in g.get_operations())
        slots = {n: opt.get_slot(w, n) for n in opt.get_slot_names()}
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        # non-trivial slots everywhere: a dense update would change the untouched rows
        ref_w = w0.copy()
        ref_slots = {}
        for n, s in slots.items():
            lo, hi = (-0.2, 0.2) if n == "mg" else (0.5, 1.5)  # keep ms - mg^2 positive
            v = rng.uniform(lo, hi, size=shape).astype(np.float32)
            s.load(v, sess)
            ref_slots[n] = v.copy()
        t = 0
        for indices in ([3, 7, 3, 19, 0, 7, 7], [5], [19, 18, 17, 3]):
            t += 1
            ind = np.array(indices, np.int64)
            gv = rng.normal(size=(len(ind), 3)).astype(np.float32)
            before_w = sess.run(w).copy()
            before_slots = {n: sess.run(s).copy() for n, s in slots.items()}
            sess.run(train, {vals: gv, idx: ind})
            rows = np.unique(ind)
            summed = np.zeros((len(rows), 3), np.float32)
            np.add.at(summed, np.searchsorted(rows, ind), gv)
            sub_w = ref_w[rows]
            sub_slots = {n: s[rows] for n, s in ref_slots.items()}
            ref(sub_w, sub_slots, summed, t)
            ref_w[rows] = sub_w
            for n in ref_slots:
                ref_slots[n][rows] = sub_slots[n]
            untouched = np.setdiff1d(np.arange(shape[0]), rows)
            got_w = sess.run(w)
            np.testing.assert_allclose(got_w, ref_w, rtol=2e-5, atol=1e-6)
            assert np.array_equal(got_w[untouched], before_w[untouched])
            for n, s in slots.items():
                got = sess.run(s)
                np.testing.assert_allclose(got, ref_slots[n], rtol=2e-5, atol=1e-6, err_msg=n)
                assert np.array_equal(got[untouched], before_slots[n][untouched]), f"slot {n} changed off its rows"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_sparse_update_is_tf1s_every_row_decays_and_moves(dtype, monkeypatch):
    """TF1's AdamOptimizer._apply_sparse: m *= beta1 and v *= beta2 on every row, the touched rows
    add (1 - beta1) g and (1 - beta2) g^2 (duplicates summed first), then every row of var moves
    by lr_t m / (sqrt(v) + eps): a row seen once keeps moving with its momentum afterwards."""
    monkeypatch.setitem(_F32_HYPER, 0, dtype == np.float64)
    lr, b1, b2, eps = _hp(0.1, 0.9, 0.999, 1e-8)
    rng = np.random.default_rng(5)
    shape = (8, 3)
    w0 = rng.normal(size=shape).astype(dtype)
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(w0, name="emb")
        ids = cf.placeholder(cf.int32, (None,))
        up = cf.placeholder(dtype, (None, 3))
        loss = cf.reduce_sum(cf.nn.embedding_lookup(w, ids) * up)
        opt = cf.train.AdamOptimizer(0.1)
        train = opt.minimize(loss)
        assert any(op.type == "SparseApplyAdam" for op in g.get_operations())
        init = cf.global_variables_initializer()
    ref_w, m, v = w0.astype(np.float64), np.zeros(shape), np.zeros(shape)
    with cf.Session(graph=g) as sess:
        sess.run(init)
        for t, batch in enumerate(([0, 2, 2], [1], [5, 0], [3, 3, 3], [7]), start=1):
            u = rng.normal(size=(len(batch), 3)).astype(dtype)
            sess.run(train, {ids: batch, up: u})
            gsum = np.zeros(shape)
            np.add.at(gsum, batch, u.astype(np.float64))
            rows = np.unique(batch)
            m *= b1
            v *= b2
            m[rows] += (1 - b1) * gsum[rows]
            v[rows] += (1 - b2) * gsum[rows] ** 2
            ref_w -= lr * np.sqrt(1 - _power(0.999, t)) / (1 - _power(0.9, t)) * m / (np.sqrt(v) + eps)
            got = sess.run(w)
            np.testing.assert_allclose(got, ref_w, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
        # row 0 was last seen at step 3 and still moved at steps 4 and 5; row 4 was never seen
        np.testing.assert_array_equal(sess.run(w)[4], w0[4])
        assert not np.allclose(sess.run(w)[0], w0[0])
        np.testing.assert_allclose(sess.run(opt.get_slot(w, "m")), m, rtol=1e-5, atol=1e-7)


def test_sparse_out_of_range_index_is_an_error():
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.zeros((4, 2), np.float32), name="w")
        vals = cf.placeholder(cf.float32, (None, 2))
        idx = cf.placeholder(cf.int32, (None,))
        train = cf.train.AdagradOptimizer(0.1).apply_gradients(
            [(cf.IndexedSlices(vals, idx, cf.constant(np.array([4, 2], np.int64))), w)])
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        with pytest.raises(cf.InvalidArgumentError, match=r"index 4 is out of range \[0, 4\).*'w'"):
            sess.run(train, {vals: np.ones((2, 2), np.float32), idx: np.array([1, 4], np.int32)})
        assert np.array_equal(sess.run(w), np.zeros((4, 2), np.float32))


def test_embedding_training_updates_only_looked_up_rows():
    g = cf.Graph()
    with g.as_default():
        ids = cf.placeholder(cf.int32, (None,), name="ids")
        e = layers.embedding(ids, 50, 4, embeddings_initializer=initializers.random_normal(seed=3))
        loss = cf.reduce_sum(cf.square(e))
        train = cf.train.AdamOptimizer(0.1).minimize(loss)
        assert any(op.type == "SparseApplyAdam" for op in g.get_operations())
        table = cf.trainable_variables()[0]
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        before = sess.run(table).copy()
        for _ in range(3):
            sess.run(train, {ids: np.array([4, 9, 4])})
        after = sess.run(table)
        changed = np.flatnonzero(np.any(after != before, axis=1))
        assert changed.tolist() == [4, 9]
        assert np.sum(after[[4, 9]] ** 2) < 0.8 * np.sum(before[[4, 9]] ** 2)


def test_fetched_value_is_a_snapshot_when_the_update_runs_in_the_same_step():
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.ones((3,), np.float32), name="w")
        r = w.read_value()
        loss = cf.reduce_sum(r * r)
        train = cf.train.GradientDescentOptimizer(0.25).minimize(loss)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        old, _ = sess.run([r, train])
        kept = old.copy()
        sess.run(train)
        np.testing.assert_array_equal(old, kept)
        np.testing.assert_allclose(sess.run(w), np.full(3, 0.25, np.float32))


# -- slots, variables, global step ------------------------------------------------------------


def test_slots_names_devices_and_collections():
    g = cf.Graph()
    with g.as_default():
        with cf.device("/cpu:0"):
            w = cf.Variable(np.zeros((2, 3), np.float32), name="layer/w")
        b = cf.Variable(np.zeros((3,), np.float32), name="b")
        loss = cf.reduce_sum(cf.matmul(cf.ones((1, 2)), w) + b)
        opt = cf.train.AdamOptimizer()
        with cf.name_scope("outer"):
            opt.minimize(loss)
        m, v = opt.get_slot(w, "m"), opt.get_slot(w, "v")
        assert opt.get_slot_names() == ["m", "v"]
        assert m.name == "layer/w/Adam:0" and v.name == "layer/w/Adam_1:0"
        assert opt.get_slot(b, "m").name == "b/Adam:0"
        assert m.device == "/cpu:0" and v.device == "/cpu:0"
        assert not m.trainable and m.shape == w.shape and m.dtype == w.dtype
        assert opt.get_slot(w, "nope") is None
        assert set(cf.trainable_variables()) == {w, b}
        names = [x.name for x in opt.variables()]
        # slots are named by the variable scope (none here), the beta powers by the name scope
        # minimize ran in, as TF1 names them
        assert names == sorted(["b/Adam:0", "b/Adam_1:0", "outer/beta1_power:0", "outer/beta2_power:0",
                                "layer/w/Adam:0", "layer/w/Adam_1:0"])
        assert all(x in cf.global_variables() for x in opt.variables())


def test_slot_initializers_do_not_inherit_control_dependencies():
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.ones((2,), np.float32), name="w")
        counter = cf.Variable(np.zeros((), np.float32), name="counter", trainable=False)
        bump = cf.assign_add(counter, 1.0)
        loss = cf.reduce_sum(w * w)
        with cf.control_dependencies([bump]):
            train = cf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        assert sess.run(counter) == 0.0
        sess.run(train)
        assert sess.run(counter) == 1.0


def test_global_step_increments_and_is_shared():
    g = cf.Graph()
    with g.as_default():
        step = cf.train.get_or_create_global_step()
        assert cf.train.get_or_create_global_step() is step
        assert cf.train.get_global_step() is step
        assert step.dtype == cf.int64 and not step.trainable and step.name == "global_step:0"
        assert g.get_collection(cf.GraphKeys.GLOBAL_STEP) == [step]
        with pytest.raises(ValueError, match="already has a global step"):
            cf.train.create_global_step()
        w = cf.Variable(np.ones((2,), np.float32), name="w")
        train = cf.train.GradientDescentOptimizer(0.1).minimize(cf.reduce_sum(w * w), global_step=step)
        init = cf.global_variables_initializer()
    assert cf.train.get_global_step(cf.Graph()) is None
    with cf.Session(graph=g) as sess:
        sess.run(init)
        for i in range(3):
            sess.run(train)
        assert sess.run(step) == 3
        assert cf.train.global_step(sess, step) == 3
        np.testing.assert_allclose(sess.run(w), np.full(2, 0.8 ** 3), rtol=1e-6)


def test_adam_beta_powers_advance_once_per_step():
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.ones((2,), np.float64), name="w")
        opt = cf.train.AdamOptimizer(0.1, beta1=0.5, beta2=0.75)
        train = opt.minimize(cf.reduce_sum(w * w))
        b1p, b2p = opt._get_beta_accumulators()
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train)
        assert sess.run(b1p) == pytest.approx(0.5 ** 4) and sess.run(b2p) == pytest.approx(0.75 ** 4)


def test_none_gradients_are_skipped_and_all_none_is_an_error():
    g = cf.Graph()
    with g.as_default():
        a = cf.Variable(np.ones((2,), np.float32), name="a")
        unused = cf.Variable(np.ones((2,), np.float32), name="unused")
        loss = cf.reduce_sum(a * a)
        opt = cf.train.GradientDescentOptimizer(0.5)
        gv = opt.compute_gradients(loss)
        assert [v for _, v in gv] == [a, unused] and gv[1][0] is None
        train = opt.apply_gradients(gv)
        with pytest.raises(ValueError, match=r"No gradients provided for any variable.*'unused:0'"):
            opt.apply_gradients([(None, unused)])
        with pytest.raises(ValueError, match=r"No gradients provided.*unused:0"):
            opt.minimize(loss, var_list=[unused])
        with pytest.raises(ValueError, match="No variables to optimize"):
            opt.compute_gradients(loss, var_list=[])
        with pytest.raises(TypeError, match="cf.Variable"):
            opt.apply_gradients([(cf.ones((2,)), cf.ones((2,)))])
        with pytest.raises(cf.InvalidArgumentError, match="float64"):
            opt.apply_gradients([(cf.ones((2,), dtype=cf.float64), a)])
        with pytest.raises(cf.InvalidArgumentError, match="shape"):
            opt.apply_gradients([(cf.ones((3,)), a)])
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train)
        np.testing.assert_allclose(sess.run(a), [0.0, 0.0])
        np.testing.assert_allclose(sess.run(unused), [1.0, 1.0])


def test_learning_rate_tensor_placeholder_and_float64_variables():
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.ones((2,), np.float64), name="w")
        lr = cf.placeholder(cf.float32, (), name="lr")
        train = cf.train.MomentumOptimizer(lr, 0.0).minimize(cf.reduce_sum(w * w))
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train, {lr: 0.25})
        np.testing.assert_allclose(sess.run(w), [0.5, 0.5])
        sess.run(train, {lr: 0.5})
        np.testing.assert_allclose(sess.run(w), [0.0, 0.0])


def test_gate_graph_and_hyperparameter_validation():
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.ones((2,), np.float32), name="w")
        opt = cf.train.GradientDescentOptimizer(0.5)
        gv = opt.compute_gradients(cf.reduce_sum(w * w), gate_gradients=opt.GATE_GRAPH)
        train = opt.apply_gradients(gv, name="sgd_step")
        assert train.name == "sgd_step"  # TF1: the train op takes its name scope's own name
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.0, 0.0])
    with pytest.raises(ValueError, match="beta1"):
        cf.train.AdamOptimizer(beta1=1.0)
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        cf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="momentum"):
        cf.train.MomentumOptimizer(0.1, -0.5)


# -- training end to end: the loss falls ------------------------------------------------------


@pytest.mark.parametrize("name", ["sgd", "momentum", "nesterov", "adam", "adagrad", "rmsprop"])
def test_classifier_loss_falls(name):
    makers = {
        "sgd": lambda: cf.train.GradientDescentOptimizer(0.5),
        "momentum": lambda: cf.train.MomentumOptimizer(0.1, 0.9),
        "nesterov": lambda: cf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
        "adam": lambda: cf.train.AdamOptimizer(0.02),
        "adagrad": lambda: cf.train.AdagradOptimizer(0.3),
        "rmsprop": lambda: cf.train.RMSPropOptimizer(0.01),
    }
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=3.0, size=(3, 5))
    labels = rng.integers(0, 3, size=240)
    feats = (centers[labels] + rng.normal(size=(240, 5))).astype(np.float32)
    g = cf.Graph()
    with g.as_default():
        cf.set_random_seed(7)
        x = cf.placeholder(cf.float32, (None, 5), name="x")
        y = cf.placeholder(cf.int32, (None,), name="y")
        h = layers.dense(x, 16, activation=cf.nn.relu)
        logits = layers.dense(h, 3)
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        step = cf.train.get_or_create_global_step()
        train = makers[name]().minimize(loss, global_step=step)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        feed = {x: feats, y: labels.astype(np.int32)}
        first = sess.run(loss, feed)
        for _ in range(60):
            sess.run(train, feed)
        last = sess.run(loss, feed)
        assert sess.run(step) == 60
    assert last < 0.35 * first, (first, last)


def test_regression_with_a_decaying_learning_rate():
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(128, 4)).astype(np.float32)
    ys = (xs @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + 0.25).astype(np.float32)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 4))
        y = cf.placeholder(cf.float32, (None, 1))
        pred = layers.dense(x, 1, kernel_initializer=initializers.zeros())
        loss = cf.reduce_mean(cf.square(pred - y))
        step = cf.train.get_or_create_global_step()
        lr = cf.train.exponential_decay(0.1, step, decay_steps=50, decay_rate=0.5)
        train = cf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(150):
            sess.run(train, {x: xs, y: ys})
        assert sess.run(loss, {x: xs, y: ys}) < 1e-4
        assert sess.run(lr) == pytest.approx(0.1 * 0.5 ** 3)


# -- learning-rate schedules -------------------------------------------------------------------

STEPS = [0, 1, 7, 10, 49, 50, 99, 100, 101, 250]


def _schedule_values(build):
    g = cf.Graph()
    with g.as_default():
        step = cf.placeholder(cf.int64, (), name="step")
        lr = build(step)
    with cf.Session(graph=g) as sess:
        return [float(sess.run(lr, {step: s})) for s in STEPS], lr


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay(staircase):
    got, lr = _schedule_values(lambda s: cf.train.exponential_decay(0.5, s, 10, 0.9, staircase=staircase))
    want = [0.5 * 0.9 ** (math.floor(s / 10) if staircase else s / 10) for s in STEPS]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert lr.dtype == cf.float32 and lr.shape.rank == 0


def test_inverse_time_and_natural_exp_decay():
    got, _ = _schedule_values(lambda s: cf.train.inverse_time_decay(0.5, s, 10, 2.0, staircase=True))
    np.testing.assert_allclose(got, [0.5 / (1 + 2.0 * math.floor(s / 10)) for s in STEPS], rtol=1e-5)
    got, _ = _schedule_values(lambda s: cf.train.inverse_time_decay(0.5, s, 10, 2.0))
    np.testing.assert_allclose(got, [0.5 / (1 + 2.0 * s / 10) for s in STEPS], rtol=1e-5)
    got, _ = _schedule_values(lambda s: cf.train.natural_exp_decay(0.5, s, 10, 0.3))
    np.testing.assert_allclose(got, [0.5 * math.exp(-0.3 * s / 10) for s in STEPS], rtol=1e-5)


def test_piecewise_constant():
    got, lr = _schedule_values(lambda s: cf.train.piecewise_constant(s, [10, 100], [1.0, 0.5, 0.1]))
    want = [1.0 if s <= 10 else 0.5 if s <= 100 else 0.1 for s in STEPS]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert lr.dtype == cf.float32
    with pytest.raises(ValueError, match="one more value"):
        cf.train.piecewise_constant(cf.constant(1), [1, 2], [1.0, 2.0])


@pytest.mark.parametrize("cycle", [False, True])
def test_polynomial_decay(cycle):
    got, _ = _schedule_values(lambda s: cf.train.polynomial_decay(0.5, s, 50, end_learning_rate=0.01, power=2.0,
                                                                  cycle=cycle))
    want = []
    for s in STEPS:
        ds = 50
        if cycle:
            ds = 50 * (1 if s == 0 else math.ceil(s / 50))
        else:
            s = min(s, ds)
        want.append((0.5 - 0.01) * (1 - s / ds) ** 2 + 0.01)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_cosine_decay():
    got, _ = _schedule_values(lambda s: cf.train.cosine_decay(0.5, s, 100, alpha=0.1))
    want = [0.5 * ((1 - 0.1) * 0.5 * (1 + math.cos(math.pi * min(s, 100) / 100)) + 0.1) for s in STEPS]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_schedules_need_a_global_step():
    with pytest.raises(ValueError, match="global_step is required"):
        cf.train.exponential_decay(0.1, None, 10, 0.5)
    with pytest.raises(ValueError, match="decay_steps"):
        cf.train.cosine_decay(0.1, cf.constant(1), 0)


# -- the fused kernels' error paths --------------------------------------------------------------


def test_apply_op_validates_at_graph_construction():
    from collflow.graph.ops import training_ops as T
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.zeros((2, 2), np.float32), name="w")
        with pytest.raises(cf.InvalidArgumentError, match="gradient of shape"):
            T.apply_gradient_descent(w, 0.1, cf.zeros((3, 2)))
        with pytest.raises(cf.InvalidArgumentError, match="must be a scalar"):
            T.apply_gradient_descent(w, cf.zeros((2,)), cf.zeros((2, 2)))
        iw = cf.Variable(np.zeros((2,), np.int32), name="iw")
        with pytest.raises(cf.InvalidArgumentError, match="floating-point"):
            T.apply_gradient_descent(iw, cf.constant(1), cf.zeros((2,), dtype=cf.int32))


@pytest.mark.parametrize("name", ["sgd", "momentum", "adam"])
def test_fortran_ordered_variable_and_transposed_gradient(name, blas):
    make, ref = OPTIMIZERS[name]
    rng = np.random.default_rng(5)
    w0 = np.asfortranarray(rng.normal(size=(300, 250)).astype(np.float32))
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(w0, name="w")
        grad = cf.placeholder(cf.float32, (300, 250))
        opt = make()
        train = opt.apply_gradients([(grad, w)])
        slots = {n: opt.get_slot(w, n) for n in opt.get_slot_names()}
        init = cf.global_variables_initializer()
    ref_w = np.array(w0)
    ref_slots = {n: np.full(w0.shape, INITIAL_SLOTS[n], np.float32) for n in slots}
    with cf.Session(graph=g) as sess:
        sess.run(init)
        for t in (1, 2):
            gv = np.ascontiguousarray(rng.normal(size=(250, 300)).astype(np.float32)).T  # Fortran-ordered
            sess.run(train, {grad: gv})
            ref(ref_w, ref_slots, gv, t)
        np.testing.assert_allclose(sess.run(w), ref_w, rtol=2e-5, atol=1e-6)


def test_ftrl_slots_named_as_tf1_and_bad_arguments():
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.ones((2, 3), np.float32), name="w")
        opt = cf.train.FtrlOptimizer(0.1)
        opt.minimize(cf.reduce_sum(w * w))
        assert opt.get_slot(w, "accum").op.name == "w/Ftrl" and opt.get_slot(w, "linear").op.name == "w/Ftrl_1"
        named = cf.train.FtrlOptimizer(0.1, accum_name="acc", linear_name="lin")
        v = cf.Variable(np.ones(2, np.float32), name="v")
        named.minimize(cf.reduce_sum(v))
        assert named.get_slot(v, "accum").op.name == "v/acc" and named.get_slot(v, "linear").op.name == "v/lin"
        ada = cf.train.AdadeltaOptimizer()
        ada.minimize(cf.reduce_sum(v * v))
        assert sorted(s.op.name for s in (ada.get_slot(v, "accum"), ada.get_slot(v, "accum_update"))) == [
            "v/Adadelta", "v/Adadelta_1"]
    for kw in ({"learning_rate_power": 0.5}, {"initial_accumulator_value": -1.0},
               {"l1_regularization_strength": -0.1}, {"l2_shrinkage_regularization_strength": -1.0}):
        with pytest.raises(ValueError, match="FtrlOptimizer: .* is out of range"):
            cf.train.FtrlOptimizer(0.1, **kw)



def test_ftrl_updates_a_scalar_variable_as_a_one_element_vector():
    # the 0-d case once failed inside the kernel (a ufunc gave a scalar where an array was written)
    with cf.Graph().as_default():
        s, v = cf.Variable(1.0), cf.Variable([1.0])
        loss = cf.square(s - 3.0) + cf.reduce_sum(cf.square(v - 3.0))
        step = cf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.1,
                                      l2_shrinkage_regularization_strength=0.05).minimize(loss)
        with cf.Session() as sess:
            sess.run(cf.global_variables_initializer())
            for _ in range(4):
                sess.run(step)
                a, b = sess.run([s, v])
                assert np.asarray(a).shape == () and a == b[0]


def test_tf1_dtype_attributes():
    assert cf.float32.base_dtype is cf.float32 and cf.int64.real_dtype is cf.int64
    assert cf.int32.max == 2 ** 31 - 1 and cf.uint8.min == 0 and cf.float16.max == 65504.0
    assert cf.uint8.is_unsigned and not cf.int8.is_unsigned and not cf.bool.is_unsigned
    assert cf.float32.is_compatible_with("float32") and not cf.float32.is_compatible_with(cf.float64)
    assert cf.float64.size == 8 and not cf.float32.is_complex
    with pytest.raises(TypeError, match="minimum value of bool"):
        cf.bool.min


def test_python_float_hyperparameters_are_float32_for_float64_variables_as_tf1():
    """TF1: a Python float learning rate is a float32 tensor cast to the variable's dtype, and
    Adam's beta powers are float32 variables, so a float64 model steps by float64(float32(0.1))
    (TF 2.21's compat.v1 after three SGD steps on 0.7 v^2 from 1: 0.6360559953712226, where an
    exact 0.1 would give 0.636056).  A NumPy float64 keeps its precision, as in TF1."""
    def run(opt_fn):
        g = cf.Graph()
        with g.as_default():
            v = cf.Variable(np.array([1.0, -2.0]), dtype=cf.float64)
            opt = opt_fn()
            train = opt.minimize(cf.reduce_sum(v * v * 0.7))
            with cf.Session(graph=g) as s:
                s.run(cf.global_variables_initializer())
                for _ in range(3):
                    s.run(train)
                return s.run(v), opt._get_beta_accumulators(g)[0] if hasattr(opt, "_get_beta_accumulators") else None
    w, _ = run(lambda: cf.train.GradientDescentOptimizer(0.1))
    assert w[0] == 0.6360559953712226 and w[1] == -1.2721119907424452
    w, _ = run(lambda: cf.train.GradientDescentOptimizer(np.float64(0.1)))
    np.testing.assert_allclose(w, [0.636056, -1.272112], rtol=1e-15)
    w, b1p = run(lambda: cf.train.AdamOptimizer(0.1))
    assert b1p.dtype.base_dtype == cf.float32
    np.testing.assert_allclose(w, [0.7015873417750325, -1.7006244422632886], rtol=1e-15)
