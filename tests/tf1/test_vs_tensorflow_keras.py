"""Differential tests against TensorFlow's Keras in TF1 graph mode (tf_keras under
`tensorflow.compat.v1` with eager execution off): the same models, from the same initial
weights, fitted on the same data without shuffling, must give the same per-epoch losses and
metrics, weights, predictions and evaluations.  Skipped cleanly without TensorFlow.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
tft.experimental.output_all_intermediates(True)  # TF's v1 graphs need it for a while loop's gradient

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(300)]


def _mlp_bn(tf, r):
    x = r.rand(90, 8).astype(np.float32)
    y = (x.sum(1) > 4).astype(np.int64)
    # no bias before the batch norm: its gradient is zero up to rounding, which Adam would
    # blow up to full-size steps of either sign in either library
    m = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", use_bias=False, input_shape=(8,)),
                             tf.keras.layers.BatchNormalization(),
                             tf.keras.layers.Dense(2, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m, x, y, dict(batch_size=20, validation_data=(x[:30], y[:30]))


def _two_inputs(tf, r):
    a = r.rand(64, 3).astype(np.float32)
    b = r.rand(64, 5).astype(np.float32)
    y = ((a.sum(1) - b.mean(1)) > 1.0).astype(np.float32)
    ia, ib = tf.keras.Input(shape=(3,)), tf.keras.Input(shape=(5,))
    h = tf.keras.layers.concatenate([tf.keras.layers.Dense(4, activation="tanh")(ia), ib])
    out = tf.keras.layers.Dense(1, activation="sigmoid")(h)
    m = tf.keras.Model(inputs=[ia, ib], outputs=out)
    m.compile(optimizer=tf.keras.optimizers.SGD(0.3, momentum=0.9, nesterov=True), loss="binary_crossentropy",
              metrics=["accuracy"])
    w = np.where(np.arange(64) % 3 == 0, 2.0, 1.0).astype(np.float32)
    return m, [a, b], y, dict(batch_size=16, sample_weight=w)


def _conv(tf, r):
    x = r.rand(40, 8, 8, 2).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[(x[:, :4].sum((1, 2, 3)) * 3).astype(int) % 3]
    m = tf.keras.Sequential([
        tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu", input_shape=(8, 8, 2)),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Conv2D(4, (3, 3), strides=2, kernel_regularizer=tf.keras.regularizers.l2(0.01)),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(3, activation="softmax")])
    m.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])
    return m, x, y, dict(batch_size=8)


def _embedding(tf, r):
    x = r.randint(0, 20, (48, 5))
    y = (x.mean(1, keepdims=True) / 20.0).astype(np.float32)
    m = tf.keras.Sequential([tf.keras.layers.Embedding(20, 4, input_length=5),
                             tf.keras.layers.Flatten(),
                             tf.keras.layers.Dense(1)])
    m.compile(optimizer=tf.keras.optimizers.Adagrad(0.1), loss="mse", metrics=["mae"])
    return m, x, y, dict(batch_size=12, validation_split=0.25)


def _sequence(tf, r):
    x = r.randint(0, 30, (40, 7))
    y = (x[:, :3].sum(1) > x[:, 4:].sum(1)).astype(np.int64)
    m = tf.keras.Sequential([tf.keras.layers.Embedding(30, 6, input_length=7),
                             tf.keras.layers.LSTM(5, recurrent_activation="hard_sigmoid"),
                             tf.keras.layers.Dense(2, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m, x, y, dict(batch_size=10)


def _run(tf, build, weights=None):
    r = np.random.RandomState(7)
    np.random.seed(3)  # both libraries shuffle the validation samples with np.random
    with tf.Graph().as_default():
        tf.set_random_seed(5)
        m, x, y, kw = build(tf, r)
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        hist = m.fit(x, y, epochs=3, shuffle=False, verbose=0, **kw).history
        sess = tf.keras.backend.get_session()
        return {"w0": w0, "hist": hist, "w": m.get_weights(), "pred": m.predict(x),
                "eval": m.evaluate(x, y, verbose=0), "sess": sess is not None,
                "names": [v.name.replace("/lstm_cell", "") for v in m.weights]}


@pytest.mark.parametrize("build", [_mlp_bn, _two_inputs, _conv, _embedding, _sequence],
                         ids=lambda f: f.__name__.strip("_"))
def test_fit_matches_tensorflow_keras(build):
    want = _run(tft, build)
    got = _run(cft, build, want["w0"])
    assert got["names"] == want["names"]
    # TF 1.15 named metrics "acc" and by their function ("mean_absolute_error"); TF 2's Keras,
    # the yardstick here, keeps the strings compile() was given
    renamed = {k.replace("accuracy", "acc").replace("mae", "mean_absolute_error"): v
               for k, v in want["hist"].items()}
    assert sorted(got["hist"]) == sorted(renamed)
    for k in renamed:
        np.testing.assert_allclose(got["hist"][k], renamed[k], rtol=2e-4, atol=1e-5, err_msg=k)
    for a, b in zip(got["w"], want["w"]):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(got["pred"], want["pred"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(got["eval"], want["eval"], rtol=1e-3, atol=1e-5)


def test_weights_files_read_by_either_library(tmp_path):
    x = np.random.RandomState(3).rand(5, 6).astype(np.float32)

    def make(tf):
        return tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu", input_shape=(6,)),
                                    tf.keras.layers.BatchNormalization(), tf.keras.layers.Dense(2)])
    with cft.Graph().as_default():
        m = make(cft)
        m.save_weights(str(tmp_path / "collflow.h5"))
        want = m.predict(x)
    with tft.Graph().as_default():
        m = make(tft)
        m.load_weights(str(tmp_path / "collflow.h5"))
        np.testing.assert_allclose(m.predict(x), want, rtol=1e-6, atol=1e-6)
        m.save_weights(str(tmp_path / "tensorflow.h5"))
    with cft.Graph().as_default():
        m = make(cft)
        m.load_weights(str(tmp_path / "tensorflow.h5"))
        np.testing.assert_allclose(m.predict(x), want, rtol=1e-6, atol=1e-6)


_RECURRENT = {
    "lstm_states": lambda tf: tf.keras.layers.LSTM(4, recurrent_activation="hard_sigmoid", return_sequences=True,
                                                   return_state=True),
    "lstm_backwards": lambda tf: tf.keras.layers.LSTM(4, recurrent_activation="sigmoid", go_backwards=True),
    "gru": lambda tf: tf.keras.layers.GRU(4, recurrent_activation="hard_sigmoid", reset_after=False,
                                          return_sequences=True),
    "gru_reset_after": lambda tf: tf.keras.layers.GRU(4, recurrent_activation="sigmoid", reset_after=True,
                                                      return_state=True),
    "simple_rnn": lambda tf: tf.keras.layers.SimpleRNN(4, return_sequences=True),
}


def _recurrent(tf, make, x, weights=None):
    with tf.Graph().as_default():
        inp = tf.keras.Input((5, 3))
        layer = make(tf)
        outs = layer(inp)
        outs = outs if isinstance(outs, list) else [outs]
        if weights is not None:
            layer.set_weights(weights)
        sess = tf.keras.backend.get_session()
        loss = tf.reduce_sum(outs[0] * np.arange(1, 5, dtype=np.float32))
        grads = tf.gradients(loss, [inp] + layer.weights)
        # TF 2's Keras names the weights under the cell ("lstm/lstm_cell/kernel"); TF 1.15's, as
        # collflow's, under the layer ("lstm/kernel")
        names = [v.name.replace("/lstm_cell", "").replace("/gru_cell", "").replace("/simple_rnn_cell", "")
                 for v in layer.weights]
        return layer.get_weights(), sess.run(outs + grads, {inp: x}), names


@pytest.mark.parametrize("kind", sorted(_RECURRENT))
def test_recurrent_layers_match_tensorflow_keras(kind):
    x = np.random.RandomState(2).rand(4, 5, 3).astype(np.float32)
    w, want, want_names = _recurrent(tft, _RECURRENT[kind], x)
    _, got, names = _recurrent(cft, _RECURRENT[kind], x, w)
    assert names == want_names
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


_LAYERS = {
    "conv2d_transpose": ((6, 6, 2), lambda tf: tf.keras.layers.Conv2DTranspose(3, 3, strides=2, padding="same",
                                                                               activation="relu")),
    "separable_conv2d": ((7, 7, 2), lambda tf: tf.keras.layers.SeparableConv2D(4, 3, depth_multiplier=2)),
    "depthwise_conv2d": ((7, 7, 3), lambda tf: tf.keras.layers.DepthwiseConv2D(3, strides=2, padding="same",
                                                                               depth_multiplier=2)),
    "up_sampling2d": ((3, 4, 2), lambda tf: tf.keras.layers.UpSampling2D((2, 3))),
    "zero_padding2d": ((3, 4, 2), lambda tf: tf.keras.layers.ZeroPadding2D(((1, 2), (0, 1)))),
    "cropping2d": ((6, 5, 2), lambda tf: tf.keras.layers.Cropping2D(((1, 2), (2, 0)))),
    "leaky_relu": ((5,), lambda tf: tf.keras.layers.LeakyReLU(0.2)),
    "relu_capped": ((5,), lambda tf: tf.keras.layers.ReLU(max_value=0.6, negative_slope=0.1, threshold=0.2)),
    "elu": ((5,), lambda tf: tf.keras.layers.ELU(0.5)),
    "softmax": ((3, 4), lambda tf: tf.keras.layers.Softmax(axis=1)),
    "prelu": ((4, 3), lambda tf: tf.keras.layers.PReLU(alpha_initializer="ones", shared_axes=[1])),
    "layer_norm": ((4, 6), lambda tf: tf.keras.layers.LayerNormalization()),
    "permute": ((3, 4, 2), lambda tf: tf.keras.layers.Permute((3, 1, 2))),
    "repeat_vector": ((4,), lambda tf: tf.keras.layers.RepeatVector(3)),
    "global_avg_1d": ((5, 3), lambda tf: tf.keras.layers.GlobalAveragePooling1D()),
    "time_distributed": ((5, 3), lambda tf: tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(2))),
    "bidirectional": ((5, 3), lambda tf: tf.keras.layers.Bidirectional(
        tf.keras.layers.LSTM(3, recurrent_activation="hard_sigmoid", return_sequences=True))),
    "bidirectional_sum_gru": ((5, 3), lambda tf: tf.keras.layers.Bidirectional(
        tf.keras.layers.GRU(3, recurrent_activation="sigmoid", reset_after=False), merge_mode="sum")),
    "conv3d": ((4, 5, 5, 2), lambda tf: tf.keras.layers.Conv3D(3, (2, 3, 3), strides=(1, 2, 1), padding="same",
                                                                activation="relu")),
    "max_pooling3d": ((4, 4, 6, 2), lambda tf: tf.keras.layers.MaxPooling3D((2, 2, 3))),
    "average_pooling3d": ((4, 4, 6, 2), lambda tf: tf.keras.layers.AveragePooling3D(2, strides=1, padding="same")),
    "up_sampling1d": ((3, 2), lambda tf: tf.keras.layers.UpSampling1D(3)),
    "zero_padding1d": ((3, 2), lambda tf: tf.keras.layers.ZeroPadding1D((1, 2))),
    "cropping1d": ((6, 2), lambda tf: tf.keras.layers.Cropping1D((2, 1))),
}


def _layer_case(tf, shape, make, x, weights=None):
    with tf.Graph().as_default():
        inp = tf.keras.Input(shape)
        layer = make(tf)
        out = layer(inp)
        if weights is not None:
            layer.set_weights(weights)
        sess = tf.keras.backend.get_session()
        w = np.random.RandomState(4).rand(*[int(d) for d in out.shape.as_list()[1:]]).astype(np.float32)
        loss = tf.reduce_sum(out * w)
        grads = [g for g in tf.gradients(loss, [inp] + layer.weights)]
        names = [v.name for v in layer.weights]
        for cell in ("/lstm_cell", "/gru_cell"):
            names = [n.replace(cell, "") for n in names]
        return layer.get_weights(), sess.run([out] + grads, {inp: x}), names


@pytest.mark.parametrize("kind", sorted(_LAYERS))
def test_more_layers_match_tensorflow_keras(kind):
    shape, make = _LAYERS[kind]
    x = np.random.RandomState(1).randn(3, *shape).astype(np.float32)
    w, want, want_names = _layer_case(tft, shape, make, x)
    _, got, names = _layer_case(cft, shape, make, x, w)
    assert names == want_names
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def _subclassed(tf, weights=None):
    class Scale(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=[int(input_shape[-1])], initializer="ones")
            self.b = self.add_weight(name="b", shape=[], initializer="zeros")
            super(Scale, self).build(input_shape)

        def call(self, x):
            return x * self.w + self.b

    class Net(tf.keras.Model):
        def __init__(self):
            super(Net, self).__init__()
            self.d1 = tf.keras.layers.Dense(8, activation="relu")
            self.scale = Scale()
            self.d2 = tf.keras.layers.Dense(3, activation="softmax")

        def call(self, x, training=None):
            return self.d2(self.scale(self.d1(x)))

    r = np.random.RandomState(0)
    x, y = r.rand(60, 5).astype(np.float32), r.randint(0, 3, 60)
    with tf.Graph().as_default():
        m = Net()
        m.compile(tf.keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
        m.predict(x[:2])  # builds the model on data
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        h = m.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
        return w0, h.history, m.predict(x[:4]), [v.name for v in m.weights]


def test_subclassed_model_and_custom_layer_match_tensorflow_keras():
    w0, want_hist, want_pred, want_names = _subclassed(tft)
    _, hist, pred, names = _subclassed(cft, w0)
    assert names == want_names == ["net/dense/kernel:0", "net/dense/bias:0", "net/scale/w:0", "net/scale/b:0",
                                   "net/dense_1/kernel:0", "net/dense_1/bias:0"]
    np.testing.assert_allclose(hist["loss"], want_hist["loss"], rtol=1e-5)
    np.testing.assert_allclose(hist["acc"], want_hist["accuracy"], rtol=1e-5)
    np.testing.assert_allclose(pred, want_pred, rtol=1e-4, atol=1e-6)


def _functional_saved(tf):
    i = tf.keras.Input((4,), name="inp")
    h = tf.keras.layers.Dense(3, activation="relu", kernel_regularizer=tf.keras.regularizers.l2(0.1))(i)
    shared = tf.keras.layers.Dense(2, name="shared")
    o = tf.keras.layers.add([shared(h), shared(h * 2.0 if False else h)])
    m = tf.keras.Model(i, o)
    m.compile(tf.keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    return m, np.random.RandomState(0).rand(6, 4).astype(np.float32)


def _sequential_saved(tf):
    m = tf.keras.Sequential([tf.keras.layers.Conv2D(3, 3, activation="relu", input_shape=(6, 6, 1)),
                             tf.keras.layers.BatchNormalization(), tf.keras.layers.Flatten(),
                             tf.keras.layers.Dropout(0.3), tf.keras.layers.Dense(2, activation="softmax")])
    m.compile("rmsprop", "categorical_crossentropy", metrics=["accuracy"])
    return m, np.random.RandomState(1).rand(3, 6, 6, 1).astype(np.float32)


@pytest.mark.parametrize("make", [_functional_saved, _sequential_saved], ids=["functional", "sequential"])
def test_whole_model_files_load_in_either_library(tmp_path, make):
    for src, dst in ((cft, tft), (tft, cft)):
        path = str(tmp_path / f"{src.__name__}.h5")
        with src.Graph().as_default():
            m, x = make(src)
            want = m.predict(x)
            m.save(path)
        with dst.Graph().as_default():
            loaded = dst.keras.models.load_model(path)
            np.testing.assert_allclose(loaded.predict(x), want, rtol=1e-5, atol=1e-6)
            assert [la.name for la in loaded.layers if la.weights] == [la.name for la in m.layers if la.weights]


_BACKEND = {
    "mean_axes": lambda K, a, b: K.mean(a, axis=(1, 2), keepdims=True),
    "sum_max_min": lambda K, a, b: K.sum(a, 1) + K.max(a, 1) - K.min(a, axis=1),
    "var_std": lambda K, a, b: K.var(a, axis=1) + K.std(a, axis=1, keepdims=False),
    "dot_3d": lambda K, a, b: K.dot(a, K.permute_dimensions(b, (0, 2, 1))),
    "batch_dot": lambda K, a, b: K.batch_dot(a, b, axes=[2, 2]),
    "batch_dot_default": lambda K, a, b: K.batch_dot(a, K.permute_dimensions(b, (0, 2, 1))),
    "clip_sqrt_pow": lambda K, a, b: K.sqrt(K.clip(a - 0.5, 0.1, 0.8)) + K.pow(K.abs(b), 2.0),
    "switch": lambda K, a, b: K.switch(K.greater(a, b), a, b * 2.0),
    "concat_reshape": lambda K, a, b: K.reshape(K.concatenate([a, b], axis=1), (-1, 8, 2)),
    "flatten_repeat": lambda K, a, b: K.repeat(K.batch_flatten(a), 2),
    "losses": lambda K, a, b: K.categorical_crossentropy(K.softmax(b), K.softmax(a)) +
    K.mean(K.binary_crossentropy(K.sigmoid(b), K.sigmoid(a)), axis=-1),
    "l2n_cumsum": lambda K, a, b: K.l2_normalize(a, axis=-1) + K.cumsum(b, axis=1),
}


@pytest.mark.parametrize("kind", sorted(_BACKEND))
def test_backend_functions_match_tensorflow_keras(kind):
    r = np.random.RandomState(5)
    a, b = r.rand(2, 4, 2).astype(np.float32), r.rand(2, 4, 2).astype(np.float32)
    outs = []
    for tf in (tft, cft):
        with tf.Graph().as_default(), tf.Session() as s:
            K = tf.keras.backend
            pa, pb = tf.placeholder(tf.float32, [2, 4, 2]), tf.placeholder(tf.float32, [2, 4, 2])
            y = _BACKEND[kind](K, pa, pb)
            outs.append(s.run(y, {pa: a, pb: b}))
            fn = K.function([pa, pb], [y])
            np.testing.assert_allclose(fn([a, b])[0], outs[-1], rtol=1e-6)
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)


def _two_outputs(tf, r):
    x = r.rand(60, 5).astype(np.float32)
    y_cls = (x[:, 0] > x[:, 1]).astype(np.int64)
    y_reg = x[:, 2:4].sum(1, keepdims=True).astype(np.float32)
    i = tf.keras.Input((5,))
    h = tf.keras.layers.Dense(8, activation="relu")(i)
    c = tf.keras.layers.Dense(2, activation="softmax", name="class_out")(h)
    g = tf.keras.layers.Dense(1, name="reg_out")(h)
    m = tf.keras.Model(i, [c, g])
    m.compile(tf.keras.optimizers.Adam(0.02), loss={"class_out": "sparse_categorical_crossentropy", "reg_out": "mse"},
              loss_weights={"class_out": 1.0, "reg_out": 0.5}, metrics={"class_out": ["accuracy"]})
    y = {"class_out": y_cls, "reg_out": y_reg}
    return m, x, y, dict(batch_size=15, validation_data=(x[:20], {"class_out": y_cls[:20], "reg_out": y_reg[:20]}))


def test_two_output_model_matches_tensorflow_keras():
    want = _run(tft, _two_outputs)
    got = _run(cft, _two_outputs, want["w0"])
    renamed = {k.replace("accuracy", "acc"): v for k, v in want["hist"].items()}
    assert sorted(got["hist"]) == sorted(renamed)
    for k in renamed:
        # the per-output validation losses are means of the batch values over validation
        # samples np.random-shuffled as TF 1.15's fit does (even with shuffle=False)
        np.testing.assert_allclose(got["hist"][k], renamed[k], rtol=2e-4, atol=1e-5, err_msg=k)
    for a, b in zip(got["pred"], want["pred"]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(got["eval"], want["eval"], rtol=1e-3, atol=1e-5)


def _scheduled(tf, weights=None):
    r = np.random.RandomState(9)
    x = r.rand(48, 6).astype(np.float32)
    y = (x.sum(1) > 3).astype(np.int64)
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
                                 tf.keras.layers.Dense(2, activation="softmax")])
        m.compile(tf.keras.optimizers.SGD(0.5, momentum=0.5), "sparse_categorical_crossentropy", metrics=["accuracy"])
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        sched = tf.keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5)
        h = m.fit(x, y, batch_size=12, epochs=4, shuffle=False, verbose=0, class_weight={0: 0.3, 1: 1.7},
                  callbacks=[sched])
        return w0, h.history, m.predict(x)


def test_class_weight_and_lr_schedule_match_tensorflow_keras():
    w0, want, want_pred = _scheduled(tft)
    _, got, pred = _scheduled(cft, w0)
    np.testing.assert_allclose(got["loss"], want["loss"], rtol=1e-4)
    np.testing.assert_allclose(got["acc"], want["accuracy"], rtol=1e-5)
    np.testing.assert_allclose(got["lr"], want["lr"], rtol=1e-6)
    np.testing.assert_allclose(pred, want_pred, rtol=1e-3, atol=1e-5)


_TEXTS = ["The cat sat on the mat.", "The dog ate my homework!", "", "cat, dog; cat & DOG?", "a b c a b a"]


@pytest.mark.parametrize("kwargs", [{}, {"num_words": 5}, {"oov_token": "<unk>", "num_words": 6},
                                    {"char_level": True}, {"lower": False, "filters": "."}])
def test_tokenizer_matches_tensorflow_keras(kwargs):
    from tf_keras.preprocessing.text import Tokenizer as TFTokenizer
    ours, theirs = cft.keras.preprocessing.text.Tokenizer(**kwargs), TFTokenizer(**kwargs)
    for t in (ours, theirs):
        t.fit_on_texts(_TEXTS)
    assert ours.word_index == theirs.word_index and dict(ours.word_counts) == dict(theirs.word_counts)
    probe = _TEXTS + ["unseen words here cat"]
    assert ours.texts_to_sequences(probe) == theirs.texts_to_sequences(probe)
    seqs = theirs.texts_to_sequences(probe)
    assert ours.sequences_to_texts(seqs) == theirs.sequences_to_texts(seqs)
    for mode in ("binary", "count", "freq", "tfidf"):
        np.testing.assert_allclose(ours.texts_to_matrix(probe, mode), theirs.texts_to_matrix(probe, mode), rtol=1e-12)


@pytest.mark.parametrize("kwargs", [{}, {"maxlen": 3}, {"maxlen": 4, "padding": "post", "truncating": "post"},
                                    {"maxlen": 2, "truncating": "pre", "value": -1}, {"dtype": "float32", "value": 0.5}])
def test_pad_sequences_matches_tensorflow_keras(kwargs):
    from tf_keras.preprocessing.sequence import pad_sequences
    seqs = [[1, 2, 3, 4], [5], [], [6, 7]]
    want = pad_sequences(seqs, **kwargs)
    got = cft.keras.preprocessing.sequence.pad_sequences(seqs, **kwargs)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _masked(tf, weights=None, seq_out=False):
    r = np.random.RandomState(3)
    x = r.randint(1, 20, (12, 6))
    for i in range(12):
        x[i, :r.randint(0, 4)] = 0  # pre-padding
    y = (x.sum(1) > 50).astype(np.int64)
    with tf.Graph().as_default():
        inp = tf.keras.Input((6,))
        e = tf.keras.layers.Embedding(20, 4, mask_zero=True)(inp)
        if seq_out:
            h = tf.keras.layers.LSTM(3, recurrent_activation="hard_sigmoid", return_sequences=True)(e)
            out = tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(2, activation="softmax"))(h)
            y = np.repeat(y[:, None], 6, 1)
        else:
            h = tf.keras.layers.Bidirectional(tf.keras.layers.GRU(3, recurrent_activation="sigmoid", reset_after=False,
                                                                  return_sequences=True))(e)
            out = tf.keras.layers.Dense(2, activation="softmax")(
                tf.keras.layers.LSTM(3, recurrent_activation="hard_sigmoid")(h))
        m = tf.keras.Model(inp, out)
        m.compile(tf.keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
        if weights is not None:
            m.set_weights(weights)
        w0, p0 = m.get_weights(), m.predict(x)
        h = m.fit(x, y, batch_size=6, epochs=2, shuffle=False, verbose=0)
        return w0, p0, h.history["loss"], m.predict(x)


@pytest.mark.parametrize("seq_out", [False, True], ids=["masked_last", "masked_sequence_loss"])
def test_masking_matches_tensorflow_keras(seq_out):
    w0, want_p0, want_loss, want_p = _masked(tft, None, seq_out)
    _, p0, loss, p = _masked(cft, w0, seq_out)
    np.testing.assert_allclose(p0, want_p0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    np.testing.assert_allclose(p, want_p, rtol=1e-4, atol=1e-6)
