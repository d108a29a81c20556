"""More TF1 programs as their authors wrote them (see test_vs_tensorflow_programs_real.py):
graphs, densities, memories and trees.  tkipf's graph convolutional network (sparse
placeholders, sparse_retain dropout, sparse_tensor_dense_matmul, a boolean mask fed to an int32
placeholder, L2 on the first layer only, masked softmax cross-entropy; also with Chebyshev
supports), a GraphSAGE mean aggregator (sparse_segment_mean of a variable under Momentum),
PetarV-'s graph attention network (SparseTensor * dense, sparse_add, sparse_softmax,
sparse_reshape; and its dense head), a gated PixelCNN (causally masked kernels, tanh * sigmoid
gates, a discretized softmax, clip_by_value on the gradients, the receptive field checked by
tf.gradients, greedy sampling), a neural Turing machine on the copy task (cosine addressing,
circular convolution by reverse / stack of slices, sharpening by pow), normalizing flows
(RealNVP couplings and their inverse; planar flows with the constraint on u), exact
Gaussian-process regression in float64 (cholesky, triangular solves, cholesky_solve), ibab's
WaveNet (mu-law, time_to_batch dilated conv1d on dynamic shapes), domluna's end-to-end memory
network (nil slot zeroed in clipped IndexedSlices gradients), tensor2tensor's sparsely-gated
mixture of experts (tf.split by run-time part sizes, empty experts), HKUST's R-Net (tf.slice to
the longest passage, reverse_sequence GRUs, dropout noise_shape of tf.shape entries under
tf.cond, a pointer net) and a recursive net over parse trees (while_loop over a TensorArray,
TensorArray scatter / gather / concat).  tests/test_real_more_fixes.py checks what they found.
"""
import os
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

from test_vs_tensorflow_programs import _values, compare_program  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]


def _set_vars(tf, sess, seed, scale):
    """test_vs_tensorflow_programs._set_vars's values (keyed by each trainable variable's name)
    in one run: TensorFlow re-optimizes the graph at every run of a new op."""
    assigns = []
    for v in tf.trainable_variables():
        shape = [int(d) for d in v.get_shape()]
        r = np.random.RandomState((seed * 1000003 + zlib.crc32(v.name.encode())) % 2**31)
        assigns.append(v.assign(r.uniform(-scale, scale, shape).astype(np.float32)))
    sess.run(tf.group(*assigns))


# ------------------------------------------------------------------------------------------
# Graph convolutional network (tkipf/gcn: utils.py's preprocessing, layers.py's
# GraphConvolution with sparse inputs, models.py's GCN, metrics.py's masked losses)

def _gcn_data(rng, N, F, C):
    A = np.triu(rng.rand(N, N) < 0.3, 1)
    A = (A + A.T).astype(np.float32)
    X = (rng.rand(N, F) < 0.4).astype(np.float32)
    X[:, 0] = 1.0  # no empty rows
    labels = np.eye(C, dtype=np.float32)[rng.randint(0, C, N)]
    return A, X, labels


def _sparse_to_tuple(m):
    rows, cols = np.nonzero(m)
    return (np.vstack((rows, cols)).T.astype(np.int64), m[rows, cols].astype(np.float32),
            np.asarray(m.shape, np.int64))


def gcn(tf, seed, steps, model="gcn"):
    rng = np.random.RandomState(seed)
    N, F, C, hidden, weight_decay = 14, 9, 3, 8, 5e-4
    adj, raw_features, y = _gcn_data(rng, N, F, C)
    train_mask = np.arange(N) < 6
    val_mask = (np.arange(N) >= 6) & (np.arange(N) < 10)

    def preprocess_features(features):
        rowsum = features.sum(1)
        r_inv = np.power(rowsum, -1).flatten()
        r_inv[np.isinf(r_inv)] = 0.
        return _sparse_to_tuple(np.diag(r_inv).dot(features))

    def normalize_adj(a):
        rowsum = a.sum(1)
        with np.errstate(divide="ignore"):  # isolated nodes
            d_inv_sqrt = np.power(rowsum, -0.5).flatten()
        d_inv_sqrt[np.isinf(d_inv_sqrt)] = 0.
        d = np.diag(d_inv_sqrt)
        return a.dot(d).T.dot(d)

    if model == "gcn":
        support = [_sparse_to_tuple(normalize_adj(adj + np.eye(N, dtype=np.float32)))]
    else:  # gcn_cheby, max_degree 2: Chebyshev polynomials of the scaled Laplacian
        laplacian = np.eye(N) - normalize_adj(adj)
        largest_eigval = np.linalg.eigvalsh(laplacian).max()
        scaled = (2. / largest_eigval) * laplacian - np.eye(N)
        t_k = [np.eye(N), scaled]
        t_k.append(2 * scaled.dot(t_k[-1]) - t_k[-2])
        support = [_sparse_to_tuple(t.astype(np.float32)) for t in t_k]
    features = preprocess_features(raw_features)
    placeholders = {
        'support': [tf.sparse_placeholder(tf.float32) for _ in support],
        'features': tf.sparse_placeholder(tf.float32, shape=tf.constant(features[2], dtype=tf.int64)),
        'labels': tf.placeholder(tf.float32, shape=(None, C)),
        'labels_mask': tf.placeholder(tf.int32),
        'dropout': tf.placeholder_with_default(0., shape=()),
        'num_features_nonzero': tf.placeholder(tf.int32),
    }

    def glorot(shape, name=None):
        init_range = np.sqrt(6.0 / (shape[0] + shape[1]))
        initial = tf.random_uniform(shape, minval=-init_range, maxval=init_range, dtype=tf.float32)
        return tf.Variable(initial, name=name)

    def sparse_dropout(x, keep_prob, noise_shape):
        random_tensor = keep_prob
        random_tensor += tf.random_uniform(noise_shape)
        dropout_mask = tf.cast(tf.floor(random_tensor), dtype=tf.bool)
        pre_out = tf.sparse_retain(x, dropout_mask)
        return pre_out * (1. / keep_prob)

    def dot(x, y, sparse=False):
        return tf.sparse_tensor_dense_matmul(x, y) if sparse else tf.matmul(x, y)

    class GraphConvolution(object):
        def __init__(self, name, input_dim, output_dim, act=tf.nn.relu, sparse_inputs=False):
            self.name, self.act, self.sparse_inputs, self.vars = name, act, sparse_inputs, {}
            self.dropout = placeholders['dropout']
            self.support = placeholders['support']
            self.num_features_nonzero = placeholders['num_features_nonzero']
            with tf.variable_scope(self.name + '_vars'):
                for i in range(len(self.support)):
                    self.vars['weights_' + str(i)] = glorot([input_dim, output_dim], name='weights_' + str(i))
                self.vars['bias'] = tf.Variable(tf.zeros([output_dim], dtype=tf.float32), name='bias')

        def __call__(self, inputs):
            with tf.name_scope(self.name):
                x = inputs
                if self.sparse_inputs:
                    x = sparse_dropout(x, 1 - self.dropout, self.num_features_nonzero)
                else:
                    x = tf.nn.dropout(x, 1 - self.dropout)
                supports = []
                for i in range(len(self.support)):
                    pre_sup = dot(x, self.vars['weights_' + str(i)], sparse=self.sparse_inputs)
                    supports.append(dot(self.support[i], pre_sup, sparse=True))
                output = tf.add_n(supports)
                output += self.vars['bias']
                return self.act(output)

    def masked_softmax_cross_entropy(preds, labels, mask):
        loss = tf.nn.softmax_cross_entropy_with_logits(logits=preds, labels=labels)
        mask = tf.cast(mask, dtype=tf.float32)
        mask /= tf.reduce_mean(mask)
        loss *= mask
        return tf.reduce_mean(loss)

    def masked_accuracy(preds, labels, mask):
        correct_prediction = tf.equal(tf.argmax(preds, 1), tf.argmax(labels, 1))
        accuracy_all = tf.cast(correct_prediction, tf.float32)
        mask = tf.cast(mask, dtype=tf.float32)
        mask /= tf.reduce_mean(mask)
        accuracy_all *= mask
        return tf.reduce_mean(accuracy_all)

    with tf.variable_scope("gcn"):
        layers = [GraphConvolution("graphconvolution_1", F, hidden, sparse_inputs=True),
                  GraphConvolution("graphconvolution_2", hidden, C, act=lambda x: x)]
        activations = [placeholders['features']]
        for layer in layers:
            activations.append(layer(activations[-1]))
        outputs = activations[-1]
    loss = 0
    for var in layers[0].vars.values():
        loss += weight_decay * tf.nn.l2_loss(var)
    loss += masked_softmax_cross_entropy(outputs, placeholders['labels'], placeholders['labels_mask'])
    accuracy = masked_accuracy(outputs, placeholders['labels'], placeholders['labels_mask'])
    opt_op = tf.train.AdamOptimizer(learning_rate=0.05).minimize(loss)
    predict = tf.nn.softmax(outputs)

    def construct_feed_dict(labels_mask):
        feed_dict = {placeholders['labels']: y, placeholders['labels_mask']: labels_mask,
                     placeholders['features']: features,
                     placeholders['num_features_nonzero']: features[1].shape}
        feed_dict.update({placeholders['support'][i]: support[i] for i in range(len(support))})
        return feed_dict

    out = {"losses": [], "acc": [], "val_losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for epoch in range(steps):
            feed_dict = construct_feed_dict(train_mask)
            feed_dict.update({placeholders['dropout']: 0.0})
            _, l, a = sess.run([opt_op, loss, accuracy], feed_dict=feed_dict)
            out["losses"].append(l), out["acc"].append(a)
            out["val_losses"].append(sess.run(loss, feed_dict=construct_feed_dict(val_mask)))
        out["predict"] = sess.run(predict, feed_dict=construct_feed_dict(val_mask))
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Gated PixelCNN (carpedm20/pixel-cnn-tensorflow's masked conv2d and RMSProp with clipped
# gradients, van den Oord's tanh * sigmoid gates, a discretized softmax over 4 levels)

def pixel_cnn(tf, seed, steps):
    rng = np.random.RandomState(seed)
    batch, H, W, levels, hidden_dims, grad_clip = 4, 6, 6, 4, 8, 0.5
    images = rng.randint(0, levels, size=(batch * 2, H, W, 1)).astype(np.int32)

    def conv2d(inputs, num_outputs, kernel_shape, mask_type, scope="conv2d"):
        with tf.variable_scope(scope):
            kernel_h, kernel_w = kernel_shape
            batch_size, height, width, channel = inputs.get_shape().as_list()
            center_h, center_w = kernel_h // 2, kernel_w // 2
            weights_shape = [kernel_h, kernel_w, channel, num_outputs]
            weights = tf.get_variable("weights", weights_shape, tf.float32, tf.glorot_uniform_initializer())
            if mask_type is not None:
                mask = np.ones((kernel_h, kernel_w, channel, num_outputs), dtype=np.float32)
                mask[center_h, center_w + 1:, :, :] = 0.
                mask[center_h + 1:, :, :, :] = 0.
                if mask_type == 'a':
                    mask[center_h, center_w, :, :] = 0.
                weights = weights * tf.constant(mask, dtype=tf.float32)
                tf.add_to_collection('conv2d_weights_%s' % mask_type, weights)
            outputs = tf.nn.conv2d(inputs, weights, [1, 1, 1, 1], padding="SAME", name='outputs')
            biases = tf.get_variable("biases", [num_outputs], tf.float32, tf.zeros_initializer())
            return tf.nn.bias_add(outputs, biases, name='outputs_plus_b')

    def gated_block(inputs, scope):
        with tf.variable_scope(scope):
            h = conv2d(inputs, 2 * hidden_dims, [3, 3], "b", scope="gate_conv")
            a, b = tf.split(h, 2, axis=3)
            gated = tf.multiply(tf.tanh(a), tf.sigmoid(b))
            return inputs + conv2d(gated, hidden_dims, [1, 1], None, scope="residual")

    pixels = tf.placeholder(tf.int32, [batch, H, W, 1], name="pixels")
    inputs = tf.cast(pixels, tf.float32) / (levels - 1) - 0.5
    conv_inputs = conv2d(inputs, hidden_dims, [5, 5], "a", scope="conv_inputs")
    l_hid = conv_inputs
    for idx in range(2):
        l_hid = gated_block(l_hid, "GATED%d" % idx)
    out = tf.nn.relu(conv2d(l_hid, hidden_dims, [1, 1], "b", scope="conv2d_out_logits_1"))
    logits = conv2d(out, levels, [1, 1], "b", scope="conv2d_out_logits_2")
    logits = tf.reshape(logits, [batch, H, W, 1, levels])
    probs = tf.nn.softmax(logits)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=pixels, logits=logits, name="loss"))
    optimizer = tf.train.RMSPropOptimizer(0.01)
    grads_and_vars = optimizer.compute_gradients(loss)
    new_grads_and_vars = [(tf.clip_by_value(gv[0], -grad_clip, grad_clip), gv[1]) for gv in grads_and_vars]
    optim = optimizer.apply_gradients(new_grads_and_vars)
    # the mask makes output (r, c) blind to inputs at or after (r, c) in raster order
    receptive = tf.gradients(tf.reduce_sum(logits[:, 2, 3]), inputs)[0]
    out = {"losses": [], "n_masked": len(tf.get_collection('conv2d_weights_a'))
           + len(tf.get_collection('conv2d_weights_b'))}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.4)
        for step in range(steps):
            i = (step % 2) * batch
            l, _ = sess.run([loss, optim], {pixels: images[i:i + batch]})
            out["losses"].append(l)
        out["receptive"] = sess.run(receptive, {pixels: images[:batch]})
        samples = np.zeros((batch, H, W, 1), np.int32)
        for r in range(2):
            for c in range(W):
                p = sess.run(probs, {pixels: samples})
                samples[:, r, c, 0] = np.argmax(p[:, r, c, 0], axis=-1)
        out["samples"] = samples
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Neural Turing machine on the copy task (snowkylin/ntm's NTMCell and addressing, unrolled
# over time with the variables reused; RMSProp with momentum and clip_by_global_norm)

def ntm_copy(tf, seed, steps):
    rng = np.random.RandomState(seed)
    batch, seq_len, vector_dim = 3, 3, 4
    memory_size, memory_vector_dim, shift_range, rnn_size = 6, 5, 1, 10
    read_head_num = write_head_num = 1
    total_len = seq_len * 2 + 1

    def copy_batch():
        seq = rng.randint(0, 2, size=(batch, seq_len, vector_dim)).astype(np.float32)
        x = np.zeros((batch, total_len, vector_dim + 1), np.float32)
        x[:, :seq_len, :vector_dim] = seq
        x[:, seq_len, vector_dim] = 1.0  # the delimiter
        return x, seq

    data = [copy_batch() for _ in range(2)]

    class NTMCell(object):
        def __init__(self):
            self.controller = tf.nn.rnn_cell.LSTMCell(rnn_size)
            self.step = 0

        def __call__(self, x, prev_state):
            prev_read_vector_list = prev_state['read_vector_list']
            controller_input = tf.concat([x] + prev_read_vector_list, axis=1)
            with tf.variable_scope('controller', reuse=self.step > 0):
                controller_output, controller_state = self.controller(controller_input,
                                                                      prev_state['controller_state'])
            num_parameters_per_head = memory_vector_dim + 1 + 1 + (shift_range * 2 + 1) + 1
            num_heads = read_head_num + write_head_num
            total_parameter_num = num_parameters_per_head * num_heads + memory_vector_dim * 2 * write_head_num
            with tf.variable_scope("o2p", reuse=self.step > 0):
                o2p_w = tf.get_variable('o2p_w', [controller_output.get_shape()[1], total_parameter_num],
                                        initializer=tf.random_normal_initializer(mean=0.0, stddev=0.5))
                o2p_b = tf.get_variable('o2p_b', [total_parameter_num],
                                        initializer=tf.random_normal_initializer(mean=0.0, stddev=0.5))
                parameters = tf.nn.xw_plus_b(controller_output, o2p_w, o2p_b)
            head_parameter_list = tf.split(parameters[:, :num_parameters_per_head * num_heads], num_heads, axis=1)
            erase_add_list = tf.split(parameters[:, num_parameters_per_head * num_heads:], 2 * write_head_num, axis=1)
            prev_w_list, prev_M = prev_state['w_list'], prev_state['M']
            w_list = []
            for i, head_parameter in enumerate(head_parameter_list):
                k = tf.tanh(head_parameter[:, 0:memory_vector_dim])
                beta = tf.sigmoid(head_parameter[:, memory_vector_dim]) * 10
                g = tf.sigmoid(head_parameter[:, memory_vector_dim + 1])
                s = tf.nn.softmax(head_parameter[:, memory_vector_dim + 2:memory_vector_dim + 2 + (shift_range * 2 + 1)])
                gamma = tf.log(tf.exp(head_parameter[:, -1]) + 1) + 1
                with tf.variable_scope('addressing_head_%d' % i):
                    w = self.addressing(k, beta, g, s, gamma, prev_M, prev_w_list[i])
                w_list.append(w)
            read_w_list = w_list[:read_head_num]
            read_vector_list = [tf.reduce_sum(tf.expand_dims(read_w_list[i], dim=2) * prev_M, axis=1)
                                for i in range(read_head_num)]
            write_w_list = w_list[read_head_num:]
            M = prev_M
            for i in range(write_head_num):
                w = tf.expand_dims(write_w_list[i], axis=2)
                erase_vector = tf.expand_dims(tf.sigmoid(erase_add_list[i * 2]), axis=1)
                add_vector = tf.expand_dims(tf.tanh(erase_add_list[i * 2 + 1]), axis=1)
                M = M * (tf.ones(M.get_shape()) - tf.matmul(w, erase_vector)) + tf.matmul(w, add_vector)
            with tf.variable_scope("o2o", reuse=self.step > 0):
                o2o_w = tf.get_variable('o2o_w', [controller_output.get_shape()[1], vector_dim + 1],
                                        initializer=tf.random_normal_initializer(mean=0.0, stddev=0.5))
                o2o_b = tf.get_variable('o2o_b', [vector_dim + 1],
                                        initializer=tf.random_normal_initializer(mean=0.0, stddev=0.5))
                NTM_output = tf.nn.xw_plus_b(controller_output, o2o_w, o2o_b)
            self.step += 1
            return NTM_output, {'controller_state': controller_state, 'read_vector_list': read_vector_list,
                                'w_list': w_list, 'M': M}

        def addressing(self, k, beta, g, s, gamma, prev_M, prev_w):
            k = tf.expand_dims(k, axis=2)
            inner_product = tf.matmul(prev_M, k)
            k_norm = tf.sqrt(tf.reduce_sum(tf.square(k), axis=1, keep_dims=True))
            M_norm = tf.sqrt(tf.reduce_sum(tf.square(prev_M), axis=2, keep_dims=True))
            norm_product = M_norm * k_norm
            K = tf.squeeze(inner_product / (norm_product + 1e-8))
            K_amplified = tf.exp(tf.expand_dims(beta, axis=1) * K)
            w_c = K_amplified / tf.reduce_sum(K_amplified, axis=1, keep_dims=True)
            g = tf.expand_dims(g, axis=1)
            w_g = g * w_c + (1 - g) * prev_w
            s = tf.concat([s[:, :shift_range + 1],
                           tf.zeros([s.get_shape()[0], memory_size - (shift_range * 2 + 1)]),
                           s[:, -shift_range:]], axis=1)
            t = tf.concat([tf.reverse(s, axis=[1]), tf.reverse(s, axis=[1])], axis=1)
            s_matrix = tf.stack([t[:, memory_size - i - 1:memory_size * 2 - i - 1] for i in range(memory_size)],
                                axis=1)
            w_ = tf.reduce_sum(tf.expand_dims(w_g, axis=1) * s_matrix, axis=2)
            w_sharpen = tf.pow(w_, tf.expand_dims(gamma, axis=1))
            return w_sharpen / tf.reduce_sum(w_sharpen, axis=1, keep_dims=True)

        def zero_state(self, batch_size):
            with tf.variable_scope('init', reuse=tf.AUTO_REUSE):
                read_vector_list = [tf.tile(tf.tanh(tf.get_variable('init_r_%d' % i, [1, memory_vector_dim])),
                                            [batch_size, 1]) for i in range(read_head_num)]
                w_list = [tf.nn.softmax(tf.tile(tf.get_variable('init_w_%d' % i, [1, memory_size]),
                                                [batch_size, 1]))
                          for i in range(read_head_num + write_head_num)]
                controller_init_state = self.controller.zero_state(batch_size, tf.float32)
                M = tf.constant(np.ones([batch_size, memory_size, memory_vector_dim]) * 1e-6, dtype=tf.float32)
                return {'controller_state': controller_init_state, 'read_vector_list': read_vector_list,
                        'w_list': w_list, 'M': M}

    x = tf.placeholder(tf.float32, [batch, total_len, vector_dim + 1])
    y = tf.placeholder(tf.float32, [batch, seq_len, vector_dim])
    cell = NTMCell()
    state = cell.zero_state(batch)
    o, read_ws = [], []
    with tf.variable_scope("ntm"):
        for t in range(total_len):
            output, state = cell(x[:, t, :], state)
            o.append(output[:, :vector_dim])
            read_ws.append(state['w_list'][0])
    logits = tf.transpose(tf.stack(o[-seq_len:], axis=0), perm=[1, 0, 2])
    outputs = tf.sigmoid(logits)
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
    tvars = tf.trainable_variables()
    grads, global_norm = tf.clip_by_global_norm(tf.gradients(loss, tvars), 5.)
    optimizer = tf.train.RMSPropOptimizer(learning_rate=1e-2, momentum=0.9, decay=0.95)
    train_op = optimizer.apply_gradients(zip(grads, tvars))
    out = {"losses": [], "norms": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for step in range(steps):
            xb, yb = data[step % 2]
            l, n, _ = sess.run([loss, global_norm, train_op], {x: xb, y: yb})
            out["losses"].append(l), out["norms"].append(n)
        out["outputs"], out["read_weights"] = sess.run([outputs, tf.stack(read_ws)], {x: data[0][0]})
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Normalizing flows: RealNVP affine couplings by maximum likelihood on two moons (log_det_J
# summed per layer, the inverse run on fixed base samples) and Rezende & Mohamed's planar
# flows fitted to an energy U(z) by reverse KL (u_hat's softplus constraint)

def _two_moons(rng, n):
    t = rng.uniform(0, np.pi, n)
    upper = rng.rand(n) < 0.5
    x = np.where(upper, np.cos(t), 1 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    return (np.stack([x, y], 1) + 0.05 * rng.normal(size=(n, 2))).astype(np.float32)


def realnvp(tf, seed, steps):
    rng = np.random.RandomState(seed)
    X_all = _two_moons(rng, 64)
    z_fixed = rng.normal(size=(16, 2)).astype(np.float32)
    num_layers, n_hidden = 4, 12
    masks = [np.array([[1., 0.]], np.float32) if i % 2 == 0 else np.array([[0., 1.]], np.float32)
             for i in range(num_layers)]

    def nn(x_masked, name):
        with tf.variable_scope(name, reuse=tf.AUTO_REUSE):
            h = tf.layers.dense(x_masked, n_hidden, activation=tf.nn.leaky_relu, name="h1")
            h = tf.layers.dense(h, n_hidden, activation=tf.nn.leaky_relu, name="h2")
            scale = tf.get_variable("scale", [1, 2], initializer=tf.ones_initializer())
            s = scale * tf.layers.dense(h, 2, activation=tf.nn.tanh, name="s")
            t = tf.layers.dense(h, 2, name="t")
            return s, t

    def forward(x):  # data -> latent, with log|det J|
        sum_log_det = tf.zeros_like(x[:, 0])
        z = x
        for i in reversed(range(num_layers)):
            mask = masks[i]
            s, t = nn(z * mask, "coupling_%d" % i)
            s, t = s * (1 - mask), t * (1 - mask)
            z = z * mask + (1 - mask) * (z - t) * tf.exp(-s)
            sum_log_det -= tf.reduce_sum(s, axis=1)
        return z, sum_log_det

    def inverse(z):  # latent -> data
        x = z
        for i in range(num_layers):
            mask = masks[i]
            s, t = nn(x * mask, "coupling_%d" % i)
            x = x * mask + (1 - mask) * (x * tf.exp(s) + t)
        return x

    x = tf.placeholder(tf.float32, [None, 2], name="x")
    z, log_det = forward(x)
    base = tf.distributions.Normal(loc=0., scale=1.)
    log_prob = tf.reduce_sum(base.log_prob(z), axis=1) + log_det
    loss = -tf.reduce_mean(log_prob)
    train_op = tf.train.AdamOptimizer(1e-2).minimize(loss)
    samples = inverse(tf.constant(z_fixed))
    roundtrip = forward(inverse(tf.constant(z_fixed)))[0]
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.4)
        for step in range(steps):
            i = (step % 4) * 16
            l, _ = sess.run([loss, train_op], {x: X_all[i:i + 16]})
            out["losses"].append(l)
        out["samples"], out["roundtrip"], out["log_prob"] = sess.run(
            [samples, roundtrip, log_prob], {x: X_all[:16]})
        out["vars"] = _values(tf, sess)
    return out


def planar_flow(tf, seed, steps):
    rng = np.random.RandomState(seed)
    K, batch = 6, 32
    z0_all = rng.normal(size=(batch * 3, 2)).astype(np.float32)

    def potential(z):  # U_1 of the paper: a ring
        z1, z2 = z[:, 0], z[:, 1]
        norm = tf.sqrt(z1 ** 2 + z2 ** 2)
        exp1 = tf.exp(-0.5 * ((z1 - 2) / 0.6) ** 2)
        exp2 = tf.exp(-0.5 * ((z1 + 2) / 0.6) ** 2)
        return 0.5 * ((norm - 2) / 0.4) ** 2 - tf.log(exp1 + exp2 + 1e-8)

    def planar(z, k):
        with tf.variable_scope("planar_%d" % k):
            u = tf.get_variable("u", [2, 1], initializer=tf.random_normal_initializer(stddev=0.1))
            w = tf.get_variable("w", [2, 1], initializer=tf.random_normal_initializer(stddev=0.1))
            b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
            wtu = tf.matmul(w, u, transpose_a=True)
            m_wtu = -1 + tf.nn.softplus(wtu)
            u_hat = u + (m_wtu - wtu) * w / tf.reduce_sum(tf.square(w))
            lin = tf.matmul(z, w) + b
            f_z = z + tf.matmul(tf.tanh(lin), u_hat, transpose_b=True)
            psi = tf.matmul(1 - tf.tanh(lin) ** 2, w, transpose_b=True)
            det = tf.abs(1 + tf.matmul(psi, u_hat))
            return f_z, tf.squeeze(tf.log(det + 1e-8), axis=1)

    z0 = tf.placeholder(tf.float32, [None, 2])
    log_q0 = -0.5 * tf.reduce_sum(tf.square(z0), axis=1) - np.log(2 * np.pi)
    z, sum_log_det = z0, 0.
    for k in range(K):
        z, log_det = planar(z, k)
        sum_log_det += log_det
    log_qk = log_q0 - sum_log_det
    loss = tf.reduce_mean(log_qk + potential(z))
    global_step = tf.train.get_or_create_global_step()
    lr = tf.train.inverse_time_decay(0.05, global_step, 2, 0.5)
    train_op = tf.train.RMSPropOptimizer(lr).minimize(loss, global_step=global_step)
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for step in range(steps):
            i = (step % 3) * batch
            l, _ = sess.run([loss, train_op], {z0: z0_all[i:i + batch]})
            out["losses"].append(l)
        out["zk"], out["log_qk"] = sess.run([z, log_qk], {z0: z0_all[:batch]})
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Exact Gaussian-process regression in float64 (GPflow's GPR written out by hand): an ARD RBF
# kernel with positive parameters through softplus, cholesky, triangular solves, the negative
# log marginal likelihood minimized by Adam, the predictive mean and variance

def gp_regression(tf, seed, steps):
    rng = np.random.RandomState(seed)
    n, n_test, D = 20, 7, 2
    X = rng.uniform(-2, 2, (n, D))
    Y = (np.sin(X[:, :1] * 1.5) + 0.3 * X[:, 1:] ** 2 + 0.1 * rng.normal(size=(n, 1)))
    Xs = rng.uniform(-2, 2, (n_test, D))
    dtype = tf.float64
    x = tf.placeholder(dtype, [None, D], name="X")
    y = tf.placeholder(dtype, [None, 1], name="Y")
    xs = tf.placeholder(dtype, [None, D], name="Xnew")
    with tf.variable_scope("GPR"):
        raw_lengthscales = tf.get_variable("lengthscales", initializer=np.array([0.5, 0.2]))
        raw_variance = tf.get_variable("variance", initializer=np.array(0.7))
        raw_noise = tf.get_variable("likelihood_variance", initializer=np.array(-1.0))
    lengthscales = tf.nn.softplus(raw_lengthscales)
    variance = tf.nn.softplus(raw_variance)
    noise = tf.nn.softplus(raw_noise) + 1e-6

    def square_dist(X1, X2):
        X1 = X1 / lengthscales
        X2 = X2 / lengthscales
        X1s = tf.reduce_sum(tf.square(X1), axis=1)
        X2s = tf.reduce_sum(tf.square(X2), axis=1)
        dist = -2 * tf.matmul(X1, X2, transpose_b=True)
        dist += tf.reshape(X1s, (-1, 1)) + tf.reshape(X2s, (1, -1))
        return dist

    def K(X1, X2=None):
        return variance * tf.exp(-square_dist(X1, X1 if X2 is None else X2) / 2)

    num_data = tf.cast(tf.shape(x)[0], dtype)
    Kxx = K(x) + tf.eye(tf.shape(x)[0], dtype=dtype) * noise
    L = tf.cholesky(Kxx)
    alpha_half = tf.matrix_triangular_solve(L, y, lower=True)
    log_lik = (-0.5 * tf.reduce_sum(tf.square(alpha_half)) - tf.reduce_sum(tf.log(tf.matrix_diag_part(L)))
               - 0.5 * num_data * np.log(2 * np.pi))
    loss = -log_lik
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss)
    Kxs = K(x, xs)
    A = tf.matrix_triangular_solve(L, Kxs, lower=True)
    fmean = tf.matmul(A, alpha_half, transpose_a=True)
    fvar = variance - tf.reduce_sum(tf.square(A), 0)
    fmean_via_solve = tf.matmul(Kxs, tf.cholesky_solve(L, y), transpose_a=True)
    out = {"losses": []}
    feed = {x: X, y: Y, xs: Xs}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            l, _ = sess.run([loss, train_op], feed)
            out["losses"].append(l)
        out["fmean"], out["fvar"], out["fmean_via_solve"] = sess.run([fmean, fvar, fmean_via_solve], feed)
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# WaveNet (ibab/tensorflow-wavenet's ops.py and model.py, trimmed): mu-law quantization,
# one-hot inputs, a causal layer, dilated causal convolutions by time_to_batch, gated units,
# residual and skip outputs, post-processing 1x1 convs, L2 on every non-bias variable

def wavenet(tf, seed, steps):
    rng = np.random.RandomState(seed)
    quantization_channels, residual_channels, dilation_channels, skip_channels = 16, 6, 6, 8
    dilations, filter_width, batch, T = [1, 2, 4], 2, 2, 24
    receptive_field = (filter_width - 1) * sum(dilations) + filter_width
    t_axis = np.arange(T)
    audio_all = (0.6 * np.sin(t_axis[None, :, None] * rng.uniform(0.2, 0.6, (batch * 2, 1, 1)))
                 + 0.05 * rng.normal(size=(batch * 2, T, 1))).astype(np.float32)

    def time_to_batch(value, dilation, name=None):
        with tf.name_scope('time_to_batch'):
            shape = tf.shape(value)
            pad_elements = dilation - 1 - (shape[1] + dilation - 1) % dilation
            padded = tf.pad(value, [[0, 0], [0, pad_elements], [0, 0]])
            reshaped = tf.reshape(padded, [-1, dilation, shape[2]])
            transposed = tf.transpose(reshaped, perm=[1, 0, 2])
            return tf.reshape(transposed, [shape[0] * dilation, -1, shape[2]])

    def batch_to_time(value, dilation, name=None):
        with tf.name_scope('batch_to_time'):
            shape = tf.shape(value)
            prepared = tf.reshape(value, [dilation, -1, shape[2]])
            transposed = tf.transpose(prepared, perm=[1, 0, 2])
            return tf.reshape(transposed, [tf.div(shape[0], dilation), -1, shape[2]])

    def causal_conv(value, filter_, dilation, name='causal_conv'):
        with tf.name_scope(name):
            filter_width_ = tf.shape(filter_)[0]
            if dilation > 1:
                transformed = time_to_batch(value, dilation)
                conv = tf.nn.conv1d(transformed, filter_, stride=1, padding='VALID')
                restored = batch_to_time(conv, dilation)
            else:
                restored = tf.nn.conv1d(value, filter_, stride=1, padding='VALID')
            out_width = tf.shape(value)[1] - (filter_width_ - 1) * dilation
            return tf.slice(restored, [0, 0, 0], [-1, out_width, -1])

    def mu_law_encode(audio, quantization_channels):
        with tf.name_scope('encode'):
            mu = tf.to_float(quantization_channels - 1)
            safe_audio_abs = tf.minimum(tf.abs(audio), 1.0)
            magnitude = tf.log1p(mu * safe_audio_abs) / tf.log1p(mu)
            signal = tf.sign(audio) * magnitude
            return tf.to_int32((signal + 1) / 2 * mu + 0.5)

    def mu_law_decode(output, quantization_channels):
        with tf.name_scope('decode'):
            mu = quantization_channels - 1
            signal = 2 * (tf.to_float(output) / mu) - 1
            magnitude = (1 / mu) * ((1 + mu) ** abs(signal) - 1)
            return tf.sign(signal) * magnitude

    def create_variable(name, shape):
        return tf.Variable(tf.glorot_uniform_initializer()(shape=shape), name=name)

    def create_bias_variable(name, shape):
        return tf.Variable(tf.constant(value=0.0, shape=shape, dtype=tf.float32), name=name)

    variables = {}
    with tf.variable_scope('wavenet'):
        with tf.variable_scope('causal_layer'):
            variables['causal_layer'] = {'filter': create_variable(
                'filter', [filter_width, quantization_channels, residual_channels])}
        variables['dilated_stack'] = []
        with tf.variable_scope('dilated_stack'):
            for i, dilation in enumerate(dilations):
                with tf.variable_scope('layer{}'.format(i)):
                    current = {
                        'filter': create_variable('filter', [filter_width, residual_channels, dilation_channels]),
                        'gate': create_variable('gate', [filter_width, residual_channels, dilation_channels]),
                        'dense': create_variable('dense', [1, dilation_channels, residual_channels]),
                        'skip': create_variable('skip', [1, dilation_channels, skip_channels]),
                        'filter_bias': create_bias_variable('filter_bias', [dilation_channels]),
                        'gate_bias': create_bias_variable('gate_bias', [dilation_channels]),
                    }
                    variables['dilated_stack'].append(current)
        with tf.variable_scope('postprocessing'):
            variables['postprocessing'] = {
                'postprocess1': create_variable('postprocess1', [1, skip_channels, skip_channels]),
                'postprocess2': create_variable('postprocess2', [1, skip_channels, quantization_channels]),
                'postprocess1_bias': create_bias_variable('postprocess1_bias', [skip_channels]),
                'postprocess2_bias': create_bias_variable('postprocess2_bias', [quantization_channels])}

    def create_dilation_layer(input_batch, layer_index, dilation, output_width):
        v = variables['dilated_stack'][layer_index]
        conv_filter = causal_conv(input_batch, v['filter'], dilation)
        conv_gate = causal_conv(input_batch, v['gate'], dilation)
        conv_filter = tf.add(conv_filter, v['filter_bias'])
        conv_gate = tf.add(conv_gate, v['gate_bias'])
        out = tf.tanh(conv_filter) * tf.sigmoid(conv_gate)
        transformed = tf.nn.conv1d(out, v['dense'], stride=1, padding="SAME", name="dense")
        skip_cut = tf.shape(out)[1] - output_width
        out_skip = tf.slice(out, [0, skip_cut, 0], [-1, -1, -1])
        skip_contribution = tf.nn.conv1d(out_skip, v['skip'], stride=1, padding="SAME", name="skip")
        input_cut = tf.shape(input_batch)[1] - tf.shape(transformed)[1]
        input_batch = tf.slice(input_batch, [0, input_cut, 0], [-1, -1, -1])
        return skip_contribution, input_batch + transformed

    def create_network(input_batch):
        outputs = []
        current_layer = causal_conv(input_batch, variables['causal_layer']['filter'], 1)
        output_width = tf.shape(input_batch)[1] - receptive_field + 1
        for layer_index, dilation in enumerate(dilations):
            with tf.name_scope('layer{}'.format(layer_index)):
                output, current_layer = create_dilation_layer(current_layer, layer_index, dilation, output_width)
                outputs.append(output)
        with tf.name_scope('postprocessing'):
            p = variables['postprocessing']
            total = sum(outputs)
            transformed1 = tf.nn.relu(total)
            conv1 = tf.nn.conv1d(transformed1, p['postprocess1'], stride=1, padding="SAME")
            conv1 = tf.add(conv1, p['postprocess1_bias'])
            transformed2 = tf.nn.relu(conv1)
            conv2 = tf.nn.conv1d(transformed2, p['postprocess2'], stride=1, padding="SAME")
            return tf.add(conv2, p['postprocess2_bias'])

    audio = tf.placeholder(tf.float32, [None, None, 1], name="audio")
    encoded_input = mu_law_encode(audio, quantization_channels)
    encoded = tf.one_hot(encoded_input, depth=quantization_channels, dtype=tf.float32)
    encoded = tf.reshape(encoded, [tf.shape(audio)[0], -1, quantization_channels])
    network_input = tf.slice(encoded, [0, 0, 0], [-1, tf.shape(encoded)[1] - 1, -1])
    raw_output = create_network(network_input)
    with tf.name_scope('loss'):
        target_output = tf.slice(encoded, [0, receptive_field, 0], [-1, -1, -1])
        target_output = tf.reshape(target_output, [-1, quantization_channels])
        prediction = tf.reshape(raw_output, [-1, quantization_channels])
        loss = tf.nn.softmax_cross_entropy_with_logits(logits=prediction, labels=target_output)
        reduced_loss = tf.reduce_mean(loss)
        l2_loss = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if not ('bias' in v.name)])
        total_loss = reduced_loss + 1e-3 * l2_loss
    train_op = tf.train.AdamOptimizer(learning_rate=1e-2, epsilon=1e-4).minimize(total_loss)
    decoded = mu_law_decode(tf.argmax(prediction, axis=-1), quantization_channels)
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.4)
        for step in range(steps):
            i = (step % 2) * batch
            l, _ = sess.run([total_loss, train_op], {audio: audio_all[i:i + batch]})
            out["losses"].append(l)
        out["encoded"], out["decoded"] = sess.run([encoded_input, decoded], {audio: audio_all[:batch]})
        out["odd_length_loss"] = sess.run(reduced_loss, {audio: audio_all[:batch, :T - 3]})
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# End-to-end memory network (domluna/memn2n): position encoding, a nil word slot concatenated
# into each embedding variable, adjacent weight tying over hops, clip_by_norm on the
# (IndexedSlices) gradients, then the nil slot's gradient row zeroed before Adam

def memn2n(tf, seed, steps):
    rng = np.random.RandomState(seed)
    batch_size, vocab_size, sentence_size, memory_size, embedding_size, hops = 4, 12, 4, 5, 6, 3
    max_grad_norm = 4.0
    stories_all = rng.randint(0, vocab_size, (batch_size * 2, memory_size, sentence_size)).astype(np.int32)
    stories_all[:, :, -1] = 0  # padding: the nil word
    queries_all = rng.randint(1, vocab_size, (batch_size * 2, sentence_size)).astype(np.int32)
    answers_all = np.eye(vocab_size, dtype=np.int32)[rng.randint(1, vocab_size, batch_size * 2)]

    def position_encoding(sentence_size, embedding_size):
        encoding = np.ones((embedding_size, sentence_size), dtype=np.float32)
        ls, le = sentence_size + 1, embedding_size + 1
        for i in range(1, le):
            for j in range(1, ls):
                encoding[i - 1, j - 1] = (i - (embedding_size + 1) / 2) * (j - (sentence_size + 1) / 2)
        encoding = 1 + 4 * encoding / embedding_size / sentence_size
        encoding[:, -1] = 1.0  # the time word
        return np.transpose(encoding)

    def zero_nil_slot(t, name=None):
        with tf.name_scope(name, "zero_nil_slot", [t]) as name:
            t = tf.convert_to_tensor(t, name="t")
            s = tf.shape(t)[1]
            z = tf.zeros(tf.stack([1, s]))
            return tf.concat(axis=0, values=[z, tf.slice(t, [1, 0], [-1, -1])], name=name)

    stories = tf.placeholder(tf.int32, [None, memory_size, sentence_size], name="stories")
    queries = tf.placeholder(tf.int32, [None, sentence_size], name="queries")
    answers = tf.placeholder(tf.int32, [None, vocab_size], name="answers")
    encoding = tf.constant(position_encoding(sentence_size, embedding_size), name="encoding")
    init = tf.random_normal_initializer(stddev=0.1)
    with tf.variable_scope("MemN2N"):
        nil_word_slot = tf.zeros([1, embedding_size])
        A = tf.concat(axis=0, values=[nil_word_slot, init([vocab_size - 1, embedding_size])])
        C = tf.concat(axis=0, values=[nil_word_slot, init([vocab_size - 1, embedding_size])])
        A_1 = tf.Variable(A, name="A")
        Cs = []
        for hopn in range(hops):
            with tf.variable_scope('hop_{}'.format(hopn)):
                Cs.append(tf.Variable(C, name="C"))
    nil_vars = set([A_1.name] + [x.name for x in Cs])
    with tf.variable_scope("MemN2N"):
        q_emb = tf.nn.embedding_lookup(A_1, queries)
        u = [tf.reduce_sum(q_emb * encoding, 1)]
        for hopn in range(hops):
            if hopn == 0:
                m_emb_A = tf.nn.embedding_lookup(A_1, stories)
            else:
                with tf.variable_scope('hop_{}'.format(hopn - 1)):
                    m_emb_A = tf.nn.embedding_lookup(Cs[hopn - 1], stories)
            m_A = tf.reduce_sum(m_emb_A * encoding, 2)
            u_temp = tf.transpose(tf.expand_dims(u[-1], -1), [0, 2, 1])
            dotted = tf.reduce_sum(m_A * u_temp, 2)
            probs = tf.nn.softmax(dotted)
            probs_temp = tf.transpose(tf.expand_dims(probs, -1), [0, 2, 1])
            with tf.variable_scope('hop_{}'.format(hopn)):
                m_emb_C = tf.nn.embedding_lookup(Cs[hopn], stories)
            m_C = tf.reduce_sum(m_emb_C * encoding, 2)
            c_temp = tf.transpose(m_C, [0, 2, 1])
            o_k = tf.reduce_sum(c_temp * probs_temp, 2)
            u.append(u[-1] + o_k)
        with tf.variable_scope('hop_{}'.format(hops)):
            logits = tf.matmul(u[-1], tf.transpose(Cs[-1], [1, 0]))
    cross_entropy = tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=tf.cast(answers, tf.float32),
                                                            name="cross_entropy")
    loss_op = tf.reduce_sum(cross_entropy, name="cross_entropy_sum")
    opt = tf.train.AdamOptimizer(learning_rate=0.01, epsilon=1e-8)
    grads_and_vars = opt.compute_gradients(loss_op)
    grads_and_vars = [(tf.clip_by_norm(g, max_grad_norm), v) for g, v in grads_and_vars]
    nil_grads_and_vars = []
    for g, v in grads_and_vars:
        nil_grads_and_vars.append((zero_nil_slot(g), v) if v.name in nil_vars else (g, v))
    train_op = opt.apply_gradients(nil_grads_and_vars, name="train_op")
    predict_op = tf.argmax(logits, 1, name="predict_op")
    predict_log_proba_op = tf.log(tf.nn.softmax(logits), name="predict_log_proba_op")
    out = {"losses": [], "clipped_sparse": [hasattr(g, "indices") for g, _ in grads_and_vars]}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.3)
        for step in range(steps):
            i = (step % 2) * batch_size
            fd = {stories: stories_all[i:i + batch_size], queries: queries_all[i:i + batch_size],
                  answers: answers_all[i:i + batch_size]}
            l, _ = sess.run([loss_op, train_op], fd)
            out["losses"].append(l)
        out["predict"], out["log_proba"] = sess.run([predict_op, predict_log_proba_op], fd)
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Sparsely-gated mixture of experts (tensor2tensor's expert_utils, noise off): top-k gating
# by a rowwise unsorted_segment_sum, the cv_squared load-balancing loss, a SparseDispatcher
# (where on the transposed gates, gather, split by a tensor of part sizes, possibly empty,
# unsorted_segment_sum to combine)

def mixture_of_experts(tf, seed, steps):
    rng = np.random.RandomState(seed)
    batch, input_size, hidden, num_experts, k, num_classes, loss_coef = 8, 5, 6, 4, 2, 3, 1e-1
    X_all = rng.normal(size=(batch * 2, input_size)).astype(np.float32)
    Y_all = rng.randint(0, num_classes, batch * 2).astype(np.int64)

    def cv_squared(x):
        epsilon = 1e-10
        float_size = tf.to_float(tf.size(x)) + epsilon
        mean = tf.reduce_sum(x) / float_size
        variance = tf.reduce_sum(tf.squared_difference(x, mean)) / float_size
        return variance / (tf.square(mean) + epsilon)

    def _rowwise_unsorted_segment_sum(values, indices, n):
        batch, k = tf.unstack(tf.shape(indices), num=2)
        indices_flat = tf.reshape(indices, [-1]) + tf.div(tf.range(batch * k), k) * n
        ret_flat = tf.unsorted_segment_sum(tf.reshape(values, [-1]), indices_flat, batch * n)
        return tf.reshape(ret_flat, [batch, n])

    def top_k_gating(x, num_experts, k):
        w_gate = tf.get_variable("w_gate", [x.shape[1], num_experts], tf.float32, tf.zeros_initializer())
        logits = tf.matmul(x, w_gate)
        top_logits, top_indices = tf.nn.top_k(logits, min(k + 1, num_experts))
        top_k_logits = tf.slice(top_logits, [0, 0], [-1, k])
        top_k_indices = tf.slice(top_indices, [0, 0], [-1, k])
        top_k_gates = tf.nn.softmax(top_k_logits)
        gates = _rowwise_unsorted_segment_sum(top_k_gates, top_k_indices, num_experts)
        load = tf.reduce_sum(tf.to_float(gates > 0), 0)
        return gates, load

    class SparseDispatcher(object):
        def __init__(self, num_experts, gates):
            self._gates = gates
            self._num_experts = num_experts
            where = tf.to_int32(tf.where(tf.transpose(gates) > 0))
            self._expert_index, self._batch_index = tf.unstack(where, num=2, axis=1)
            self._part_sizes_tensor = tf.reduce_sum(tf.to_int32(gates > 0), [0])
            self._nonzero_gates = tf.gather(tf.reshape(self._gates, [-1]),
                                            self._batch_index * num_experts + self._expert_index)

        def dispatch(self, inp):
            inp = tf.gather(inp, self._batch_index)
            return tf.split(inp, self._part_sizes_tensor, 0, num=self._num_experts)

        def combine(self, expert_out, multiply_by_gates=True):
            stitched = tf.concat(expert_out, 0)
            if multiply_by_gates:
                stitched *= tf.expand_dims(self._nonzero_gates, 1)
            return tf.unsorted_segment_sum(stitched, self._batch_index, tf.shape(self._gates)[0])

        def expert_to_gates(self):
            return tf.split(self._nonzero_gates, self._part_sizes_tensor, 0, num=self._num_experts)

    x = tf.placeholder(tf.float32, [None, input_size], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    with tf.variable_scope("moe"):
        gates, load = top_k_gating(x, num_experts, k)
        importance = tf.reduce_sum(gates, 0)
        moe_loss = (cv_squared(importance) + cv_squared(load)) * loss_coef
        dispatcher = SparseDispatcher(num_experts, gates)
        expert_inputs = dispatcher.dispatch(x)
        expert_outputs = []
        for i in range(num_experts):
            with tf.variable_scope("expert_%d" % i):
                expert_outputs.append(tf.layers.dense(expert_inputs[i], hidden, activation=tf.nn.relu))
        y_moe = dispatcher.combine(expert_outputs)
        part_sizes = dispatcher._part_sizes_tensor
        expert_gate_sums = tf.stack([tf.reduce_sum(g) for g in dispatcher.expert_to_gates()])
    logits = tf.layers.dense(y_moe, num_classes, name="logits")
    xent = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    loss = xent + moe_loss
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    out = {"losses": [], "moe_losses": [], "part_sizes": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.6)
        for step in range(steps):
            i = (step % 2) * batch
            fd = {x: X_all[i:i + batch], y: Y_all[i:i + batch]}
            l, m, p, _ = sess.run([loss, moe_loss, part_sizes, train_op], fd)
            out["losses"].append(l), out["moe_losses"].append(m), out["part_sizes"].append(p)
        out["gates"], out["gate_sums"] = sess.run([gates, expert_gate_sums], {x: X_all[:batch]})
        one = sess.run(y_moe, {x: X_all[:1]})  # one example: at least two experts get no rows
        out["one_example"] = one
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# R-Net reading comprehension (HKUST-KnowComp/R-Net's func.py and model.py, word embeddings
# only): batches trimmed to the longest passage by tf.slice with a computed size, a native
# bidirectional GRU by reverse_sequence, "recurrent" dropout whose noise_shape holds
# tf.shape entries inside tf.cond(is_train) (built, then run with is_train False), dot
# attention with a gate, self-matching, a pointer net, the band-limited answer span, Adadelta
# with clip_by_global_norm

def rnet(tf, seed, steps):
    rng = np.random.RandomState(seed)
    N, para_limit, ques_limit, vocab, emb_dim, hidden, keep_prob, ptr_keep_prob = 3, 9, 4, 15, 5, 4, 0.7, 0.7
    INF = 1e30
    word_mat = rng.normal(scale=0.5, size=(vocab, emb_dim)).astype(np.float32)
    word_mat[0] = 0.
    lens = [[7, 5, 6], [6, 7, 4]]
    data = []
    for b in range(2):
        ctx = np.zeros((N, para_limit), np.int32)
        ques = np.zeros((N, ques_limit), np.int32)
        y1 = np.zeros((N, para_limit), np.float32)
        y2 = np.zeros((N, para_limit), np.float32)
        for i, n in enumerate(lens[b]):
            ctx[i, :n] = rng.randint(1, vocab, n)
            ques[i, :3] = rng.randint(1, vocab, 3)
            start = rng.randint(0, n - 1)
            y1[i, start], y2[i, rng.randint(start, n)] = 1., 1.
        data.append((ctx, ques, y1, y2))

    def softmax_mask(val, mask):
        return -INF * (1 - tf.cast(mask, tf.float32)) + val

    def dropout(args, keep_prob, is_train, mode="recurrent"):
        if keep_prob < 1.0:
            noise_shape = None
            scale = 1.0
            shape = tf.shape(args)
            if mode == "embedding":
                noise_shape = [shape[0], 1]
                scale = keep_prob
            if mode == "recurrent" and len(args.get_shape().as_list()) == 3:
                noise_shape = [shape[0], 1, shape[-1]]
            args = tf.cond(is_train, lambda: tf.nn.dropout(args, keep_prob, noise_shape=noise_shape) * scale,
                           lambda: args)
        return args

    def dense(inputs, hidden, use_bias=True, scope="dense"):
        with tf.variable_scope(scope):
            shape = tf.shape(inputs)
            dim = inputs.get_shape().as_list()[-1]
            out_shape = [shape[idx] for idx in range(len(inputs.get_shape().as_list()) - 1)] + [hidden]
            flat_inputs = tf.reshape(inputs, [-1, dim])
            W = tf.get_variable("W", [dim, hidden])
            res = tf.matmul(flat_inputs, W)
            if use_bias:
                b = tf.get_variable("b", [hidden], initializer=tf.constant_initializer(0.))
                res = tf.nn.bias_add(res, b)
            return tf.reshape(res, out_shape)

    class native_gru:
        def __init__(self, num_layers, num_units, batch_size, input_size, keep_prob=1.0, is_train=None,
                     scope="native_gru"):
            self.num_layers, self.grus, self.inits, self.dropout_mask, self.scope = num_layers, [], [], [], scope
            for layer in range(num_layers):
                input_size_ = input_size if layer == 0 else 2 * num_units
                gru_fw = tf.nn.rnn_cell.GRUCell(num_units)
                gru_bw = tf.nn.rnn_cell.GRUCell(num_units)
                init_fw = tf.tile(tf.Variable(tf.zeros([1, num_units])), [batch_size, 1])
                init_bw = tf.tile(tf.Variable(tf.zeros([1, num_units])), [batch_size, 1])
                mask_fw = dropout(tf.ones([batch_size, 1, input_size_], dtype=tf.float32),
                                  keep_prob=keep_prob, is_train=is_train, mode=None)
                mask_bw = dropout(tf.ones([batch_size, 1, input_size_], dtype=tf.float32),
                                  keep_prob=keep_prob, is_train=is_train, mode=None)
                self.grus.append((gru_fw, gru_bw))
                self.inits.append((init_fw, init_bw))
                self.dropout_mask.append((mask_fw, mask_bw))

        def __call__(self, inputs, seq_len, concat_layers=True):
            outputs = [inputs]
            with tf.variable_scope(self.scope):
                for layer in range(self.num_layers):
                    gru_fw, gru_bw = self.grus[layer]
                    init_fw, init_bw = self.inits[layer]
                    mask_fw, mask_bw = self.dropout_mask[layer]
                    with tf.variable_scope("fw_{}".format(layer)):
                        out_fw, _ = tf.nn.dynamic_rnn(gru_fw, outputs[-1] * mask_fw, seq_len,
                                                      initial_state=init_fw, dtype=tf.float32)
                    with tf.variable_scope("bw_{}".format(layer)):
                        inputs_bw = tf.reverse_sequence(outputs[-1] * mask_bw, seq_lengths=seq_len, seq_dim=1,
                                                        batch_dim=0)
                        out_bw, _ = tf.nn.dynamic_rnn(gru_bw, inputs_bw, seq_len, initial_state=init_bw,
                                                      dtype=tf.float32)
                        out_bw = tf.reverse_sequence(out_bw, seq_lengths=seq_len, seq_dim=1, batch_dim=0)
                    outputs.append(tf.concat([out_fw, out_bw], axis=2))
            return tf.concat(outputs[1:], axis=2) if concat_layers else outputs[-1]

    def dot_attention(inputs, memory, mask, hidden, keep_prob=1.0, is_train=None, scope="dot_attention"):
        with tf.variable_scope(scope):
            d_inputs = dropout(inputs, keep_prob=keep_prob, is_train=is_train)
            d_memory = dropout(memory, keep_prob=keep_prob, is_train=is_train)
            JX = tf.shape(inputs)[1]
            with tf.variable_scope("attention"):
                inputs_ = tf.nn.relu(dense(d_inputs, hidden, use_bias=False, scope="inputs"))
                memory_ = tf.nn.relu(dense(d_memory, hidden, use_bias=False, scope="memory"))
                outputs = tf.matmul(inputs_, tf.transpose(memory_, [0, 2, 1])) / (hidden ** 0.5)
                mask = tf.tile(tf.expand_dims(mask, axis=1), [1, JX, 1])
                logits = tf.nn.softmax(softmax_mask(outputs, mask))
                outputs = tf.matmul(logits, memory)
                res = tf.concat([inputs, outputs], axis=2)
            with tf.variable_scope("gate"):
                dim = res.get_shape().as_list()[-1]
                d_res = dropout(res, keep_prob=keep_prob, is_train=is_train)
                gate = tf.nn.sigmoid(dense(d_res, dim, use_bias=False))
                return res * gate

    def summ(memory, hidden, mask, keep_prob=1.0, is_train=None, scope="summ"):
        with tf.variable_scope(scope):
            d_memory = dropout(memory, keep_prob=keep_prob, is_train=is_train)
            s0 = tf.nn.tanh(dense(d_memory, hidden, scope="s0"))
            s = dense(s0, 1, use_bias=False, scope="s")
            s1 = softmax_mask(tf.squeeze(s, [2]), mask)
            a = tf.expand_dims(tf.nn.softmax(s1), axis=2)
            return tf.reduce_sum(a * memory, axis=1)

    def pointer(inputs, state, hidden, mask, scope="pointer"):
        with tf.variable_scope(scope):
            u = tf.concat([tf.tile(tf.expand_dims(state, axis=1), [1, tf.shape(inputs)[1], 1]), inputs], axis=2)
            s0 = tf.nn.tanh(dense(u, hidden, use_bias=False, scope="s0"))
            s = dense(s0, 1, use_bias=False, scope="s")
            s1 = softmax_mask(tf.squeeze(s, [2]), mask)
            a = tf.expand_dims(tf.nn.softmax(s1), axis=2)
            return tf.reduce_sum(a * inputs, axis=1), s1

    class ptr_net:
        def __init__(self, batch, hidden, keep_prob=1.0, is_train=None, scope="ptr_net"):
            self.gru = tf.nn.rnn_cell.GRUCell(hidden)
            self.batch, self.scope, self.keep_prob, self.is_train = batch, scope, keep_prob, is_train

        def __call__(self, init, match, d, mask):
            with tf.variable_scope(self.scope):
                self.dropout_mask = dropout(tf.ones([self.batch, d], dtype=tf.float32), keep_prob=self.keep_prob,
                                            is_train=self.is_train)
                inp, logits1 = pointer(match, init * self.dropout_mask, d, mask)
                d_inp = dropout(inp, keep_prob=self.keep_prob, is_train=self.is_train)
                _, state = self.gru(d_inp, init)
                tf.get_variable_scope().reuse_variables()
                _, logits2 = pointer(match, state * self.dropout_mask, d, mask)
                return logits1, logits2

    c_ph = tf.placeholder(tf.int32, [N, para_limit], "context")
    q_ph = tf.placeholder(tf.int32, [N, ques_limit], "question")
    y1_ph = tf.placeholder(tf.float32, [N, para_limit], "answer_index1")
    y2_ph = tf.placeholder(tf.float32, [N, para_limit], "answer_index2")
    is_train = tf.placeholder_with_default(False, [], name="is_train")
    word_mat_v = tf.get_variable("word_mat", initializer=tf.constant(word_mat, dtype=tf.float32), trainable=False)
    c_mask = tf.cast(c_ph, tf.bool)
    q_mask = tf.cast(q_ph, tf.bool)
    c_len = tf.reduce_sum(tf.cast(c_mask, tf.int32), axis=1)
    q_len = tf.reduce_sum(tf.cast(q_mask, tf.int32), axis=1)
    c_maxlen = tf.reduce_max(c_len)
    q_maxlen = tf.reduce_max(q_len)
    c = tf.slice(c_ph, [0, 0], [N, c_maxlen])
    q = tf.slice(q_ph, [0, 0], [N, q_maxlen])
    c_mask = tf.slice(c_mask, [0, 0], [N, c_maxlen])
    q_mask = tf.slice(q_mask, [0, 0], [N, q_maxlen])
    y1 = tf.slice(y1_ph, [0, 0], [N, c_maxlen])
    y2 = tf.slice(y2_ph, [0, 0], [N, c_maxlen])
    with tf.name_scope("word"):
        c_emb = tf.nn.embedding_lookup(word_mat_v, c)
        q_emb = tf.nn.embedding_lookup(word_mat_v, q)
    with tf.variable_scope("encoding"):
        rnn = native_gru(num_layers=1, num_units=hidden, batch_size=N, input_size=c_emb.get_shape().as_list()[-1],
                         keep_prob=keep_prob, is_train=is_train)
        c_enc = rnn(c_emb, seq_len=c_len)
    with tf.variable_scope("encoding", reuse=True):
        q_enc = rnn(q_emb, seq_len=q_len)
    with tf.variable_scope("attention"):
        qc_att = dot_attention(c_enc, q_enc, mask=q_mask, hidden=hidden, keep_prob=keep_prob, is_train=is_train)
        rnn = native_gru(num_layers=1, num_units=hidden, batch_size=N, input_size=qc_att.get_shape().as_list()[-1],
                         keep_prob=keep_prob, is_train=is_train)
        att = rnn(qc_att, c_len)
    with tf.variable_scope("match"):
        self_att = dot_attention(att, att, mask=c_mask, hidden=hidden, keep_prob=keep_prob, is_train=is_train)
        rnn = native_gru(num_layers=1, num_units=hidden, batch_size=N,
                         input_size=self_att.get_shape().as_list()[-1], keep_prob=keep_prob, is_train=is_train)
        match = rnn(self_att, c_len)
    with tf.variable_scope("pointer"):
        init = summ(q_enc[:, :, -2 * hidden:], hidden, mask=q_mask, keep_prob=ptr_keep_prob, is_train=is_train)
        pointer_net = ptr_net(batch=N, hidden=init.get_shape().as_list()[-1], keep_prob=ptr_keep_prob,
                              is_train=is_train)
        logits1, logits2 = pointer_net(init, match, 2 * hidden, c_mask)
    with tf.variable_scope("predict"):
        outer = tf.matmul(tf.expand_dims(tf.nn.softmax(logits1), axis=2), tf.expand_dims(tf.nn.softmax(logits2), axis=1))
        outer = tf.matrix_band_part(outer, 0, 3)
        yp1 = tf.argmax(tf.reduce_max(outer, axis=2), axis=1)
        yp2 = tf.argmax(tf.reduce_max(outer, axis=1), axis=1)
        losses = tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits1, labels=tf.stop_gradient(y1))
        losses2 = tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits2, labels=tf.stop_gradient(y2))
        loss = tf.reduce_mean(losses + losses2)
    global_step = tf.get_variable('global_step', shape=[], dtype=tf.int32, initializer=tf.constant_initializer(0),
                                  trainable=False)
    opt = tf.train.AdadeltaOptimizer(learning_rate=1.0, epsilon=1e-6)
    grads = opt.compute_gradients(loss)
    gradients, variables = zip(*grads)
    capped_grads, _ = tf.clip_by_global_norm(gradients, 5.0)
    train_op = opt.apply_gradients(zip(capped_grads, variables), global_step=global_step)
    out = {"losses": [], "static_c": str(c.get_shape().as_list())}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for step in range(steps):
            ctx, ques, a1, a2 = data[step % 2]
            l, _ = sess.run([loss, train_op], {c_ph: ctx, q_ph: ques, y1_ph: a1, y2_ph: a2})
            out["losses"].append(l)
        ctx, ques, a1, a2 = data[0]
        out["yp1"], out["yp2"], out["outer"] = sess.run([yp1, yp2, outer], {c_ph: ctx, q_ph: ques, y1_ph: a1,
                                                                            y2_ph: a2})
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# A recursive neural network over parse trees (bogatyy's "Recursive neural networks with
# TensorFlow"): one while_loop over the nodes in topological order, a TensorArray
# (clear_after_read=False, infer_shape=False) read at the children, tf.cond between a leaf's
# embedding and the composition; leaf embeddings scattered into a second TensorArray, the
# labelled nodes picked by TensorArray.gather, all node states joined by TensorArray.concat

def recursive_nn(tf, seed, steps):
    rng = np.random.RandomState(seed)
    vocab, embed_size, label_size, l2 = 10, 5, 3, 0.02
    # trees as (is_leaf, word, left, right) per node, children before parents
    trees = [
        ([1, 1, 0, 1, 0], [3, 7, 0, 2, 0], [-1, -1, 0, -1, 2], [-1, -1, 1, -1, 3]),
        ([1, 1, 1, 0, 0, 1, 0], [1, 4, 9, 0, 0, 5, 0], [-1, -1, -1, 1, 0, -1, 4], [-1, -1, -1, 2, 3, -1, 5]),
    ]
    labels_all = [rng.randint(0, label_size, len(t[0])).astype(np.int32) for t in trees]
    is_leaf = tf.placeholder(tf.bool, (None), name='is_leaf')
    word_index = tf.placeholder(tf.int32, (None), name='word_index')
    left_children = tf.placeholder(tf.int32, (None), name='left_children')
    right_children = tf.placeholder(tf.int32, (None), name='right_children')
    leaf_positions = tf.placeholder(tf.int32, (None), name='leaf_positions')
    labelled = tf.placeholder(tf.int32, (None), name='labelled')
    labels = tf.placeholder(tf.int32, (None), name='labels')
    with tf.variable_scope('Embeddings'):
        embeddings = tf.get_variable('embeddings', [vocab, embed_size])
    with tf.variable_scope('Composition'):
        W1 = tf.get_variable('W1', [2 * embed_size, embed_size])
        b1 = tf.get_variable('b1', [1, embed_size])
    with tf.variable_scope('Projection'):
        U = tf.get_variable('U', [embed_size, label_size])
        bs = tf.get_variable('bs', [1, label_size])
    n_nodes = tf.squeeze(tf.shape(is_leaf))
    leaf_words = tf.gather(word_index, leaf_positions)
    leaves = tf.TensorArray(tf.float32, size=n_nodes, clear_after_read=False, infer_shape=False)
    leaves = leaves.scatter(leaf_positions, tf.expand_dims(tf.nn.embedding_lookup(embeddings, leaf_words), 1))
    node_tensors = tf.TensorArray(tf.float32, size=0, dynamic_size=True, clear_after_read=False, infer_shape=False)

    def combine_children(left_tensor, right_tensor):
        return tf.nn.relu(tf.matmul(tf.concat([left_tensor, right_tensor], 1), W1) + b1)

    def loop_body(node_tensors, i):
        node_is_leaf = tf.gather(is_leaf, i)
        left_child = tf.gather(left_children, i)
        right_child = tf.gather(right_children, i)
        node_tensor = tf.cond(node_is_leaf, lambda: leaves.read(i),
                              lambda: combine_children(node_tensors.read(left_child),
                                                       node_tensors.read(right_child)))
        node_tensors = node_tensors.write(i, node_tensor)
        i = tf.add(i, 1)
        return node_tensors, i

    loop_cond = lambda node_tensors, i: tf.less(i, n_nodes)  # noqa: E731
    node_tensors, _ = tf.while_loop(loop_cond, loop_body, [node_tensors, 0], parallel_iterations=1)
    all_states = node_tensors.concat()
    logits = tf.matmul(tf.reshape(node_tensors.gather(labelled), [-1, embed_size]), U) + bs
    root_logits = tf.matmul(node_tensors.read(n_nodes - 1), U) + bs
    regularization_loss = l2 * (tf.nn.l2_loss(W1) + tf.nn.l2_loss(U))
    full_loss = regularization_loss + tf.reduce_sum(
        tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=labels))
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(full_loss)
    root_prediction = tf.squeeze(tf.argmax(root_logits, 1))

    def feed(k):
        leaf, words, left, right = trees[k]
        lab = [j for j in range(len(leaf)) if j % 2 == 0 or not leaf[j]]
        return {is_leaf: leaf, word_index: words, left_children: left, right_children: right,
                leaf_positions: [j for j in range(len(leaf)) if leaf[j]], labelled: lab,
                labels: labels_all[k][lab]}

    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for step in range(steps):
            l, _ = sess.run([full_loss, train_op], feed(step % 2))
            out["losses"].append(l)
        out["states"], out["root_prediction"] = sess.run([all_states, root_prediction], feed(1))
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Graph attention network (PetarV-/GAT's layers.py, sparse and dense heads): 1x1 conv1d
# attention terms, a SparseTensor times dense columns and rows, sparse_add of two
# SparseTensors, leaky_relu on .values, sparse_softmax, sparse_reshape, then
# sparse_tensor_dense_matmul; the dense head's softmax over logits + a bias matrix; L2 on the
# weights, masked softmax cross-entropy as in tkipf/gcn.  (tf.contrib.layers.bias_add is written
# as a bias variable added by hand: TensorFlow 2 has no contrib.)

def gat(tf, seed, steps, sparse=True):
    rng = np.random.RandomState(seed)
    nb_nodes, ft_size, nb_classes, hid_units, n_heads, l2_coef = 10, 6, 3, [4], [2, 1], 5e-4
    adj, features, y = _gcn_data(rng, nb_nodes, ft_size, nb_classes)
    adj = adj + np.eye(nb_nodes, dtype=np.float32)
    train_mask = (np.arange(nb_nodes) < 6)
    bias_mat = (-1e9 * (1.0 - adj))[np.newaxis].astype(np.float32)

    def bias_add(vals):
        b = tf.get_variable("bias", [vals.shape[-1]], initializer=tf.zeros_initializer())
        return vals + b

    def attn_head(seq, out_sz, bias_mat, activation):
        with tf.name_scope('my_attn'):
            seq_fts = tf.layers.conv1d(seq, out_sz, 1, use_bias=False)
            f_1 = tf.layers.conv1d(seq_fts, 1, 1)
            f_2 = tf.layers.conv1d(seq_fts, 1, 1)
            logits = f_1 + tf.transpose(f_2, [0, 2, 1])
            coefs = tf.nn.softmax(tf.nn.leaky_relu(logits) + bias_mat)
            vals = tf.matmul(coefs, seq_fts)
            return activation(bias_add(vals))

    def sp_attn_head(seq, out_sz, adj_mat, activation, nb_nodes):
        with tf.name_scope('sp_attn'):
            seq_fts = tf.layers.conv1d(seq, out_sz, 1, use_bias=False)
            f_1 = tf.layers.conv1d(seq_fts, 1, 1)
            f_2 = tf.layers.conv1d(seq_fts, 1, 1)
            f_1 = tf.reshape(f_1, (nb_nodes, 1))
            f_2 = tf.reshape(f_2, (nb_nodes, 1))
            f_1 = adj_mat * f_1
            f_2 = adj_mat * tf.transpose(f_2, [1, 0])
            logits = tf.sparse_add(f_1, f_2)
            lrelu = tf.SparseTensor(indices=logits.indices, values=tf.nn.leaky_relu(logits.values),
                                    dense_shape=logits.dense_shape)
            coefs = tf.sparse_softmax(lrelu)
            coefs = tf.sparse_reshape(coefs, [nb_nodes, nb_nodes])
            seq_fts = tf.squeeze(seq_fts)
            vals = tf.sparse_tensor_dense_matmul(coefs, seq_fts)
            vals = tf.expand_dims(vals, axis=0)
            vals.set_shape([1, nb_nodes, out_sz])
            return activation(bias_add(vals))

    ftr_in = tf.placeholder(dtype=tf.float32, shape=(1, nb_nodes, ft_size))
    lbl_in = tf.placeholder(dtype=tf.int32, shape=(1, nb_nodes, nb_classes))
    msk_in = tf.placeholder(dtype=tf.int32, shape=(1, nb_nodes))
    if sparse:
        bias_in = tf.sparse_placeholder(dtype=tf.float32)
    else:
        bias_in = tf.placeholder(dtype=tf.float32, shape=(1, nb_nodes, nb_nodes))

    def head(inp, out_sz, activation, scope):
        with tf.variable_scope(scope):
            if sparse:
                return sp_attn_head(inp, out_sz, bias_in, activation, nb_nodes)
            return attn_head(inp, out_sz, bias_in, activation)

    attns = [head(ftr_in, hid_units[0], tf.nn.elu, "layer0_head%d" % i) for i in range(n_heads[0])]
    h_1 = tf.concat(attns, axis=-1)
    out = [head(h_1, nb_classes, lambda x: x, "out_head%d" % i) for i in range(n_heads[-1])]
    logits = tf.add_n(out) / n_heads[-1]
    log_resh = tf.reshape(logits, [-1, nb_classes])
    lab_resh = tf.reshape(lbl_in, [-1, nb_classes])
    msk_resh = tf.reshape(msk_in, [-1])
    xent = tf.nn.softmax_cross_entropy_with_logits_v2(logits=log_resh, labels=lab_resh)
    mask = tf.cast(msk_resh, dtype=tf.float32)
    mask /= tf.reduce_mean(mask)
    loss = tf.reduce_mean(xent * mask)
    vars = tf.trainable_variables()
    lossL2 = tf.add_n([tf.nn.l2_loss(v) for v in vars if v.name.split('/')[-1].split(':')[0]
                       not in ['bias', 'gamma', 'b', 'g', 'beta']]) * l2_coef
    # epsilon 1e-3, not the default: the attention convs' biases shift a softmax row by a constant,
    # so their gradients are float32 round-off (1e-9) that Adam's 1e-8 would scale into real steps
    train_op = tf.train.AdamOptimizer(learning_rate=0.05, epsilon=1e-3).minimize(loss + lossL2)
    if sparse:
        bias_value = _sparse_to_tuple(adj)
    else:
        bias_value = bias_mat
    fd = {ftr_in: features[np.newaxis], lbl_in: y[np.newaxis].astype(np.int32), msk_in: train_mask[np.newaxis],
          bias_in: bias_value}
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for step in range(steps):
            l, _ = sess.run([loss, train_op], fd)
            out["losses"].append(l)
        out["logits"] = sess.run(log_resh, fd)
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# A GraphSAGE-style mean aggregator (williamleif/GraphSAGE's identity embeddings and
# MeanAggregator, the neighbour lists flattened for sparse_segment_mean): the node-embedding
# variable reached by sparse_segment_mean (a dense gradient in TF) and embedding_lookup
# (IndexedSlices), trained by Momentum over minibatches of nodes

def graphsage_mean(tf, seed, steps):
    rng = np.random.RandomState(seed)
    N, identity_dim, hidden, C, weight_decay, batch = 12, 5, 6, 3, 5e-4, 4
    adj, _, y = _gcn_data(rng, N, 4, C)
    neighbours = [sorted(set(np.nonzero(adj[i])[0].tolist()) | {i}) for i in range(N)]
    nodes_ph = tf.placeholder(tf.int32, [None], name="batch_nodes")
    neigh_idx = tf.placeholder(tf.int32, [None], name="neigh_idx")
    neigh_seg = tf.placeholder(tf.int32, [None], name="neigh_seg")
    labels = tf.placeholder(tf.float32, [None, C], name="labels")
    embeds = tf.get_variable("node_embeddings", [N, identity_dim])
    with tf.variable_scope("meanaggregator_vars"):
        neigh_weights = tf.get_variable("neigh_weights", [identity_dim, hidden])
        self_weights = tf.get_variable("self_weights", [identity_dim, hidden])
    neigh_means = tf.sparse_segment_mean(embeds, neigh_idx, neigh_seg)
    self_vecs = tf.nn.embedding_lookup(embeds, nodes_ph)
    from_neighs = tf.matmul(neigh_means, neigh_weights)
    from_self = tf.matmul(self_vecs, self_weights)
    output = tf.nn.relu(tf.concat([from_self, from_neighs], axis=1))
    output = tf.nn.l2_normalize(output, 1)
    node_preds = tf.layers.dense(output, C, name="node_pred")
    loss = weight_decay * (tf.nn.l2_loss(neigh_weights) + tf.nn.l2_loss(self_weights))
    loss += tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=node_preds, labels=labels))
    opt = tf.train.MomentumOptimizer(learning_rate=0.2, momentum=0.9)
    grads_and_vars = opt.compute_gradients(loss)
    clipped_grads_and_vars = [(tf.clip_by_value(grad, -5.0, 5.0) if grad is not None else None, var)
                              for grad, var in grads_and_vars]
    opt_op = opt.apply_gradients(clipped_grads_and_vars)

    def feed(batch_nodes):
        idx = [j for i in batch_nodes for j in neighbours[i]]
        seg = [k for k, i in enumerate(batch_nodes) for _ in neighbours[i]]
        return {nodes_ph: batch_nodes, neigh_idx: idx, neigh_seg: seg, labels: y[batch_nodes]}

    out = {"losses": [], "embed_grad_sparse": hasattr(grads_and_vars[0][0], "indices")}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for step in range(steps):
            batch_nodes = [(step * batch + k) % N for k in range(batch)]
            l, _ = sess.run([loss, opt_op], feed(batch_nodes))
            out["losses"].append(l)
        out["preds"] = sess.run(node_preds, feed(list(range(N))))
        out["vars"] = _values(tf, sess)
    return out


PROGRAMS = [
    ("gcn_kipf", gcn, dict(steps=12)),
    ("gcn_kipf_chebyshev", gcn, dict(steps=8, model="gcn_cheby")),
    ("graphsage_mean", graphsage_mean, dict(steps=9)),
    ("gat_sparse", gat, dict(steps=8)),
    ("gat_dense", gat, dict(steps=8, sparse=False)),
    ("gated_pixel_cnn", pixel_cnn, dict(steps=8)),
    ("ntm_copy", ntm_copy, dict(steps=6)),
    ("realnvp", realnvp, dict(steps=12)),
    ("planar_flow", planar_flow, dict(steps=12)),
    ("gp_regression_float64", gp_regression, dict(steps=15)),
    ("wavenet", wavenet, dict(steps=8)),
    ("memn2n", memn2n, dict(steps=10)),
    ("mixture_of_experts", mixture_of_experts, dict(steps=10)),
    ("rnet", rnet, dict(steps=5)),
    ("recursive_nn_tree", recursive_nn, dict(steps=8)),
]


@pytest.mark.parametrize("name,program,kwargs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program(name, program, kwargs):
    compare_program(program, kwargs)
