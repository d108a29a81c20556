"""Randomised differential checks of tf.keras layers against tf_keras as TF 1.x programs use it
(tensorflow.compat.v1 with TF_USE_LEGACY_KERAS=1, graph mode: eager execution disabled).

Each case draws a random configuration of one layer (Dense, Conv1D/2D/3D with strides, dilation
and same/valid/causal padding, Conv2D/3DTranspose with output_padding, SeparableConv1D/2D,
DepthwiseConv2D, the poolings, UpSampling (nearest or bilinear)/ZeroPadding/Cropping, each with
either data_format where Keras takes one,
BatchNormalization in and out of training, LayerNormalization, Embedding, SimpleRNN/LSTM/GRU with
masks, initial states, go_backwards and return_state, Bidirectional, TimeDistributed, the shape
and merge layers, the activation layers, Dropout at inference), builds it in both libraries,
checks that get_weights() agrees in order and shapes, gives both TensorFlow's weights (drawn at
random so that biases and norms are not trivial) with set_weights, and compares the variable
names, the static output shapes, the outputs and the gradients of sum(output * W) with respect
to the float inputs and the trainable weights; BatchNormalization in training also compares the
moving statistics after its updates.  A few small Sequential and functional models are then
fitted for two epochs without shuffling: the histories and the final weights must agree.

Not compared here: gradients with respect to non-trainable weights (TF's fused batch norm gives
None for the moving statistics, an artefact of the fused kernel), the tf_keras 2.x-only
arguments (keepdims of the global poolings), and what collflow refuses with a clear error
(listed in the comment under pytestmark).
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
pytest.importorskip("tf_keras", reason="tf_keras is not installed")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
tft.experimental.output_all_intermediates(True)  # TF's v1 graphs need it for a while loop's gradient

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.timeout(300)]

# collflow refuses these with a clear error (not compared): Conv2DTranspose/Conv3DTranspose(dilation_rate > 1)

ACTS = [None, "relu", "tanh", "sigmoid", "linear", "elu", "softplus", "selu", "softsign", "hard_sigmoid", "swish"]


def _f32(r, *s):
    return r.uniform(-1.5, 1.5, s).astype(np.float32)


def _tup(r, n, lo, hi):
    return tuple(int(r.integers(lo, hi)) for _ in range(n))


def _one(layer, phs):
    return layer(phs[0])


def _maybe_first(r, cfg, shape, odds=3):
    """One case in `odds` channels_first: the data_format set and the shape's channels moved second."""
    if r.integers(odds) == 0:
        cfg["data_format"] = "channels_first"
        return [shape[0], shape[-1]] + shape[1:-1]
    return shape


def _case(name, make, inputs, call=_one, **extra):
    return dict(name=name, make=make, inputs=inputs, call=call, **extra)


def _act(r):
    return ACTS[int(r.integers(len(ACTS)))]


def g_dense(r):
    cfg = dict(units=int(r.integers(1, 6)), activation=_act(r), use_bias=bool(r.integers(2)))
    shape = [int(r.integers(1, 4))] + [int(r.integers(1, 5)) for _ in range(int(r.integers(1, 4)))]
    return _case(f"Dense{cfg}{shape}", lambda L: L.Dense(**cfg), [_f32(r, *shape)])


def _strides_or_dilation(r, n):
    if r.integers(2):
        return _tup(r, n, 1, 3), (1,) * n
    return (1,) * n, _tup(r, n, 1, 3)


def g_conv(r):
    n = int(r.integers(1, 4))
    cls = f"Conv{n}D"
    padding = str(r.choice(["same", "valid"] + (["causal"] if n == 1 else [])))
    k = _tup(r, n, 1, 4)
    strides, dil = _strides_or_dilation(r, n)
    cfg = dict(filters=int(r.integers(1, 5)), kernel_size=k, strides=strides, padding=padding, dilation_rate=dil,
               activation=_act(r), use_bias=bool(r.integers(2)))
    sp = [int(r.integers(k[i] * dil[i] - dil[i] + 1, 9 if n < 3 else 6)) for i in range(n)]
    shape = [int(r.integers(1, 3))] + sp + [int(r.integers(1, 4))]
    if padding != "causal":   # Keras refuses causal with channels_first
        shape = _maybe_first(r, cfg, shape)
    return _case(f"{cls}{cfg}{shape}", lambda L: getattr(L, cls)(**cfg), [_f32(r, *shape)])


def g_conv_transpose(r):
    n = int(r.integers(2, 4))
    cls = f"Conv{n}DTranspose"
    strides = _tup(r, n, 1, 3)
    cfg = dict(filters=int(r.integers(1, 4)), kernel_size=_tup(r, n, 1, 4), strides=strides,
               padding=str(r.choice(["same", "valid"])), activation=_act(r), use_bias=bool(r.integers(2)),
               output_padding=tuple(int(r.integers(0, s)) for s in strides) if r.integers(2) else None)
    shape = [int(r.integers(1, 3))] + [int(r.integers(1, 5)) for _ in range(n)] + [int(r.integers(1, 4))]
    if cfg["output_padding"] is not None and not all(
            _transpose_consistent(d, k, s, p, cfg["padding"])
            for d, k, s, p in zip(shape[1:-1], cfg["kernel_size"], strides, cfg["output_padding"])):
        cfg["output_padding"] = None  # an output the forward convolution would not map back (TF fails too)
    shape = _maybe_first(r, cfg, shape)
    return _case(f"{cls}{cfg}{shape}", lambda L: getattr(L, cls)(**cfg), [_f32(r, *shape)])


def _transpose_consistent(n, k, s, p, padding):
    """Whether the output length Keras gives for output_padding p convolves back to n."""
    out = (n - 1) * s + k - 2 * (k // 2 if padding == "same" else 0) + p
    return (-(-out // s) if padding == "same" else (out - k) // s + 1) == n


def g_separable(r):
    n = int(r.integers(1, 3))
    cls = f"SeparableConv{n}D"
    k = _tup(r, n, 1, 4)
    strides, dil = _strides_or_dilation(r, n)
    strides = (strides[0],) * n  # TF's separable kernel takes equal strides only
    cfg = dict(filters=int(r.integers(1, 5)), kernel_size=k, strides=strides,
               padding=str(r.choice(["same", "valid"] + (["causal"] if n == 1 else []))), dilation_rate=dil,
               depth_multiplier=int(r.integers(1, 3)), activation=_act(r), use_bias=bool(r.integers(2)))
    shape = [int(r.integers(1, 3))] + [int(r.integers(k[i] * dil[i] - dil[i] + 1, 9)) for i in range(n)] + \
        [int(r.integers(1, 4))]
    if cfg["padding"] != "causal":
        shape = _maybe_first(r, cfg, shape)
    return _case(f"{cls}{cfg}{shape}", lambda L: getattr(L, cls)(**cfg), [_f32(r, *shape)])


def g_depthwise(r):
    k = _tup(r, 2, 1, 4)
    s = int(r.integers(1, 3))
    strides, dil = ((s, s), (1, 1)) if r.integers(2) else ((1, 1), _tup(r, 2, 1, 3))
    cfg = dict(kernel_size=k, strides=strides, padding=str(r.choice(["same", "valid"])), dilation_rate=dil,
               depth_multiplier=int(r.integers(1, 4)), activation=_act(r), use_bias=bool(r.integers(2)))
    shape = [int(r.integers(1, 3))] + [int(r.integers(k[i] * dil[i] - dil[i] + 1, 9)) for i in range(2)] + \
        [int(r.integers(1, 4))]
    if dil == (1, 1) and r.integers(4) == 0:
        cfg["data_format"] = "channels_first"
        shape = [shape[0], shape[3], shape[1], shape[2]]
    return _case(f"DepthwiseConv2D{cfg}{shape}", lambda L: L.DepthwiseConv2D(**cfg), [_f32(r, *shape)])


def g_pool(r):
    n = int(r.integers(1, 4))
    cls = f"{r.choice(['Max', 'Average'])}Pooling{n}D"
    p = _tup(r, n, 1, 4)
    cfg = dict(pool_size=p if n > 1 or r.integers(2) else p[0],
               strides=None if r.integers(3) == 0 else _tup(r, n, 1, 4),
               padding=str(r.choice(["same", "valid"])))
    shape = [int(r.integers(1, 3))] + [int(r.integers(p[i], 8 if n < 3 else 6)) for i in range(n)] + \
        [int(r.integers(1, 4))]
    shape = _maybe_first(r, cfg, shape)
    return _case(f"{cls}{cfg}{shape}", lambda L: getattr(L, cls)(**cfg), [_f32(r, *shape)])


def g_global_pool(r):
    n = int(r.integers(1, 4))
    cls = f"Global{r.choice(['Max', 'Average'])}Pooling{n}D"
    shape = [int(r.integers(1, 3))] + [int(r.integers(1, 5)) for _ in range(n + 1)]
    cfg = {"data_format": "channels_first"} if r.integers(3) == 0 else {}
    return _case(f"{cls}{cfg}{shape}", lambda L: getattr(L, cls)(**cfg), [_f32(r, *shape)])


def g_resize(r):
    n = int(r.integers(1, 4))
    which = str(r.choice(["UpSampling", "ZeroPadding", "Cropping"]))
    cls = f"{which}{n}D"
    shape = [int(r.integers(1, 3))] + [int(r.integers(3, 6)) for _ in range(n)] + [int(r.integers(1, 3))]
    if which == "UpSampling":
        cfg = {"size": int(r.integers(1, 4)) if (n == 1 or r.integers(2)) else _tup(r, n, 1, 4)}
    else:
        hi = 3 if which == "ZeroPadding" else 2
        form = int(r.integers(3))
        if form == 0:
            arg = int(r.integers(0, hi))
        elif form == 1 and n > 1:
            arg = _tup(r, n, 0, hi)
        else:
            arg = tuple(_tup(r, 2, 0, hi) for _ in range(n)) if n > 1 else _tup(r, 2, 0, hi)
        cfg = {"padding" if which == "ZeroPadding" else "cropping": arg}
    if which == "UpSampling" and n == 2 and r.integers(3) == 0:
        cfg["interpolation"] = "bilinear"
    if n > 1:   # the 1-D ones take no data_format
        shape = _maybe_first(r, cfg, shape)
    return _case(f"{cls}{cfg}{shape}", lambda L: getattr(L, cls)(**cfg), [_f32(r, *shape)])


def g_batch_norm(r):
    nd = int(r.integers(2, 5))
    shape = [int(r.integers(2, 5))] + [int(r.integers(1, 4)) for _ in range(nd - 1)]
    cfg = dict(axis=int(r.choice([-1] + list(range(1, nd)))), momentum=float(r.choice([0.99, 0.9, 0.5])),
               center=bool(r.integers(2)), scale=bool(r.integers(2)), epsilon=float(r.choice([1e-3, 0.1])))
    training = bool(r.integers(2))
    return _case(f"BatchNormalization{cfg}{shape}training={training}", lambda L: L.BatchNormalization(**cfg),
                 [_f32(r, *shape)], lambda layer, phs: layer(phs[0], training=training), updates=training)


def g_layer_norm(r):
    nd = int(r.integers(2, 5))
    shape = [int(r.integers(1, 4))] + [int(r.integers(1, 5)) for _ in range(nd - 1)]
    axes = [-1, 1, list(range(1, nd))] + ([[1, nd - 1]] if nd > 2 else [])
    cfg = dict(axis=axes[int(r.integers(len(axes)))], center=bool(r.integers(2)), scale=bool(r.integers(2)),
               epsilon=float(r.choice([1e-3, 0.1])))
    return _case(f"LayerNormalization{cfg}{shape}", lambda L: L.LayerNormalization(**cfg), [_f32(r, *shape)])


def g_embedding(r):
    vocab = int(r.integers(2, 8))
    cfg = dict(input_dim=vocab, output_dim=int(r.integers(1, 5)), mask_zero=bool(r.integers(2)))
    shape = [int(r.integers(1, 4)), int(r.integers(1, 6))]
    return _case(f"Embedding{cfg}{shape}", lambda L: L.Embedding(**cfg), [r.integers(0, vocab, shape).astype(np.int32)])


def _rnn_config(r, kind):
    cfg = dict(units=int(r.integers(1, 4)), return_sequences=bool(r.integers(2)))
    if kind == "GRU":
        cfg["reset_after"] = bool(r.integers(2))
    if kind != "SimpleRNN" and r.integers(2):
        cfg["recurrent_activation"] = str(r.choice(["sigmoid", "hard_sigmoid"]))
    return cfg


def _step_mask(r, b, t):
    if r.integers(2):
        return np.arange(t)[None, :] < r.integers(0, t + 1, b)[:, None]  # padded sequences
    return r.random((b, t)) < 0.7  # any steps


def g_rnn(r):
    kind = str(r.choice(["SimpleRNN", "LSTM", "GRU"]))
    cfg = _rnn_config(r, kind)
    cfg.update(return_state=bool(r.integers(2)), go_backwards=bool(r.integers(2)))
    if r.integers(3) == 0:
        cfg["activation"] = str(r.choice(["relu", "sigmoid", "tanh"]))
    if r.integers(3) == 0:
        cfg["use_bias"] = False
    if r.integers(4) == 0:
        cfg["unroll"] = True
    b, t, f = int(r.integers(1, 4)), int(r.integers(1, 5)), int(r.integers(1, 4))
    masked, with_state = bool(r.integers(2)), bool(r.integers(4) == 0)
    inputs = [_f32(r, b, t, f)] + ([_step_mask(r, b, t)] if masked else [])
    nstate = 2 if kind == "LSTM" else 1
    if with_state:
        inputs += [_f32(r, b, cfg["units"]) for _ in range(nstate)]

    def call(layer, phs):
        kw = {"mask": phs[1]} if masked else {}
        if with_state:
            kw["initial_state"] = list(phs[1 + masked:])
        return layer(phs[0], **kw)
    return _case(f"{kind}{cfg}{[b, t, f]}mask={masked}initial_state={with_state}",
                 lambda L: getattr(L, kind)(**cfg), inputs, call)


def g_bidirectional(r):
    kind = str(r.choice(["SimpleRNN", "LSTM", "GRU"]))
    cfg = _rnn_config(r, kind)
    if r.integers(3) == 0:
        cfg["return_state"] = True
    merge = [None, "concat", "sum", "mul", "ave"][int(r.integers(5))]
    b, t, f = int(r.integers(1, 4)), int(r.integers(1, 5)), int(r.integers(1, 4))
    masked, with_state = bool(r.integers(2)), bool(r.integers(4) == 0)
    inputs = [_f32(r, b, t, f)] + ([_step_mask(r, b, t)] if masked else [])
    if with_state:
        inputs += [_f32(r, b, cfg["units"]) for _ in range(2 * (2 if kind == "LSTM" else 1))]

    def call(layer, phs):
        kw = {"mask": phs[1]} if masked else {}
        if with_state:
            kw["initial_state"] = list(phs[1 + masked:])
        return layer(phs[0], **kw)
    return _case(f"Bidirectional({kind}{cfg}, merge_mode={merge}){[b, t, f]}mask={masked}initial_state={with_state}",
                 lambda L: L.Bidirectional(getattr(L, kind)(**cfg), merge_mode=merge), inputs, call)


def g_time_distributed(r):
    b, t = int(r.integers(1, 4)), int(r.integers(1, 5))
    which = int(r.integers(3))
    if which == 0:
        cfg = dict(units=int(r.integers(1, 4)), activation=_act(r))
        return _case(f"TimeDistributed(Dense{cfg})", lambda L: L.TimeDistributed(L.Dense(**cfg)),
                     [_f32(r, b, t, int(r.integers(1, 4)))])
    if which == 1:
        cfg = dict(filters=2, kernel_size=int(r.integers(1, 4)), padding=str(r.choice(["same", "valid"])))
        return _case(f"TimeDistributed(Conv2D{cfg})", lambda L: L.TimeDistributed(L.Conv2D(**cfg)),
                     [_f32(r, b, t, 4, 5, 2)])
    return _case("TimeDistributed(Flatten)", lambda L: L.TimeDistributed(L.Flatten()), [_f32(r, b, t, 3, 2)])


def g_reshape(r):
    b = int(r.integers(1, 4))
    which = int(r.integers(4))
    if which == 0:
        target = [(6, 4), (-1, 2), (4, 3, 2), (24,), (2, -1, 3)][int(r.integers(5))]
        return _case(f"Reshape{target}", lambda L: L.Reshape(target), [_f32(r, b, 2, 3, 4)])
    if which == 1:
        perm = tuple(int(i) + 1 for i in r.permutation(3))
        return _case(f"Permute{perm}", lambda L: L.Permute(perm), [_f32(r, b, 2, 3, 4)])
    if which == 2:
        shape = [b] + [int(r.integers(1, 4)) for _ in range(int(r.integers(1, 4)))]
        cfg = {"data_format": "channels_first"} if len(shape) > 2 and r.integers(2) else {}
        return _case(f"Flatten{cfg}{shape}", lambda L: L.Flatten(**cfg), [_f32(r, *shape)])
    n = int(r.integers(1, 4))
    return _case(f"RepeatVector({n})", lambda L: L.RepeatVector(n), [_f32(r, b, 3)])


def g_merge(r):
    kind = str(r.choice(["Concatenate", "Add", "Multiply", "Average", "Maximum", "Minimum", "Subtract", "Dot"]))
    b, nd = int(r.integers(1, 4)), int(r.integers(2, 5))
    shape = [b] + [int(r.integers(1, 4)) for _ in range(nd - 1)]
    k = 2 if kind in ("Subtract", "Dot") else int(r.integers(2, 4))
    cfg = {}
    if kind == "Concatenate":
        axis = int(r.integers(1, nd)) * int(r.choice([1, -1]))
        cfg["axis"] = axis
        shapes = []
        for _ in range(k):
            s = list(shape)
            s[axis] = int(r.integers(1, 4))
            shapes.append(s)
    elif kind == "Dot":
        d = int(r.integers(1, 4))
        if r.integers(2):
            shapes, cfg["axes"] = [[b, d], [b, d]], int(r.choice([1, -1]))
        else:
            a1, a2 = int(r.integers(1, 3)), int(r.integers(1, 3))
            s1, s2 = [b, 2, 3], [b, 3, 2]
            s1[a1], s2[a2] = d, d
            shapes, cfg["axes"] = [s1, s2], (a1, a2)
        cfg["normalize"] = bool(r.integers(2))
    else:
        shapes = [shape] * k
    return _case(f"{kind}{cfg}{shapes}", lambda L: getattr(L, kind)(**cfg), [_f32(r, *s) for s in shapes],
                 lambda layer, phs: layer(list(phs)))


def g_activation(r):
    kind = str(r.choice(["LeakyReLU", "PReLU", "ELU", "ThresholdedReLU", "Softmax", "ReLU", "Dropout", "Activation",
                         "SpatialDropout1D", "GaussianNoise", "GaussianDropout"]))
    nd = int(r.integers(2, 5))
    shape = [int(r.integers(1, 4))] + [int(r.integers(1, 4)) for _ in range(nd - 1)]
    cfg = {
        "LeakyReLU": lambda: {"alpha": float(r.choice([0.3, 0.01, 0.5]))},
        "PReLU": lambda: {"shared_axes": [int(r.integers(1, nd))]} if nd > 2 and r.integers(2) else {},
        "ELU": lambda: {"alpha": float(r.choice([1.0, 0.5]))},
        "ThresholdedReLU": lambda: {"theta": float(r.choice([1.0, 0.3, 0.0]))},
        "Softmax": lambda: {"axis": int(r.choice([-1] + list(range(1, nd))))},
        "ReLU": lambda: dict(max_value=[None, 0.7][int(r.integers(2))], negative_slope=float(r.choice([0.0, 0.2])),
                             threshold=float(r.choice([0.0, 0.3]))),
        "Dropout": lambda: {"rate": 0.4}, "GaussianDropout": lambda: {"rate": 0.4},
        "GaussianNoise": lambda: {"stddev": 0.4}, "SpatialDropout1D": lambda: {"rate": 0.4},
        "Activation": lambda: {"activation": str(r.choice([a for a in ACTS if a] + ["softmax", "exponential"]))},
    }[kind]()
    if kind == "SpatialDropout1D":
        shape = shape[:1] + [3, 2]
    return _case(f"{kind}{cfg}{shape}", lambda L: getattr(L, kind)(**cfg), [_f32(r, *shape)])


# generator -> number of cases (the recurrent ones cost ~1 s each in both libraries together)
GENERATORS = {g_dense: 8, g_conv: 14, g_conv_transpose: 10, g_separable: 10, g_depthwise: 8, g_pool: 10,
              g_global_pool: 8, g_resize: 12, g_batch_norm: 12, g_layer_norm: 6, g_embedding: 4, g_rnn: 12,
              g_bidirectional: 7, g_time_distributed: 4, g_reshape: 8, g_merge: 10, g_activation: 12}
CASES = [(g, i) for g, n in GENERATORS.items() for i in range(n)]


def _flat(o):
    return list(o) if isinstance(o, (list, tuple)) else [o]


def _build(tf, case, weights=None, out_shapes=None):
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(tf.bool if v.dtype == bool else tf.int32 if v.dtype.kind == "i" else tf.float32, v.shape)
               for v in case["inputs"]]
        layer = case["make"](tf.keras.layers)
        outs = _flat(case["call"](layer, phs))
        sess = tf.keras.backend.get_session()
        init = layer.get_weights()
        if weights is None:
            # TensorFlow's weights at random: a zero bias or unit gamma would hide a misplaced one
            weights = [np.random.default_rng(5).uniform(0.3, 1.5, w.shape).astype(w.dtype) for w in init]
        else:
            assert [w.shape for w in init] == [w.shape for w in weights]
        layer.set_weights(weights)
        variables = layer.trainable_weights
        r = np.random.default_rng(7)
        terms = [tf.reduce_sum(o * tf.constant(r.uniform(0.5, 1.5, out_shapes[k] if out_shapes else
                                                           o.shape.as_list()).astype(np.float32)))
                 for k, o in enumerate(outs)]
        floats = [p for p, v in zip(phs, case["inputs"]) if v.dtype == np.float32]
        grads = tf.gradients(tf.add_n(terms), floats + variables)
        fetch = outs + [tf.convert_to_tensor(gr) if gr is not None else tf.zeros_like(x)
                        for gr, x in zip(grads, floats + variables)]
        feed = dict(zip(phs, case["inputs"]))
        values = sess.run(fetch, feed)
        after = None
        if case.get("updates"):
            sess.run(layer.updates, feed)
            after = layer.get_weights()
        names = [v.name.replace("/lstm_cell", "").replace("/gru_cell", "").replace("/simple_rnn_cell", "")
                 for v in layer.weights]
        return dict(weights=weights, values=values, after=after, names=names,
                    shapes=[tuple(o.shape.as_list()) for o in outs])


@pytest.mark.parametrize("gen,index", CASES, ids=[f"{g.__name__[2:]}-{i}" for g, i in CASES])
def test_random_layer_matches_tf_keras(gen, index):
    case = gen(np.random.default_rng([index, list(GENERATORS).index(gen)]))
    want = _build(tft, case)
    got = _build(cft, case, want["weights"], want["shapes"])
    assert got["names"] == want["names"], case["name"]
    assert got["shapes"] == want["shapes"], case["name"]
    assert len(got["values"]) == len(want["values"])
    for k, (a, b) in enumerate(zip(got["values"], want["values"])):
        assert np.shape(a) == np.shape(b), (case["name"], k)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{case['name']}: fetch {k}")
    if want["after"] is not None:
        for a, b in zip(got["after"], want["after"]):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{case['name']}: after the updates")


# -- end to end: compile, fit two epochs without shuffling ------------------------------------------

def _fit_case(seed):
    """A small model of a random kind and task, its optimizer, loss and metrics, and fixed data."""
    r = np.random.default_rng(seed)
    arch = ["dense", "conv", "rnn", "functional"][seed % 4]
    task = str(r.choice(["reg", "bin", "cat", "sparse"]))
    opt, lr = int(r.integers(4)), float(r.choice([0.01, 0.05]))
    momentum = float(r.choice([0.0, 0.9]))
    nesterov = bool(r.integers(2)) and momentum > 0
    norm, hidden, act = bool(r.integers(2)), int(r.integers(2, 6)), str(r.choice(["relu", "tanh", "sigmoid"]))
    rnn, batch, n = str(r.choice(["LSTM", "GRU", "SimpleRNN"])), int(r.choice([8, 16, 20])), 48
    if arch in ("dense", "functional"):
        x = [r.uniform(-1, 1, (n, 5)).astype(np.float32), r.uniform(-1, 1, (n, 3)).astype(np.float32)]
    else:
        x = [r.uniform(-1, 1, (n, 6, 3)).astype(np.float32)]
    s = x[0].reshape(n, -1).sum(1)
    cls = np.abs(s * 2).astype(int) % 3
    y = {"reg": np.stack([s, np.sin(s)], 1).astype(np.float32), "bin": (s > 0).astype(np.float32)[:, None],
         "cat": np.eye(3, dtype=np.float32)[cls], "sparse": cls}[task]
    out_dim, out_act, loss, metrics = {
        "reg": (2, None, str(r.choice(["mse", "mae", "logcosh", "huber_loss"])), ["mae"]),
        "bin": (1, "sigmoid", "binary_crossentropy", ["accuracy"]),
        "cat": (3, "softmax", "categorical_crossentropy", ["accuracy", "mse"]),
        "sparse": (3, "softmax", "sparse_categorical_crossentropy", ["accuracy"])}[task]

    def build(tf):
        L = tf.keras.layers
        if arch == "dense":
            m = tf.keras.Sequential([L.Dense(hidden, activation=act, input_shape=(5,))] +
                                    ([L.BatchNormalization()] if norm else []) + [L.Dense(out_dim, activation=out_act)])
        elif arch == "conv":
            m = tf.keras.Sequential([L.Conv1D(hidden, 3, activation=act, padding="same", input_shape=(6, 3)),
                                     L.GlobalMaxPooling1D() if norm else L.Flatten(),
                                     L.Dense(out_dim, activation=out_act)])
        elif arch == "rnn":
            m = tf.keras.Sequential([getattr(L, rnn)(hidden, input_shape=(6, 3)), L.Dense(out_dim, activation=out_act)])
        else:
            a, b = L.Input((5,)), L.Input((3,))
            h = L.concatenate([L.Dense(hidden, activation=act)(a), b])
            h = L.BatchNormalization()(h) if norm else h
            m = tf.keras.Model([a, b], L.Dense(out_dim, activation=out_act)(h))
        o = [lambda: tf.keras.optimizers.SGD(lr, momentum=momentum, nesterov=nesterov),
             lambda: tf.keras.optimizers.Adam(lr), lambda: tf.keras.optimizers.RMSprop(lr),
             lambda: tf.keras.optimizers.Adagrad(lr)][opt]()
        m.compile(optimizer=o, loss=loss, metrics=list(metrics))
        return m, (x if arch == "functional" else x[0])
    return build, y, batch


def _fit(tf, build, y, batch, weights=None):
    with tf.Graph().as_default():
        m, x = build(tf)
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        hist = m.fit(x, y, batch_size=batch, epochs=2, shuffle=False, verbose=0).history
        return w0, hist, m.get_weights()


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 7, 10])
def test_random_model_fit_matches_tf_keras(seed):
    build, y, batch = _fit_case(seed)
    w0, want, want_w = _fit(tft, build, y, batch)
    _, got, got_w = _fit(cft, build, y, batch, w0)
    # TF 1.15 named the metrics "acc", "mean_absolute_error", ...; TF 2's Keras, the yardstick
    # here, keeps the strings compile() was given
    renamed = {k.replace("accuracy", "acc").replace("mae", "mean_absolute_error")
               .replace("mse", "mean_squared_error"): v for k, v in want.items()}
    assert sorted(got) == sorted(renamed)
    for k in renamed:
        np.testing.assert_allclose(got[k], renamed[k], rtol=2e-4, atol=1e-5, err_msg=k)
    for a, b in zip(got_w, want_w):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)
