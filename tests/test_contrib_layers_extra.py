"""contrib.layers' instance_norm, group_norm, 1-D/3-D convolutions and pools, maxout,
unit_norm, spatial_softmax, scale_gradient and friends (collflow/contrib/layers_extra.py)
without TensorFlow: NumPy references, names, errors and finite differences.
tests/tf1/test_vs_tensorflow_contrib_layers_extra.py compares them with tf_slim."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from gradcheck import Case, check_case

L = tf.contrib.layers
pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def _run(t, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(t, feed)


def test_instance_and_group_norm_match_numpy():
    x = np.random.RandomState(0).randn(2, 4, 5, 6)
    inorm = L.instance_norm(tf.constant(x), epsilon=1e-3)
    gnorm = L.group_norm(tf.constant(x), groups=3, epsilon=1e-3)
    a, b = _run([inorm, gnorm])
    m, v = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    np.testing.assert_allclose(a, (x - m) / np.sqrt(v + 1e-3), rtol=1e-10)
    xg = x.reshape(2, 4, 5, 3, 2)
    m, v = xg.mean((1, 2, 4), keepdims=True), xg.var((1, 2, 4), keepdims=True)
    np.testing.assert_allclose(b, ((xg - m) / np.sqrt(v + 1e-3)).reshape(x.shape), rtol=1e-10)
    assert [v.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)] == [
        "InstanceNorm/beta:0", "InstanceNorm/gamma:0", "GroupNorm/beta:0", "GroupNorm/gamma:0"]
    with pytest.raises(ValueError, match="not commensurate"):
        L.group_norm(tf.constant(x), groups=4)
    with pytest.raises(ValueError, match="mutually exclusive"):
        L.group_norm(tf.constant(x), groups=2, reduction_axes=(1, 3))
    with pytest.raises(ValueError, match="NCHW or NHWC"):
        L.instance_norm(tf.constant(x), data_format="NCW")


def test_group_norm_with_unknown_batch_and_spatial_sizes():
    x = tf.placeholder(tf.float32, [None, 3, 3, 4])
    y = L.group_norm(x, groups=2, activation_fn=tf.nn.relu)
    v = np.random.RandomState(1).randn(5, 3, 3, 4).astype(np.float32)
    assert _run(y, {x: v}).shape == (5, 3, 3, 4)


def test_convolutions_of_any_rank_are_the_nn_ops():
    rng = np.random.RandomState(2)
    x1, x3 = rng.randn(2, 7, 3).astype(np.float32), rng.randn(1, 4, 5, 5, 2).astype(np.float32)
    y1 = L.conv1d(tf.constant(x1), 4, 3, stride=2, activation_fn=None, scope="c1")
    y3 = L.conv3d(tf.constant(x3), 3, [2, 3, 3], padding="VALID", activation_fn=None)
    t3 = L.conv3d_transpose(tf.constant(x3), 2, 3, stride=2, activation_fn=None)
    assert [v.name for v in tf.trainable_variables()] == [
        "c1/weights:0", "c1/biases:0", "Conv/weights:0", "Conv/biases:0",
        "Conv3d_transpose/weights:0", "Conv3d_transpose/biases:0"]
    w1, w3, wt = (tf.trainable_variables()[i] for i in (0, 2, 4))
    ref1 = tf.nn.conv1d(tf.constant(x1), w1, 2, "SAME")
    ref3 = tf.nn.conv3d(tf.constant(x3), w3, [1] * 5, "VALID")
    reft = tf.nn.conv3d_transpose(tf.constant(x3), wt, [1, 8, 10, 10, 2], [1, 2, 2, 2, 1], "SAME")
    a, b, c, d, e, f = _run([y1, ref1, y3, ref3, t3, reft])
    np.testing.assert_allclose(a, b, rtol=1e-5)
    np.testing.assert_allclose(c, d, rtol=1e-5)
    np.testing.assert_allclose(e, f, rtol=1e-5)
    p = _run(L.max_pool3d(tf.constant(x3), 2, stride=[1, 2, 2]))
    want = np.array([[[[x3[0, d:d + 2, 2 * h:2 * h + 2, 2 * w:2 * w + 2].max((0, 1, 2)) for w in range(2)]
                       for h in range(2)] for d in range(3)]])
    np.testing.assert_array_equal(p, want)
    with pytest.raises(ValueError, match="rank 5, got 4"):
        L.conv3d(tf.zeros([1, 2, 2, 2]), 2, 2)


def test_maxout_unit_norm_spatial_softmax_match_numpy():
    rng = np.random.RandomState(3)
    x = rng.randn(2, 3, 4, 6)
    mo, un, ss = _run([L.maxout(tf.constant(x), 3), L.unit_norm(tf.constant(x), 3),
                       L.spatial_softmax(tf.constant(x.astype(np.float32)))])
    np.testing.assert_allclose(mo, x.reshape(2, 3, 4, 3, 2).max(-1))
    np.testing.assert_allclose(un, x / np.sqrt(1e-7 + (x * x).sum(3, keepdims=True)), rtol=1e-12)
    att = np.exp(x.transpose(0, 3, 1, 2).reshape(12, 12))
    att /= att.sum(1, keepdims=True)
    rows, cols = np.meshgrid(np.linspace(-1, 1, 3), np.linspace(-1, 1, 4), indexing="ij")
    want = np.stack([att @ rows.ravel(), att @ cols.ravel()], 1).reshape(2, 12)
    np.testing.assert_allclose(ss, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="not a multiple"):
        L.maxout(tf.constant(x), 4)


def test_scale_gradient_and_sequence_reshapes():
    x = tf.constant([[1.0, -2.0]])
    g = tf.gradients(tf.reduce_sum(L.scale_gradient(x, 0.25) * 3.0), x)[0]
    img = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    seq = L.images_to_sequence(tf.constant(img))
    back = L.sequence_to_images(seq, 3)
    gv, sv, bv = _run([g, seq, back])
    np.testing.assert_allclose(gv, [[0.75, 0.75]])
    np.testing.assert_array_equal(sv, img.transpose(2, 0, 1, 3).reshape(4, 6, 5))
    np.testing.assert_array_equal(bv, img)


@pytest.mark.parametrize("case", [
    Case("Rsqrt", lambda x: L.group_norm(x, groups=2, reduction_axes=(-2,)), [(2, 3, 4)], id="group_norm"),
    Case("Mean", lambda x: L.instance_norm(x, data_format="NCHW"), [(2, 2, 3, 3)], id="instance_norm"),
    Case("Softmax", lambda x: L.spatial_softmax(x), [(2, 3, 3, 2)], id="spatial_softmax"),
    Case("Max", lambda x: L.maxout(x, 2), [(3, 4)], id="maxout"),
    Case("MatMul", lambda x: L.conv3d_transpose(x, 2, 2, stride=2, activation_fn=tf.tanh),
         [(1, 2, 2, 2, 2)], id="conv3d_transpose"),
], ids=str)
def test_gradients_match_finite_differences(case):
    check_case(case)
