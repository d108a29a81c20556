"""tf.nn.max_pool_with_argmax (values, TF's index layout, gradient), conv1d_transpose and
batch_norm_with_global_normalization: by hand, by finite differences, against TF."""
import numpy as np
import pytest

import collflow.compat.v1 as cf
from gradcheck import Case, check_case
from tf_peer import run_in_both


def test_max_pool_with_argmax_by_hand():
    x = np.array([[1, 5, 2, 0], [3, 5, 1, 7], [0, 0, 9, 9], [2, 1, 9, 3]], np.float32).reshape(1, 4, 4, 1)
    x2 = np.concatenate([x, x * 2], axis=0)
    with cf.Graph().as_default():
        out, arg = cf.nn.max_pool_with_argmax(x2, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        _, argb = cf.nn.max_pool_with_argmax(x2, [1, 2, 2, 1], [1, 2, 2, 1], "VALID", include_batch_in_index=True)
        with cf.Session() as s:
            o, a, ab = s.run([out, arg, argb])
    np.testing.assert_array_equal(o[0, :, :, 0], [[5, 7], [2, 9]])
    np.testing.assert_array_equal(a[0, :, :, 0], [[1, 7], [12, 10]])     # the first maximum of each window
    np.testing.assert_array_equal(a[1], a[0])
    np.testing.assert_array_equal(ab[1], a[1] + 16)
    assert a.dtype == np.int64


def test_max_pool_with_argmax_gradient():
    rng = np.random.default_rng(0)
    check_case(Case("MaxPoolWithArgmax", lambda x: cf.nn.max_pool_with_argmax(x, [1, 3, 3, 1], [1, 2, 2, 1],
                                                                               "SAME")[0],
                    [(2, 5, 6, 3)], make_inputs=lambda r: [rng.permutation(180).reshape(2, 5, 6, 3) * 0.1]))


def test_conv1d_transpose_and_old_batch_norm():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 5, 3)).astype(np.float32)
    f = rng.normal(size=(3, 4, 3)).astype(np.float32)
    with cf.Graph().as_default():
        y = cf.nn.conv1d_transpose(x, f, [2, 10, 4], 2, "SAME")
        back = cf.nn.conv1d(cf.ones([2, 10, 4]), f, 2, "SAME")      # the adjoint pair
        bn = cf.nn.batch_norm_with_global_normalization(x, [0.5, 0, 1], [1.0, 4.0, 0.25], [0, 1, 0], [2.0, 1, 1],
                                                        1e-3, True)
        with cf.Session() as s:
            yv, bv, bnv = s.run([y, back, bn])
    assert yv.shape == (2, 10, 4)
    np.testing.assert_allclose(yv.sum(), (bv * x).sum(), rtol=1e-4)
    want = (x - [0.5, 0, 1]) / np.sqrt(np.array([1.0, 4.0, 0.25]) + 1e-3) * [2.0, 1, 1] + [0, 1, 0]
    np.testing.assert_allclose(bnv, want, rtol=1e-5)


@pytest.mark.parametrize("padding,stride,batch", [("VALID", 2, False), ("SAME", 2, False), ("SAME", 1, True)])
def test_same_as_tensorflow(padding, stride, batch):
    x = np.random.default_rng(2).normal(size=(2, 7, 6, 3)).astype(np.float32)

    def program(T):
        t = T.constant(x)
        out, arg = T.nn.max_pool_with_argmax(t, [1, 3, 3, 1], [1, stride, stride, 1], padding,
                                             include_batch_in_index=batch)
        return [out, arg, T.gradients(T.reduce_sum(out * out), t)[0],
                T.nn.conv1d_transpose(t[:, 0], T.constant(np.ones((3, 2, 3), np.float32)), [2, 12, 2], 2, "SAME")]
    ours, theirs = run_in_both(program)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_separable_conv1d_layer_matches_tensorflow():
    x = np.random.default_rng(3).normal(size=(2, 9, 3)).astype(np.float32)

    def program(T):
        init = T.constant_initializer(0.1)
        a = T.layers.separable_conv1d(T.constant(x), 4, 3, strides=2, padding="same", depth_multiplier=2,
                                      depthwise_initializer=init, pointwise_initializer=T.constant_initializer(0.2),
                                      bias_initializer=T.constant_initializer(0.3), name="sep")
        layer = T.layers.SeparableConv1D(2, 2, dilation_rate=2, depthwise_initializer=init,
                                         pointwise_initializer=init, name="cls")
        b = layer(T.constant(x))
        shapes = [v.shape.as_list() for v in T.global_variables()]
        return [a, b, T.constant(np.array([s for v in shapes for s in v + [-1]]))]
    try:
        ours, theirs = run_in_both(program, init=True)
    except AttributeError as e:  # TF's tf.layers needs tf_keras (TF_USE_LEGACY_KERAS=1 before TF loads)
        pytest.skip(f"TensorFlow's tf.layers is not available here: {e}")
    for u, v in zip(ours, theirs):
        np.testing.assert_allclose(u, v, rtol=1e-5)


@pytest.mark.parametrize("padding,rate,size", [("SAME", [2, 2], (7, 6)), ("VALID", [2, 3], (9, 8)),
                                               ("SAME", [1, 1], (5, 5)), ("SAME", [3, 2], (5, 7))])
def test_with_space_to_batch_is_a_dilated_convolution(padding, rate, size):
    x = np.random.default_rng(4).normal(size=(2,) + size + (3,)).astype(np.float32)
    w = np.random.default_rng(5).normal(size=(3, 3, 3, 4)).astype(np.float32)
    with cf.Graph().as_default():
        got = cf.nn.with_space_to_batch(cf.constant(x), rate, padding,
                                        lambda t, n, p: cf.nn.conv2d(t, w, [1, 1, 1, 1], p), filter_shape=[3, 3])
        want = cf.nn.conv2d(cf.constant(x), w, [1, 1, 1, 1], padding, dilations=[1] + rate + [1])
        p, c = cf.required_space_to_batch_paddings([7, 5], [2, 3], [[1, 1], [0, 2]])
        with cf.Session() as s:
            g, wv, pv, cv = s.run([got, want, p, c])
    np.testing.assert_allclose(g, wv, rtol=1e-4, atol=1e-5)
    # 7 + 1 + 1 = 9 needs one more row for blocks of 2; 5 + 0 + 2 = 7 two more columns for 3
    np.testing.assert_array_equal(pv, [[1, 2], [0, 4]])
    np.testing.assert_array_equal(cv, [[0, 1], [0, 2]])


def test_with_space_to_batch_same_as_tensorflow():
    x = np.random.default_rng(6).normal(size=(1, 7, 9, 2)).astype(np.float32)

    def program(T):
        out = T.nn.with_space_to_batch(T.constant(x), [2, 3], "SAME",
                                       lambda t, n, p: T.nn.max_pool(t, [1, 3, 3, 1], [1, 1, 1, 1], p),
                                       filter_shape=[3, 3])
        return [out] + list(T.required_space_to_batch_paddings([7, 9], [2, 3], [[2, 2], [3, 3]]))
    ours, theirs = run_in_both(program)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b)
