"""More TF1 programs as their authors wrote them (see test_vs_tensorflow_programs_real.py):
sequences, text and densities.  CTC speech recognition (sparse_placeholder targets,
ctc_loss, the greedy and beam decoders, edit_distance), seq2seq by tf.nn.raw_rnn, an RNN by
tf.scan, beam search over graph ops (top_k, floordiv / mod, gather), dennybritz's text CNN
(summaries of the gradients, a FileWriter, a Saver keeping two checkpoints), a fastText-style
classifier on raw strings (string_split, a lookup table, embedding_lookup_sparse), hardmaru's
mixture density network, a Gumbel-softmax VAE (soft and straight-through) and abisee's
pointer-generator (attention, p_gen, scatter_nd onto an extended vocabulary sized by a
placeholder, gather_nd of the targets).
"""
import math
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
# CTC speech recognition (igormq/ctc_tensorflow_example): sparse_placeholder targets, a stacked
# LSTM, time-major logits, ctc_loss, the greedy and beam decoders, edit_distance

def ctc_speech(tf, seed, steps):
    rng = np.random.RandomState(seed)
    num_features, num_hidden, num_layers, num_classes, batch = 5, 8, 2, 6, 4  # classes: 5 labels + blank
    lens = np.array([9, 7, 8, 6])
    train_inputs = np.zeros((batch, lens.max(), num_features), np.float32)
    for k, n in enumerate(lens):
        train_inputs[k, :n] = rng.normal(size=(n, num_features))
    seqs = [rng.randint(0, num_classes - 1, rng.randint(2, 4)) for _ in range(batch)]

    def sparse_tuple_from(sequences, dtype=np.int32):
        indices, values = [], []
        for n, seq in enumerate(sequences):
            indices.extend(zip([n] * len(seq), range(len(seq))))
            values.extend(seq)
        indices = np.asarray(indices, dtype=np.int64)
        values = np.asarray(values, dtype=dtype)
        shape = np.asarray([len(sequences), np.asarray(indices).max(0)[1] + 1], dtype=np.int64)
        return indices, values, shape

    train_targets = sparse_tuple_from(seqs)
    inputs = tf.placeholder(tf.float32, [None, None, num_features])
    targets = tf.sparse_placeholder(tf.int32)
    seq_len = tf.placeholder(tf.int32, [None])
    cells = [tf.nn.rnn_cell.LSTMCell(num_hidden, state_is_tuple=True) for _ in range(num_layers)]
    stack = tf.nn.rnn_cell.MultiRNNCell(cells, state_is_tuple=True)
    outputs, _ = tf.nn.dynamic_rnn(stack, inputs, seq_len, dtype=tf.float32)
    shape = tf.shape(inputs)
    batch_s = shape[0]
    outputs = tf.reshape(outputs, [-1, num_hidden])
    W = tf.Variable(tf.truncated_normal([num_hidden, num_classes], stddev=0.1))
    b = tf.Variable(tf.constant(0., shape=[num_classes]))
    logits = tf.matmul(outputs, W) + b
    logits = tf.reshape(logits, [batch_s, -1, num_classes])
    logits = tf.transpose(logits, (1, 0, 2))
    loss = tf.nn.ctc_loss(targets, logits, seq_len)
    cost = tf.reduce_mean(loss)
    optimizer = tf.train.MomentumOptimizer(0.05, 0.9).minimize(cost)
    decoded, log_prob = tf.nn.ctc_greedy_decoder(logits, seq_len)
    ler = tf.reduce_mean(tf.edit_distance(tf.cast(decoded[0], tf.int32), targets))
    beam, beam_log_prob = tf.nn.ctc_beam_search_decoder(logits, seq_len, beam_width=4, top_paths=2)
    beam_dense = tf.sparse_tensor_to_dense(beam[0], default_value=-1)
    out = {"losses": [], "ler": []}
    with tf.Session() as session:
        tf.global_variables_initializer().run()
        _set_vars(tf, session, seed, 0.5)
        feed = {inputs: train_inputs, targets: train_targets, seq_len: lens}
        for curr_epoch in range(steps):
            batch_cost, _ = session.run([cost, optimizer], feed)
            out["losses"].append(batch_cost)
            out["ler"].append(session.run(ler, feed_dict=feed))
        out["per_example_loss"] = session.run(loss, feed)
        out["greedy"], out["greedy_log_prob"] = session.run([decoded[0], log_prob], feed)
        out["beam_dense"], out["beam_log_prob"] = session.run([beam_dense, beam_log_prob], feed)
        out["vars"] = _values(tf, session)
    return out


# ------------------------------------------------------------------------------------------
# Seq2seq with tf.nn.raw_rnn (ematvey/tensorflow-seq2seq-tutorials, "advanced dynamic
# seq2seq"): one LSTMCell object for both directions, a decoder feeding its argmax back

def raw_rnn_seq2seq(tf, seed, steps):
    rng = np.random.RandomState(seed)
    EOS = 1
    vocab_size, input_embedding_size, encoder_hidden_units, batch = 8, 5, 6, 4
    decoder_hidden_units = encoder_hidden_units * 2

    def make_batch():
        seqs = [rng.randint(2, vocab_size, rng.randint(2, 5)) for _ in range(batch)]
        L = max(len(q) for q in seqs)
        enc = np.zeros((L, batch), np.int32)
        tgt = np.zeros((L + 3, batch), np.int32)
        for k, q in enumerate(seqs):
            enc[:len(q), k] = q
            tgt[:len(q), k] = q
            tgt[len(q), k] = EOS
        return enc, np.array([len(q) for q in seqs], np.int32), tgt

    encoder_inputs = tf.placeholder(shape=(None, None), dtype=tf.int32, name='encoder_inputs')
    encoder_inputs_length = tf.placeholder(shape=(None,), dtype=tf.int32, name='encoder_inputs_length')
    decoder_targets = tf.placeholder(shape=(None, None), dtype=tf.int32, name='decoder_targets')
    embeddings = tf.Variable(tf.random_uniform([vocab_size, input_embedding_size], -1.0, 1.0), dtype=tf.float32)
    encoder_inputs_embedded = tf.nn.embedding_lookup(embeddings, encoder_inputs)
    encoder_cell = tf.nn.rnn_cell.LSTMCell(encoder_hidden_units)
    ((encoder_fw_outputs, encoder_bw_outputs), (encoder_fw_final_state, encoder_bw_final_state)) = (
        tf.nn.bidirectional_dynamic_rnn(cell_fw=encoder_cell, cell_bw=encoder_cell, inputs=encoder_inputs_embedded,
                                        sequence_length=encoder_inputs_length, dtype=tf.float32, time_major=True))
    encoder_outputs = tf.concat((encoder_fw_outputs, encoder_bw_outputs), 2)
    encoder_final_state_c = tf.concat((encoder_fw_final_state.c, encoder_bw_final_state.c), 1)
    encoder_final_state_h = tf.concat((encoder_fw_final_state.h, encoder_bw_final_state.h), 1)
    encoder_final_state = tf.nn.rnn_cell.LSTMStateTuple(c=encoder_final_state_c, h=encoder_final_state_h)
    decoder_cell = tf.nn.rnn_cell.LSTMCell(decoder_hidden_units)
    encoder_max_time, batch_size = tf.unstack(tf.shape(encoder_inputs))
    decoder_lengths = encoder_inputs_length + 3
    W = tf.Variable(tf.random_uniform([decoder_hidden_units, vocab_size], -1, 1), dtype=tf.float32)
    b = tf.Variable(tf.zeros([vocab_size]), dtype=tf.float32)
    eos_time_slice = tf.ones([batch_size], dtype=tf.int32, name='EOS')
    pad_time_slice = tf.zeros([batch_size], dtype=tf.int32, name='PAD')
    eos_step_embedded = tf.nn.embedding_lookup(embeddings, eos_time_slice)
    pad_step_embedded = tf.nn.embedding_lookup(embeddings, pad_time_slice)

    def loop_fn_initial():
        initial_elements_finished = (0 >= decoder_lengths)
        return (initial_elements_finished, eos_step_embedded, encoder_final_state, None, None)

    def loop_fn_transition(time, previous_output, previous_state, previous_loop_state):
        def get_next_input():
            output_logits = tf.add(tf.matmul(previous_output, W), b)
            prediction = tf.argmax(output_logits, axis=1)
            return tf.nn.embedding_lookup(embeddings, prediction)
        elements_finished = (time >= decoder_lengths)
        finished = tf.reduce_all(elements_finished)
        input = tf.cond(finished, lambda: pad_step_embedded, get_next_input)
        return (elements_finished, input, previous_state, previous_output, None)

    def loop_fn(time, previous_output, previous_state, previous_loop_state):
        if previous_state is None:
            assert previous_output is None and previous_state is None
            return loop_fn_initial()
        return loop_fn_transition(time, previous_output, previous_state, previous_loop_state)

    decoder_outputs_ta, decoder_final_state, _ = tf.nn.raw_rnn(decoder_cell, loop_fn)
    decoder_outputs = decoder_outputs_ta.stack()
    decoder_max_steps, decoder_batch_size, decoder_dim = tf.unstack(tf.shape(decoder_outputs))
    decoder_outputs_flat = tf.reshape(decoder_outputs, (-1, decoder_dim))
    decoder_logits_flat = tf.add(tf.matmul(decoder_outputs_flat, W), b)
    decoder_logits = tf.reshape(decoder_logits_flat, (decoder_max_steps, decoder_batch_size, vocab_size))
    decoder_prediction = tf.argmax(decoder_logits, 2)
    stepwise_cross_entropy = tf.nn.softmax_cross_entropy_with_logits(
        labels=tf.one_hot(decoder_targets, depth=vocab_size, dtype=tf.float32), logits=decoder_logits)
    loss = tf.reduce_mean(stepwise_cross_entropy)
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
    out = {"losses": [], "var_names": [v.name for v in tf.trainable_variables()]}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for step in range(steps):
            enc, enc_len, tgt = make_batch()
            fd = {encoder_inputs: enc, encoder_inputs_length: enc_len, decoder_targets: tgt}
            _, l = sess.run([train_op, loss], fd)
            out["losses"].append(l)
        out["prediction"], out["final_c"], out["enc_out"] = sess.run(
            [decoder_prediction, decoder_final_state.c, encoder_outputs], fd)
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# R2RT's "Recurrent Neural Networks in Tensorflow": a hand-made cell in a reused scope, run by
# tf.scan over time-major inputs, the last state fed back between batches

def scan_rnn(tf, seed, steps):
    rng = np.random.RandomState(seed)
    batch_size, num_steps, num_classes, state_size, learning_rate = 4, 6, 2, 8, 0.3
    X = rng.choice(2, size=(1000,))
    Y = np.array([(1 if (X[i - 3] == 1) else 0) if i >= 8 else 0 for i in range(len(X))])
    raw_x = X.reshape(batch_size, -1)
    raw_y = Y.reshape(batch_size, -1)
    x = tf.placeholder(tf.int32, [batch_size, num_steps], name='input_placeholder')
    y = tf.placeholder(tf.int32, [batch_size, num_steps], name='labels_placeholder')
    init_state = tf.zeros([batch_size, state_size])
    rnn_inputs = tf.one_hot(x, num_classes)
    with tf.variable_scope('rnn_cell'):
        W = tf.get_variable('W', [num_classes + state_size, state_size])
        b = tf.get_variable('b', [state_size], initializer=tf.constant_initializer(0.0))

    def rnn_cell(rnn_input, state):
        with tf.variable_scope('rnn_cell', reuse=True):
            W = tf.get_variable('W', [num_classes + state_size, state_size])
            b = tf.get_variable('b', [state_size], initializer=tf.constant_initializer(0.0))
        return tf.tanh(tf.matmul(tf.concat([rnn_input, state], 1), W) + b)

    rnn_outputs = tf.scan(lambda a, x: rnn_cell(x, a), tf.transpose(rnn_inputs, [1, 0, 2]), initializer=init_state)
    rnn_outputs = tf.transpose(rnn_outputs, [1, 0, 2])
    final_state = rnn_outputs[:, -1, :]
    with tf.variable_scope('softmax'):
        W = tf.get_variable('W', [state_size, num_classes])
        b = tf.get_variable('b', [num_classes], initializer=tf.constant_initializer(0.0))
    logits = tf.reshape(tf.matmul(tf.reshape(rnn_outputs, [-1, state_size]), W) + b,
                        [batch_size, num_steps, num_classes])
    predictions = tf.nn.softmax(logits)
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
    total_loss = tf.reduce_mean(losses)
    train_step = tf.train.AdagradOptimizer(learning_rate).minimize(total_loss)
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        training_state = np.zeros((batch_size, state_size))
        for step in range(steps):
            j = step * num_steps
            tr_losses, training_loss_, training_state, _ = sess.run(
                [losses, total_loss, final_state, train_step],
                feed_dict={x: raw_x[:, j:j + num_steps], y: raw_y[:, j:j + num_steps], init_state: training_state})
            out["losses"].append(training_loss_)
        out["state"], out["predictions"] = training_state, sess.run(predictions, {x: raw_x[:, :num_steps]})
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Beam search decoding written in Python over graph ops (as seq2seq code before
# tf.contrib.seq2seq's decoder): top_k on flattened scores, floordiv/mod for the beam and the
# word, state reordered by tf.gather, finished beams masked

def beam_search(tf, seed, steps):
    rng = np.random.RandomState(seed)
    V, Hd, batch, beam, T, EOS = 7, 6, 3, 3, 5, 1
    x = tf.placeholder(tf.float32, [batch, 4])
    with tf.variable_scope("decoder"):
        emb = tf.get_variable("emb", [V, Hd])
        W_init = tf.get_variable("W_init", [4, Hd])
        cell = tf.nn.rnn_cell.GRUCell(Hd, name="gru")
        W_out = tf.get_variable("W_out", [Hd, V])
        b_out = tf.get_variable("b_out", [V])
    state = tf.tanh(tf.matmul(x, W_init))
    state = tf.reshape(tf.tile(tf.expand_dims(state, 1), [1, beam, 1]), [batch * beam, Hd])
    tokens = tf.zeros([batch * beam], tf.int32)
    log_probs = tf.constant(np.tile([0.0] + [-1e9] * (beam - 1), batch).astype(np.float32))
    finished = tf.zeros([batch * beam], tf.bool)
    history = []
    for t in range(T):
        out_t, new_state = cell(tf.nn.embedding_lookup(emb, tokens), state)
        step_lp = tf.nn.log_softmax(tf.nn.xw_plus_b(out_t, W_out, b_out))
        # a finished beam only extends by EOS at no cost
        eos_only = tf.one_hot(tf.fill([batch * beam], EOS), V, on_value=0.0, off_value=-1e9)
        step_lp = tf.where(finished, eos_only, step_lp)
        total = tf.reshape(tf.expand_dims(log_probs, 1) + step_lp, [batch, beam * V])
        top_scores, top_idx = tf.nn.top_k(total, k=beam)
        beam_idx = tf.floordiv(top_idx, V)
        word_idx = tf.mod(top_idx, V)
        flat_beam = tf.reshape(beam_idx + tf.expand_dims(tf.range(batch) * beam, 1), [-1])
        state = tf.gather(new_state, flat_beam)
        tokens = tf.reshape(word_idx, [-1])
        log_probs = tf.reshape(top_scores, [-1])
        finished = tf.logical_or(tf.gather(finished, flat_beam), tf.equal(tokens, EOS))
        history = [tf.gather(h, flat_beam) for h in history] + [tokens]
    sequences = tf.reshape(tf.stack(history, axis=1), [batch, beam, T])
    best = sequences[:, 0, :]
    # training the same decoder on targets (teacher forcing) moves the search's answer
    targets = tf.placeholder(tf.int32, [batch, T])
    dec_in = tf.concat([tf.zeros([batch, 1], tf.int32), targets[:, :-1]], 1)
    init = tf.tanh(tf.matmul(x, W_init))
    outs, _ = tf.nn.dynamic_rnn(cell, tf.nn.embedding_lookup(emb, dec_in), initial_state=init)
    logits = tf.tensordot(outs, W_out, [[2], [0]]) + b_out
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits))
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss)
    X = rng.normal(size=(batch, 4)).astype(np.float32)
    Y = rng.randint(2, V, (batch, T)).astype(np.int32)
    Y[:, -1] = EOS
    out = {"losses": [], "beams": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.8)
        for step in range(steps):
            if step % 4 == 0:
                seqs, scores = sess.run([sequences, log_probs], {x: X})
                out["beams"].append(seqs), out.setdefault("beam_scores", []).append(scores)
            out["losses"].append(sess.run([loss, train_op], {x: X, targets: Y})[0])
        out["best"] = sess.run(best, {x: X})
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# dennybritz/cnn-text-classification-tf: a TextCNN class, gradient summaries with zero_fraction,
# merged summaries to a FileWriter, a Saver keeping few checkpoints, a global_step Variable

def text_cnn(tf, seed, steps):
    rng = np.random.RandomState(seed)
    sequence_length, num_classes, vocab_size, embedding_size = 9, 2, 25, 6
    filter_sizes, num_filters, l2_reg_lambda, batch = [2, 3, 4], 4, 0.1, 8
    x_all = rng.randint(0, vocab_size, (batch * 3, sequence_length))
    y_all = np.eye(num_classes)[(x_all[:, 0] > vocab_size // 2).astype(int)].astype(np.float32)

    class TextCNN(object):
        def __init__(self, sequence_length, num_classes, vocab_size, embedding_size, filter_sizes, num_filters,
                     l2_reg_lambda=0.0):
            self.input_x = tf.placeholder(tf.int32, [None, sequence_length], name="input_x")
            self.input_y = tf.placeholder(tf.float32, [None, num_classes], name="input_y")
            self.dropout_keep_prob = tf.placeholder(tf.float32, name="dropout_keep_prob")
            l2_loss = tf.constant(0.0)
            with tf.device('/cpu:0'), tf.name_scope("embedding"):
                self.W = tf.Variable(tf.random_uniform([vocab_size, embedding_size], -1.0, 1.0), name="W")
                self.embedded_chars = tf.nn.embedding_lookup(self.W, self.input_x)
                self.embedded_chars_expanded = tf.expand_dims(self.embedded_chars, -1)
            pooled_outputs = []
            for i, filter_size in enumerate(filter_sizes):
                with tf.name_scope("conv-maxpool-%s" % filter_size):
                    filter_shape = [filter_size, embedding_size, 1, num_filters]
                    W = tf.Variable(tf.truncated_normal(filter_shape, stddev=0.1), name="W")
                    b = tf.Variable(tf.constant(0.1, shape=[num_filters]), name="b")
                    conv = tf.nn.conv2d(self.embedded_chars_expanded, W, strides=[1, 1, 1, 1], padding="VALID",
                                        name="conv")
                    h = tf.nn.relu(tf.nn.bias_add(conv, b), name="relu")
                    pooled = tf.nn.max_pool(h, ksize=[1, sequence_length - filter_size + 1, 1, 1],
                                            strides=[1, 1, 1, 1], padding='VALID', name="pool")
                    pooled_outputs.append(pooled)
            num_filters_total = num_filters * len(filter_sizes)
            self.h_pool = tf.concat(pooled_outputs, 3)
            self.h_pool_flat = tf.reshape(self.h_pool, [-1, num_filters_total])
            with tf.name_scope("dropout"):
                self.h_drop = tf.nn.dropout(self.h_pool_flat, self.dropout_keep_prob)
            with tf.name_scope("output"):
                W = tf.get_variable("W", shape=[num_filters_total, num_classes],
                                    initializer=tf.glorot_uniform_initializer())
                b = tf.Variable(tf.constant(0.1, shape=[num_classes]), name="b")
                l2_loss += tf.nn.l2_loss(W)
                l2_loss += tf.nn.l2_loss(b)
                self.scores = tf.nn.xw_plus_b(self.h_drop, W, b, name="scores")
                self.predictions = tf.argmax(self.scores, 1, name="predictions")
            with tf.name_scope("loss"):
                losses = tf.nn.softmax_cross_entropy_with_logits(logits=self.scores, labels=self.input_y)
                self.loss = tf.reduce_mean(losses) + l2_reg_lambda * l2_loss
            with tf.name_scope("accuracy"):
                correct_predictions = tf.equal(self.predictions, tf.argmax(self.input_y, 1))
                self.accuracy = tf.reduce_mean(tf.cast(correct_predictions, "float"), name="accuracy")

    out_dir = tempfile.mkdtemp()
    out = {"losses": [], "accuracies": [], "zero_fractions": []}
    try:
        with tf.Session() as sess:
            cnn = TextCNN(sequence_length=sequence_length, num_classes=num_classes, vocab_size=vocab_size,
                          embedding_size=embedding_size, filter_sizes=filter_sizes, num_filters=num_filters,
                          l2_reg_lambda=l2_reg_lambda)
            global_step = tf.Variable(0, name="global_step", trainable=False)
            optimizer = tf.train.AdamOptimizer(1e-2)
            grads_and_vars = optimizer.compute_gradients(cnn.loss)
            train_op = optimizer.apply_gradients(grads_and_vars, global_step=global_step)
            grad_summaries, zero_fractions = [], []
            for g, v in grads_and_vars:
                if g is not None:
                    grad_hist_summary = tf.summary.histogram("{}/grad/hist".format(v.name), g)
                    zf = tf.nn.zero_fraction(g)
                    sparsity_summary = tf.summary.scalar("{}/grad/sparsity".format(v.name), zf)
                    grad_summaries.append(grad_hist_summary)
                    grad_summaries.append(sparsity_summary)
                    zero_fractions.append(zf)
            grad_summaries_merged = tf.summary.merge(grad_summaries)
            loss_summary = tf.summary.scalar("loss", cnn.loss)
            acc_summary = tf.summary.scalar("accuracy", cnn.accuracy)
            train_summary_op = tf.summary.merge([loss_summary, acc_summary, grad_summaries_merged])
            train_summary_writer = tf.summary.FileWriter(os.path.join(out_dir, "summaries", "train"), sess.graph)
            checkpoint_prefix = os.path.join(out_dir, "checkpoints", "model")
            os.makedirs(os.path.dirname(checkpoint_prefix))
            saver = tf.train.Saver(tf.global_variables(), max_to_keep=2)
            sess.run(tf.global_variables_initializer())
            _set_vars(tf, sess, seed, 0.3)
            for k in range(steps):
                i = (k % 3) * batch
                feed_dict = {cnn.input_x: x_all[i:i + batch], cnn.input_y: y_all[i:i + batch],
                             cnn.dropout_keep_prob: 1.0}
                _, step, summaries, loss, accuracy, zfs = sess.run(
                    [train_op, global_step, train_summary_op, cnn.loss, cnn.accuracy, zero_fractions], feed_dict)
                train_summary_writer.add_summary(summaries, step)
                out["losses"].append(loss), out["accuracies"].append(accuracy), out["zero_fractions"].append(zfs)
                current_step = tf.train.global_step(sess, global_step)
                if current_step % 3 == 0:
                    saver.save(sess, checkpoint_prefix, global_step=current_step)
            train_summary_writer.close()
            out["summary_tags"] = sorted(v.tag for v in tf.Summary.FromString(summaries).value)
            out["checkpoints"] = [os.path.basename(p) for p in saver.last_checkpoints]
            out["latest"] = os.path.basename(tf.train.latest_checkpoint(os.path.dirname(checkpoint_prefix)))
            out["vars"] = _values(tf, sess)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------------------
# A fastText-style classifier on raw strings: string_split, a vocabulary table initialized by
# tables_initializer, embedding_lookup_sparse with the mean combiner

def fasttext_strings(tf, seed, steps):
    rng = np.random.RandomState(seed)
    vocab = ["the", "a", "good", "bad", "movie", "film", "plot", "great", "awful", "fine"]
    sentences, labels_np = [], []
    for _ in range(24):
        words = list(rng.choice(vocab + ["unk1", "unk2"], rng.randint(2, 7)))
        sentences.append(" ".join(words))
        labels_np.append(int(sum(w in ("good", "great", "fine") for w in words) >
                             sum(w in ("bad", "awful") for w in words)))
    labels_np = np.array(labels_np, np.int32)
    text = tf.placeholder(tf.string, [None])
    label = tf.placeholder(tf.int32, [None])
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(vocab), tf.range(len(vocab), dtype=tf.int64)), -1)
    tokens = tf.string_split(text, delimiter=" ")
    ids = table.lookup(tokens.values)
    known = tf.not_equal(ids, -1)
    ids_sp = tf.SparseTensor(tf.boolean_mask(tokens.indices, known), tf.boolean_mask(ids, known),
                             tokens.dense_shape)
    emb = tf.get_variable("emb", [len(vocab), 6])
    doc = tf.nn.embedding_lookup_sparse(emb, ids_sp, None, combiner="mean")
    logits = tf.layers.dense(doc, 2, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(label, logits)
    train_op = tf.train.AdagradOptimizer(0.5).minimize(loss)
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
        _set_vars(tf, sess, seed, 0.5)
        for step in range(steps):
            k = (step % 3) * 8
            out["losses"].append(sess.run([loss, train_op], {text: sentences[k:k + 8], label: labels_np[k:k + 8]})[0])
        out["ids"], out["doc"] = sess.run([ids, doc], {text: sentences[:4]})
        out["vars"] = _values(tf, sess)
    return out



# ------------------------------------------------------------------------------------------
# hardmaru's mixture density network (the "Mixture Density Networks with TensorFlow" post):
# tf.split into pi / sigma / mu, a hand-stabilised softmax with reciprocal, the Gaussian
# mixture likelihood, RMSProp

def mdn(tf, seed, steps):
    rng = np.random.RandomState(seed)
    NHIDDEN, KMIX, NSAMPLE = 12, 4, 40
    y_data = np.float32(rng.uniform(-10.5, 10.5, (1, NSAMPLE))).T
    r_data = np.float32(rng.normal(size=(NSAMPLE, 1)))
    x_data = np.float32(np.sin(0.75 * y_data) * 7.0 + y_data * 0.5 + r_data * 1.0)
    STDEV, NOUT = 0.5, KMIX * 3
    x = tf.placeholder(dtype=tf.float32, shape=[None, 1], name="x")
    y = tf.placeholder(dtype=tf.float32, shape=[None, 1], name="y")
    Wh = tf.Variable(tf.random_normal([1, NHIDDEN], stddev=STDEV, dtype=tf.float32))
    bh = tf.Variable(tf.random_normal([1, NHIDDEN], stddev=STDEV, dtype=tf.float32))
    Wo = tf.Variable(tf.random_normal([NHIDDEN, NOUT], stddev=STDEV, dtype=tf.float32))
    bo = tf.Variable(tf.random_normal([1, NOUT], stddev=STDEV, dtype=tf.float32))
    hidden_layer = tf.nn.tanh(tf.matmul(x, Wh) + bh)
    output = tf.matmul(hidden_layer, Wo) + bo

    def get_mixture_coef(output):
        out_pi, out_sigma, out_mu = tf.split(output, 3, 1)
        max_pi = tf.reduce_max(out_pi, 1, keep_dims=True)
        out_pi = tf.subtract(out_pi, max_pi)
        out_pi = tf.exp(out_pi)
        normalize_pi = tf.reciprocal(tf.reduce_sum(out_pi, 1, keep_dims=True))
        out_pi = tf.multiply(normalize_pi, out_pi)
        out_sigma = tf.exp(out_sigma)
        return out_pi, out_sigma, out_mu

    out_pi, out_sigma, out_mu = get_mixture_coef(output)
    oneDivSqrtTwoPI = 1 / math.sqrt(2 * math.pi)

    def tf_normal(y, mu, sigma):
        result = tf.subtract(y, mu)
        result = tf.multiply(result, tf.reciprocal(sigma))
        result = -tf.square(result) / 2
        return tf.multiply(tf.exp(result), tf.reciprocal(sigma)) * oneDivSqrtTwoPI

    def get_lossfunc(out_pi, out_sigma, out_mu, y):
        result = tf_normal(y, out_mu, out_sigma)
        result = tf.multiply(result, out_pi)
        result = tf.reduce_sum(result, 1, keep_dims=True)
        result = -tf.log(result)
        return tf.reduce_mean(result)

    lossfunc = get_lossfunc(out_pi, out_sigma, out_mu, y)
    train_op = tf.train.AdamOptimizer().minimize(lossfunc)
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.initialize_all_variables())
        _set_vars(tf, sess, seed, 0.5)
        for i in range(steps):
            sess.run(train_op, feed_dict={x: x_data, y: y_data})
            out["losses"].append(sess.run(lossfunc, feed_dict={x: x_data, y: y_data}))
        x_test = np.float32(np.arange(-10, 10, 2.5)).reshape(-1, 1)
        out["pi"], out["sigma"], out["mu"] = sess.run(get_mixture_coef(output), feed_dict={x: x_test})
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# A Gumbel-softmax VAE (ericjang/gumbel-softmax): categorical latents relaxed by a temperature
# placeholder, the straight-through hard sample (stop_gradient(y_hard - y) + y), the KL to a
# uniform prior, Bernoulli decoding by tf.distributions

def gumbel_vae(tf, seed, steps, hard):
    rng = np.random.RandomState(seed)
    D, K, N, B = 16, 4, 3, 8
    data = (rng.rand(B * 3, D) < 0.3).astype(np.float32)

    def gumbel_softmax_sample(logits, temperature, U):
        y = logits - tf.log(-tf.log(U + 1e-20) + 1e-20)
        return tf.nn.softmax(y / temperature)

    def gumbel_softmax(logits, temperature, U, hard=False):
        y = gumbel_softmax_sample(logits, temperature, U)
        if hard:
            y_hard = tf.cast(tf.equal(y, tf.reduce_max(y, 1, keep_dims=True)), y.dtype)
            y = tf.stop_gradient(y_hard - y) + y
        return y

    x = tf.placeholder(tf.float32, [None, D])
    U = tf.placeholder(tf.float32, [None, K])  # tf.random_uniform in the original
    tau = tf.Variable(5.0, name="temperature", trainable=False)
    net = tf.layers.dense(x, 12, activation=tf.nn.relu, name="enc1")
    logits_y = tf.reshape(tf.layers.dense(net, K * N, name="enc2"), [-1, K])
    q_y = tf.nn.softmax(logits_y)
    log_q_y = tf.log(q_y + 1e-20)
    z = tf.reshape(gumbel_softmax(logits_y, tau, U, hard=hard), [-1, N, K])
    net = tf.layers.dense(tf.layers.flatten(z), 12, activation=tf.nn.relu, name="dec1")
    logits_x = tf.layers.dense(net, D, name="dec2")
    p_x = tf.distributions.Bernoulli(logits=logits_x)
    kl_tmp = tf.reshape(q_y * (log_q_y - tf.log(1.0 / K)), [-1, N, K])
    KL = tf.reduce_sum(kl_tmp, [1, 2])
    elbo = tf.reduce_sum(p_x.log_prob(x), 1) - KL
    loss = tf.reduce_mean(-elbo)
    lr = tf.constant(0.01)
    train_op = tf.train.AdamOptimizer(learning_rate=lr).minimize(loss, var_list=tf.trainable_variables())
    anneal = tf.assign(tau, tf.maximum(0.5, tau * np.float32(np.exp(-0.3))))
    out = {"losses": [], "taus": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.5)
        for i in range(steps):
            k = (i % 3) * B
            u = rng.uniform(size=(B * N, K)).astype(np.float32)
            _, np_loss = sess.run([train_op, loss], {x: data[k:k + B], U: u})
            out["losses"].append(np_loss)
            if i % 3 == 2:
                out["taus"].append(sess.run(anneal))
        out["z"] = sess.run(z, {x: data[:2], U: rng.uniform(size=(2 * N, K)).astype(np.float32)})
        out["vars"] = _values(tf, sess)
    return out



# ------------------------------------------------------------------------------------------
# The pointer-generator's copy mechanism (abisee/pointer-generator model.py): attention over a
# bidirectional encoder, p_gen, the extended vocabulary sized by a max_art_oovs placeholder,
# scatter_nd of the attention onto [batch_size, extended_vsize], the gathered target loss
# masked by the decoder padding

def pointer_generator(tf, seed, steps):
    rng = np.random.RandomState(seed)
    batch_size, V, E, Hd, T_enc, T_dec, max_oovs = 3, 10, 5, 6, 6, 4, 2
    enc_ids = rng.randint(1, V, (batch_size, T_enc)).astype(np.int32)
    enc_ext = enc_ids.copy()
    enc_ext[:, 2] = V + rng.randint(0, max_oovs, batch_size)  # article OOVs in the extended vocab
    enc_lens = np.array([6, 5, 4], np.int32)
    dec_in = rng.randint(1, V, (batch_size, T_dec)).astype(np.int32)
    target = rng.randint(1, V + max_oovs, (batch_size, T_dec)).astype(np.int32)
    dec_mask = np.ones((batch_size, T_dec), np.float32)
    dec_mask[2, 3:] = 0
    _enc_batch = tf.placeholder(tf.int32, [batch_size, None], name='enc_batch')
    _enc_lens = tf.placeholder(tf.int32, [batch_size], name='enc_lens')
    _enc_padding_mask = tf.placeholder(tf.float32, [batch_size, None], name='enc_padding_mask')
    _enc_batch_extend_vocab = tf.placeholder(tf.int32, [batch_size, None], name='enc_batch_extend_vocab')
    _max_art_oovs = tf.placeholder(tf.int32, [], name='max_art_oovs')
    _dec_batch = tf.placeholder(tf.int32, [batch_size, T_dec], name='dec_batch')
    _target_batch = tf.placeholder(tf.int32, [batch_size, T_dec], name='target_batch')
    _dec_padding_mask = tf.placeholder(tf.float32, [batch_size, T_dec], name='dec_padding_mask')
    with tf.variable_scope('seq2seq'):
        embedding = tf.get_variable('embedding', [V, E], dtype=tf.float32)
        emb_enc_inputs = tf.nn.embedding_lookup(embedding, _enc_batch)
        emb_dec_inputs = [tf.nn.embedding_lookup(embedding, x) for x in tf.unstack(_dec_batch, axis=1)]
        with tf.variable_scope('encoder'):
            cell_fw = tf.nn.rnn_cell.LSTMCell(Hd, state_is_tuple=True)
            cell_bw = tf.nn.rnn_cell.LSTMCell(Hd, state_is_tuple=True)
            (encoder_outputs, (fw_st, bw_st)) = tf.nn.bidirectional_dynamic_rnn(
                cell_fw, cell_bw, emb_enc_inputs, dtype=tf.float32, sequence_length=_enc_lens,
                swap_memory=True)
            encoder_outputs = tf.concat(axis=2, values=encoder_outputs)
        with tf.variable_scope('reduce_final_st'):
            w_reduce_c = tf.get_variable('w_reduce_c', [Hd * 2, Hd], dtype=tf.float32)
            w_reduce_h = tf.get_variable('w_reduce_h', [Hd * 2, Hd], dtype=tf.float32)
            bias_reduce_c = tf.get_variable('bias_reduce_c', [Hd], dtype=tf.float32)
            bias_reduce_h = tf.get_variable('bias_reduce_h', [Hd], dtype=tf.float32)
            old_c = tf.concat(axis=1, values=[fw_st.c, bw_st.c])
            old_h = tf.concat(axis=1, values=[fw_st.h, bw_st.h])
            new_c = tf.nn.relu(tf.matmul(old_c, w_reduce_c) + bias_reduce_c)
            new_h = tf.nn.relu(tf.matmul(old_h, w_reduce_h) + bias_reduce_h)
            dec_in_state = tf.nn.rnn_cell.LSTMStateTuple(new_c, new_h)
        with tf.variable_scope('decoder'):
            cell = tf.nn.rnn_cell.LSTMCell(Hd, state_is_tuple=True)
            attn_size = encoder_outputs.get_shape()[2]
            encoder_states = tf.expand_dims(encoder_outputs, axis=2)
            W_h = tf.get_variable("W_h", [1, 1, attn_size, Hd])
            encoder_features = tf.nn.conv2d(encoder_states, W_h, [1, 1, 1, 1], "SAME")
            v = tf.get_variable("v", [Hd])
            W_s = tf.get_variable("W_s", [Hd * 2, Hd])

            def attention(decoder_state):
                with tf.variable_scope("Attention"):
                    decoder_features = tf.matmul(tf.concat([decoder_state.c, decoder_state.h], 1), W_s)
                    decoder_features = tf.expand_dims(tf.expand_dims(decoder_features, 1), 1)
                    e = tf.reduce_sum(v * tf.tanh(encoder_features + decoder_features), [2, 3])
                    attn_dist = tf.nn.softmax(e)
                    attn_dist *= _enc_padding_mask
                    masked_sums = tf.reduce_sum(attn_dist, axis=1)
                    attn_dist = attn_dist / tf.reshape(masked_sums, [-1, 1])
                    context_vector = tf.reduce_sum(tf.reshape(attn_dist, [batch_size, -1, 1, 1]) * encoder_states,
                                                   [1, 2])
                    context_vector = tf.reshape(context_vector, [-1, attn_size])
                return context_vector, attn_dist

            outputs, attn_dists, p_gens = [], [], []
            state = dec_in_state
            context_vector = tf.zeros([batch_size, attn_size])
            with tf.variable_scope("attention_decoder"):
                W_in = tf.get_variable("W_in", [E + attn_size, E])
                W_out = tf.get_variable("W_out", [Hd + attn_size, Hd])
                W_pgen = tf.get_variable("W_pgen", [attn_size + Hd * 2 + E, 1])
                for i, inp in enumerate(emb_dec_inputs):
                    if i > 0:
                        tf.get_variable_scope().reuse_variables()
                    x = tf.matmul(tf.concat([inp, context_vector], 1), W_in)
                    cell_output, state = cell(x, state)
                    context_vector, attn_dist = attention(state)
                    attn_dists.append(attn_dist)
                    p_gen = tf.sigmoid(tf.matmul(tf.concat([context_vector, state.c, state.h, x], 1), W_pgen))
                    p_gens.append(p_gen)
                    outputs.append(tf.matmul(tf.concat([cell_output, context_vector], 1), W_out))
        with tf.variable_scope('output_projection'):
            w = tf.get_variable('w', [Hd, V], dtype=tf.float32)
            v_b = tf.get_variable('v', [V], dtype=tf.float32)
            vocab_scores = [tf.nn.xw_plus_b(output, w, v_b) for output in outputs]
            vocab_dists = [tf.nn.softmax(s) for s in vocab_scores]
        with tf.variable_scope('final_distribution'):
            vocab_dists = [p_gen * dist for (p_gen, dist) in zip(p_gens, vocab_dists)]
            attn_dists = [(1 - p_gen) * dist for (p_gen, dist) in zip(p_gens, attn_dists)]
            extended_vsize = V + _max_art_oovs
            extra_zeros = tf.zeros((batch_size, _max_art_oovs))
            vocab_dists_extended = [tf.concat(axis=1, values=[dist, extra_zeros]) for dist in vocab_dists]
            batch_nums = tf.range(0, limit=batch_size)
            batch_nums = tf.expand_dims(batch_nums, 1)
            attn_len = tf.shape(_enc_batch_extend_vocab)[1]
            batch_nums = tf.tile(batch_nums, [1, attn_len])
            indices = tf.stack((batch_nums, _enc_batch_extend_vocab), axis=2)
            shape = [batch_size, extended_vsize]
            attn_dists_projected = [tf.scatter_nd(indices, copy_dist, shape) for copy_dist in attn_dists]
            final_dists = [vocab_dist + copy_dist for (vocab_dist, copy_dist) in
                           zip(vocab_dists_extended, attn_dists_projected)]
        with tf.variable_scope('loss'):
            loss_per_step = []
            batch_nums = tf.range(0, limit=batch_size)
            for dec_step, dist in enumerate(final_dists):
                targets = _target_batch[:, dec_step]
                indices = tf.stack((batch_nums, targets), axis=1)
                gold_probs = tf.gather_nd(dist, indices)
                losses = -tf.log(gold_probs)
                loss_per_step.append(losses)
            dec_lens = tf.reduce_sum(_dec_padding_mask, axis=1)
            values_per_step = [v * _dec_padding_mask[:, dec_step] for dec_step, v in enumerate(loss_per_step)]
            values_per_ex = sum(values_per_step) / dec_lens
            _loss = tf.reduce_mean(values_per_ex)
    tvars = tf.trainable_variables()
    gradients = tf.gradients(_loss, tvars, aggregation_method=tf.AggregationMethod.EXPERIMENTAL_TREE)
    grads, global_norm = tf.clip_by_global_norm(gradients, 2.0)
    optimizer = tf.train.AdagradOptimizer(0.15, initial_accumulator_value=0.1)
    global_step = tf.Variable(0, name='global_step', trainable=False)
    train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step, name='train_step')
    feed = {_enc_batch: enc_ids, _enc_lens: enc_lens, _enc_padding_mask: (np.arange(T_enc)[None] <
                                                                          enc_lens[:, None]).astype(np.float32),
            _enc_batch_extend_vocab: enc_ext, _max_art_oovs: max_oovs, _dec_batch: dec_in, _target_batch: target,
            _dec_padding_mask: dec_mask}
    out = {"losses": [], "global_norms": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.4)
        out["final_dist0"] = sess.run(final_dists[0], feed)
        for step in range(steps):
            l, n, _ = sess.run([_loss, global_norm, train_op], feed)
            out["losses"].append(l), out["global_norms"].append(n)
        out["vars"] = _values(tf, sess)
    return out


PROGRAMS = [
    ("ctc_speech", ctc_speech, dict(steps=15)),
    ("raw_rnn_seq2seq", raw_rnn_seq2seq, dict(steps=15)),
    ("scan_rnn", scan_rnn, dict(steps=20)),
    ("text_cnn_summaries", text_cnn, dict(steps=8)),
    ("beam_search", beam_search, dict(steps=12)),
    ("fasttext_strings", fasttext_strings, dict(steps=12)),
    ("mixture_density_network", mdn, dict(steps=15)),
    ("gumbel_softmax_vae", gumbel_vae, dict(steps=12, hard=False)),
    ("gumbel_softmax_vae_straight_through", gumbel_vae, dict(steps=12, hard=True)),
    ("pointer_generator", pointer_generator, dict(steps=8)),
]


@pytest.mark.parametrize("name,program,kwargs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program(name, program, kwargs):
    compare_program(program, kwargs)
