"""tf.contrib.image's projective transforms against TensorFlow's ImageProjectiveTransformV2
kernel and gradient (TF 2.x keeps the op contrib.image built on; its Python wrappers went to
Addons): random transforms, rotations and translations of images of every dtype the op
takes, NEAREST and BILINEAR, other output sizes, points at infinity, and the gradient TF
registers for the op.  TF's side builds the transform vectors with TF 1.15 contrib's
formulas.  Skipped cleanly without TensorFlow."""
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


def _tf_transform(images, transforms, interpolation, output_shape=None):
    x = tft.convert_to_tensor(images)
    t = tft.convert_to_tensor(transforms, tft.float32)
    t = t[None] if t.shape.rank == 1 else t
    shape = tft.shape(x)[1:3] if output_shape is None else tft.constant(output_shape, tft.int32)
    return tensorflow.raw_ops.ImageProjectiveTransformV2(images=x, transforms=t, output_shape=shape,
                                                          interpolation=interpolation, fill_mode="CONSTANT")


def _tf_rotation(angles, h, w):
    a = tft.constant(np.atleast_1d(angles), tft.float32)
    c, s = tft.cos(a), tft.sin(a)
    xo = ((w - 1) - (c * (w - 1) - s * (h - 1))) / 2.0
    yo = ((h - 1) - (s * (w - 1) + c * (h - 1))) / 2.0
    z = tft.zeros_like(a)
    return tft.stack([c, -s, xo, s, c, yo, z, z], axis=1)


def _case(seed):
    rng = np.random.RandomState(seed)
    dtype = [np.float32, np.float64, np.uint8, np.int32, np.float16][seed % 5]
    n, h, w, c = rng.randint(1, 3), rng.randint(3, 9), rng.randint(3, 9), rng.randint(1, 3)
    x = (rng.rand(n, h, w, c) * 200).astype(dtype)
    kind = seed % 4
    if kind == 0:
        t = rng.uniform(-1, 1, (n, 8)).astype(np.float32)
        t[:, 6:] *= 0.1
        t[:, [2, 5]] *= 4
    elif kind == 1:
        t = None  # a rotation
    elif kind == 2:
        t = np.array([1, 0, -rng.randint(-3, 4), 0, 1, -rng.randint(-3, 4), 0, 0], np.float32)  # integer shift
    else:
        t = np.array([1, 0, 0.5, 0, 1, -0.5, 0, 0], np.float32)  # half-pixel shift: rounding ties
    out = None if seed % 3 else [h + rng.randint(-2, 3), w + rng.randint(-2, 3)]
    interp = "BILINEAR" if seed % 2 else "NEAREST"
    angles = rng.uniform(-3.2, 3.2, n).astype(np.float32)
    return x, t, angles, out, interp


@pytest.mark.parametrize("seed", range(40))
def test_transform_matches_tensorflow(seed):
    x, t, angles, out_shape, interp = _case(seed)
    n, h, w = x.shape[:3]
    with tft.Graph().as_default():
        tt = _tf_rotation(angles, h, w) if t is None else t
        want = tft.Session().run(_tf_transform(x, tt, interp, out_shape if t is not None else None))
    with cft.Graph().as_default():
        if t is None:
            y = cft.contrib.image.rotate(x, angles, interpolation=interp)
        else:
            y = cft.contrib.image.transform(x, t, interpolation=interp, output_shape=out_shape)
        got = cft.Session().run(y)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 2e-3 if x.dtype == np.float16 else 1e-5
    if x.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("interp", ["NEAREST", "BILINEAR"])
def test_gradient_is_tensorflows(interp):
    rng = np.random.RandomState(1)
    x = rng.rand(2, 5, 6, 2).astype(np.float32)
    t = np.array([[0.9, -0.2, 0.7, 0.1, 1.1, -0.3, 0.01, -0.02], [1, 0, 1.5, 0, 1, -0.5, 0, 0]], np.float32)
    wts = rng.rand(2, 4, 7, 2).astype(np.float32)
    res = []
    for tf, fn in ((tft, lambda xx: _tf_transform(xx, t, interp, [4, 7])),
                   (cft, lambda xx: cft.contrib.image.transform(xx, t, interp, output_shape=[4, 7]))):
        with tf.Graph().as_default():
            xx = tf.constant(x)
            g = tf.gradients(tf.reduce_sum(fn(xx) * wts), xx)[0]
            res.append(tf.Session().run(g))
    np.testing.assert_allclose(res[1], res[0], rtol=1e-5, atol=1e-5)


def test_helpers_match_tf1_formulas():
    with cft.Graph().as_default():
        ci = cft.contrib.image
        a = ci.translations_to_projective_transforms([[2.0, -1.0]])
        b = ci.angles_to_projective_transforms(0.5, 4.0, 6.0)
        c = ci.compose_transforms(a, b)
        m = ci.flat_transforms_to_matrices(c)
        back = ci.matrices_to_flat_transforms(m)
        va, vb, vc, vback = cft.Session().run([a, b, c, back])
    np.testing.assert_allclose(va, [[1, 0, -2, 0, 1, 1, 0, 0]])
    cos, sin = np.cos(0.5), np.sin(0.5)
    np.testing.assert_allclose(vb, [[cos, -sin, (5 - (cos * 5 - sin * 3)) / 2, sin, cos, (3 - (sin * 5 + cos * 3)) / 2,
                                     0, 0]], rtol=1e-6)
    ma = np.append(va[0], 1).reshape(3, 3)
    mb = np.append(vb[0], 1).reshape(3, 3)
    np.testing.assert_allclose(vc[0], (ma @ mb).ravel()[:8] / (ma @ mb)[2, 2], rtol=1e-6)
    np.testing.assert_allclose(vback, vc, rtol=1e-6)
