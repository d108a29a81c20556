"""TF1's RNN cells and runners (collflow/nn/rnn_cells.py, collflow/nn/rnn.py): values against
NumPy re-implementations of TensorFlow 1.x's formulas, gradients against finite differences,
TF1's variable names and sharing, dropout semantics, and clear errors."""
import os

import numpy as np
import pytest

import collflow as cf
from collflow.nn import rnn
from gradcheck import Case, check_case

rnn_cell = cf.nn.rnn_cell


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def np_lstm_step(x, c, h, kernel, bias, forget_bias=1.0, peep=None, cell_clip=None, proj=None, proj_clip=None):
    """One step of TF1's LSTMCell (gates i, j, f, o; optional peepholes, clipping, projection)."""
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ kernel + bias, 4, axis=1)
    if peep is not None:
        wf, wi, wo = peep
        c_new = _sig(f + forget_bias + wf * c) * c + _sig(i + wi * c) * np.tanh(j)
    else:
        c_new = c * _sig(f + forget_bias) + _sig(i) * np.tanh(j)
    if cell_clip is not None:
        c_new = np.clip(c_new, -cell_clip, cell_clip)
    m = _sig(o + (peep[2] * c_new if peep is not None else 0.0)) * np.tanh(c_new)
    if proj is not None:
        m = m @ proj
        if proj_clip is not None:
            m = np.clip(m, -proj_clip, proj_clip)
    return c_new, m


def np_gru_step(x, h, gk, gb, ck, cb):
    r, u = np.split(_sig(np.concatenate([x, h], 1) @ gk + gb), 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ ck + cb)
    return u * h + (1 - u) * c


def np_run(step, x, state, lengths=None):
    """A step function over batch-major x [B, T, D] with TF1's sequence_length semantics."""
    outs = []
    for t in range(x.shape[1]):
        out, new = step(x[:, t], state)
        keep = np.ones((x.shape[0], 1), bool) if lengths is None else (t < np.asarray(lengths))[:, None]
        state = tuple(np.where(keep, a, b) for a, b in zip(new, state))
        outs.append(np.where(keep, out, 0.0))
    return np.stack(outs, 1), state


def _session_values(g, fetches, feed):
    with cf.Session(graph=g) as s:
        s.run(cf.global_variables_initializer())
        return s.run(fetches, feed)


# -- values against NumPy --------------------------------------------------------------------

@pytest.mark.parametrize("runner", ["dynamic", "static", "call"])
def test_lstm_peepholes_clip_projection_matches_numpy(runner):
    rng = np.random.default_rng(0)
    xv = rng.normal(size=(3, 4, 2))
    lv = [4, 2, 0]
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (3, 4, 2))
        cell = rnn_cell.LSTMCell(5, use_peepholes=True, cell_clip=0.4, num_proj=3, proj_clip=0.3, forget_bias=0.5,
                                 initializer=cf.initializers.random_uniform(-1.0, 1.0, seed=1))
        if runner == "dynamic":
            out, st = cf.nn.dynamic_rnn(cell, x, sequence_length=lv, dtype=cf.float64)
        elif runner == "static":
            outs, st = cf.nn.static_rnn(cell, cf.unstack(x, axis=1), sequence_length=lv, dtype=cf.float64)
            out = cf.stack(outs, axis=1)
        else:  # plain calls of the cell, no sequence lengths
            lv = None
            st = cell.zero_state(3, cf.float64)
            outs = []
            for t in range(4):
                o, st = cell(x[:, t], st)
                outs.append(o)
            out = cf.stack(outs, axis=1)
        assert cell.state_size == rnn_cell.LSTMStateTuple(5, 3) and cell.output_size == 3
        assert out.shape.as_list() == [3, 4, 3]
        names = [v.name for v in cell.variables]
    prefix = "rnn/lstm_cell/" if runner != "call" else "lstm_cell/"
    assert names == [prefix + n + ":0" for n in ("kernel", "bias", "w_f_diag", "w_i_diag", "w_o_diag",
                                                 "projection/kernel")]
    o, c, h, (k, b, wf, wi, wo, pk) = _session_values(g, [out, st.c, st.h, cell.variables], {x: xv})
    assert k.shape == (2 + 3, 20) and pk.shape == (5, 3) and not b.any()

    def step(xt, s):
        c_new, m = np_lstm_step(xt, s[0], s[1], k, b, 0.5, (wf, wi, wo), 0.4, pk, 0.3)
        return m, (c_new, m)
    ro, (rc, rh) = np_run(step, xv, (np.zeros((3, 5)), np.zeros((3, 3))), lv)
    np.testing.assert_allclose(o, ro, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c, rc, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, rh, rtol=1e-12, atol=1e-12)
    assert np.abs(c).max() <= 0.4 + 1e-12 and np.abs(o).max() <= 0.3 + 1e-12


@pytest.mark.parametrize("state_is_tuple", [True, False])
def test_basic_lstm_cell_matches_numpy_and_non_tuple_state(state_is_tuple):
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(2, 3, 4))
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (None, None, 4))
        cell = rnn_cell.BasicLSTMCell(3, forget_bias=0.25, state_is_tuple=state_is_tuple)
        out, st = cf.nn.dynamic_rnn(cell, x, dtype=cf.float64)
    assert cell.state_size == (rnn_cell.LSTMStateTuple(3, 3) if state_is_tuple else 6)
    assert [v.name for v in cell.variables] == ["rnn/basic_lstm_cell/kernel:0", "rnn/basic_lstm_cell/bias:0"]
    o, s, (k, b) = _session_values(g, [out, st, cell.variables], {x: xv})

    def step(xt, s):
        c_new, m = np_lstm_step(xt, s[0], s[1], k, b, 0.25)
        return m, (c_new, m)
    ro, (rc, rh) = np_run(step, xv, (np.zeros((2, 3)), np.zeros((2, 3))))
    np.testing.assert_allclose(o, ro, rtol=1e-12, atol=1e-12)
    if state_is_tuple:
        np.testing.assert_allclose(s.c, rc, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(s, np.concatenate([rc, rh], 1), rtol=1e-12, atol=1e-12)


class _PerStepGRU(rnn_cell.GRUCell):
    def input_projection(self):
        return None


@pytest.mark.parametrize("cls", [rnn_cell.GRUCell, _PerStepGRU], ids=["projected", "per-step"])
def test_gru_cell_matches_numpy_names_and_gate_bias(cls):
    rng = np.random.default_rng(2)
    xv = rng.normal(size=(3, 5, 2))
    lv = [5, 3, 1]
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (3, None, 2))
        cell = cls(4, name="gru")
        out, st = cf.nn.dynamic_rnn(cell, x, sequence_length=lv, dtype=cf.float64)
    assert [v.name for v in cell.variables] == ["rnn/gru/gates/kernel:0", "rnn/gru/gates/bias:0",
                                                 "rnn/gru/candidate/kernel:0", "rnn/gru/candidate/bias:0"]
    o, h, (gk, gb, ck, cb) = _session_values(g, [out, st, cell.variables], {x: xv})
    assert (gb == 1.0).all() and not cb.any()  # TF1: gates bias starts at 1, candidate bias at 0

    def step(xt, s):
        h_new = np_gru_step(xt, s[0], gk, gb, ck, cb)
        return h_new, (h_new,)
    ro, (rh,) = np_run(step, xv, (np.zeros((3, 4)),), lv)
    np.testing.assert_allclose(o, ro, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, rh, rtol=1e-12, atol=1e-12)


def test_multi_rnn_cell_stacks_layers_with_tf1_names():
    rng = np.random.default_rng(3)
    xv = rng.normal(size=(2, 3, 3))
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (2, 3, 3))
        cell = rnn_cell.MultiRNNCell([rnn_cell.LSTMCell(4), rnn_cell.GRUCell(2)])
        assert cell.state_size == (rnn_cell.LSTMStateTuple(4, 4), 2) and cell.output_size == 2
        out, st = cf.nn.dynamic_rnn(cell, x, dtype=cf.float64)
    assert [v.name for v in cell.variables] == [
        "rnn/multi_rnn_cell/cell_0/lstm_cell/kernel:0", "rnn/multi_rnn_cell/cell_0/lstm_cell/bias:0",
        "rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel:0", "rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias:0",
        "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel:0", "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias:0"]
    o, (s0, s1), (k, b, gk, gb, ck, cb) = _session_values(g, [out, st, cell.variables], {x: xv})
    assert k.shape == (3 + 4, 16) and gk.shape == (4 + 2, 4)  # layer 1 reads layer 0's 4 outputs

    def step(xt, s):
        c_new, m = np_lstm_step(xt, s[0], s[1], k, b)
        h2 = np_gru_step(m, s[2], gk, gb, ck, cb)
        return h2, (c_new, m, h2)
    ro, (rc, rh, rh2) = np_run(step, xv, (np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 2))))
    np.testing.assert_allclose(o, ro, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s0.c, rc, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s1, rh2, rtol=1e-12, atol=1e-12)


def test_multi_rnn_cell_non_tuple_state():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (2, 3, 3))
        cell = rnn_cell.MultiRNNCell([rnn_cell.BasicRNNCell(2), rnn_cell.GRUCell(3)], state_is_tuple=False)
        assert cell.state_size == 5
        out, st = cf.nn.dynamic_rnn(cell, x, dtype=cf.float64)
    xv = np.random.default_rng(4).normal(size=(2, 3, 3))
    o, s, (k, b, gk, gb, ck, cb) = _session_values(g, [out, st, cell.variables], {x: xv})
    h1, h2 = np.zeros((2, 2)), np.zeros((2, 3))
    for t in range(3):
        h1 = np.tanh(np.concatenate([xv[:, t], h1], 1) @ k + b)
        h2 = np_gru_step(h1, h2, gk, gb, ck, cb)
    np.testing.assert_allclose(s, np.concatenate([h1, h2], 1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(o[:, -1], h2, rtol=1e-12, atol=1e-12)


def test_static_rnn_equals_dynamic_rnn_and_shares_variables():
    rng = np.random.default_rng(5)
    xv = rng.normal(size=(3, 4, 2))
    lv = np.array([4, 1, 3], np.int32)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (3, 4, 2))
        lengths = cf.placeholder(cf.int32, (3,))
        cell = rnn_cell.LSTMCell(3)
        outs, st = cf.nn.static_rnn(cell, cf.unstack(x, axis=1), sequence_length=lengths, dtype=cf.float64)
        with cf.variable_scope("again"):
            dyn, dst = cf.nn.dynamic_rnn(cell, x, sequence_length=lengths)  # the same cell: its variables
        assert len(outs) == 4 and outs[0].shape.as_list() == [3, 3]
        assert len(cf.global_variables()) == 2
        loss = cf.add_n([cf.reduce_sum(o * o) for o in outs]) + cf.reduce_sum(st.h)
        loss_d = cf.reduce_sum(dyn * dyn) + cf.reduce_sum(dst.h)
        grads = cf.gradients(loss, [x] + cell.variables)
        grads_d = cf.gradients(loss_d, [x] + cell.variables)
    a, b = _session_values(g, [[cf.stack(outs, 1), st.c] + grads, [dyn, dst.c] + grads_d], {x: xv, lengths: lv})
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)
    assert not a[0][1, 1:].any()  # zeros past length 1


def _np_reverse_within(x, lengths):
    out = x.copy()
    for b, n in enumerate(lengths):
        out[b, :n] = x[b, :n][::-1]
    return out


@pytest.mark.parametrize("with_lengths", [True, False])
def test_bidirectional_dynamic_rnn_reverses_each_sequence_within_its_length(with_lengths):
    rng = np.random.default_rng(6)
    xv = rng.normal(size=(3, 5, 2))
    lv = [5, 2, 3] if with_lengths else [5, 5, 5]
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (3, 5, 2))
        fw, bw = rnn_cell.BasicRNNCell(3), rnn_cell.GRUCell(2)
        (of, ob), (sf, sb) = cf.nn.bidirectional_dynamic_rnn(fw, bw, x, sequence_length=lv if with_lengths else None,
                                                             dtype=cf.float64)
        # time-major gives the same numbers
        (of_t, ob_t), _ = cf.nn.bidirectional_dynamic_rnn(fw, bw, cf.transpose(x, (1, 0, 2)),
                                                          sequence_length=lv if with_lengths else None,
                                                          dtype=cf.float64, time_major=True)
    assert [v.name for v in fw.variables] == ["bidirectional_rnn/fw/basic_rnn_cell/kernel:0",
                                              "bidirectional_rnn/fw/basic_rnn_cell/bias:0"]
    assert bw.variables[0].name == "bidirectional_rnn/bw/gru_cell/gates/kernel:0"
    o_f, o_b, s_f, s_b, o_ft, o_bt, (k, b), (gk, gb, ck, cb) = _session_values(
        g, [of, ob, sf, sb, of_t, ob_t, fw.variables, bw.variables], {x: xv})
    rf, (rsf,) = np_run(lambda xt, s: (lambda h: (h, (h,)))(np.tanh(np.concatenate([xt, s[0]], 1) @ k + b)),
                        xv, (np.zeros((3, 3)),), lv)
    rb_rev, (rsb,) = np_run(lambda xt, s: (lambda h: (h, (h,)))(np_gru_step(xt, s[0], gk, gb, ck, cb)),
                            _np_reverse_within(xv, lv), (np.zeros((3, 2)),), lv)
    np.testing.assert_allclose(o_f, rf, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(o_b, _np_reverse_within(rb_rev, lv), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s_f, rsf, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s_b, rsb, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(o_ft, o_f.transpose(1, 0, 2), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(o_bt, o_b.transpose(1, 0, 2), rtol=1e-12, atol=1e-12)


def test_static_bidirectional_rnn_concatenates_fw_and_bw():
    rng = np.random.default_rng(7)
    xv = rng.normal(size=(2, 4, 3))
    lv = [4, 2]
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (2, 4, 3))
        fw, bw = rnn_cell.BasicRNNCell(2), rnn_cell.BasicRNNCell(3)
        outs, sf, sb = cf.contrib.rnn.static_bidirectional_rnn(fw, bw, cf.unstack(x, axis=1), sequence_length=lv,
                                                                dtype=cf.float64)
        assert len(outs) == 4 and outs[0].shape.as_list() == [2, 5]
    assert fw.variables[0].name == "bidirectional_rnn/fw/basic_rnn_cell/kernel:0"
    assert bw.variables[0].name == "bidirectional_rnn/bw/basic_rnn_cell/kernel:0"
    o, s_b, (kf, bf), (kb, bb) = _session_values(g, [cf.stack(outs, 1), sb, fw.variables, bw.variables], {x: xv})

    def basic(k, b):
        return lambda xt, s: (lambda h: (h, (h,)))(np.tanh(np.concatenate([xt, s[0]], 1) @ k + b))
    rf, _ = np_run(basic(kf, bf), xv, (np.zeros((2, 2)),), lv)
    rb, (rsb,) = np_run(basic(kb, bb), _np_reverse_within(xv, lv), (np.zeros((2, 3)),), lv)
    np.testing.assert_allclose(o, np.concatenate([rf, _np_reverse_within(rb, lv)], 2), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s_b, rsb, rtol=1e-12, atol=1e-12)


def test_reverse_ops_values():
    xv = np.arange(24.0).reshape(2, 3, 4)
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(xv)
        r = cf.reverse(x, [0, 2])
        rs = cf.reverse_sequence(x, [2, 3], seq_axis=1, batch_axis=0)
        rs_t = cf.reverse_sequence(x, cf.constant([1, 0, 4], cf.int64), seq_axis=2, batch_axis=1)
        bad = cf.reverse_sequence(x, [4, 1], seq_axis=1)
        with pytest.raises(cf.InvalidArgumentError, match="batch dimension"):
            cf.reverse_sequence(x, [1, 2, 3], seq_axis=1)
        with pytest.raises(cf.InvalidArgumentError, match="must differ"):
            cf.reverse_sequence(x, [1, 2], seq_axis=0, batch_axis=0)
    with cf.Session(graph=g) as s:
        a, b, c = s.run([r, rs, rs_t])
        with pytest.raises(cf.InvalidArgumentError, match=r"seq_lengths must lie in \[0, 3\]"):
            s.run(bad)
    np.testing.assert_array_equal(a, xv[::-1, :, ::-1])
    want = xv.copy()
    want[0, :2] = xv[0, 1::-1]
    want[1] = xv[1, ::-1]
    np.testing.assert_array_equal(b, want)
    want_t = xv.copy()
    want_t[:, 2] = xv[:, 2, ::-1]
    np.testing.assert_array_equal(c, want_t)  # lengths 1 and 0 leave rows 0 and 1 as they are


# -- variable naming and sharing -------------------------------------------------------------

def test_same_cell_twice_shares_and_new_cell_needs_reuse():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2, 3, 4))
        cell = rnn_cell.LSTMCell(5)
        cf.nn.dynamic_rnn(cell, x, dtype=cf.float32)
        with pytest.raises(ValueError, match="rnn/lstm_cell/kernel already exists"):
            cf.nn.dynamic_rnn(rnn_cell.LSTMCell(5), x, dtype=cf.float32)  # TF1's error
        with cf.variable_scope(cf.get_variable_scope(), reuse=True):
            shared = rnn_cell.LSTMCell(5)
            cf.nn.dynamic_rnn(shared, x, dtype=cf.float32)
        assert shared.variables[0] is cell.variables[0]
        cf.nn.dynamic_rnn(cell, x, dtype=cf.float32, scope="other")  # the cell keeps its scope
        assert [v.name for v in cf.global_variables()] == ["rnn/lstm_cell/kernel:0", "rnn/lstm_cell/bias:0"]
        # TF1 (checked against TF): re-entering the cell's scope object (under "other") leaves
        # rnn/lstm_cell counted, so the next unnamed cell in "rnn" is rnn/lstm_cell_1
        cf.nn.dynamic_rnn(rnn_cell.LSTMCell(5), x, dtype=cf.float32)
        assert [v.name for v in cf.global_variables()][2:] == ["rnn/lstm_cell_1/kernel:0", "rnn/lstm_cell_1/bias:0"]
        # two layers in one scope: unique default names, as TF1's lstm_cell, lstm_cell_1
        with cf.variable_scope("two"):
            a, b = rnn_cell.GRUCell(2), rnn_cell.GRUCell(2)
            y = cf.placeholder(cf.float32, (2, 2))
            a(y, a.zero_state(2, cf.float32))
            b(y, b.zero_state(2, cf.float32))
        assert a.variables[0].name == "two/gru_cell/gates/kernel:0"
        assert b.variables[0].name == "two/gru_cell_1/gates/kernel:0"
        with cf.variable_scope("auto", reuse=cf.AUTO_REUSE):
            c1 = rnn_cell.BasicRNNCell(2, name="shared_rnn")
            c1(y, c1.zero_state(2, cf.float32))
        with cf.variable_scope("auto", reuse=cf.AUTO_REUSE):
            c2 = rnn_cell.BasicRNNCell(2, name="shared_rnn")
            c2(y, c2.zero_state(2, cf.float32))
        assert c2.variables[0] is c1.variables[0] and c1.variables[0].name == "auto/shared_rnn/kernel:0"
        # a cell built with reuse=True finds the variables of its scope
        with cf.variable_scope("two"):
            again = rnn_cell.GRUCell(2, reuse=True)
            again(y, again.zero_state(2, cf.float32))
        assert again.variables[0] is a.variables[0]


def test_dropout_wrapper_adds_no_scope_and_scope_initializer_applies_to_kernels():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2, 3, 4))
        with cf.variable_scope("m", initializer=cf.initializers.constant(0.5)):
            cells = [rnn_cell.DropoutWrapper(rnn_cell.LSTMCell(3), output_keep_prob=0.5) for _ in range(2)]
            cell = rnn_cell.MultiRNNCell(cells)
            cf.nn.dynamic_rnn(cell, x, dtype=cf.float32)
    assert [v.name for v in cell.variables] == [
        "m/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel:0", "m/rnn/multi_rnn_cell/cell_0/lstm_cell/bias:0",
        "m/rnn/multi_rnn_cell/cell_1/lstm_cell/kernel:0", "m/rnn/multi_rnn_cell/cell_1/lstm_cell/bias:0"]
    k, b = _session_values(g, cell.variables[:2], {})
    assert (k == 0.5).all() and not b.any()  # the scope's initializer for kernels, zeros for biases


def test_cell_variables_are_made_outside_loops_and_seeded_weights_repeat():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (4, 2, 3))
        cell = rnn_cell.GRUCell(2, seed=5)
        out = cf.scan(lambda h, xt: cell(xt, h)[0], x, initializer=cf.zeros([2, 2], cf.float64))
        assert all(v.op._ctx is None for v in cell.variables)
        twin = rnn_cell.GRUCell(2, seed=5, name="twin")
        twin.build(3, cf.float64)
    a, b = _session_values(g, [cell.variables, twin.variables], {})
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert out.shape.as_list() == [4, 2, 2]


def test_contrib_rnn_and_rnn_cell_are_the_core_classes():
    for name in ("BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell", "DropoutWrapper",
                 "LSTMStateTuple", "RNNCell"):
        assert getattr(cf.contrib.rnn, name) is getattr(rnn_cell, name) is getattr(rnn, name)
    assert cf.contrib.rnn.static_rnn is cf.nn.static_rnn
    import collflow.compat.v1 as tf
    assert tf.contrib.rnn.LSTMCell is rnn_cell.LSTMCell and tf.nn.rnn_cell.GRUCell is rnn_cell.GRUCell


def test_tf1_style_user_cell_subclass():
    """A cell written TF1's way (build with add_variable, call) gets its scope and reuse."""
    class Scaled(rnn_cell.RNNCell):
        def __init__(self, n):
            super().__init__()
            self._n = n

        @property
        def state_size(self):
            return self._n

        @property
        def output_size(self):
            return self._n

        def build(self, inputs_shape):
            self._w = self.add_variable("w", [int(inputs_shape[-1]), self._n],
                                        initializer=cf.initializers.constant(0.5))
            self.built = True

        def call(self, inputs, state):
            h = cf.matmul(inputs, self._w) + state
            return h, h
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (2, 3, 2))
        cell = Scaled(2)
        out, st = cf.nn.dynamic_rnn(cell, x, dtype=cf.float64)
    assert [v.name for v in cell.variables] == ["rnn/scaled/w:0"]
    xv = np.arange(12.0).reshape(2, 3, 2)
    o = _session_values(g, out, {x: xv})
    np.testing.assert_allclose(o, np.cumsum(xv.sum(2, keepdims=True) * 0.5 * np.ones((1, 1, 2)), 1))


# -- dropout ---------------------------------------------------------------------------------

class _Ident(rnn_cell.RNNCell):
    """output = inputs; state = LSTMStateTuple(inputs, inputs): makes dropout masks visible."""

    def __init__(self, n):
        super().__init__()
        self._n = n

    @property
    def state_size(self):
        return rnn_cell.LSTMStateTuple(self._n, self._n)

    @property
    def output_size(self):
        return self._n

    def call(self, inputs, state):
        return inputs, rnn_cell.LSTMStateTuple(inputs, inputs)


def test_dropout_wrapper_masks_output_and_state_h_but_not_c():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (50, 6, 8))
        cell = rnn_cell.DropoutWrapper(_Ident(8), output_keep_prob=0.5, state_keep_prob=0.25, seed=3)
        out, st = cf.nn.dynamic_rnn(cell, x)
        gx = cf.gradients(cf.reduce_sum(out), x)[0]
        same = rnn_cell.DropoutWrapper(_Ident(8), input_keep_prob=1.0, output_keep_prob=1.0)
        out1, _ = cf.nn.dynamic_rnn(same, x, scope="plain")
        kp = cf.placeholder(cf.float64, ())  # TF1's usual switch between training and evaluation
        fed, _ = cf.nn.dynamic_rnn(rnn_cell.DropoutWrapper(_Ident(8), input_keep_prob=kp), x, scope="fed")
    xv = np.random.default_rng(8).uniform(1.0, 2.0, size=(50, 6, 8))
    with cf.Session(graph=g) as s:
        o, c, h, grad, o1 = s.run([out, st.c, st.h, gx, out1], {x: xv})
        o_again = s.run(out, {x: xv})
        np.testing.assert_array_equal(s.run(fed, {x: xv, kp: 1.0}), xv)
        assert 0.15 < (s.run(fed, {x: xv, kp: 0.2}) > 0).mean() < 0.25
    ratio = o / xv
    assert set(np.unique(ratio).round(12)) <= {0.0, 2.0}          # dropped, or kept and scaled by 1/0.5
    assert 0.4 < (ratio > 0).mean() < 0.6
    assert not np.array_equal(o, o_again)                         # a fresh mask every run
    np.testing.assert_allclose(grad, ratio, rtol=1e-12)            # the gradient uses the forward mask
    assert len(np.unique(ratio[:, 0] > 0, axis=0)) > 1             # and a fresh one every step
    np.testing.assert_array_equal(c, xv[:, -1])                    # the memory c is never dropped
    assert set(np.unique(h / xv[:, -1]).round(12)) <= {0.0, 4.0}  # h is, with 1/state_keep_prob
    np.testing.assert_array_equal(o1, xv)                          # keep_prob 1.0: no dropout


def test_variational_dropout_uses_one_mask_for_every_step():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (4, 7, 40))
        cell = rnn_cell.DropoutWrapper(_Ident(40), input_keep_prob=0.5, variational_recurrent=True, input_size=40,
                                       dtype=cf.float64, seed=1)
        out, _ = cf.nn.dynamic_rnn(cell, x)
        with pytest.raises(cf.InvalidArgumentError, match="needs dtype"):
            rnn_cell.DropoutWrapper(_Ident(2), input_keep_prob=0.5, variational_recurrent=True, input_size=2)
        with pytest.raises(cf.InvalidArgumentError, match="needs input_size"):
            rnn_cell.DropoutWrapper(_Ident(2), input_keep_prob=0.5, variational_recurrent=True, dtype=cf.float64)
    xv = np.ones((4, 7, 40))
    with cf.Session(graph=g) as s:
        o, o2 = s.run(out, {x: xv}), s.run(out, {x: xv})
    assert set(np.unique(o)) <= {0.0, 2.0}
    assert (o == o[:1, :1]).all()             # one [1, 40] mask: every step, every batch entry
    assert 0 < (o[0, 0] > 0).sum() < 40
    assert not np.array_equal(o, o2)          # redrawn per run


# -- gradients against finite differences ----------------------------------------------------

def _inject(cell, depth, **weights):
    cell.built, cell.input_depth, cell.dtype = True, depth, cf.float64
    for k, v in weights.items():
        setattr(cell, k, v)
    return cell


def _gru_fd(x, h0, gk, gb, ck, cb, fused=True):
    cell = _inject(rnn_cell.GRUCell(2), 3, _gate_kernel=gk, _gate_bias=gb, _candidate_kernel=ck, _candidate_bias=cb)
    if not fused:
        cell.fused_sequence = lambda: None  # the per-step loop
    out, st = cf.nn.dynamic_rnn(cell, x, sequence_length=cf.constant([3, 1]), initial_state=h0)
    return [out, st]


def _gru_loop_fd(x, h0, gk, gb, ck, cb):
    return _gru_fd(x, h0, gk, gb, ck, cb, fused=False)


def _peephole_fd(x, k, b, wf, wi, wo, pk, fused=True):
    cell = _inject(rnn_cell.LSTMCell(3, use_peepholes=True, num_proj=2), 2, _kernel=k, _bias=b, _w_f_diag=wf,
                   _w_i_diag=wi, _w_o_diag=wo, _proj_kernel=pk)
    if not fused:
        cell.fused_sequence = lambda: None  # the per-step loop
    outs, st = cf.nn.static_rnn(cell, cf.unstack(x, axis=1), dtype=cf.float64, sequence_length=cf.constant([2, 3]))
    return outs + [st.c]


def _bidi_fd(x, k1, b1, k2, b2):
    fw = _inject(rnn_cell.BasicRNNCell(2), 2, _kernel=k1, _bias=b1)
    bw = _inject(rnn_cell.BasicRNNCell(2), 2, _kernel=k2, _bias=b2)
    (of, ob), (sf, sb) = cf.nn.bidirectional_dynamic_rnn(fw, bw, x, sequence_length=cf.constant([3, 2]),
                                                         dtype=cf.float64)
    return [of, ob, sb]


@pytest.mark.parametrize("case", [
    Case("BlockGRU", _gru_fd, [(2, 3, 3), (2, 2), (5, 4), (4,), (5, 2), (2,)], low=-1.0, high=1.0,
         id="gru-dynamic-seqlen"),
    Case("TensorArrayReadV3", _gru_loop_fd, [(2, 3, 3), (2, 2), (5, 4), (4,), (5, 2), (2,)], low=-1.0, high=1.0,
         id="gru-dynamic-seqlen-loop"),
    Case("BlockLSTM", _peephole_fd, [(2, 3, 2), (4, 12), (12,), (3,), (3,), (3,), (3, 2)], low=-1.0, high=1.0,
         id="lstm-peephole-projection-static"),
    Case("Select", lambda *a: _peephole_fd(*a, fused=False), [(2, 3, 2), (4, 12), (12,), (3,), (3,), (3,), (3, 2)],
         low=-1.0, high=1.0, id="lstm-peephole-projection-static-loop"),
    Case("ReverseSequence", _bidi_fd, [(2, 3, 2), (4, 2), (2,), (4, 2), (2,)], low=-1.0, high=1.0,
         id="bidirectional-dynamic"),
], ids=str)
def test_cell_gradients_match_finite_differences(case):
    check_case(case)


# -- errors ----------------------------------------------------------------------------------

def test_bad_arguments_are_clear_errors():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2, 3, 4))
        y = cf.placeholder(cf.float32, (2, 4))
        with pytest.raises(TypeError, match="list or tuple"):
            rnn_cell.MultiRNNCell(rnn_cell.LSTMCell(2))
        with pytest.raises(ValueError, match="at least one cell"):
            rnn_cell.MultiRNNCell([])
        with pytest.raises(ValueError, match="state_is_tuple"):
            rnn_cell.MultiRNNCell([rnn_cell.LSTMCell(2)], state_is_tuple=False)
        with pytest.raises(cf.InvalidArgumentError, match="output_keep_prob must be between 0 and 1"):
            rnn_cell.DropoutWrapper(rnn_cell.LSTMCell(2), output_keep_prob=1.5)
        with pytest.raises(TypeError, match="not an RNNCell"):
            rnn_cell.DropoutWrapper(3)
        with pytest.raises(cf.InvalidArgumentError, match="num_units"):
            rnn_cell.GRUCell(0)
        with pytest.raises(TypeError, match="unexpected keyword"):
            rnn_cell.LSTMCell(2, peepholes=True)
        with pytest.raises(TypeError, match="list of"):
            cf.nn.static_rnn(rnn_cell.LSTMCell(2), x, dtype=cf.float32)
        with pytest.raises(ValueError, match="must not be empty"):
            cf.nn.static_rnn(rnn_cell.LSTMCell(2), [], dtype=cf.float32)
        with pytest.raises(cf.InvalidArgumentError, match="rank 2"):
            cf.nn.static_rnn(rnn_cell.LSTMCell(2), [x], dtype=cf.float32)
        lstm = rnn_cell.LSTMCell(3)
        with pytest.raises(cf.InvalidArgumentError, match="LSTMStateTuple"):
            lstm(y, y)
        multi = rnn_cell.MultiRNNCell([rnn_cell.GRUCell(2), rnn_cell.GRUCell(2)])
        with pytest.raises(cf.InvalidArgumentError, match="tuple of length 2"):
            multi(y, multi.zero_state(2, cf.float32)[0])
        with pytest.raises(cf.InvalidArgumentError, match="depth 4, called with depth 5"):
            lstm(cf.placeholder(cf.float32, (2, 5)), lstm.zero_state(2, cf.float32))
        with pytest.raises(cf.InvalidArgumentError, match="depth"):
            rnn_cell.GRUCell(2)(cf.placeholder(cf.float32, (2, None)), cf.zeros([2, 2]))


def test_dynamic_rnn_runs_a_plain_lstm_as_one_fused_op_with_the_loops_answer():
    """A plain LSTMCell without sequence_length runs as BlockLSTM (no while loop); its outputs,
    final state and gradients equal the per-step loop's; an unknown time dimension works."""
    rng = np.random.default_rng(3)
    xv = rng.normal(size=(3, 7, 4))
    results = []
    for fused in (True, False):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, (3, None, 4))
            cell = cf.nn.rnn_cell.LSTMCell(5, initializer=cf.initializers.random_uniform(-0.5, 0.5, seed=2))
            if not fused:
                cell.fused_sequence = lambda: None
            out, st = cf.nn.dynamic_rnn(cell, x, dtype=cf.float64)
            loss = cf.reduce_sum(out * out) + cf.reduce_sum(st.c * 0.3) + cf.reduce_sum(st.h)
            grads = cf.gradients(loss, [x] + cf.trainable_variables())
            types = {op.type for op in g.get_operations()}
            assert ("BlockLSTM" in types) == fused and ("Exit" in types) == (not fused)
            init = cf.global_variables_initializer()
        with cf.Session(graph=g) as s:
            s.run(init)
            results.append(s.run([out, st.c, st.h] + grads, {x: xv}))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("initial", [False, True])
def test_dynamic_rnn_runs_a_gru_as_one_fused_op_with_the_loops_answer(initial):
    """A GRUCell without sequence_length runs as BlockGRU (no while loop); its outputs, final
    state and the gradients of every input and variable (and of a given initial state) equal
    the per-step loop's; an unknown time dimension works."""
    rng = np.random.default_rng(4)
    xv, h0v = rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 5))
    results = []
    for fused in (True, False):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, (3, None, 4))
            h0 = cf.constant(h0v) if initial else None
            cell = cf.nn.rnn_cell.GRUCell(5, kernel_initializer=cf.initializers.random_uniform(-0.6, 0.6, seed=5),
                                          bias_initializer=cf.initializers.random_uniform(-0.5, 0.5, seed=6))
            if not fused:
                cell.fused_sequence = lambda: None
            out, st = cf.nn.dynamic_rnn(cell, x, initial_state=h0, dtype=cf.float64)
            loss = cf.reduce_sum(out * out * cf.range(1.0, 6.0, dtype=cf.float64)) + cf.reduce_sum(st * 0.3)
            grads = cf.gradients(loss, [x] + cf.trainable_variables() + ([h0] if initial else []))
            types = {op.type for op in g.get_operations()}
            assert ("BlockGRU" in types) == fused and ("Exit" in types) == (not fused)
            init = cf.global_variables_initializer()
        with cf.Session(graph=g) as s:
            s.run(init)
            results.append(s.run([out, st] + grads, {x: xv}))
    assert len(results[0]) == (8 if initial else 7)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind,blas_steps", [("lstm", False), ("lstm", True), ("lstm-peephole-clip", False),
                                             ("lstm-peephole-clip", True), ("lstm-projection", False),
                                             ("lstm-projection", True), ("gru", False)])
@pytest.mark.parametrize("time_major", [False, True])
def test_fused_rnns_with_sequence_length_give_the_loops_answer(kind, blas_steps, time_major, monkeypatch):
    """With sequence_length the fused ops run too: outputs (zeros past each length), the final
    state (each row's at its own length; a row of length 0 keeps the initial state) and every
    gradient equal the per-step loop's; an unknown time dimension works.  blas_steps: BlockLSTM's
    products through NumPy's BLAS one call a step (kernels/blas.py stepper), else np.matmul."""
    from collflow.kernels import blas
    made = []
    if blas_steps:
        if not blas.available():
            pytest.skip("NumPy's BLAS cannot be called directly here")
        if os.environ.get("COLLFLOW_TEST_DEVICE") in ("gpu", "sim"):
            pytest.skip("the BLAS step calls are the CPU kernels' path; this run's sessions are on a device")
        real = blas.stepper
        monkeypatch.setattr(blas, "stepper", lambda *a, **k: made.append(1) or real(*a, **k))
    else:
        monkeypatch.setattr(blas, "stepper", lambda *a, **k: None)
        monkeypatch.setattr(blas, "transposer", lambda *a, **k: None)
    rng = np.random.default_rng(7)
    xv, lens = rng.normal(size=(4, 6, 3)), np.array([6, 2, 0, 4], np.int32)
    results = []
    for fused in (True, False):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, (4, None, 3))
            sl = cf.placeholder(cf.int32, (4,))
            init_u = cf.initializers.random_uniform(-0.6, 0.6, seed=1)
            cell = (cf.nn.rnn_cell.LSTMCell(5, initializer=init_u) if kind == "lstm" else
                    cf.nn.rnn_cell.LSTMCell(5, initializer=init_u, use_peepholes=True, cell_clip=0.35)
                    if kind == "lstm-peephole-clip" else
                    cf.nn.rnn_cell.LSTMCell(5, initializer=init_u, use_peepholes=True, num_proj=3, proj_clip=0.3)
                    if kind == "lstm-projection" else
                    cf.nn.rnn_cell.GRUCell(5, kernel_initializer=init_u,
                                           bias_initializer=cf.initializers.random_uniform(-0.5, 0.5, seed=2)))
            if not fused:
                cell.fused_sequence = lambda: None
            out, st = cf.nn.dynamic_rnn(cell, cf.transpose(x, (1, 0, 2)) if time_major else x,
                                        sequence_length=sl, dtype=cf.float64, time_major=time_major)
            parts = list(st) if isinstance(st, tuple) else [st]
            loss = cf.reduce_sum(out * out * 1.3) + cf.add_n([cf.reduce_sum(t * 0.7) for t in parts])
            grads = cf.gradients(loss, [x] + cf.trainable_variables())
            types = {op.type for op in g.get_operations()}
            assert ({"BlockLSTM", "BlockGRU"} & types != set()) == fused
            init = cf.global_variables_initializer()
        with cf.Session(graph=g) as s:
            s.run(init)
            results.append(s.run([out] + parts + grads, {x: xv, sl: lens}))
    o = results[0][0].transpose(1, 0, 2) if time_major else results[0][0]  # [batch, time, n]
    assert not o[2].any() and not o[1, 2:].any() and o[0].all()
    # a step function for the forward GEMM (and the projection's), two for the backward's
    assert len(made) == ((4 if kind == "lstm-projection" else 3) if blas_steps else 0)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("lengths", [None, [5, 2, 0]], ids=["full", "lengths"])
def test_stacked_cells_run_as_one_fused_op_per_layer_with_the_loops_answer(lengths):
    """MultiRNNCell of LSTM and GRU layers runs layer by layer, each layer one fused op over the
    whole sequence: outputs, every layer's final state and all gradients equal the step-by-step
    stack's; a layer without a fused form (a DropoutWrapper) keeps the whole stack in the loop."""
    rng = np.random.default_rng(9)
    xv = rng.normal(size=(3, 5, 4))
    results = []
    for fused in (True, False):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, (3, None, 4))
            u = cf.initializers.random_uniform(-0.5, 0.5, seed=3)
            multi = rnn_cell.MultiRNNCell([rnn_cell.LSTMCell(5, initializer=u), rnn_cell.GRUCell(4, kernel_initializer=u),
                                           rnn_cell.LSTMCell(3, initializer=u, forget_bias=0.5)])
            if not fused:
                multi.fused_sequence = lambda: None
            sl = None if lengths is None else cf.constant(lengths)
            out, st = cf.nn.dynamic_rnn(multi, x, sequence_length=sl, dtype=cf.float64)
            parts = [st[0].c, st[0].h, st[1], st[2].c, st[2].h]
            loss = cf.reduce_sum(out * out) + cf.add_n([cf.reduce_sum(t * (0.3 + k)) for k, t in enumerate(parts)])
            grads = cf.gradients(loss, [x] + cf.trainable_variables())
            types = [op.type for op in g.get_operations()]
            if fused:
                assert types.count("BlockLSTM") == 2 and types.count("BlockGRU") == 1 and "LoopCond" not in types
            init = cf.global_variables_initializer()
        assert [v.name for v in multi.trainable_variables][:2] == ["rnn/multi_rnn_cell/cell_0/lstm_cell/kernel:0",
                                                                   "rnn/multi_rnn_cell/cell_0/lstm_cell/bias:0"]
        with cf.Session(graph=g) as s:
            s.run(init)
            results.append(s.run([out] + parts + grads, {x: xv}))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    g = cf.Graph()
    with g.as_default():
        drop = rnn_cell.MultiRNNCell([rnn_cell.LSTMCell(3),
                                      rnn_cell.DropoutWrapper(rnn_cell.LSTMCell(3), state_keep_prob=0.5)])
        cf.nn.dynamic_rnn(drop, cf.placeholder(cf.float32, (2, 4, 3)), dtype=cf.float32)
    assert "LoopCond" in {op.type for op in g.get_operations()}


def _wrapped_run(make, fused, xv, lengths=None):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, xv.shape)
        cell = make()
        if not fused:
            cell.fused_sequence = lambda: None
        out, st = cf.nn.dynamic_rnn(cell, x, dtype=cf.float64,
                                    sequence_length=None if lengths is None else cf.constant(lengths))
        parts = [t for t in cf.graph.nest.flatten(st)]
        grads = cf.gradients(cf.reduce_sum(out * out) + cf.add_n([cf.reduce_sum(t) for t in parts]),
                             [x] + cf.trainable_variables())
        types = {op.type for op in g.get_operations()}
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        return types, s.run([out] + parts + grads, {x: xv})


@pytest.mark.parametrize("lengths", [None, [4, 1, 3]], ids=["full", "lengths"])
def test_wrapped_cells_run_fused_with_the_loops_answer(lengths):
    """Residual, device and variational-dropout wrappers around a plain cell (and in a stack)
    run the fused ops with the per-step loop's numbers: the variational masks are [1, size]
    and broadcast over the steps, so both paths draw the same."""
    rng = np.random.default_rng(11)
    xv = rng.normal(size=(3, 4, 3))
    u = cf.initializers.random_uniform(-0.5, 0.5, seed=4)
    makes = [
        lambda: rnn_cell.ResidualWrapper(rnn_cell.LSTMCell(3, initializer=u)),
        lambda: rnn_cell.DeviceWrapper(rnn_cell.GRUCell(4, kernel_initializer=u), "/cpu:0"),
        lambda: rnn_cell.DropoutWrapper(rnn_cell.LSTMCell(4, initializer=u), input_keep_prob=0.7, output_keep_prob=0.6,
                                        variational_recurrent=True, input_size=3, dtype=cf.float64, seed=5),
        lambda: rnn_cell.MultiRNNCell([
            rnn_cell.DropoutWrapper(rnn_cell.GRUCell(3, kernel_initializer=u), output_keep_prob=0.5,
                                    variational_recurrent=True, dtype=cf.float64, seed=6),
            rnn_cell.ResidualWrapper(rnn_cell.LSTMCell(3, initializer=u))]),
    ]
    for make in makes:
        types, fused = _wrapped_run(make, True, xv, lengths)
        assert {"BlockLSTM", "BlockGRU"} & types and "LoopCond" not in types
        _, loop = _wrapped_run(make, False, xv, lengths)
        for a, b in zip(fused, loop):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("lengths", [None, [3, 1, 0]], ids=["full", "lengths"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["static", "static-bidirectional"])
def test_static_rnn_with_a_fused_cell_gives_the_unrolled_answer(bidirectional, lengths):
    """static_rnn (and the static bidirectional runner) with a plain LSTM or GRU runs one fused
    op instead of T unrolled steps: the same outputs, final states and gradients."""
    rng = np.random.default_rng(13)
    xv = rng.normal(size=(3, 4, 2))
    u = cf.initializers.random_uniform(-0.5, 0.5, seed=9)
    results = []
    for fused in (True, False):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, xv.shape)
            cells = [rnn_cell.LSTMCell(3, initializer=u), rnn_cell.GRUCell(2, kernel_initializer=u)]
            if not fused:
                for c in cells:
                    c.fused_sequence = lambda: None
            steps = cf.unstack(x, axis=1)
            sl = None if lengths is None else cf.constant(lengths)
            if bidirectional:
                outs, st_fw, st_bw = cf.nn.static_bidirectional_rnn(cells[0], cells[1], steps, dtype=cf.float64,
                                                                    sequence_length=sl)
                parts = [st_fw.c, st_fw.h, st_bw]
            else:
                outs, st = cf.nn.static_rnn(cells[0], steps, dtype=cf.float64, sequence_length=sl)
                parts = [st.c, st.h]
            loss = cf.add_n([cf.reduce_sum(o * o) * (k + 1) for k, o in enumerate(outs)] +
                            [cf.reduce_sum(t) for t in parts])
            grads = cf.gradients(loss, [x] + cf.trainable_variables())
            types = [op.type for op in g.get_operations()]
            assert (types.count("BlockLSTM") == 1) == fused
            init = cf.global_variables_initializer()
        with cf.Session(graph=g) as s:
            s.run(init)
            results.append(s.run(list(outs) + parts + grads, {x: xv}))
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("options", [{}, {"use_peephole": True, "cell_clip": 0.3}, {"cell_clip": -1.0},
                                     {"cell_clip": 0.0}], ids=["plain", "peephole-clip", "no-clip", "zero-clip"])
@pytest.mark.parametrize("lengths", [None, [4, 0, 2]], ids=["full", "lengths"])
def test_contrib_lstm_block_fused_cell_is_dynamic_rnns_lstm(lengths, options):
    """tf.contrib.rnn.LSTMBlockFusedCell: time-major inputs (a tensor or a list of steps), TF's
    variable names, and the numbers (outputs, final (c, h), gradients) of dynamic_rnn with an
    LSTMCell holding the same weights, fused and as the per-step loop; LSTMBlockCell is
    LSTMCell under TF's block names; peepholes and cell_clip (TF's -1: none) alike."""
    rng = np.random.default_rng(14)
    xv, c0, h0 = rng.normal(size=(4, 3, 2)), rng.normal(size=(3, 5)) * 2, rng.normal(size=(3, 5))
    k = rng.uniform(-0.5, 0.5, size=(7, 20))
    b = rng.uniform(-0.5, 0.5, size=20)
    diag = rng.uniform(-0.8, 0.8, size=(3, 5))
    peep = bool(options.get("use_peephole"))
    results = []
    for which in ("fused", "list", "dynamic", "loop"):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, xv.shape)
            init_st = rnn_cell.LSTMStateTuple(cf.constant(c0), cf.constant(h0))
            sl = None if lengths is None else cf.constant(lengths)
            with cf.variable_scope("enc"):
                if which in ("dynamic", "loop"):
                    cell = cf.contrib.rnn.LSTMBlockCell(5, forget_bias=0.7, **options)
                    if which == "loop":
                        cell.fused_sequence = lambda: None
                    out, st = cf.nn.dynamic_rnn(cell, x, sequence_length=sl, initial_state=init_st, time_major=True)
                    types = {op.type for op in g.get_operations()}
                    assert ("BlockLSTM" in types) == (which == "dynamic")
                else:
                    cell = cf.contrib.rnn.LSTMBlockFusedCell(5, forget_bias=0.7, **options)
                    inp = cf.unstack(x, axis=0) if which == "list" else x
                    out, st = cell(inp, initial_state=init_st, dtype=cf.float64, sequence_length=sl)
                    if which == "list":
                        assert isinstance(out, list) and len(out) == 4
                        out = cf.stack(out, 0)
            variables = cell.trainable_variables
            kernel, bias = variables[:2]
            prefix = "enc/rnn/lstm_cell/" if which in ("dynamic", "loop") else "enc/lstm_fused_cell/"
            assert (kernel.name, bias.name) == (prefix + "kernel:0", prefix + "bias:0")
            assert sorted(v.name for v in variables[2:]) == (
                [prefix + f"w_{g}_diag:0" for g in "fio"] if peep else [])
            diags = {v.name.split("/")[-1][:8]: v for v in variables[2:]}
            grads = cf.gradients(cf.reduce_sum(out * out) + cf.reduce_sum(st.c) + cf.reduce_sum(st.h * 0.5),
                                 [x, kernel, bias] + [diags[f"w_{g}_diag"] for g in "ifo" if peep])
            assign = [kernel.assign(k), bias.assign(b)] + [diags[f"w_{g}_diag"].assign(diag[n])
                                                           for n, g in enumerate("ifo") if peep]
            init = cf.global_variables_initializer()
        with cf.Session(graph=g) as s:
            s.run(init)
            s.run(assign)
            results.append(s.run([out, st.c, st.h] + grads, {x: xv}))
    if options.get("cell_clip") == 0.0:  # TF's block kernels clip only when cell_clip > 0
        assert np.abs(results[0][1]).max() > 0.5  # (a clip at 0 would leave c all zero)
    if "cell_clip" in options and options["cell_clip"] > 0:  # the clip bites (c0 is large) but
        c_end = results[0][1][[r for r, n in enumerate(lengths or [4] * 3) if n]]  # not in no step
        assert np.isclose(np.abs(c_end).max(), options["cell_clip"], rtol=0, atol=1e-15)
    for other in results[1:]:
        for a, b_ in zip(results[0], other):
            np.testing.assert_allclose(a, b_, rtol=1e-10, atol=1e-12)


def test_fused_dropout_draws_a_mask_per_element_of_the_sequence():
    """Without variational_recurrent the fused path drops each element of each step on its own
    (one draw for the sequence instead of one per step): about 1 - keep of the outputs are
    zero and the rest are the undropped outputs over keep."""
    rng = np.random.default_rng(12)
    xv = rng.normal(size=(8, 50, 3))
    u = cf.initializers.random_uniform(-0.5, 0.5, seed=7)
    outs = []
    for keep in (1.0, 0.25):
        types, res = _wrapped_run(lambda: rnn_cell.DropoutWrapper(rnn_cell.LSTMCell(16, initializer=u),
                                                                  output_keep_prob=keep, seed=8), True, xv)
        assert "BlockLSTM" in types
        outs.append(res[0])
    full, dropped = outs
    kept = dropped != 0
    assert 0.2 < kept.mean() < 0.3
    np.testing.assert_allclose(dropped[kept], full[kept] / 0.25, rtol=1e-12)
    assert len({tuple(kept[:, t].ravel()) for t in range(50)}) == 50  # a fresh mask at every step


def test_fused_rnns_with_no_steps_return_the_initial_state():
    """A sequence of length 0 (an empty time dimension at run time): outputs [batch, 0, n] and
    the initial state, as TF1's loop of no iterations, for the fused LSTM and GRU."""
    for make in (lambda: cf.nn.rnn_cell.LSTMCell(4), lambda: cf.nn.rnn_cell.GRUCell(4)):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float32, (2, None, 3))
            cell = make()
            st0 = cell.zero_state(2, cf.float32)
            st0 = type(st0)(*(t + 0.5 for t in st0)) if isinstance(st0, tuple) else st0 + 0.5
            out, st = cf.nn.dynamic_rnn(cell, x, initial_state=st0)
            init = cf.global_variables_initializer()
        with cf.Session(graph=g) as s:
            s.run(init)
            o, last = s.run([out, st], {x: np.zeros((2, 0, 3), np.float32)})
        assert o.shape == (2, 0, 4)
        for part in (last if isinstance(last, tuple) else [last]):
            np.testing.assert_array_equal(part, np.full((2, 4), 0.5, np.float32))


# -- ResidualWrapper and DeviceWrapper (tf.nn.rnn_cell's) ------------------------------------------

def test_residual_wrapper_adds_the_input_to_the_cells_output_and_keeps_its_names():
    rng = np.random.default_rng(31)
    xv = rng.normal(size=(3, 5, 4))
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (3, 5, 4))
        inner = rnn_cell.GRUCell(4)
        cell = rnn_cell.ResidualWrapper(inner)
        out, st = cf.nn.dynamic_rnn(cell, x, sequence_length=cf.constant([5, 2, 0]), dtype=cf.float64)
        custom = rnn_cell.ResidualWrapper(rnn_cell.BasicRNNCell(4), residual_fn=lambda i, o: i - 2.0 * o)
        out2, _ = cf.nn.dynamic_rnn(custom, x, dtype=cf.float64, scope="custom")
        init = cf.global_variables_initializer()
    assert [v.name for v in cell.trainable_variables] == [v.name for v in inner.trainable_variables]
    assert all(v.name.startswith("rnn/gru_cell/") for v in cell.trainable_variables)
    with cf.Session(graph=g) as s:
        s.run(init)
        o, h, o2, (gk, gb, ck, cb), (k2, b2) = s.run([out, st, out2, inner.trainable_variables,
                                                      custom.wrapped_cell.trainable_variables], {x: xv})
    hn = np.zeros((3, 4))
    for t in range(5):
        live = np.array([5, 2, 0]) > t
        new = np_gru_step(xv[:, t], hn, gk, gb, ck, cb)
        # the output is input + cell output while a sequence lasts, zeros after (sequence_length)
        np.testing.assert_allclose(o[:, t], np.where(live[:, None], xv[:, t] + new, 0.0), rtol=1e-10, atol=1e-12)
        hn = np.where(live[:, None], new, hn)
    np.testing.assert_allclose(h, hn, rtol=1e-10, atol=1e-12)   # the state is the cell's, not the sum
    hb = np.zeros((3, 4))
    for t in range(5):
        hb = np.tanh(np.concatenate([xv[:, t], hb], 1) @ k2 + b2)
        np.testing.assert_allclose(o2[:, t], xv[:, t] - 2.0 * hb, rtol=1e-10, atol=1e-12)


def test_residual_wrapper_with_different_input_and_output_sizes_says_so():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2, 3, 5))
        with pytest.raises(cf.errors.InvalidArgumentError, match="ResidualWrapper.*cannot be added.*residual_fn"):
            cf.nn.dynamic_rnn(rnn_cell.ResidualWrapper(rnn_cell.GRUCell(4)), x, dtype=cf.float32)
    with pytest.raises(TypeError, match="ResidualWrapper: the parameter cell is not an RNNCell"):
        rnn_cell.ResidualWrapper("gru")


def test_device_wrapper_places_the_cell_and_its_zero_state():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2, 3, 4))
        cell = rnn_cell.DeviceWrapper(rnn_cell.LSTMCell(3), "/cpu:0")
        zs = cell.zero_state(2, cf.float32)
        out, st = cf.nn.dynamic_rnn(cell, x, initial_state=zs)
        init = cf.global_variables_initializer()
    assert zs.c.op.device == "/cpu:0" and zs.h.op.device == "/cpu:0"
    body = [op for op in g.get_operations() if op.type in ("MatMul", "Tanh", "Sigmoid", "BlockLSTM")]
    assert body and all(op.device == "/cpu:0" for op in body), [(o.name, o.device) for o in body]
    assert [v.name for v in cell.trainable_variables] == ["rnn/lstm_cell/kernel:0", "rnn/lstm_cell/bias:0"]
    with cf.Session(graph=g) as s:
        s.run(init)
        o = s.run(out, {x: np.ones((2, 3, 4), np.float32)})
    assert o.shape == (2, 3, 3) and np.isfinite(o).all()


@pytest.mark.parametrize("runner", ["dynamic", "static"])
def test_lstm_cell_clip_passes_the_gradient_at_the_bound(runner):
    """TF1's LSTMCell clips c with clip_by_value, whose gradient passes where the unclipped cell
    lies inside [-clip, clip], bounds included.  cell_clip=0 with zero inputs and a zero kernel
    keeps every unclipped cell at exactly 0: the gradient to the j bias must still flow (the
    fused BlockLSTM path and the per-step path alike), and equal the clip-free LSTM's there."""
    def grads(clip):
        g = cf.Graph()
        with g.as_default():
            x = cf.zeros((2, 3, 2), cf.float64)
            cell = rnn_cell.LSTMCell(4, cell_clip=clip, initializer=cf.initializers.zeros())
            if runner == "dynamic":
                out, _ = cf.nn.dynamic_rnn(cell, x, dtype=cf.float64)
            else:
                outs, _ = cf.nn.static_rnn(cell, cf.unstack(x, axis=1), dtype=cf.float64)
                out = cf.stack(outs, axis=1)
            loss = cf.reduce_sum(out)
            (db,) = cf.gradients(loss, [cell.variables[1]])
        return _session_values(g, db, None)
    clipped, free = grads(0.0), grads(None)
    assert np.abs(clipped[4:8]).min() > 0.1  # j's bias: reached only through c
    np.testing.assert_allclose(clipped, free, rtol=1e-12, atol=1e-15)


def test_lstm_cell_negative_clip_clips_to_its_magnitude_as_tf1():
    """LSTMCell(cell_clip=-1) runs clip_by_value(c, 1, -1): min > max, so every cell is 1 in
    TF1 (np.clip's order would give -1)."""
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(np.random.default_rng(3).normal(size=(2, 3, 2)))
        cell = rnn_cell.LSTMCell(4, cell_clip=-1.0, initializer=cf.initializers.random_uniform(-1.0, 1.0, seed=2))
        _, st = cf.nn.dynamic_rnn(cell, x, dtype=cf.float64)
    np.testing.assert_array_equal(_session_values(g, st.c, None), np.ones((2, 4)))
