"""Differential tests against real TensorFlow 1.x on whole training programs, written the way
TF1 users write them: a CIFAR-style convnet (tf.layers, batch norm, UPDATE_OPS, momentum and
exponential decay), word2vec (embeddings, nce / sampled softmax, top_k), a char-RNN (stacked
LSTMs with the state fed back, clip_by_global_norm, Adam), an autoencoder (two RMSProp
optimizers on variable subsets), a GAN (reused scopes, two Adams), a bidirectional GRU with
attention (Adagrad), stacked and wrapped LSTM/GRU layers over padded batches then static_rnn, a custom loop (gradient surgery, Nesterov, EMA, Saver save/restore,
variables_to_restore), tf.data pipelines with FTRL, a hand-written while_loop RNN with a
TensorArray (Adadelta) and the deep-MNIST tutorial (Adam, dropout).

Single ops agreeing (test_vs_tensorflow*.py) does not make programs agree: these exercise
collections, scopes and names, optimizer slots, control dependencies, feeds of state and many
session runs.  Each program is written once against `tf` (`tensorflow.compat.v1` or
`collflow.compat.v1`), its data from numpy seeds and its variables set by name; the per-step
losses, the final values of every global variable (slots included) and a few other fetches
are compared.  Skipped cleanly without TensorFlow (`pip install -e ".[conformance]"`).
"""
import os
import shutil
import sys
import tempfile
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

# TensorFlow's own notices that its TF1 layers, cells and runners are deprecated
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")

LOSS_RTOL = 1e-4  # per-step losses, elementwise
# everything else (variables, slots, gradients, activations): float32 chains summed in other
# orders agree to 1e-4 of the tensor's largest value (worst seen: 8e-6); optimizer slots near
# zero (Adam's second moments) differ absolutely, hence ATOL
TOL, ATOL = 1e-4, 1e-6


def _set_vars(tf, sess, seed, scale, variables=None):
    """Sets every trainable variable (or `variables`) from a numpy RNG keyed by its name."""
    for v in variables if variables is not None else tf.trainable_variables():
        shape = [int(d) for d in v.get_shape()]
        r = np.random.RandomState((seed * 1000003 + zlib.crc32(v.name.encode())) % 2**31)
        sess.run(v.assign(r.uniform(-scale, scale, shape).astype(np.float32)))


def _values(tf, sess):
    vs = tf.global_variables()
    return {v.name: np.asarray(x) for v, x in zip(vs, sess.run(vs))}


def cifar(tf, seed, steps):
    rng = np.random.RandomState(seed)
    N, H, C, K = 16, 12, 3, 5
    X = rng.normal(size=(N * 4, H, H, C)).astype(np.float32)
    Y = rng.randint(0, K, size=(N * 4,)).astype(np.int64)
    x = tf.placeholder(tf.float32, [None, H, H, C], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    training = tf.placeholder(tf.bool, [], name="training")
    reg = lambda w: 1e-3 * tf.nn.l2_loss(w)  # noqa: E731
    with tf.variable_scope("net"):
        h = tf.layers.conv2d(x, 8, 3, padding="same", kernel_regularizer=reg, name="conv1")
        h = tf.nn.relu(tf.layers.batch_normalization(h, training=training, momentum=0.9, name="bn1"))
        h = tf.layers.max_pooling2d(h, 2, 2, name="pool1")
        h = tf.layers.conv2d(h, 16, 3, padding="valid", activation=tf.nn.relu, kernel_regularizer=reg,
                             name="conv2")
        h = tf.layers.batch_normalization(h, training=training, name="bn2")
        h = tf.layers.flatten(tf.layers.max_pooling2d(h, 2, 2, padding="same"))
        h = tf.layers.dense(h, 32, activation=tf.nn.relu, kernel_regularizer=reg, name="fc1")
        h = tf.layers.dropout(h, rate=0.0, training=training)
        logits = tf.layers.dense(h, K, name="logits")
    tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    loss = tf.losses.get_total_loss()
    reg_loss = tf.losses.get_regularization_loss()
    global_step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.05, global_step, 5, 0.5, staircase=True)
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = tf.train.MomentumOptimizer(lr, 0.9).minimize(loss, global_step=global_step)
    acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    out = {"losses": [], "reg_losses": [], "lr": [], "n_update_ops": len(update_ops)}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.3)
        for step in range(steps):
            i = (step % 4) * N
            l, r, lrv, _ = sess.run([loss, reg_loss, lr, train_op], {x: X[i:i + N], y: Y[i:i + N], training: True})
            out["losses"].append(l), out["reg_losses"].append(r), out["lr"].append(lrv)
        out["eval"] = sess.run([loss, acc], {x: X, y: Y, training: False})
        out["global_step"] = sess.run(global_step)
        out["vars"] = _values(tf, sess)
    return out


def word2vec(tf, seed, steps):
    rng = np.random.RandomState(seed)
    V, D, B, window = 50, 16, 32, 2
    corpus = (rng.zipf(1.5, size=2000) % V).astype(np.int64)
    pairs = np.array([(corpus[i], corpus[i + j]) for i in range(window, len(corpus) - window)
                      for j in range(-window, window + 1) if j != 0])
    train_inputs = tf.placeholder(tf.int32, shape=[B])
    train_labels = tf.placeholder(tf.int32, shape=[B, 1])
    valid_dataset = tf.constant(np.array([1, 3, 5, 7], dtype=np.int32), dtype=tf.int32)
    with tf.name_scope("embeddings"):
        embeddings = tf.Variable(tf.random_uniform([V, D], -1.0, 1.0), name="emb")
        embed = tf.nn.embedding_lookup(embeddings, train_inputs)
    with tf.name_scope("weights"):
        nce_weights = tf.Variable(tf.truncated_normal([V, D], stddev=1.0 / np.sqrt(D)), name="nce_w")
    with tf.name_scope("biases"):
        nce_biases = tf.Variable(tf.zeros([V]), name="nce_b")
    logits = tf.matmul(embed, nce_weights, transpose_b=True) + nce_biases
    full_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.reshape(train_labels, [-1]), logits=logits))
    nce = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=train_labels,
                                        inputs=embed, num_sampled=8, num_classes=V))
    ssm = tf.reduce_mean(tf.nn.sampled_softmax_loss(weights=nce_weights, biases=nce_biases, labels=train_labels,
                                                    inputs=embed, num_sampled=8, num_classes=V))
    optimizer = tf.train.GradientDescentOptimizer(1.0).minimize(full_loss)
    nce_opt = tf.train.GradientDescentOptimizer(0.5).minimize(nce)
    normalized = embeddings / tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keepdims=True))
    similarity = tf.matmul(tf.nn.embedding_lookup(normalized, valid_dataset), normalized, transpose_b=True)
    nearest = tf.nn.top_k(similarity, k=4)

    def feed(step):
        k = (step * B) % (len(pairs) - B)
        return {train_inputs: pairs[k:k + B, 0].astype(np.int32), train_labels: pairs[k:k + B, 1:2].astype(np.int32)}

    out = {"losses": []}
    nces = []
    with tf.Session() as sess:
        tf.global_variables_initializer().run()
        _set_vars(tf, sess, seed, 0.5)
        for step in range(steps):
            out["losses"].append(sess.run([optimizer, full_loss], feed(step))[1])
        out["similarity"], out["nearest"] = sess.run([similarity, nearest.indices])
        out["vars"] = _values(tf, sess)
        for step in range(20):
            nces.append(sess.run([nce_opt, nce, ssm], feed(step))[1:])
    # nce / sampled softmax draw their own negatives: only behaviour is comparable
    nces = np.array(nces)
    out["sampled_finite"] = np.isfinite(nces).all()
    out["nce_decreases"] = nces[-5:, 0].mean() < nces[:5, 0].mean()
    return out


def char_rnn(tf, seed, steps):
    rng = np.random.RandomState(seed)
    V, E, Hd, B, T = 20, 8, 16, 4, 7
    text = rng.randint(0, V, size=B * T * 30 + 1)
    xs, ys = text[:-1].reshape(B, -1), text[1:].reshape(B, -1)
    input_data = tf.placeholder(tf.int32, [B, T], name="input")
    targets = tf.placeholder(tf.int32, [B, T], name="targets")
    seq_len = tf.placeholder(tf.int32, [B], name="seq_len")
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.LSTMCell(Hd, use_peepholes=True, forget_bias=1.0),
                                        tf.nn.rnn_cell.LSTMCell(Hd, state_is_tuple=True)], state_is_tuple=True)
    initial_state = cell.zero_state(B, tf.float32)
    with tf.variable_scope("rnnlm"):
        softmax_w = tf.get_variable("softmax_w", [Hd, V])
        softmax_b = tf.get_variable("softmax_b", [V])
        embedding = tf.get_variable("embedding", [V, E])
        inputs = tf.nn.embedding_lookup(embedding, input_data)
    outputs, last_state = tf.nn.dynamic_rnn(cell, inputs, sequence_length=seq_len, initial_state=initial_state,
                                            scope="rnnlm")
    logits = tf.matmul(tf.reshape(outputs, [-1, Hd]), softmax_w) + softmax_b
    probs = tf.nn.softmax(logits)
    mask = tf.reshape(tf.sequence_mask(seq_len, T, dtype=tf.float32), [-1])
    xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.reshape(targets, [-1]), logits=logits)
    cost = tf.reduce_sum(xent * mask) / tf.reduce_sum(mask)
    lr = tf.Variable(0.0, trainable=False, name="lr")
    new_lr = tf.placeholder(tf.float32, [], name="new_lr")
    lr_update = tf.assign(lr, new_lr)
    tvars = tf.trainable_variables()
    grads_raw = tf.gradients(cost, tvars)
    grads, gnorm = tf.clip_by_global_norm(grads_raw, 1.0)
    train_op = tf.train.AdamOptimizer(lr).apply_gradients(zip(grads, tvars))

    def state_feed(feed, state):
        for i, (c, h) in enumerate(initial_state):
            feed[c], feed[h] = state[i].c, state[i].h
        return feed

    out = {"losses": [], "grad_norms": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.3)
        state = sess.run(initial_state)
        for step in range(steps):
            if step % 10 == 0:
                sess.run(lr_update, {new_lr: 0.02 * (0.7 ** (step // 10))})
            j = step * T
            lens = np.array([T, T - 1, T - 3, T], dtype=np.int32) if step % 3 else np.full(B, T, np.int32)
            feed = state_feed({input_data: xs[:, j:j + T], targets: ys[:, j:j + T], seq_len: lens}, state)
            if step == 0:
                out["grads0"] = dict(zip([v.name for v in tvars], sess.run(grads_raw, feed)))
            l, n, state, _ = sess.run([cost, gnorm, last_state, train_op], feed)
            out["losses"].append(l), out["grad_norms"].append(n)
        out["state_c"] = state[1].c
        zero = sess.run(cell.zero_state(B, tf.float32))
        out["probs"] = sess.run(probs, state_feed({input_data: xs[:, :T], seq_len: np.full(B, T, np.int32)}, zero))
        out["vars"] = _values(tf, sess)
    return out


def autoencoder(tf, seed, steps):
    rng = np.random.RandomState(seed)
    D, H1, H2, N = 36, 16, 6, 200
    X = (rng.rand(N, D) < 0.3).astype(np.float32)
    x = tf.placeholder("float", [None, D])
    with tf.variable_scope("encoder"):
        h = tf.layers.dense(x, H1, activation=tf.nn.sigmoid, name="l1")
        z = tf.layers.dense(h, H2, activation=tf.nn.tanh, name="l2")
    with tf.variable_scope("decoder"):
        h = tf.layers.dense(z, H1, activation=tf.nn.elu, name="l1", kernel_initializer=tf.glorot_uniform_initializer())
        logits = tf.layers.dense(h, D, activation=None, name="logits")
    recon = tf.nn.sigmoid(logits)
    loss1 = tf.losses.sigmoid_cross_entropy(multi_class_labels=x, logits=logits, label_smoothing=0.1)
    loss_raw = tf.reduce_mean(tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(labels=x, logits=logits), 1))
    mse = tf.reduce_mean(tf.pow(x - recon, 2))
    total = loss1 + 0.01 * loss_raw
    enc_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="encoder")
    dec_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="decoder")
    train1 = tf.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.5, epsilon=1e-6, centered=True).minimize(
        total, var_list=enc_vars + dec_vars)
    train2 = tf.train.RMSPropOptimizer(0.005).minimize(mse, var_list=dec_vars)
    out = {"losses": [], "mse_losses": [], "encoder_vars": sorted(v.name for v in enc_vars)}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.4)
        for step in range(steps):
            b = X[(step * 25) % N:(step * 25) % N + 25]
            out["losses"].append(sess.run([train1, total], {x: b})[1])
            if step % 4 == 3:
                out["mse_losses"].append(sess.run([train2, mse], {x: b})[1])
        out["codes"] = sess.run(z, {x: X[:10]})
        out["vars"] = _values(tf, sess)
    return out


def gan(tf, seed, steps):
    rng = np.random.RandomState(seed)
    Z, D, B = 4, 8, 16
    real = (rng.normal(size=(B * 10, D)) * 0.5 + np.linspace(-1, 1, D)).astype(np.float32)
    noise = rng.uniform(-1, 1, size=(steps, B, Z)).astype(np.float32)
    X = tf.placeholder(tf.float32, [None, D], name="X")
    z = tf.placeholder(tf.float32, [None, Z], name="z")

    def generator(z):
        with tf.variable_scope("generator"):
            w1 = tf.get_variable("w1", [Z, 16], initializer=tf.random_normal_initializer(stddev=0.1))
            b1 = tf.get_variable("b1", [16], initializer=tf.zeros_initializer())
            h = tf.nn.leaky_relu(tf.matmul(z, w1) + b1, alpha=0.2)
            h = tf.layers.dense(h, 16, activation=tf.nn.relu, name="h2")
            return tf.layers.dense(h, D, activation=tf.nn.tanh, name="out")

    def discriminator(x, reuse=None):
        with tf.variable_scope("discriminator", reuse=reuse):
            h = tf.layers.dense(x, 16, name="h1")
            h = tf.layers.dense(tf.maximum(0.2 * h, h), 8, activation=tf.nn.softplus, name="h2")
            logit = tf.layers.dense(h, 1, name="logit")
            return tf.nn.sigmoid(logit), logit

    G = generator(z)
    _, d_logit_real = discriminator(X)
    d_fake, d_logit_fake = discriminator(G, reuse=True)
    xent = tf.nn.sigmoid_cross_entropy_with_logits
    d_loss = (tf.reduce_mean(xent(logits=d_logit_real, labels=tf.ones_like(d_logit_real) * 0.9))
              + tf.reduce_mean(xent(logits=d_logit_fake, labels=tf.zeros_like(d_logit_fake))))
    g_loss = tf.reduce_mean(xent(logits=d_logit_fake, labels=tf.ones_like(d_logit_fake)))
    g_loss_log = -tf.reduce_mean(tf.log(d_fake + 1e-8))
    d_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="discriminator")
    g_vars = [v for v in tf.trainable_variables() if v.name.startswith("generator/")]
    d_solver = tf.train.AdamOptimizer(2e-3, beta1=0.5).minimize(d_loss, var_list=d_vars)
    g_solver = tf.train.AdamOptimizer(2e-3, beta1=0.5, name="G_Adam").minimize(g_loss, var_list=g_vars)
    g_grads0 = tf.gradients(g_loss, g_vars)
    out = {"d_losses": [], "g_losses": [], "g_log_losses": [], "d_vars": sorted(v.name for v in d_vars)}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        out["g_grads0"] = dict(zip([v.name for v in g_vars], sess.run(g_grads0, {z: noise[0]})))
        for it in range(steps):
            xb = real[(it % 10) * B:(it % 10 + 1) * B]
            out["d_losses"].append(sess.run([d_solver, d_loss], {X: xb, z: noise[it]})[1])
            _, gl, gll = sess.run([g_solver, g_loss, g_loss_log], {z: noise[it]})
            out["g_losses"].append(gl), out["g_log_losses"].append(gll)
        out["samples"] = sess.run(G, {z: noise[0]})
        out["vars"] = _values(tf, sess)
    return out


def birnn_attention(tf, seed, steps):
    rng = np.random.RandomState(seed)
    V, E, Hd, A, C, B, T = 30, 8, 6, 5, 3, 8, 9
    Xs = rng.randint(1, V, size=(B * 5, T)).astype(np.int32)
    Ls = rng.randint(3, T + 1, size=(B * 5,)).astype(np.int32)
    for i, n in enumerate(Ls):
        Xs[i, n:] = 0
    Ys = (Xs.sum(1) % C).astype(np.int32)
    x, y, lens = tf.placeholder(tf.int32, [None, T]), tf.placeholder(tf.int32, [None]), tf.placeholder(tf.int32, [None])
    inp = tf.nn.embedding_lookup(tf.get_variable("embedding", [V, E]), x)
    (out_fw, out_bw), (st_fw, st_bw) = tf.nn.bidirectional_dynamic_rnn(
        tf.nn.rnn_cell.GRUCell(Hd), tf.nn.rnn_cell.GRUCell(Hd), inp, sequence_length=lens, dtype=tf.float32,
        scope="bi_gru")
    H = tf.concat([out_fw, out_bw], axis=2)
    with tf.variable_scope("attention"):
        w_omega = tf.get_variable("w_omega", [2 * Hd, A])
        b_omega = tf.get_variable("b_omega", [A])
        u_omega = tf.get_variable("u_omega", [A])
        vu = tf.tensordot(tf.tanh(tf.tensordot(H, w_omega, axes=1) + b_omega), u_omega, axes=1, name="vu")
        vu = tf.where(tf.sequence_mask(lens, maxlen=T), vu, tf.ones_like(vu) * -1e9)
        alphas = tf.nn.softmax(vu, name="alphas")
        ctx = tf.reduce_sum(H * tf.expand_dims(alphas, -1), 1)
        ctx2 = tf.squeeze(tf.matmul(tf.expand_dims(alphas, 1), H), axis=1)
    logits = tf.layers.dense(tf.concat([ctx, st_fw, st_bw], 1), C, name="out")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1, output_type=tf.int32), y), tf.float32))
    opt = tf.train.AdagradOptimizer(0.3, initial_accumulator_value=0.1)
    gvs = opt.compute_gradients(loss)
    train_op = opt.apply_gradients(gvs)
    out = {"losses": [], "acc": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        g0 = sess.run([g for g, _ in gvs], {x: Xs[:B], y: Ys[:B], lens: Ls[:B]})
        out["grads0"] = {v.name: g for (_, v), g in zip(gvs, g0)}
        for step in range(steps):
            s = (step % 5) * B
            l, a, _ = sess.run([loss, acc, train_op], {x: Xs[s:s + B], y: Ys[s:s + B], lens: Ls[s:s + B]})
            out["losses"].append(l), out["acc"].append(a)
        out["alphas"], out["ctx"], c2, out["out_fw"] = sess.run([alphas, ctx, ctx2, out_fw], {x: Xs, lens: Ls})
        out["ctx_forms_agree"] = np.allclose(out["ctx"], c2, atol=1e-6)
        out["vars"] = _values(tf, sess)
    return out


def _padded_batches(tf, seed, V, C, B, T):
    """Token batches with lengths 0..T and labels, and their placeholders (the RNN programs)."""
    rng = np.random.RandomState(seed)
    Xs = rng.randint(0, V, size=(B * 4, T)).astype(np.int32)
    Ls = rng.randint(0, T + 1, size=(B * 4,)).astype(np.int32)
    data = (Xs, (Xs[:, 0] % C).astype(np.int32), Ls)
    return data, (tf.placeholder(tf.int32, [B, T]), tf.placeholder(tf.int32, [B]), tf.placeholder(tf.int32, [B]))


def _train_classifier(tf, seed, steps, final, C, data, holders, probes):
    """A dense head on `final`, Adam, the first batch's gradients and `probes` (name -> tensor),
    then `steps` steps over the four batches: losses and every variable."""
    B = holders[1].shape.as_list()[0]
    logits = tf.layers.dense(final, C, name="out")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=holders[1], logits=logits))
    opt = tf.train.AdamOptimizer(0.05)
    gvs = opt.compute_gradients(loss)
    train_op = opt.apply_gradients(gvs)
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        feed0 = {h: d[:B] for h, d in zip(holders, data)}
        out["grads0"] = {v.name: g for (_, v), g in zip(gvs, sess.run([g for g, _ in gvs], feed0))}
        out.update(zip(probes, sess.run(list(probes.values()), feed0)))
        for step in range(steps):
            s = (step % 4) * B
            l, _ = sess.run([loss, train_op], {h: d[s:s + B] for h, d in zip(holders, data)})
            out["losses"].append(l)
        out["vars"] = _values(tf, sess)
    return out


def stacked_rnns(tf, seed, steps):
    """What collflow runs as fused whole-sequence ops: a MultiRNNCell of an LSTM, a residual
    GRU and a wrapped LSTM over padded batches (sequence_length), then static_rnn."""
    V, E, Hd, C, B, T = 25, 6, 6, 3, 6, 8
    data, (x, y, lens) = _padded_batches(tf, seed, V, C, B, T)
    inp = tf.nn.embedding_lookup(tf.get_variable("embedding", [V, E]), x)
    cell = tf.nn.rnn_cell.MultiRNNCell([
        tf.nn.rnn_cell.LSTMCell(Hd, forget_bias=0.5),
        tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.GRUCell(Hd)),
        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(Hd), output_keep_prob=1.0)])
    outs, st = tf.nn.dynamic_rnn(cell, inp, sequence_length=lens, dtype=tf.float32, scope="stack")
    souts, sst = tf.nn.static_rnn(tf.nn.rnn_cell.LSTMCell(Hd), tf.unstack(outs, axis=1), sequence_length=lens,
                                  dtype=tf.float32, scope="static")
    final = tf.concat([st[0].h, st[1], st[2].c, sst.h, souts[-1]], 1)
    return _train_classifier(tf, seed, steps, final, C, data, (x, y, lens),
                             {"outs0": outs, "souts0": tf.stack(souts, 1)})


def peephole_lstm(tf, seed, steps):
    """LSTMCell with peepholes and a cell clip that bites forward, peepholes and a clipped
    projection (num_proj) backward, over padded batches (in collflow each direction is one
    fused BlockLSTM op with all of it inside)."""
    V, E, Hd, C, B, T = 20, 5, 6, 3, 6, 7
    data, (x, y, lens) = _padded_batches(tf, seed, V, C, B, T)
    inp = tf.nn.embedding_lookup(tf.get_variable("embedding", [V, E]), x) * 3.0
    fw = tf.nn.rnn_cell.LSTMCell(Hd, use_peepholes=True, cell_clip=0.4, forget_bias=0.8)
    bw = tf.nn.rnn_cell.LSTMCell(Hd, use_peepholes=True, num_proj=4, proj_clip=0.5)
    (of, ob), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(fw, bw, inp, sequence_length=lens, dtype=tf.float32,
                                                         scope="birnn")
    final = tf.concat([sf.c, sf.h, sb.h, tf.reduce_sum(of, 1), tf.reduce_sum(ob, 1)], 1)
    return _train_classifier(tf, seed, steps, final, C, data, (x, y, lens),
                             {"outs0": tf.concat([of, ob], 2), "c0": sf.c})


def custom_loop(tf, seed, steps):
    rng = np.random.RandomState(seed)
    D, H, B = 10, 12, 20
    Xall = rng.normal(size=(200, D)).astype(np.float32)
    Yall = (np.tanh(Xall @ rng.normal(size=(D, 1))) + 0.1 * rng.normal(size=(200, 1))).astype(np.float32)

    def model():
        with tf.variable_scope("model"):
            return [tf.get_variable("W1", [D, H]), tf.get_variable("b1", [H]),
                    tf.get_variable("W2", [H, 1]), tf.get_variable("b2", [1])]

    def net(x, W1, b1, W2, b2):
        return tf.matmul(tf.nn.relu6(tf.matmul(x, W1) + b1), W2) + b2

    x, y = tf.placeholder(tf.float32, [None, D]), tf.placeholder(tf.float32, [None, 1])
    noise_scale = tf.placeholder_with_default(0.0, [], name="noise_scale")
    weights = model()
    pred = net(x, *weights)
    loss = tf.losses.huber_loss(y, pred, delta=0.5) + tf.losses.mean_squared_error(y, pred, weights=0.5)
    global_step = tf.Variable(0, trainable=False, name="global_step", dtype=tf.int64)
    lr = tf.train.polynomial_decay(0.1, global_step, 30, end_learning_rate=0.01, power=2.0)
    opt = tf.train.MomentumOptimizer(lr, 0.8, use_nesterov=True)
    noisy = []
    for i, (g, v) in enumerate(opt.compute_gradients(loss)):
        shape = v.get_shape().as_list()  # a fixed "gradient noise" pattern scaled by a fed scale
        pat = tf.constant(np.sin(np.arange(np.prod(shape)) + i).reshape(shape).astype(np.float32))
        g = g + noise_scale * pat / tf.sqrt(1.0 + tf.cast(global_step, tf.float32))
        noisy.append((tf.clip_by_value(g, -0.05, 0.05), v))
    apply_op = opt.apply_gradients(noisy, global_step=global_step)
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=global_step)
    with tf.control_dependencies([apply_op]):
        train_op = ema.apply(tf.trainable_variables())
    avg_loss = tf.reduce_mean(tf.square(net(x, *[ema.average(v) for v in weights]) - y))
    saver = tf.train.Saver(max_to_keep=3)
    ckdir = tempfile.mkdtemp()
    out = {"losses": [], "avg_losses": []}
    half = steps // 2

    def feed(step, scale=0.02):
        s = (step * B) % 200
        return {x: Xall[s:s + B], y: Yall[s:s + B], noise_scale: scale}

    try:
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _set_vars(tf, sess, seed, 0.5, weights)
            for step in range(half):
                out["losses"].append(sess.run([loss, train_op], feed(step))[0])
            path = saver.save(sess, os.path.join(ckdir, "model.ckpt"), global_step=global_step)
            out["saved_step"] = sess.run(global_step)
            for step in range(3):  # thrown away by the restore
                sess.run(train_op, {x: Xall[:B], y: Yall[:B] * 3, noise_scale: 1.0})
        with tf.Session() as sess:
            saver.restore(sess, tf.train.latest_checkpoint(ckdir))
            for step in range(half, steps):
                # a run of its own: fetched with train_op, TensorFlow's reads of the averages
                # race ema.apply's updates (reference variables, no ordering between them)
                out["avg_losses"].append(sess.run(avg_loss, feed(step)))
                out["losses"].append(sess.run([loss, train_op], feed(step))[0])
            out["vars"] = _values(tf, sess)
            saver.save(sess, os.path.join(ckdir, "model.ckpt"), global_step=global_step)
        # an evaluation graph restoring the moving averages into the model's variables
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [None, D])
            ev = net(x, *model())
            restore_map = tf.train.ExponentialMovingAverage(0.9).variables_to_restore()
            with tf.Session() as sess:
                tf.train.Saver(restore_map).restore(sess, tf.train.latest_checkpoint(ckdir))
                out["eval"] = sess.run(ev, {x: Xall[:10]})
            out["restore_keys"] = sorted(restore_map)
            paths = tf.train.get_checkpoint_state(ckdir).all_model_checkpoint_paths
            out["checkpoints"] = sorted(os.path.basename(p) for p in paths) + [os.path.basename(path)]
    finally:
        shutil.rmtree(ckdir)
    return out


def data_ftrl(tf, seed, steps, shuffle):
    tf.set_random_seed(1234)
    rng = np.random.RandomState(seed)
    N, D = 50, 6
    X = rng.normal(size=(N, D)).astype(np.float32)
    Y = (X @ rng.normal(size=(D,)) > 0).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices({"x": X, "y": Y, "id": np.arange(N, dtype=np.int64)})
    ds = (ds.shuffle(buffer_size=20, seed=42) if shuffle else ds).batch(8).repeat()
    feats = tf.data.make_one_shot_iterator(ds).get_next()
    ds2 = tf.data.Dataset.from_tensor_slices((X, Y)).map(lambda a, b: (a * 2.0, b)) \
        .batch(16, drop_remainder=True).repeat(2)
    x2, y2 = tf.data.make_one_shot_iterator(ds2).get_next()
    w, b = tf.get_variable("w", [D, 1]), tf.get_variable("b", [1])
    logits = tf.squeeze(tf.matmul(feats["x"], w) + b, 1)
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=feats["y"], logits=logits))
    train = tf.train.FtrlOptimizer(0.5, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                                   l1_regularization_strength=0.01, l2_regularization_strength=0.001).minimize(loss)
    with tf.variable_scope("lin"):
        w2 = tf.get_variable("w2", [D, 1])
    loss2 = tf.reduce_mean(tf.square(tf.squeeze(tf.matmul(x2, w2), 1) - y2))
    train2 = tf.train.FtrlOptimizer(0.2, l2_shrinkage_regularization_strength=0.01).minimize(loss2)
    losses, order, losses2, order2 = [], [], [], []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.3)
        for step in range(steps):
            l, i, _ = sess.run([loss, feats["id"], train])
            losses.append(l), order.append(i)
        try:
            while True:
                l2, yy, _ = sess.run([loss2, y2, train2])
                losses2.append(l2), order2.append(yy)
        except tf.errors.OutOfRangeError:
            pass
        vals = _values(tf, sess)
    o = np.concatenate(order)
    ep1, ep2 = o[:50], o[50:100]
    out = {"batch_sizes": [len(a) for a in order], "second_pipeline_batches": len(losses2),
           "epochs_are_permutations": [sorted(ep1) == list(range(N)), sorted(ep2) == list(range(N))],
           "within_buffer": all(ep1[k] <= k + 19 for k in range(N)),
           "reshuffled": not np.array_equal(ep1, ep2) if shuffle else np.array_equal(ep1, ep2)}
    if not shuffle:  # a shuffled order is TensorFlow's own RNG stream: only its properties compare
        out.update(losses=losses, order=o, losses2=losses2, order2=np.concatenate(order2), vars=vals)
    return out


def while_rnn(tf, seed, steps):
    rng = np.random.RandomState(seed)
    B, T, D, H = 4, 6, 3, 5
    Xs = rng.normal(size=(10, T, B, D)).astype(np.float32)  # time-major
    Ys = rng.normal(size=(10, B, 1)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, None, D], name="x")
    y = tf.placeholder(tf.float32, [None, 1])
    lens = tf.placeholder(tf.int32, [None])
    # resource variables: with reference variables TensorFlow's own result is racy (reads of
    # Wx/Wh in the while loop's backprop against the optimizer's in-place updates)
    Wx, Wh, bh, Wo = [tf.get_variable(n, s, use_resource=True)
                      for n, s in (("Wx", [D, H]), ("Wh", [H, H]), ("bh", [H]), ("Wo", [H, 1]))]
    n_steps, batch = tf.shape(x)[0], tf.shape(x)[1]
    inputs_ta = tf.TensorArray(tf.float32, size=n_steps).unstack(x)
    outputs_ta = tf.TensorArray(tf.float32, size=n_steps, element_shape=tf.TensorShape([None, H]))
    h0 = tf.zeros(tf.stack([batch, H]))

    def body(t, h, ta, acc):
        h_new = tf.tanh(tf.matmul(inputs_ta.read(t), Wx) + tf.matmul(h, Wh) + bh)
        alive = tf.expand_dims(tf.cast(t < lens, tf.float32), 1)
        h_new = alive * h_new + (1.0 - alive) * h
        acc = tf.cond(tf.equal(t % 2, 0), lambda: acc + tf.reduce_sum(h_new ** 2), lambda: acc)
        return t + 1, h_new, ta.write(t, h_new), acc

    _, h_final, out_ta, acc = tf.while_loop(lambda t, *_: t < n_steps, body,
                                            [tf.constant(0), h0, outputs_ta, tf.constant(0.0)],
                                            parallel_iterations=1)
    outs = out_ta.stack()
    loss = (tf.reduce_mean(tf.squared_difference(tf.matmul(h_final, Wo), y)) + 1e-3 * acc
            + 0.01 * tf.reduce_mean(tf.reduce_mean(outs, axis=0)))
    grads = tf.gradients(loss, [Wx, Wh, bh, Wo])
    hs = tf.scan(lambda h, xt: tf.tanh(tf.matmul(xt, Wx) + tf.matmul(h, Wh) + bh), x, initializer=h0)
    train = tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6).apply_gradients(zip(grads, [Wx, Wh, bh, Wo]))
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.6)
        g0 = sess.run(grads, {x: Xs[0], y: Ys[0], lens: [6, 4, 2, 6]})
        out["grads0"] = dict(zip(["Wx", "Wh", "bh", "Wo"], g0))
        for step in range(steps):
            Ti = T if step % 2 == 0 else T - 2  # the time axis' length varies between runs
            l, _ = sess.run([loss, train], {x: Xs[step % 10, :Ti], y: Ys[step % 10], lens: [Ti, 3, 1, Ti - 1]})
            out["losses"].append(l)
        out["outs"], out["scan"] = sess.run([outs, hs], {x: Xs[0], lens: [T] * B})
        out["vars"] = _values(tf, sess)
    return out


def mnist_deep(tf, seed, steps, blank=False):
    """The "Deep MNIST for experts" tutorial, smaller.  blank: digits on an empty background,
    as MNIST's are: there every conv output is its bias, so ReLU -> max pool meets windows of
    equal positive values (ties), whose gradient goes to the first (and the fused ReLU/pool
    gradient runs on them)."""
    rng = np.random.RandomState(seed)
    S, N = 14, 64
    imgs = rng.rand(N * 4, S * S).astype(np.float32)
    if blank:
        imgs = imgs.reshape(N * 4, S, S)
        imgs[:, :4] = imgs[:, -3:] = imgs[:, :, :3] = imgs[:, :, -4:] = 0
        imgs = imgs.reshape(N * 4, S * S)
    labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, N * 4)]
    x, y_ = tf.placeholder(tf.float32, [None, S * S]), tf.placeholder(tf.float32, [None, 10])

    def weight_variable(shape):
        return tf.Variable(tf.truncated_normal(shape, stddev=0.1))

    def bias_variable(shape):
        return tf.Variable(tf.constant(0.1, shape=shape))

    W_conv1, b_conv1 = weight_variable([5, 5, 1, 8]), bias_variable([8])
    h = tf.nn.relu(tf.nn.conv2d(tf.reshape(x, [-1, S, S, 1]), W_conv1, strides=[1, 1, 1, 1], padding="SAME") + b_conv1)
    h = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    W_conv2, b_conv2 = weight_variable([3, 3, 8, 16]), bias_variable([16])
    h = tf.nn.relu(tf.nn.conv2d(h, W_conv2, [1, 1, 1, 1], "VALID") + b_conv2)
    h = tf.nn.avg_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    W_fc1, b_fc1 = weight_variable([3 * 3 * 16, 32]), bias_variable([32])
    h_fc1 = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, 3 * 3 * 16]), W_fc1) + b_fc1)
    keep_prob = tf.placeholder(tf.float32)
    h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)
    W_fc2, b_fc2 = weight_variable([32, 10]), bias_variable([10])
    y_conv = tf.matmul(h_fc1_drop, W_fc2) + b_fc2
    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y_conv))
    manual = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(tf.nn.softmax(y_conv) + 1e-10), reduction_indices=[1]))
    # Adam turns a gradient summed to near 0 (the blank border's weights) into a full step of
    # either sign, so rounding order alone moves those weights by a step: momentum there
    opt = tf.train.MomentumOptimizer(0.05, 0.9) if blank else tf.train.AdamOptimizer(1e-3)
    train_step = opt.minimize(cross_entropy)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1)), tf.float32))
    out = {"losses": [], "manual_losses": [], "acc": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.3)
        for i in range(steps):
            s = (i % 4) * N
            fd = {x: imgs[s:s + N], y_: labels[s:s + N], keep_prob: 1.0}
            if i % 10 == 0:
                out["acc"].append(accuracy.eval(feed_dict=fd))
            l, l2, _ = sess.run([cross_entropy, manual, train_step], fd)
            out["losses"].append(l), out["manual_losses"].append(l2)
        out["final_acc"] = accuracy.eval(feed_dict={x: imgs, y_: labels, keep_prob: 1.0})
        # dropout draws its own mask: compare its behaviour, not its values
        hd, hf = sess.run([h_fc1_drop, h_fc1], {x: imgs, keep_prob: 0.5})
        nz = hf != 0
        out["dropout_keeps_half"] = abs((hd[nz] != 0).mean() - 0.5) < 0.05
        out["dropout_scales"] = np.allclose(hd[nz & (hd != 0)], 2 * hf[nz & (hd != 0)], rtol=1e-6)
        out["vars"] = _values(tf, sess)
    return out


def mobilenet(tf, seed, steps):
    """MobileNet's building blocks: a strided conv, depthwise + pointwise blocks written with
    tf.nn.depthwise_conv2d (one with a channel multiplier, one atrous) and batch norm, a
    tf.layers.separable_conv2d, global average pooling; RMSProp (MobileNet's optimizer)."""
    rng = np.random.RandomState(seed)
    N, S, K = 16, 12, 4
    X = rng.normal(size=(N * 3, S, S, 3)).astype(np.float32)
    Y = rng.randint(0, K, size=(N * 3,)).astype(np.int64)
    x = tf.placeholder(tf.float32, [None, S, S, 3])
    y = tf.placeholder(tf.int64, [None])
    training = tf.placeholder(tf.bool, [])

    def block(h, name, cin, mult, cout, stride, rate=None):
        with tf.variable_scope(name):
            dw = tf.get_variable("depthwise", [3, 3, cin, mult])
            pw = tf.get_variable("pointwise", [1, 1, cin * mult, cout])
            h = tf.nn.depthwise_conv2d(h, dw, [1, stride, stride, 1], "SAME", rate=rate)
            h = tf.nn.relu6(tf.layers.batch_normalization(h, training=training, name="bn_dw"))
            h = tf.nn.conv2d(h, pw, [1, 1, 1, 1], "VALID")
            return tf.nn.relu6(tf.layers.batch_normalization(h, training=training, name="bn_pw"))

    h = tf.layers.conv2d(x, 8, 3, strides=2, padding="same", use_bias=False, name="stem")
    h = tf.nn.relu6(tf.layers.batch_normalization(h, training=training, name="stem_bn"))
    h = block(h, "block1", 8, 2, 12, 1)
    h = block(h, "block2", 12, 1, 16, 2)
    h = block(h, "block3", 16, 1, 16, 1, rate=[2, 2])
    h = tf.layers.separable_conv2d(h, 20, 3, padding="same", depth_multiplier=1, activation=tf.nn.relu,
                                   name="sep")
    logits = tf.layers.dense(tf.reduce_mean(h, [1, 2]), K, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = tf.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.9).minimize(loss)
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.4)
        for step in range(steps):
            i = (step % 3) * N
            out["losses"].append(sess.run([loss, train_op], {x: X[i:i + N], y: Y[i:i + N], training: True})[0])
        out["eval_loss"] = sess.run(loss, {x: X, y: Y, training: False})
        out["vars"] = _values(tf, sess)
    return out


# (id, program, keyword arguments)
PROGRAMS = [
    ("cifar_convnet", cifar, dict(steps=24)),
    ("word2vec", word2vec, dict(steps=40)),
    ("char_rnn", char_rnn, dict(steps=30)),
    ("autoencoder", autoencoder, dict(steps=40)),
    ("gan", gan, dict(steps=40)),
    ("birnn_attention", birnn_attention, dict(steps=30)),
    ("stacked_rnns", stacked_rnns, dict(steps=25)),
    ("peephole_lstm", peephole_lstm, dict(steps=25)),
    ("custom_loop_saver_ema", custom_loop, dict(steps=40)),
    ("data_ftrl_shuffled", data_ftrl, dict(steps=25, shuffle=True)),
    ("data_ftrl", data_ftrl, dict(steps=25, shuffle=False)),
    ("while_loop_rnn", while_rnn, dict(steps=30)),
    ("mnist_deep", mnist_deep, dict(steps=30)),
    ("mnist_deep_blank_background", mnist_deep, dict(steps=30, blank=True)),
    ("mobilenet_depthwise_separable", mobilenet, dict(steps=20)),
]


def _run(tf, program, kwargs, seed=0):
    with tf.Graph().as_default():
        return program(tf, seed, **kwargs)


def _compare(key, got, want):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), f"{key}: names differ"
        for name in want:
            _compare(f"{key}[{name}]", got[name], want[name])
        return
    if hasattr(want, "indices"):  # an IndexedSlicesValue (embedding gradients) stays sparse in both
        assert hasattr(got, "indices"), f"{key}: dense, TensorFlow's is IndexedSlices"
        for part in ("values", "indices", "dense_shape"):
            _compare(f"{key}.{part}", getattr(got, part), getattr(want, part))
        return
    if isinstance(want, (str, bool, np.bool_)) or (isinstance(want, list) and want and isinstance(want[0], str)):
        assert got == want, f"{key}: {got!r} != {want!r}"
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (key, got.shape, want.shape)
    if not np.issubdtype(want.dtype, np.floating):
        np.testing.assert_array_equal(got, want, err_msg=key)
    elif "loss" in key.split("[")[0]:
        np.testing.assert_allclose(got, want, rtol=LOSS_RTOL, err_msg=key)
    else:
        scale = float(np.abs(want).max()) if want.size else 0.0
        np.testing.assert_allclose(got, want, rtol=0, atol=TOL * scale + ATOL, err_msg=key)


def compare_program(program, kwargs, seed=0):
    """Runs program(tf, seed, **kwargs) in TensorFlow and in collflow, each in a fresh graph,
    and compares every result (the other programs files share this)."""
    want = _run(tft, program, kwargs, seed)
    got = _run(cft, program, kwargs, seed)
    assert sorted(got) == sorted(want)
    for key in want:
        _compare(key, got[key], want[key])


@pytest.mark.parametrize("name,program,kwargs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program(name, program, kwargs):
    compare_program(program, kwargs)
