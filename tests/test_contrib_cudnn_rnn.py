"""tf.contrib.cudnn_rnn (collflow/contrib/cudnn_rnn.py) without TensorFlow: the layers against a
NumPy reference written from cuDNN's equations on cuDNN's canonical weights (converted to TF's
checkpoint layout as TF's format converters do), the compatible cells against the layer through
checkpoints with TF's variable names, finite-difference gradients and the errors.  TensorFlow's
own CudnnRNN ops need a GPU (and TF 2.x has no contrib), so there is no differential test."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

cr = tf.contrib.cudnn_rnn
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
LAYERS = {"lstm": cr.CudnnLSTM, "gru": cr.CudnnGRU, "rnn_tanh": cr.CudnnRNNTanh, "rnn_relu": cr.CudnnRNNRelu}

pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def _sig(x):
    return 1 / (1 + np.exp(-x))


# -- cuDNN's canonical weights and equations ------------------------------------------------------

def _cudnn_params(rng, mode, layers, dirs, n, input_size):
    """params[layer][dir] = (W [gates, n, width], R [gates, n, n], b_w [gates, n], b_r [gates, n]),
    cuDNN's gate order: LSTM i, f, c, o; GRU r, z, h."""
    g = GATES[mode]
    out = []
    for layer in range(layers):
        width = input_size if layer == 0 else n * dirs
        out.append([tuple(rng.uniform(-0.6, 0.6, size=s) for s in ((g, n, width), (g, n, n), (g, n), (g, n)))
                    for _ in range(dirs)])
    return out


def _step(mode, p, x, h, c):
    W, R, bw, br = p
    a = [W[k] @ x + bw[k] for k in range(len(W))]
    r_ = [R[k] @ h + br[k] for k in range(len(W))]
    if mode == "lstm":
        i, f, o = _sig(a[0] + r_[0]), _sig(a[1] + r_[1]), _sig(a[3] + r_[3])
        c = f * c + i * np.tanh(a[2] + r_[2])
        return o * np.tanh(c), c
    if mode == "gru":
        r, z = _sig(a[0] + r_[0]), _sig(a[1] + r_[1])
        cand = np.tanh(a[2] + r * r_[2])  # the reset gate after the recurrent matmul
        return (1 - z) * cand + z * h, c
    act = np.tanh if mode == "rnn_tanh" else (lambda v: np.maximum(v, 0))
    return act(a[0] + r_[0]), c


def _reference(mode, params, x, h0, c0, lengths):
    """time-major x [T, B, I]; h0/c0 [L * D, B, n]; returns outputs [T, B, D n], h, c."""
    T, B = x.shape[:2]
    dirs, n = len(params[0]), h0.shape[-1]
    hs, cs = np.zeros_like(h0), np.zeros_like(h0)
    inp = x
    for layer, per_dir in enumerate(params):
        out = np.zeros((T, B, dirs * n))
        for d, p in enumerate(per_dir):
            k = layer * dirs + d
            for b in range(B):
                h, c = h0[k, b], c0[k, b]
                steps = range(lengths[b]) if d == 0 else range(lengths[b] - 1, -1, -1)
                for t in steps:
                    h, c = _step(mode, p, inp[t, b], h, c)
                    out[t, b, d * n:(d + 1) * n] = h
                hs[k, b], cs[k, b] = h, c
        inp = out
    return inp, hs, cs


def _tf_canonical(mode, p):
    """One cell's TF canonical variables (the layer's order) from cuDNN's canonical weights."""
    W, R, bw, br = p
    WR = [np.concatenate([W[k], R[k]], 1) for k in range(len(W))]
    b = [bw[k] + br[k] for k in range(len(W))]
    if mode == "lstm":  # TF's kernel is in LSTMCell's gate order i, c, f, o
        order = [0, 2, 1, 3]
        return [np.concatenate([WR[k] for k in order], 0).T, np.concatenate([b[k] for k in order])]
    if mode == "gru":
        return [np.concatenate(WR[:2], 0).T, np.concatenate(b[:2]), W[2].T, bw[2], R[2].T, br[2]]
    return [WR[0].T, b[0]]


def _load(sess, layer, mode, params):
    values = [v for per_dir in params for p in per_dir for v in _tf_canonical(mode, p)]
    assert len(values) == len(layer.variables)
    for var, v in zip(layer.variables, values):
        var.load(v, sess)


# -- the layers against the reference -------------------------------------------------------------

@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("direction", ["unidirectional", "bidirectional"])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_layer_matches_cudnn_equations(mode, direction, num_layers):
    rng = np.random.RandomState(list(GATES).index(mode) * 4 + num_layers * 2 + (direction == "bidirectional"))
    T, B, I, n = 5, 3, 4, 3
    dirs = 2 if direction == "bidirectional" else 1
    params = _cudnn_params(rng, mode, num_layers, dirs, n, I)
    x = rng.randn(T, B, I)
    h0, c0 = rng.randn(num_layers * dirs, B, n) * 0.5, rng.randn(num_layers * dirs, B, n) * 0.5
    lengths = [5, 2, 4]
    layer = LAYERS[mode](num_layers, n, direction=direction, dtype=tf.float64)
    init = (tf.constant(h0), tf.constant(c0)) if mode == "lstm" else (tf.constant(h0),)
    out, states = layer(tf.constant(x), initial_state=init, sequence_lengths=lengths)
    assert out.shape.as_list() == [T, B, dirs * n]
    assert len(states) == (2 if mode == "lstm" else 1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _load(sess, layer, mode, params)
        got_out, got_states = sess.run([out, states])
    want_out, want_h, want_c = _reference(mode, params, x, h0, c0, lengths)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(got_states[0], want_h, rtol=1e-9, atol=1e-10)
    if mode == "lstm":
        np.testing.assert_allclose(got_states[1], want_c, rtol=1e-9, atol=1e-10)
    assert np.all(got_out[2:, 1] == 0)  # past its length a row's outputs are zeros


@pytest.mark.parametrize("mode", ["lstm", "gru"])
@pytest.mark.parametrize("given_state", [False, True])
def test_batch_major(mode, given_state):
    # inputs [batch, time, depth] and states [batch, layers * dirs, units] (TF's doc of the layer)
    rng = np.random.RandomState(1)
    T, B, I, n = 4, 2, 3, 5
    params = _cudnn_params(rng, mode, 2, 2, n, I)
    x = rng.randn(T, B, I)
    h0, c0 = (rng.randn(4, B, n) * 0.5, rng.randn(4, B, n) * 0.5) if given_state else (np.zeros((4, B, n)),) * 2
    lengths = [4, 3] if given_state else [T] * B
    layer = LAYERS[mode](2, n, direction="bidirectional", dtype=tf.float64)
    init = tuple(tf.constant(s.transpose(1, 0, 2)) for s in ((h0, c0) if mode == "lstm" else (h0,)))
    out, states = layer(tf.constant(x.transpose(1, 0, 2)), initial_state=init if given_state else None,
                        sequence_lengths=lengths if given_state else None, time_major=False)
    assert out.shape.as_list() == [B, T, 2 * n] and states[0].shape.as_list() == [B, 4, n]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _load(sess, layer, mode, params)
        got_out, got_states = sess.run([out, states])
    want_out, want_h, want_c = _reference(mode, params, x, h0, c0, lengths)
    np.testing.assert_allclose(got_out, want_out.transpose(1, 0, 2), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(got_states[0], want_h.transpose(1, 0, 2), rtol=1e-9, atol=1e-10)
    if mode == "lstm":
        np.testing.assert_allclose(got_states[1], want_c.transpose(1, 0, 2), rtol=1e-9, atol=1e-10)


def test_dropout_between_layers_only_when_training():
    x = np.random.RandomState(2).randn(6, 4, 3).astype(np.float32)
    layer = cr.CudnnLSTM(2, 8, dropout=0.5, seed=3)
    ref = cr.CudnnLSTM(2, 8, name="ref")
    out_eval, _ = layer(x, training=False)
    out_train, _ = layer(x, training=True)
    flag = tf.placeholder(tf.bool, [])
    out_flag, _ = layer(x, training=flag)
    out_ref, _ = ref(x)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for a, b in zip(layer.variables, ref.variables):
            b.load(sess.run(a), sess)
        ev, tr, fl_off, rf = sess.run([out_eval, out_train, out_flag, out_ref], {flag: False})
        on = sess.run(out_flag, {flag: True})
    np.testing.assert_allclose(ev, rf, rtol=1e-6)
    np.testing.assert_allclose(fl_off, rf, rtol=1e-6)
    assert np.abs(tr - rf).max() > 1e-3 and np.abs(on - rf).max() > 1e-3


def test_default_init_and_names():
    with tf.variable_scope("model"):
        layer = cr.CudnnGRU(1, 4, bias_initializer=tf.constant_initializer(0.25))
        layer(tf.zeros([2, 3, 5]))
    names = [v.op.name for v in tf.global_variables()]
    p = "model/cudnn_gru/rnn/multi_rnn_cell/cell_0/cudnn_compatible_gru_cell/"
    assert names == [p + s for s in ("gates/kernel", "gates/bias", "candidate/input_projection/kernel",
                                     "candidate/input_projection/bias", "candidate/hidden_projection/kernel",
                                     "candidate/hidden_projection/bias")]
    assert layer.name == "cudnn_gru" and layer.input_size == 5 and layer.num_dirs == 1
    assert layer.canonical_weight_shapes == [(4, 5)] * 3 + [(4, 4)] * 3
    assert layer.canonical_bias_shapes == [[4]] * 6
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        vals = sess.run(layer.variables)
        flat = sess.run(layer.kernel)
    # the gate bias is cuDNN's two biases summed; the candidate biases stay apart
    np.testing.assert_allclose(vals[1], 0.5)
    np.testing.assert_allclose(vals[3], 0.25)
    limit = np.sqrt(6 / (4 + 5))  # glorot_uniform of each cuDNN gate weight [4, 5]
    assert np.abs(vals[0][:5]).max() <= limit and np.abs(vals[0]).std() > 0.1
    assert flat.size == sum(v.size for v in vals)


# -- the compatible cells and checkpoints ----------------------------------------------------------

def _compat_run(mode, direction, num_layers, n, x, lengths):
    """The compatible-cell graph TF's docs pair with the layer (time-major, zero states)."""
    cell = {"lstm": lambda: cr.CudnnCompatibleLSTMCell(n), "gru": lambda: cr.CudnnCompatibleGRUCell(n),
            "rnn_tanh": lambda: tf.nn.rnn_cell.BasicRNNCell(n)}[mode]
    if direction == "unidirectional":
        multi = tf.nn.rnn_cell.MultiRNNCell([cell() for _ in range(num_layers)])
        out, _ = tf.nn.dynamic_rnn(multi, x, sequence_length=lengths, dtype=tf.float64, time_major=True)
        return out
    out, _, _ = tf.contrib.rnn.stack_bidirectional_dynamic_rnn(
        [cell() for _ in range(num_layers)], [cell() for _ in range(num_layers)], x, sequence_length=lengths,
        dtype=tf.float64, time_major=True)
    return out


@pytest.mark.parametrize("mode,direction,num_layers", [("lstm", "unidirectional", 2), ("lstm", "bidirectional", 2),
                                                       ("gru", "unidirectional", 2), ("gru", "bidirectional", 1),
                                                       ("rnn_tanh", "bidirectional", 2)])
def test_checkpoint_layer_to_compatible_cells_and_back(tmp_path, mode, direction, num_layers):
    rng = np.random.RandomState(4)
    T, B, I, n = 4, 3, 3, 4
    x = rng.randn(T, B, I)
    lengths = [4, 1, 3]
    path = os.path.join(str(tmp_path), "m")
    g1 = tf.Graph()
    with g1.as_default():
        layer = LAYERS[mode](num_layers, n, direction=direction, dtype=tf.float64,
                             bias_initializer=tf.random_uniform_initializer(-0.5, 0.5, seed=1))
        layer.build([None, None, I])  # built directly: the canonical names sit in the caller's scope
        out1, _ = layer(tf.constant(x), sequence_lengths=lengths)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            want = sess.run(out1)
            tf.train.Saver().save(sess, path)
    g2 = tf.Graph()
    with g2.as_default():
        out2 = _compat_run(mode, direction, num_layers, n, tf.constant(x), lengths)
        assert sorted(v.op.name for v in tf.global_variables()) == sorted(v.op.name for v in layer.variables)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            np.testing.assert_allclose(sess.run(out2), want, rtol=1e-10, atol=1e-12)
            # and back: new weights from the cells' graph restore into the layer
            for v in tf.global_variables():
                v.load(rng.uniform(-0.7, 0.7, size=v.shape.as_list()), sess)
            want2 = sess.run(out2)
            tf.train.Saver().save(sess, path + "2")
    with g1.as_default(), tf.Session() as sess:
        tf.train.Saver().restore(sess, path + "2")
        np.testing.assert_allclose(sess.run(out1), want2, rtol=1e-10, atol=1e-12)
        assert np.abs(want2 - want).max() > 1e-3


# -- gradients -------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode,direction", [("lstm", "bidirectional"), ("gru", "unidirectional"),
                                            ("rnn_tanh", "unidirectional")])
def test_gradients_match_finite_differences(mode, direction):
    rng = np.random.RandomState(5)
    T, B, I, n = 3, 2, 2, 3
    xv, hv = rng.randn(T, B, I), rng.randn(2 * (2 if direction == "bidirectional" else 1), B, n) * 0.5
    x, h = tf.placeholder(tf.float64, xv.shape), tf.placeholder(tf.float64, hv.shape)
    layer = LAYERS[mode](2, n, direction=direction, dtype=tf.float64,
                         bias_initializer=tf.random_uniform_initializer(-0.5, 0.5, seed=2))
    init = (h, h * 0.5) if mode == "lstm" else (h,)
    out, states = layer(x, initial_state=init, sequence_lengths=[3, 2])
    w_out, w_h = rng.uniform(0.5, 1.5, out.shape.as_list()), rng.uniform(0.5, 1.5, hv.shape)
    loss = tf.reduce_sum(out * w_out) + tf.reduce_sum(states[-1] * w_h)
    targets = [x, h] + layer.variables
    grads = tf.gradients(loss, targets)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {x: xv, h: hv}
        analytic = sess.run(grads, feed)
        eps = 1e-6
        for k, (t, ga) in enumerate(zip(targets, analytic)):
            base = xv if t is x else hv if t is h else sess.run(t)
            idx = list(np.ndindex(base.shape))
            picks = idx if k < 2 else [idx[j] for j in rng.choice(len(idx), min(6, len(idx)), replace=False)]
            for ix in picks:
                vals = []
                for s in (eps, -eps):
                    pert = base.copy()
                    pert[ix] += s
                    if k < 2:
                        vals.append(sess.run(loss, {**feed, t: pert}))
                    else:
                        t.load(pert, sess)
                        vals.append(sess.run(loss, feed))
                if k >= 2:
                    t.load(base, sess)
                np.testing.assert_allclose(ga[ix], (vals[0] - vals[1]) / (2 * eps), rtol=1e-5, atol=1e-7,
                                           err_msg=f"d loss / d {getattr(t, 'name', k)}{ix}")


# -- the namespace and the errors ------------------------------------------------------------------

def test_namespace_and_dotted_paths():
    from collflow.contrib.cudnn_rnn.python.ops import cudnn_rnn_ops
    from collflow.contrib.cudnn_rnn.python.layers import cudnn_rnn
    assert cudnn_rnn_ops.CudnnCompatibleLSTMCell is cr.CudnnCompatibleLSTMCell
    assert cudnn_rnn.CudnnLSTM is cr.CudnnLSTM
    assert (cr.CUDNN_LSTM, cr.CUDNN_GRU, cr.CUDNN_RNN_TANH, cr.CUDNN_RNN_RELU) == ("lstm", "gru", "rnn_tanh",
                                                                                  "rnn_relu")
    assert (cr.CUDNN_INPUT_LINEAR_MODE, cr.CUDNN_RNN_UNIDIRECTION, cr.CUDNN_RNN_BIDIRECTION) == (
        "linear_input", "unidirectional", "bidirectional")
    assert cr.CUDNN_LSTM_PARAMS_PER_LAYER == 8 and cr.CUDNN_GRU_PARAMS_PER_LAYER == 6
    assert cr.CudnnLSTM(1, 2).state_shape(7) == ([1, 7, 2], [1, 7, 2])
    assert cr.CudnnGRU(2, 3, direction="bidirectional").state_shape(5) == ([4, 5, 3],)


def test_errors():
    with pytest.raises(ValueError, match="Invalid direction"):
        cr.CudnnLSTM(1, 2, direction="both")
    with pytest.raises(ValueError, match="Invalid input_mode"):
        cr.CudnnGRU(1, 2, input_mode="none")
    with pytest.raises(ValueError, match="Only support float16, float32, float64"):
        cr.CudnnLSTM(1, 2, dtype=tf.int32)
    with pytest.raises(ValueError, match="3 dims"):
        cr.CudnnLSTM(1, 2)(tf.zeros([3, 4]))
    with pytest.raises(ValueError, match="last dimension"):
        cr.CudnnLSTM(1, 2).build([3, 4, None])
    with pytest.raises(TypeError, match="expecting tuple"):
        cr.CudnnLSTM(1, 2)(tf.zeros([3, 4, 2]), initial_state=[tf.zeros([1, 4, 2])] * 2)
    with pytest.raises(ValueError, match="tuple of 2"):
        cr.CudnnLSTM(1, 2, name="a")(tf.zeros([3, 4, 2]), initial_state=(tf.zeros([1, 4, 2]),))
    with pytest.raises(ValueError, match="num_layers \\* num_dirs = 2"):
        cr.CudnnGRU(1, 2, direction="bidirectional")(tf.zeros([3, 4, 2]), initial_state=(tf.zeros([1, 4, 2]),))
    with pytest.raises(tf.errors.UnimplementedError, match="skip_input"):
        cr.CudnnLSTM(1, 2, input_mode="skip_input")(tf.zeros([3, 4, 2]))
    layer = cr.CudnnLSTM(1, 2, name="b")
    layer(tf.zeros([3, 4, 2]))
    with pytest.raises(ValueError, match="built for 2"):
        layer(tf.zeros([3, 4, 5]))
