"""By-hand checks (no TensorFlow needed) of TF1 rules that the feature-column and layers fuzz
(test_vs_tensorflow_feature_columns_layers_fuzz.py) found collflow getting wrong; the
expected numbers are computed here with NumPy from the documented rules."""
import numpy as np

import collflow.compat.v1 as tf

L = tf.contrib.layers


def _run(fetches, init=True):
    with tf.Session() as s:
        if init:
            s.run([tf.global_variables_initializer(), tf.tables_initializer()])
        return s.run(fetches)


def test_safe_embedding_lookup_sparse_sum_keeps_negative_weights_mean_prunes_them():
    # TF1: safe_embedding_lookup_sparse drops weights <= 0 only for "mean"/"sqrtn"; a "sum"
    # keeps every entry whose id is >= 0, negative weights included
    params = np.arange(10, dtype=np.float32).reshape(5, 2) + 1
    ids, wts = [1, 3, 2, 4], [0.5, -2.0, 3.0, 0.0]
    idx = [[0, 0], [0, 1], [1, 0], [2, 0]]
    with tf.Graph().as_default():
        sp = tf.SparseTensor(idx, tf.constant(ids, tf.int64), [3, 2])
        sw = tf.SparseTensor(idx, wts, [3, 2])
        outs = [tf.nn.safe_embedding_lookup_sparse(tf.constant(params), sp, sw, combiner=c)
                for c in ("sum", "mean", "sqrtn")]
        s, m, q = _run(outs, init=False)
    np.testing.assert_allclose(s, [0.5 * params[1] - 2.0 * params[3], 3.0 * params[2], 0 * params[4]])
    # mean/sqrtn: row 0 keeps only id 1 (weight 0.5), row 2 has nothing left (zeros)
    np.testing.assert_allclose(m, [params[1], params[2], [0, 0]])
    np.testing.assert_allclose(q, [0.5 * params[1] / 0.5, 3.0 * params[2] / 3.0, [0, 0]])


def test_linear_model_weighted_column_sum_uses_negative_weights():
    fc = tf.feature_column
    with tf.Graph().as_default():
        col = fc.weighted_categorical_column(fc.categorical_column_with_identity("a", 5), "w")
        feats = {"a": tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([1, 3, 2], tf.int64), [2, 3]),
                 "w": tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [0.5, -2.0, 3.0], [2, 3])}
        out = fc.linear_model(feats, [col])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for v in tf.global_variables():   # weights [[1], ..., [5]], bias [1]
                s.run(tf.assign(v, np.arange(np.prod(v.shape.as_list()), dtype=np.float32).reshape(
                    v.shape.as_list()) + 1))
            got = s.run(out)
    np.testing.assert_allclose(got, [[0.5 * 2 - 2.0 * 4 + 1], [3.0 * 3 + 1]])


def test_nested_crossed_column_name_sorts_all_leaf_keys():
    # TF1 names a crossed column by its leaf keys (nested crosses flattened), sorted together
    fc = tf.feature_column
    inner = fc.crossed_column(["c", "a"], 10)
    outer = fc.crossed_column(["d", inner, fc.categorical_column_with_identity("b", 3)], 7)
    assert inner.name == "a_X_c"
    assert outer.name == "a_X_b_X_c_X_d"
    with tf.Graph().as_default():
        feats = {k: tf.constant([["x"]]) for k in "acd"}
        feats["b"] = tf.constant([[1]], tf.int64)
        fc.input_layer(feats, [fc.embedding_column(outer, 2)])
        assert [v.name for v in tf.global_variables()] == ["input_layer/a_X_b_X_c_X_d_embedding/embedding_weights:0"]


def _batch_norm_moving_variance(x, fused, eps=0.1):
    with tf.Graph().as_default():
        y = L.batch_norm(tf.constant(x), decay=0.5, epsilon=eps, updates_collections=None, fused=fused)
        mv = [v for v in tf.global_variables() if "moving_variance" in v.name][0]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            yv = s.run(y)
            return yv, s.run(mv)


def test_contrib_batch_norm_rank2_fused_updates_with_unbiased_variance():
    # contrib batch_norm (fused None/True) runs a rank-2 input through the fused kernel, whose
    # moving variance takes the unbiased batch variance (n / (n - 1)); fused=False the biased
    # one; the output is normalized with the biased variance either way
    x = np.array([[1.0, 2.0], [3.0, -1.0], [0.0, 0.5]], np.float32)
    var = x.var(0)
    want_y = (x - x.mean(0)) / np.sqrt(var + 0.1)
    for fused, upd in ((None, var * 3 / 2), (True, var * 3 / 2), (False, var)):
        y, mv = _batch_norm_moving_variance(x, fused)
        np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(mv, 0.5 * 1.0 + 0.5 * upd, rtol=1e-5)
    # the fused kernel's epsilon floor (1.001e-5) applies to a rank-2 input too
    y, _ = _batch_norm_moving_variance(x, None, eps=1e-9)
    np.testing.assert_allclose(y, (x - x.mean(0)) / np.sqrt(var + 1.001e-5), rtol=1e-5)


def test_contrib_layer_regularizer_names_follow_the_core_layers():
    # TF1 contrib builds fully_connected/conv2d/conv2d_transpose (and separable_conv2d with
    # num_outputs) from core layers: a penalty is named by the Keras weight name
    # ("<scope>/kernel/Regularizer/..."); separable_conv2d without num_outputs uses plain
    # model variables ("depthwise_weights/Regularizer")
    reg = L.l2_regularizer(0.5)
    with tf.Graph().as_default():
        x = tf.ones([1, 4, 4, 2])
        L.fully_connected(tf.ones([1, 3]), 2, weights_regularizer=reg, biases_regularizer=reg)
        L.conv2d(x, 2, 3, weights_regularizer=reg)
        L.conv2d_transpose(x, 2, 3, weights_regularizer=reg, biases_regularizer=reg)
        L.separable_conv2d(x, 2, 3, 1, weights_regularizer=reg, biases_regularizer=reg)
        L.separable_conv2d(x, None, 3, 1, weights_regularizer=reg, biases_regularizer=reg)
        L.fully_connected(tf.ones([1, 3]), 2, weights_regularizer=reg, scope="fully_connected", reuse=True)
        names = [t.name for t in tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)]
    assert names == ["fully_connected/kernel/Regularizer/l2_regularizer:0",
                     "fully_connected/bias/Regularizer/l2_regularizer:0",
                     "Conv/kernel/Regularizer/l2_regularizer:0",
                     "Conv2d_transpose/kernel/Regularizer/l2_regularizer:0",
                     "Conv2d_transpose/bias/Regularizer/l2_regularizer:0",
                     "SeparableConv2d/depthwise_kernel/Regularizer/l2_regularizer:0",
                     "SeparableConv2d/pointwise_kernel/Regularizer/l2_regularizer:0",
                     "SeparableConv2d/bias/Regularizer/l2_regularizer:0",
                     "SeparableConv2d_1/depthwise_weights/Regularizer/l2_regularizer:0",
                     "SeparableConv2d_1/biases/Regularizer/l2_regularizer:0"]


def test_apply_regularization_names_its_sum_and_counts_none_as_zero():
    # TF1: the summed penalty is named "get_regularization_penalty" (one weight or several)
    w1 = np.array([[1.0, -2.0]], np.float32)
    w2 = np.array([3.0], np.float32)
    with tf.Graph().as_default():
        a, b = tf.constant(w1), tf.constant(w2)
        one = L.apply_regularization(L.l1_regularizer(0.5), [a])
        two = L.apply_regularization(L.l2_regularizer(0.5), [a, b])
        none = L.apply_regularization(lambda w: None, [a, b])
        assert one.name == "get_regularization_penalty:0"
        assert two.name == "get_regularization_penalty_1:0"
        vals = _run([one, two, none], init=False)
    np.testing.assert_allclose(vals, [0.5 * 3.0, 0.5 * (5.0 + 9.0) / 2, 0.0], rtol=1e-6)
