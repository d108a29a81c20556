"""The harness of the differential tests against TensorFlow 1.x (tests/tf1/test_vs_*.py).

A case is `(id, fn(tf, *inputs) -> tensor or list of tensors, input specs)`; an input spec is
a shape, or ("pos", *shape) for values in [0.5, 2).  `check_case` builds the case in both
`tensorflow.compat.v1` and `collflow.compat.v1`, feeds the same float32 inputs, and compares
the outputs and the gradients of sum(output * W) for fixed random W (IndexedSlices densified).
"""
import os

import numpy as np

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

RTOL, ATOL = 1e-5, 1e-5


def _pos(r, *s):
    return r.uniform(0.5, 2.0, s).astype(np.float32)


def _any(r, *s):
    return r.uniform(-2.0, 2.0, s).astype(np.float32)


def make_input(r, spec):
    if spec[0] == "pos":
        return _pos(r, *spec[1:])
    return _any(r, *spec)


def evaluate(tf, fn, values, weights_seed):
    g = tf.Graph()
    with g.as_default():
        xs = [tf.placeholder(tf.float32, v.shape) for v in values]
        out = fn(tf, *xs)
        outs = out if isinstance(out, (list, tuple)) else [out]
        r = np.random.default_rng(weights_seed)
        terms, ws = [], []
        for o in outs:
            w = r.uniform(0.5, 1.5, [d for d in o.shape.as_list()]).astype(np.float32)
            ws.append(w)
            terms.append(tf.reduce_sum(o * tf.constant(w)))
        loss = tf.add_n(terms)
        grads = tf.gradients(loss, xs)
        fetch = list(outs) + [tf.convert_to_tensor(gr) if gr is not None else tf.zeros_like(x)
                              for gr, x in zip(grads, xs)]
        with tf.Session(graph=g) as s:
            return s.run(fetch, dict(zip(xs, values)))




def check_case(case, tft, cft, rtol=RTOL, atol=ATOL):
    """Builds `case` in TensorFlow (`tft`) and collflow (`cft`) and compares every fetch."""
    name, fn, specs = case[:3]
    r = np.random.default_rng(sum(map(ord, name)))
    values = [make_input(r, s) for s in specs]
    want = evaluate(tft, fn, values, 7)
    got = evaluate(cft, fn, values, 7)
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (name, k, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{name}: fetch {k}")
