"""tf.keras in TF1 graph mode, checked by hand (tests/tf1/test_vs_tensorflow_keras.py compares
with TensorFlow's Keras where it is installed)."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(120)
K = tf.keras.backend


def _data(seed=0, n=120):
    r = np.random.RandomState(seed)
    x = r.rand(n, 6).astype(np.float32)
    y = (x[:, :3].sum(1) > x[:, 3:].sum(1)).astype(np.int64)
    return x, y


def _mlp(dropout=0.0):
    layers = [tf.keras.layers.Dense(16, activation="relu", input_shape=(6,))]
    if dropout:
        layers.append(tf.keras.layers.Dropout(dropout))
    layers.append(tf.keras.layers.Dense(2, activation="softmax"))
    return tf.keras.Sequential(layers)


def test_sequential_fit_learns_and_reports_keras_history():
    x, y = _data()
    with tf.Graph().as_default():
        m = _mlp(dropout=0.2)
        m.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
        h = m.fit(x, y, epochs=15, batch_size=16, validation_split=0.25, verbose=0)
        assert sorted(h.history) == ["acc", "loss", "val_acc", "val_loss"] and h.epoch == list(range(15))
        assert h.history["loss"][-1] < 0.6 * h.history["loss"][0]
        assert all(isinstance(v, float) for v in h.history["loss"])
        loss, acc = m.evaluate(x, y, verbose=0)
        assert m.metrics_names == ["loss", "acc"] and acc > 0.85
        p = m.predict(x, batch_size=7)
        assert p.shape == (120, 2)
        np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-5)
        # test mode: dropout off, so predictions repeat exactly
        np.testing.assert_array_equal(m.predict(x[:10]), p[:10])
        assert np.mean(np.argmax(p, 1) == y) == pytest.approx(acc)
        # a second fit goes on from the trained weights (nothing re-initialized)
        before = m.get_weights()
        m.fit(x, y, epochs=1, verbose=0, shuffle=False)
        after = m.get_weights()
        assert any(np.abs(a - b).max() > 0 for a, b in zip(before, after))
        assert np.abs(after[0] - before[0]).max() < 1.0


def test_epoch_loss_is_the_batch_size_weighted_mean_of_batch_losses():
    x, y = _data(1, n=50)
    with tf.Graph().as_default():
        m = _mlp()
        m.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="sparse_categorical_crossentropy")
        seen = []
        cb = tf.keras.callbacks.LambdaCallback(on_batch_end=lambda b, logs: seen.append((logs["size"], logs["loss"])))
        h = m.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0, callbacks=[cb])
        assert [s for s, _ in seen] == [16, 16, 16, 2]
        want = sum(s * v for s, v in seen) / 50
        assert h.history["loss"][0] == pytest.approx(want, rel=1e-6)
        assert m.evaluate(x, y, verbose=0) == pytest.approx(want, rel=1e-5)  # lr 0: nothing moved


def test_functional_model_two_inputs_and_shared_weights_on_new_inputs():
    r = np.random.RandomState(2)
    a, b = r.rand(30, 3).astype(np.float32), r.rand(30, 4).astype(np.float32)
    with tf.Graph().as_default():
        ia, ib = tf.keras.Input(shape=(3,), name="a"), tf.keras.Input(shape=(4,), name="b")
        h = tf.keras.layers.concatenate([tf.keras.layers.Dense(5, activation="tanh")(ia), ib])
        out = tf.keras.layers.Dense(1)(tf.keras.layers.Activation("relu")(h))
        m = tf.keras.Model([ia, ib], out)
        assert [type(layer).__name__ for layer in m.layers] == ["InputLayer", "Dense", "InputLayer", "Concatenate",
                                                               "Activation", "Dense"]  # tf_keras's order
        m.compile("sgd", "mse")
        y = (a.sum(1, keepdims=True) + b.sum(1, keepdims=True)).astype(np.float32)
        m.fit({"a": a, "b": b}, y, epochs=2, verbose=0)
        want = m.predict([a, b])
        # the model called on new tensors shares its layers' weights
        na, nb = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [None, 4])
        again = m([na, nb])
        np.testing.assert_allclose(K.get_session().run(again, {na: a, nb: b}), want, rtol=1e-6)
        assert len(m.weights) == 4


def test_deferred_build_and_errors():
    x, y = _data(3)
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu"), tf.keras.layers.Dense(2)])
        with pytest.raises(ValueError, match="has not yet been built"):
            m.summary()
        with pytest.raises(RuntimeError, match="compile"):
            m.fit(x, y)
        m.compile("adam", tf.keras.losses.sparse_categorical_crossentropy)
        m.fit(x, y, epochs=1, verbose=0)
        assert m.inputs[0].shape.as_list() == [None, 6] and len(m.weights) == 4
        with pytest.raises(ValueError, match="expected .* to have shape"):
            m.predict(np.zeros((3, 5), np.float32))
        with pytest.raises(ValueError, match="Unknown loss function"):
            m.compile("adam", "no_such_loss")
        with pytest.raises(ValueError, match="Could not interpret optimizer"):
            m.compile("nadamx", "mse")
    with tf.Graph().as_default():
        i = tf.keras.Input((3,))
        two = tf.keras.Model(i, [tf.keras.layers.Dense(1)(i), tf.keras.layers.Dense(2)(i)])
        with pytest.raises(ValueError, match="one entry per model output"):
            two.compile("sgd", ["mse"])
        with pytest.raises(ValueError, match="Unknown entries in loss dictionary"):
            two.compile("sgd", {"nope": "mse"})
        with pytest.raises(ValueError, match="Graph disconnected"):
            tf.keras.Model(tf.keras.Input((3,)), tf.keras.layers.Dense(1)(i))


def test_save_and_load_weights_in_keras_h5_layout_and_as_checkpoint(tmp_path):
    import h5py
    x, y = _data(4)
    with tf.Graph().as_default():
        m = _mlp()
        m.compile("adam", "sparse_categorical_crossentropy")
        m.fit(x, y, epochs=2, verbose=0)
        want = m.predict(x)
        m.save_weights(str(tmp_path / "w.h5"))
        m.save_weights(str(tmp_path / "ckpt"))
    with h5py.File(tmp_path / "w.h5", "r") as f:
        assert [n.decode() for n in f.attrs["layer_names"]] == ["dense", "dense_1"]
        assert [n.decode() for n in f["dense"].attrs["weight_names"]] == ["dense/kernel:0", "dense/bias:0"]
        assert f["dense_1"]["dense_1/kernel:0"].shape == (16, 2)
    for path in ("w.h5", "ckpt"):
        with tf.Graph().as_default():
            m2 = _mlp()
            m2.load_weights(str(tmp_path / path))
            np.testing.assert_array_equal(m2.predict(x), want)
    with tf.Graph().as_default():
        small = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(6,))])
        with pytest.raises(ValueError, match="containing 2 layers into a model with 1 layers"):
            small.load_weights(str(tmp_path / "w.h5"))
        wrong = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(6,)), tf.keras.layers.Dense(2)])
        with pytest.raises(ValueError, match="not compatible"):
            wrong.load_weights(str(tmp_path / "w.h5"))
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_callbacks_early_stopping_and_checkpoints(tmp_path):
    x, y = _data(5)
    with tf.Graph().as_default():
        m = _mlp()
        m.compile(tf.keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")  # nothing improves
        stop = tf.keras.callbacks.EarlyStopping(monitor="loss", min_delta=1e-3, patience=1)
        ck = tf.keras.callbacks.ModelCheckpoint(str(tmp_path / "w{epoch:02d}.h5"), monitor="loss",
                                                save_weights_only=True)
        h = m.fit(x, y, epochs=10, verbose=0, callbacks=[stop, ck])
        assert len(h.history["loss"]) == 2 and stop.stopped_epoch == 1
        assert sorted(os.listdir(tmp_path)) == ["w01.h5", "w02.h5"]
        with pytest.raises(NotImplementedError, match="save_weights_only=True"):
            tf.keras.callbacks.ModelCheckpoint(str(tmp_path / "m.h5"))


def _np_softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_losses_and_metrics_against_numpy():
    r = np.random.RandomState(6)
    p = _np_softmax(r.randn(5, 3)).astype(np.float32)
    p[0] = [1.0, 0.0, 0.0]  # clipped to [eps, 1 - eps]
    t = np.eye(3, dtype=np.float32)[r.randint(0, 3, 5)]
    q = r.rand(5, 1).astype(np.float32)
    tb = (r.rand(5, 1) > 0.5).astype(np.float32)
    eps = 1e-7
    with tf.Graph().as_default(), tf.Session() as s:
        L = tf.keras.losses
        pc = np.clip(p / p.sum(-1, keepdims=True), eps, 1 - eps)
        np.testing.assert_allclose(s.run(L.categorical_crossentropy(t, p)), -(t * np.log(pc)).sum(-1), rtol=1e-5,
                                   atol=1e-6)
        ids = t.argmax(1)
        np.testing.assert_allclose(s.run(L.sparse_categorical_crossentropy(ids, p)),
                                   -np.log(np.clip(p, eps, 1 - eps))[np.arange(5), ids], rtol=1e-5, atol=1e-6)
        qc = np.clip(q, eps, 1 - eps)
        np.testing.assert_allclose(s.run(L.binary_crossentropy(tb, q)),
                                   -(tb * np.log(qc) + (1 - tb) * np.log(1 - qc)).mean(-1), rtol=1e-4)
        np.testing.assert_allclose(s.run(L.mean_squared_error(t, p)), ((t - p) ** 2).mean(-1), rtol=1e-6)
        np.testing.assert_allclose(s.run(L.hinge(2 * t - 1, p)), np.maximum(1 - (2 * t - 1) * p, 0).mean(-1),
                                   rtol=1e-6)
        tc, pk = np.clip(t, eps, 1), np.clip(p, eps, 1)
        np.testing.assert_allclose(s.run(L.kullback_leibler_divergence(t, p)), (tc * np.log(tc / pk)).sum(-1),
                                   rtol=1e-5)
        # over a softmax op the cross-entropy uses its logits (TF1's Keras), not clipped probabilities
        z = r.randn(5, 3).astype(np.float32) * 30
        ce = s.run(L.categorical_crossentropy(t, tf.nn.softmax(tf.constant(z))))
        z64 = z.astype(np.float64)
        lse = np.log(np.exp(z64 - z64.max(1, keepdims=True)).sum(1)) + z64.max(1)
        np.testing.assert_allclose(ce, lse - (t * z64).sum(1), rtol=1e-5, atol=1e-5)
        M = tf.keras.metrics
        np.testing.assert_array_equal(s.run(M.categorical_accuracy(t, p)), (t.argmax(1) == p.argmax(1)) * 1.0)
        np.testing.assert_array_equal(s.run(M.binary_accuracy(tb, q)), ((q > 0.5) == tb).mean(-1))


def test_keras_optimizer_steps_against_numpy():
    g0 = np.array([0.5, -1.0, 2.0], np.float32)
    for name, opt, expect in [
        ("rmsprop", tf.keras.optimizers.RMSprop(0.1), None),
        ("adagrad", tf.keras.optimizers.Adagrad(0.1), None),
        ("sgd_momentum", tf.keras.optimizers.SGD(0.1, momentum=0.5), None)]:
        with tf.Graph().as_default(), tf.Session() as s:
            v = tf.Variable(np.zeros(3, np.float32))
            step = opt.minimize(tf.reduce_sum(v * g0))  # gradient g0 every step
            s.run(tf.global_variables_initializer())
            for _ in range(3):
                s.run(step)
            got = s.run(v)
        w = np.zeros(3)
        acc = np.zeros(3) if name == "rmsprop" else np.full(3, 0.1)
        mom = np.zeros(3)
        for _ in range(3):
            if name == "rmsprop":
                acc = 0.9 * acc + 0.1 * g0 ** 2
                w -= 0.1 * g0 / (np.sqrt(acc) + 1e-7)
            elif name == "adagrad":
                acc += g0 ** 2
                w -= 0.1 * g0 / (np.sqrt(acc) + 1e-7)
            else:
                mom = 0.5 * mom - 0.1 * g0
                w += mom
        np.testing.assert_allclose(got, w, rtol=1e-5, err_msg=name)


def test_regularizer_adds_keras_l2_to_the_loss_and_backend_helpers():
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,), use_bias=False,
                                                       kernel_regularizer=tf.keras.regularizers.l2(0.5))])
        m.compile(tf.keras.optimizers.SGD(0.0), "mse")
        w = np.arange(6, dtype=np.float32).reshape(3, 2) / 10
        m.set_weights([w])
        x = np.ones((4, 3), np.float32)
        y = np.zeros((4, 2), np.float32)
        mse = ((x @ w) ** 2).mean()
        assert m.evaluate(x, y, verbose=0) == pytest.approx(mse + 0.5 * (w ** 2).sum(), rel=1e-5)
        assert K.int_shape(m.output) == (None, 2) and K.floatx() == "float32" and K.epsilon() == 1e-7
        np.testing.assert_array_equal(K.get_value(m.weights[0]), w)
        K.set_value(m.weights[0], w * 2)
        np.testing.assert_array_equal(m.get_weights()[0], w * 2)
    y_int = np.array([0, 2, 1])
    np.testing.assert_array_equal(tf.keras.utils.to_categorical(y_int, 3), np.eye(3)[y_int])


def test_runs_in_the_users_session():
    x, y = _data(7, n=40)
    with tf.Graph().as_default(), tf.Session() as sess:
        m = _mlp()
        m.compile("sgd", "sparse_categorical_crossentropy")
        m.fit(x, y, epochs=1, verbose=0)
        assert K.get_session() is sess
        # the user's code sees the trained values in its own session
        np.testing.assert_array_equal(sess.run(m.weights[0]), m.get_weights()[0])


def _np_hard_sigmoid(z):
    return np.clip(0.2 * z + 0.5, 0.0, 1.0)


def _np_lstm(x, W, U, b, hard=True):
    act = _np_hard_sigmoid if hard else (lambda z: 1 / (1 + np.exp(-z)))
    n, T, _ = x.shape
    u = U.shape[0]
    h, c, hs = np.zeros((n, u)), np.zeros((n, u)), []
    for t in range(T):
        z = x[:, t] @ W + h @ U + b
        i, f, g, o = act(z[:, :u]), act(z[:, u:2 * u]), np.tanh(z[:, 2 * u:3 * u]), act(z[:, 3 * u:])
        c = f * c + i * g
        h = o * np.tanh(c)
        hs.append(h)
    return np.stack(hs, 1), h, c


def _np_gru(x, W, U, b):
    n, T, _ = x.shape
    u = U.shape[0]
    h, hs = np.zeros((n, u)), []
    for t in range(T):
        xz = x[:, t] @ W + b
        z = _np_hard_sigmoid(xz[:, :u] + h @ U[:, :u])
        r = _np_hard_sigmoid(xz[:, u:2 * u] + h @ U[:, u:2 * u])
        hh = np.tanh(xz[:, 2 * u:] + (r * h) @ U[:, 2 * u:])
        h = z * h + (1 - z) * hh
        hs.append(h)
    return np.stack(hs, 1)


def test_recurrent_layers_against_numpy_with_tf1_defaults():
    x = np.random.RandomState(8).rand(3, 6, 4).astype(np.float32)
    with tf.Graph().as_default():
        inp = tf.keras.Input((6, 4))
        lstm = tf.keras.layers.LSTM(5, return_sequences=True, return_state=True)
        seq, h, c = lstm(inp)
        assert [v.name for v in lstm.weights] == ["lstm/kernel:0", "lstm/recurrent_kernel:0", "lstm/bias:0"]
        W, U, b = lstm.get_weights()
        np.testing.assert_array_equal(b, np.r_[np.zeros(5), np.ones(5), np.zeros(10)])  # unit_forget_bias
        np.testing.assert_allclose(U @ U.T, np.eye(5), atol=1e-5)  # orthogonal recurrent kernel
        b = np.random.RandomState(9).rand(20).astype(np.float32)
        lstm.set_weights([W, U, b])
        got = K.get_session().run([seq, h, c], {inp: x})
    ws, wh, wc = _np_lstm(x.astype(np.float64), W, U, b)
    np.testing.assert_allclose(got[0], ws, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], wh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], wc, rtol=1e-5, atol=1e-6)


def test_gru_backwards_and_lstm_gradient_against_finite_differences():
    r = np.random.RandomState(10)
    x = r.rand(2, 4, 3)
    with tf.Graph().as_default():
        inp = tf.keras.Input((4, 3), dtype="float64")
        gru = tf.keras.layers.GRU(3, go_backwards=True, return_sequences=True)
        gseq = gru(inp)
        lstm = tf.keras.layers.LSTM(3, recurrent_activation="sigmoid")
        out = lstm(inp)
        loss = tf.reduce_sum(out * np.array([1.0, -2.0, 0.5])) + tf.reduce_sum(gseq * gseq)
        grad = tf.gradients(loss, inp)[0]
        sess = K.get_session()
        Wg, Ug, bg = gru.get_weights()
        gs, g = sess.run([gseq, grad], {inp: x})
        np.testing.assert_allclose(gs, _np_gru(x[:, ::-1], Wg, Ug, bg), rtol=1e-7, atol=1e-9)
        eps, fd = 1e-6, np.zeros_like(x)
        for idx in np.ndindex(*x.shape):
            xp, xm = x.copy(), x.copy()
            xp[idx] += eps
            xm[idx] -= eps
            fd[idx] = (sess.run(loss, {inp: xp}) - sess.run(loss, {inp: xm})) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


def test_more_layers_by_hand():
    r = np.random.RandomState(11)
    img = r.randn(2, 3, 4, 2).astype(np.float32)
    seq = r.randn(2, 5, 3).astype(np.float32)
    L = tf.keras.layers
    with tf.Graph().as_default():
        xi, xs = tf.keras.Input((3, 4, 2)), tf.keras.Input((5, 3))
        up = L.UpSampling2D((2, 1))(xi)
        padded = L.ZeroPadding2D(((1, 0), (2, 1)))(xi)
        crop = L.Cropping2D(((1, 1), (0, 2)))(xi)
        relu = L.ReLU(max_value=1.0, negative_slope=0.5)(xi)
        ln = L.LayerNormalization()(xs)
        td_dense = L.Dense(4)
        td = L.TimeDistributed(td_dense)(xs)
        bi_layer = L.Bidirectional(L.SimpleRNN(2, return_sequences=True), merge_mode=None)
        fwd, bwd = bi_layer(xs)
        noise = L.GaussianNoise(1.0)(xs)
        sess = K.get_session()
        got = sess.run([up, padded, crop, relu, ln, td, fwd, bwd, noise], {xi: img, xs: seq})
        kernel, bias = td_dense.get_weights()
        assert [v.name for v in td_dense.weights] == ["time_distributed/kernel:0", "time_distributed/bias:0"]
        assert [v.name for v in bi_layer.weights][0] == "bidirectional/forward_simple_rnn/kernel:0"
        noisy_train = sess.run(noise, {xs: seq, K.learning_phase(): True})
        fw = bi_layer.forward_layer.get_weights()
        bw = bi_layer.backward_layer.get_weights()
    np.testing.assert_array_equal(got[0], np.repeat(img, 2, axis=1))
    np.testing.assert_array_equal(got[1], np.pad(img, [(0, 0), (1, 0), (2, 1), (0, 0)]))
    np.testing.assert_array_equal(got[2], img[:, 1:2, 0:2])
    np.testing.assert_allclose(got[3], np.where(img >= 0, np.minimum(img, 1.0), 0.5 * img))
    mu, var = seq.mean(-1, keepdims=True), seq.var(-1, keepdims=True)
    np.testing.assert_allclose(got[4], (seq - mu) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[5], seq @ kernel + bias, rtol=1e-5, atol=1e-6)

    def rnn(x, W, U, b):
        h, hs = np.zeros((x.shape[0], U.shape[0])), []
        for t in range(x.shape[1]):
            h = np.tanh(x[:, t] @ W + h @ U + b)
            hs.append(h)
        return np.stack(hs, 1)
    np.testing.assert_allclose(got[6], rnn(seq, *fw), rtol=1e-5, atol=1e-6)
    # the backward half runs on the reversed sequence; its outputs come back in time order
    np.testing.assert_allclose(got[7], rnn(seq[:, ::-1], *bw)[:, ::-1], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[8], seq)  # noise only in the learning phase
    assert np.abs(noisy_train - seq).mean() > 0.3


def test_custom_layer_and_subclassed_model_by_hand():
    class Affine(tf.keras.layers.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape):
            self.kernel = self.add_weight("kernel", shape=[int(input_shape[-1]), self.units])
            self.bias = self.add_weight("bias", shape=[self.units], initializer="zeros", trainable=False)
            super().build(input_shape)

        def call(self, x, training=None):
            self.add_loss(0.5 * tf.reduce_sum(tf.square(self.kernel)))
            return tf.matmul(x, self.kernel) + self.bias + tf.cast(training, tf.float32)

    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.blocks = [Affine(4), Affine(2)]

        def call(self, x, training=None):
            for b in self.blocks:
                x = b(x, training=training)
            return x

    x = np.random.RandomState(12).rand(6, 3).astype(np.float32)
    with tf.Graph().as_default():
        net = Net()
        net.compile(tf.keras.optimizers.SGD(0.0), "mse")
        y = np.zeros((6, 2), np.float32)
        net.fit(x, y, epochs=1, verbose=0)
        assert [v.name for v in net.weights] == ["net/affine/kernel:0", "net/affine/bias:0", "net/affine_1/kernel:0",
                                                 "net/affine_1/bias:0"]
        assert len(net.trainable_weights) == 2 and len(net.layers) == 2
        k1, b1, k2, b2 = net.get_weights()
        # predict runs in test mode (training False adds 0); the penalties are in the loss
        np.testing.assert_allclose(net.predict(x), (x @ k1 + b1) @ k2 + b2, rtol=1e-5)
        pred = (x @ k1 + b1) @ k2 + b2
        want = (pred ** 2).mean() + 0.5 * (k1 ** 2).sum() + 0.5 * (k2 ** 2).sum()
        assert net.evaluate(x, y, verbose=0) == pytest.approx(want, rel=1e-5)
        # the layers' weights are reused when the model is called again
        again = net(tf.constant(x), training=False)
        np.testing.assert_allclose(K.get_session().run(again), pred, rtol=1e-5)
        assert len(net.weights) == 4


def test_datasets_generators_and_sequences_train_as_the_same_arrays():
    x, y = _data(13, n=48)
    w = np.linspace(0.5, 1.5, 48).astype(np.float32)

    class Batches(tf.keras.utils.Sequence):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            s = slice(16 * i, 16 * (i + 1))
            return x[s], y[s], w[s]

    def gen():
        while True:
            for i in range(3):
                s = slice(16 * i, 16 * (i + 1))
                yield x[s], y[s], w[s]

    results = []
    for kind in ("arrays", "dataset", "dataset_steps", "sequence", "generator"):
        with tf.Graph().as_default():
            tf.set_random_seed(3)
            m = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh"), tf.keras.layers.Dense(2)])
            m.compile(tf.keras.optimizers.SGD(0.2), tf.keras.losses.sparse_categorical_crossentropy)
            if kind == "arrays":
                h = m.fit(x, y, batch_size=16, epochs=3, shuffle=False, sample_weight=w, verbose=0)
            elif kind == "dataset":
                ds = tf.data.Dataset.from_tensor_slices((x, y, w)).batch(16)
                h = m.fit(ds, epochs=3, verbose=0)
            elif kind == "dataset_steps":
                ds = tf.data.Dataset.from_tensor_slices((x, y, w)).batch(16).repeat()
                h = m.fit(ds, epochs=3, steps_per_epoch=3, verbose=0)
            elif kind == "sequence":
                h = m.fit_generator(Batches(), epochs=3, shuffle=False, verbose=0)
            else:
                h = m.fit_generator(gen(), steps_per_epoch=3, epochs=3, verbose=0)
            pred = m.predict(tf.data.Dataset.from_tensor_slices(x).batch(10))
            ev = m.evaluate(tf.data.Dataset.from_tensor_slices((x, y)).batch(20), verbose=0)
            results.append((kind, h.history["loss"], pred, ev, m.predict(x)))
    base = results[0]
    for kind, losses, pred, ev, pred_arrays in results[1:]:
        np.testing.assert_allclose(losses, base[1], rtol=1e-6, err_msg=kind)
        np.testing.assert_allclose(pred, base[2], rtol=1e-6, err_msg=kind)
        np.testing.assert_allclose(pred, pred_arrays, rtol=1e-6, err_msg=kind)
        assert ev == pytest.approx(base[3], rel=1e-6)
    with tf.Graph().as_default():
        m = _mlp()
        m.compile("sgd", "sparse_categorical_crossentropy")
        with pytest.raises(ValueError, match="steps_per_epoch"):
            m.fit_generator(gen(), epochs=1, verbose=0)
        with pytest.raises(ValueError, match="ran out after 3 of steps_per_epoch=5"):
            m.fit(tf.data.Dataset.from_tensor_slices((x[:, :6], y)).batch(16), steps_per_epoch=5, verbose=0)


def test_model_save_and_load_model_round_trip(tmp_path):
    x, y = _data(14)

    class Gain(tf.keras.layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, v):
            return v * self.factor

        def get_config(self):
            return dict(super().get_config(), factor=self.factor)

    with tf.Graph().as_default():
        inp = tf.keras.Input((6,), name="features")
        h = tf.keras.layers.Dense(8, activation="tanh", kernel_regularizer=tf.keras.regularizers.l2(0.01))(inp)
        seq = tf.keras.layers.Reshape((4, 2))(h)
        r = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(3))(seq)
        shared = tf.keras.layers.Dense(2)
        out = tf.keras.layers.Activation("softmax")(tf.keras.layers.add([shared(r), shared(Gain(0.5)(r))]))
        m = tf.keras.Model(inp, out)
        m.compile(tf.keras.optimizers.Adam(0.02), "sparse_categorical_crossentropy", metrics=["accuracy"])
        m.fit(x, y, epochs=2, verbose=0)
        want = m.predict(x)
        m.save(str(tmp_path / "model.h5"))
        cfg_json = m.to_json()
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Unknown layer: Gain"):
            tf.keras.models.model_from_json(cfg_json)
    with tf.Graph().as_default():
        loaded = tf.keras.models.load_model(str(tmp_path / "model.h5"), custom_objects={"Gain": Gain})
        np.testing.assert_allclose(loaded.predict(x), want, rtol=1e-6)
        assert loaded.metrics_names == ["loss", "acc"] and loaded.loss == "sparse_categorical_crossentropy"
        assert [w.name for w in loaded.weights] == [w.name for w in m.weights]
        before = loaded.evaluate(x, y, verbose=0)[0]
        loaded.fit(x, y, epochs=3, verbose=0)  # compiled again: it trains on
        assert loaded.evaluate(x, y, verbose=0)[0] < before
    with tf.Graph().as_default():
        again = tf.keras.models.model_from_json(cfg_json, custom_objects={"Gain": Gain})
        assert [type(la).__name__ for la in again.layers] == [type(la).__name__ for la in m.layers]
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    with tf.Graph().as_default():
        m = _mlp()
        m.save_weights(str(tmp_path / "weights.h5"))
        with pytest.raises(ValueError, match="No model found"):
            tf.keras.models.load_model(str(tmp_path / "weights.h5"))

        class Sub(tf.keras.Model):
            def __init__(self):
                super().__init__()
                self.d = tf.keras.layers.Dense(1)

            def call(self, v):
                return self.d(v)
        s = Sub()
        s.predict(x)
        with pytest.raises(NotImplementedError, match="subclassed"):
            s.save(str(tmp_path / "sub.h5"))


def test_custom_loss_from_backend_functions_and_k_function():
    x, y = _data(15)
    y2 = np.eye(2, dtype=np.float32)[y]
    results = []
    for loss in ("mse", lambda t, p: K.mean(K.square(p - t), axis=-1)):
        with tf.Graph().as_default():
            tf.set_random_seed(2)
            m = _mlp()
            m.compile(tf.keras.optimizers.SGD(0.3), loss)
            results.append(m.fit(x, y2, epochs=2, shuffle=False, verbose=0).history["loss"])
            hidden = K.function([m.input], [m.layers[0].output])
            feats = hidden([x[:3]])[0]
            W, b = m.layers[0].get_weights()
            np.testing.assert_allclose(feats, np.maximum(x[:3] @ W + b, 0), rtol=1e-5, atol=1e-6)
            extractor = tf.keras.Model(m.input, m.layers[0].output)
            np.testing.assert_allclose(extractor.predict(x[:3]), feats, rtol=1e-6)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
    with tf.Graph().as_default(), tf.Session() as s:
        a = tf.constant(np.arange(12, dtype=np.float32).reshape(2, 3, 2))
        b = tf.constant(np.ones((2, 2, 4), np.float32))
        got = s.run(K.batch_dot(a, b))
        np.testing.assert_allclose(got, np.einsum("bij,bjk->bik", np.arange(12.0).reshape(2, 3, 2), np.ones((2, 2, 4))))
        assert s.run(K.switch(K.greater(K.constant(2.0), 1.0), K.constant(5.0), K.constant(7.0))) == 5.0


def test_two_output_model_losses_weights_names_and_save(tmp_path):
    r = np.random.RandomState(16)
    x = r.rand(30, 4).astype(np.float32)
    y1, y2 = (x[:, 0] > 0.5).astype(np.int64), x[:, 1:3].astype(np.float32)
    with tf.Graph().as_default():
        i = tf.keras.Input((4,))
        h = tf.keras.layers.Dense(5, activation="relu")(i)
        a = tf.keras.layers.Dense(2, activation="softmax", name="a")(h)
        b = tf.keras.layers.Dense(2, name="b")(h)
        m = tf.keras.Model(i, [a, b])
        m.compile(tf.keras.optimizers.SGD(0.1), ["sparse_categorical_crossentropy", "mae"], loss_weights=[1.0, 3.0],
                  metrics=["mse"])
        assert m.output_names == ["a", "b"]
        assert m.metrics_names == ["loss", "a_loss", "b_loss", "a_mean_squared_error", "b_mean_squared_error"]
        h = m.fit(x, [y1, y2], batch_size=10, epochs=2, verbose=0)
        assert sorted(h.history) == sorted(m.metrics_names)
        pa, pb = m.predict(x)
        total, la, lb, _, mse_b = m.evaluate(x, {"a": y1, "b": y2}, batch_size=30, verbose=0)
        want_a = -np.log(np.clip(pa[np.arange(30), y1], 1e-7, 1))
        assert la == pytest.approx(want_a.mean(), rel=1e-5)
        assert lb == pytest.approx(np.abs(pb - y2).mean(), rel=1e-5)
        assert total == pytest.approx(la + 3.0 * lb, rel=1e-5)
        assert mse_b == pytest.approx(((pb - y2) ** 2).mean(), rel=1e-5)
        m.save(str(tmp_path / "two.h5"))
    with tf.Graph().as_default():
        back = tf.keras.models.load_model(str(tmp_path / "two.h5"))
        assert back.metrics_names == m.metrics_names
        assert back.evaluate(x, [y1, y2], batch_size=30, verbose=0)[0] == pytest.approx(total, rel=1e-5)


def test_learning_rate_callbacks_class_weight_csv_and_tensorboard(tmp_path):
    x, y = _data(17, n=40)
    with tf.Graph().as_default():
        m = _mlp()
        m.compile(tf.keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
        assert K.get_value(m.optimizer.lr) == pytest.approx(0.5)
        sched = tf.keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.0 if epoch >= 1 else lr)
        csv = tf.keras.callbacks.CSVLogger(str(tmp_path / "log.csv"))
        board = tf.keras.callbacks.TensorBoard(str(tmp_path / "tb"))
        h = m.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0, callbacks=[sched, csv, board])
        assert h.history["lr"] == [0.5, 0.0, 0.0]
        assert h.history["loss"][1] != h.history["loss"][0] and h.history["loss"][2] == pytest.approx(
            h.history["loss"][1], rel=1e-6)  # lr 0 from epoch 1: nothing moves
        rows = (tmp_path / "log.csv").read_text().splitlines()
        assert rows[0] == "epoch,loss,lr" and len(rows) == 4 and rows[1].startswith("0,")
        from collflow.summary.writer import summary_iterator
        import glob
        tags = [(e.step, v.tag) for f in glob.glob(str(tmp_path / "tb" / "*tfevents*"))
                for e in summary_iterator(f) if e.HasField("summary") for v in e.summary.value]
        assert (2, "loss") in tags and (0, "lr") in tags
        K.set_value(m.optimizer.lr, 0.0)
        plateau = tf.keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_lr=0.0)
        K.set_value(m.optimizer.lr, 0.2)
        m.compile(m.optimizer, "sparse_categorical_crossentropy")
        K.set_value(m.optimizer.lr, 0.0)  # a stuck loss: the plateau halves a rate of 0 to 0
        h2 = m.fit(x, y, epochs=3, verbose=0, callbacks=[plateau])
        assert h2.history["lr"] == [0.0, 0.0, 0.0]
    # class_weight: the loss weighs each sample by its class's weight
    with tf.Graph().as_default():
        m = _mlp()
        m.compile(tf.keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
        plain = m.evaluate(x, y, batch_size=40, verbose=0)
        h = m.fit(x, y, batch_size=40, epochs=1, class_weight={0: 0.0, 1: 2.0}, verbose=0)
        p = m.predict(x)
        ce = -np.log(np.clip(p[np.arange(40), y], 1e-7, 1))
        w = np.where(y == 1, 2.0, 0.0)
        # TF 1.15 (and tf_keras): the weighted sum over the batch size, zero weights counted
        assert h.history["loss"][0] == pytest.approx((ce * w).mean(), rel=1e-5)
        assert plain == pytest.approx(ce.mean(), rel=1e-5)


def test_pad_sequences_and_tokenizer_by_hand():
    pad = tf.keras.preprocessing.sequence.pad_sequences
    np.testing.assert_array_equal(pad([[1, 2, 3], [4]]), [[1, 2, 3], [0, 0, 4]])
    np.testing.assert_array_equal(pad([[1, 2, 3], [4]], maxlen=2, padding="post", truncating="post"), [[1, 2], [4, 0]])
    np.testing.assert_array_equal(pad([[1, 2, 3], []], maxlen=2, value=9), [[2, 3], [9, 9]])
    assert pad([[[1, 2]], [[3, 4], [5, 6]]]).shape == (2, 2, 2)
    with pytest.raises(ValueError, match="Padding type"):
        pad([[1]], padding="middle")
    T = tf.keras.preprocessing.text
    tok = T.Tokenizer(num_words=4, oov_token="?")
    tok.fit_on_texts(["b a b", "c a b. d!"])
    # counts b:3 a:2 c:1 d:1 (ties in order of first appearance); the oov token is index 1
    assert tok.word_index == {"?": 1, "b": 2, "a": 3, "c": 4, "d": 5}
    assert tok.texts_to_sequences(["b c z a"]) == [[2, 1, 1, 3]]  # c (4) is past num_words
    assert tok.sequences_to_texts([[2, 5, 3]]) == ["b ? a"]
    m = tok.texts_to_matrix(["a a b"], mode="tfidf")
    idf_a = np.log(1 + 2 / (1 + 2))
    assert m.shape == (1, 4) and m[0, 3] == pytest.approx((1 + np.log(2)) * idf_a)
    again = T.tokenizer_from_json(tok.to_json())
    assert again.word_index == tok.word_index and again.texts_to_sequences(["d b"]) == tok.texts_to_sequences(["d b"])
    assert T.text_to_word_sequence("Hello, World!  x") == ["hello", "world", "x"]


def test_masks_skip_padded_steps():
    r = np.random.RandomState(18)
    real = r.rand(2, 3, 4).astype(np.float32)
    padded = np.concatenate([np.zeros((2, 2, 4), np.float32), real], 1)  # two padding steps first
    with tf.Graph().as_default():
        a, b = tf.keras.Input((3, 4)), tf.keras.Input((5, 4))
        lstm = tf.keras.layers.LSTM(3, return_sequences=True, return_state=True)
        seq_a, h_a, c_a = lstm(a)
        seq_b, h_b, c_b = lstm(tf.keras.layers.Masking()(b))  # the same weights
        got = K.get_session().run([seq_a, h_a, c_a, seq_b, h_b, c_b], {a: real, b: padded})
        flat = tf.keras.layers.Flatten()(tf.keras.layers.Embedding(5, 2, mask_zero=True)(tf.keras.Input((3,))))
        from collflow.keras.layers import mask_of
        assert mask_of(flat) is None  # dropped, as TF 1.15's __call__ drops it
    np.testing.assert_allclose(got[4], got[1], rtol=1e-6)  # the padding changed nothing
    np.testing.assert_allclose(got[5], got[2], rtol=1e-6)
    np.testing.assert_array_equal(got[3][:, :2], 0.0)  # outputs before the first real step are zeros
    np.testing.assert_allclose(got[3][:, 2:], got[0], rtol=1e-6)


def test_keras_initializer_names_use_keras_defaults():
    with tf.Graph().as_default():
        layer = tf.keras.layers.Dense(2000, kernel_initializer="random_normal", bias_initializer="random_uniform",
                                      input_shape=(50,))
        m = tf.keras.Sequential([layer])
        kernel, bias = m.get_weights()
        # Keras's random_normal is N(0, 0.05^2) and random_uniform [-0.05, 0.05) (tf.*_initializer's are 1.0, [0, 1))
        assert 0.045 < kernel.std() < 0.055 and abs(kernel.mean()) < 0.005
        assert bias.min() >= -0.05 and bias.max() < 0.05 and bias.min() < -0.04
        assert tf.keras.initializers.RandomNormal().stddev == 0.05
        assert tf.keras.initializers.get("glorot_uniform").__class__.__name__ == "GlorotUniform"


def test_spatial_dropout_and_activity_regularization():
    x = np.ones((4, 5, 6), np.float32)
    with tf.Graph().as_default():
        inp = tf.keras.Input((5, 6))
        sd = tf.keras.layers.SpatialDropout1D(0.5)(inp)
        sess = K.get_session()
        train = sess.run(sd, {inp: x, K.learning_phase(): True})
        # a channel is dropped for every step at once, the kept ones scaled by 2
        assert set(np.unique(train)) <= {0.0, 2.0}
        assert all(len(set(train[b, :, c])) == 1 for b in range(4) for c in range(6))
        np.testing.assert_array_equal(sess.run(sd, {inp: x}), x)
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(3, use_bias=False, input_shape=(2,)),
                                 tf.keras.layers.ActivityRegularization(l1=0.1, l2=0.2)])
        m.compile(tf.keras.optimizers.SGD(0.0), "mse")
        w = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 1.0]], np.float32)
        m.set_weights([w])
        xs = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
        h = xs @ w
        want = (h ** 2).mean() + (0.1 * np.abs(h).sum() + 0.2 * (h ** 2).sum()) / 2
        assert m.evaluate(xs, np.zeros((2, 3), np.float32), batch_size=2, verbose=0) == pytest.approx(want, rel=1e-5)


def test_validation_freq_and_summary_shapes():
    x, y = _data(19, n=30)
    with tf.Graph().as_default():
        i = tf.keras.Input((6,))
        shared = tf.keras.layers.Dense(4, activation="relu")
        doubled = tf.keras.layers.Lambda(lambda v: v * 2.0)(i)
        out = tf.keras.layers.Dense(2, activation="softmax")(tf.keras.layers.add([shared(i), shared(doubled)]))
        m = tf.keras.Model(i, out)
        m.compile("sgd", "sparse_categorical_crossentropy")
        h = m.fit(x, y, epochs=4, verbose=0, validation_data=(x, y), validation_freq=2)
        assert len(h.history["loss"]) == 4 and len(h.history["val_loss"]) == 2
        h = m.fit(x, y, epochs=3, verbose=0, validation_data=(x, y), validation_freq=[1, 3])
        assert len(h.history["val_loss"]) == 2
        lines = []
        m.summary(print_fn=lines.append)
        text = "\n".join(lines)
        # a layer shared on inputs of one shape shows that shape (tf_keras's "multiple" is for differing ones)
        assert "multiple" not in text and "(None, 2)" in text and "Total params: 38 (152.00 Byte)" in text


def test_layers_are_named_when_made_not_when_called():
    """Keras takes a layer's unique name in its constructor: the outer Dense of
    Dense(4)(Dense(6)(x)) is "dense" and owns dense/kernel, as in TF."""
    with tf.Graph().as_default():
        x = tf.keras.Input((3,))
        outer, inner = tf.keras.layers.Dense(4), tf.keras.layers.Dense(6)
        unused = tf.keras.layers.Dense(2)
        named = tf.keras.layers.Dense(5, name="head")
        y = named(outer(inner(x)))
        assert (outer.name, inner.name, unused.name, named.name) == ("dense", "dense_1", "dense_2", "head")
        assert outer.kernel.name == "dense/kernel:0" and inner.kernel.name == "dense_1/kernel:0"
        assert [layer.name for layer in tf.keras.Model(x, y).layers] == ["input_1", "dense_1", "dense", "head"]


def test_two_models_with_the_same_layer_names_in_one_graph(tmp_path):
    """A model loaded twice (and two models with the same explicit names) coexist: each layer's
    variables go under a graph-unique scope from its name (dense_2/, fc_1/), as in TF's Keras."""
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)), tf.keras.layers.Dense(2)])
        m.compile("sgd", "mse")
        m.save(str(tmp_path / "m.h5"))
        a = tf.keras.models.load_model(str(tmp_path / "m.h5"))
        c = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,), name="fc")])
        e = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,), name="fc")])
        assert [layer.name for layer in a.layers] == ["dense", "dense_1"]
        assert [v.name for v in a.weights] == ["dense_2/kernel:0", "dense_2/bias:0", "dense_1_1/kernel:0",
                                               "dense_1_1/bias:0"]
        assert c.layers[0].name == e.layers[0].name == "fc" and e.weights[0].name == "fc_1/kernel:0"
        x = np.ones((2, 3), np.float32)
        np.testing.assert_allclose(a.predict(x), m.predict(x), rtol=1e-6)
