"""Differential tests against tf_keras / tf.compat.v1.layers in TF1 graph mode for the "other
layers": Attention / AdditiveAttention (masks, causal, use_scale), Dot, the 3-D resizing and
pooling layers, ThresholdedReLU, AlphaDropout / SpatialDropout3D at inference,
Conv3DTranspose, SeparableConv1D, LocallyConnected1D/2D, and tf.layers' Conv2DTranspose,
Conv3D, Conv3DTranspose, conv3d_transpose and the 3-D poolings.  Each case is built in both
libraries, collflow's weights set to TensorFlow's initial ones; outputs, output shapes,
variable names and shapes, and the gradients of sum(output * W) with respect to the float
inputs and every weight are compared.  Weights files of models of these layers load across."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

_ = tfdiff

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
pytest.importorskip("tf_keras", reason="tf_keras is not installed")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(300)]


def _run(tf, build, inputs, weights=None):
    """(fetched values, variable (name, shape) list, initial weights) of build(tf, placeholders)."""
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(tf.bool if v.dtype == bool else tf.float32, v.shape) for v in inputs]
        out, layers = build(tf, phs)
        variables = [w for la in layers for w in la.weights]
        w = np.random.default_rng(3).uniform(0.5, 1.5, out.shape.as_list()).astype(np.float32)
        loss = tf.reduce_sum(out * tf.constant(w))
        floats = [p for p, v in zip(phs, inputs) if v.dtype != bool]
        grads = tf.gradients(loss, floats + variables)
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            init = s.run(variables)
            if weights is not None:
                for var, val in zip(variables, weights):
                    var.load(val, s)
            got = s.run([out] + [tf.convert_to_tensor(gr) for gr in grads], dict(zip(phs, inputs)))
        names = [(v.op.name, tuple(v.shape.as_list())) for v in variables]
        return got, names, init, tuple(out.shape.as_list())


def _compare(build, inputs, atol=1e-4):
    want, wnames, init, wshape = _run(tft, build, inputs)
    got, gnames, _, gshape = _run(cft, build, inputs, weights=init)
    assert gnames == wnames
    assert gshape == wshape
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=atol, err_msg=f"fetch {k}")


def _r(*shape, seed=0):
    return np.random.default_rng(seed + len(shape)).uniform(-1.5, 1.5, shape).astype(np.float32)


def _layer_case(make, *shapes):
    def build(tf, phs):
        la = make(tf.keras.layers)
        return la(phs if len(phs) > 1 else phs[0]), [la]
    return build, [_r(*s, seed=i) for i, s in enumerate(shapes)]


ATTENTION = {
    "dot": (lambda L: L.Attention(), (2, 3, 4), (2, 5, 4)),
    "dot_scaled": (lambda L: L.Attention(use_scale=True), (2, 3, 4), (2, 5, 4)),
    "dot_key": (lambda L: L.Attention(use_scale=True), (2, 3, 4), (2, 5, 6), (2, 5, 4)),
    "additive": (lambda L: L.AdditiveAttention(), (2, 3, 4), (2, 5, 4)),
    "additive_noscale_key": (lambda L: L.AdditiveAttention(use_scale=False), (2, 3, 4), (2, 5, 3), (2, 5, 4)),
}


@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_attention_values_and_gradients(name):
    make, *shapes = ATTENTION[name]
    _compare(*_layer_case(make, *shapes))


@pytest.mark.parametrize("cls", ["Attention", "AdditiveAttention"])
def test_attention_masks_and_causal(cls):
    qm = np.array([[True, True, False], [True, False, True]])
    vm = np.array([[True, True, True, False, False], [True, False, True, True, True]])

    def build(tf, phs):
        q, v, qmask, vmask = phs
        la = getattr(tf.keras.layers, cls)(causal=True)
        return la([q, v], mask=[qmask, vmask]), [la]
    _compare(build, [_r(2, 3, 4), _r(2, 5, 4, seed=1), qm, vm])


DOT = {
    "2d_axis1": (lambda L: L.Dot(axes=1), (3, 4), (3, 4)),
    "2d_normalize": (lambda L: L.Dot(axes=-1, normalize=True), (3, 4), (3, 4)),
    "3d_pair": (lambda L: L.Dot(axes=(2, 2)), (2, 3, 4), (2, 5, 4)),
    "3d_mixed": (lambda L: L.Dot(axes=(1, 2)), (2, 4, 3), (2, 5, 4)),
    "3d_2d": (lambda L: L.Dot(axes=(2, 1)), (2, 3, 4), (2, 4)),
}


@pytest.mark.parametrize("name", sorted(DOT))
def test_dot_values_and_gradients(name):
    make, *shapes = DOT[name]
    _compare(*_layer_case(make, *shapes))


VOLUME = (2, 4, 5, 3, 2)
SIMPLE = {
    "thresholded_relu": (lambda L: L.ThresholdedReLU(theta=0.3), VOLUME),
    "cropping3d": (lambda L: L.Cropping3D(((1, 0), (1, 2), (0, 1))), VOLUME),
    "cropping3d_int": (lambda L: L.Cropping3D(1), VOLUME),
    "upsampling3d": (lambda L: L.UpSampling3D((2, 1, 3)), VOLUME),
    "zeropadding3d": (lambda L: L.ZeroPadding3D(((1, 0), (2, 1), (0, 2))), VOLUME),
    "zeropadding3d_int": (lambda L: L.ZeroPadding3D(1), VOLUME),
    "global_avg3d": (lambda L: L.GlobalAveragePooling3D(), VOLUME),
    "global_max3d": (lambda L: L.GlobalMaxPooling3D(), VOLUME),
    "alpha_dropout_inference": (lambda L: L.AlphaDropout(0.3), VOLUME),
    "spatial_dropout3d_inference": (lambda L: L.SpatialDropout3D(0.3), VOLUME),
    "conv3d_transpose_valid": (lambda L: L.Conv3DTranspose(3, (2, 3, 2), strides=(1, 2, 2)), VOLUME),
    "conv3d_transpose_same": (lambda L: L.Conv3DTranspose(2, 3, strides=2, padding="same",
                                                          activation="tanh"), VOLUME),
    "conv3d_transpose_output_padding": (lambda L: L.Conv3DTranspose(2, 3, strides=2, output_padding=1), VOLUME),
    "separable_conv1d": (lambda L: L.SeparableConv1D(4, 3, depth_multiplier=2), (2, 9, 3)),
    "separable_conv1d_same_strided": (lambda L: L.SeparableConv1D(3, 2, strides=2, padding="same",
                                                                  activation="relu"), (2, 9, 3)),
    "separable_conv1d_dilated": (lambda L: L.SeparableConv1D(3, 3, dilation_rate=2), (2, 9, 3)),
    "locally_connected1d": (lambda L: L.LocallyConnected1D(4, 3, strides=2, activation="tanh"), (2, 9, 3)),
    "locally_connected1d_nobias": (lambda L: L.LocallyConnected1D(2, 2, use_bias=False), (2, 5, 3)),
    "locally_connected2d": (lambda L: L.LocallyConnected2D(3, (2, 3), strides=(2, 1)), (2, 6, 5, 2)),
    "locally_connected2d_square": (lambda L: L.LocallyConnected2D(2, 2, strides=2, activation="relu"),
                                   (2, 4, 4, 3)),
}


@pytest.mark.parametrize("name", sorted(SIMPLE))
def test_layer_values_shapes_and_gradients(name):
    make, *shapes = SIMPLE[name]
    _compare(*_layer_case(make, *shapes))


# [query, value, key] with value's features unlike the query's: tf_keras's compute_output_shape
# gives the query's shape, the call's output has the value's features (collflow gives the latter)
_OWN_SHAPE = ("additive_noscale_key", "dot_key")


@pytest.mark.parametrize("name", sorted(SIMPLE) + sorted(DOT) + sorted(n for n in ATTENTION if n not in _OWN_SHAPE))
def test_compute_output_shape_matches(name):
    make, *shapes = ({**SIMPLE, **DOT, **ATTENTION})[name]
    arg = [(None,) + s[1:] for s in shapes]
    arg = arg if len(arg) > 1 else arg[0]
    with tft.Graph().as_default():
        want = make(tft.keras.layers).compute_output_shape(arg)
    with cft.Graph().as_default():
        got = make(cft.keras.layers).compute_output_shape(arg)
    assert tuple(got.as_list()) == tuple(tensorflow.TensorShape(want).as_list())


@pytest.mark.parametrize("name", _OWN_SHAPE)
def test_attention_compute_output_shape_is_the_calls(name):
    make, *shapes = ATTENTION[name]
    with cft.Graph().as_default():
        la = make(cft.keras.layers)
        got = la.compute_output_shape([(None,) + s[1:] for s in shapes])
        out = la([cft.placeholder(cft.float32, (None,) + s[1:]) for s in shapes])
    assert got.as_list() == out.shape.as_list() == [None, shapes[0][1], shapes[1][2]]


# -- tf.layers (TF1's) ---------------------------------------------------------------------------

TF_LAYERS = {
    "Conv2DTranspose": (lambda tl: tl.Conv2DTranspose(3, (2, 3), strides=(2, 1)), (2, 4, 5, 2)),
    "Conv2DTranspose_same": (lambda tl: tl.Conv2DTranspose(2, 3, strides=2, padding="same",
                                                           activation="relu"), (2, 4, 5, 2)),
    "Conv3D": (lambda tl: tl.Conv3D(3, (2, 2, 3), strides=(1, 2, 1)), VOLUME),
    "Conv3D_same": (lambda tl: tl.Conv3D(2, 3, padding="same", use_bias=False), VOLUME),
    "Conv3DTranspose": (lambda tl: tl.Conv3DTranspose(3, (2, 3, 2), strides=(1, 2, 2)), VOLUME),
    "Conv3DTranspose_same": (lambda tl: tl.Conv3DTranspose(2, 3, strides=2, padding="same"), VOLUME),
    "MaxPooling3D": (lambda tl: tl.MaxPooling3D(2, 1), VOLUME),
    "AveragePooling3D": (lambda tl: tl.AveragePooling3D((2, 2, 1), (2, 1, 1), padding="same"), VOLUME),
}


class _ActivationByName:
    """tf.layers with activation="relu" given as that library's tf.nn.relu (TF1's tf.layers take a callable)."""

    def __init__(self, tf):
        self._tf = tf

    def __getattr__(self, name):
        cls = getattr(self._tf.layers, name)

        def make(*args, **kwargs):
            if isinstance(kwargs.get("activation"), str):
                kwargs["activation"] = getattr(self._tf.nn, kwargs["activation"])
            return cls(*args, **kwargs)
        return make


@pytest.mark.parametrize("name", sorted(TF_LAYERS))
def test_tf_layers_classes(name):
    make, shape = TF_LAYERS[name]

    def build(tf, phs):
        la = make(_ActivationByName(tf))
        return la(phs[0]), [la]
    _compare(build, [_r(*shape)])


def test_tf_layers_conv3d_transpose_function():
    def build(tf, phs):
        y = tf.layers.conv3d_transpose(phs[0], 2, (3, 2, 2), strides=(2, 1, 2), padding="same", name="up")
        z = tf.layers.conv3d_transpose(y, 1, 2, name="up2", use_bias=False)

        class _Vars:
            weights = tf.global_variables()
        return z, [_Vars]
    _compare(build, [_r(*VOLUME)])


def test_tf_layers_inputspec_names():
    for name in ("InputSpec", "Conv2DTranspose", "Conv3D", "Conv3DTranspose", "MaxPooling3D", "AveragePooling3D",
                 "conv3d_transpose"):
        assert hasattr(cft.layers, name) and hasattr(tft.layers, name)
    spec = cft.layers.InputSpec(ndim=4, axes={-1: 3})
    assert (spec.ndim, spec.axes) == (4, {-1: 3})
    assert cft.keras.layers.InputSpec is cft.layers.InputSpec


# -- models: weights files across the libraries ----------------------------------------------------

def _model(tf):
    L = tf.keras.layers
    q, v = L.Input((3, 4)), L.Input((5, 4))
    a = L.AdditiveAttention()([q, v])
    b = L.Attention(use_scale=True)([q, v])
    d = L.Dot(axes=(2, 2))([a, b])
    s = L.SeparableConv1D(2, 2)(L.LocallyConnected1D(3, 2)(v))
    x = L.Concatenate()([L.Flatten()(d), L.Flatten()(s)])
    return tf.keras.Model([q, v], L.Dense(2)(x))


def test_model_weights_file_loads_in_either_library(tmp_path):
    xs = [_r(2, 3, 4), _r(2, 5, 4, seed=1)]
    path = str(tmp_path / "w.h5")
    with tft.Graph().as_default():
        m = _model(tft)
        m.save_weights(path)
        want = m.predict(xs)
    tft.keras.backend.clear_session()
    with cft.Graph().as_default():
        m = _model(cft)
        m.load_weights(path)
        np.testing.assert_allclose(m.predict(xs), want, rtol=1e-4, atol=1e-5)
        path2 = str(tmp_path / "w2.h5")
        m.save_weights(path2)
    with tft.Graph().as_default():
        m = _model(tft)
        m.load_weights(path2)
        np.testing.assert_allclose(m.predict(xs), want, rtol=1e-4, atol=1e-5)
    tft.keras.backend.clear_session()


def _volume_model(tf):
    L = tf.keras.layers
    x = L.Input(VOLUME[1:])
    y = L.Conv3DTranspose(2, 2, strides=(1, 2, 1))(L.ZeroPadding3D(1)(x))
    y = L.UpSampling3D((1, 1, 2))(L.Cropping3D(((1, 1), (0, 1), (1, 0)))(y))
    y = L.GlobalMaxPooling3D()(L.ThresholdedReLU(0.1)(y))
    z = L.LocallyConnected2D(2, 2)(L.Reshape((4, 5, 6))(x))
    return tf.keras.Model(x, L.Concatenate()([y, L.Flatten()(z)]))


def test_saved_model_file_loads_in_either_library(tmp_path):
    xs = _r(*VOLUME)
    path = str(tmp_path / "m.h5")
    with tft.Graph().as_default():
        m = _volume_model(tft)
        m.save(path)
        want = m.predict(xs)
    tft.keras.backend.clear_session()
    with cft.Graph().as_default():
        m = cft.keras.models.load_model(path)
        np.testing.assert_allclose(m.predict(xs), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("build", [_model, _volume_model])
def test_collflow_saved_model_loads_in_tf_keras(build, tmp_path):
    xs = [_r(2, 3, 4), _r(2, 5, 4, seed=1)] if build is _model else _r(*VOLUME)
    path = str(tmp_path / "m.h5")
    with cft.Graph().as_default():
        m = build(cft)
        m.save(path)
        want = m.predict(xs)
    with tft.Graph().as_default():
        m = tft.keras.models.load_model(path)
        np.testing.assert_allclose(m.predict(xs), want, rtol=1e-4, atol=1e-5)
    tft.keras.backend.clear_session()


# -- tf_keras 2.x-only layers (optional in TF 1.15) ----------------------------------------------

V2 = {
    "identity": (lambda L: L.Identity(), (2, 3, 4)),
    "rescaling": (lambda L: L.Rescaling(0.5, offset=-1.0), (2, 3, 4)),
    "center_crop": (lambda L: L.CenterCrop(3, 2), (2, 6, 5, 2)),
    "resizing_bilinear": (lambda L: L.Resizing(5, 7), (2, 4, 3, 2)),
    "resizing_bilinear_down": (lambda L: L.Resizing(3, 2), (2, 7, 5, 2)),
    "resizing_nearest": (lambda L: L.Resizing(6, 5, interpolation="nearest"), (2, 4, 3, 2)),
    "normalization_given": (lambda L: L.Normalization(mean=[0.5, -1.0, 0.0, 2.0], variance=[1.0, 4.0, 0.25, 9.0]),
                            (2, 3, 4)),
    "normalization_invert": (lambda L: L.Normalization(axis=1, mean=[1.0, 2.0, 3.0], variance=[2.0, 3.0, 4.0],
                                                       invert=True), (2, 3, 4)),
    "conv1d_transpose": (lambda L: L.Conv1DTranspose(3, 3, strides=2), (2, 5, 4)),
    "conv1d_transpose_same": (lambda L: L.Conv1DTranspose(2, 4, strides=3, padding="same",
                                                          activation="tanh"), (2, 5, 4)),
    "conv1d_transpose_output_padding": (lambda L: L.Conv1DTranspose(2, 3, strides=2, output_padding=1), (2, 5, 4)),
    "depthwise_conv1d": (lambda L: L.DepthwiseConv1D(3, depth_multiplier=2), (2, 7, 3)),
    "depthwise_conv1d_strided_same": (lambda L: L.DepthwiseConv1D(2, strides=2, padding="same"), (2, 7, 3)),
    "conv1d_transpose_channels_first": (lambda L: L.Conv1DTranspose(3, 3, strides=2, padding="same",
                                                                    data_format="channels_first"), (2, 4, 5)),
    "depthwise_conv1d_channels_first": (lambda L: L.DepthwiseConv1D(3, depth_multiplier=2, dilation_rate=2,
                                                                    data_format="channels_first"), (2, 3, 9)),
    "einsum_dense": (lambda L: L.EinsumDense("ab,bc->ac", 4, bias_axes="c", activation="relu"), (3, 5)),
    "einsum_dense_3d": (lambda L: L.EinsumDense("abc,cde->abde", (None, 2, 3), bias_axes="de"), (2, 4, 5)),
    "einsum_dense_bias_gap": (lambda L: L.EinsumDense("abc,cd->abd", (4, 3), bias_axes="b"), (2, 4, 5)),
}


@pytest.mark.parametrize("name", sorted(V2))
def test_v2_layers_values_and_gradients(name):
    make, *shapes = V2[name]
    _compare(*_layer_case(make, *shapes))


@pytest.mark.parametrize("kwargs,mask,key,causal", [
    ({}, False, False, False),
    ({"value_dim": 2, "output_shape": 5}, False, True, False),
    ({"use_bias": False}, True, False, True),
    ({}, False, False, True),
])
def test_multi_head_attention(kwargs, mask, key, causal):
    inputs = [_r(2, 3, 4), _r(2, 5, 6, seed=1)] + ([_r(2, 5, 3, seed=2)] if key else [])
    if mask:
        inputs.append(np.random.default_rng(4).uniform(size=(2, 3, 5)) > 0.3)

    def build(tf, phs):
        la = tf.keras.layers.MultiHeadAttention(2, 3, **kwargs)
        out = la(phs[0], phs[1], key=phs[2] if key else None, attention_mask=phs[-1] if mask else None,
                 use_causal_mask=causal)
        return out, [la]
    _compare(build, inputs)


def _int_run(tf, make, values, dtype):
    with tf.Graph().as_default():
        p = tf.placeholder(dtype, values.shape)
        y = make(tf.keras.layers)(p)
        with tf.Session() as s:
            return s.run(y, {p: values}), tuple(y.shape.as_list())


@pytest.mark.parametrize("make,values,dtype", [
    (lambda L: L.CategoryEncoding(6, output_mode="multi_hot"), np.array([[0, 2, 2], [5, 1, 0]]), "int64"),
    (lambda L: L.CategoryEncoding(6, output_mode="count"), np.array([[0, 2, 2], [5, 1, 0]]), "int64"),
    (lambda L: L.CategoryEncoding(4, output_mode="one_hot"), np.array([3, 0, 1]), "int32"),
    (lambda L: L.Hashing(7), np.array([[12, 3], [-4, 99]]), "int64"),
    (lambda L: L.Hashing(5), np.array([[b"cat", b"dog"], [b"", b"mouse"]]), "string"),
    (lambda L: L.Hashing(5, mask_value=b"dog"), np.array([[b"cat", b"dog"], [b"", b"mouse"]]), "string"),
    (lambda L: L.Discretization(bin_boundaries=[0.0, 1.0, 2.5]), np.array([[-1.0, 0.0, 0.5], [1.0, 2.5, 9.0]]),
     "float32"),
])
def test_preprocessing_layers_match(make, values, dtype):
    want = _int_run(tft, make, values, getattr(tft, dtype))
    got = _int_run(cft, make, values, getattr(cft, dtype))
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]
    assert got[0].dtype == want[0].dtype


def test_normalization_weights_match():
    # tf_keras's adapt needs TF2's eager mode: the unadapted weights' names and shapes are compared
    # here, adapt's values by hand in tests/test_keras_other_layers.py
    def run(tf):
        with tf.Graph().as_default():
            la = tf.keras.layers.Normalization(axis=(1, 2))
            la(tf.placeholder(tf.float32, (None, 3, 4)))
            return [(w.op.name, tuple(w.shape.as_list()), w.trainable) for w in la.weights]
    want = run(tft)
    tft.keras.backend.clear_session()
    assert run(cft) == want


def test_dense_features_matches():
    emb = np.random.default_rng(2).uniform(-1, 1, (5, 3)).astype(np.float32)

    def run(tf):
        fc = tf.feature_column
        cols = [fc.numeric_column("a", shape=(2,)), fc.embedding_column(fc.categorical_column_with_identity("b", 5), 3),
                fc.indicator_column(fc.categorical_column_with_identity("c", 4))]
        with tf.Graph().as_default():
            feats = {"a": tf.constant([[1.0, 2.0], [3.0, 4.0]]), "b": tf.constant([[1], [4]], tf.int64),
                     "c": tf.constant([[2], [0]], tf.int64)}
            df = tf.keras.layers.DenseFeatures(cols)
            out = df(feats)
            grad = tf.gradients(tf.reduce_sum(out * out), df.weights)[0]
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                df.weights[0].load(emb, s)
                o, gr = s.run([out, tf.convert_to_tensor(grad)])
            return o, gr, [(v.op.name, v.shape.as_list()) for v in df.weights], out.shape.as_list()
    want, got = run(tft), run(cft)
    for a, b in zip(got[:2], want[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert got[2:] == want[2:]


def _masked_attention_model(tf):
    L = tf.keras.layers
    qi, vi = L.Input((4,)), L.Input((5,))
    e = L.Embedding(7, 3, mask_zero=True)
    q, v = e(qi), e(vi)
    a = L.Attention(use_scale=True)([q, v])
    b = L.AdditiveAttention()([q, v])
    m = L.MultiHeadAttention(2, 2)(q, v)
    x = L.Concatenate()([a, b, m])
    return tf.keras.Model([qi, vi], L.Dense(1)(L.GlobalAveragePooling1D()(x)))


def test_masked_attention_model_predictions_and_fit_match():
    ids_q = np.array([[1, 2, 0, 0], [3, 4, 5, 0], [6, 1, 2, 3]], np.float32)
    ids_v = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0], [6, 6, 1, 2, 3]], np.float32)
    y = np.array([[0.5], [-1.0], [2.0]], np.float32)

    def run(tf, weights=None):
        with tf.Graph().as_default():
            m = _masked_attention_model(tf)
            if weights is not None:
                m.set_weights(weights)
            w0 = m.get_weights()
            m.compile(tf.keras.optimizers.SGD(0.1), "mse")
            pred = m.predict([ids_q, ids_v])
            hist = m.fit([ids_q, ids_v], y, epochs=3, batch_size=3, shuffle=False, verbose=0).history["loss"]
            return w0, pred, hist, [w.name for w in m.weights]
    w0, want_pred, want_hist, want_names = run(tft)
    tft.keras.backend.clear_session()
    _, pred, hist, names = run(cft, w0)
    np.testing.assert_allclose(pred, want_pred, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(hist, want_hist, rtol=1e-4, atol=1e-5)
    assert names == want_names


@pytest.mark.parametrize("build", [_model, _volume_model])
def test_fit_histories_match(build):
    xs = [_r(4, 3, 4), _r(4, 5, 4, seed=1)] if build is _model else _r(4, *VOLUME[1:])
    y = _r(4, 2, seed=5) if build is _model else None

    def run(tf, weights=None):
        with tf.Graph().as_default():
            m = build(tf)
            if weights is not None:
                m.set_weights(weights)
            w0 = m.get_weights()
            target = y if y is not None else np.zeros((4,) + tuple(m.output.shape.as_list()[1:]), np.float32)
            m.compile(tf.keras.optimizers.SGD(0.05), "mse")
            return w0, m.fit(xs, target, epochs=3, batch_size=2, shuffle=False, verbose=0).history["loss"]
    w0, want = run(tft)
    tft.keras.backend.clear_session()
    _, got = run(cft, w0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
