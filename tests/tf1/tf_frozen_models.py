"""TensorFlow models frozen with TF's own convert_variables_to_constants, for the tests of
importing TensorFlow-written GraphDefs (test_vs_tensorflow_import_tf_graph_def.py, and
make_tf_graph_def_data.py, which wrote the committed .pb files under tests/data/tf_graph_defs/).

Each builder takes tensorflow.compat.v1 and returns (graph_def, feeds {name: array}, output
names); it needs TensorFlow (the callers importorskip it).
"""
import numpy as np


def _freeze(tf, g, outputs, init=True):
    with tf.Session(graph=g) as s:
        if init:
            s.run(tf.global_variables_initializer())
        return tf.graph_util.convert_variables_to_constants(s, g.as_graph_def(), outputs)


def mlp(tf):
    rng = np.random.RandomState(0)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        h = tf.layers.dense(x, 8, activation=tf.nn.relu, name="d1")
        h = tf.layers.dense(h, 8, activation=tf.nn.tanh, name="d2")
        h = tf.nn.elu(h) + tf.nn.selu(h) - tf.nn.leaky_relu(h, 0.1) * tf.nn.sigmoid(h)
        h = tf.nn.softplus(h) / (tf.nn.relu6(h) + 2.0)
        logits = tf.layers.dense(h, 4, name="logits")
        tf.nn.softmax(logits, name="probs")
        tf.nn.log_softmax(logits, name="logp")
        tf.argmax(logits, 1, name="cls")
        tf.nn.l2_normalize(logits, 1, name="l2")
        gd = _freeze(tf, g, ["probs", "logp", "cls", "l2"])
    return gd, {"x:0": rng.randn(5, 6).astype(np.float32)}, ["probs:0", "logp:0", "cls:0", "l2:0"]


def cnn(tf, data_format="NHWC"):
    rng = np.random.RandomState(1)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(2)
        x = tf.placeholder(tf.float32, [None, 9, 9, 3], name="x")
        y = tf.layers.conv2d(x, 4, 3, padding="same", name="c1")
        y = tf.layers.batch_normalization(y, training=False, name="bn1",
                                          beta_initializer=tf.random_normal_initializer(),
                                          gamma_initializer=tf.random_normal_initializer(1.0, 0.1),
                                          moving_mean_initializer=tf.random_normal_initializer(),
                                          moving_variance_initializer=tf.random_uniform_initializer(0.5, 1.5))
        y = tf.nn.relu(y)
        dw = tf.get_variable("dw", [3, 3, 4, 2], initializer=tf.random_normal_initializer())
        y = tf.nn.depthwise_conv2d(y, dw, [1, 2, 2, 1], "VALID")
        y = tf.nn.max_pool(y, [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
        y = tf.nn.avg_pool(y, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        y = tf.nn.lrn(y, 2, 1.0, 0.5, 0.75)
        up = tf.layers.conv2d_transpose(y, 3, 3, strides=2, padding="same", name="up")
        up = tf.image.resize_bilinear(up, [5, 5])
        up = tf.image.resize_nearest_neighbor(up, [7, 7])
        tf.identity(up, name="up_out")
        y = tf.reduce_mean(y, axis=[1, 2], keepdims=False)
        y = tf.layers.dense(y, 3, name="fc")
        tf.nn.softmax(y, name="probs")
        gd = _freeze(tf, g, ["probs", "up_out"])
    return gd, {"x:0": rng.randn(2, 9, 9, 3).astype(np.float32)}, ["probs:0", "up_out:0"]


def embedding(tf):
    rng = np.random.RandomState(2)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(3)
        ids = tf.placeholder(tf.int32, [None, 5], name="ids")
        emb = tf.get_variable("emb", [20, 6], initializer=tf.random_normal_initializer())
        e = tf.nn.embedding_lookup(emb, ids)
        mask = tf.cast(tf.not_equal(ids, 0), tf.float32)
        s = tf.reduce_sum(e * tf.expand_dims(mask, -1), 1) / tf.maximum(tf.reduce_sum(mask, 1, keepdims=True), 1.0)
        oh = tf.one_hot(ids[:, 0], 20)
        h = tf.concat([s, tf.matmul(oh, emb)], axis=1)
        out = tf.layers.dense(h, 3, name="out")
        tf.identity(out, name="logits")
        vals, idx = tf.nn.top_k(out, 2)
        tf.identity(vals, name="topv")
        tf.identity(idx, name="topi")
        gd = _freeze(tf, g, ["logits", "topv", "topi"])
    return gd, {"ids:0": rng.randint(0, 20, (4, 5)).astype(np.int32)}, ["logits:0", "topv:0", "topi:0"]


def slicing(tf):
    rng = np.random.RandomState(3)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6, 5], name="x")
        a = x[:, 1:5:2, ::-1]
        b = x[..., 0]
        c = x[:, tf.newaxis, -1, 1:]
        d = x[1:, :3, 2]
        n = tf.shape(x)[0]
        f = tf.reshape(x, tf.stack([n, -1]))
        f = tf.concat([f, tf.reshape(a, [n, -1]), tf.reshape(c, [n, -1])], axis=-1)
        f = tf.pad(f, [[0, 0], [1, 2]])
        f = tf.pad(f, [[0, 0], [2, 1]], mode="REFLECT")
        f = tf.pad(f, [[0, 0], [1, 1]], constant_values=3.0)
        st = tf.stack([b, b * 2.0], axis=1)
        u0, u1 = tf.unstack(st, axis=1)
        s1, s2 = tf.split(x, [2, 4], axis=1)
        t = tf.transpose(tf.squeeze(tf.expand_dims(s1, 0), [0]), [0, 2, 1])
        t = tf.tile(t, [1, 1, 2])
        sl = tf.slice(x, [0, 1, 1], [-1, 2, 3])
        r = tf.reduce_max(s2, axis=1) + tf.reduce_min(s2, axis=1) + tf.reduce_prod(s2, axis=1)
        w = tf.where(x > 0.0, x, -x)
        w2 = tf.where_v2(b > 0.0, 1.0, 0.0)
        tf.identity(f, name="flat")
        tf.identity(d, name="d")
        tf.identity(u0 + u1, name="u")
        tf.identity(t, name="t")
        tf.identity(sl, name="sl")
        tf.identity(r, name="r")
        tf.identity(tf.reduce_sum(w, axis=[1, 2]) + tf.reduce_sum(w2, axis=1), name="w")
        tf.identity(tf.cast(tf.argmin(b, axis=1), tf.float32) + tf.cast(tf.range(0, n), tf.float32), name="am")
        tf.identity(tf.fill(tf.stack([n, 2]), 1.5) * tf.cast(tf.size(x), tf.float32), name="filled")
        gd = _freeze(tf, g, ["flat", "d", "u", "t", "sl", "r", "w", "am", "filled"], init=False)
    outs = ["flat:0", "d:0", "u:0", "t:0", "sl:0", "r:0", "w:0", "am:0", "filled:0"]
    return gd, {"x:0": rng.randn(3, 6, 5).astype(np.float32)}, outs


def rnn(tf):
    """A static (unrolled) LSTM and GRU for inference, with batch matmuls and control inputs."""
    rng = np.random.RandomState(4)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(5)
        x = tf.placeholder(tf.float32, [None, 4, 3], name="x")
        steps = tf.unstack(x, axis=1)
        with tf.variable_scope("lstm"):
            outs, _ = tf.nn.static_rnn(tf.nn.rnn_cell.BasicLSTMCell(5), steps, dtype=tf.float32)
        with tf.variable_scope("gru"):
            outs2, _ = tf.nn.static_rnn(tf.nn.rnn_cell.GRUCell(5), outs, dtype=tf.float32)
        seq = tf.stack(outs2, axis=1)
        att = tf.nn.softmax(tf.matmul(seq, seq, transpose_b=True))
        ctx = tf.matmul(att, seq)
        with tf.control_dependencies([tf.no_op(name="before")]):
            y = tf.identity(tf.reduce_mean(ctx, axis=1) ** 2.0, name="y")
        tf.identity(tf.cast(y > 0.01, tf.int32) + tf.math.floordiv(tf.constant(7), 2), name="flags")
        gd = _freeze(tf, g, ["y", "flags"])
    return gd, {"x:0": rng.randn(3, 4, 3).astype(np.float32)}, ["y:0", "flags:0"]


def nchw(tf):
    """The same conv net twice, NCHW and NHWC, from the same constants: TF's CPU kernels run
    only the NHWC one, whose outputs (transposed to NHWC) the NCHW one must give.  Also
    EXPLICIT padding.  Returns (NCHW graph_def, feeds, outputs, NHWC graph_def)."""
    rng = np.random.RandomState(5)
    w1 = rng.randn(3, 3, 3, 4).astype(np.float32)
    b1 = rng.randn(4).astype(np.float32)
    dw = rng.randn(3, 3, 4, 2).astype(np.float32)
    sc, of = rng.rand(8).astype(np.float32) + 0.5, rng.randn(8).astype(np.float32)
    mu, var = rng.randn(8).astype(np.float32), rng.rand(8).astype(np.float32) + 0.5
    wt = rng.randn(2, 2, 3, 8).astype(np.float32)
    gds = []
    for fmt in ("NCHW", "NHWC"):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [2, 8, 8, 3], name="x")
            h = tf.transpose(x, [0, 3, 1, 2]) if fmt == "NCHW" else x
            s4 = [1, 1, 1, 1]
            pad = [[0, 0], [0, 0], [1, 2], [2, 1]] if fmt == "NCHW" else [[0, 0], [1, 2], [2, 1], [0, 0]]
            h = tf.nn.conv2d(h, w1, s4, pad, data_format=fmt)
            h = tf.nn.bias_add(h, b1, data_format=fmt)
            st = [1, 1, 2, 2] if fmt == "NCHW" else [1, 2, 2, 1]
            h = tf.nn.depthwise_conv2d_native(h, dw, st, "SAME", data_format=fmt)
            h, _, _ = tf.nn.fused_batch_norm(h, sc, of, mu, var, epsilon=1e-3, data_format=fmt, is_training=False)
            k = [1, 1, 2, 2] if fmt == "NCHW" else [1, 2, 2, 1]
            p = tf.nn.max_pool(h, k, s4, "SAME", data_format=fmt)
            q = tf.nn.avg_pool(h, k, k, "VALID", data_format=fmt)
            osz = [2, 3, 4, 4] if fmt == "NCHW" else [2, 4, 4, 3]
            t = tf.nn.conv2d_backprop_input(osz, wt, q, k, "VALID", data_format=fmt)
            if fmt == "NCHW":
                p, t = tf.transpose(p, [0, 2, 3, 1]), tf.transpose(t, [0, 2, 3, 1])
            tf.identity(p, name="pool")
            tf.identity(t, name="up")
        gds.append(g.as_graph_def())
    return gds[0], {"x:0": rng.randn(2, 8, 8, 3).astype(np.float32)}, ["pool:0", "up:0"], gds[1]


def extras(tf):
    """Block ops (atrous convolution by hand), depth/space, reverse, cumsum, einsum, gather_nd,
    bicubic resize, broadcast_to."""
    rng = np.random.RandomState(6)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 8, 8, 4], name="x")
        w = tf.constant(rng.randn(3, 3, 4, 4).astype(np.float32))
        s2b = tf.space_to_batch_nd(x, [2, 2], [[2, 2], [2, 2]])
        y = tf.batch_to_space_nd(tf.nn.conv2d(s2b, w, [1, 1, 1, 1], "VALID"), [2, 2], [[0, 0], [0, 0]])
        d = tf.nn.depth_to_space(tf.nn.space_to_depth(y, 2) * 2.0, 2)
        r = tf.reverse(d, [1, 2])
        c = tf.cumsum(r, axis=2, exclusive=True, reverse=True) + tf.cumprod(tf.sigmoid(r), axis=1)
        e = tf.einsum("bhwc,cd->bhwd", c, tf.constant(rng.randn(4, 3).astype(np.float32)))
        gn = tf.gather_nd(e, [[0, 1, 2], [1, 0, 3]])
        tf.identity(tf.image.resize_bicubic(e, [5, 7]), name="bicubic")
        tf.identity(gn + tf.broadcast_to(tf.constant([1.0, 2.0, 3.0]), [2, 3]), name="gn")
        gd = g.as_graph_def()
    return gd, {"x:0": rng.randn(2, 8, 8, 4).astype(np.float32)}, ["bicubic:0", "gn:0"]


def keras(tf):
    """A MobileNet-like tf_keras model in inference mode (learning phase 0): ZeroPadding2D,
    BatchNormalization, ReLU(6), DepthwiseConv2D, swish, Dropout, Flatten, gelu (Erfc),
    LayerNormalization (a FusedBatchNormV3 with is_training true)."""
    import tf_keras as k
    rng = np.random.RandomState(7)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(8)
        k.backend.set_learning_phase(0)
        m = k.Sequential([
            k.layers.InputLayer((12, 12, 3), name="img"), k.layers.ZeroPadding2D(1),
            k.layers.Conv2D(8, 3, strides=2, use_bias=False), k.layers.BatchNormalization(), k.layers.ReLU(6.0),
            k.layers.DepthwiseConv2D(3, padding="same"), k.layers.BatchNormalization(), k.layers.Activation("swish"),
            k.layers.Conv2D(8, 1), k.layers.MaxPooling2D(), k.layers.Dropout(0.5), k.layers.Flatten(),
            k.layers.Dense(10, activation="gelu"), k.layers.LayerNormalization(),
            k.layers.Dense(4, activation="softmax", name="probs")])
        out = m.outputs[0].op.name
        gd = _freeze(tf, g, [out])
    return gd, {m.inputs[0].name: rng.randn(2, 12, 12, 3).astype(np.float32)}, [out + ":0"]


def raw_ops(tf):
    """Op types older or rarer than the layers above emit, built with tf.raw_ops: Concat, Gather,
    BiasAddV1, Div (integer: truncating), AddN, ClipByValue, Any/All, Rank, logical ops,
    IsNan, ZerosLike, BatchMatMul, Softsign, Reciprocal, SpaceToDepth, NCHW MaxPool."""
    rng = np.random.RandomState(9)
    r = tf.raw_ops
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3, 4], name="x")
        i = tf.constant(np.array([[-7, 7], [5, -3]], np.int32))
        a = r.Concat(concat_dim=tf.constant(1), values=[x, r.Softsign(features=x)])
        b = r.Gather(params=a, indices=tf.constant([2, 0]))
        v, k = r.TopKV2(input=b, k=tf.constant(3), sorted=True)
        c = r.BiasAddV1(value=x, bias=tf.constant(rng.randn(4).astype(np.float32)))
        d = r.AddN(inputs=[c, x, r.Reciprocal(x=x + 10.0)])
        e = r.ClipByValue(t=d, clip_value_min=tf.constant(-0.5), clip_value_max=tf.constant(0.5))
        pos = r.Greater(x=x, y=tf.constant(0.0))
        anyall = tf.cast(r.Any(input=pos, axis=tf.constant([1]), keep_dims=True), tf.float32) + tf.cast(
            r.All(input=r.LogicalOr(x=pos, y=r.LogicalAnd(x=pos, y=r.IsNan(x=x))), axis=tf.constant(0)), tf.float32)
        bm = r.BatchMatMul(x=tf.reshape(x, [3, 2, 2]), y=tf.reshape(x, [3, 2, 2]), adj_x=True)
        img = tf.reshape(tf.tile(x, [1, 4]), [1, 3, 4, 4])  # NCHW
        mp = r.MaxPool(input=img, ksize=[1, 1, 2, 2], strides=[1, 1, 2, 2], padding="VALID", data_format="NCHW")
        sd = r.SpaceToDepth(input=tf.transpose(img, [0, 2, 3, 1])[:, :2], block_size=2)
        tf.identity(v, name="v")
        tf.identity(k, name="k")
        tf.identity(e + r.ZerosLike(x=e) + tf.cast(r.Rank(input=e), tf.float32), name="e")
        tf.identity(anyall, name="anyall")
        tf.identity(bm, name="bm")
        tf.identity(r.Div(x=i, y=tf.constant(2)), name="idiv")
        tf.identity(tf.transpose(mp, [0, 2, 3, 1]), name="mp")
        tf.identity(sd, name="sd")
        gd = g.as_graph_def()
    outs = ["v:0", "k:0", "e:0", "anyall:0", "bm:0", "idiv:0", "mp:0", "sd:0"]
    return gd, {"x:0": rng.randn(3, 4).astype(np.float32)}, outs


MODELS = {"mlp": mlp, "cnn": cnn, "embedding": embedding, "slicing": slicing, "rnn": rnn, "extras": extras, "keras": keras, "raw_ops": raw_ops}
