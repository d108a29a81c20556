"""Random programs with loops and conds, run with the plan passes on and off (folding, CSE,
fusion, bucket views, buffer forwarding, collectives issued early): the same values and
gradients, seed after seed.  The programs mix what the passes act on: duplicated
subexpressions around and inside loops, constant and shape-only subgraphs, values that die
at an elementwise op (forwarded in place, large enough for the in-place kernels), values
captured by loop bodies, conds inside loops and loops inside conds, and gradients of it all.
"""
import numpy as np
import pytest

import collflow as cf

N = 4100  # above the in-place kernels' minimum size (kernels/inplace_kernels.py)
OFF = {"fuse_ops": False, "bucket_views": False, "optimize": False, "buffer_forwarding": False}

_UNARY = [lambda t: cf.tanh(t), lambda t: cf.nn.relu(t) - 0.25, lambda t: t * 0.75 + 0.1, lambda t: cf.sin(t),
          lambda t: cf.square(t) * 0.5 - 0.2]
_BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - 0.5 * b, lambda a, b: cf.maximum(a, b)]


def _program(rng, x, w):
    vals = [x, w * x]
    consts = cf.exp(cf.constant(rng.uniform(-0.5, 0.5), dtype=cf.float64)) + 0.5  # folded
    for step in range(int(rng.integers(6, 11))):
        kind = rng.integers(0, 7)
        a = vals[int(rng.integers(len(vals)))]
        b = vals[int(rng.integers(len(vals)))]
        if kind == 0:
            vals.append(_UNARY[int(rng.integers(len(_UNARY)))](a))
        elif kind == 1:
            vals.append(_BINARY[int(rng.integers(len(_BINARY)))](a, b))
        elif kind == 2:   # the same subexpression twice: merged by CSE outside control flow
            f = _UNARY[int(rng.integers(len(_UNARY)))]
            vals.append(f(a) + f(a) * consts)
        elif kind == 3:   # shape-only ops: folded, their input's producer still runs
            vals.append(a + cf.ones_like(b) * 0.1 + cf.zeros_like(a))
        elif kind == 4:   # a loop capturing an outside value, with a cond inside
            iters = int(rng.integers(1, 4))
            f, g = _UNARY[int(rng.integers(len(_UNARY)))], _UNARY[int(rng.integers(len(_UNARY)))]

            def body(i, v, f=f, g=g, cap=b):
                u = f(v) * 0.5 + cap * 0.25
                u = cf.cond(i % 2 < 1, lambda: g(u), lambda: u * 0.9)
                return i + 1, u
            vals.append(cf.while_loop(lambda i, v: i < iters, body, [0, a])[1])
        elif kind == 5:   # a cond on the data, a loop in one branch
            f = _UNARY[int(rng.integers(len(_UNARY)))]
            vals.append(cf.cond(cf.reduce_sum(a) > 0.0,
                                lambda: cf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, f(v) * 0.8),
                                                      [0, a + b])[1],
                                lambda: a * b * 0.5))
        else:             # a reduction broadcast back
            vals.append(a - cf.reduce_mean(a) * 0.5)
    out = vals[-1] + vals[len(vals) // 2] * 0.5
    loss = cf.reduce_sum(out * out) * 1e-3
    return out, loss


def _run(seed, config):
    rng = np.random.default_rng(seed)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, [N], name="x")
        w = cf.Variable(rng.uniform(-1, 1, N), name="w")
        out, loss = _program(rng, x, w)
        grads = [gr for gr in cf.gradients(loss, [x, w]) if gr is not None]  # out may not use w
        init = cf.global_variables_initializer()
    xv = rng.uniform(-1, 1, N)
    keep = xv.copy()
    with cf.Session(graph=g, config=config) as s:
        s.run(init)
        res = s.run([out, loss] + grads, {x: xv})
        again = s.run([out, loss] + grads, {x: xv})  # a second run of the same plan: nothing left over
        plan = s.plan_for([out, loss] + grads, {x: xv})
    np.testing.assert_array_equal(xv, keep)  # the feed is never written
    for a, b in zip(again, res):
        np.testing.assert_array_equal(a, b)
    return res, plan


@pytest.mark.parametrize("seed", range(24))
def test_random_control_flow_program_equals_its_plan_without_passes(seed):
    on, plan_on = _run(seed, {})
    off, plan_off = _run(seed, OFF)
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)
    assert plan_off.forwarded == []
    assert len(plan_on.ops) <= len(plan_off.ops)


def _train_ranks(seed, config):
    from collflow.comm import ThreadWorld

    def rank(c):
        rng = np.random.default_rng(seed)
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, [N], name="x")
            w = cf.Variable(rng.uniform(-1, 1, N), name="w")
            w2 = cf.Variable(rng.uniform(-1, 1, N), name="w2")
            out, loss = _program(rng, x * w2, w)
            opt = cf.train.SyncReplicasOptimizer(cf.train.MomentumOptimizer(0.05, 0.9), comm=c,
                                                 fusion_threshold_bytes=0)
            train = opt.minimize(loss + cf.reduce_sum(w * w2) * 1e-3)
            init = cf.global_variables_initializer()
        with cf.Session(graph=g, config=dict(config, comm=c)) as s:
            s.run(init)
            for step in range(2):
                s.run(train, {x: np.random.default_rng(100 * step + c.rank).uniform(-1, 1, N)})
            return s.run([w, w2])
    return ThreadWorld(2, timeout=60).run(rank)


@pytest.mark.parametrize("seed", range(6))
def test_random_control_flow_program_trained_on_two_ranks_equals_its_plan_without_passes(seed):
    on, off = _train_ranks(seed, {}), _train_ranks(seed, OFF)
    for r in range(2):
        for a, b in zip(on[r], off[r]):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(on[r], on[0]):
            assert np.array_equal(a, b)
