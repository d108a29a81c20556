"""More TF1 programs as their authors wrote them (see test_vs_tensorflow_programs_real.py):
training idioms.  An actor-critic with a PPO-clipped objective (tf.distributions.Categorical,
stop_gradient, an entropy bonus), a Siamese network (reuse_variables, AUTO_REUSE), a sparse
factorization machine (FTRL and Adagrad on variable subsets), domain-adversarial training (a
gradient-reversal layer by RegisterGradient and gradient_override_map, a py_func), Keras
layers inside a TF1 graph, the multi-GPU tower trainer (soft placement, per-tower loss
collections, averaged gradients), gradient accumulation, a center loss (scatter_sub),
training resumed in a fresh graph through import_meta_graph and collections, and
variable-length text from Dataset.from_generator and padded_batch.
"""
import itertools
import os
import shutil
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

from test_vs_tensorflow_programs import _set_vars, _values, compare_program  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]


# ------------------------------------------------------------------------------------------
# Advantage actor-critic with a PPO-clipped objective (a shared trunk, Categorical policy)

def actor_critic(tf, seed, steps):
    rng = np.random.RandomState(seed)
    n_features, n_actions, T, gamma, clip_eps = 4, 3, 8, 0.9, 0.2
    A = rng.normal(size=(n_actions, n_features, n_features)).astype(np.float32) * 0.4

    def env_step(s, a):  # a small deterministic linear "environment"
        s2 = np.tanh(A[a] @ s)
        return s2, float(s2[0] - 0.1 * abs(s2[1]))

    states = tf.placeholder(tf.float32, [None, n_features], "state")
    actions = tf.placeholder(tf.int32, [None], "act")
    returns = tf.placeholder(tf.float32, [None], "returns")
    old_log_probs = tf.placeholder(tf.float32, [None], "old_log_probs")
    with tf.variable_scope("ActorCritic"):
        l1 = tf.layers.dense(states, 16, activation=tf.nn.tanh,
                             kernel_initializer=tf.random_normal_initializer(0., .1),
                             bias_initializer=tf.constant_initializer(0.1), name="l1")
        logits = tf.layers.dense(l1, n_actions, name="pi")
        value = tf.squeeze(tf.layers.dense(l1, 1, name="v"), axis=1)
    dist = tf.distributions.Categorical(logits=logits)
    probs = tf.nn.softmax(logits)
    log_prob = dist.log_prob(actions)
    manual_log_prob = tf.reduce_sum(tf.log(probs + 1e-10) * tf.one_hot(actions, n_actions), axis=1)
    advantage = returns - value
    with tf.variable_scope("ppo_loss"):
        ratio = tf.exp(log_prob - old_log_probs)
        adv = tf.stop_gradient(advantage)
        surr1 = ratio * adv
        surr2 = tf.clip_by_value(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
        policy_loss = -tf.reduce_mean(tf.minimum(surr1, surr2))
        entropy = tf.reduce_mean(dist.entropy())
        value_loss = tf.reduce_mean(tf.square(advantage))
        loss = policy_loss + 0.5 * value_loss - 0.01 * entropy
    a2c_loss = -tf.reduce_mean(manual_log_prob * tf.stop_gradient(advantage)) + 0.5 * value_loss
    global_step = tf.train.get_or_create_global_step()
    optimizer = tf.train.AdamOptimizer(3e-3)
    grads, variables = zip(*optimizer.compute_gradients(loss))
    grads, _ = tf.clip_by_global_norm(grads, 0.5)
    train_op = optimizer.apply_gradients(zip(grads, variables), global_step=global_step)
    a2c_op = tf.train.RMSPropOptimizer(1e-3, decay=0.99, epsilon=1e-5).minimize(a2c_loss)
    out = {"losses": [], "entropies": [], "a2c_losses": [], "rewards": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        s = rng.normal(size=n_features).astype(np.float32)
        u = rng.uniform(size=(steps, T))
        for it in range(steps):
            buf_s, buf_a, buf_r = [], [], []
            for t in range(T):
                p = sess.run(probs, {states: s[None]})[0]
                a = int(min(np.searchsorted(np.cumsum(p), u[it, t]), n_actions - 1))
                s2, r = env_step(s, a)
                buf_s.append(s), buf_a.append(a), buf_r.append(r)
                s = s2.astype(np.float32)
            v_s_ = sess.run(value, {states: s[None]})[0]
            discounted = []
            for r in buf_r[::-1]:
                v_s_ = r + gamma * v_s_
                discounted.append(v_s_)
            discounted.reverse()
            fd = {states: np.array(buf_s), actions: np.array(buf_a, np.int32), returns: np.array(discounted, np.float32)}
            fd[old_log_probs] = sess.run(log_prob, fd)
            for epoch in range(2):
                l, e, _ = sess.run([loss, entropy, train_op], fd)
                out["losses"].append(l), out["entropies"].append(e)
            out["a2c_losses"].append(sess.run([a2c_loss, a2c_op], fd)[0])
            out["rewards"].append(sum(buf_r))
        out["log_probs"], out["manual_log_probs"] = sess.run([log_prob, manual_log_prob], fd)
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# A Siamese network (ywpkwon/siamese-tf): shared towers, contrastive ("spring") loss; triplets

def siamese(tf, seed, steps):
    rng = np.random.RandomState(seed)
    D, N = 12, 16
    centers = rng.normal(size=(4, D)).astype(np.float32)

    def batch():
        c1, c2 = rng.randint(0, 4, N), rng.randint(0, 4, N)
        x1 = centers[c1] + 0.3 * rng.normal(size=(N, D))
        x2 = centers[c2] + 0.3 * rng.normal(size=(N, D))
        return x1.astype(np.float32), x2.astype(np.float32), (c1 == c2).astype(np.float32), c1

    class siamese_net:
        def __init__(self):
            self.x1 = tf.placeholder(tf.float32, [None, D])
            self.x2 = tf.placeholder(tf.float32, [None, D])
            with tf.variable_scope("siamese") as scope:
                self.o1 = self.network(self.x1)
                scope.reuse_variables()
                self.o2 = self.network(self.x2)
            self.y_ = tf.placeholder(tf.float32, [None])
            self.loss = self.loss_with_spring()

        def network(self, x):
            fc1 = self.fc_layer(x, 16, "fc1")
            ac1 = tf.nn.relu(fc1)
            fc2 = self.fc_layer(ac1, 16, "fc2")
            ac2 = tf.nn.relu(fc2)
            fc3 = self.fc_layer(ac2, 2, "fc3")
            return fc3

        def fc_layer(self, bottom, n_weight, name):
            assert len(bottom.get_shape()) == 2
            n_prev_weight = bottom.get_shape()[1]
            initer = tf.truncated_normal_initializer(stddev=0.01)
            W = tf.get_variable(name + 'W', dtype=tf.float32, shape=[n_prev_weight, n_weight], initializer=initer)
            b = tf.get_variable(name + 'b', dtype=tf.float32,
                                initializer=tf.constant(0.01, shape=[n_weight], dtype=tf.float32))
            fc = tf.nn.bias_add(tf.matmul(bottom, W), b)
            return fc

        def loss_with_spring(self):
            margin = 5.0
            labels_t = self.y_
            labels_f = tf.subtract(1.0, self.y_, name="1-yi")
            eucd2 = tf.pow(tf.subtract(self.o1, self.o2), 2)
            eucd2 = tf.reduce_sum(eucd2, 1)
            eucd = tf.sqrt(eucd2 + 1e-6, name="eucd")
            C = tf.constant(margin, name="C")
            pos = tf.multiply(labels_t, eucd2, name="yi_x_eucd2")
            neg = tf.multiply(labels_f, tf.pow(tf.maximum(tf.subtract(C, eucd), 0), 2), name="Nyi_x_C-eucd_xx_2")
            losses = tf.add(pos, neg, name="losses")
            loss = tf.reduce_mean(losses, name="loss")
            return loss

    net = siamese_net()
    train_step = tf.train.GradientDescentOptimizer(0.01).minimize(net.loss)

    # a triplet tower built with tf.AUTO_REUSE, sharing its own weights across the three inputs
    def embed(x):
        with tf.variable_scope("triplet", reuse=tf.AUTO_REUSE):
            h = tf.layers.dense(x, 16, activation=tf.nn.relu, name="fc1")
            return tf.nn.l2_normalize(tf.layers.dense(h, 4, name="fc2"), axis=1)

    anchor, positive, negative = (tf.placeholder(tf.float32, [None, D]) for _ in range(3))
    ea, ep, en = embed(anchor), embed(positive), embed(negative)
    d_pos = tf.reduce_sum(tf.square(ea - ep), 1)
    d_neg = tf.reduce_sum(tf.square(ea - en), 1)
    triplet_loss = tf.reduce_mean(tf.maximum(0.0, 0.2 + d_pos - d_neg))
    triplet_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="triplet")
    triplet_step = tf.train.MomentumOptimizer(0.1, 0.9).minimize(triplet_loss, var_list=triplet_vars)
    saver = tf.train.Saver()
    out = {"losses": [], "triplet_losses": [], "n_vars": len(tf.trainable_variables())}
    tmp = tempfile.mkdtemp()
    try:
        with tf.Session() as sess:
            tf.global_variables_initializer().run()
            _set_vars(tf, sess, seed, 0.4)
            for step in range(steps):
                x1, x2, y, c = batch()
                _, loss_v = sess.run([train_step, net.loss], feed_dict={net.x1: x1, net.x2: x2, net.y_: y})
                out["losses"].append(loss_v)
                neg = centers[(c + 1) % 4] + 0.3 * rng.normal(size=(N, D)).astype(np.float32)
                out["triplet_losses"].append(sess.run([triplet_loss, triplet_step],
                                                      {anchor: x1, positive: centers[c], negative: neg})[0])
            path = saver.save(sess, os.path.join(tmp, "model.ckpt"))
            out["embed"] = net.o1.eval({net.x1: centers})
            out["vars"] = _values(tf, sess)
        with tf.Session() as sess:
            saver.restore(sess, path)
            out["restored_embed"] = sess.run(net.o2, {net.x2: centers})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------------------
# A factorization machine over sparse features (the TF1 recommender idiom): sparse_placeholder,
# sparse_tensor_dense_matmul, embedding_lookup_sparse, FTRL on the linear part

def factorization_machine(tf, seed, steps):
    rng = np.random.RandomState(seed)
    n_features, k, batch = 30, 4, 8
    rows = [np.sort(rng.choice(n_features, rng.randint(1, 5), replace=False)) for _ in range(batch * 3)]
    vals = [rng.uniform(0.5, 1.5, len(r)).astype(np.float32) for r in rows]
    labels_all = rng.randint(0, 2, batch * 3).astype(np.float32)

    def sparse_batch(i):
        idx = [(n, c) for n, r in enumerate(rows[i:i + batch]) for c in r]
        ids = [(n, j) for n, r in enumerate(rows[i:i + batch]) for j in range(len(r))]
        v = np.concatenate(vals[i:i + batch])
        dense = tf.SparseTensorValue(np.array(idx, np.int64), v, np.array([batch, n_features], np.int64))
        maxlen = max(len(r) for r in rows[i:i + batch])
        id_t = tf.SparseTensorValue(np.array(ids, np.int64), np.concatenate(rows[i:i + batch]).astype(np.int64),
                                    np.array([batch, maxlen], np.int64))
        w_t = tf.SparseTensorValue(np.array(ids, np.int64), v, np.array([batch, maxlen], np.int64))
        return dense, id_t, w_t

    X = tf.sparse_placeholder(tf.float32, name="X")
    feat_ids = tf.sparse_placeholder(tf.int64, name="feat_ids")
    feat_vals = tf.sparse_placeholder(tf.float32, name="feat_vals")
    y = tf.placeholder(tf.float32, [None], name="y")
    with tf.variable_scope("linear"):
        w0 = tf.get_variable("bias", [], initializer=tf.zeros_initializer())
        W = tf.get_variable("W", [n_features, 1], initializer=tf.zeros_initializer())
        linear_terms = w0 + tf.squeeze(tf.sparse_tensor_dense_matmul(X, W), 1)
    with tf.variable_scope("interaction"):
        V = tf.get_variable("V", [n_features, k], initializer=tf.truncated_normal_initializer(stddev=0.01))
        sum_sq = tf.square(tf.sparse_tensor_dense_matmul(X, V))
        sq_sum = tf.sparse_tensor_dense_matmul(tf.SparseTensor(X.indices, tf.square(X.values), X.dense_shape),
                                               tf.square(V))
        interactions = 0.5 * tf.reduce_sum(sum_sq - sq_sum, 1)
        pooled = tf.nn.embedding_lookup_sparse(V, feat_ids, feat_vals, combiner="sum")
    logits = linear_terms + interactions
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits)) + \
        1e-3 * tf.nn.l2_loss(V)
    auc, auc_update = tf.metrics.auc(y, tf.sigmoid(logits), num_thresholds=50)
    linear_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, "linear")
    inter_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, "interaction")
    train_op = tf.group(
        tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01).minimize(loss, var_list=linear_vars),
        tf.train.AdagradOptimizer(0.1).minimize(loss, var_list=inter_vars))
    out = {"losses": [], "aucs": []}
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        _set_vars(tf, sess, seed, 0.3, inter_vars)
        for step in range(steps):
            i = (step % 3) * batch
            dense, id_t, w_t = sparse_batch(i)
            fd = {X: dense, feat_ids: id_t, feat_vals: w_t, y: labels_all[i:i + batch]}
            l, _, _ = sess.run([loss, train_op, auc_update], fd)
            out["losses"].append(l), out["aucs"].append(sess.run(auc))
        out["pooled"], out["sum_sq"] = sess.run([pooled, sum_sq], fd)
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Domain-adversarial training (pumpikano/tf-dann): a gradient-reversal layer from
# RegisterGradient and gradient_override_map, a py_func, a shared feature extractor

_FLIP_CALLS = itertools.count()  # gradient names are global to the process, as in TF


def dann(tf, seed, steps):
    rng = np.random.RandomState(seed)
    D, batch_size = 6, 8
    Xs = rng.normal(size=(batch_size * 2, D)).astype(np.float32)
    Ys = np.eye(2)[(Xs[:, 0] > 0).astype(int)].astype(np.float32)
    Xt = (rng.normal(size=(batch_size * 2, D)) + 0.7).astype(np.float32)

    class FlipGradientBuilder(object):
        def __init__(self):
            self.num_calls = 0

        def __call__(self, x, l=1.0):
            grad_name = "FlipGradient%d_%d" % (next(_FLIP_CALLS), self.num_calls)

            @tf.RegisterGradient(grad_name)
            def _flip_gradients(op, grad):
                return [tf.negative(grad) * l]

            g = tf.get_default_graph()
            with g.gradient_override_map({"Identity": grad_name}):
                y = tf.identity(x)
            self.num_calls += 1
            return y

    flip_gradient = FlipGradientBuilder()

    def weight_variable(shape):
        return tf.Variable(tf.truncated_normal(shape, stddev=0.1))

    def bias_variable(shape):
        return tf.Variable(tf.constant(0.1, shape=shape))

    X = tf.placeholder(tf.float32, [None, D])
    y = tf.placeholder(tf.float32, [None, 2])
    domain = tf.placeholder(tf.float32, [None, 2])
    l = tf.placeholder(tf.float32, [])
    train = tf.placeholder(tf.bool, [])
    # the domain labels come from Python, through a py_func (as data augmentation often did)
    n_half = tf.py_func(lambda n: np.int32(n // 2), [tf.shape(X)[0]], tf.int32, stateful=False)
    n_half.set_shape([])
    with tf.variable_scope('feature_extractor'):
        W0, b0 = weight_variable([D, 12]), bias_variable([12])
        h0 = tf.nn.relu(tf.matmul(X, W0) + b0)
        W1, b1 = weight_variable([12, 8]), bias_variable([8])
        feature = tf.nn.relu(tf.matmul(h0, W1) + b1)
    with tf.variable_scope('label_predictor'):
        all_features = lambda: feature  # noqa: E731
        source_features = lambda: tf.slice(feature, [0, 0], [n_half, -1])  # noqa: E731
        classify_feats = tf.cond(train, source_features, all_features)
        all_labels = lambda: y  # noqa: E731
        source_labels = lambda: tf.slice(y, [0, 0], [n_half, -1])  # noqa: E731
        classify_labels = tf.cond(train, source_labels, all_labels)
        W_fc0, b_fc0 = weight_variable([8, 2]), bias_variable([2])
        logits = tf.matmul(classify_feats, W_fc0) + b_fc0
        pred_loss = tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=classify_labels)
    with tf.variable_scope('domain_predictor'):
        feat = flip_gradient(feature, l)
        d_W_fc0, d_b_fc0 = weight_variable([8, 6]), bias_variable([6])
        d_h_fc0 = tf.nn.relu(tf.matmul(feat, d_W_fc0) + d_b_fc0)
        d_W_fc1, d_b_fc1 = weight_variable([6, 2]), bias_variable([2])
        d_logits = tf.matmul(d_h_fc0, d_W_fc1) + d_b_fc1
        domain_pred = tf.nn.softmax(d_logits)
        domain_loss = tf.nn.softmax_cross_entropy_with_logits(logits=d_logits, labels=domain)
    learning_rate = tf.placeholder(tf.float32, [])
    pred_loss = tf.reduce_mean(pred_loss)
    domain_loss = tf.reduce_mean(domain_loss)
    total_loss = pred_loss + domain_loss
    regular_train_op = tf.train.MomentumOptimizer(learning_rate, 0.9).minimize(pred_loss)
    dann_train_op = tf.train.MomentumOptimizer(learning_rate, 0.9).minimize(total_loss)
    flip_grad = tf.gradients(tf.reduce_sum(feat * feat), feature)[0]
    correct_domain_pred = tf.equal(tf.argmax(domain, 1), tf.argmax(domain_pred, 1))
    domain_acc = tf.reduce_mean(tf.cast(correct_domain_pred, tf.float32))
    out = {"losses": [], "domain_losses": [], "pred_losses": []}
    domain_labels = np.vstack([np.tile([1., 0.], [batch_size // 2, 1]), np.tile([0., 1.], [batch_size // 2, 1])])
    with tf.Session() as sess:
        tf.global_variables_initializer().run()
        _set_vars(tf, sess, seed, 0.5)
        for i in range(steps):
            p = float(i) / steps
            lv = 2. / (1. + np.exp(-10. * p)) - 1
            lr = 0.01 / (1. + 10 * p) ** 0.75
            k = (i % 2) * (batch_size // 2)
            X0, y0 = Xs[k:k + batch_size // 2], Ys[k:k + batch_size // 2]
            X1, y1 = Xt[k:k + batch_size // 2], Ys[k:k + batch_size // 2]
            fd = {X: np.vstack([X0, X1]), y: np.vstack([y0, y1]), domain: domain_labels, train: True, l: lv,
                  learning_rate: lr}
            op = dann_train_op if i % 3 else regular_train_op
            _, batch_loss, dloss, ploss = sess.run([op, total_loss, domain_loss, pred_loss], feed_dict=fd)
            out["losses"].append(batch_loss), out["domain_losses"].append(dloss), out["pred_losses"].append(ploss)
        out["flip_grad"], out["feature"] = sess.run([flip_grad, feature], {X: Xs[:4], l: 0.5})
        out["domain_acc"] = sess.run(domain_acc, {X: np.vstack([Xs[:4], Xt[:4]]), domain: domain_labels,
                                                  train: False})
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Keras as a simplified interface to TensorFlow (the 2016 Keras blog post): tf.keras layers
# called on placeholders, a tf.train optimizer, K.learning_phase() fed, BN updates run

def keras_in_graph(tf, seed, steps):
    rng = np.random.RandomState(seed)
    N, D, C = 16, 10, 3
    Xd = rng.normal(size=(N * 3, D)).astype(np.float32)
    Yd = np.eye(C)[rng.randint(0, C, N * 3)].astype(np.float32)
    keras = tf.keras
    K = keras.backend
    sess = tf.Session()
    K.set_session(sess)
    img = tf.placeholder(tf.float32, shape=(None, D))
    labels = tf.placeholder(tf.float32, shape=(None, C))
    Dense, Dropout, BatchNormalization = keras.layers.Dense, keras.layers.Dropout, keras.layers.BatchNormalization
    x = Dense(16, activation='relu', name="dense_a")(img)
    bn = BatchNormalization(momentum=0.9, name="bn_a")
    x = bn(x)
    x = Dropout(0.0)(x)
    x = Dense(16, activation='relu', name="dense_b")(x)
    preds = Dense(C, activation='softmax', name="dense_c")(x)
    loss = tf.reduce_mean(keras.losses.categorical_crossentropy(labels, preds))
    with tf.control_dependencies(bn.updates):
        train_step = tf.train.AdamOptimizer(0.01).minimize(loss)
    acc_value = tf.reduce_mean(keras.metrics.categorical_accuracy(labels, preds))
    out = {"losses": [], "n_updates": len(bn.updates)}
    with sess.as_default():
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.4)
        for i in range(steps):
            k = (i % 3) * N
            out["losses"].append(sess.run([loss, train_step], feed_dict={img: Xd[k:k + N], labels: Yd[k:k + N],
                                                                       K.learning_phase(): 1})[0])
        out["acc"] = acc_value.eval(feed_dict={img: Xd, labels: Yd, K.learning_phase(): 0})
        out["preds"] = preds.eval(feed_dict={img: Xd[:5], K.learning_phase(): 0})
        out["vars"] = _values(tf, sess)
    sess.close()
    return out


# ------------------------------------------------------------------------------------------
# The multi-GPU CIFAR-10 trainer (cifar10_multi_gpu_train.py): towers under tf.device and
# name scopes sharing variables by reuse_variables, per-tower 'losses' collections filtered by
# scope, average_gradients by expand_dims / concat / reduce_mean, soft placement

def multi_tower(tf, seed, steps):
    rng = np.random.RandomState(seed)
    num_gpus, D, C, B = 2, 8, 3, 6
    Xd = rng.normal(size=(B * num_gpus * 2, D)).astype(np.float32)
    Yd = rng.randint(0, C, B * num_gpus * 2).astype(np.int32)
    x = tf.placeholder(tf.float32, [B * num_gpus, D])
    y = tf.placeholder(tf.int32, [B * num_gpus])

    def inference(inp):
        with tf.variable_scope('local3'):
            w = tf.get_variable('weights', [D, 12], initializer=tf.truncated_normal_initializer(stddev=0.1))
            tf.add_to_collection('losses', tf.multiply(tf.nn.l2_loss(w), 0.004, name='weight_loss'))
            b = tf.get_variable('biases', [12], initializer=tf.constant_initializer(0.1))
            h = tf.nn.relu(tf.matmul(inp, w) + b)
        with tf.variable_scope('softmax_linear'):
            w = tf.get_variable('weights', [12, C], initializer=tf.truncated_normal_initializer(stddev=0.1))
            b = tf.get_variable('biases', [C], initializer=tf.constant_initializer(0.0))
            return tf.add(tf.matmul(h, w), b)

    def tower_loss(scope, images, labels):
        logits = inference(images)
        cross_entropy = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits),
                                       name='cross_entropy')
        tf.add_to_collection('losses', cross_entropy)
        losses = tf.get_collection('losses', scope)
        total_loss = tf.add_n(losses, name='total_loss')
        return total_loss

    def average_gradients(tower_grads):
        average_grads = []
        for grad_and_vars in zip(*tower_grads):
            grads = []
            for g, _ in grad_and_vars:
                expanded_g = tf.expand_dims(g, 0)
                grads.append(expanded_g)
            grad = tf.concat(axis=0, values=grads)
            grad = tf.reduce_mean(grad, 0)
            v = grad_and_vars[0][1]
            average_grads.append((grad, v))
        return average_grads

    global_step = tf.get_variable('global_step', [], initializer=tf.constant_initializer(0), trainable=False,
                                  dtype=tf.int32)
    opt = tf.train.GradientDescentOptimizer(0.1)
    image_splits = tf.split(x, num_gpus)
    label_splits = tf.split(y, num_gpus)
    tower_grads, tower_losses = [], []
    with tf.variable_scope(tf.get_variable_scope()):
        for i in range(num_gpus):
            with tf.device('/gpu:%d' % i):
                with tf.name_scope('%s_%d' % ('tower', i)) as scope:
                    loss = tower_loss(scope, image_splits[i], label_splits[i])
                    tf.get_variable_scope().reuse_variables()
                    grads = opt.compute_gradients(loss)
                    tower_grads.append(grads)
                    tower_losses.append(loss)
    grads = average_gradients(tower_grads)
    apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
    variable_averages = tf.train.ExponentialMovingAverage(0.99, global_step)
    # the multi-GPU script groups the two unordered, so whether the averages see this step's
    # weights is up to the executor; ordered as cifar10.py's train() orders them
    with tf.control_dependencies([apply_gradient_op]):
        variables_averages_op = variable_averages.apply(tf.trainable_variables())
    train_op = tf.group(apply_gradient_op, variables_averages_op)
    out = {"losses": [], "n_losses": [len(tf.get_collection('losses', 'tower_%d' % i)) for i in range(num_gpus)],
           "var_names": [v.name for v in tf.global_variables()]}
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True, log_device_placement=False)) as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.4)
        for step in range(steps):
            k = (step % 2) * B * num_gpus
            _, loss_values = sess.run([train_op, tower_losses], {x: Xd[k:k + B * num_gpus], y: Yd[k:k + B * num_gpus]})
            out["losses"].append(loss_values)
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Gradient accumulation (the well-known answer): non-trainable accumulators whose initial
# value reads the trainable ones, zero / accumulate / apply ops run in turn

def grad_accumulation(tf, seed, steps, n_minibatches=3):
    rng = np.random.RandomState(seed)
    D, B = 5, 4
    Xd = rng.normal(size=(B * n_minibatches * 2, D)).astype(np.float32)
    Yd = (Xd @ rng.normal(size=(D, 1))).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, D])
    y = tf.placeholder(tf.float32, [None, 1])
    h = tf.layers.dense(x, 8, activation=tf.nn.elu, name="h")
    pred = tf.layers.dense(h, 1, name="out")
    loss = tf.losses.mean_squared_error(y, pred)
    opt = tf.train.AdamOptimizer(0.01)
    tvs = tf.trainable_variables()
    # the answer's tv.initialized_value() is gone from TF 2's compat.v1; its other form reads tv
    accum_vars = [tf.Variable(tf.zeros_like(tv), trainable=False) for tv in tvs]
    zero_ops = [tv.assign(tf.zeros_like(tv)) for tv in accum_vars]
    gvs = opt.compute_gradients(loss, tvs)
    accum_ops = [accum_vars[i].assign_add(gv[0]) for i, gv in enumerate(gvs)]
    train_step = opt.apply_gradients([(accum_vars[i] / n_minibatches, gv[1]) for i, gv in enumerate(gvs)])
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for step in range(steps):
            sess.run(zero_ops)
            batch_losses = []
            for i in range(n_minibatches):
                k = ((step % 2) * n_minibatches + i) * B
                batch_losses.append(sess.run([accum_ops, loss], {x: Xd[k:k + B], y: Yd[k:k + B]})[1])
            sess.run(train_step)
            out["losses"].append(batch_losses)
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Center loss (EncodeTS/TensorFlow_Center_Loss, as face-recognition code used it): centers in
# a non-trainable variable moved by scatter_sub with repeated labels, unique_with_counts, the
# update run under the train op's control dependencies; an embedding_lookup with max_norm

def center_loss(tf, seed, steps):
    rng = np.random.RandomState(seed)
    D, C, B, V = 6, 4, 8, 12
    Xd = rng.normal(size=(B * 3, D)).astype(np.float32)
    Yd = rng.randint(0, C, B * 3).astype(np.int64)
    Td = rng.randint(0, V, (B * 3, 2)).astype(np.int64)

    def get_center_loss(features, labels, alpha, num_classes):
        len_features = features.get_shape()[1]
        centers = tf.get_variable('centers', [num_classes, len_features], dtype=tf.float32,
                                  initializer=tf.constant_initializer(0), trainable=False)
        labels = tf.reshape(labels, [-1])
        centers_batch = tf.gather(centers, labels)
        loss = tf.nn.l2_loss(features - centers_batch)
        diff = centers_batch - features
        unique_label, unique_idx, unique_count = tf.unique_with_counts(labels)
        appear_times = tf.gather(unique_count, unique_idx)
        appear_times = tf.reshape(appear_times, [-1, 1])
        diff = diff / tf.cast((1 + appear_times), tf.float32)
        diff = alpha * diff
        centers_update_op = tf.scatter_sub(centers, labels, diff)
        return loss, centers, centers_update_op

    x = tf.placeholder(tf.float32, [None, D])
    tok = tf.placeholder(tf.int64, [None, 2])
    y = tf.placeholder(tf.int64, [None])
    emb = tf.get_variable("tok_emb", [V, 4])
    tok_feat = tf.reduce_mean(tf.nn.embedding_lookup(emb, tok, max_norm=0.5), 1)
    with tf.variable_scope("net"):
        h = tf.layers.dense(tf.concat([x, tok_feat], 1), 8, activation=tf.nn.relu, name="fc1")
        features = tf.layers.dense(h, 2, name="features")
        logits = tf.layers.dense(features, C, name="logits")
    with tf.name_scope('loss'):
        with tf.name_scope('center_loss'):
            c_loss, centers, centers_update_op = get_center_loss(features, y, 0.5, C)
        with tf.name_scope('softmax_loss'):
            softmax_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        with tf.name_scope('total_loss'):
            total_loss = softmax_loss + 0.01 * c_loss
    global_step = tf.Variable(0, trainable=False, name='global_step')
    optimizer = tf.train.AdamOptimizer(0.01)
    with tf.control_dependencies([centers_update_op]):
        train_op = optimizer.minimize(total_loss, global_step=global_step)
    out = {"losses": [], "center_losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.6)
        for step in range(steps):
            k = (step % 3) * B
            fd = {x: Xd[k:k + B], tok: Td[k:k + B], y: Yd[k:k + B]}
            _, l, cl = sess.run([train_op, total_loss, c_loss], fd)
            out["losses"].append(l), out["center_losses"].append(cl)
        out["centers"], out["tok_feat"] = sess.run([centers, tok_feat], {tok: Td[:5]})
        out["vars"] = _values(tf, sess)
    return out



# ------------------------------------------------------------------------------------------
# Save, then continue training elsewhere (the well-known "restore and continue" answer): the
# train op and tensors put in collections, import_meta_graph into a fresh graph, tensors and
# ops found by name, the restored Adam slots carrying on

def resume_from_meta_graph(tf, seed, steps):
    rng = np.random.RandomState(seed)
    D, B = 6, 8
    Xd = rng.normal(size=(B * 2, D)).astype(np.float32)
    Yd = np.tanh(Xd @ rng.normal(size=(D, 2))).astype(np.float32)
    tmp = tempfile.mkdtemp()
    out = {"losses": [], "resumed_losses": []}
    try:
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [None, D], name="x")
            y = tf.placeholder(tf.float32, [None, 2], name="y")
            w1 = tf.Variable(tf.random_normal([D, 8]), name="w1")
            b1 = tf.Variable(tf.zeros([8]), name="b1")
            w2 = tf.Variable(tf.random_normal([8, 2]), name="w2")
            pred = tf.nn.tanh(tf.matmul(tf.nn.sigmoid(tf.matmul(x, w1) + b1), w2), name="pred")
            loss = tf.reduce_mean(tf.square(pred - y), name="loss")
            global_step = tf.Variable(0, name="global_step", trainable=False)
            train_op = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step, name="train_op")
            tf.add_to_collection("train_op", train_op)
            tf.add_to_collection("pred", pred)
            saver = tf.train.Saver(max_to_keep=1)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                _set_vars(tf, sess, seed, 0.5)
                for step in range(steps):
                    k = (step % 2) * B
                    out["losses"].append(sess.run([loss, train_op], {x: Xd[k:k + B], y: Yd[k:k + B]})[0])
                saver.save(sess, os.path.join(tmp, "my-model"), global_step=global_step)
        with tf.Graph().as_default() as graph:
            with tf.Session() as sess:
                new_saver = tf.train.import_meta_graph(tf.train.latest_checkpoint(tmp) + ".meta")
                new_saver.restore(sess, tf.train.latest_checkpoint(tmp))
                train_op = tf.get_collection("train_op")[0]
                pred = tf.get_collection("pred")[0]
                x = graph.get_tensor_by_name("x:0")
                y = graph.get_tensor_by_name("y:0")
                loss = graph.get_tensor_by_name("loss:0")
                # "global_step:0" is the value in TF 1.x (collflow too), TF 2's resource handle
                step_var = [v for v in tf.global_variables() if v.op.name == "global_step"][0]
                out["restored_step"] = sess.run(step_var)
                for step in range(steps):
                    k = (step % 2) * B
                    out["resumed_losses"].append(sess.run([loss, train_op], {x: Xd[k:k + B], y: Yd[k:k + B]})[0])
                out["pred"] = sess.run(pred, {x: Xd[:4]})
                out["vars"] = _values(tf, sess)
                out["var_names"] = [v.name for v in tf.global_variables()]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------------------
# Variable-length text through tf.data: Dataset.from_generator, padded_batch, an initializable
# iterator re-run each epoch, dynamic_rnn over the padded batch with its lengths

def data_from_generator(tf, seed, epochs):
    rng = np.random.RandomState(seed)
    V, E, Hd = 12, 5, 6
    docs = [rng.randint(1, V, rng.randint(2, 7)).astype(np.int32) for _ in range(10)]
    labels = [int(d.sum() % 2) for d in docs]

    def gen():
        for d, l in zip(docs, labels):
            yield d, len(d), l

    dataset = tf.data.Dataset.from_generator(gen, (tf.int32, tf.int32, tf.int32),
                                             (tf.TensorShape([None]), tf.TensorShape([]), tf.TensorShape([])))
    dataset = dataset.padded_batch(4, padded_shapes=([None], [], []))
    iterator = dataset.make_initializable_iterator()
    tokens, lengths, ys = iterator.get_next()
    emb = tf.get_variable("emb", [V, E])
    cell = tf.nn.rnn_cell.GRUCell(Hd)
    _, state = tf.nn.dynamic_rnn(cell, tf.nn.embedding_lookup(emb, tokens), sequence_length=lengths,
                                 dtype=tf.float32)
    logits = tf.layers.dense(state, 2, name="out")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=logits))
    train_op = tf.train.RMSPropOptimizer(0.02).minimize(loss)
    out = {"losses": [], "batch_shapes": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for epoch in range(epochs):
            sess.run(iterator.initializer)
            while True:
                try:
                    l, t, _ = sess.run([loss, tokens, train_op])
                except tf.errors.OutOfRangeError:
                    break
                out["losses"].append(l), out["batch_shapes"].append(list(t.shape))
        out["vars"] = _values(tf, sess)
    return out


PROGRAMS = [
    ("actor_critic_ppo", actor_critic, dict(steps=6)),
    ("siamese", siamese, dict(steps=20)),
    ("factorization_machine_sparse", factorization_machine, dict(steps=12)),
    ("dann_flip_gradient", dann, dict(steps=12)),
    ("keras_in_graph", keras_in_graph, dict(steps=12)),
    ("multi_gpu_towers", multi_tower, dict(steps=10)),
    ("gradient_accumulation", grad_accumulation, dict(steps=6)),
    ("center_loss_scatter", center_loss, dict(steps=12)),
    ("resume_from_meta_graph", resume_from_meta_graph, dict(steps=6)),
    ("data_from_generator", data_from_generator, dict(epochs=3)),
]


@pytest.mark.parametrize("name,program,kwargs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program(name, program, kwargs):
    compare_program(program, kwargs)
