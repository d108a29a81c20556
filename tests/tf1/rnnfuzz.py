"""Random recurrent-network programs for the differential fuzz against TensorFlow
(tests/tf1/test_vs_tensorflow_rnn_fuzz.py).

`make_program(seed)` draws a plain description (a dict) of a TF1 RNN program: a cell tree
(BasicRNNCell, BasicLSTMCell, LSTMCell, GRUCell, LSTMBlockCell, GRUBlockCell(V2), MultiRNNCell, DropoutWrapper
with keep_prob 1.0, ResidualWrapper), a runner (dynamic_rnn, static_rnn,
bidirectional_dynamic_rnn, static_bidirectional_rnn, LSTMBlockFusedCell, the cell called step
by step, one cell run twice), time-major or not,
sequence lengths, an initial state or zero_state, float32 or float64.  `run_program(tf, prog)`
builds it in a library (`tensorflow.compat.v1` or `collflow.compat.v1`), sets every trainable
variable by name to seeded values, and returns the variables' names and shapes plus the
outputs, final states and the gradients of a random-weighted sum of them with respect to the
inputs, the initial state and every variable.

The contrib block cells TF 2.x no longer ships are run on the TensorFlow side as their
documented equivalents (LSTMBlockCell = LSTMCell with the same variables; LSTMBlockFusedCell =
a time-major dynamic_rnn of that cell, its variables renamed; GRUBlockCell(V2) = GRUCell, V1's
variables renamed w_ru, b_ru, w_c, b_c).
"""
import numpy as np

T_MAX = 5


def _act(r):
    """Mostly the cell's default activation, sometimes another (a cell off its fused path)."""
    return ["relu", "sigmoid", "softsign"][r.integers(3)] if r.random() < 0.2 else None


def _cell_spec(r, depth, level=0):
    """A random cell whose input depth is `depth`; returns (spec, output size)."""
    kinds = ["rnn", "basic_lstm", "lstm", "gru", "block_lstm", "block_gru"]
    kinds += ["multi", "dropout", "residual"] if level < 2 else []
    kind = kinds[r.integers(len(kinds))]
    n = int(r.integers(1, 6))
    if kind == "rnn":
        act = ["tanh", "relu", "sigmoid"][r.integers(3)] if r.random() < 0.3 else None
        return {"kind": kind, "n": n, "act": act}, n
    if kind == "basic_lstm":
        return {"kind": kind, "n": n, "forget_bias": float(r.choice([1.0, 0.0, 0.5])),
                "tuple": bool(r.random() < 0.7), "act": _act(r)}, n
    if kind == "lstm":
        proj = int(r.integers(1, 5)) if r.random() < 0.4 else None
        spec = {"kind": kind, "n": n, "peep": bool(r.random() < 0.5),
                "cell_clip": float(r.choice([0.3, 1.0])) if r.random() < 0.4 else None,
                "num_proj": proj, "proj_clip": float(r.choice([0.2, 0.8])) if proj and r.random() < 0.5 else None,
                "forget_bias": float(r.choice([1.0, 0.0, 0.5])), "tuple": bool(r.random() < 0.8), "act": _act(r)}
        return spec, proj or n
    if kind == "gru":
        return {"kind": kind, "n": n, "act": _act(r)}, n
    if kind == "block_gru":
        return {"kind": kind, "n": n, "v2": bool(r.random() < 0.5)}, n
    if kind == "block_lstm":
        return {"kind": kind, "n": n, "peep": bool(r.random() < 0.5), "forget_bias": float(r.choice([1.0, 0.5])),
                "cell_clip": float(r.choice([0.3, 1.0])) if r.random() < 0.4 else None}, n
    if kind == "multi":
        cells, d = [], depth
        for _ in range(int(r.integers(1, 4))):
            c, d = _cell_spec(r, d, level + 1)
            cells.append(c)
        # a non-tuple MultiRNNCell needs every sub-state to be a single tensor
        flat = all(_flat_state(c) for c in cells)
        return {"kind": kind, "cells": cells, "tuple": bool(not flat or r.random() < 0.7)}, d
    if kind == "dropout":
        inner, d = _cell_spec(r, depth, level + 1)
        return {"kind": kind, "cell": inner, "var": bool(r.random() < 0.3), "kp_tensor": bool(r.random() < 0.3)}, d
    # residual: the inner cell must keep the depth
    for _ in range(20):
        inner, d = _cell_spec(r, depth, level + 1)
        if d == depth:
            return {"kind": "residual", "cell": inner}, d
    return {"kind": "gru", "n": depth}, depth


def _flat_state(spec):
    k = spec["kind"]
    if k in ("rnn", "gru", "block_gru"):
        return True
    if k in ("basic_lstm", "lstm"):
        return not spec["tuple"]
    if k in ("dropout", "residual"):
        return _flat_state(spec["cell"])
    if k == "multi":
        return not spec["tuple"]
    return False


def make_program(seed):
    """A random RNN program description for `seed`."""
    r = np.random.default_rng(seed)
    depth = int(r.integers(1, 5))
    runner = ["dynamic", "static", "bidi_dynamic", "bidi_static", "fused", "direct", "twice"][
        r.choice(7, p=[.33, .17, .17, .11, .08, .08, .06])]
    prog = {"seed": seed, "depth": depth, "runner": runner, "batch": int(r.integers(1, 4)),
            "time": int(r.integers(1, T_MAX + 1)) if r.random() < 0.9 else 12,
            "dtype": "float64" if r.random() < 0.3 else "float32",
            "time_major": bool(r.random() < 0.4), "init": ["none", "feed", "zero"][r.choice(3, p=[.5, .35, .15])],
            # unknown batch / time dimensions (dynamic shapes), an outer variable_scope, a `scope` argument
            "unknown": bool(r.random() < 0.3), "outer": "enc" if r.random() < 0.2 else None,
            "scope": "layer" if r.random() < 0.2 else None}
    if runner == "fused":
        prog["cell"] = {"kind": "fused", "n": int(r.integers(1, 6)), "peep": bool(r.random() < 0.5),
                        "forget_bias": float(r.choice([1.0, 0.5])),
                        "cell_clip": float(r.choice([0.3, 1.0])) if r.random() < 0.4 else None}
        prog["dtype"] = "float32"  # the fused kernel is float32 (and half) only in TF 1.x
    else:
        prog["cell"] = _cell_spec(r, depth)[0]
        if runner.startswith("bidi"):
            prog["cell_bw"] = _cell_spec(r, depth)[0]
    u = r.random()
    if u < 0.3:
        prog["seq"] = None
    else:
        b, t = prog["batch"], prog["time"]
        seq = r.integers(0, t + 1, b)
        if b > 1:
            seq[r.integers(b)] = t  # a full length next to shorter ones
            if r.random() < 0.5:
                seq[r.integers(b)] = 0
        prog["seq"] = [int(s) for s in seq]
        prog["seq_feed"] = bool(r.random() < 0.5)  # a placeholder, or a constant
        prog["seq_int64"] = bool(r.random() < 0.2)
    return prog


def _is_tf(tf):
    return tf.__name__.startswith("tensorflow")


def _act_fn(tf, spec):
    return getattr(tf.nn, spec["act"]) if spec.get("act") else None


def _build_cell(tf, spec, tdt):
    k = spec["kind"]
    rc = tf.nn.rnn_cell
    if k == "rnn":
        act = getattr(tf.nn, spec["act"]) if spec["act"] else None
        return rc.BasicRNNCell(spec["n"], activation=act)
    if k == "basic_lstm":
        return rc.BasicLSTMCell(spec["n"], forget_bias=spec["forget_bias"], state_is_tuple=spec["tuple"],
                                activation=_act_fn(tf, spec))
    if k == "lstm":
        return rc.LSTMCell(spec["n"], use_peepholes=spec["peep"], cell_clip=spec["cell_clip"],
                           num_proj=spec["num_proj"], proj_clip=spec["proj_clip"], forget_bias=spec["forget_bias"],
                           state_is_tuple=spec["tuple"], activation=_act_fn(tf, spec))
    if k == "gru":
        return rc.GRUCell(spec["n"], activation=_act_fn(tf, spec))
    if k == "block_gru":
        if _is_tf(tf):  # TF 1.15's contrib GRUBlockCell(V2): GRUCell's math, V1 renames the variables
            return rc.GRUCell(spec["n"], name="gru_cell" if spec["v2"] else "grublockv1")
        cls = tf.contrib.rnn.GRUBlockCellV2 if spec["v2"] else tf.contrib.rnn.GRUBlockCell
        return cls(spec["n"])
    if k == "block_lstm":
        if _is_tf(tf):  # TF 1.15's contrib LSTMBlockCell: LSTMCell's math and variable names
            return rc.LSTMCell(spec["n"], use_peepholes=spec["peep"], cell_clip=spec["cell_clip"],
                               forget_bias=spec["forget_bias"])
        return tf.contrib.rnn.LSTMBlockCell(spec["n"], forget_bias=spec["forget_bias"], cell_clip=spec["cell_clip"],
                                            use_peephole=spec["peep"])
    if k == "multi":
        return rc.MultiRNNCell([_build_cell(tf, c, tdt) for c in spec["cells"]], state_is_tuple=spec["tuple"])
    if k == "dropout":
        inner = _build_cell(tf, spec["cell"], tdt)
        if spec["var"]:
            return rc.DropoutWrapper(inner, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                                     variational_recurrent=True, input_size=None, dtype=tdt)
        if spec.get("kp_tensor"):  # a tensor keep_prob: TF always builds the dropout ops then
            return rc.DropoutWrapper(inner, input_keep_prob=tf.constant(1.0), output_keep_prob=tf.constant(1.0))
        return rc.DropoutWrapper(inner, output_keep_prob=1.0)
    if k == "residual":
        return rc.ResidualWrapper(_build_cell(tf, spec["cell"], tdt))
    raise ValueError(k)


def _map_size(fn, size):
    """Maps `fn` over the leaves (ints) of a state_size, keeping tuples and namedtuples."""
    if isinstance(size, tuple):
        vals = [_map_size(fn, s) for s in size]
        return type(size)(*vals) if hasattr(size, "_fields") else tuple(vals)
    return fn(int(size))


def _sig(x):
    """The nesting of a result: its containers' kinds (LSTMStateTuple, tuple, list), "T" a tensor."""
    if isinstance(x, (tuple, list)):
        return type(x).__name__ + "(" + ",".join(_sig(v) for v in x) + ")"
    return "T"


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for v in x for leaf in _leaves(v)]
    return [x]


def _state_placeholders(tf, cell, batch, dt, r):
    phs, feeds = [], {}

    def mk(n):
        p = tf.placeholder(dt, [batch, n])
        phs.append(p)
        feeds[p] = r.uniform(-1, 1, [batch, n]).astype(dt)
        return p
    return _map_size(mk, cell.state_size), phs, feeds


def build(tf, prog):
    """Builds `prog` in the default graph; returns (tensors to compare, float feeds, all feeds)."""
    r = np.random.default_rng(prog["seed"] + 1)
    dt = np.dtype(prog["dtype"])
    tdt = getattr(tf, prog["dtype"])
    b, t, d = prog["batch"], prog["time"], prog["depth"]
    tm = prog["time_major"]
    runner = prog["runner"]
    shape = [t, b, d] if (tm or runner == "fused") else [b, t, d]
    x = tf.placeholder(tdt, [None, None, d] if prog["unknown"] and runner != "direct" else shape)
    feeds = {x: r.uniform(-1, 1, shape).astype(dt)}
    grads_of = [x]
    seq = None
    if prog["seq"] is not None:
        sdt = tf.int64 if prog["seq_int64"] else tf.int32
        if prog["seq_feed"]:
            seq = tf.placeholder(sdt, [b])
            feeds[seq] = np.array(prog["seq"], np.int64 if prog["seq_int64"] else np.int32)
        else:
            seq = tf.constant(prog["seq"], sdt)

    if runner == "fused":
        c = prog["cell"]
        if _is_tf(tf):
            cell = tf.nn.rnn_cell.LSTMCell(c["n"], use_peepholes=c["peep"], cell_clip=c["cell_clip"],
                                           forget_bias=c["forget_bias"], name="lstm_fused_cell")
        else:
            cell = tf.contrib.rnn.LSTMBlockFusedCell(c["n"], forget_bias=c["forget_bias"], cell_clip=c["cell_clip"],
                                                     use_peephole=c["peep"])
        init = None
        if prog["init"] != "none":
            init, phs, f = _state_placeholders(tf, tf.nn.rnn_cell.LSTMCell(c["n"]), b, dt, r)
            feeds.update(f)
            grads_of += phs
        if _is_tf(tf):
            out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=seq, initial_state=init, dtype=tdt,
                                        time_major=True)
        else:
            out, st = cell(x, initial_state=init, dtype=tdt, sequence_length=seq)
        return [out] + _leaves(st), grads_of, feeds, _sig(st)

    bidi = runner.startswith("bidi")
    cell = _build_cell(tf, prog["cell"], tdt)
    cell_bw = _build_cell(tf, prog["cell_bw"], tdt) if bidi else None
    init = init_bw = None
    if prog["init"] == "feed":
        init, phs, f = _state_placeholders(tf, cell, b, dt, r)
        feeds.update(f)
        grads_of += phs
        if bidi:
            init_bw, phs, f = _state_placeholders(tf, cell_bw, b, dt, r)
            feeds.update(f)
            grads_of += phs
    elif prog["init"] == "zero":
        bsz = tf.shape(x)[1 if tm else 0] if prog["unknown"] else b
        init = cell.zero_state(bsz, tdt)
        init_bw = cell_bw.zero_state(bsz, tdt) if bidi else None
    dtype_arg = None if (init is not None and r.random() < 0.5) else tdt
    if prog["outer"]:
        with tf.variable_scope(prog["outer"]):
            return _run_cells(tf, prog, cell, cell_bw, x, seq, init, init_bw, dtype_arg, grads_of, feeds)
    return _run_cells(tf, prog, cell, cell_bw, x, seq, init, init_bw, dtype_arg, grads_of, feeds)


def _run_cells(tf, prog, cell, cell_bw, x, seq, init, init_bw, dtype_arg, grads_of, feeds):
    tm, runner, sc = prog["time_major"], prog["runner"], prog["scope"]
    if runner == "direct":  # the cell called step by step, as TF1 decoders do
        state = init if init is not None else cell.zero_state(prog["batch"], dtype_arg or x.dtype)
        outs = []
        for k, xt in enumerate(tf.unstack(x, axis=0 if tm else 1)):
            if sc:
                with tf.variable_scope(sc, reuse=k > 0):
                    o, state = cell(xt, state)
            else:
                o, state = cell(xt, state)
            outs.append(o)
        return outs + _leaves(state), grads_of, feeds, _sig(state)
    if runner == "twice":  # one cell object run twice: the second run reuses its variables
        out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=seq, initial_state=init, dtype=dtype_arg,
                                    time_major=tm, scope=sc)
        out2, st2 = tf.nn.dynamic_rnn(cell, tf.reverse(x, [0 if tm else 1]) * 0.5, initial_state=st,
                                      time_major=tm, scope=sc)
        return [out, out2] + _leaves(st2), grads_of, feeds, _sig(st2)
    if runner == "dynamic":
        out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=seq, initial_state=init, dtype=dtype_arg,
                                    time_major=tm, scope=sc)
        return [out] + _leaves(st), grads_of, feeds, _sig(st)
    if runner == "bidi_dynamic":
        outs, sts = tf.nn.bidirectional_dynamic_rnn(cell, cell_bw, x, sequence_length=seq, initial_state_fw=init,
                                                    initial_state_bw=init_bw, dtype=dtype_arg, time_major=tm,
                                                    scope=sc)
        return list(outs) + _leaves(sts), grads_of, feeds, _sig(outs) + _sig(sts)
    steps = tf.unstack(x, num=prog["time"], axis=0 if tm else 1)
    if runner == "static":
        outs, st = tf.nn.static_rnn(cell, steps, initial_state=init, dtype=dtype_arg, sequence_length=seq,
                                    scope=sc)
        return list(outs) + _leaves(st), grads_of, feeds, _sig(outs) + _sig(st)
    outs, st_fw, st_bw = tf.nn.static_bidirectional_rnn(cell, cell_bw, steps, initial_state_fw=init,
                                                        initial_state_bw=init_bw, dtype=dtype_arg,
                                                        sequence_length=seq, scope=sc)
    return list(outs) + _leaves(st_fw) + _leaves(st_bw), grads_of, feeds, _sig(outs) + _sig((st_fw, st_bw))


_V1_NAMES = {"gates/kernel": "w_ru", "gates/bias": "b_ru", "candidate/kernel": "w_c", "candidate/bias": "b_c"}


def _canonical_name(tf, prog, name):
    if _is_tf(tf) and prog["runner"] == "fused":
        return name.replace("rnn/lstm_fused_cell/", "lstm_fused_cell/")
    if _is_tf(tf) and "/grublockv1/" in "/" + name:
        for a, b in _V1_NAMES.items():
            name = name.replace("grublockv1/" + a, "gru_cell/" + b)
    return name


def run_program(tf, prog):
    """Runs `prog` in library `tf`; returns ([(variable name, shape)], [arrays])."""
    g = tf.Graph()
    with g.as_default():
        outs, grads_of, feeds, sig = build(tf, prog)
        dt = np.dtype(prog["dtype"])
        vs = sorted(tf.trainable_variables(), key=lambda v: _canonical_name(tf, prog, v.name))
        # the loss weights are fed: with unknown dimensions the outputs' shapes are known only at run time
        wts = [tf.placeholder(o.dtype) for o in outs]
        loss = tf.add_n([tf.reduce_sum(o * w) for o, w in zip(outs, wts)])
        wrt = vs + grads_of
        grads = tf.gradients(loss, wrt)
        grads = [tf.convert_to_tensor(gr) if gr is not None else tf.zeros_like(v) for gr, v in zip(grads, wrt)]
        init = tf.global_variables_initializer()
        with tf.Session(graph=g) as s:
            s.run(init)
            vr = np.random.default_rng(prog["seed"] + 3)
            for v in vs:
                s.run(v.assign(vr.uniform(-0.8, 0.8, [int(k) for k in v.shape]).astype(dt)))
            r = np.random.default_rng(prog["seed"] + 2)
            for w, o in zip(wts, s.run(outs, feeds)):
                feeds[w] = r.uniform(-1, 1, np.shape(o)).astype(dt)
            vals = s.run(outs + grads, feeds)
        names = [(_canonical_name(tf, prog, v.name), tuple(int(k) for k in v.shape)) for v in vs]
        static = [(o.shape.as_list() if o.shape.rank is not None else None, o.dtype.name) for o in outs]
        return names + static + [sig], vals, len(outs)


def _agrees(tf_entry, cf_entry):
    """A variable's (name, shape) must be equal; an output's static shape must know every
    dimension TF knows (collflow may know more: e.g. a batch size TF's shape inference loses)."""
    if tf_entry == cf_entry:
        return True
    if not isinstance(tf_entry, tuple) or not isinstance(cf_entry, tuple):
        return False  # the results' nesting (a string) differs
    (ts, tdt), (cs, cdt) = tf_entry, cf_entry
    if not isinstance(ts, list) or not isinstance(cs, list) or tdt != cdt or len(ts) != len(cs):
        return False
    return all(a is None or a == b for a, b in zip(ts, cs))


def compare(prog, want, got):
    """Asserts collflow's `got` equals TensorFlow's `want` (from run_program)."""
    (wn, wv, wk), (gn, gv, gk) = want, got
    if prog["unknown"] and (prog["runner"] == "fused" or "'block_lstm'" in repr(prog)):
        # TF 1.15's LSTM block cells are the BlockLSTM / LSTMBlockCell ops, whose shape functions
        # take the batch from the inputs only (not the state): the LSTMCell standing in for them
        # here knows more, so only the depth is compared
        wn = [([None] * (len(n[0]) - 1) + n[0][-1:], n[1]) if isinstance(n[0], list) else n for n in wn]
    if len(gn) != len(wn) or not all(map(_agrees, wn, gn)):
        diff = [(k, a, b) for k, (a, b) in enumerate(zip(wn, gn)) if not _agrees(a, b)] or (len(wn), len(gn))
        raise AssertionError(f"variables (then the outputs' static shapes) differ: {prog}\n"
                             f"(index, TF, collflow): {diff}")
    assert gk == wk and len(gv) == len(wv), f"fetch counts differ {gk}/{len(gv)} vs {wk}/{len(wv)}: {prog}"
    tol = 1e-10 if prog["dtype"] == "float64" else 1e-5
    for i, (a, b) in enumerate(zip(gv, wv)):
        a, b = np.asarray(a), np.asarray(b)
        what = f"output {i}" if i < wk else (f"grad of {wn[i - wk][0]}" if i - wk < len(wn) - wk else f"grad {i}")
        assert a.shape == b.shape, f"{what}: shape {a.shape} vs TF {b.shape}: {prog}"
        assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs TF {b.dtype}: {prog}"
        np.testing.assert_allclose(a, b, rtol=tol * 10, atol=tol, err_msg=f"{what}: {prog}")
