"""Differential test against tf_keras: Keras layers with data_format="channels_first".

Each convolution (locally connected too), pooling, padding, cropping, up-sampling and
spatial-dropout layer that
takes a data format, built channels-first in both libraries with the same weights (assigned
in the session): the outputs and the input gradients must agree.  (MaxPooling3D and
AveragePooling3D once dropped the data format and pooled the channels.)  Skipped cleanly
without TensorFlow and tf_keras.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
tf_keras = pytest.importorskip("tf_keras", reason="tf_keras is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(600)]

LAYERS = [
    ("Conv1D", (5, 9), dict(filters=3, kernel_size=2, strides=2, padding="same")),
    ("Conv2D", (3, 7, 6), dict(filters=4, kernel_size=(3, 2), padding="same")),
    ("Conv2D", (3, 7, 6), dict(filters=2, kernel_size=2, strides=2, dilation_rate=1)),
    ("Conv3D", (2, 4, 5, 4), dict(filters=3, kernel_size=2, padding="same")),
    ("Conv2DTranspose", (3, 4, 5), dict(filters=2, kernel_size=3, strides=2, padding="same")),
    ("Conv3DTranspose", (2, 3, 3, 2), dict(filters=2, kernel_size=2, strides=2)),
    ("SeparableConv2D", (3, 6, 6), dict(filters=4, kernel_size=3, depth_multiplier=2)),
    ("SeparableConv1D", (3, 8), dict(filters=2, kernel_size=3, padding="same")),
    ("DepthwiseConv2D", (3, 6, 5), dict(kernel_size=2, depth_multiplier=2)),
    ("MaxPooling1D", (3, 8), dict(pool_size=2)),
    ("AveragePooling1D", (3, 9), dict(pool_size=3, strides=2, padding="same")),
    ("MaxPooling2D", (3, 7, 6), dict(pool_size=2, padding="same")),
    ("AveragePooling2D", (3, 7, 6), dict(pool_size=(2, 3))),
    ("MaxPooling3D", (2, 4, 5, 4), dict(pool_size=2)),
    ("AveragePooling3D", (2, 4, 5, 4), dict(pool_size=2, padding="same")),
    ("GlobalAveragePooling1D", (3, 8), {}),
    ("GlobalMaxPooling2D", (3, 5, 4), {}),
    ("GlobalAveragePooling3D", (2, 3, 4, 3), {}),
    ("UpSampling2D", (3, 4, 3), dict(size=(2, 3))),
    ("UpSampling3D", (2, 2, 3, 2), dict(size=2)),
    ("ZeroPadding2D", (3, 4, 3), dict(padding=((1, 2), (0, 1)))),
    ("ZeroPadding3D", (2, 2, 3, 2), dict(padding=1)),
    ("Cropping2D", (3, 6, 5), dict(cropping=((1, 2), (1, 0)))),
    ("Cropping3D", (2, 4, 5, 4), dict(cropping=1)),
    ("Flatten", (3, 4, 2), {}),
    ("LocallyConnected2D", (2, 5, 4), dict(filters=3, kernel_size=2)),
    ("LocallyConnected2D", (3, 6, 5), dict(filters=2, kernel_size=(2, 3), strides=(2, 1))),
    ("LocallyConnected1D", (2, 7), dict(filters=3, kernel_size=3, strides=2)),
    ("SpatialDropout2D", (3, 4, 4), dict(rate=0.5)),
    ("SpatialDropout3D", (2, 3, 4, 4), dict(rate=0.5)),
]


def _run(tf, keras, name, shape, kwargs, weights):
    g = tf.Graph()
    with g.as_default():
        x = keras.Input(shape)
        layer = getattr(keras.layers, name)(data_format="channels_first", **kwargs)
        y = layer(x)
        w = np.random.default_rng(8).uniform(0.5, 1.5, (2,) + tuple(y.shape.as_list()[1:])).astype(np.float32)
        gx = tf.gradients(tf.reduce_sum(y * w), x)[0]
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            if weights is None:
                weights = [np.random.default_rng(i).uniform(-1, 1, v.shape.as_list()).astype(np.float32)
                           for i, v in enumerate(layer.weights)]
            s.run([v.assign(a) for v, a in zip(layer.weights, weights)])
            xv = np.random.default_rng(9).uniform(-2, 2, (2,) + shape).astype(np.float32)
            return s.run([y, gx], {x: xv}), weights


@pytest.mark.parametrize("case", LAYERS, ids=[f"{c[0]}-{i}" for i, c in enumerate(LAYERS)])
def test_keras_channels_first_layers_match_tf_keras(case):
    name, shape, kwargs = case
    want, weights = _run(tft, tf_keras, name, shape, kwargs, None)
    got, _ = _run(cft, cft.keras, name, shape, kwargs, weights)
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape, (name, k, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{name}: fetch {k}")


def test_image_data_format_is_every_layers_default():
    # Keras reads image_data_format() when a layer is made with data_format=None (its 1-D
    # convolution and poolings default to channels_last instead)
    def shapes(tf, keras):
        keras.backend.set_image_data_format("channels_first")
        try:
            with tf.Graph().as_default():
                x1, x2, x3 = keras.Input((3, 8)), keras.Input((3, 8, 8)), keras.Input((3, 4, 4, 4))
                L = keras.layers
                # Keras's 1-D convolution and poolings default to channels_last, the rest to the global format
                return ([layer(x1).shape.as_list() for layer in (
                    L.Conv1D(2, 3), L.MaxPooling1D(), L.AveragePooling1D(), L.GlobalAveragePooling1D(),
                    L.GlobalMaxPooling1D(), L.SeparableConv1D(2, 3), L.LocallyConnected1D(2, 3))] +
                        [layer(x2).shape.as_list() for layer in (
                    L.Conv2D(4, 3), L.MaxPooling2D(), L.AveragePooling2D(), L.GlobalAveragePooling2D(),
                    L.ZeroPadding2D(1), L.Cropping2D(1), L.UpSampling2D(), L.Flatten(), L.SeparableConv2D(2, 3),
                    L.DepthwiseConv2D(3), L.Conv2DTranspose(2, 3), L.SpatialDropout2D(0.5))] +
                        [layer(x3).shape.as_list() for layer in (
                            L.Conv3D(2, 2), L.MaxPooling3D(), L.AveragePooling3D(), L.UpSampling3D(), L.Cropping3D(1),
                            L.ZeroPadding3D(1), L.GlobalMaxPooling3D(), L.Conv3DTranspose(2, 2))])
        finally:
            keras.backend.set_image_data_format("channels_last")
    assert shapes(cft, cft.keras) == shapes(tft, tf_keras)
