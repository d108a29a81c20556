"""tf.contrib.layers (collflow/contrib/layers.py) with TF1 contrib's defaults and variable
names, checked against NumPy (TensorFlow 2 has no tf.contrib to compare with)."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

RNG = np.random.default_rng(3)
L = tf.contrib.layers


def _names(vs):
    return sorted(v.name for v in vs)


def test_fully_connected_names_defaults_and_values():
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    with tf.Graph().as_default():
        with tf.variable_scope("net"):
            h = L.fully_connected(x, 3)                                   # ReLU by default
            lin = L.fully_connected(x, 2, activation_fn=None, scope="logits", biases_initializer=None)
            x3 = tf.constant(RNG.standard_normal((2, 4, 5)).astype(np.float32))
            h3 = L.fully_connected(x3, 6, activation_fn=tf.nn.tanh, scope="seq")
        with tf.variable_scope("net", reuse=True):
            again = L.fully_connected(x, 3, scope="fully_connected")     # shares the first layer's variables
        assert _names(tf.global_variables()) == ["net/fully_connected/biases:0", "net/fully_connected/weights:0",
                                                 "net/logits/weights:0", "net/seq/biases:0", "net/seq/weights:0"]
        assert _names(tf.model_variables()) == _names(tf.global_variables())
        assert h3.shape.as_list() == [2, 4, 6]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            hv, lv, av, h3v, x3v = s.run([h, lin, again, h3, x3])
            w, b, wl, ws, bs = s.run([v for v in tf.global_variables()])
    np.testing.assert_allclose(hv, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(av, hv)
    np.testing.assert_allclose(lv, x @ wl, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h3v, np.tanh(x3v @ ws + bs), rtol=1e-5, atol=1e-6)
    # xavier_initializer (uniform): within sqrt(6 / (fan_in + fan_out))
    assert np.abs(w).max() <= np.sqrt(6.0 / 8) and np.all(b == 0)


def test_conv2d_pools_flatten_and_dropout():
    img = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    with tf.Graph().as_default():
        c = L.conv2d(img, 4, [3, 3])                     # SAME, stride 1, ReLU
        c2 = L.conv2d(img, 2, 3, stride=2, padding="VALID", activation_fn=None, scope="c2")
        mp = L.max_pool2d(c, [2, 2])                      # stride 2, VALID
        ap = L.avg_pool2d(c, 3)
        flat = L.flatten(mp)
        keep = tf.placeholder(tf.bool, [])
        d_off = L.dropout(flat, 0.5, is_training=False)
        d_run = L.dropout(flat, keep_prob=0.5, is_training=keep, seed=1)
        assert _names(tf.global_variables()) == ["Conv/biases:0", "Conv/weights:0", "c2/biases:0", "c2/weights:0"]
        assert c.shape.as_list() == [2, 6, 6, 4] and c2.shape.as_list() == [2, 2, 2, 2]
        assert mp.shape.as_list() == [2, 3, 3, 4] and ap.shape.as_list() == [2, 2, 2, 4]
        assert flat.shape.as_list() == [2, 36]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            w = s.run([v for v in tf.global_variables() if v.name == "Conv/weights:0"][0])
            cv, mpv, apv, fv, dv, d0, d1 = s.run([c, mp, ap, flat, d_off, d_run, d_run], {keep: False})
            dt = s.run(d_run, {keep: True})
            ref = s.run(tf.nn.relu(tf.nn.conv2d(img, w, [1, 1, 1, 1], "SAME")))
    np.testing.assert_allclose(cv, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mpv, cv[:, :6, :6].reshape(2, 3, 2, 3, 2, 4).max(axis=(2, 4)))
    want_ap = np.array([[cv[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3].mean(axis=(1, 2)) for j in range(2)] for i in range(2)])
    np.testing.assert_allclose(apv, want_ap.transpose(2, 0, 1, 3), rtol=1e-5)  # 3x3 windows, stride 2
    np.testing.assert_array_equal(fv, mpv.reshape(2, -1))
    np.testing.assert_array_equal(dv, fv)
    np.testing.assert_array_equal(d0, fv)
    kept = dt != 0
    np.testing.assert_allclose(dt[kept], 2.0 * fv[kept], rtol=1e-6)  # kept ones scaled by 1 / keep_prob


@pytest.mark.parametrize("updates_collections", ["default", None])
def test_batch_norm_trains_by_default_and_updates_its_moving_averages(updates_collections):
    x = RNG.standard_normal((8, 5)).astype(np.float32) * 3 + 1
    kw = {} if updates_collections == "default" else {"updates_collections": None}
    with tf.Graph().as_default():
        with tf.variable_scope("m"):
            y = L.batch_norm(x, **kw)
        assert _names(tf.global_variables()) == ["m/BatchNorm/beta:0", "m/BatchNorm/moving_mean:0",
                                                 "m/BatchNorm/moving_variance:0"]  # scale=False: no gamma
        assert _names(tf.trainable_variables()) == ["m/BatchNorm/beta:0"]
        assert _names(tf.model_variables()) == _names(tf.global_variables())
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        assert len(updates) == (2 if updates_collections == "default" else 0)
        with tf.variable_scope("m", reuse=True):
            y_inf = L.batch_norm(x, is_training=False)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            yv = s.run(y) if updates else s.run(y)
            if updates:
                s.run(updates)
            mm, mv = s.run(tf.global_variables()[1:])
            yi = s.run(y_inf)
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(yv, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mm, 0.001 * mean, rtol=1e-4, atol=1e-7)        # decay 0.999
    # a rank-2 input takes contrib's fused path (fused=None), whose moving variance gets the
    # unbiased batch variance: var * n / (n - 1)
    np.testing.assert_allclose(mv, 0.999 + 0.001 * var * 8 / 7, rtol=1e-5)
    np.testing.assert_allclose(yi, (x - mm) / np.sqrt(mv + 1e-3), rtol=1e-4, atol=1e-5)


def test_layer_norm_normalizes_each_example():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32) * 2 + 0.5
    with tf.Graph().as_default():
        y = L.layer_norm(x)
        y2 = L.layer_norm(x, begin_norm_axis=-1, center=False, scope="last")
        assert _names(tf.global_variables()) == ["LayerNorm/beta:0", "LayerNorm/gamma:0", "last/gamma:0"]
        assert tf.global_variables()[0].shape.as_list() == [5]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            yv, y2v = s.run([y, y2])
    m, v = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    np.testing.assert_allclose(yv, (x - m) / np.sqrt(v + 1e-12), rtol=1e-4, atol=1e-5)
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(y2v, (x - m) / np.sqrt(v + 1e-12), rtol=1e-4, atol=1e-5)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="must be < rank"):
        L.layer_norm(x, begin_norm_axis=3)


def test_regularizers_and_apply_regularization():
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    with tf.Graph().as_default():
        wt = tf.constant(w)
        l2, l1 = L.l2_regularizer(0.1)(wt), L.l1_regularizer(0.2)(wt)
        both = L.l1_l2_regularizer(0.2, 0.1)(wt)
        assert L.l2_regularizer(0.0)(wt) is None and L.sum_regularizer([L.l1_regularizer(0.0)])(wt) is None
        total = L.apply_regularization(L.l2_regularizer(0.5), [wt, 2 * wt])
        assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == [total]
        with tf.variable_scope("r"):  # a weights_regularizer's loss goes to REGULARIZATION_LOSSES too
            L.fully_connected(w, 2, weights_regularizer=L.l2_regularizer(0.3))
        assert len(tf.losses.get_regularization_losses()) == 2
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = s.run([l2, l1, both, total])
        with pytest.raises(ValueError, match="integer"):
            L.l2_regularizer(1)
        with pytest.raises(ValueError, match="less than 0"):
            L.l1_regularizer(-0.5)
        with pytest.raises(ValueError, match="No weights"):
            L.apply_regularization(L.l2_regularizer(0.5))
    s2 = (w ** 2).sum()
    np.testing.assert_allclose(got, [0.05 * s2, 0.2 * np.abs(w).sum(), 0.2 * np.abs(w).sum() + 0.05 * s2,
                                     0.25 * s2 + 0.25 * 4 * s2], rtol=1e-5)


def test_initializers_have_contribs_spread():
    with tf.Graph().as_default():
        xu = L.xavier_initializer(seed=1)([400, 600])
        xn = L.xavier_initializer(uniform=False, seed=2)([400, 600])
        he = L.variance_scaling_initializer(seed=3)([3, 3, 64, 128])          # factor 2, FAN_IN, normal
        caffe = L.variance_scaling_initializer(1.0, "FAN_IN", True, seed=4)([200, 10])
        with tf.Session() as s:
            u, n, h, c = s.run([xu, xn, he, caffe])
        with pytest.raises(TypeError, match="mode"):
            L.variance_scaling_initializer(mode="fan_in")
    lim = np.sqrt(6.0 / 1000)
    assert np.abs(u).max() <= lim and u.std() == pytest.approx(lim / np.sqrt(3), rel=0.02)
    assert n.std() == pytest.approx(np.sqrt(2.0 / 1000), rel=0.03)       # the truncation made up (1.3)
    assert h.std() == pytest.approx(np.sqrt(2.0 / (9 * 64)), rel=0.03)
    assert np.abs(c).max() <= np.sqrt(3.0 / 200)


def test_one_hot_encoding_and_embed_sequence():
    with tf.Graph().as_default():
        oh = L.one_hot_encoding([0, 2, 1], 3)
        ids = tf.constant([[1, 2], [0, 1]])
        e = L.embed_sequence(ids, vocab_size=5, embed_dim=4)
        assert _names(tf.global_variables()) == ["EmbedSequence/embeddings:0"]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            ohv, ev, table = s.run([oh, e, tf.global_variables()[0]])
    assert ohv.dtype == np.float32
    np.testing.assert_array_equal(ohv, np.eye(3, dtype=np.float32)[[0, 2, 1]])
    np.testing.assert_array_equal(ev, table[[[1, 2], [0, 1]]])


def test_outputs_collections_and_end_points():
    """Every layer given outputs_collections adds its output under its scope's name (TF1's
    aliases: a variable scope's name, a name scope without its "/"), which
    utils.convert_collection_to_dict keys the model's end points by, in order."""
    x = RNG.standard_normal((2, 8, 8, 3)).astype(np.float32)
    ids = np.array([1, 0], dtype=np.int32)
    with tf.Graph().as_default():
        with tf.variable_scope("net"):
            c = L.conv2d(x, 4, 3, outputs_collections="ends")
            p = L.max_pool2d(c, 2, outputs_collections=["ends"])
            a = L.avg_pool2d(p, 2, scope="avg", outputs_collections="ends")
            f = L.flatten(a, outputs_collections="ends")
            d = L.dropout(f, 0.5, is_training=False, outputs_collections="ends")
            b = L.batch_norm(d, outputs_collections="ends")
            n = L.layer_norm(b, outputs_collections="ends")
            y = L.fully_connected(n, 3, scope="logits", outputs_collections="ends")
            o = L.one_hot_encoding(ids, 3, outputs_collections="ends")
            quiet = L.fully_connected(n, 2)  # no outputs_collections: no alias
        ends = L.utils.convert_collection_to_dict("ends")
        assert list(ends) == ["net/Conv", "net/MaxPool2D", "net/avg", "net/Flatten", "net/Dropout",
                              "net/BatchNorm", "net/LayerNorm", "net/logits", "net/OneHotEncoding"]
        assert [ends[k] for k in ends] == [c, p, a, f, d, b, n, y, o]
        assert y.aliases == ["net/logits"]
        assert not hasattr(quiet, "aliases")
        assert L.utils.get_tensor_aliases(quiet) == [quiet.name[:-2]]
        # collect_named_outputs appends a further alias; clearing empties the collection
        L.utils.collect_named_outputs("more", "head/", y)
        assert y.aliases == ["net/logits", "head"]
        assert list(L.utils.convert_collection_to_dict("more", clear_collection=True)) == ["net/logits", "head"]
        assert tf.get_collection("more") == []
        assert L.utils.collect_named_outputs(None, "x", quiet) is quiet and not hasattr(quiet, "aliases")


def test_conv2d_and_pools_nchw_are_the_nhwc_answers_transposed():
    # slim nets built for GPUs pass data_format="NCHW"; the weights are [kh, kw, in, out] either way
    img = RNG.standard_normal((2, 6, 7, 3)).astype(np.float32)
    w0 = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    with tf.Graph().as_default():
        init = tf.constant_initializer(w0)
        c = L.conv2d(np.transpose(img, (0, 3, 1, 2)), 4, 3, stride=2, data_format="NCHW", weights_initializer=init,
                     biases_initializer=tf.constant_initializer([1.0, -1.0, 0.5, 0.0]), scope="nchw")
        ref = L.conv2d(img, 4, 3, stride=2, weights_initializer=init,
                       biases_initializer=tf.constant_initializer([1.0, -1.0, 0.5, 0.0]), scope="nhwc")
        mp, mr = L.max_pool2d(c, 2, data_format="NCHW"), L.max_pool2d(ref, 2)
        ap, ar = L.avg_pool2d(c, 2, 1, padding="SAME", data_format="NCHW"), L.avg_pool2d(ref, 2, 1, padding="SAME")
        assert c.shape.as_list() == [2, 4, 3, 4]
        assert [v.shape.as_list() for v in tf.global_variables()][:2] == [[3, 3, 3, 4], [4]]
        with pytest.raises(tf.errors.InvalidArgumentError, match="'NHWC' or 'NCHW'"):
            L.max_pool2d(c, 2, data_format="CHWN")
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = s.run([c, mp, ap])
            want = s.run([ref, mr, ar])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, np.transpose(b, (0, 3, 1, 2)), rtol=1e-5, atol=1e-6)


def test_slim_transpose_separable_and_bias_add_take_nchw():
    img = RNG.standard_normal((2, 5, 6, 3)).astype(np.float32)
    nchw = np.transpose(img, (0, 3, 1, 2))
    tl = tf.contrib.layers
    with tf.Graph().as_default():
        ones = tf.ones_initializer()
        pairs = [(tl.conv2d_transpose(nchw, 2, 3, stride=2, data_format="NCHW", weights_initializer=ones,
                                      biases_initializer=tf.constant_initializer([0.5, -0.5]), scope="t1"),
                  tl.conv2d_transpose(img, 2, 3, stride=2, weights_initializer=ones,
                                      biases_initializer=tf.constant_initializer([0.5, -0.5]), scope="t0")),
                 (tl.separable_conv2d(nchw, 4, 3, depth_multiplier=2, data_format="NCHW", weights_initializer=ones,
                                      scope="s1"),
                  tl.separable_conv2d(img, 4, 3, depth_multiplier=2, weights_initializer=ones, scope="s0")),
                 (tl.bias_add(nchw, initializer=tf.constant_initializer([1.0, 2.0, 3.0]), data_format="NCHW",
                              scope="b1"),
                  tl.bias_add(img, initializer=tf.constant_initializer([1.0, 2.0, 3.0]), scope="b0"))]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            vals = s.run([p for pair in pairs for p in pair])
    for got, want in zip(vals[::2], vals[1::2]):
        np.testing.assert_allclose(got, np.transpose(want, (0, 3, 1, 2)), rtol=1e-5, atol=1e-5)
