"""Randomised differential check of control flow against TensorFlow's: programs
built from nested while_loop (fixed and data-dependent trip counts), cond, scan and
elementwise/reduction bodies that read a placeholder and a variable; the value and the
gradients with respect to both must equal TensorFlow's to 1e-9 in float64."""
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow.compat.v1")
import collflow.compat.v1 as cf  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf.disable_eager_execution()
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(params=["v1", "v2"])
def control_flow(request):
    """TF's control flow v1 (TF 1.x's Enter/Exit/Switch/Merge graph) and v2, each for the test
    only: the switch is TF-global, and other tests expect TF's default (v2)."""
    was_v2 = tf.control_flow_v2_enabled()
    (tf.disable_control_flow_v2 if request.param == "v1" else tf.enable_control_flow_v2)()
    yield request.param
    (tf.enable_control_flow_v2 if was_v2 else tf.disable_control_flow_v2)()


def _expr(r, depth):
    """A random body v -> v' (a function of the library t, v, x, w)."""
    k = int(r.integers(0, 9 if depth < 2 else 5))
    if k == 0:
        return lambda t, v, x, w: v * w + t.sin(v)
    if k == 1:
        return lambda t, v, x, w: v + t.reduce_sum(w * v) * 0.1
    if k == 2:
        return lambda t, v, x, w: t.tanh(v) * x
    if k == 3:
        return lambda t, v, x, w: v * 0.9 + x * t.reduce_mean(v)
    if k == 4:
        return lambda t, v, x, w: t.sqrt(v * v + 1.0) - w
    if k == 5:
        a, b = _expr(r, depth + 1), _expr(r, depth + 1)
        return lambda t, v, x, w: t.cond(t.reduce_sum(v) > 0.0, lambda: a(t, v, x, w), lambda: b(t, v, x, w))
    inner = _expr(r, depth + 1)
    if k == 6:
        n = int(r.integers(1, 4))
        return lambda t, v, x, w: t.while_loop(lambda i, u: i < n, lambda i, u: (i + 1, inner(t, u, x, w)), (0, v))[1]
    if k == 7:
        return lambda t, v, x, w: t.scan(lambda acc, e: inner(t, acc, e, w) * 0.5,
                                         t.reshape(t.tile(x, [3]), [3, -1]) * v, initializer=v)[-1]
    # a trip count the data decides
    return lambda t, v, x, w: t.while_loop(
        lambda i, u: t.logical_and(t.reduce_sum(t.abs(u)) < 50.0, i < 5),
        lambda i, u: (i + 1, inner(t, u, x, w) * 1.5), (0, v))[1]


def _program(seed):
    r = np.random.default_rng(seed)
    top, n = _expr(r, 0), int(r.integers(1, 4))
    return lambda t, x, w: t.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, top(t, v, x, w)), (0, x))[1]


def _run(mod, seed, x, w):
    g = mod.Graph()
    with g.as_default():
        xp = mod.placeholder(mod.float64, x.shape)
        wv = mod.Variable(w)
        out = _program(seed)(mod, xp, wv)
        gx, gw = mod.gradients(mod.reduce_sum(out * out), [xp, wv])
        fetch = [out] + [t for t in (gx, gw) if t is not None]
        with mod.Session(graph=g) as s:
            s.run(mod.global_variables_initializer())
            return s.run(fetch, {xp: x})


@pytest.mark.parametrize("seed", range(40))
def test_random_control_flow_program(seed, control_flow):
    r = np.random.default_rng(10_000 + seed)
    x, w = r.normal(0, 1, 3), r.normal(0, 1, 3)
    want, got = _run(tf, seed, x, w), _run(cf, seed, x, w)
    assert len(want) == len(got)
    for a, b in zip(want, got):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9)
