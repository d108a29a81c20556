"""tf.contrib.image's projective transforms (graph/ops/image_transform_ops.py) without
TensorFlow: rotations by quarter turns, integer and half-pixel shifts, points at infinity,
integer images, the rank 2/3/4 forms, and TF's inverse-transform gradient.
tests/tf1/test_vs_tensorflow_contrib_image.py compares the op with TF's kernel."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

ci = tf.contrib.image
pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def _run(t):
    with tf.Session() as s:
        return s.run(t)


def test_rotations_and_shifts():
    x = np.arange(25, dtype=np.float32).reshape(5, 5)
    quarter = _run(ci.rotate(x, np.pi / 2))
    np.testing.assert_allclose(quarter, np.rot90(x), atol=1e-5)  # counterclockwise
    shifted = _run(ci.translate(x[None, :, :, None], [2.0, -1.0]))[0, :, :, 0]
    want = np.zeros_like(x)
    want[:4, 2:] = x[1:, :3]
    np.testing.assert_array_equal(shifted, want)
    half = _run(ci.translate(x[:, :, None], [0.5, 0.0], interpolation="BILINEAR"))[:, :, 0]
    np.testing.assert_allclose(half[:, 1:], (x[:, :-1] + x[:, 1:]) / 2)
    np.testing.assert_allclose(half[:, 0], x[:, 0] / 2)  # the missing neighbour reads 0
    ties = _run(ci.translate(x, [0.5, 0.0]))  # x - 0.5 rounds half away from zero: 0.5 -> 1, -0.5 -> -1
    np.testing.assert_array_equal(ties[:, 1:], x[:, 1:])
    np.testing.assert_array_equal(ties[:, 0], 0)


def test_integer_images_output_shape_and_infinity():
    img = np.full((1, 2, 2, 1), 255, np.uint8)
    out = _run(ci.transform(img, [1, 0, 0.5, 0, 1, 0, 0, 0], "BILINEAR", output_shape=[2, 3]))
    assert out.dtype == np.uint8 and out.shape == (1, 2, 3, 1)
    np.testing.assert_array_equal(out[0, :, :, 0], [[255, 127, 0], [255, 127, 0]])  # 127.5 truncates
    # c0 x + 1 == 0 at x == 1: that column reads 0
    inf = _run(ci.transform(np.ones((3, 3), np.float32), [1, 0, 0, 0, 1, 0, -1, 0]))
    np.testing.assert_array_equal(inf[:, 1], 0)
    with pytest.raises(TypeError, match="rank between 2 and 4"):
        ci.transform(np.ones(3, np.float32), [1, 0, 0, 0, 1, 0, 0, 0])
    with pytest.raises(ValueError, match="interpolation"):
        ci.transform(np.ones((2, 2), np.float32), [1, 0, 0, 0, 1, 0, 0, 0], "CUBIC")


def test_gradient_transforms_back_by_the_inverse():
    x = tf.constant(np.random.RandomState(0).rand(1, 4, 4, 1).astype(np.float32))
    w = np.random.RandomState(1).rand(1, 4, 4, 1).astype(np.float32)
    y = ci.translate(x, [1.0, 0.0])
    g = _run(tf.gradients(tf.reduce_sum(y * w), x)[0])
    want = np.zeros_like(w)
    want[:, :, :3] = w[:, :, 1:]  # the gradient shifted back; the last column reads 0
    np.testing.assert_allclose(g, want, rtol=1e-6)
