"""TensorArray, RNN cells and dynamic_rnn: values against NumPy, gradients against finite
differences and the same network unrolled by hand, variable lengths, run-time trip counts,
and a character-level LSTM language model whose loss falls."""
import numpy as np
import pytest

import collflow as cf
from collflow.nn import rnn
from gradcheck import Case, check_case


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def np_lstm(x, kernel, bias, c0, h0, lengths=None, forget_bias=1.0):
    """Reference LSTM (TensorFlow's gate order i, j, f, o), batch-major x [B, T, D]."""
    b, t_len, _ = x.shape
    c, h = c0.copy(), h0.copy()
    outs = np.zeros((b, t_len, h0.shape[1]))
    for t in range(t_len):
        z = np.concatenate([x[:, t], h], 1) @ kernel + bias
        i, j, f, o = np.split(z, 4, axis=1)
        c_new = c * _sig(f + forget_bias) + _sig(i) * np.tanh(j)
        h_new = _sig(o) * np.tanh(c_new)
        keep = np.ones((b, 1), bool) if lengths is None else (t < np.asarray(lengths))[:, None]
        c, h = np.where(keep, c_new, c), np.where(keep, h_new, h)
        outs[:, t] = np.where(keep, h_new, 0.0)
    return outs, c, h


def np_basic_rnn(x, kernel, bias, h0):
    h = h0.copy()
    outs = []
    for t in range(x.shape[1]):
        h = np.tanh(np.concatenate([x[:, t], h], 1) @ kernel + bias)
        outs.append(h)
    return np.stack(outs, 1), h


class _NoProjection(rnn.LSTMCell):
    """The same LSTM without the input projection: dynamic_rnn calls it once per step."""

    def input_projection(self):
        return None


def _lstm_graph(depth=3, units=4, time=None, cell_cls=rnn.LSTMCell, time_major=False, with_lengths=True,
                forget_bias=1.0):
    g = cf.Graph()
    with g.as_default():
        shape = (time, None, depth) if time_major else (None, time, depth)
        x = cf.placeholder(cf.float64, shape, name="x")
        lengths = cf.placeholder(cf.int32, (None,), name="lengths") if with_lengths else None
        cell = cell_cls(units, forget_bias=forget_bias, seed=3)
        out, state = rnn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=cf.float64, time_major=time_major)
        init = cf.global_variables_initializer()
    return g, x, lengths, cell, out, state, init


@pytest.mark.parametrize("with_lengths", [False, True])
@pytest.mark.parametrize("cell_cls", [rnn.LSTMCell, _NoProjection], ids=["projected", "per-step"])
def test_dynamic_rnn_lstm_matches_numpy(with_lengths, cell_cls):
    g, x, lengths, cell, out, state, init = _lstm_graph(cell_cls=cell_cls, with_lengths=with_lengths,
                                                        forget_bias=0.7)
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(3, 6, 3))
    lv = np.array([6, 2, 4], np.int32)
    with cf.Session(graph=g) as s:
        s.run(init)
        kernel, bias = s.run(cell.variables)
        feed = {x: xv}
        if with_lengths:
            feed[lengths] = lv
        o, c, h = s.run([out, state.c, state.h], feed)
    ro, rc, rh = np_lstm(xv, kernel, bias, np.zeros((3, 4)), np.zeros((3, 4)),
                         lv if with_lengths else None, forget_bias=0.7)
    assert o.shape == (3, 6, 4) and o.dtype == np.float64
    np.testing.assert_allclose(o, ro, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c, rc, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, rh, rtol=1e-12, atol=1e-12)
    if with_lengths:
        assert not o[1, 2:].any() and not o[2, 4:].any()  # zeros past each length


def test_lstm_cell_variables_shapes_and_names():
    g, x, lengths, cell, out, state, init = _lstm_graph(depth=5, units=7)
    kernel, bias = cell.variables
    assert kernel.shape.as_list() == [12, 28] and bias.shape.as_list() == [28]
    assert kernel.name == "rnn/lstm_cell/kernel:0" and bias.name == "rnn/lstm_cell/bias:0"
    assert out.shape.as_list() == [None, None, 7]
    assert state.c.shape.as_list() == [None, 7]
    # a plain LSTMCell, sequence_length or not, runs as one fused op: no loop, nothing unrolled
    types = [op.type for op in g.get_operations()]
    assert types.count("BlockLSTM") == 1 and "LoopCond" not in types
    # with options the fused op does not have, the loop is in the graph once, not unrolled
    g2, *_ = _lstm_graph(depth=5, units=7, cell_cls=lambda n, **kw: rnn.LSTMCell(n, activation=cf.nn.relu, **kw))
    assert sum(op.type == "LoopCond" for op in g2.get_operations()) == 1
    # peepholes, cell_clip and a projection are inside the fused op
    g3, *_ = _lstm_graph(depth=5, units=7, cell_cls=lambda n, **kw: rnn.LSTMCell(
        n, use_peepholes=True, cell_clip=2.0, num_proj=4, proj_clip=1.0, **kw))
    types = [op.type for op in g3.get_operations()]
    assert types.count("BlockLSTM") == 1 and "LoopCond" not in types


def test_time_major_and_initial_state():
    rng = np.random.default_rng(2)
    xv = rng.normal(size=(5, 2, 3))  # [time, batch, depth]
    c0, h0 = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (None, 2, 3), name="x")
        cell = rnn.LSTMCell(4)
        init_state = rnn.LSTMStateTuple(cf.constant(c0), cf.constant(h0))
        out, state = rnn.dynamic_rnn(cell, x, initial_state=init_state, time_major=True)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        kernel, bias = s.run(cell.variables)
        o, c, h = s.run([out, state.c, state.h], {x: xv})
    ro, rc, rh = np_lstm(xv.transpose(1, 0, 2), kernel, bias, c0, h0)
    np.testing.assert_allclose(o, ro.transpose(1, 0, 2), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c, rc, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, rh, rtol=1e-12, atol=1e-12)


def test_cell_first_called_inside_a_user_while_loop():
    """Variables made on a first call inside a loop body still live outside the loop."""
    rng = np.random.default_rng(10)
    xv = rng.normal(size=(2, 4, 3))
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (2, 4, 3), name="x")
        cell = rnn.LSTMCell(5, seed=2)
        zero = cell.zero_state(2, cf.float64)

        def body(t, c, h):
            out, st = cell(cf.gather(x, t, axis=1), rnn.LSTMStateTuple(c, h))
            return t + 1, st.c, st.h
        _, c, h = cf.while_loop(lambda t, c, h: t < 4, body, [cf.constant(0), zero.c, zero.h])
        assert cell.built and all(v.op._ctx is None for v in cell.variables)
        _, ref = rnn.dynamic_rnn(cell, x)  # reuses the same variables
        gk = cf.gradients(cf.reduce_sum(h), cell.variables[0])[0]
        gk_ref = cf.gradients(cf.reduce_sum(ref.h), cell.variables[0])[0]
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        a = s.run([c, h, gk], {x: xv})
        b = s.run([ref.c, ref.h, gk_ref], {x: xv})
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)


def test_basic_rnn_cell_matches_numpy():
    rng = np.random.default_rng(3)
    xv = rng.normal(size=(2, 4, 3))
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (None, None, 3), name="x")
        cell = rnn.rnn_cell.BasicRNNCell(5)
        out, state = rnn.dynamic_rnn(cell, x, dtype=cf.float64)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        kernel, bias = s.run(cell.variables)
        o, h = s.run([out, state], {x: xv})
    ro, rh = np_basic_rnn(xv, kernel, bias, np.zeros((2, 5)))
    np.testing.assert_allclose(o, ro, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, rh, rtol=1e-12, atol=1e-12)


def test_variable_length_batch_equals_each_sequence_alone():
    """Padding and sequence_length give each sequence exactly what it gets unpadded."""
    g, x, lengths, cell, out, state, init = _lstm_graph()
    rng = np.random.default_rng(4)
    lv = np.array([5, 1, 0, 3], np.int32)
    xv = rng.normal(size=(4, 5, 3))
    with cf.Session(graph=g) as s:
        s.run(init)
        o, c, h = s.run([out, state.c, state.h], {x: xv, lengths: lv})
        for b, n in enumerate(lv):
            ob, cb, hb = s.run([out, state.c, state.h], {x: xv[b:b + 1, :n], lengths: [n]})
            np.testing.assert_allclose(o[b, :n], ob[0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(c[b], cb[0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(h[b], hb[0], rtol=1e-12, atol=1e-12)
            assert not o[b, n:].any()
    assert not c[2].any() and not h[2].any()  # length 0: the initial (zero) state


def test_trip_count_is_decided_at_run_time():
    """One graph runs any number of steps: the time dimension and max(lengths) are fed."""
    g, x, lengths, cell, out, state, init = _lstm_graph()
    with g.as_default():
        fused = [op for op in g.get_operations() if op.type == "BlockLSTM"]
    rng = np.random.default_rng(5)
    with cf.Session(graph=g) as s:
        s.run(init)
        kernel, bias = s.run(cell.variables)
        for t_len, lv in ((7, [7, 7]), (3, [2, 1]), (1, [1, 0]), (0, [0, 0]), (9, [4, 4])):
            xv = rng.normal(size=(2, t_len, 3))
            o, h = s.run([out, state.h], {x: xv, lengths: lv})
            ro, _, rh = np_lstm(xv, kernel, bias, np.zeros((2, 4)), np.zeros((2, 4)), lv)
            assert o.shape == (2, t_len, 4)
            np.testing.assert_allclose(o, ro, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(h, rh, rtol=1e-12, atol=1e-12)
    assert len(fused) == 1  # one op runs whatever number of steps: nothing unrolled


def _unrolled(cell, x, lengths, steps, state):
    """The same LSTM as a Python loop of cell calls in the graph (no while_loop)."""
    outs = []
    for t in range(steps):
        o, new = cell(x[:, t, :], state)
        keep = cf.expand_dims(cf.less(cf.constant(t), lengths), 1)
        state = rnn.LSTMStateTuple(*[cf.where(keep, a, b) for a, b in zip(new, state)])
        outs.append(cf.where(keep, o, cf.zeros_like(o)))
    return cf.stack(outs, axis=1), state


def test_gradients_match_hand_unrolled_graph():
    rng = np.random.default_rng(6)
    xv = rng.normal(size=(3, 5, 3))
    lv = np.array([5, 3, 1], np.int32)
    c0v, h0v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    wv = rng.uniform(0.5, 1.5, size=(3, 5, 4))
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (3, 5, 3), name="x")
        lengths = cf.placeholder(cf.int32, (3,), name="lengths")
        c0, h0 = cf.placeholder(cf.float64, (3, 4), name="c0"), cf.placeholder(cf.float64, (3, 4), name="h0")
        cell = rnn.LSTMCell(4, seed=7)
        s0 = rnn.LSTMStateTuple(c0, h0)
        out, st = rnn.dynamic_rnn(cell, x, sequence_length=lengths, initial_state=s0)
        out_u, st_u = _unrolled(cell, x, lengths, 5, s0)
        w = cf.constant(wv)
        loss = cf.reduce_sum(out * w) + cf.reduce_sum(cf.square(st.c)) + cf.reduce_sum(st.h)
        loss_u = cf.reduce_sum(out_u * w) + cf.reduce_sum(cf.square(st_u.c)) + cf.reduce_sum(st_u.h)
        xs = [x, c0, h0] + cell.variables
        grads = cf.gradients(loss, xs)
        grads_u = cf.gradients(loss_u, xs)
        init = cf.global_variables_initializer()
    feed = {x: xv, lengths: lv, c0: c0v, h0: h0v}
    with cf.Session(graph=g) as s:
        s.run(init)
        a = s.run([loss] + grads, feed)
        b = s.run([loss_u] + grads_u, feed)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)
    assert not a[1][2, 1:].any()  # nothing past length 1 reaches the loss


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "loop"])
def test_lstm_gradients_match_finite_differences(fused):
    def f(x, kernel, bias):
        cell = rnn.LSTMCell(2)
        cell.built, cell.input_depth, cell.dtype = True, 3, cf.float64
        cell._kernel, cell._bias = kernel, bias
        if not fused:
            cell.fused_sequence = lambda: None
        out, st = rnn.dynamic_rnn(cell, x, sequence_length=cf.constant([3, 1]))
        return [out, st.c]
    check_case(Case("BlockLSTM" if fused else "TensorArraySplitV3", f, [(2, 3, 3), (5, 8), (8,)], low=-1.0,
                    high=1.0, id="lstm-fd"))


def test_gradient_with_zero_steps_and_unused_outputs():
    """Zero iterations, or a loss on the final state only: gradients are still well-defined."""
    g, x, lengths, cell, out, state, init = _lstm_graph()
    with g.as_default():
        g_state = cf.gradients(cf.reduce_sum(state.h), [x] + cell.variables)
        g_out = cf.gradients(cf.reduce_sum(out), [x] + cell.variables)
    rng = np.random.default_rng(8)
    with cf.Session(graph=g) as s:
        s.run(init)
        xv = rng.normal(size=(2, 4, 3))
        for gs in (g_state, g_out):
            zero = s.run(gs, {x: xv, lengths: [0, 0]})
            assert zero[0].shape == xv.shape and not any(v.any() for v in zero)
            some = s.run(gs, {x: xv, lengths: [2, 4]})
            assert some[0][:, :2].any() and not some[0][0, 2:].any()


def test_two_gradient_calls_in_one_run_use_separate_gradient_arrays():
    g = cf.Graph()
    with g.as_default():
        v = cf.placeholder(cf.float64, (3, 2), name="v")
        ta = rnn.TensorArray(cf.float64, 3).unstack(v)
        y = cf.reduce_sum(cf.square(ta.read(0)) + ta.read(2))
        ga = cf.gradients(y, v)[0]
        gb = cf.gradients(3.0 * y, v)[0]
    vv = np.arange(6.0).reshape(3, 2)
    with cf.Session(graph=g) as s:
        a, b = s.run([ga, gb], {v: vv})
    np.testing.assert_allclose(a, [2 * vv[0], [0, 0], [1, 1]])
    np.testing.assert_allclose(b, 3 * a)


def test_two_loop_gradients_in_one_run():
    g, x, lengths, cell, out, state, init = _lstm_graph(with_lengths=False)
    with g.as_default():
        loss = cf.reduce_sum(out * out)
        ga = cf.gradients(loss, x)[0]
        gb = cf.gradients(2.0 * loss, x)[0]
    xv = np.random.default_rng(9).normal(size=(2, 3, 3))
    with cf.Session(graph=g) as s:
        s.run(init)
        a_alone = s.run(ga, {x: xv})
        np.testing.assert_allclose(s.run(gb, {x: xv}), 2 * a_alone, rtol=1e-12)
        a, b = s.run([ga, gb], {x: xv})
    np.testing.assert_allclose(a, a_alone, rtol=1e-12)
    np.testing.assert_allclose(b, 2 * a_alone, rtol=1e-12)


def test_tensor_array_basics_and_errors():
    g = cf.Graph()
    with g.as_default():
        v = cf.placeholder(cf.float32, (3, 2), name="v")
        ta = rnn.TensorArray(cf.float32, 3).unstack(v)
        r1 = ta.read(1)
        out = rnn.TensorArray(cf.float32, 4).write(1, v[0]).write(3, v[2]).stack()
        twice = rnn.TensorArray(cf.float32, 2).write(0, v[0]).write(0, v[1]).stack()
        unread = rnn.TensorArray(cf.float32, 2).write(0, v[0]).read(1)
        oob = rnn.TensorArray(cf.float32, 2).write(5, v[0]).stack()
        bad_size = rnn.TensorArray(cf.float32, 2).unstack(cf.placeholder(cf.float32, (None, 2), name="w")).flow
        w = g.get_tensor_by_name("w:0")
        assert out.shape.as_list() == [4, 2] and r1.shape.as_list() == [2]
        with pytest.raises(cf.errors.InvalidArgumentError, match="dtype"):
            rnn.TensorArray(cf.float32, 2).write(0, cf.constant([1, 2]))
        with pytest.raises(cf.errors.InvalidArgumentError, match="element shape"):
            rnn.TensorArray(cf.float32, 2, element_shape=[3]).write(0, v[0])
    vv = np.arange(6, dtype=np.float32).reshape(3, 2)
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(r1, {v: vv}), vv[1])
        np.testing.assert_array_equal(s.run(out, {v: vv}), [[0, 0], vv[0], [0, 0], vv[2]])
        with pytest.raises(cf.errors.InvalidArgumentError, match="already written"):
            s.run(twice, {v: vv})
        with pytest.raises(cf.errors.InvalidArgumentError, match="not been written"):
            s.run(unread, {v: vv})
        with pytest.raises(cf.errors.InvalidArgumentError, match="index 5"):
            s.run(oob, {v: vv})
        with pytest.raises(cf.errors.InvalidArgumentError, match="unstack"):
            s.run(bad_size, {w: np.zeros((3, 2), np.float32)})


def test_tensor_array_in_while_loop_with_fed_trip_count():
    """Squares of 0..n-1 collected by a TensorArray in a loop of n iterations (n fed)."""
    g = cf.Graph()
    with g.as_default():
        n = cf.placeholder(cf.int32, (), name="n")
        ta = rnn.TensorArray(cf.float32, n, element_shape=[])

        def body(i, flow):
            fi = cf.cast(i, cf.float32)
            return i + 1, ta.with_flow(flow).write(i, fi * fi).flow
        _, flow = cf.while_loop(lambda i, flow: i < n, body, (cf.constant(0), ta.flow))
        squares = ta.with_flow(flow).stack()
    with cf.Session(graph=g) as s:
        for nv in (0, 1, 6):
            np.testing.assert_array_equal(s.run(squares, {n: nv}), np.arange(nv, dtype=np.float32) ** 2)


def test_bad_arguments_are_clear_errors():
    g = cf.Graph()
    with g.as_default():
        cell = rnn.LSTMCell(3)
        with pytest.raises(cf.errors.InvalidArgumentError, match="rank 3"):
            rnn.dynamic_rnn(cell, cf.placeholder(cf.float32, (2, 3)))
        with pytest.raises(cf.errors.InvalidArgumentError, match="depth"):
            rnn.dynamic_rnn(cell, cf.placeholder(cf.float32, (2, 3, None)))
        with pytest.raises(cf.errors.InvalidArgumentError, match="sequence_length"):
            rnn.dynamic_rnn(cell, cf.placeholder(cf.float32, (2, 3, 4)), sequence_length=cf.constant([1.0, 2.0]))
        with pytest.raises(cf.errors.InvalidArgumentError, match="num_units"):
            rnn.LSTMCell(0)
        rnn.dynamic_rnn(cell, cf.placeholder(cf.float32, (2, 3, 4)))
        with pytest.raises(cf.errors.InvalidArgumentError, match="depth 4"):
            rnn.dynamic_rnn(cell, cf.placeholder(cf.float32, (2, 3, 5)))


def test_char_lm_loss_falls_with_adam():
    from collflow.data import text
    corpus = text.load_stdlib_corpus(modules=("textwrap",), max_chars=20000)
    x_tr, y_tr = corpus.windows("train", seq_len=20)
    g = cf.Graph()
    with g.as_default():
        m = rnn.build_char_lm(corpus.vocab_size, embed_dim=16, hidden=32, seq_len=20,
                              optimizer=cf.train.AdamOptimizer(0.01), seed=0)
        init = cf.global_variables_initializer()
    assert m.logits.shape.as_list() == [None, 20, corpus.vocab_size]
    it = corpus.batches("train", batch_size=16, seq_len=20, shuffle=True, seed=0, num_epochs=None)
    with cf.Session(graph=g) as s:
        s.run(init)
        losses = []
        for _ in range(30):
            xb, yb = next(it)
            loss, ppl, _ = s.run([m.loss, m.perplexity, m.train_op], {m.x: xb, m.y: yb})
            np.testing.assert_allclose(ppl, np.exp(loss), rtol=1e-5)
            losses.append(float(loss))
        assert s.run(m.global_step) == 30
    # starts near log(vocab) (uniform guess) and falls well below it
    assert abs(losses[0] - np.log(corpus.vocab_size)) < 0.3
    assert np.mean(losses[-5:]) < losses[0] - 0.8, losses
