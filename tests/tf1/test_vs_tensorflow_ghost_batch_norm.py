"""tf.layers.batch_normalization(virtual_batch_size=...) (ghost batch norm) against TensorFlow:
TF's reshape to [virtual_batch_size, batch / vbs, ...] (virtual batches of interleaved
examples), parameters of the reshaped rank, the moving averages updated with the mean of the
virtual batches' statistics, training as a bool, False or a placeholder, fused=True
quietly unfused as TF 1.x's layer does, a batch known only when run.  Outputs, gradients
w.r.t. the input and every trainable variable, the moving statistics after the updates and
the variables' names and shapes are compared.  Under a placeholder `training`, TF 2.21's
tf.compat.v1 layer normalizes over the whole batch (the virtual batches dropped, checked
below); collflow keeps them, as TF 1.15's layer did, and is compared with TF's layer built
for True and for False.  Skipped cleanly without TensorFlow."""
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
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")

CASES = [
    ("rank2", [8, 3], dict(virtual_batch_size=4), True),
    ("rank3_placeholder_training", [6, 4, 2], dict(virtual_batch_size=2), "ph"),
    ("nhwc_fused_asked", [8, 3, 3, 2], dict(virtual_batch_size=2, fused=True), True),
    ("nchw", [4, 3, 2, 2], dict(virtual_batch_size=2, axis=1), True),
    ("inference", [4, 3], dict(virtual_batch_size=2), False),
    ("unknown_batch", [None, 5], dict(virtual_batch_size=3, momentum=0.5), True),
    ("two_axes", [4, 2, 3], dict(virtual_batch_size=2, axis=[1, 2], center=False), "ph"),
    ("layer_class", [8, 4], dict(virtual_batch_size=4, momentum=0.9), "class"),
    ("adjustment", [6, 3], dict(adjustment="adj"), True),
    ("adjustment_inference", [6, 3], dict(adjustment="adj"), False),
    ("adjustment_nchw_fused_asked_no_scale", [4, 3, 2, 2], dict(adjustment="adj", axis=1, scale=False, fused=True),
     True),
    ("adjustment_renorm", [8, 3], dict(adjustment="adj", renorm=True, renorm_clipping={"rmax": 1.5}), True),
]


def _adjustment(tf, channels_first):
    def adj(shape):  # per-channel factors from the input's shape, as TF's docs suggest
        c = tf.cast(shape[1 if channels_first else -1], tf.float32)
        scale, bias = tf.constant([1.5, 0.5, 2.0]) * c / 3.0, tf.constant([0.25, -0.5, 0.0])
        if channels_first:  # the user's values broadcast against the normalized [N, C, H, W]
            scale, bias = tf.reshape(scale, [3, 1, 1]), tf.reshape(bias, [3, 1, 1])
        return scale, bias
    return adj


def _run(tf, shape, kw, training):
    if kw.get("adjustment") == "adj":
        kw = dict(kw, adjustment=_adjustment(tf, kw.get("axis") == 1))
    rng = np.random.RandomState(1)
    feed_shape = [12 if d is None else d for d in shape]
    xv = rng.randn(*feed_shape).astype(np.float32) * 2 + 1
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, shape)
        feed = {x: xv}
        if training == "class":
            y = tf.layers.BatchNormalization(**kw)(x, training=True)
        elif training == "ph" and tf is tft:
            # TF 2.21's layer drops the ghost batches under a placeholder `training` (it normalizes
            # over the whole batch then); TF 1.15's kept them, as collflow does: TF's side is the
            # layer built with True and with False on the same variables
            y = tf.layers.batch_normalization(x, training=True, name="bn", **kw)
            y_inference = tf.layers.batch_normalization(x, training=False, name="bn", reuse=True, **kw)
        elif training == "ph":
            t = tf.placeholder(tf.bool, [])
            y = tf.layers.batch_normalization(x, training=t, name="bn", **kw)
            y_inference = y
            feed[t] = True
        else:
            y = tf.layers.batch_normalization(x, training=training, **kw)
        tv = tf.trainable_variables()
        w = rng.uniform(0.5, 1.5, feed_shape).astype(np.float32)
        grads = tf.gradients(tf.reduce_sum(y * w), [x] + tv)
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        names = [(v.name, v.shape.as_list()) for v in tf.global_variables()]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for v in tf.global_variables():
                s.run(v.assign(rng.uniform(0.5, 1.5, v.shape.as_list()).astype(np.float32)))
            out = s.run([y] + grads, feed)
            if updates:
                s.run(updates, feed)
            out += s.run(tf.global_variables())
            if training == "ph":  # the same layer in inference through the placeholder
                out.append(s.run(y_inference, {**feed, t: False} if tf is cft else feed))
        return out, names, len(updates)


@pytest.mark.parametrize("name,shape,kw,training", CASES, ids=[c[0] for c in CASES])
def test_ghost_batch_norm_matches_tensorflow(name, shape, kw, training):
    want, want_names, want_n = _run(tft, shape, kw, training)
    got, got_names, got_n = _run(cft, shape, kw, training)
    assert got_names == want_names and got_n == want_n
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * float(np.abs(b).max()) + 1e-6, err_msg=f"fetch {i}")


def test_tf_drops_ghost_batches_under_a_placeholder_training():
    """The TF 2.21 behaviour collflow does not copy, stated: a placeholder `training` gives
    the whole batch's statistics."""
    xv = np.random.RandomState(1).randn(6, 4, 2).astype(np.float32)
    with tft.Graph().as_default():
        t = tft.placeholder(tft.bool, [])
        ghost = tft.layers.batch_normalization(tft.constant(xv), training=t, virtual_batch_size=2)
        plain = tft.layers.batch_normalization(tft.constant(xv), training=True)
        with tft.Session() as s:
            s.run(tft.global_variables_initializer())
            a, b = s.run([ghost, plain], {t: True})
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
