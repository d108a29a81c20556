"""tf.nn.static_state_saving_rnn: a long sequence fed in chunks, the state carried between the
chunks by a state saver, equals static_rnn over the whole sequence; the state is saved when
the last output or the final state is fetched; TF's errors for a state_name not shaped like
the cell's state."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

def _run_chunks(tf, cell_kind, chunks=3, T=4, B=3, D=5, H=6, seed=0, train=True, full_lengths=False):
    """A long sequence of chunks*T steps fed T at a time: the state is carried between chunks by
    a variable-backed state saver; a GradientDescent step on each chunk (truncated BPTT)."""
    rng = np.random.RandomState(seed)
    xs_all = rng.randn(chunks * T, B, D).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        xs = [tf.placeholder(tf.float32, [B, D]) for _ in range(T)]
        lens = tf.placeholder(tf.int32, [B])
        init = tf.constant_initializer(0.1)
        if cell_kind == "lstm":
            cell = tf.nn.rnn_cell.BasicLSTMCell(H)
            names = ("c", "h")
        elif cell_kind == "multi":
            cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(H), tf.nn.rnn_cell.BasicLSTMCell(H)])
            names = ("g0", ("c1", "h1"))
        else:
            cell = tf.nn.rnn_cell.GRUCell(H)
            names = "h"
        saver = _VarStateSaver(tf, B, H, names)
        with tf.variable_scope("m", initializer=tf.random_uniform_initializer(-0.3, 0.3, seed=3)):
            outs, state = tf.nn.static_state_saving_rnn(cell, xs, saver, names, sequence_length=lens)
            w = tf.get_variable("w", [H, 1], initializer=init)
        loss = tf.reduce_mean(tf.square(tf.matmul(outs[-1], w) - 1.0)) + sum(
            tf.reduce_mean(o) for o in outs[:-1])
        step = tf.train.GradientDescentOptimizer(0.3).minimize(loss) if train else tf.no_op()
        got = []
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            for c in range(chunks):
                feed = {x: xs_all[c * T + t] for t, x in enumerate(xs)}
                feed[lens] = np.array([T, T - 1 if c == 1 and not full_lengths else T, T], np.int32)
                o, l, _ = sess.run([outs, loss, step], feed)
                got.append((np.array(o), l, sess.run(saver.flat_vars)))
            got.append(sess.run(tf.trainable_variables()))
    return got


class _VarStateSaver:
    """state(name) reads a non-trainable variable; save_state assigns it (a state saver as TF's
    static_state_saving_rnn takes it)."""

    def __init__(self, tf, B, H, names):
        self.tf = tf
        self.vars = {}
        flat = [n for n in (names if isinstance(names, tuple) else (names,))]
        flat = [m for n in flat for m in (n if isinstance(n, tuple) else (n,))]
        for n in flat:
            self.vars[n] = tf.get_variable("saved_" + n, [B, H], trainable=False, initializer=tf.zeros_initializer())
        self.flat_vars = [self.vars[n] for n in flat]

    def state(self, name):
        return self.tf.identity(self.vars[name])

    def save_state(self, name, value):
        return self.tf.assign(self.vars[name], value).op


def _whole(cell_kind, chunks=3, T=4, B=3, D=5, H=6, seed=0):
    rng = np.random.RandomState(seed)
    xs_all = rng.randn(chunks * T, B, D).astype(np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        cell = {"lstm": lambda: tf.nn.rnn_cell.BasicLSTMCell(H), "gru": lambda: tf.nn.rnn_cell.GRUCell(H),
                "multi": lambda: tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(H),
                                                               tf.nn.rnn_cell.BasicLSTMCell(H)])}[cell_kind]()
        with tf.variable_scope("m", initializer=tf.random_uniform_initializer(-0.3, 0.3, seed=3)):
            outs, _ = tf.nn.static_rnn(cell, [tf.constant(x) for x in xs_all], dtype=tf.float32)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return np.array(sess.run(outs))


@pytest.mark.parametrize("kind", ["gru", "lstm", "multi"])
def test_chunks_with_saved_state_are_the_whole_sequence(kind):
    got = _run_chunks(tf, kind, train=False, full_lengths=True)
    chunks = np.concatenate([c[0] for c in got[:-1]], axis=0)
    np.testing.assert_allclose(chunks, _whole(kind), rtol=1e-5, atol=1e-6)


def test_fetching_the_final_state_saves_it():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.GRUCell(2)
        saver = _VarStateSaver(tf, 1, 2, "h")
        x = tf.ones([1, 3])
        outs, state = tf.nn.static_state_saving_rnn(cell, [x, x], saver, "h")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            s1 = sess.run(state)
            np.testing.assert_array_equal(sess.run(saver.vars["h"]), s1)
            sess.run(outs[-1])  # the last output too: the state moves on again
            assert not np.allclose(sess.run(saver.vars["h"]), s1)
            sess.run(outs[0])   # an earlier output alone does not save
            before = sess.run(saver.vars["h"])
            sess.run(outs[0])
            np.testing.assert_array_equal(sess.run(saver.vars["h"]), before)


def test_state_name_must_match_the_state():
    with tf.Graph().as_default():
        x = [tf.ones([1, 3])]
        lstm = tf.nn.rnn_cell.BasicLSTMCell(2)
        with pytest.raises(ValueError, match="should be the same type as `cell.state_size`"):
            tf.nn.static_state_saving_rnn(lstm, x, _VarStateSaver(tf, 1, 2, "h"), "h")
        with pytest.raises(ValueError, match="mismatched"):
            tf.nn.static_state_saving_rnn(lstm, x, _VarStateSaver(tf, 1, 2, ("a", "b", "c")), ("a", "b", "c"))
    assert tf.contrib.rnn.static_state_saving_rnn is tf.nn.static_state_saving_rnn
