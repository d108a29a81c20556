"""By-hand checks (no TensorFlow needed) of what the RNN fuzz against TensorFlow found:

* TF's shape inference evaluates small constant subgraphs: zeros(stack([shape(x)[0], 4])) and
  cell.zero_state(tf.shape(x)[0], dtype) of an x of static shape [1, 5, 3] have the static
  shape [1, 4] (collflow said [?, 4]).
* ReverseSequence's shape function takes an unknown batch dimension from seq_lengths' size
  (TF: reverse_sequence(x [3, ?, 2], lengths [2]) is [3, 2, 2]).
* dynamic_rnn over inputs of unknown batch with a statically shaped initial state has outputs
  of that static batch (TF's cell outputs carry the state's batch).
* tf.contrib.rnn.GRUBlockCell / GRUBlockCellV2: GRUCell's math; variables gru_cell/w_ru, b_ru,
  w_c, b_c (V1) or gru_cell/gates/kernel, ... (V2).
"""
import numpy as np
import pytest

import collflow.compat.v1 as tf


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_fill_shape_from_static_shape_elements():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [1, 5, 3])
        y = tf.placeholder(tf.float32, [None, 3])
        z = tf.zeros(tf.stack([tf.shape(x)[0], 4]))
        z2 = tf.zeros([tf.shape(x)[-1], tf.shape(y)[0]])
        zs = tf.nn.rnn_cell.LSTMCell(4).zero_state(tf.shape(x)[0], tf.float32)
        assert z.shape.as_list() == [1, 4]
        assert z2.shape.as_list() == [3, None]  # y's batch is unknown: stays unknown
        assert zs.c.shape.as_list() == [1, 4] and zs.h.shape.as_list() == [1, 4]
        with tf.Session() as s:
            a, b = s.run([z, z2], {x: np.ones([1, 5, 3], np.float32), y: np.ones([2, 3], np.float32)})
        np.testing.assert_array_equal(a, np.zeros([1, 4]))
        np.testing.assert_array_equal(b, np.zeros([3, 2]))


def test_reverse_sequence_batch_from_lengths():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3, None, 2])
        r = tf.reverse_sequence(x, tf.constant([1, 3]), seq_axis=0, batch_axis=1)
        assert r.shape.as_list() == [3, 2, 2]
        v = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
        with tf.Session() as s:
            got = s.run(r, {x: v})
    want = v.copy()
    want[:3, 1] = v[2::-1, 1]  # row 1 reversed over its 3 steps; row 0 (length 1) unchanged
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("cell_kind", ["rnn", "gru"])  # a loop-run cell and a fused one
def test_dynamic_rnn_batch_from_initial_state(cell_kind):
    rng = np.random.default_rng(0)
    xv = rng.uniform(-1, 1, [2, 3, 3]).astype(np.float32)
    h0 = rng.uniform(-1, 1, [2, 4]).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, None, 3])
        h = tf.placeholder(tf.float32, [2, 4])
        cell = tf.nn.rnn_cell.BasicRNNCell(4) if cell_kind == "rnn" else tf.nn.rnn_cell.GRUCell(4)
        out, st = tf.nn.dynamic_rnn(cell, x, initial_state=h)
        assert out.shape.as_list() == [2, None, 4]
        assert st.shape.as_list() == [2, 4]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            ws = s.run(tf.trainable_variables())
            o, f = s.run([out, st], {x: xv, h: h0})
    hs, state = [], h0
    for t in range(3):
        xh = np.concatenate([xv[:, t], state], 1)
        if cell_kind == "rnn":
            k, b = ws
            state = np.tanh(xh @ k + b)
        else:
            gk, gb, ck, cb = ws  # in creation order: gates, then candidate
            ru = _sigmoid(xh @ gk + gb)
            r, u = ru[:, :4], ru[:, 4:]
            c = np.tanh(np.concatenate([xv[:, t], r * state], 1) @ ck + cb)
            state = u * state + (1 - u) * c
        hs.append(state)
    np.testing.assert_allclose(o, np.stack(hs, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f, state, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("v2", [False, True])
def test_gru_block_cell(v2):
    rng = np.random.default_rng(1)
    xv = rng.uniform(-1, 1, [4, 2, 3]).astype(np.float32)  # time-major
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4, 2, 3])
        cls = tf.contrib.rnn.GRUBlockCellV2 if v2 else tf.contrib.rnn.GRUBlockCell
        cell = cls(num_units=5) if v2 else cls(cell_size=5)  # cell_size: TF's older name
        out, st = tf.nn.dynamic_rnn(cell, x, time_major=True, sequence_length=[4, 2], dtype=tf.float32)
        vs = tf.trainable_variables()
        names = [(v.name, v.shape.as_list()) for v in vs]
        want_names = (["rnn/gru_cell/gates/kernel:0", "rnn/gru_cell/gates/bias:0", "rnn/gru_cell/candidate/kernel:0",
                       "rnn/gru_cell/candidate/bias:0"] if v2 else
                      ["rnn/gru_cell/w_ru:0", "rnn/gru_cell/b_ru:0", "rnn/gru_cell/w_c:0", "rnn/gru_cell/b_c:0"])
        assert names == list(zip(want_names, [[8, 10], [10], [8, 5], [5]])), names
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            gk, gb, ck, cb = s.run(vs)
            np.testing.assert_array_equal(gb, np.ones(10))   # b_ru starts at 1, b_c at 0
            np.testing.assert_array_equal(cb, np.zeros(5))
            o, f = s.run([out, st], {x: xv})
    h = np.zeros([2, 5], np.float32)
    lengths = np.array([4, 2])
    outs = []
    for t in range(4):
        ru = _sigmoid(np.concatenate([xv[t], h], 1) @ gk + gb)
        r, u = ru[:, :5], ru[:, 5:]
        c = np.tanh(np.concatenate([xv[t], r * h], 1) @ ck + cb)
        new = u * h + (1 - u) * c
        live = (t < lengths)[:, None]
        h = np.where(live, new, h)
        outs.append(np.where(live, new, 0))
    np.testing.assert_allclose(o, np.stack(outs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f, h, rtol=1e-5, atol=1e-6)


def test_gru_block_cell_needs_exactly_one_size():
    with pytest.raises(ValueError):
        tf.contrib.rnn.GRUBlockCell()
    with pytest.raises(ValueError):
        tf.contrib.rnn.GRUBlockCell(num_units=3, cell_size=3)


@pytest.mark.parametrize("seq", [None, [0, 0]])
def test_dynamic_rnn_zero_steps(seq):
    # TF: a [batch, 0, depth] input (static batch) gives outputs [batch, 0, n], the initial
    # state back, and a [batch, 0, depth] gradient; collflow's BasicRNNCell path failed in
    # TensorArraySplit (0 rows split into 0 elements took the elements' rows as 0)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, None, 3])
        h0 = tf.constant(np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32))
        out, st = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(4), x, initial_state=h0, sequence_length=seq)
        gx = tf.gradients(tf.reduce_sum(out) + tf.reduce_sum(st), x)[0]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            o, f, gv = s.run([out, st, gx], {x: np.zeros([2, 0, 3], np.float32)})
    assert o.shape == (2, 0, 4) and gv.shape == (2, 0, 3)
    np.testing.assert_array_equal(f, [[1, 2, 3, 4], [5, 6, 7, 8]])


def test_tensor_array_split_into_no_elements():
    g = tf.Graph()
    with g.as_default():
        ta = tf.TensorArray(tf.float32, size=0, element_shape=[2, 4]).split(tf.zeros([0, 4]))
        with tf.Session() as s:
            assert s.run(ta.stack()).shape == (0, 2, 4)


@pytest.mark.parametrize("cell_kind", ["rnn", "gru"])
def test_static_rnn_batch_from_initial_state(cell_kind):
    # TF: static_rnn's step outputs of inputs [?, 3] with an initial state [2, 4] are [2, 4]
    g = tf.Graph()
    with g.as_default():
        xs = [tf.placeholder(tf.float32, [None, 3]) for _ in range(3)]
        h = tf.placeholder(tf.float32, [2, 4])
        cell = tf.nn.rnn_cell.BasicRNNCell(4) if cell_kind == "rnn" else tf.nn.rnn_cell.GRUCell(4)
        outs, st = tf.nn.static_rnn(cell, xs, initial_state=h)
        assert [o.shape.as_list() for o in outs] == [[2, 4]] * 3
        assert st.shape.as_list() == [2, 4]
