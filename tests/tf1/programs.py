"""TF1 programs in the shape of the well-known public ones, each written once as `run(tf, data)`
against TensorFlow 1.x's API (only the import and the data loading differ from the originals).

Every program uses explicit initial values (NumPy arrays, or constant initializers) and no
randomness in the graph where it is compared with TensorFlow, so collflow and TensorFlow
compute the same numbers; each returns what the test checks.
"""
from typing import Any, Dict

import numpy as np


def _onehot(y: np.ndarray, n: int = 10) -> np.ndarray:
    return np.eye(n, dtype=np.float32)[y]


def _init(shape, seed, scale=0.1):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def softmax_regression(tf: Any, d: Any, steps: int = 60) -> Dict[str, Any]:
    """The 'MNIST for ML beginners' tutorial: y = softmax(xW + b), -sum(y_ log y), SGD 0.5."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder("float", [None, 64])
        W = tf.Variable(tf.zeros([64, 10]))
        b = tf.Variable(tf.zeros([10]))
        y = tf.nn.softmax(tf.matmul(x, W) + b)
        y_ = tf.placeholder("float", [None, 10])
        cross_entropy = -tf.reduce_sum(y_ * tf.log(y + 1e-10))
        train_step = tf.train.GradientDescentOptimizer(0.01).minimize(cross_entropy)
        correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
        accuracy = tf.reduce_mean(tf.cast(correct, "float"))
        init = tf.initialize_all_variables()
    losses = []
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for i in range(steps):
            lo = (i * 100) % 1400
            _, ce = sess.run([train_step, cross_entropy], feed_dict={x: d.x_train[lo:lo + 100],
                                                                   y_: _onehot(d.y_train[lo:lo + 100])})
            losses.append(ce)
        acc = sess.run(accuracy, feed_dict={x: d.x_test, y_: _onehot(d.y_test)})
    return {"losses": np.array(losses), "accuracy": acc}


def deep_conv(tf: Any, d: Any, steps: int = 25) -> Dict[str, Any]:
    """'Deep MNIST for experts' on 8x8 digits: two 3x3 conv + pool layers, dense, dropout, Adam."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 64])
        y_ = tf.placeholder(tf.float32, [None, 10])
        keep_prob = tf.placeholder(tf.float32)

        def conv2d(a, w):
            return tf.nn.conv2d(a, w, strides=[1, 1, 1, 1], padding="SAME")

        def max_pool_2x2(a):
            return tf.nn.max_pool(a, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
        img = tf.reshape(x, [-1, 8, 8, 1])
        h1 = max_pool_2x2(tf.nn.relu(conv2d(img, tf.Variable(_init([3, 3, 1, 8], 1))) + tf.Variable(tf.constant(0.1, shape=[8]))))
        h2 = max_pool_2x2(tf.nn.relu(conv2d(h1, tf.Variable(_init([3, 3, 8, 16], 2))) + tf.Variable(tf.constant(0.1, shape=[16]))))
        flat = tf.reshape(h2, [-1, 2 * 2 * 16])
        fc = tf.nn.relu(tf.matmul(flat, tf.Variable(_init([64, 32], 3))) + tf.Variable(tf.constant(0.1, shape=[32])))
        drop = tf.nn.dropout(fc, keep_prob)
        logits = tf.matmul(drop, tf.Variable(_init([32, 10], 4))) + tf.Variable(tf.constant(0.1, shape=[10]))
        cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=logits))
        train_step = tf.train.AdamOptimizer(1e-2).minimize(cross_entropy)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1)), tf.float32))
        init = tf.global_variables_initializer()
    losses = []
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for i in range(steps):
            lo = (i * 50) % 1400
            _, l = sess.run([train_step, cross_entropy],
                            {x: d.x_train[lo:lo + 50], y_: _onehot(d.y_train[lo:lo + 50]), keep_prob: 1.0})
            losses.append(l)
        acc = sess.run(accuracy, {x: d.x_test, y_: _onehot(d.y_test), keep_prob: 1.0})
    return {"losses": np.array(losses), "accuracy": acc}


def autoencoder(tf: Any, d: Any, steps: int = 20) -> Dict[str, Any]:
    """The classic TF1 autoencoder example: sigmoid encoder/decoder, (x - x')^2, RMSProp."""
    g = tf.Graph()
    with g.as_default():
        X = tf.placeholder("float", [None, 64])
        weights = {"encoder_h1": tf.Variable(_init([64, 32], 5)), "encoder_h2": tf.Variable(_init([32, 16], 6)),
                   "decoder_h1": tf.Variable(_init([16, 32], 7)), "decoder_h2": tf.Variable(_init([32, 64], 8))}
        biases = {k: tf.Variable(tf.zeros([n])) for k, n in (("encoder_b1", 32), ("encoder_b2", 16),
                                                           ("decoder_b1", 32), ("decoder_b2", 64))}

        def encoder(a):
            a = tf.nn.sigmoid(tf.add(tf.matmul(a, weights["encoder_h1"]), biases["encoder_b1"]))
            return tf.nn.sigmoid(tf.add(tf.matmul(a, weights["encoder_h2"]), biases["encoder_b2"]))

        def decoder(a):
            a = tf.nn.sigmoid(tf.add(tf.matmul(a, weights["decoder_h1"]), biases["decoder_b1"]))
            return tf.nn.sigmoid(tf.add(tf.matmul(a, weights["decoder_h2"]), biases["decoder_b2"]))
        y_pred = decoder(encoder(X))
        loss = tf.reduce_mean(tf.pow(X - y_pred, 2))
        optimizer = tf.train.RMSPropOptimizer(0.01).minimize(loss)
        init = tf.global_variables_initializer()
    losses = []
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for i in range(steps):
            lo = (i * 64) % 1400
            _, l = sess.run([optimizer, loss], feed_dict={X: d.x_train[lo:lo + 64]})
            losses.append(l)
    return {"losses": np.array(losses)}


def gan(tf: Any, d: Any, steps: int = 6) -> Dict[str, Any]:
    """A TF1 GAN: generator and discriminator in variable scopes, the discriminator called twice
    (reuse=True), tf.layers.dense, per-network var_lists filtered by scope name."""
    g = tf.Graph()
    with g.as_default():
        X = tf.placeholder(tf.float32, [None, 64])
        Z = tf.placeholder(tf.float32, [None, 8])

        def dense(a, n, act, name):
            # constant kernels so that both frameworks start from the same weights
            k = tf.constant_initializer(_init([int(a.shape[1]), n], sum(map(ord, name)) + n).ravel())
            return tf.layers.dense(a, n, activation=act, kernel_initializer=k, name=name)

        def generator(z):
            with tf.variable_scope("GAN/Generator"):
                return dense(dense(z, 16, tf.nn.leaky_relu, "h1"), 64, tf.nn.sigmoid, "out")

        def discriminator(x, reuse=False):
            with tf.variable_scope("GAN/Discriminator", reuse=reuse):
                return dense(dense(x, 16, tf.nn.leaky_relu, "h1"), 1, None, "out")
        G = generator(Z)
        r_logits = discriminator(X)
        f_logits = discriminator(G, reuse=True)
        disc_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(logits=r_logits, labels=tf.ones_like(r_logits))
                                   + tf.nn.sigmoid_cross_entropy_with_logits(logits=f_logits, labels=tf.zeros_like(f_logits)))
        gen_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(logits=f_logits, labels=tf.ones_like(f_logits)))
        gen_vars = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="GAN/Generator")
        disc_vars = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="GAN/Discriminator")
        gen_step = tf.train.RMSPropOptimizer(learning_rate=0.001).minimize(gen_loss, var_list=gen_vars)
        disc_step = tf.train.RMSPropOptimizer(learning_rate=0.001).minimize(disc_loss, var_list=disc_vars)
        init = tf.global_variables_initializer()
    names = sorted(v.name for v in gen_vars + disc_vars)
    zs = np.random.default_rng(9).uniform(-1, 1, (steps, 32, 8)).astype(np.float32)
    out = []
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for i in range(steps):
            xb = d.x_train[i * 32:(i + 1) * 32]
            _, dl = sess.run([disc_step, disc_loss], feed_dict={X: xb, Z: zs[i]})
            _, gl = sess.run([gen_step, gen_loss], feed_dict={Z: zs[i]})
            out.append((dl, gl))
    return {"losses": np.array(out), "variables": names}


def lstm_static(tf: Any, d: Any, steps: int = 5) -> Dict[str, Any]:
    """The TF1 'RNN on MNIST rows' example: tf.contrib.rnn.BasicLSTMCell + static_rnn over the
    8 rows of each digit, the last output to a dense layer, Adam."""
    g = tf.Graph()
    with g.as_default():
        X = tf.placeholder("float", [None, 8, 8])
        Y = tf.placeholder("float", [None, 10])
        weights = tf.Variable(_init([16, 10], 11))
        biases = tf.Variable(tf.zeros([10]))
        # TF 2.x's compat.v1 has no tf.contrib: the same cell and runner live in tf.nn there
        rnn = tf.contrib.rnn if hasattr(tf, "contrib") else tf.nn.rnn_cell
        static_rnn = tf.contrib.rnn.static_rnn if hasattr(tf, "contrib") else tf.nn.static_rnn

        def init(shape, dtype=None, partition_info=None):  # the same start in both frameworks
            return tf.constant(_init(list(shape), 40 + len(shape)))
        with tf.variable_scope("rnn", initializer=init):
            x = tf.unstack(X, 8, 1)
            lstm_cell = rnn.BasicLSTMCell(16, forget_bias=1.0)
            outputs, states = static_rnn(lstm_cell, x, dtype=tf.float32)
        logits = tf.matmul(outputs[-1], weights) + biases
        loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits, labels=Y))
        train_op = tf.train.AdamOptimizer(learning_rate=0.01).minimize(loss_op)
        init = tf.global_variables_initializer()
    losses = []
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for i in range(steps):
            lo = i * 64
            xb = d.x_train[lo:lo + 64].reshape(-1, 8, 8)
            _, l = sess.run([train_op, loss_op], feed_dict={X: xb, Y: _onehot(d.y_train[lo:lo + 64])})
            losses.append(l)
    return {"losses": np.array(losses)}


def scan_rnn(tf: Any, d: Any, steps: int = 5) -> Dict[str, Any]:
    """An RNN written with tf.scan (the pre-dynamic_rnn idiom): h_t = tanh(x_t W + h_{t-1} U + b)."""
    g = tf.Graph()
    with g.as_default():
        X = tf.placeholder(tf.float32, [8, None, 8])     # time-major rows of the digit
        Y = tf.placeholder(tf.int32, [None])
        W, U = tf.Variable(_init([8, 12], 21)), tf.Variable(_init([12, 12], 22))
        b = tf.Variable(tf.zeros([12]))
        h0 = tf.zeros([tf.shape(X)[1], 12])
        hs = tf.scan(lambda h, x: tf.tanh(tf.matmul(x, W) + tf.matmul(h, U) + b), X, initializer=h0)
        logits = tf.matmul(hs[-1], tf.Variable(_init([12, 10], 23)))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=Y, logits=logits))
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        init = tf.global_variables_initializer()
    losses = []
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for i in range(steps):
            xb = d.x_train[i * 64:(i + 1) * 64].reshape(-1, 8, 8).transpose(1, 0, 2)
            _, l = sess.run([train, loss], {X: xb, Y: d.y_train[i * 64:(i + 1) * 64]})
            losses.append(l)
    return {"losses": np.array(losses)}


def save_restore(tf: Any, d: Any, path: str) -> Dict[str, Any]:
    """The save/restore example: train, Saver.save(sess, path), a new session restores it."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 64])
        y = tf.placeholder(tf.int32, [None])
        w = tf.Variable(_init([64, 10], 31), name="w")
        b = tf.Variable(tf.zeros([10]), name="b")
        logits = tf.matmul(x, w) + b
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)
        saver = tf.train.Saver()
        init = tf.global_variables_initializer()
    feed = {x: d.x_test, y: d.y_test}
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for i in range(10):
            sess.run(train, {x: d.x_train[i * 100:(i + 1) * 100], y: d.y_train[i * 100:(i + 1) * 100]})
        saved = saver.save(sess, path, global_step=step)
        before = sess.run(loss, feed)
    with tf.Session(graph=g) as sess:
        saver.restore(sess, tf.train.latest_checkpoint(path.rsplit("/", 1)[0]))
        after, st = sess.run([loss, step], feed)
    return {"saved": saved, "before": before, "after": after, "step": st}


def word2vec(tf: Any, d: Any, steps: int = 150) -> Dict[str, Any]:
    """The TF1 word2vec tutorial (basic): skip-gram pairs, an embedding table, tf.nn.nce_loss
    with its log-uniform sampler, SGD; then cosine similarities of normalized embeddings.
    The corpus is a tiny synthetic one where words 2k and 2k+1 always appear together."""
    vocab, dim, batch, num_sampled = 40, 8, 64, 8
    rng = np.random.default_rng(5)
    words = rng.integers(0, vocab // 2, 4000) * 2
    corpus = np.stack([words, words + 1], 1).reshape(-1)
    g = tf.Graph()
    with g.as_default():
        train_inputs = tf.placeholder(tf.int32, shape=[batch])
        train_labels = tf.placeholder(tf.int32, shape=[batch, 1])
        embeddings = tf.Variable(tf.random_uniform([vocab, dim], -1.0, 1.0, seed=1))
        embed = tf.nn.embedding_lookup(embeddings, train_inputs)
        nce_weights = tf.Variable(tf.truncated_normal([vocab, dim], stddev=1.0 / np.sqrt(dim), seed=2))
        nce_biases = tf.Variable(tf.zeros([vocab]))
        loss = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=train_labels,
                                             inputs=embed, num_sampled=num_sampled, num_classes=vocab))
        optimizer = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
        norm = tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keepdims=True))
        normalized = embeddings / norm
        similarity = tf.matmul(normalized, normalized, transpose_b=True)
        init = tf.global_variables_initializer()
    losses = []
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for i in range(steps):
            k = rng.integers(0, len(corpus) - 1, batch)
            centre = corpus[k]
            context = np.where(centre % 2 == 0, centre + 1, centre - 1)  # the word's partner
            _, l = sess.run([optimizer, loss], {train_inputs: centre, train_labels: context[:, None]})
            losses.append(l)
        sim = sess.run(similarity)
    return {"losses": np.array(losses), "similarity": sim}
