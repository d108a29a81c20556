"""tf.contrib.rnn's rarer cells (collflow/contrib/rnn_cells_more.py, rnn_cells_more2.py) without
TensorFlow: each cell run by dynamic_rnn against a NumPy step written from TF 1.15's equations
and fed the cell's own (randomised) variables, TF 1.15's variable names and shapes, finite-
difference gradients w.r.t. the inputs and every variable, and the argument errors."""
import collections

import numpy as np
import pytest

import collflow.compat.v1 as tf

rnn = tf.contrib.rnn

pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def sig(x):
    return 1 / (1 + np.exp(-x))


def ln(x, gb):
    g, b = gb
    m = x.mean(1, keepdims=True)
    v = ((x - m) ** 2).mean(1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-12) * g + b


def cat(*xs):
    return np.concatenate(xs, 1)


def relu(x):
    return np.maximum(x, 0)


def np_gru(p, pre, x, h):
    r, u = np.split(sig(cat(x, h) @ p[pre + "gates/kernel"] + p[pre + "gates/bias"]), 2, 1)
    c = np.tanh(cat(x, r * h) @ p[pre + "candidate/kernel"] + p[pre + "candidate/bias"])
    new = u * h + (1 - u) * c
    return new, new


def np_lstm(p, pre, x, st):
    c, h = st
    i, j, f, o = np.split(cat(x, h) @ p[pre + "kernel"] + p[pre + "bias"], 4, 1)
    c2 = c * sig(f + 1.0) + sig(i) * np.tanh(j)
    h2 = np.tanh(c2) * sig(o)
    return h2, (c2, h2)


def gb(p, part):
    return p[part + "/gamma"], p[part + "/beta"]


# -- NumPy steps from TF 1.15's equations ------------------------------------------------------


def ref_highway(coupled):
    def step(p, x, h):
        out, h2 = np_gru(p, "gru_cell/", x, h)
        carry = sig(x @ p["carry_w"] + p["carry_b"])
        tr = 1 - carry if coupled else sig(x @ p["transform_w"] + p["transform_b"])
        return x * carry + out * tr, h2
    return step


def ref_attention(p, x, st):
    (c, h), attns, window = st
    w = "attention_cell_wrapper/"
    length, a, v = 2, 3, 5
    xi = cat(x, attns) @ p[w + "kernel"] + p[w + "bias"]
    out, (c2, h2) = np_lstm(p, w + "lstm_cell/", xi, (c, h))
    hidden = window.reshape(-1, length, a)
    feats = hidden @ p[w + "attention/attn_w"].reshape(a, v)
    y = cat(c2, h2) @ p[w + "attention/kernel"] + p[w + "attention/bias"]
    s = (p[w + "attention/attn_v"] * np.tanh(feats + y[:, None, :])).sum(2)
    e = np.exp(s - s.max(1, keepdims=True))
    weights = e / e.sum(1, keepdims=True)
    new_attns = (weights[:, :, None] * hidden).sum(1)
    output = cat(out, new_attns) @ p[w + "attn_output_projection/kernel"] + p[w + "attn_output_projection/bias"]
    new_window = np.concatenate([hidden[:, 1:], output[:, None]], 1).reshape(-1, length * a)
    return output, ((c2, h2), new_attns, new_window)


def ref_attention_concat(p, x, st):
    w = "attention_cell_wrapper/"
    h, attns, window = st[:, :3], st[:, 3:6], st[:, 6:]
    length, a = 2, 3
    xi = cat(x, attns) @ p[w + "kernel"] + p[w + "bias"]
    out, h2 = np_gru(p, w + "gru_cell/", xi, h)
    hidden = window.reshape(-1, length, a)
    feats = hidden @ p[w + "attention/attn_w"].reshape(a, a)
    y = h2 @ p[w + "attention/kernel"] + p[w + "attention/bias"]
    s = (p[w + "attention/attn_v"] * np.tanh(feats + y[:, None, :])).sum(2)
    weights = np.exp(s) / np.exp(s).sum(1, keepdims=True)
    new_attns = (weights[:, :, None] * hidden).sum(1)
    output = cat(out, new_attns) @ p[w + "attn_output_projection/kernel"] + p[w + "attn_output_projection/bias"]
    new_window = np.concatenate([hidden[:, 1:], output[:, None]], 1).reshape(-1, length * a)
    return output, cat(h2, new_attns, new_window)


def ref_cifg(layer_norm, peep, proj_clip, tuple_state):
    def step(p, x, st):
        s = "coupled_input_forget_gate_lstm_cell/"
        c, m = st if tuple_state else (st[:, :3], st[:, 3:])
        w = np.concatenate([p[s + "W_0"], p[s + "W_1"]], 0) if layer_norm else p[s + "W"]
        z = cat(x, m) @ w
        if not layer_norm:
            z = z + p[s + "B"]
        j, f, o = np.split(z, 3, 1)
        if layer_norm:
            j, f, o = ln(j, gb(p, s + "transform")), ln(f, gb(p, s + "forget")), ln(o, gb(p, s + "output"))
        fa = sig(f + 0.8 + (p[s + "W_F_diag"] * c if peep else 0))
        c2 = fa * c + (1 - fa) * np.tanh(j)
        if layer_norm:
            c2 = ln(c2, gb(p, s + "state"))
        m2 = sig(o + (p[s + "W_O_diag"] * c2 if peep else 0)) * np.tanh(c2)
        if layer_norm:
            m2 = m2 @ np.concatenate([p[s + "W_P_0"], p[s + "W_P_1"]], 0)
            if proj_clip is not None:
                m2 = np.clip(m2, -proj_clip, proj_clip)
        return m2, ((c2, m2) if tuple_state else cat(c2, m2))
    return step


def ref_ln_lstm(layer_norm, cell_clip):
    def step(p, x, st):
        s = "layer_norm_lstm_cell/"
        c, m = st
        z = cat(x, m) @ p[s + "kernel"]
        if not layer_norm:
            z = z + p[s + "bias"]
        i, j, f, o = np.split(z, 4, 1)
        if layer_norm:
            i, j, f, o = (ln(t, gb(p, s + q)) for t, q in zip((i, j, f, o), ("input", "transform", "forget", "output")))
        c2 = sig(f + 1.0 + p[s + "w_f_diag"] * c) * c + sig(i + p[s + "w_i_diag"] * c) * np.tanh(j)
        if layer_norm:
            c2 = ln(c2, gb(p, s + "state"))
        if cell_clip is not None:
            c2 = np.clip(c2, -cell_clip, cell_clip)
        m2 = (sig(o + p[s + "w_o_diag"] * c2) * np.tanh(c2)) @ p[s + "projection/kernel"]
        return m2, (c2, m2)
    return step


def ref_nas(p, x, st):
    s = "nas_cell/"
    c, m = st
    xs = np.split(x @ p[s + "kernel"], 8, 1)
    ms = np.split(m @ p[s + "recurrent_kernel"] + p[s + "bias"], 8, 1)
    a = [sig(xs[0] + ms[0]), relu(xs[1] + ms[1]), sig(xs[2] + ms[2]), relu(xs[3] * ms[3]),
         np.tanh(xs[4] + ms[4]), sig(xs[5] + ms[5]), np.tanh(xs[6] + ms[6]), sig(xs[7] + ms[7])]
    b = [np.tanh(a[0] * a[1]), np.tanh(a[2] + a[3]), np.tanh(a[4] * a[5]), sig(a[6] + a[7])]
    c2 = np.tanh(b[0] + c) * b[1]
    m2 = np.tanh(c2 * np.tanh(b[2] + b[3])) @ p[s + "projection_weights"]
    return m2, (c2, m2)


def ref_glstm(p, x, st):
    s = "glstm_cell/"
    c, m = st
    parts = [[], [], [], []]
    for k in range(2):
        z = cat(x[:, 2 * k:2 * k + 2], m[:, 3 * k:3 * k + 3]) @ p[s + f"group{k}/kernel"]
        for lst, t in zip(parts, np.split(z, 4, 1)):
            lst.append(t)
    i, j, f, o = (cat(*lst) + p[s + "bias_" + q] for lst, q in zip(parts, "ijfo"))
    c2 = sig(f + 1.0) * c + sig(i) * np.tanh(j)
    m2 = (sig(o) * np.tanh(c2)) @ p[s + "projection/kernel"]
    return m2, (c2, m2)


def ref_ugrnn(p, x, h):
    g, cc = np.split(cat(x, h) @ p["ugrnn_cell/kernel"] + p["ugrnn_cell/bias"], 2, 1)
    g = sig(g + 0.5)
    h2 = g * h + (1 - g) * np.tanh(cc)
    return h2, h2


def ref_intersection(p, x, h):
    s = "intersection_rnn_cell/"
    x = x @ p[s + "in_projection/kernel"] + p[s + "in_projection/bias"]
    z = cat(x, h) @ p[s + "kernel"] + p[s + "bias"]
    gh, hc, gy, yc = np.split(z, 4, 1)
    gh, gy = sig(gh + 1.0), sig(gy + 1.0)
    return gy * x + (1 - gy) * relu(yc), gh * h + (1 - gh) * np.tanh(hc)


def ref_ind(p, x, h):
    s = "ind_rnn_cell/"
    h2 = np.tanh(x @ p[s + "kernel_w"] + h * p[s + "kernel_u"] + p[s + "bias"])
    return h2, h2


def ref_indy_gru(p, x, h):
    s = "indy_gru_cell/"
    r, u = np.split(sig(x @ p[s + "gates/kernel_w"] + cat(h, h) * p[s + "gates/kernel_u"] + p[s + "gates/bias"]), 2, 1)
    cand = np.tanh(x @ p[s + "candidate/kernel"] + r * h * p[s + "candidate/kernel_u"] + p[s + "candidate/bias"])
    h2 = u * h + (1 - u) * cand
    return h2, h2


def ref_indy_lstm(p, x, st):
    s = "indy_lstm_cell/"
    c, h = st
    i, j, f, o = np.split(x @ p[s + "kernel_w"] + cat(h, h, h, h) * p[s + "kernel_u"] + p[s + "bias"], 4, 1)
    c2 = c * sig(f + 1.0) + sig(i) * np.tanh(j)
    h2 = np.tanh(c2) * sig(o)
    return h2, (c2, h2)


def ref_sru(p, x, c):
    xb, f, r, xt = np.split(x @ p["sru_cell/kernel"], 4, 1)
    f, r = np.split(sig(cat(f, r) + p["sru_cell/bias"]), 2, 1)
    c2 = f * c + (1 - f) * xb
    return r * np.tanh(c2) + (1 - r) * xt, c2


def ref_minimal(p, x, h):
    k = p["minimal_rnn_cell/kernel"]
    z = np.tanh(x @ k[:x.shape[1]])
    u = sig(cat(z, h) @ k[x.shape[1]:] + p["minimal_rnn_cell/bias"])
    h2 = u * h + (1 - u) * z
    return h2, h2


def ref_cfn(p, x, h):
    k = p["cfn_cell/kernel"]
    gates = sig(h @ p["cfn_cell/recurrent_kernel"] + x @ k[:, :6] + p["cfn_cell/bias"])
    theta, eta = gates[:, :3], gates[:, 3:]
    h2 = theta * np.tanh(h) + (1 - eta) * np.tanh(x @ k[:, 6:])
    return h2, h2


def ref_timefreq(p, x, st):
    s = "time_freq_lstm_cell/"
    m_freq = np.zeros((x.shape[0], 3))
    states, outs = [], []
    for k in range(3):
        c_prev, m_prev = st[:, 6 * k:6 * k + 3], st[:, 6 * k + 3:6 * k + 6]
        i, j, f, o = np.split(cat(x[:, k:k + 2], m_prev, m_freq) @ p[s + "W"] + p[s + "B"], 4, 1)
        c = sig(f + 1.0 + p[s + "W_F_diag"] * c_prev) * c_prev + sig(i + p[s + "W_I_diag"] * c_prev) * np.tanh(j)
        c = np.clip(c, -0.8, 0.8)
        m = sig(o + p[s + "W_O_diag"] * c) * np.tanh(c)
        m_freq = m
        states += [c, m]
        outs.append(m)
    return cat(*outs), cat(*states)


def ref_grid(shared, coupled, spans, tuple_state, clip):
    """TF 1.15's GridLSTMCell._compute written out: spans = [(start, count, skip)] per block."""
    def step(p, x, st):
        s = "grid_lstm_cell/"
        flat = list(st) if tuple_state else np.split(st, st.shape[1] // 3, 1)
        new, outs, idx = [], [], 0
        for b, (start, count, skip) in enumerate(spans):
            w = lambda name: p[s + name + f"_{b}"]  # noqa: E731
            c_pf = m_pf = np.zeros((x.shape[0], 3))
            for k in range(count):
                c_pt, m_pt = flat[2 * idx], flat[2 * idx + 1]
                idx += 1
                z_in = cat(x[:, start + k * skip:start + k * skip + 2], m_pt, m_pf)
                zf = z_in @ w("W_f") + w("B_f")
                zt = zf if shared else z_in @ w("W_t") + w("B_t")
                if coupled:
                    (i_f, j_f, o_f), (i_t, j_t, o_t) = np.split(zf, 3, 1), np.split(zt, 3, 1)
                else:
                    (i_f, j_f, f_f, o_f), (i_t, j_t, f_t, o_t) = np.split(zf, 4, 1), np.split(zt, 4, 1)
                tk = "freq" if shared else "time"
                ig_f = sig(i_f + w("W_I_diag_freqf") * c_pf + w("W_I_diag_freqt") * c_pt)
                ig_t = sig(i_t + w(f"W_I_diag_{tk}f") * c_pf + w(f"W_I_diag_{tk}t") * c_pt)
                if coupled:
                    fg_f, fg_t = 1 - ig_f, 1 - ig_t
                else:
                    fg_f = sig(f_f + 1.0 + w("W_F_diag_freqf") * c_pf + w("W_F_diag_freqt") * c_pt)
                    fg_t = sig(f_t + 1.0 + w(f"W_F_diag_{tk}f") * c_pf + w(f"W_F_diag_{tk}t") * c_pt)
                c_f = fg_f * c_pf + ig_f * np.tanh(j_f)
                c_t = fg_t * c_pt + ig_t * np.tanh(j_t)
                if clip is not None:
                    c_f, c_t = np.clip(c_f, -clip, clip), np.clip(c_t, -clip, clip)
                m_f = sig(o_f + w("W_O_diag_freqf") * c_f + w("W_O_diag_freqt") * c_t) * np.tanh(c_f)
                m_t = sig(o_t + w(f"W_O_diag_{tk}f") * c_f + w(f"W_O_diag_{tk}t") * c_t) * np.tanh(c_t)
                c_pf, m_pf = c_f, m_f
                new += [c_t, m_t]
                outs += [m_t, m_f]
        return cat(*outs), (tuple(new) if tuple_state else cat(*new))
    return step


def _grid_names(blocks, shared, coupled):
    out, width = [], 9 if coupled else 12
    for b in range(blocks):
        out += [(f"grid_lstm_cell/W_f_{b}", [8, width]), (f"grid_lstm_cell/B_f_{b}", [width])]
        if not shared:
            out += [(f"grid_lstm_cell/W_t_{b}", [8, 12]), (f"grid_lstm_cell/B_t_{b}", [12])]
        for kind in ("freq",) + (() if shared else ("time",)):
            out += [(f"grid_lstm_cell/W_{g}_diag_{kind}{src}_{b}", [3]) for g in ("FIO"[1:] if coupled else "FIO")
                    for src in "ft"]
    return out


# -- the cells, their variables and references ----------------------------------------------------

Spec = collections.namedtuple("Spec", "id make names ref zero")


def z(*sizes):
    def zero(b):
        parts = [np.zeros((b, n)) for n in sizes]
        return tuple(parts) if len(parts) > 1 else parts[0]
    return zero


GRU4 = [("gru_cell/gates/kernel", [8, 8]), ("gru_cell/gates/bias", [8]), ("gru_cell/candidate/kernel", [8, 4]),
        ("gru_cell/candidate/bias", [4])]
CIFG = "coupled_input_forget_gate_lstm_cell/"
LNL = "layer_norm_lstm_cell/"
ATT = "attention_cell_wrapper/"

SPECS = [
    Spec("HighwayWrapper", lambda: rnn.HighwayWrapper(rnn.GRUCell(4), couple_carry_transform_gates=False,
                                                      carry_bias_init=0.5),
         GRU4 + [("carry_w", [4, 4]), ("carry_b", [4]), ("transform_w", [4, 4]), ("transform_b", [4])],
         ref_highway(False), z(4)),
    Spec("HighwayWrapper_coupled", lambda: rnn.HighwayWrapper(rnn.GRUCell(4)),
         GRU4 + [("carry_w", [4, 4]), ("carry_b", [4])], ref_highway(True), z(4)),
    Spec("AttentionCellWrapper", lambda: rnn.AttentionCellWrapper(rnn.LSTMCell(3), 2, attn_vec_size=5, input_size=6),
         [(ATT + "kernel", [7, 6]), (ATT + "bias", [6]), (ATT + "lstm_cell/kernel", [9, 12]),
          (ATT + "lstm_cell/bias", [12]), (ATT + "attention/attn_w", [1, 1, 3, 5]), (ATT + "attention/attn_v", [5]),
          (ATT + "attention/kernel", [6, 5]), (ATT + "attention/bias", [5]),
          (ATT + "attn_output_projection/kernel", [6, 3]), (ATT + "attn_output_projection/bias", [3])],
         ref_attention, lambda b: ((np.zeros((b, 3)), np.zeros((b, 3))), np.zeros((b, 3)), np.zeros((b, 6)))),
    Spec("AttentionCellWrapper_concat", lambda: rnn.AttentionCellWrapper(rnn.GRUCell(3), 2, state_is_tuple=False),
         [(ATT + "kernel", [7, 4]), (ATT + "bias", [4]), (ATT + "gru_cell/gates/kernel", [7, 6]),
          (ATT + "gru_cell/gates/bias", [6]), (ATT + "gru_cell/candidate/kernel", [7, 3]),
          (ATT + "gru_cell/candidate/bias", [3]), (ATT + "attention/attn_w", [1, 1, 3, 3]),
          (ATT + "attention/attn_v", [3]), (ATT + "attention/kernel", [3, 3]), (ATT + "attention/bias", [3]),
          (ATT + "attn_output_projection/kernel", [6, 3]), (ATT + "attn_output_projection/bias", [3])],
         ref_attention_concat, z(12)),
    Spec("CoupledInputForgetGateLSTMCell_ln",
         lambda: rnn.CoupledInputForgetGateLSTMCell(3, use_peepholes=True, num_proj=3, proj_clip=0.6, forget_bias=0.8,
                                                    num_unit_shards=2, num_proj_shards=2, layer_norm=True),
         [(CIFG + "W_0", [4, 9]), (CIFG + "W_1", [3, 9]), (CIFG + "B", [9])]
         + [(CIFG + f"{q}/{v}", [3]) for q in ("transform", "forget", "output") for v in ("gamma", "beta")]
         + [(CIFG + "W_F_diag", [3]), (CIFG + "W_O_diag", [3]), (CIFG + "state/gamma", [3]), (CIFG + "state/beta", [3]),
            (CIFG + "W_P_0", [2, 3]), (CIFG + "W_P_1", [1, 3])],
         ref_cifg(True, True, 0.6, True), z(3, 3)),
    Spec("CoupledInputForgetGateLSTMCell_concat",
         lambda: rnn.CoupledInputForgetGateLSTMCell(3, forget_bias=0.8, state_is_tuple=False),
         [(CIFG + "W", [7, 9]), (CIFG + "B", [9])], ref_cifg(False, False, None, False), z(6)),
    Spec("LayerNormLSTMCell",
         lambda: rnn.LayerNormLSTMCell(4, use_peepholes=True, cell_clip=0.7, num_proj=3, layer_norm=True),
         [(LNL + "kernel", [7, 16]), (LNL + "bias", [16])]
         + [(LNL + f"{q}/{v}", [4]) for q in ("input", "transform", "forget", "output") for v in ("gamma", "beta")]
         + [(LNL + "w_f_diag", [4]), (LNL + "w_i_diag", [4]), (LNL + "w_o_diag", [4]), (LNL + "state/gamma", [4]),
            (LNL + "state/beta", [4]), (LNL + "projection/kernel", [4, 3])],
         ref_ln_lstm(True, 0.7), z(4, 3)),
    Spec("LayerNormLSTMCell_plain", lambda: rnn.LayerNormLSTMCell(4, use_peepholes=True, num_proj=3),
         [(LNL + "kernel", [7, 16]), (LNL + "bias", [16]), (LNL + "w_f_diag", [4]), (LNL + "w_i_diag", [4]),
          (LNL + "w_o_diag", [4]), (LNL + "projection/kernel", [4, 3])],
         ref_ln_lstm(False, None), z(4, 3)),
    Spec("NASCell", lambda: rnn.NASCell(3, num_proj=2, use_bias=True),
         [("nas_cell/recurrent_kernel", [2, 24]), ("nas_cell/kernel", [4, 24]), ("nas_cell/bias", [24]),
          ("nas_cell/projection_weights", [3, 2])], ref_nas, z(3, 2)),
    Spec("GLSTMCell", lambda: rnn.GLSTMCell(6, num_proj=6, number_of_groups=2),
         [("glstm_cell/group0/kernel", [5, 12]), ("glstm_cell/group1/kernel", [5, 12])]
         + [(f"glstm_cell/bias_{q}", [6]) for q in "ijfo"] + [("glstm_cell/projection/kernel", [6, 6])],
         ref_glstm, z(6, 6)),
    Spec("UGRNNCell", lambda: rnn.UGRNNCell(3, forget_bias=0.5),
         [("ugrnn_cell/kernel", [7, 6]), ("ugrnn_cell/bias", [6])], ref_ugrnn, z(3)),
    Spec("IntersectionRNNCell", lambda: rnn.IntersectionRNNCell(3, num_in_proj=3),
         [("intersection_rnn_cell/in_projection/kernel", [4, 3]), ("intersection_rnn_cell/in_projection/bias", [3]),
          ("intersection_rnn_cell/kernel", [6, 12]), ("intersection_rnn_cell/bias", [12])], ref_intersection, z(3)),
    Spec("IndRNNCell", lambda: rnn.IndRNNCell(3),
         [("ind_rnn_cell/kernel_w", [4, 3]), ("ind_rnn_cell/kernel_u", [1, 3]), ("ind_rnn_cell/bias", [3])],
         ref_ind, z(3)),
    Spec("IndyGRUCell", lambda: rnn.IndyGRUCell(3),
         [("indy_gru_cell/gates/kernel_w", [4, 6]), ("indy_gru_cell/gates/kernel_u", [1, 6]),
          ("indy_gru_cell/gates/bias", [6]), ("indy_gru_cell/candidate/kernel", [4, 3]),
          ("indy_gru_cell/candidate/kernel_u", [1, 3]), ("indy_gru_cell/candidate/bias", [3])], ref_indy_gru, z(3)),
    Spec("IndyLSTMCell", lambda: rnn.IndyLSTMCell(3),
         [("indy_lstm_cell/kernel_w", [4, 12]), ("indy_lstm_cell/kernel_u", [1, 12]), ("indy_lstm_cell/bias", [12])],
         ref_indy_lstm, z(3, 3)),
    Spec("SRUCell", lambda: rnn.SRUCell(3), [("sru_cell/kernel", [4, 12]), ("sru_cell/bias", [6])], ref_sru, z(3)),
    Spec("MinimalRNNCell", lambda: rnn.MinimalRNNCell(3),
         [("minimal_rnn_cell/kernel", [10, 3]), ("minimal_rnn_cell/bias", [3])], ref_minimal, z(3)),
    Spec("CFNCell", lambda: rnn.CFNCell(3),
         [("cfn_cell/kernel", [4, 9]), ("cfn_cell/recurrent_kernel", [3, 6]), ("cfn_cell/bias", [6])], ref_cfn, z(3)),
    Spec("TimeFreqLSTMCell", lambda: rnn.TimeFreqLSTMCell(3, use_peepholes=True, cell_clip=0.8, feature_size=2,
                                                          frequency_skip=1),
         [("time_freq_lstm_cell/W", [8, 12]), ("time_freq_lstm_cell/B", [12]), ("time_freq_lstm_cell/W_F_diag", [3]),
          ("time_freq_lstm_cell/W_I_diag", [3]), ("time_freq_lstm_cell/W_O_diag", [3])], ref_timefreq, z(18)),
    Spec("GridLSTMCell", lambda: rnn.GridLSTMCell(3, use_peepholes=True, feature_size=2, frequency_skip=2,
                                                  num_frequency_blocks=[2]),
         _grid_names(1, False, False), ref_grid(False, False, [(0, 2, 2)], True, None), z(3, 3, 3, 3)),
    Spec("GridLSTMCell_blocks", lambda: rnn.GridLSTMCell(
        3, use_peepholes=True, share_time_frequency_weights=True, couple_input_forget_gates=True, cell_clip=0.9,
        feature_size=2, frequency_skip=1, num_frequency_blocks=[2, 1], start_freqindex_list=[0, 2],
        end_freqindex_list=[3, 4], state_is_tuple=False),
         _grid_names(2, True, True), ref_grid(True, True, [(0, 2, 1), (2, 1, 1)], False, 0.9), z(18)),
]


def _flat(s):
    if isinstance(s, (tuple, list)):
        return [a for x in s for a in _flat(x)]
    return [s]


def _rel(v):
    name = v.name[:-2]
    assert name.startswith("rnn/"), name
    return name[len("rnn/"):]


def _load_random(sess, variables, rng, dtype):
    vals = {}
    for v in variables:
        val = rng.uniform(-0.9, 0.9, v.shape.as_list()).astype(dtype)
        v.load(val, sess)
        vals[_rel(v)] = val.astype(np.float64)
    return vals


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_dynamic_rnn_matches_numpy_and_tf_names(spec):
    rng = np.random.RandomState(7)
    x = rng.uniform(-1.5, 1.5, (2, 3, 4)).astype(np.float32)
    cell = spec.make()
    out, state = tf.nn.dynamic_rnn(cell, tf.constant(x), dtype=tf.float32)
    # (b) TF 1.15's names, shapes and creation order; every variable is the cell's and trainable
    got = [(_rel(v), v.shape.as_list()) for v in tf.global_variables()]
    assert got == spec.names
    assert {v.name for v in cell.trainable_variables} == {v.name for v in tf.trainable_variables()}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        p = _load_random(s, tf.global_variables(), rng, np.float32)
        o, st = s.run([out, state])
    # (a) the NumPy step over the sequence, from the cell's variables
    want_st = spec.zero(2)
    outs = []
    for t in range(3):
        w, want_st = spec.ref(p, x[:, t].astype(np.float64), want_st)
        outs.append(w)
    np.testing.assert_allclose(o, np.stack(outs, 1), rtol=1e-5, atol=1e-5)
    for a, b in zip(_flat(st), _flat(want_st), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


# (c) finite differences of dynamic_rnn's outputs and final state w.r.t. the inputs and every variable

GRAD_SPECS = {
    "HighwayWrapper": lambda: rnn.HighwayWrapper(rnn.GRUCell(4), couple_carry_transform_gates=False),
    "HighwayWrapper_coupled": lambda: rnn.HighwayWrapper(rnn.GRUCell(4)),
    "AttentionCellWrapper": lambda: rnn.AttentionCellWrapper(rnn.LSTMCell(3), 2, attn_vec_size=5, input_size=6),
    "AttentionCellWrapper_concat": lambda: rnn.AttentionCellWrapper(rnn.GRUCell(3), 2, state_is_tuple=False),
    "CoupledInputForgetGateLSTMCell_ln": lambda: rnn.CoupledInputForgetGateLSTMCell(
        3, use_peepholes=True, num_proj=3, num_unit_shards=2, layer_norm=True),
    "CoupledInputForgetGateLSTMCell_concat": lambda: rnn.CoupledInputForgetGateLSTMCell(3, state_is_tuple=False),
    "LayerNormLSTMCell": lambda: rnn.LayerNormLSTMCell(4, use_peepholes=True, num_proj=3, layer_norm=True),
    "NASCell": lambda: rnn.NASCell(3, num_proj=2, use_bias=True),
    "GLSTMCell": lambda: rnn.GLSTMCell(6, num_proj=6, number_of_groups=2),
    "UGRNNCell": lambda: rnn.UGRNNCell(3),
    "IntersectionRNNCell": lambda: rnn.IntersectionRNNCell(3, num_in_proj=3),
    "IndRNNCell": lambda: rnn.IndRNNCell(3),
    "IndyGRUCell": lambda: rnn.IndyGRUCell(3),
    "IndyLSTMCell": lambda: rnn.IndyLSTMCell(3),
    "SRUCell": lambda: rnn.SRUCell(3),
    "MinimalRNNCell": lambda: rnn.MinimalRNNCell(3),
    "CFNCell": lambda: rnn.CFNCell(3),
    "TimeFreqLSTMCell": lambda: rnn.TimeFreqLSTMCell(3, use_peepholes=True, feature_size=2),
    "GridLSTMCell": lambda: rnn.GridLSTMCell(3, use_peepholes=True, feature_size=2, frequency_skip=2,
                                             num_frequency_blocks=[2]),
    "GridLSTMCell_blocks": lambda: rnn.GridLSTMCell(
        3, use_peepholes=True, share_time_frequency_weights=True, couple_input_forget_gates=True, feature_size=2,
        frequency_skip=1, num_frequency_blocks=[2, 1], start_freqindex_list=[0, 2], end_freqindex_list=[3, 4],
        state_is_tuple=False),
}


def _check_grads(outputs, wrt, feed, sess, rng, eps=1e-6, per_var=10, rtol=1e-5, atol=1e-7, unused=()):
    """Gradient of sum(y * R) w.r.t. each of `wrt` (placeholders in feed, or variables) against
    central differences at up to `per_var` random entries of each; exactly the variables named
    in `unused` (made but not read, as TF's) have no gradient."""
    ys = _flat(outputs)
    weights = [rng.uniform(0.5, 1.5, sess.run(y, feed).shape) for y in ys]
    loss = tf.add_n([tf.reduce_sum(y * w) for y, w in zip(ys, weights)])
    grads = tf.gradients(loss, wrt)
    assert sorted(x.name for x, g in zip(wrt, grads) if g is None) == sorted(unused)
    wrt, grads = zip(*[(x, g) for x, g in zip(wrt, grads) if g is not None])
    analytic = sess.run([tf.convert_to_tensor(g) for g in grads], feed)
    for x, g in zip(wrt, analytic):
        is_var = x not in feed
        base = sess.run(x) if is_var else feed[x]
        flat_idx = rng.choice(base.size, min(per_var, base.size), replace=False)
        for k in flat_idx:
            vals = []
            for d in (eps, -eps):
                moved = base.copy()
                moved.reshape(-1)[k] += d
                if is_var:
                    x.load(moved, sess)
                    vals.append(sess.run(loss, feed))
                else:
                    vals.append(sess.run(loss, {**feed, x: moved}))
            if is_var:
                x.load(base, sess)
            num = (vals[0] - vals[1]) / (2 * eps)
            np.testing.assert_allclose(g.reshape(-1)[k], num, rtol=rtol, atol=atol, err_msg=f"d/d {x.name}[{k}]")


@pytest.mark.parametrize("name", sorted(GRAD_SPECS))
def test_gradients_match_finite_differences(name):
    rng = np.random.RandomState(3)
    x = tf.placeholder(tf.float64, [2, 3, 4])
    cell = GRAD_SPECS[name]()
    out, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        _load_random(s, tf.global_variables(), rng, np.float64)
        feed = {x: rng.uniform(-1.5, 1.5, (2, 3, 4))}
        _check_grads([out, state], [x] + tf.trainable_variables(), feed, s, rng, unused=UNUSED.get(name, ()))


UNUSED = {"CoupledInputForgetGateLSTMCell_ln": ["rnn/coupled_input_forget_gate_lstm_cell/B:0"],
          "LayerNormLSTMCell": ["rnn/layer_norm_lstm_cell/bias:0"]}


# PhasedLSTMCell takes (time, features) pairs, so it is run step by step

def ref_phased(p, t, x, st, peep, leak=0.001):
    s = "phased_lstm_cell/"
    c, h = st
    i, f = np.split(sig(cat(x, h, *([c] if peep else [])) @ p[s + "mask_gates/kernel"] + p[s + "mask_gates/bias"]),
                    2, 1)
    cc = c * f + i * np.tanh(cat(x, h) @ p[s + "new_input/kernel"] + p[s + "new_input/bias"])
    o = sig(cat(x, h, *([cc] if peep else [])) @ p[s + "output_gate/kernel"] + p[s + "output_gate/bias"])
    hh = np.tanh(cc) * o
    period, phase, r_on = p[s + "period"], p[s + "phase"], p[s + "ratio_on"]
    phi = np.mod(t - phase, period) / period
    k = np.where(phi < 0.5 * r_on, 2 * phi / r_on, np.where(phi < r_on, 2 - 2 * phi / r_on, leak * phi))
    return k * hh + (1 - k) * h, (k * cc + (1 - k) * c, k * hh + (1 - k) * h)


def _phased_graph(dtype, times, xs, peep):
    cell = rnn.PhasedLSTMCell(3, use_peepholes=peep, ratio_on=0.3)
    state = cell.zero_state(2, dtype)
    outs = []
    for t in range(len(xs)):
        o, state = cell((times[t], xs[t]), state)
        outs.append(o)
    return cell, outs, state


def _phased_values(sess, rng, dtype, period=(1.0, 3.0)):
    vals = {}
    for v in tf.global_variables():
        name = v.name[:-2]
        if name.endswith("period"):
            val = rng.uniform(*period, v.shape.as_list())
        elif name.endswith("phase"):
            val = rng.uniform(0.0, 1.0, v.shape.as_list())
        elif name.endswith("ratio_on"):
            val = rng.uniform(0.3, 0.8, v.shape.as_list())
        else:
            val = rng.uniform(-0.9, 0.9, v.shape.as_list())
        v.load(val.astype(dtype), sess)
        vals["rnn/" + name] = val
    return {k[len("rnn/"):]: v for k, v in vals.items()}


@pytest.mark.parametrize("peep", [False, True])
def test_phased_lstm_matches_numpy_and_tf_names(peep):
    rng = np.random.RandomState(5)
    times = rng.uniform(0, 5, (4, 2, 1)).astype(np.float32)
    xs = rng.uniform(-1, 1, (4, 2, 4)).astype(np.float32)
    cell, outs, state = _phased_graph(tf.float32, [tf.constant(t) for t in times], [tf.constant(x) for x in xs], peep)
    d = 4 + 3 + (3 if peep else 0)
    assert [(v.name, v.shape.as_list()) for v in tf.global_variables()] == [
        ("phased_lstm_cell/mask_gates/kernel:0", [d, 6]), ("phased_lstm_cell/mask_gates/bias:0", [6]),
        ("phased_lstm_cell/new_input/kernel:0", [7, 3]), ("phased_lstm_cell/new_input/bias:0", [3]),
        ("phased_lstm_cell/output_gate/kernel:0", [d, 3]), ("phased_lstm_cell/output_gate/bias:0", [3]),
        ("phased_lstm_cell/period:0", [3]), ("phased_lstm_cell/phase:0", [3]), ("phased_lstm_cell/ratio_on:0", [3])]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        period, phase, r_on = s.run(tf.global_variables()[6:])
        assert np.all((period >= 1) & (period <= 1000)) and np.all((phase >= 0) & (phase <= period))
        np.testing.assert_allclose(r_on, 0.3)
        p = _phased_values(s, rng, np.float32)
        o, st = s.run([outs, state])
    want = (np.zeros((2, 3)), np.zeros((2, 3)))
    for t in range(4):
        w, want = ref_phased(p, times[t].astype(np.float64), xs[t].astype(np.float64), want, peep)
        np.testing.assert_allclose(o[t], w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(st.c, want[0], rtol=1e-5, atol=1e-5)


def test_phased_lstm_gradients_and_fixed_ratio_on():
    rng = np.random.RandomState(6)
    times = [tf.placeholder(tf.float64, [2, 1]) for _ in range(3)]
    xs = [tf.placeholder(tf.float64, [2, 4]) for _ in range(3)]
    cell = rnn.PhasedLSTMCell(3, use_peepholes=True, trainable_ratio_on=False)
    state = cell.zero_state(2, tf.float64)
    outs = []
    for t in range(3):
        o, state = cell((times[t], xs[t]), state)
        outs.append(o)
    assert "phased_lstm_cell/ratio_on:0" not in [v.name for v in tf.trainable_variables()]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        # TF's mod passes only t's gradient, so d/d period is the true one only within the
        # first period: 0 <= t - phase < period here
        _phased_values(s, rng, np.float64, period=(2.5, 3.0))
        feed = {t: rng.uniform(1, 2, (2, 1)) for t in times}
        feed.update({x: rng.uniform(-1, 1, (2, 4)) for x in xs})
        _check_grads([outs, state], xs + times + tf.trainable_variables(), feed, s, rng)


# -- variables shared across steps, and the errors ---------------------------------------------------


def test_static_rnn_shares_the_wrappers_variables():
    xs = [tf.ones([2, 4]) * t for t in range(3)]
    tf.nn.static_rnn(rnn.HighwayWrapper(rnn.IndRNNCell(4)), xs, dtype=tf.float32)
    tf.nn.static_rnn(rnn.AttentionCellWrapper(rnn.SRUCell(3), 2), xs, dtype=tf.float32, scope="attn")
    assert [v.name for v in tf.global_variables()] == [
        "rnn/ind_rnn_cell/kernel_w:0", "rnn/ind_rnn_cell/kernel_u:0", "rnn/ind_rnn_cell/bias:0", "rnn/carry_w:0",
        "rnn/carry_b:0", "attn/attention_cell_wrapper/kernel:0", "attn/attention_cell_wrapper/bias:0",
        "attn/attention_cell_wrapper/sru_cell/kernel:0", "attn/attention_cell_wrapper/sru_cell/bias:0",
        "attn/attention_cell_wrapper/attention/attn_w:0", "attn/attention_cell_wrapper/attention/attn_v:0",
        "attn/attention_cell_wrapper/attention/kernel:0", "attn/attention_cell_wrapper/attention/bias:0",
        "attn/attention_cell_wrapper/attn_output_projection/kernel:0",
        "attn/attention_cell_wrapper/attn_output_projection/bias:0"]


def test_initial_values_follow_tf():
    x = tf.ones([2, 3, 4])
    with tf.variable_scope("a"):
        tf.nn.dynamic_rnn(rnn.HighwayWrapper(rnn.GRUCell(4), False, carry_bias_init=0.5), x, dtype=tf.float32)
    with tf.variable_scope("b"):
        tf.nn.dynamic_rnn(rnn.IndyGRUCell(3), x, dtype=tf.float32)
    with tf.variable_scope("c"):
        tf.nn.dynamic_rnn(rnn.CFNCell(3), x, dtype=tf.float32)
    with tf.variable_scope("d"):
        tf.nn.dynamic_rnn(rnn.LayerNormLSTMCell(3, layer_norm=True, norm_gain=1.5, norm_shift=0.25), x,
                          dtype=tf.float32)
    v = {w.name[:-2]: w for w in tf.global_variables()}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got = s.run({k: w for k, w in v.items()})
    np.testing.assert_allclose(got["a/rnn/carry_b"], 0.5)
    np.testing.assert_allclose(got["a/rnn/transform_b"], -0.5)
    np.testing.assert_allclose(got["b/rnn/indy_gru_cell/gates/bias"], 1.0)
    np.testing.assert_allclose(got["b/rnn/indy_gru_cell/candidate/bias"], 0.0)
    u = got["b/rnn/indy_gru_cell/gates/kernel_u"]
    assert np.all(np.abs(u) <= 1) and np.ptp(u) > 0
    np.testing.assert_allclose(got["c/rnn/cfn_cell/bias"], 1.0)
    np.testing.assert_allclose(got["d/rnn/layer_norm_lstm_cell/input/gamma"], 1.5)
    np.testing.assert_allclose(got["d/rnn/layer_norm_lstm_cell/state/beta"], 0.25)


def test_errors():
    with pytest.raises(TypeError, match="not RNNCell"):
        rnn.AttentionCellWrapper("lstm", 2)
    with pytest.raises(ValueError, match="attn_length should be greater than zero"):
        rnn.AttentionCellWrapper(rnn.GRUCell(3), 0)
    with pytest.raises(ValueError, match="state_is_tuple is not set"):
        rnn.AttentionCellWrapper(rnn.LSTMCell(3), 2, state_is_tuple=False)
    with pytest.raises(TypeError, match="not an RNNCell"):
        rnn.HighwayWrapper(3)
    with pytest.raises(ValueError, match="must equal the inputs' depth"):
        tf.nn.dynamic_rnn(rnn.HighwayWrapper(rnn.GRUCell(3)), tf.ones([2, 3, 4]), dtype=tf.float32)
    with pytest.raises(ValueError, match="num_units must be divisible by number_of_groups"):
        rnn.GLSTMCell(5, number_of_groups=2)
    with pytest.raises(ValueError, match="num_proj must be divisible by number_of_groups"):
        rnn.GLSTMCell(4, num_proj=3, number_of_groups=2)
    with pytest.raises(ValueError, match=r"input size \(5\) must be divisible by number_of_groups \(2\)"):
        tf.nn.dynamic_rnn(rnn.GLSTMCell(4, number_of_groups=2), tf.ones([2, 3, 5]), dtype=tf.float32, scope="gl")
    with pytest.raises(ValueError, match="Must have input size == output size"):
        tf.nn.dynamic_rnn(rnn.IntersectionRNNCell(3), tf.ones([2, 3, 4]), dtype=tf.float32, scope="i")
    with pytest.raises(ValueError, match="Too many shards"):
        tf.nn.dynamic_rnn(rnn.CoupledInputForgetGateLSTMCell(3, num_proj=2, num_proj_shards=4), tf.ones([2, 3, 4]),
                          dtype=tf.float32, scope="s")
    with pytest.raises(ValueError, match="num_units must be a positive int"):
        rnn.NASCell(0)
    with pytest.raises(ValueError, match="expected ndim=2"):
        rnn.SRUCell(3)(tf.ones([2, 3, 4]), tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="pair"):
        rnn.PhasedLSTMCell(3)(tf.ones([2, 4]), rnn.LSTMStateTuple(tf.zeros([2, 3]), tf.zeros([2, 3])))
    with pytest.raises(ValueError, match="period_init_min"):
        rnn.PhasedLSTMCell(3, period_init_min=5.0, period_init_max=2.0)
    with pytest.raises(ValueError, match="Must specify num_frequency_blocks"):
        rnn.GridLSTMCell(3, feature_size=2, frequency_skip=1)
    with pytest.raises(ValueError, match="Length of num_frequency_blocks is not 1"):
        rnn.GridLSTMCell(3, feature_size=2, frequency_skip=1, num_frequency_blocks=[1, 1])
    with pytest.raises(ValueError, match="start and end freqindex_list does not match"):
        rnn.GridLSTMCell(3, feature_size=2, frequency_skip=1, num_frequency_blocks=[1, 1], start_freqindex_list=[0, 2],
                         end_freqindex_list=[2])
    with pytest.raises(ValueError, match="Invalid num_frequency_blocks, requires 2 but gets 3"):
        tf.nn.dynamic_rnn(rnn.GridLSTMCell(3, feature_size=2, frequency_skip=1, num_frequency_blocks=[2]),
                          tf.ones([2, 3, 4]), dtype=tf.float32, scope="g")
    with pytest.raises(ValueError, match="feature_size and frequency_skip must be set"):
        tf.nn.dynamic_rnn(rnn.TimeFreqLSTMCell(3), tf.ones([2, 3, 4]), dtype=tf.float32, scope="t")


def test_exported_names_and_doc():
    for name in ("HighwayWrapper", "AttentionCellWrapper", "CoupledInputForgetGateLSTMCell", "LayerNormLSTMCell",
                 "NASCell", "GLSTMCell", "UGRNNCell", "IntersectionRNNCell", "IndRNNCell", "IndyGRUCell",
                 "IndyLSTMCell", "SRUCell", "MinimalRNNCell", "CFNCell", "PhasedLSTMCell", "TimeFreqLSTMCell",
                 "GridLSTMCell"):
        assert getattr(rnn, name).__doc__
        assert name in rnn.__doc__
    assert rnn.NASCell(3, num_proj=2).state_size == rnn.LSTMStateTuple(3, 2)
    assert rnn.NASCell(3, use_biases=True)._use_bias  # TF 1.4-1.12's argument name
    assert rnn.AttentionCellWrapper(rnn.GRUCell(3), 4).state_size == (3, 3, 12)
    assert rnn.AttentionCellWrapper(rnn.GRUCell(3), 4, state_is_tuple=False).state_size == 18
    assert rnn.CoupledInputForgetGateLSTMCell(3, num_proj=2, state_is_tuple=False).state_size == 5
    grid = rnn.GridLSTMCell(2, feature_size=2, frequency_skip=1, num_frequency_blocks=[1, 2],
                            start_freqindex_list=[0, 2], end_freqindex_list=[2, 5])
    assert grid.state_tuple_type._fields == ("state_f00_b00_c", "state_f00_b00_m", "state_f00_b01_c",
                                             "state_f00_b01_m", "state_f01_b01_c", "state_f01_b01_m")
    assert grid.output_size == 12 and grid.state_size == grid.state_tuple_type(2, 2, 2, 2, 2, 2)


def test_phased_lstm_runs_under_dynamic_rnn_as_tf():
    """TF 1.x feeds PhasedLSTMCell through dynamic_rnn with inputs=(times, features), each
    [batch, time, ...]: the loop must give the cell each step's pair."""
    rng = np.random.RandomState(7)
    times = rng.uniform(0, 5, (2, 4, 1)).astype(np.float32)
    xs = rng.uniform(-1, 1, (2, 4, 4)).astype(np.float32)
    cell = rnn.PhasedLSTMCell(3, use_peepholes=True, ratio_on=0.3)
    outs, state = tf.nn.dynamic_rnn(cell, (tf.constant(times), tf.constant(xs)), dtype=tf.float32)
    assert outs.shape.as_list() == [2, 4, 3]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        p = {k[len("rnn/"):]: v for k, v in _phased_values(s, rng, np.float32).items()}  # under dynamic_rnn's scope
        o, st = s.run([outs, state])
    want = (np.zeros((2, 3)), np.zeros((2, 3)))
    for t in range(4):
        w, want = ref_phased(p, times[:, t].astype(np.float64), xs[:, t].astype(np.float64), want, True)
        np.testing.assert_allclose(o[:, t], w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(st.h, want[1], rtol=1e-5, atol=1e-5)
