"""tf.math, tf.random and tf.linalg (collflow/compat/namespaces.py): TF1's names, TF1's meaning
where a name differs from the top level's, clear errors for what is missing; against
TensorFlow where it is installed."""
import numpy as np
import pytest

import collflow.compat.v1 as tf


def _run(build):
    g = tf.Graph()
    with g.as_default():
        out = build()
    with tf.Session(graph=g) as s:
        return s.run(out)


def test_math_names_are_the_top_level_ops():
    assert tf.math.reduce_sum is tf.reduce_sum and tf.math.divide is tf.divide
    assert tf.math.softmax is tf.nn.softmax and tf.math.top_k is tf.nn.top_k
    assert tf.random.normal is tf.random_normal and tf.random.shuffle is tf.random_shuffle
    assert tf.math.acos is tf.acos
    with pytest.raises(AttributeError, match="tf.math.sobol_sample is not implemented in collflow"):
        tf.math.sobol_sample


def test_linalg_keeps_tensorflows_batch_meaning():
    x = np.arange(24.0).reshape(2, 3, 4)
    v = np.arange(6.0).reshape(2, 3)
    t, d, td, dp = _run(lambda: [tf.linalg.transpose(x), tf.linalg.diag(v), tf.linalg.tensor_diag(v[0]),
                                 tf.linalg.diag_part(np.stack([np.eye(3) * 2, np.eye(3) * 3]))])
    np.testing.assert_array_equal(t, x.transpose(0, 2, 1))           # last two dims, not all reversed
    np.testing.assert_array_equal(d, np.stack([np.diag(r) for r in v]))  # a batch of diagonal matrices
    np.testing.assert_array_equal(td, np.diag(v[0]))
    np.testing.assert_array_equal(dp, [[2, 2, 2], [3, 3, 3]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="matrix_transpose: needs a tensor of known rank >= 2"):
        _run(lambda: tf.linalg.matrix_transpose(np.ones(3)))


def test_log_sigmoid_logical_xor_and_categorical():
    ls, xo, cat = _run(lambda: [tf.math.log_sigmoid(np.array([-1000.0, 0.0, 3.0])),
                                tf.math.logical_xor([True, False, True, False], [True, True, False, False]),
                                tf.random.categorical([[-1e9, 0.0]], 6, dtype=tf.int32, seed=3)])
    np.testing.assert_allclose(ls, [-1000.0, np.log(0.5), -np.log1p(np.exp(-3.0))], rtol=1e-12)
    np.testing.assert_array_equal(xo, [False, True, True, False])
    assert cat.dtype == np.int32 and cat.shape == (1, 6) and (cat == 1).all()


def test_against_tensorflow():
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    tft = tensorflow.compat.v1
    # no invented names: everything collflow puts in these namespaces, TensorFlow has there
    for ns in ("math", "random", "linalg"):
        extra = set(dir(getattr(tf, ns))) - set(dir(getattr(tft, ns)))
        assert not extra, (ns, sorted(extra))
    x = np.random.default_rng(0).normal(size=(2, 3, 3)).astype(np.float32)
    v = x[:, 0, :]

    def build(m):
        return [m.linalg.transpose(x), m.linalg.diag(v), m.linalg.diag_part(x), m.linalg.set_diag(x, v),
                m.linalg.tensor_diag(v[0]), m.math.log_sigmoid(x), m.math.logical_xor(x > 0, x < 0.5),
                m.math.reduce_logsumexp(x, axis=1), m.math.cumsum(x, axis=2)]
    tdf = tft.Graph()
    with tdf.as_default():
        want = tft.Session(graph=tdf).run(build(tft))
    got = _run(lambda: build(tf))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_v2_switches_and_resource_loader(tmp_path):
    assert tf.resource_variables_enabled() is True and tf.control_flow_v2_enabled() is False
    tf.enable_resource_variables()
    tf.disable_control_flow_v2()
    tf.enable_control_flow_v2()  # a warning: the control flow stays TF1's
    assert tf.control_flow_v2_enabled() is False
    assert tf.executing_eagerly_outside_functions() is False
    assert tf.NoGradient is tf.NotDifferentiable
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    assert tf.resource_loader.get_data_files_path() == here
    assert tf.resource_loader.get_path_to_datafile("x.txt") == os.path.join(here, "x.txt")
    assert tf.resource_loader.load_resource("pyproject.toml").startswith(b"[build-system]")
    assert tf.resource_loader.readahead_file_path("/a/b") == "/a/b"


def test_top_level_protocol_messages():
    assert tf.MetaGraphDef is tf.train.MetaGraphDef
    assert tf.TensorInfo is tf.saved_model.TensorInfo
    assert tf.SummaryMetadata is tf.summary.SummaryMetadata
