"""The program the static_state_saving_rnn tests run under collflow (tests/test_static_state_saving_rnn.py)
and under TensorFlow too (tests/tf1/test_vs_tensorflow_static_state_saving_rnn.py): a long sequence fed in
chunks, the state carried between chunks by a variable-backed state saver."""
import numpy as np


def run_chunks(tf, cell_kind, chunks=3, T=4, B=3, D=5, H=6, seed=0, train=True, full_lengths=False, load=True):
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
        saver = VarStateSaver(tf, B, H, names)
        with tf.variable_scope("m", initializer=tf.random_uniform_initializer(-0.3, 0.3, seed=3)):
            outs, state = tf.nn.static_state_saving_rnn(cell, xs, saver, names, sequence_length=lens)
            w = tf.get_variable("w", [H, 1], initializer=init)
        loss = tf.reduce_mean(tf.square(tf.matmul(outs[-1], w) - 1.0)) + sum(
            tf.reduce_mean(o) for o in outs[:-1])
        step = tf.train.GradientDescentOptimizer(0.3).minimize(loss) if train else tf.no_op()
        got = []
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            # the same initial values in both libraries, by variable name
            vs = sorted(tf.trainable_variables(), key=lambda v: v.op.name)
            vr = np.random.RandomState(5)
            for v in vs if load else ():
                v.load(vr.uniform(-0.4, 0.4, v.shape.as_list()).astype(np.float32), sess)
            for c in range(chunks):
                feed = {x: xs_all[c * T + t] for t, x in enumerate(xs)}
                feed[lens] = np.array([T, T - 1 if c == 1 and not full_lengths else T, T], np.int32)
                o, l, _ = sess.run([outs, loss, step], feed)
                got.append((np.array(o), l, sess.run(saver.flat_vars)))
            got.append(([v.op.name for v in vs], sess.run(vs)))
    return got


class VarStateSaver:
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
