"""By-hand tests (no TensorFlow) of the "other layers" of tf.keras and the added tf.layers:
values against NumPy references (Attention / AdditiveAttention with masks and causal, Dot,
the 3-D resizing layers, ThresholdedReLU, LocallyConnected1D/2D, Conv3DTranspose as the
transpose of conv3d), AlphaDropout's training form, finite-difference gradients with respect
to inputs and weights, compute_output_shape, get_config / from_config, to_json and
model.save / load_model round trips, the aliases, Wrapper, InputSpec and DenseFeatures."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

K = tf.keras
L = tf.keras.layers


def _r(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, shape).astype(np.float32)


def _run(build, feeds):
    """build(placeholders) -> (output, layer); the output's value for feeds and the layer's weights."""
    with tf.Graph().as_default():
        phs = [tf.placeholder(tf.bool if v.dtype == bool else tf.float32, v.shape) for v in feeds]
        out, layer = build(phs)
        sess = K.backend.get_session()
        return sess.run(out, dict(zip(phs, feeds))), (layer.get_weights() if layer is not None else [])


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# -- attention -----------------------------------------------------------------------------------

def test_attention_matches_numpy_with_masks_and_causal():
    q, v = _r(2, 3, 4), _r(2, 5, 4, seed=1)
    qm = np.array([[True, False, True], [True, True, True]])
    vm = np.array([[True, True, False, True, True], [True, True, True, True, False]])
    got, _ = _run(lambda p: (L.Attention(causal=True)([p[0], p[1]], mask=[p[2], p[3]]), None), [q, v, qm, vm])
    s = np.einsum("bqd,bvd->bqv", q, v)
    keep = vm[:, None, :] & np.tril(np.ones((3, 5), bool))[None]
    want = np.einsum("bqv,bvd->bqd", _softmax(s - 1e9 * (~keep)), v) * qm[..., None]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_additive_attention_matches_numpy_with_key():
    q, v, k = _r(2, 3, 4), _r(2, 5, 2, seed=1), _r(2, 5, 4, seed=2)
    got, (scale,) = _run(lambda p: (lambda la: (la([p[0], p[1], p[2]]), la))(L.AdditiveAttention()), [q, v, k])
    s = (scale * np.tanh(q[:, :, None, :] + k[:, None, :, :])).sum(-1)
    np.testing.assert_allclose(got, np.einsum("bqv,bvd->bqd", _softmax(s), v), rtol=1e-5, atol=1e-6)
    assert got.shape == (2, 3, 2)


def test_attention_keeps_query_mask_and_weights_names():
    with tf.Graph().as_default():
        q = L.Input((3,), dtype="int32")
        e = L.Embedding(6, 4, mask_zero=True)(q)
        la = L.Attention(use_scale=True)
        out = la([e, e])
        from collflow.keras.layers import mask_of
        assert mask_of(out) is not None
        assert [w.op.name for w in la.weights] == ["attention/scale"]
        a2 = L.AdditiveAttention()
        a2([e, e])
        assert [(w.op.name, w.shape.as_list()) for w in a2.weights] == [("additive_attention/scale", [4])]
        with pytest.raises(ValueError, match="namely"):
            L.Attention()([e])


# -- Dot -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axes,shapes,eq", [
    (1, [(3, 4), (3, 4)], "bi,bi->b"),
    ((2, 2), [(2, 3, 4), (2, 5, 4)], "bij,bkj->bik"),
    ((1, 2), [(2, 4, 3), (2, 5, 4)], "bij,bki->bjk"),
])
def test_dot_matches_einsum(axes, shapes, eq):
    xs = [_r(*s, seed=i) for i, s in enumerate(shapes)]
    got, _ = _run(lambda p: (L.dot(p, axes=axes), None), xs)
    want = np.einsum(eq, *xs)
    np.testing.assert_allclose(got, want.reshape(want.shape[0], -1) if want.ndim == 1 else want, rtol=1e-5,
                               atol=1e-5)


def test_dot_normalize_is_cosine():
    a, b = _r(3, 4), _r(3, 4, seed=1)
    got, _ = _run(lambda p: (L.Dot(axes=-1, normalize=True)(p), None), [a, b])
    want = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-5)
    with pytest.raises(ValueError, match="axes"):
        L.Dot(axes="x")


# -- stateless layers ------------------------------------------------------------------------------

def test_volume_layers_match_numpy():
    x = _r(2, 4, 5, 3, 2)
    cases = [
        (L.Cropping3D(((1, 0), (1, 2), (0, 1))), x[:, 1:, 1:3, 0:2]),
        (L.UpSampling3D((2, 1, 3)), x.repeat(2, 1).repeat(3, 3)),
        (L.ZeroPadding3D(((1, 0), (0, 2), (1, 1))), np.pad(x, [(0, 0), (1, 0), (0, 2), (1, 1), (0, 0)])),
        (L.GlobalAveragePooling3D(), x.mean((1, 2, 3))),
        (L.GlobalMaxPool3D(), x.max((1, 2, 3))),
        (L.ThresholdedReLU(0.4), x * (x > 0.4)),
        (L.SpatialDropout3D(0.5), x),   # not training: the identity
        (L.AlphaDropout(0.5), x),
    ]
    for layer, want in cases:
        got, _ = _run(lambda p: (layer(p[0]), None), [x])
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=type(layer).__name__)
        assert tuple(layer.compute_output_shape((None,) + x.shape[1:]).as_list()) == (None,) + want.shape[1:]


def test_alpha_dropout_in_training_takes_two_affine_values():
    x = _r(400, 8)
    rate = 0.3
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, x.shape)
        y = L.AlphaDropout(rate, seed=3)(p, training=True)
        got = K.backend.get_session().run(y, {p: x})
    sat = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - rate) * (1 + rate * sat ** 2)) ** -0.5
    b = -a * sat * rate
    kept = np.isclose(got, a * x + b, atol=1e-5)
    dropped = np.isclose(got, a * sat + b, atol=1e-5)
    assert np.all(kept | dropped)
    assert 0.2 < dropped.mean() < 0.4


# -- weighted layers: numpy references --------------------------------------------------------------

def test_locally_connected_match_numpy():
    x = _r(2, 7, 3)
    la = L.LocallyConnected1D(4, 3, strides=2)
    got, (k, b) = _run(lambda p: (la(p[0]), la), [x])
    assert k.shape == (3, 9, 4) and b.shape == (3, 4)
    want = np.stack([x[:, i * 2:i * 2 + 3].reshape(2, -1) @ k[i] for i in range(3)], 1) + b
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    x2 = _r(2, 5, 4, 2)
    l2 = L.LocallyConnected2D(3, (2, 3), strides=(2, 1))
    got, (k, b) = _run(lambda p: (l2(p[0]), l2), [x2])
    assert k.shape == (2 * 2, 2 * 3 * 2, 3) and b.shape == (2, 2, 3)
    want = np.zeros((2, 2, 2, 3), np.float32)
    for i in range(2):
        for j in range(2):
            want[:, i, j] = x2[:, 2 * i:2 * i + 2, j:j + 3].reshape(2, -1) @ k[i * 2 + j] + b[i, j]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(NotImplementedError):
        L.LocallyConnected1D(2, 2, implementation=2)


def test_conv3d_transpose_is_the_adjoint_of_conv3d():
    # <conv3d_transpose(y), x> = <y, conv3d(x)> for the same kernel, strides and padding
    x, y = _r(1, 7, 6, 4, 3), _r(1, 3, 3, 2, 2, seed=1)
    with tf.Graph().as_default():
        py = tf.placeholder(tf.float32, y.shape)
        la = L.Conv3DTranspose(3, (3, 2, 2), strides=(2, 2, 2), use_bias=False)
        t = la(py)
        k = la.weights[0]
        c = tf.nn.conv3d(tf.constant(x), k, [1, 2, 2, 2, 1], "VALID")
        sess = K.backend.get_session()
        tv, cv = sess.run([t, c], {py: y})
    assert tv.shape == x.shape
    np.testing.assert_allclose((tv * x).sum(), (y * cv).sum(), rtol=1e-4)


def test_tf_layers_conv3d_transpose_variables_and_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3, 4, 5, 2])
        y = tf.layers.conv3d_transpose(x, 4, 3, strides=(1, 2, 2), padding="same")
        z = tf.layers.Conv3DTranspose(2, 2)(y)
        assert y.shape.as_list() == [2, 3, 8, 10, 4] and z.shape.as_list() == [2, 4, 9, 11, 2]
        assert [(v.op.name, v.shape.as_list()) for v in tf.global_variables()] == [
            ("conv3d_transpose/kernel", [3, 3, 3, 4, 2]), ("conv3d_transpose/bias", [4]),
            ("conv3d_transpose_1/kernel", [2, 2, 2, 2, 4]), ("conv3d_transpose_1/bias", [2])]
        assert tf.layers.MaxPooling3D(2, 2)(x).shape.as_list() == [2, 1, 2, 2, 2]
        assert tf.layers.AveragePooling3D(2, 1, padding="same")(x).shape.as_list() == [2, 3, 4, 5, 2]
        c = tf.layers.Conv3D(3, 2, name="c3")
        c(x)
        c(x)
        assert [v.op.name for v in c.variables] == ["c3/kernel", "c3/bias"]
        ct = tf.layers.Conv2DTranspose(3, 2, strides=2)
        assert ct(tf.placeholder(tf.float32, [1, 3, 3, 2])).shape.as_list() == [1, 6, 6, 3]
        assert ct.kernel.shape.as_list() == [2, 2, 3, 2]


# -- finite differences (float64) ------------------------------------------------------------------

FD = {
    "attention_scaled": (lambda: L.Attention(use_scale=True), [(2, 3, 4), (2, 4, 4)]),
    "attention_causal_key": (lambda: L.Attention(causal=True, use_scale=True), [(2, 3, 4), (2, 4, 2), (2, 4, 4)]),
    "additive_attention": (lambda: L.AdditiveAttention(), [(2, 3, 4), (2, 4, 4)]),
    "dot_normalize": (lambda: L.Dot(axes=(2, 2), normalize=True), [(2, 3, 4), (2, 5, 4)]),
    "conv3d_transpose": (lambda: L.Conv3DTranspose(2, 2, strides=(1, 2, 1), activation="tanh"), [(1, 2, 3, 2, 2)]),
    "separable_conv1d": (lambda: L.SeparableConv1D(3, 2, depth_multiplier=2), [(2, 5, 2)]),
    "locally_connected1d": (lambda: L.LocallyConnected1D(2, 2, strides=1, activation="tanh"), [(2, 4, 3)]),
    "locally_connected2d": (lambda: L.LocallyConnected2D(2, 2), [(2, 3, 3, 2)]),
    "thresholded_relu": (lambda: L.ThresholdedReLU(0.2), [(2, 3, 4)]),
    "upsampling3d": (lambda: L.UpSampling3D((1, 2, 1)), [(1, 2, 2, 2, 1)]),
}


@pytest.mark.parametrize("name", sorted(FD))
def test_finite_difference_gradients(name, eps=1e-6, tol=1e-5):
    make, shapes = FD[name]
    xs = [np.random.default_rng(i).uniform(-1, 1, s) for i, s in enumerate(shapes)]
    K.backend.set_floatx("float64")
    try:
        with tf.Graph().as_default():
            phs = [tf.placeholder(tf.float64, s) for s in shapes]
            layer = make()
            out = layer(phs if len(phs) > 1 else phs[0])
            wt = np.random.RandomState(1).randn(*out.shape.as_list())
            loss = tf.reduce_sum(out * wt)
            sess = K.backend.get_session()
            params = phs + list(layer.trainable_weights)
            grads = sess.run(tf.gradients(loss, params), dict(zip(phs, xs)))
            vals = xs + sess.run(list(layer.trainable_weights))
            rng = np.random.RandomState(3)
            for p, g, v in zip(params, grads, vals):
                for _ in range(4):
                    idx = tuple(rng.randint(n) for n in v.shape)
                    numeric = []
                    for sgn in (1, -1):
                        vv = np.array(v, dtype=np.float64)
                        vv[idx] += sgn * eps
                        if p in phs:
                            feed = dict(zip(phs, xs))
                            feed[p] = vv
                            numeric.append(sess.run(loss, feed))
                        else:
                            p.load(vv, sess)
                            numeric.append(sess.run(loss, dict(zip(phs, xs))))
                    if p not in phs:
                        p.load(v, sess)
                    nd = (numeric[0] - numeric[1]) / (2 * eps)
                    assert abs(nd - g[idx]) <= tol * max(1.0, abs(nd)), (name, p.name, idx, nd, g[idx])
    finally:
        K.backend.set_floatx("float32")


# -- configs, saving, names ------------------------------------------------------------------------

CONFIGS = [
    lambda: L.Attention(use_scale=True, causal=True, name="att"),
    lambda: L.AdditiveAttention(use_scale=False),
    lambda: L.Dot(axes=[1, 2], normalize=True),
    lambda: L.AlphaDropout(0.2, seed=4),
    lambda: L.ThresholdedReLU(theta=0.7),
    lambda: L.SpatialDropout3D(0.1),
    lambda: L.Cropping3D(((1, 2), (0, 1), (2, 0))),
    lambda: L.UpSampling3D((1, 2, 3)),
    lambda: L.ZeroPadding3D((1, 2, 3)),
    lambda: L.GlobalAveragePooling3D(),
    lambda: L.GlobalMaxPooling3D(),
    lambda: L.Conv3DTranspose(4, 3, strides=2, output_padding=1, activation="relu"),
    lambda: L.SeparableConv1D(3, 2, depth_multiplier=2, padding="same"),
    lambda: L.LocallyConnected1D(2, 3, strides=2, use_bias=False),
    lambda: L.LocallyConnected2D(2, (2, 3), activation="tanh"),
]


@pytest.mark.parametrize("k", range(len(CONFIGS)))
def test_get_config_from_config_round_trip(k):
    with tf.Graph().as_default():
        layer = CONFIGS[k]()
        cfg = layer.get_config()
        again = type(layer).from_config(cfg)
        assert again.get_config() == cfg
        back = L.deserialize(L.serialize(layer))
        assert type(back) is type(layer) and back.get_config() == cfg


def _model():
    q, v = L.Input((3, 4)), L.Input((5, 4))
    a = L.Attention(use_scale=True)([q, v])
    b = L.AdditiveAttention()([q, v])
    d = L.Dot(axes=(2, 2))([a, b])
    s = L.SeparableConv1D(2, 2)(L.LocallyConnected1D(3, 2)(v))
    vol = L.Reshape((3, 2, 2, 1))(q)
    t = L.GlobalMaxPooling3D()(L.Conv3DTranspose(2, 2)(L.ZeroPadding3D(1)(vol)))
    u = L.GlobalAveragePooling3D()(L.UpSampling3D(2)(L.Cropping3D(((1, 0), (0, 0), (0, 1)))(vol)))
    z = L.LocallyConnected2D(2, 2)(L.Reshape((3, 4, 1))(q))
    x = L.Concatenate()([L.Flatten()(d), L.Flatten()(s), t, u, L.Flatten()(z),
                         L.Flatten()(L.ThresholdedReLU(0.1)(L.AlphaDropout(0.1)(q)))])
    return K.Model([q, v], L.Dense(2)(x))


def test_model_save_load_and_json_round_trip(tmp_path):
    xs = [_r(2, 3, 4), _r(2, 5, 4, seed=1)]
    with tf.Graph().as_default():
        m = _model()
        m.compile("sgd", "mse")
        want = m.predict(xs)
        m.save(str(tmp_path / "m.h5"))
        js = m.to_json()
    with tf.Graph().as_default():
        m2 = K.models.load_model(str(tmp_path / "m.h5"))
        np.testing.assert_allclose(m2.predict(xs), want, rtol=1e-5, atol=1e-6)
        m2.fit(xs, np.zeros((2, 2), np.float32), epochs=1, verbose=0)
    with tf.Graph().as_default():
        m3 = K.models.model_from_json(js)
        assert [type(la).__name__ for la in m3.layers] == [type(la).__name__ for la in _model().layers]


def test_aliases_wrapper_inputspec():
    assert L.Convolution2D is L.Conv2D and L.Convolution1D is L.Conv1D and L.Convolution3D is L.Conv3D
    assert L.Convolution2DTranspose is L.Conv2DTranspose and L.Convolution3DTranspose is L.Conv3DTranspose
    assert L.SeparableConvolution1D is L.SeparableConv1D and L.SeparableConvolution2D is L.SeparableConv2D
    assert L.AvgPool1D is L.AveragePooling1D and L.MaxPool1D is L.MaxPooling1D
    assert L.GlobalAvgPool1D is L.GlobalAveragePooling1D and L.GlobalMaxPool2D is L.GlobalMaxPooling2D
    assert L.GlobalAvgPool3D is L.GlobalAveragePooling3D and L.GlobalMaxPool3D is L.GlobalMaxPooling3D
    assert issubclass(L.TimeDistributed, L.Wrapper) and issubclass(L.Bidirectional, L.Wrapper)
    spec = L.InputSpec(shape=(None, 3), dtype="float32")
    assert spec.ndim == 2 and "shape=(None, 3)" in repr(spec)
    assert L.InputSpec.from_config(spec.get_config()).shape == (None, 3)


class Twice(L.Wrapper):
    def call(self, inputs):
        return self.layer(self.layer(inputs))


def test_user_wrapper_subclass_shares_weights_and_round_trips(tmp_path):
    x = _r(3, 4)
    with tf.Graph().as_default():
        inp = L.Input((4,))
        w = Twice(L.Dense(4, kernel_initializer="ones"))
        out = w(inp)
        m = K.Model(inp, out)
        assert len(w.weights) == 2
        want = m.predict(x)
        np.testing.assert_allclose(want, x.sum(1, keepdims=True).repeat(4, 1) * 4, rtol=1e-5)
        cfg = w.get_config()
        assert cfg["layer"]["class_name"] == "Dense"
        m.save(str(tmp_path / "w.h5"))
    with tf.Graph().as_default():
        m2 = K.models.load_model(str(tmp_path / "w.h5"), custom_objects={"Twice": Twice})
        np.testing.assert_allclose(m2.predict(x), want, rtol=1e-5)


def test_dense_features_in_a_model():
    fc = tf.feature_column
    cols = [fc.numeric_column("a", shape=(2,)),
            fc.embedding_column(fc.categorical_column_with_identity("b", 5), 3)]
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = np.array([[1], [4]], np.int64)
    with tf.Graph().as_default():
        ia, ib = L.Input((2,), name="a"), L.Input((1,), name="b", dtype="int64")
        df = L.DenseFeatures(cols)
        h = df({"a": ia, "b": ib})
        assert h.shape.as_list() == [None, 5]
        assert sorted(v.op.name for v in df.weights) == ["dense_features/b_embedding/embedding_weights"]
        m = K.Model([ia, ib], L.Dense(1, kernel_initializer="ones")(h))
        got = m.predict([a, b])
        emb = K.backend.get_session().run(df.weights[0])
        np.testing.assert_allclose(got[:, 0], a.sum(1) + emb[b[:, 0]].sum(1), rtol=1e-5)
        assert df.compute_output_shape({"a": (None, 2)}).as_list() == [None, 5]


# -- tf_keras 2.x-only layers --------------------------------------------------------------------

def test_normalization_adapt_and_given():
    data = _r(30, 3, 4) * 2 + 0.5
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, (None, 3, 4))
        la = L.Normalization(axis=-1)
        la.adapt(data)
        y = la(p)
        got = K.backend.get_session().run(y, {p: data[:5]})
        mean, var, count = la.get_weights()
    m, v = data.mean((0, 1)), data.var((0, 1))
    np.testing.assert_allclose(mean, m, rtol=1e-5)
    assert count == 90
    np.testing.assert_allclose(got, (data[:5] - m) / np.sqrt(v), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="both"):
        L.Normalization(mean=1.0)


def test_preprocessing_values_by_hand():
    x = np.array([[-1.0, 0.0, 0.5], [1.0, 2.5, 9.0]], np.float32)
    got, _ = _run(lambda p: (L.Discretization(bin_boundaries=[0.0, 1.0, 2.5])(p[0]), None), [x])
    np.testing.assert_array_equal(got, [[0, 1, 1], [2, 3, 3]])
    got, _ = _run(lambda p: (L.Rescaling(2.0, 1.0)(p[0]), None), [x])
    np.testing.assert_allclose(got, x * 2 + 1)
    img = _r(1, 6, 5, 2)
    got, _ = _run(lambda p: (L.CenterCrop(2, 3)(p[0]), None), [img])
    np.testing.assert_allclose(got, img[:, 2:4, 1:4])
    with tf.Graph().as_default():
        ids = tf.constant([[0, 2, 2], [3, 1, 0]], tf.int64)
        cnt = L.CategoryEncoding(4, output_mode="count")(ids)
        np.testing.assert_allclose(K.backend.get_session().run(cnt), [[1, 0, 2, 0], [1, 1, 0, 1]])
    assert L.experimental.preprocessing.Rescaling is L.Rescaling
    L.enable_v2_dtype_behavior()
    L.disable_v2_dtype_behavior()


def test_einsum_dense_and_conv1d_transpose_by_hand():
    x = _r(2, 4, 5)
    la = L.EinsumDense("abc,cde->abde", (None, 2, 3), bias_axes="de")
    got, (k, b) = _run(lambda p: (la(p[0]), la), [x])
    np.testing.assert_allclose(got, np.einsum("abc,cde->abde", x, k) + b, rtol=1e-5, atol=1e-5)
    ct = L.Conv1DTranspose(2, 3, strides=2, use_bias=False)
    got, (k,) = _run(lambda p: (ct(p[0]), ct), [x])
    want = np.zeros((2, 9, 2), np.float32)  # each input step adds its kernel-weighted copy at 2 * t
    for t in range(4):
        for j in range(3):
            want[:, 2 * t + j] += x[:, t] @ k[j].T
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_channels_first_1d_layers_are_the_channels_last_ones_transposed():
    x = _r(2, 6, 3)  # [batch, steps, channels]
    for make in (lambda fmt: L.Conv1DTranspose(2, 3, strides=2, data_format=fmt),
                 lambda fmt: L.DepthwiseConv1D(2, depth_multiplier=2, data_format=fmt)):
        last, first = make("channels_last"), make("channels_first")

        def both(p, last=last, first=first):
            a = last(p[0])
            b = first(tf.transpose(p[0], [0, 2, 1]))
            first.set_weights(last.get_weights())
            return (a, b), last
        with tf.Graph().as_default():
            p = [tf.constant(x)]
            (a, b), _ = both(p)
            sess = K.backend.get_session()
            va, vb = sess.run([a, b])
        np.testing.assert_allclose(vb, va.transpose(0, 2, 1), rtol=1e-6, atol=1e-6)


FD.update({
    "einsum_dense": (lambda: L.EinsumDense("abc,cd->abd", (None, 3), bias_axes="d", activation="tanh"),
                     [(2, 3, 4)]),
    "conv1d_transpose": (lambda: L.Conv1DTranspose(2, 3, strides=2), [(2, 3, 2)]),
    "depthwise_conv1d": (lambda: L.DepthwiseConv1D(2, depth_multiplier=2), [(2, 4, 2)]),
    "normalization": (lambda: L.Normalization(mean=[0.5, 1.0], variance=[2.0, 0.5]), [(2, 3, 2)]),
})


@pytest.mark.parametrize("name", ["einsum_dense", "conv1d_transpose", "depthwise_conv1d", "normalization"])
def test_finite_difference_gradients_v2(name):
    test_finite_difference_gradients(name)


def test_multi_head_attention_fd_config_and_model_round_trip(tmp_path):
    # finite differences w.r.t. query, value and every weight
    K.backend.set_floatx("float64")
    try:
        with tf.Graph().as_default():
            q, v = tf.placeholder(tf.float64, (2, 3, 4)), tf.placeholder(tf.float64, (2, 4, 4))
            la = L.MultiHeadAttention(2, 2)
            out = la(q, v, use_causal_mask=True)
            wt = np.random.RandomState(1).randn(2, 3, 4)
            loss = tf.reduce_sum(out * wt)
            sess = K.backend.get_session()
            params = [q, v] + la.trainable_weights
            xs = {q: np.random.default_rng(0).uniform(-1, 1, (2, 3, 4)),
                  v: np.random.default_rng(1).uniform(-1, 1, (2, 4, 4))}
            grads = sess.run(tf.gradients(loss, params), xs)
            vals = [xs[q], xs[v]] + sess.run(la.trainable_weights)
            eps = 1e-6
            for p, g, val in zip(params, grads, vals):
                idx = tuple(np.random.RandomState(5).randint(n) for n in val.shape)
                res = []
                for sgn in (1, -1):
                    vv = np.array(val, dtype=np.float64)
                    vv[idx] += sgn * eps
                    if p in (q, v):
                        res.append(sess.run(loss, {**xs, p: vv}))
                    else:
                        p.load(vv, sess)
                        res.append(sess.run(loss, xs))
                        p.load(val, sess)
                nd = (res[0] - res[1]) / (2 * eps)
                assert abs(nd - g[idx]) <= 1e-5 * max(1.0, abs(nd)), (p.name, nd, g[idx])
    finally:
        K.backend.set_floatx("float32")
    xq, xv = _r(2, 3, 4), _r(2, 5, 4, seed=1)
    with tf.Graph().as_default():
        qi, vi = L.Input((3, 4)), L.Input((5, 4))
        la = L.MultiHeadAttention(2, 3, value_dim=2, output_shape=6)
        m = K.Model([qi, vi], la(qi, vi))
        assert type(la).from_config(la.get_config()).get_config() == la.get_config()
        want = m.predict([xq, xv])
        m.save(str(tmp_path / "mha.h5"))
    with tf.Graph().as_default():
        m2 = K.models.load_model(str(tmp_path / "mha.h5"))
        np.testing.assert_allclose(m2.predict([xq, xv]), want, rtol=1e-5, atol=1e-6)


V2_CONFIGS = [
    lambda: L.Identity(), lambda: L.Rescaling(0.5, 2.0), lambda: L.CenterCrop(2, 3), lambda: L.Resizing(4, 5, "nearest"),
    lambda: L.CategoryEncoding(5, "count"), lambda: L.Hashing(4, mask_value=0), lambda: L.Discretization([0.0, 1.0]),
    lambda: L.Normalization(axis=(1, 2), mean=0.5, variance=2.0), lambda: L.Conv1DTranspose(2, 3, output_padding=0),
    lambda: L.DepthwiseConv1D(3, depth_multiplier=2), lambda: L.EinsumDense("ab,bc->ac", 4, bias_axes="c"),
]


@pytest.mark.parametrize("k", range(len(V2_CONFIGS)))
def test_v2_get_config_round_trip(k):
    with tf.Graph().as_default():
        layer = V2_CONFIGS[k]()
        cfg = layer.get_config()
        assert type(layer).from_config(cfg).get_config() == cfg
        assert type(L.deserialize(L.serialize(layer))) is type(layer)


def test_channels_first_3d_layers_are_the_channels_last_answer_transposed():
    # MaxPooling3D / AveragePooling3D once dropped data_format and pooled the channel axis
    x = _r(2, 5, 4, 6, 3, seed=4)
    xf = np.transpose(x, (0, 4, 1, 2, 3))
    layers = [lambda f: L.MaxPooling3D(2, data_format=f), lambda f: L.AveragePooling3D(2, 1, "same", data_format=f),
              lambda f: L.ZeroPadding3D(((1, 0), (0, 2), (1, 1)), data_format=f),
              lambda f: L.Cropping3D(((1, 0), (0, 1), (2, 1)), data_format=f),
              lambda f: L.UpSampling3D((1, 2, 3), data_format=f)]
    for make in layers:
        last, _ = _run(lambda p: (make("channels_last")(p[0]), None), [x])
        first, _ = _run(lambda p: (make("channels_first")(p[0]), None), [xf])
        np.testing.assert_allclose(first, np.transpose(last, (0, 4, 1, 2, 3)), rtol=1e-6)
    with pytest.raises(TypeError, match="data_format"):
        L.SpatialDropout1D(0.5, data_format="channels_first")      # Keras's 1-D one has none
    with pytest.raises(ValueError, match="must be one of"):
        L.MaxPooling3D(2, data_format="NCDHW")


def test_spatial_dropout1d_ignores_a_channels_first_default():
    # Keras's SpatialDropout1D has no data_format: its noise is [batch, 1, channels] even when
    # image_data_format() is channels_first (the 2-D one follows the default)
    K.backend.set_image_data_format("channels_first")
    try:
        assert L.SpatialDropout1D(0.5).data_format == "channels_last"
        assert L.SpatialDropout2D(0.5).data_format == "channels_first"
    finally:
        K.backend.set_image_data_format("channels_last")
