"""By-hand tests (no TensorFlow) of tf.keras.optimizers' Adadelta, Adamax, Nadam, Ftrl, the
Optimizer base class, decay / clipnorm / clipvalue and learning-rate schedules: several steps
against NumPy reference updates, state names and order, configs, serialize / deserialize, and
the state model.save writes and load_model restores."""
import json

import h5py
import numpy as np
import pytest

import collflow.compat.v1 as tf

K = tf.keras.backend
O = tf.keras.optimizers

_T = np.array([0.5, -1.0, 2.0, 0.1], np.float32)
_A = np.array([1.0, 0.3, 2.0, 0.7], np.float32)
_W0 = np.array([0.2, 0.4, -0.3, 1.5], np.float32)


def _grad(w):
    return 2 * _A * (w - _T)


def _run(opt, steps=5):
    """Values of w after each of `steps` minimize steps of sum(a * (w - t)^2)."""
    with tf.Graph().as_default():
        w = tf.Variable(_W0, name="w")
        loss = tf.reduce_sum(_A * tf.square(w - _T))
        step = opt.minimize(loss, var_list=[w])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = []
            for _ in range(steps):
                s.run(step)
                out.append(s.run(w))
            names = [v.op.name.split("/", 1)[1] for v in opt.weights]  # under the optimizer's name
            return np.array(out), names, s.run(opt.weights)


def _reference(update, steps=5, **state):
    w = _W0.astype(np.float64)
    st = {k: np.array(v, np.float64) for k, v in state.items()}
    out = []
    for t in range(steps):
        w = update(w, _grad(w), st, t)
        out.append(w.copy())
    return np.array(out)


def test_adadelta_matches_numpy():
    lr, rho, eps = 0.5, 0.9, 1e-6

    def upd(w, g, st, t):
        st["acc"] = rho * st["acc"] + (1 - rho) * g * g
        u = np.sqrt(st["accu"] + eps) / np.sqrt(st["acc"] + eps) * g
        st["accu"] = rho * st["accu"] + (1 - rho) * u * u
        return w - lr * u
    got, names, _ = _run(O.Adadelta(lr, rho=rho, epsilon=eps))
    np.testing.assert_allclose(got, _reference(upd, acc=np.zeros(4), accu=np.zeros(4)), rtol=1e-5, atol=1e-6)
    assert names == ["iter", "w/accum_grad", "w/accum_var"]


def test_adadelta_defaults_are_tf_1_15s():
    cfg = O.Adadelta().get_config()
    assert cfg == {"name": "Adadelta", "learning_rate": 0.001, "decay": 0.0, "rho": 0.95, "epsilon": 1e-7}


def test_adamax_matches_numpy():
    lr, b1, b2, eps = 0.1, 0.8, 0.95, 1e-7

    def upd(w, g, st, t):
        st["m"] = b1 * st["m"] + (1 - b1) * g
        st["v"] = np.maximum(b2 * st["v"], np.abs(g))
        return w - lr / (1 - b1 ** (t + 1)) * st["m"] / (st["v"] + eps)
    got, names, _ = _run(O.Adamax(lr, beta_1=b1, beta_2=b2))
    np.testing.assert_allclose(got, _reference(upd, m=np.zeros(4), v=np.zeros(4)), rtol=1e-5, atol=1e-6)
    assert names == ["iter", "w/m", "w/v"]


def test_nadam_matches_numpy():
    lr, b1, b2, eps, sd = 0.05, 0.9, 0.999, 1e-7, 0.004

    def upd(w, g, st, t):
        mu = b1 * (1 - 0.5 * 0.96 ** (sd * (t + 1)))
        mu_next = b1 * (1 - 0.5 * 0.96 ** (sd * (t + 2)))
        st["cache"] = st["cache"] * mu
        sched_next = st["cache"] * mu_next
        st["m"] = b1 * st["m"] + (1 - b1) * g
        st["v"] = b2 * st["v"] + (1 - b2) * g * g
        m_bar = (1 - mu) * g / (1 - st["cache"]) + mu_next * st["m"] / (1 - sched_next)
        return w - lr * m_bar / (np.sqrt(st["v"] / (1 - b2 ** (t + 1))) + eps)
    opt = O.Nadam(lr)
    got, names, state = _run(opt)
    want = _reference(upd, m=np.zeros(4), v=np.zeros(4), cache=1.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert names == ["iter", "momentum_cache", "w/m", "w/v"]
    assert state[0] == 5
    assert opt.get_config()["decay"] == pytest.approx(0.004)
    with pytest.raises(ValueError):
        O.Nadam(O.schedules.ExponentialDecay(0.1, 10, 0.5))


@pytest.mark.parametrize("l1,l2,shrink", [(0.0, 0.0, 0.0), (0.05, 0.1, 0.0), (0.01, 0.0, 0.2)])
def test_ftrl_matches_numpy(l1, l2, shrink):
    lr, init = 0.3, 0.1

    def upd(w, g, st, t):
        gs = g + 2 * shrink * w
        acc_new = st["acc"] + g * g
        sigma = (np.sqrt(acc_new) - np.sqrt(st["acc"])) / lr
        st["lin"] = st["lin"] + gs - sigma * w
        quad = np.sqrt(acc_new) / lr + 2 * l2
        st["acc"] = acc_new
        return np.where(np.abs(st["lin"]) > l1, (np.sign(st["lin"]) * l1 - st["lin"]) / quad, 0.0)
    got, names, _ = _run(O.Ftrl(lr, initial_accumulator_value=init, l1_regularization_strength=l1,
                                l2_regularization_strength=l2, l2_shrinkage_regularization_strength=shrink))
    np.testing.assert_allclose(got, _reference(upd, acc=np.full(4, init), lin=np.zeros(4)), rtol=1e-4, atol=1e-6)
    assert names == ["iter", "w/accumulator", "w/linear"]


def test_ftrl_checks_arguments():
    with pytest.raises(ValueError):
        O.Ftrl(learning_rate_power=0.5)
    with pytest.raises(ValueError):
        O.Ftrl(l1_regularization_strength=-1.0)


def test_decay_divides_the_learning_rate_by_the_step():
    lr, d = 0.1, 0.5
    got, _, _ = _run(O.SGD(lr, decay=d))
    want = _reference(lambda w, g, st, t: w - lr / (1 + d * t) * g)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert O.SGD(lr, decay=d).get_config()["decay"] == d


def test_clipnorm_and_clipvalue_clip_each_gradient():
    lr = 0.1

    def norm_upd(w, g, st, t):
        n = np.linalg.norm(g)
        return w - lr * (g * 0.5 / n if n > 0.5 else g)
    got, _, _ = _run(O.SGD(lr, clipnorm=0.5))
    np.testing.assert_allclose(got, _reference(norm_upd), rtol=1e-5, atol=1e-6)
    got, _, _ = _run(O.SGD(lr, clipvalue=0.3))
    np.testing.assert_allclose(got, _reference(lambda w, g, st, t: w - lr * np.clip(g, -0.3, 0.3)), rtol=1e-5,
                               atol=1e-6)
    cfg = O.Adam(clipnorm=1.0).get_config()
    assert cfg["clipnorm"] == 1.0 and "clipvalue" not in cfg
    with pytest.raises(TypeError):
        O.Adam(foo=1)


def test_rmsprop_and_adagrad_follow_a_schedule():
    sched = O.schedules.PiecewiseConstantDecay([1, 3], [0.1, 0.05, 0.01])
    lrs = [0.1, 0.1, 0.05, 0.05, 0.01]

    def upd(w, g, st, t):
        st["acc"] = st["acc"] + g * g
        return w - lrs[t] * g / (np.sqrt(st["acc"]) + 1e-7)
    got, _, _ = _run(O.Adagrad(sched, initial_accumulator_value=0.1))
    np.testing.assert_allclose(got, _reference(upd, acc=np.full(4, 0.1)), rtol=1e-5, atol=1e-6)
    cfg = O.Adagrad(sched).get_config()
    assert cfg["learning_rate"] == {"class_name": "PiecewiseConstantDecay",
                                    "config": {"boundaries": [1, 3], "values": [0.1, 0.05, 0.01], "name": None}}
    again = O.Adagrad.from_config(cfg)
    assert isinstance(again._learning_rate, O.schedules.PiecewiseConstantDecay)


def _eval_schedule(s, steps):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        y = s(x)
        with tf.Session() as sess:
            return np.array([sess.run(y, {x: float(t)}) for t in steps])


def test_schedule_values():
    steps = [0, 1, 3, 7, 10, 15, 25]
    st = np.array(steps, np.float64)
    S = O.schedules
    np.testing.assert_allclose(_eval_schedule(S.ExponentialDecay(0.1, 5, 0.5), steps), 0.1 * 0.5 ** (st / 5),
                               rtol=1e-5)
    np.testing.assert_allclose(_eval_schedule(S.ExponentialDecay(0.1, 5, 0.5, staircase=True), steps),
                               0.1 * 0.5 ** np.floor(st / 5), rtol=1e-5)
    np.testing.assert_allclose(_eval_schedule(S.InverseTimeDecay(0.1, 5, 0.5), steps), 0.1 / (1 + 0.5 * st / 5),
                               rtol=1e-5)
    np.testing.assert_allclose(_eval_schedule(S.InverseTimeDecay(0.1, 5, 0.5, staircase=True), steps),
                               0.1 / (1 + 0.5 * np.floor(st / 5)), rtol=1e-5)
    np.testing.assert_allclose(_eval_schedule(S.PolynomialDecay(0.1, 10, 0.01, power=2.0), steps),
                               (0.1 - 0.01) * (1 - np.minimum(st, 10) / 10) ** 2 + 0.01, rtol=1e-5)
    cyc = 10 * np.maximum(np.ceil(st / 10), 1)
    np.testing.assert_allclose(_eval_schedule(S.PolynomialDecay(0.1, 10, 0.01, cycle=True), steps),
                               (0.1 - 0.01) * (1 - st / cyc) + 0.01, rtol=1e-5)
    np.testing.assert_allclose(_eval_schedule(S.PiecewiseConstantDecay([3, 10], [1.0, 0.5, 0.1]), steps),
                               [1.0, 1.0, 1.0, 0.5, 0.5, 0.1, 0.1])
    s = S.ExponentialDecay(0.1, 5, 0.5, staircase=True, name="e")
    again = S.deserialize(S.serialize(s))
    assert type(again) is S.ExponentialDecay and again.get_config() == s.get_config()
    with pytest.raises(ValueError):
        S.PiecewiseConstantDecay([1, 2], [1.0])


def test_serialize_deserialize_get():
    for cls in (O.Adadelta, O.Adamax, O.Nadam, O.Ftrl, O.SGD, O.Adam, O.RMSprop, O.Adagrad):
        opt = cls(learning_rate=0.02)
        d = O.serialize(opt)
        assert d["class_name"] == cls.__name__
        again = O.deserialize(d)
        assert type(again) is cls and again.get_config() == opt.get_config()
        assert type(O.get(cls.__name__.lower())) is cls
    assert type(O.get({"class_name": "Adamax", "config": {}})) is O.Adamax
    with pytest.raises(ValueError):
        O.deserialize({"class_name": "Nope", "config": {}})


class _SignSGD(O.Optimizer):
    """A user optimizer: var -= lr * sign(grad) * (1 + momentum slot), written as OptimizerV2's subclasses are."""

    def __init__(self, learning_rate=0.1, name="SignSGD", **kwargs):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", kwargs.get("lr", learning_rate))

    def _create_slots(self, var_list):
        for v in var_list:
            self.add_slot(v, "count")

    def _resource_apply_dense(self, grad, var):
        c = self.get_slot(var, "count")
        c_t = tf.assign_add(c, tf.ones_like(c))
        return tf.assign_sub(var, self._decayed_lr(var.dtype) * tf.sign(grad) * c_t)

    def get_config(self):
        cfg = super().get_config()
        cfg["learning_rate"] = self._serialize_hyperparameter("learning_rate")
        return cfg


def test_optimizer_base_class_can_be_subclassed(tmp_path):
    def upd(w, g, st, t):
        return w - 0.07 * np.sign(g) * (t + 1)
    got, names, _ = _run(_SignSGD(0.07))
    np.testing.assert_allclose(got, _reference(upd), rtol=1e-5, atol=1e-6)
    assert names == ["iter", "w/count"]
    x, y = _data()
    path = str(tmp_path / "m.h5")
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
        m.compile(_SignSGD(0.01), "mse")
        m.fit(x, y, epochs=1, verbose=0)
        m.save(path)
        state = m.optimizer.get_weights()
    with tf.Graph().as_default():
        m2 = tf.keras.models.load_model(path, custom_objects={"_SignSGD": _SignSGD})
        assert isinstance(m2.optimizer, _SignSGD)
        _close(m2.optimizer.get_weights(), state)


def _data():
    r = np.random.RandomState(0)
    x = r.rand(32, 3).astype(np.float32)
    return x, (x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)


def _close(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=0, atol=0)


@pytest.mark.parametrize("make", [lambda: O.Adadelta(1.0), lambda: O.Adamax(0.01), lambda: O.Nadam(0.01),
                                  lambda: O.Ftrl(0.1, l1_regularization_strength=0.001),
                                  lambda: O.SGD(O.schedules.ExponentialDecay(0.05, 2, 0.5), momentum=0.5),
                                  lambda: O.Adam(0.01, decay=0.1, clipnorm=1.0)])
def test_model_save_and_load_restore_the_state(tmp_path, make):
    x, y = _data()
    path = str(tmp_path / "m.h5")
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        m = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh", input_shape=(3,)),
                                 tf.keras.layers.Dense(1)])
        m.compile(make(), "mse")
        m.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
        m.save(path)
        state = m.optimizer.get_weights()
        more = m.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0).history["loss"]
        cfg = m.optimizer.get_config()
    with h5py.File(path, "r") as f:
        tc = json.loads(f.attrs["training_config"])
        assert tc["optimizer_config"]["class_name"] == type(m.optimizer).__name__
    with tf.Graph().as_default():
        m2 = tf.keras.models.load_model(path)
        assert type(m2.optimizer) is type(m.optimizer)
        _close(m2.optimizer.get_weights(), state)
        again = m2.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0).history["loss"]
        assert m2.optimizer.get_config().keys() == cfg.keys()
    np.testing.assert_allclose(again, more, rtol=1e-5, atol=1e-7)


def test_get_updates_and_get_gradients():
    with tf.Graph().as_default():
        w = tf.Variable(_W0, name="w")
        loss = tf.reduce_sum(_A * tf.square(w - _T))
        opt = O.SGD(0.1, clipvalue=0.2)
        grads = opt.get_gradients(loss, [w])
        ups = opt.get_updates(loss, [w])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            np.testing.assert_allclose(s.run(grads[0]), np.clip(_grad(_W0), -0.2, 0.2), rtol=1e-6)
            s.run(ups)
            np.testing.assert_allclose(s.run(w), _W0 - 0.1 * np.clip(_grad(_W0), -0.2, 0.2), rtol=1e-6)


def test_cosine_schedules():
    S = O.schedules
    steps = [0, 2, 4, 7, 12, 20]
    st = np.array(steps, np.float64)
    cd = 0.1 * (0.9 * 0.5 * (1 + np.cos(np.pi * np.minimum(st, 12) / 12)) + 0.1)
    np.testing.assert_allclose(_eval_schedule(S.CosineDecay(0.1, 12, alpha=0.1), steps), cd, rtol=1e-5)
    # restarts with t_mul 1: the same period again and again, m_mul lowering each one
    frac = st / 4
    k = np.floor(frac)
    want = 0.2 * 0.5 ** k * 0.5 * (1 + np.cos(np.pi * (frac - k)))
    np.testing.assert_allclose(_eval_schedule(S.CosineDecayRestarts(0.2, 4, t_mul=1.0, m_mul=0.5), steps), want,
                               rtol=1e-5, atol=1e-7)
    # t_mul 2: periods 4, 8, 16 starting at steps 0, 4, 12
    starts, lens = np.array([0, 4, 12]), np.array([4, 8, 16])
    idx = np.searchsorted(starts, st, side="right") - 1
    want = 0.2 * 0.5 * (1 + np.cos(np.pi * (st - starts[idx]) / lens[idx]))
    np.testing.assert_allclose(_eval_schedule(S.CosineDecayRestarts(0.2, 4), steps), want, rtol=1e-5, atol=1e-7)


def test_get_config_reads_the_learning_rate_now_outside_the_graph():
    x, y = _data()
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
        m.compile(O.Adamax(0.1, decay=0.5), "mse")
        m.fit(x, y, epochs=1, verbose=0)
        K.set_value(m.optimizer.lr, 0.25)
    cfg = m.optimizer.get_config()  # another default graph now
    assert cfg["learning_rate"] == 0.25 and cfg["decay"] == 0.5
    assert O.Adamax.from_config(cfg).get_config() == cfg


@pytest.mark.parametrize("make, hyper", [
    (lambda v: O.SGD(0.1, momentum=v), "momentum"),
    (lambda v: O.RMSprop(0.01, rho=v), "rho"),
    (lambda v: O.Adam(0.01, beta_1=v), "beta_1"),
])
def test_float64_variables_step_with_float32_hyperparameters_as_keras(make, hyper):
    # Keras keeps a Python-number hyperparameter as a float32 weight and casts it to the
    # variable's dtype (a NumPy float64 keeps its digits); epsilon is converted exactly.  On a
    # float64 variable the update reads float64(float32(0.9)), not 0.9
    def run(value, w_dtype):
        with tf.Graph().as_default():
            w = tf.Variable(_W0.astype(w_dtype), name="w")
            loss = tf.reduce_sum(_A.astype(w_dtype) * tf.square(w - _T.astype(w_dtype)))
            step = make(value).minimize(loss, var_list=[w])
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for _ in range(3):
                    s.run(step)
                return s.run(w)
    rounded = float(np.float32(0.9))
    assert rounded != 0.9
    np.testing.assert_array_equal(run(0.9, np.float64), run(np.float64(rounded), np.float64))
    assert not np.array_equal(run(np.float64(0.9), np.float64), run(0.9, np.float64)), hyper


def test_adam_amsgrad_matches_numpy():
    # vhat keeps the largest v seen; the step divides by its root (TF's ApplyAdamWithAmsgrad)
    lr, b1, b2, eps = 0.1, 0.8, 0.9, 1e-7

    def upd(w, g, st, t, ams=True):
        alpha = lr * np.sqrt(1 - b2 ** (t + 1)) / (1 - b1 ** (t + 1))
        st["m"] = st["m"] + (g - st["m"]) * (1 - b1)
        st["v"] = st["v"] + (g * g - st["v"]) * (1 - b2)
        st["vhat"] = np.maximum(st["vhat"], st["v"]) if ams else st["v"]
        return w - st["m"] * alpha / (np.sqrt(st["vhat"]) + eps)
    opt = O.Adam(lr, beta_1=b1, beta_2=b2, amsgrad=True)
    got, names, _ = _run(opt, steps=8)
    want = _reference(upd, steps=8, m=np.zeros(4), v=np.zeros(4), vhat=np.zeros(4))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert names == ["iter", "w/m", "w/v", "w/vhat"]
    assert opt.get_config()["amsgrad"] is True
    # v falls at some step while vhat holds: the two rules part there
    plain = _reference(lambda w, g, st, t: upd(w, g, st, t, ams=False), steps=8, m=np.zeros(4), v=np.zeros(4),
                       vhat=np.zeros(4))
    assert not np.allclose(got, plain, rtol=1e-4)


@pytest.mark.parametrize("momentum", [0.0, 0.6])
def test_rmsprop_centered_matches_numpy(momentum):
    # the mean gradient mg is kept too and the step divides by sqrt(rms - mg^2); with momentum
    # TF's ApplyCenteredRMSProp (epsilon inside the root)
    lr, rho, eps = 0.05, 0.9, 1e-7

    def upd(w, g, st, t):
        st["rms"] = rho * st["rms"] + (1 - rho) * g * g
        st["mg"] = rho * st["mg"] + (1 - rho) * g
        if not momentum:
            return w - lr * g / (np.sqrt(st["rms"] - st["mg"] ** 2) + eps)
        st["mom"] = momentum * st["mom"] + lr * g / np.sqrt(st["rms"] - st["mg"] ** 2 + eps)
        return w - st["mom"]
    got, names, _ = _run(O.RMSprop(lr, rho=rho, momentum=momentum, centered=True))
    want = _reference(upd, rms=np.zeros(4), mg=np.zeros(4), mom=np.zeros(4))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    assert names == ["iter", "w/rms"] + (["w/momentum"] if momentum else []) + ["w/mg"]
