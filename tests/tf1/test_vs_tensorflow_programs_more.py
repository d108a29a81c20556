"""More whole TF1 training programs against real TensorFlow (see test_vs_tensorflow_programs.py
for the method): a Transformer encoder classifier (multi-head attention from matmul and
transposes, padding masks, sinusoidal positions, hand-written layer norm, a warmup/rsqrt
learning-rate schedule on the global step, Adam with beta2 0.98, label smoothing, global-norm
clipping, dropout off through a placeholder_with_default), a VAE (reparameterised with fed
noise, tf.distributions' Normal and kl_divergence, sigmoid cross-entropy), a DQN update (an
online and a target network, the target synced by assign ops, gather_nd of the taken
actions, Huber loss, centered RMSProp) and a small ResNet (tf.layers batch norm with a
training placeholder and UPDATE_OPS, Nesterov momentum on a piecewise-constant schedule, L2
weight decay from the kernels, an ExponentialMovingAverage of the weights).
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

from test_vs_tensorflow_programs import _set_vars, _values, compare_program  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def transformer(tf, seed, steps):
    rng = np.random.RandomState(seed)
    V, T, D, H, C, B = 20, 7, 16, 4, 3, 8
    X = rng.randint(1, V, (B * 3, T)).astype(np.int32)
    L = rng.randint(2, T + 1, B * 3).astype(np.int32)
    for i, n in enumerate(L):
        X[i, n:] = 0
    Y = (X[:, 0] % C).astype(np.int32)
    x = tf.placeholder(tf.int32, [None, T])
    lens = tf.placeholder(tf.int32, [None])
    y = tf.placeholder(tf.int32, [None])
    keep = tf.placeholder_with_default(1.0, [])

    pos = np.arange(T)[:, None] / np.power(10000.0, (2 * (np.arange(D)[None] // 2)) / D)
    pos = np.where(np.arange(D)[None] % 2 == 0, np.sin(pos), np.cos(pos)).astype(np.float32)
    emb = tf.get_variable("embedding", [V, D])
    h = tf.nn.embedding_lookup(emb, x) * np.sqrt(D) + tf.constant(pos)
    mask = tf.sequence_mask(lens, T, dtype=tf.float32)                     # [B, T]
    bias = (1.0 - mask)[:, None, None, :] * -1e9                           # [B, 1, 1, T]

    def layer_norm(t, name):
        with tf.variable_scope(name):
            g = tf.get_variable("gamma", [D], initializer=tf.ones_initializer())
            b = tf.get_variable("beta", [D], initializer=tf.zeros_initializer())
            mean, var = tf.nn.moments(t, [-1], keep_dims=True)
            return (t - mean) * tf.rsqrt(var + 1e-6) * g + b

    def split_heads(t):
        return tf.transpose(tf.reshape(t, [-1, T, H, D // H]), [0, 2, 1, 3])

    for i in range(2):
        with tf.variable_scope(f"layer_{i}"):
            q, k, v = (split_heads(tf.layers.dense(h, D, use_bias=False, name=n)) for n in ("q", "k", "v"))
            logits = tf.matmul(q, k, transpose_b=True) / np.sqrt(D // H) + bias
            att = tf.nn.dropout(tf.nn.softmax(logits), keep)
            ctx = tf.reshape(tf.transpose(tf.matmul(att, v), [0, 2, 1, 3]), [-1, T, D])
            h = layer_norm(h + tf.layers.dense(ctx, D, name="out"), "ln1")
            ff = tf.layers.dense(tf.layers.dense(h, 2 * D, activation=tf.nn.relu, name="ff1"), D, name="ff2")
            h = layer_norm(h + tf.nn.dropout(ff, keep), "ln2")
    pooled = tf.reduce_sum(h * mask[:, :, None], 1) / tf.reduce_sum(mask, 1, keepdims=True)
    logits = tf.layers.dense(pooled, C, name="cls")
    loss = tf.losses.softmax_cross_entropy(tf.one_hot(y, C), logits, label_smoothing=0.1)
    gs = tf.train.get_or_create_global_step()
    step = tf.cast(gs + 1, tf.float32)
    lr = 0.5 * D ** -0.5 * tf.minimum(tf.rsqrt(step), step * 4.0 ** -1.5)
    opt = tf.train.AdamOptimizer(lr, beta1=0.9, beta2=0.98, epsilon=1e-9)
    grads, tvars = zip(*opt.compute_gradients(loss))
    clipped, norm = tf.clip_by_global_norm(grads, 1.0)
    train_op = opt.apply_gradients(zip(clipped, tvars), global_step=gs)
    out = {"losses": [], "norms": [], "lrs": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.3)
        for s in range(steps):
            i = (s % 3) * B
            l, n, r, _ = sess.run([loss, norm, lr, train_op], {x: X[i:i + B], lens: L[i:i + B], y: Y[i:i + B]})
            out["losses"].append(l), out["norms"].append(n), out["lrs"].append(r)
        out["att"] = sess.run(att, {x: X[:B], lens: L[:B]})
        out["vars"] = _values(tf, sess)
    return out


def vae(tf, seed, steps):
    rng = np.random.RandomState(seed)
    N, D, Z, B = 48, 12, 3, 16
    data = (rng.rand(N, D) > 0.6).astype(np.float32)
    noise = rng.randn(steps + 1, B, Z).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, D])
    eps = tf.placeholder(tf.float32, [None, Z])
    with tf.variable_scope("encoder"):
        hid = tf.layers.dense(x, 16, activation=tf.nn.softplus)
        mu = tf.layers.dense(hid, Z, name="mu")
        log_sigma = tf.layers.dense(hid, Z, name="log_sigma")
    q = tf.distributions.Normal(loc=mu, scale=tf.exp(log_sigma))
    prior = tf.distributions.Normal(loc=tf.zeros_like(mu), scale=tf.ones_like(mu))
    z = mu + tf.exp(log_sigma) * eps
    with tf.variable_scope("decoder"):
        logits = tf.layers.dense(tf.layers.dense(z, 16, activation=tf.nn.tanh), D)
    recon = tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(labels=x, logits=logits), 1)
    kl = tf.reduce_sum(tf.distributions.kl_divergence(q, prior), 1)
    elbo_loss = tf.reduce_mean(recon + kl)
    log_q = tf.reduce_sum(q.log_prob(z), 1)
    train_op = tf.train.AdamOptimizer(0.02).minimize(elbo_loss)
    out = {"losses": [], "kls": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for s in range(steps):
            i = (s % 3) * B
            l, k, _ = sess.run([elbo_loss, kl, train_op], {x: data[i:i + B], eps: noise[s]})
            out["losses"].append(l), out["kls"].append(k)
        out["log_q"] = sess.run(log_q, {x: data[:B], eps: noise[-1]})
        out["vars"] = _values(tf, sess)
    return out


def dqn(tf, seed, steps):
    rng = np.random.RandomState(seed)
    S, A, B = 6, 4, 16
    states = rng.randn(steps, B, S).astype(np.float32)
    next_states = rng.randn(steps, B, S).astype(np.float32)
    actions = rng.randint(0, A, (steps, B)).astype(np.int32)
    rewards = rng.randn(steps, B).astype(np.float32)
    done = (rng.rand(steps, B) < 0.2).astype(np.float32)
    s_ph, s2_ph = tf.placeholder(tf.float32, [None, S]), tf.placeholder(tf.float32, [None, S])
    a_ph, r_ph, d_ph = tf.placeholder(tf.int32, [None]), tf.placeholder(tf.float32, [None]), tf.placeholder(tf.float32, [None])

    def q_net(inp, scope):
        with tf.variable_scope(scope):
            return tf.layers.dense(tf.layers.dense(inp, 16, activation=tf.nn.relu, name="h"), A, name="q")

    q = q_net(s_ph, "online")
    q_next = q_net(s2_ph, "target")
    online_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="online")
    target_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="target")
    sync = tf.group(*[t.assign(o) for o, t in zip(online_vars, target_vars)])
    idx = tf.stack([tf.range(tf.shape(a_ph)[0]), a_ph], axis=1)
    q_taken = tf.gather_nd(q, idx)
    target = tf.stop_gradient(r_ph + 0.99 * (1.0 - d_ph) * tf.reduce_max(q_next, axis=1))
    loss = tf.losses.huber_loss(target, q_taken, delta=1.0)
    train_op = tf.train.RMSPropOptimizer(0.005, decay=0.95, momentum=0.0, epsilon=0.01, centered=True).minimize(
        loss, var_list=online_vars)
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        sess.run(sync)
        for s in range(steps):
            fd = {s_ph: states[s], s2_ph: next_states[s], a_ph: actions[s], r_ph: rewards[s], d_ph: done[s]}
            out["losses"].append(sess.run([loss, train_op], fd)[0])
            if s % 5 == 4:
                sess.run(sync)
        out["q"] = sess.run(q, {s_ph: states[0]})
        out["vars"] = _values(tf, sess)
    return out


def resnet(tf, seed, steps):
    rng = np.random.RandomState(seed)
    N, S, K = 12, 8, 5
    X = rng.randn(N * 3, S, S, 3).astype(np.float32)
    Y = rng.randint(0, K, N * 3).astype(np.int64)
    x = tf.placeholder(tf.float32, [None, S, S, 3])
    y = tf.placeholder(tf.int64, [None])
    training = tf.placeholder_with_default(False, [])

    def bn(t, name):
        return tf.layers.batch_normalization(t, training=training, momentum=0.9, epsilon=1e-5, name=name)

    def unit(h, filters, stride, name):
        with tf.variable_scope(name):
            shortcut = h
            if stride > 1 or int(h.shape[-1]) != filters:
                shortcut = tf.layers.conv2d(h, filters, 1, strides=stride, use_bias=False, name="proj")
            h = tf.nn.relu(bn(tf.layers.conv2d(h, filters, 3, strides=stride, padding="same", use_bias=False,
                                               name="conv1"), "bn1"))
            h = bn(tf.layers.conv2d(h, filters, 3, padding="same", use_bias=False, name="conv2"), "bn2")
            return tf.nn.relu(h + shortcut)

    h = tf.nn.relu(bn(tf.layers.conv2d(x, 8, 3, padding="same", use_bias=False, name="stem"), "stem_bn"))
    h = unit(h, 8, 1, "unit1")
    h = unit(h, 12, 2, "unit2")
    logits = tf.layers.dense(tf.reduce_mean(h, [1, 2]), K, name="fc")
    xent = tf.losses.sparse_softmax_cross_entropy(y, logits)
    decay = 1e-3 * tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "kernel" in v.name])
    loss = xent + decay
    gs = tf.train.get_or_create_global_step()
    lr = tf.train.piecewise_constant(gs, [4, 8], [0.1, 0.05, 0.01])
    opt = tf.train.MomentumOptimizer(lr, 0.9, use_nesterov=True)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        step_op = opt.minimize(loss, global_step=gs)
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=gs)
    with tf.control_dependencies([step_op]):
        train_op = ema.apply(tf.trainable_variables())
    out = {"losses": [], "lrs": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.4)
        for s in range(steps):
            i = (s % 3) * N
            l, r, _ = sess.run([loss, lr, train_op], {x: X[i:i + N], y: Y[i:i + N], training: True})
            out["losses"].append(l), out["lrs"].append(r)
        out["eval_loss"] = sess.run(xent, {x: X, y: Y})
        out["averages"] = {v.name: sess.run(ema.average(v)) for v in tf.trainable_variables()}
        out["vars"] = _values(tf, sess)
    return out


PROGRAMS = [
    ("transformer", transformer, dict(steps=12)),
    ("vae", vae, dict(steps=20)),
    ("dqn", dqn, dict(steps=20)),
    ("resnet", resnet, dict(steps=12)),
]


@pytest.mark.parametrize("name,program,kwargs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program(name, program, kwargs):
    compare_program(program, kwargs)
