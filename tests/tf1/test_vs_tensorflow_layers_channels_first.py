"""Differential test against TensorFlow 1.x: tf.layers with data_format="channels_first".

Each convolution and pooling layer of tf.layers (1-, 2- and 3-d, transposed and separable)
built channels-first in both libraries with the same constant kernels and biases: the
outputs, the gradients of the input and of every variable, and the variables' names and
shapes must agree.  Skipped cleanly without TensorFlow.
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
pytestmark = [pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning"), pytest.mark.timeout(600)]


def _init(tf, shape, seed):
    return tf.constant_initializer(np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32))


CASES = {
    "conv2d": ((2, 3, 7, 6), lambda tf, x: tf.layers.conv2d(
        x, 4, (3, 2), strides=(2, 1), padding="same", data_format="channels_first", activation=tf.nn.relu,
        kernel_initializer=_init(tf, (3, 2, 3, 4), 1), bias_initializer=_init(tf, (4,), 2))),
    "conv2d_dilated": ((1, 2, 8, 8), lambda tf, x: tf.layers.Conv2D(
        3, 3, dilation_rate=2, data_format="channels_first", kernel_initializer=_init(tf, (3, 3, 2, 3), 3),
        bias_initializer=_init(tf, (3,), 4))(x)),
    "conv1d": ((2, 3, 9), lambda tf, x: tf.layers.conv1d(
        x, 2, 3, strides=2, padding="same", data_format="channels_first",
        kernel_initializer=_init(tf, (3, 3, 2), 5), bias_initializer=_init(tf, (2,), 6))),
    "conv2d_transpose": ((2, 3, 4, 5), lambda tf, x: tf.layers.conv2d_transpose(
        x, 2, 3, strides=2, padding="same", data_format="channels_first",
        kernel_initializer=_init(tf, (3, 3, 2, 3), 7), bias_initializer=_init(tf, (2,), 8))),
    "separable_conv2d": ((1, 3, 6, 6), lambda tf, x: tf.layers.separable_conv2d(
        x, 4, 3, depth_multiplier=2, data_format="channels_first",
        depthwise_initializer=_init(tf, (3, 3, 3, 2), 9), pointwise_initializer=_init(tf, (1, 1, 6, 4), 10),
        bias_initializer=_init(tf, (4,), 11))),
    "separable_conv1d": ((2, 2, 7), lambda tf, x: tf.layers.separable_conv1d(
        x, 3, 2, data_format="channels_first", depthwise_initializer=_init(tf, (2, 2, 1), 12),
        pointwise_initializer=_init(tf, (1, 2, 3), 13), bias_initializer=_init(tf, (3,), 14))),
    "conv3d": ((1, 2, 4, 5, 4), lambda tf, x: tf.layers.conv3d(
        x, 3, 2, padding="same", data_format="channels_first", kernel_initializer=_init(tf, (2, 2, 2, 2, 3), 15),
        bias_initializer=_init(tf, (3,), 16))),
    "conv3d_transpose": ((1, 2, 3, 3, 2), lambda tf, x: tf.layers.conv3d_transpose(
        x, 2, 2, strides=(2, 1, 2), padding="same", data_format="channels_first",
        kernel_initializer=_init(tf, (2, 2, 2, 2, 2), 17), bias_initializer=_init(tf, (2,), 18))),
    "max_pooling2d": ((2, 3, 7, 6), lambda tf, x: tf.layers.max_pooling2d(x, 3, 2, padding="same",
                                                                          data_format="channels_first")),
    "average_pooling2d": ((2, 3, 7, 6), lambda tf, x: tf.layers.AveragePooling2D(2, 1, data_format="channels_first")(x)),
    "max_pooling1d": ((2, 3, 9), lambda tf, x: tf.layers.max_pooling1d(x, 2, 2, data_format="channels_first")),
    "average_pooling1d": ((2, 3, 9), lambda tf, x: tf.layers.average_pooling1d(x, 3, 2, padding="same",
                                                                               data_format="channels_first")),
    "max_pooling3d": ((1, 2, 4, 5, 4), lambda tf, x: tf.layers.max_pooling3d(x, 2, 2, data_format="channels_first")),
    "average_pooling3d": ((1, 2, 4, 5, 4), lambda tf, x: tf.layers.average_pooling3d(x, 2, 1, padding="same",
                                                                                     data_format="channels_first")),
}


def _run(tf, shape, build):
    x0 = np.random.default_rng(0).uniform(-2, 2, shape).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape)
        y = build(tf, x)
        w = np.random.default_rng(1).uniform(0.5, 1.5, y.shape.as_list()).astype(np.float32)
        loss = tf.reduce_sum(y * w)
        vs = tf.trainable_variables()
        grads = tf.gradients(loss, [x] + vs)
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            out = s.run([y] + grads, {x: x0})
        return [(v.name, v.shape.as_list()) for v in vs], out


@pytest.mark.parametrize("name", sorted(CASES))
def test_channels_first_layers_match_tensorflow(name):
    shape, build = CASES[name]
    want_vars, want = _run(tft, shape, build)
    got_vars, got = _run(cft, shape, build)
    assert got_vars == want_vars
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape, (name, k)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{name}: fetch {k}")
