"""tf.nn.static_state_saving_rnn: a long sequence fed in chunks, the state carried between the
chunks by a state saver, equals static_rnn over the whole sequence; the state is saved when
the last output or the final state is fetched; TF's errors for a state_name not shaped like
the cell's state."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

from state_saving_programs import VarStateSaver as _VarStateSaver, run_chunks


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
    got = run_chunks(tf, kind, train=False, full_lengths=True, load=False)
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
