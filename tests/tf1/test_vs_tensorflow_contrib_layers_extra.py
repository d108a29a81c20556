"""contrib.layers' instance_norm, group_norm, convolution of any rank, the 3-D pools and
transposed convolution, conv2d_in_plane, maxout, unit_norm, spatial_softmax, dense_to_sparse,
scale_gradient, the image/sequence reshapes and the summaries against tf_slim (TF1 contrib's
layers for TF 2): outputs, gradients w.r.t. the input and every variable, the variables'
names and MODEL_VARIABLES.  Skipped cleanly without TensorFlow or tf_slim."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402
from test_vs_tensorflow_feature_columns_layers_fuzz import tf_slim  # noqa: E402,F401  (the patched tf_slim)

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

CASES = {
    "instance_norm": ([2, 5, 4, 3], lambda L, x, tf: L.instance_norm(x)),
    "instance_norm_nchw_act": ([2, 3, 4, 5], lambda L, x, tf: L.instance_norm(
        x, data_format="NCHW", activation_fn=tf.nn.relu, epsilon=1e-3, scope="inorm")),
    "instance_norm_no_params_rank3": ([3, 6, 4], lambda L, x, tf: L.instance_norm(x, center=False, scale=False)),
    "instance_norm_inits": ([2, 4, 4, 2], lambda L, x, tf: L.instance_norm(
        x, param_initializers={"gamma": tf.constant_initializer(2.0), "beta": tf.constant_initializer(0.5)})),
    "group_norm": ([2, 4, 3, 8], lambda L, x, tf: L.group_norm(x, groups=4)),
    "group_norm_channels_first": ([2, 6, 3, 4], lambda L, x, tf: L.group_norm(
        x, groups=3, channels_axis=1, reduction_axes=(2, 3), activation_fn=tf.nn.relu)),
    "group_norm_one_pass": ([2, 5, 5, 4], lambda L, x, tf: L.group_norm(x, groups=2, mean_close_to_zero=True)),
    "group_norm_rank3": ([3, 7, 6], lambda L, x, tf: L.group_norm(x, groups=3, reduction_axes=(-2,), scale=False)),
    "conv1d": ([2, 9, 3], lambda L, x, tf: L.conv1d(x, 4, 3, stride=2)),
    "conv1d_dilated_valid": ([2, 9, 3], lambda L, x, tf: L.convolution1d(x, 2, [2], rate=2, padding="VALID",
                                                                           activation_fn=None)),
    "conv1d_ncw": ([2, 3, 8], lambda L, x, tf: L.convolution(x, 4, 3, data_format="NCW")),
    "convolution_2d": ([2, 6, 6, 3], lambda L, x, tf: L.convolution(x, 4, [3, 2], stride=[1, 2])),
    "conv3d": ([2, 4, 5, 5, 2], lambda L, x, tf: L.conv3d(x, 3, [2, 3, 3], scope="c3")),
    "conv3d_ncdhw_normalizer": ([2, 2, 4, 4, 4], lambda L, x, tf: L.convolution3d(
        x, 3, 3, data_format="NCDHW", normalizer_fn=L.layer_norm,
        weights_regularizer=L.l2_regularizer(0.1))),
    "max_pool3d": ([2, 4, 6, 6, 2], lambda L, x, tf: L.max_pool3d(x, [2, 3, 3], stride=[2, 1, 2])),
    "avg_pool3d_same_ncdhw": ([2, 2, 5, 5, 5], lambda L, x, tf: L.avg_pool3d(x, 2, padding="SAME",
                                                                              data_format="NCDHW")),
    "conv3d_transpose_same": ([2, 3, 3, 3, 2], lambda L, x, tf: L.conv3d_transpose(x, 4, 3, stride=2)),
    "conv3d_transpose_valid": ([1, 2, 3, 2, 3], lambda L, x, tf: L.convolution3d_transpose(
        x, 2, [2, 3, 2], stride=[1, 2, 2], padding="VALID", activation_fn=None)),
    "conv2d_in_plane": ([2, 6, 6, 3], lambda L, x, tf: L.conv2d_in_plane(x, [3, 3], stride=2)),
    "maxout": ([3, 8], lambda L, x, tf: L.maxout(x, 4)),
    "maxout_axis": ([2, 6, 3], lambda L, x, tf: L.maxout(x, 3, axis=1)),
    "unit_norm": ([3, 4, 5], lambda L, x, tf: L.unit_norm(x, 1)),
    "unit_norm_last": ([3, 5], lambda L, x, tf: L.unit_norm(x, 1, epsilon=0.5)),
    "spatial_softmax": ([2, 4, 5, 3], lambda L, x, tf: L.spatial_softmax(x)),
    "spatial_softmax_nchw_temperature": ([2, 3, 4, 5], lambda L, x, tf: L.spatial_softmax(
        x, temperature=0.5, data_format="NCHW", name="ss")),
    "spatial_softmax_frozen": ([1, 3, 3, 2], lambda L, x, tf: L.spatial_softmax(x, trainable=False)),
    "scale_gradient": ([3, 4], lambda L, x, tf: L.scale_gradient(x * x, -0.5) * 2.0),
    "images_to_sequence": ([2, 3, 4, 5], lambda L, x, tf: L.images_to_sequence(x)),
    "sequence_roundtrip_channels_first": ([2, 3, 4, 5], lambda L, x, tf: L.sequence_to_images(
        L.images_to_sequence(x, data_format="NCHW"), 4, output_data_format="channels_first")),
}


def _run(tf, L, shape, build, seed=0):
    g = tf.Graph()
    with g.as_default():
        xv = np.random.RandomState(seed).uniform(-2, 2, shape).astype(np.float32)
        x = tf.placeholder(tf.float32, shape)
        out = build(L, x, tf)
        vs = sorted(tf.global_variables(), key=lambda v: v.name)
        tv = sorted(tf.trainable_variables(), key=lambda v: v.name)
        w = np.random.RandomState(seed + 1).uniform(0.5, 1.5, out.shape.as_list()).astype(np.float32)
        grads = tf.gradients(tf.reduce_sum(out * w), [x] + tv)
        regs = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        assigns = [tf.assign(v, np.random.RandomState(sum(map(ord, v.name))).uniform(0.2, 1, v.shape.as_list())
                             .astype(np.float32)) for v in vs]
        meta = dict(vars=[(v.name, v.shape.as_list()) for v in vs], train=[v.name for v in tv],
                    model=sorted(v.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)),
                    shape=out.shape.as_list(), regs=len(regs))
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            s.run(assigns)
            return s.run([out] + grads + regs, {x: xv}), meta


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_matches_tf_slim(name, tf_slim):
    shape, build = CASES[name]
    want, want_meta = _run(tft, tf_slim, shape, build)
    got, got_meta = _run(cft, cft.contrib.layers, shape, build)
    assert got_meta == want_meta
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=f"{name} fetch {i}")


def test_dense_to_sparse_matches_tf_slim(tf_slim):
    v = np.array([[1, 0, 3], [0, 0, 5]], np.int32)
    res = []
    for tf, L in ((tft, tf_slim), (cft, cft.contrib.layers)):
        with tf.Graph().as_default():
            sp = L.dense_to_sparse(tf.constant(v))
            sp2 = L.dense_to_sparse(tf.constant(v), eos_token=5)
            with tf.Session() as s:
                res.append(s.run([sp, sp2]))
    for a, b in zip(res[0], res[1]):
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.values, b.values)
        np.testing.assert_array_equal(a.dense_shape, b.dense_shape)


def test_summaries_match_tf_slim(tf_slim):
    tags = []
    for tf, L in ((tft, tf_slim), (cft, cft.contrib.layers)):
        with tf.Graph().as_default():
            x = tf.constant([[-1.0, 2.0, 7.0]])
            r6 = tf.nn.relu6(x, name="r6")
            tf.add_to_collection(tf.GraphKeys.ACTIVATIONS, tf.nn.relu(x, name="act"))
            tf.add_to_collection(tf.GraphKeys.ACTIVATIONS, r6)
            tf.get_variable("w", [2], initializer=tf.zeros_initializer())
            tf.get_variable("b", [], initializer=tf.zeros_initializer())
            L.summarize_activation(r6)
            L.summarize_activations(name_filter="act")
            L.summarize_variables()
            L.summarize_tensors([tf.constant(1.0, name="c"), x], )
            assert L.summarize_tensor(tf.constant("s")) is None
            summ = tf.summary.merge_all()
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                ev = tf.Summary.FromString(s.run(summ))
            tags.append([(v.tag, round(v.simple_value, 6) if v.HasField("simple_value") else "hist")
                         for v in ev.value])
    assert tags[1] == tags[0]
