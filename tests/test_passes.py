"""Constant folding and common-subexpression elimination (runtime/passes.py): op counts of the
compiled plan before and after, and the values unchanged."""
import numpy as np
import pytest

import collflow as cf


def _plans(build, feed_of):
    out = []
    for opt in (False, True):
        g = cf.Graph()
        with g.as_default():
            fetches, feeds = build()
            init = cf.global_variables_initializer()
        with cf.Session(graph=g, config={"optimize": opt}) as s:
            s.run(init)
            fd = feed_of(feeds)
            out.append((s.run(fetches, fd), s.plan_for(fetches, fd)))
    return out


@pytest.mark.host_only("constant folding runs for CPU plans (a folded value is a host array)")
def test_constant_subgraphs_fold_and_values_stay():
    def build():
        x = cf.placeholder(cf.float32, (None, 4))
        c = cf.exp(cf.constant(np.arange(4, dtype=np.float32)) * 0.5) + 1.0   # 4 ops of constants
        s = cf.reduce_sum(cf.ones_like(cf.zeros([3, 4])))                     # shape-only
        return [x * c + s, c], [x]
    (r0, p0), (r1, p1) = _plans(build, lambda f: {f[0]: np.ones((2, 4), np.float32)})
    for a, b in zip(r0, r1):
        np.testing.assert_array_equal(a, b)
    types0, types1 = [o.type for o in p0.ops], [o.type for o in p1.ops]
    assert "Exp" in types0 and "Exp" not in types1 and "OnesLike" not in types1
    assert len(p1.ops) <= len(p0.ops) - 5
    # folded values are constants of the plan: bound once, never written
    r2 = None
    g = cf.Graph()
    with g.as_default():
        c = cf.constant([1.0, 2.0]) * 3.0
    with cf.Session(graph=g) as s:
        a = s.run(c)
        a[0] = 99.0  # the caller's copy
        r2 = s.run(c)
    np.testing.assert_array_equal(r2, [3.0, 6.0])


def test_identical_subexpressions_run_once():
    def build():
        x = cf.placeholder(cf.float32, (3,))
        a = cf.tanh(x) * 2.0
        b = cf.tanh(x) * 2.0          # the same ops on the same inputs
        return [a + b, a, b], [x]
    (r0, p0), (r1, p1) = _plans(build, lambda f: {f[0]: np.array([0.1, 0.2, 0.3], np.float32)})
    for u, v in zip(r0, r1):
        np.testing.assert_array_equal(u, v)
    assert [o.type for o in p0.ops].count("Tanh") == 2
    assert [o.type for o in p1.ops].count("Tanh") == 1


def test_random_and_stateful_ops_are_never_merged_or_folded():
    def build():
        r1 = cf.random_uniform((4,), seed=1)
        r2 = cf.random_uniform((4,), seed=1)   # same seed, but two ops: two streams' draws
        v = cf.Variable(0.0)
        inc1, inc2 = cf.assign_add(v, 1.0), cf.assign_add(v, 1.0)
        return [r1, r2, inc1, inc2], []
    (r0, p0), (r1, p1) = _plans(build, lambda f: {})
    assert [o.type for o in p1.ops].count("RandomUniform") == 2
    assert [o.type for o in p1.ops].count("AssignAddVariable") == 2
    assert sorted([float(r1[2]), float(r1[3])]) == [1.0, 2.0]


def test_pinned_ops_and_control_dependencies_are_left_alone():
    g = cf.Graph()
    with g.as_default():
        a = cf.constant([1.0, 2.0])
        with cf.device("/gpu:0"):
            b = a * 3.0
        marker = cf.no_op()
        with cf.control_dependencies([marker]):
            c = a * 4.0
    with cf.Session(graph=g, config={"allow_soft_placement": True}) as s:
        np.testing.assert_array_equal(s.run(b), [3.0, 6.0])
        np.testing.assert_array_equal(s.run(c), [4.0, 8.0])
        assert "Mul" in [o.type for o in s.plan_for(b).ops] and "Mul" in [o.type for o in s.plan_for(c).ops]


def test_a_kernel_error_in_a_constant_subgraph_surfaces_at_run_time():
    g = cf.Graph()
    with g.as_default():
        bad = cf.gather(cf.constant([1.0, 2.0]), cf.constant([5]))
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.InvalidArgumentError):
            s.run(bad)


@pytest.mark.host_only("constant folding runs for CPU plans (a folded value is a host array)")
def test_folding_a_shape_only_op_keeps_its_inputs_side_effects():
    """TF1 runs the assign behind tf.zeros_like(assign) / tf.shape(assign) even though the
    result needs only its static shape; folding them must not drop the assign."""
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.zeros(3, np.float32))
        z = cf.zeros_like(cf.assign_add(v, np.ones(3, np.float32)))
        sh = cf.shape(cf.assign_add(v, np.full(3, 2.0, np.float32)))
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        np.testing.assert_array_equal(s.run(z), np.zeros(3))
        np.testing.assert_array_equal(s.run(v), np.ones(3))
        np.testing.assert_array_equal(s.run(sh), [3])
        np.testing.assert_array_equal(s.run(v), np.full(3, 3.0))
        assert not any(o.type in ("ZerosLike", "Shape") for o in s.plan_for(z).ops)


# -- plans with loops and conds: the ops around them are folded and merged ---------------------

def _loop_and_cond(x):
    a = cf.tanh(x) * 2.0
    b = cf.tanh(x) * 2.0                     # a duplicate around the loop: merged
    k = cf.exp(cf.constant(0.5)) + 1.0       # constants: folded
    v = cf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 0.5 + a), [0, b])[1]
    w = cf.cond(cf.reduce_sum(x) > 0, lambda: v * k, lambda: cf.zeros_like(v) + cf.tanh(x) * 2.0)
    return w, cf.gradients(cf.reduce_sum(w * w), x)[0]


@pytest.mark.host_only("constant folding runs for CPU plans (a folded value is a host array)")
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true-branch", "false-branch"])
def test_control_flow_plans_fold_and_merge_around_loops_and_conds(sign):
    def build():
        x = cf.placeholder(cf.float32, (4,))
        return list(_loop_and_cond(x)), [x]
    xv = sign * np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    (r0, p0), (r1, p1) = _plans(build, lambda f: {f[0]: xv})
    for u, v in zip(r0, r1):
        np.testing.assert_array_equal(u, v)
    top0 = [o for o in p0.ops if getattr(o, "_ctx", None) is None]
    top1 = [o for o in p1.ops if getattr(o, "_ctx", None) is None]
    assert [o.type for o in top0].count("Tanh") == 2 and [o.type for o in top1].count("Tanh") == 1
    assert "Exp" in [o.type for o in top0] and "Exp" not in [o.type for o in top1]
    # ops inside the cond's branches are left alone (one may not run: a folded value always exists)
    assert [o.type for o in p1.ops if getattr(o, "_ctx", None) is not None].count("Tanh") >= 1


@pytest.mark.host_only("constant folding runs for CPU plans (a folded value is a host array)")
@pytest.mark.parametrize("level,cse,fold,want_tanh,want_exp", [
    ("L1", False, False, 1, 0),     # TF's default level runs both passes
    ("L0", False, False, 2, 1),     # L0: neither unless asked
    ("L0", True, False, 1, 1),
    ("L0", False, True, 2, 0),
])
def test_config_proto_optimizer_options_choose_the_passes(level, cse, fold, want_tanh, want_exp):
    """config.graph_options.optimizer_options as TF 1.x programs set it (opt_level L0 turns
    the graph optimizations off; the do_* flags keep one)."""
    import collflow.compat.v1 as tf
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, (3,))
        c = tf.exp(tf.constant([0.0, 1.0, 2.0]))
        out = tf.tanh(x) * c + tf.tanh(x)
    config = tf.ConfigProto()
    opts = config.graph_options.optimizer_options
    opts.opt_level = getattr(tf.OptimizerOptions, level)
    opts.do_common_subexpression_elimination = cse
    opts.do_constant_folding = fold
    opts.global_jit_level = tf.OptimizerOptions.ON_1  # recorded: collflow has no XLA
    xv = np.array([0.1, 0.2, 0.3], np.float32)
    with tf.Session(graph=g, config=config) as s:
        got = s.run(out, {x: xv})
        types = [o.type for o in s.plan_for(out, {x: xv}).ops]
    np.testing.assert_allclose(got, np.tanh(xv) * np.exp([0.0, 1.0, 2.0]) + np.tanh(xv), rtol=1e-6)
    assert types.count("Tanh") == want_tanh and types.count("Exp") == want_exp
    with pytest.raises(TypeError, match="GraphOptions"):
        config.graph_options = 3
    c2 = tf.ConfigProto(graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(opt_level=-1)))
    assert c2.graph_options.optimizer_options.passes() == {"cse": False, "fold": False}
    with pytest.raises(ValueError, match="L1 .0. or L0"):
        c2.graph_options.optimizer_options.opt_level = 3
    # Grappler's switches, as TF 1.x programs set them: recorded
    c2.graph_options.rewrite_options.layout_optimizer = 2
    c2.graph_options.rewrite_options.memory_optimization = 1
    assert c2.graph_options.rewrite_options.layout_optimizer == 2
    assert c2.graph_options.rewrite_options.arithmetic_optimization == 0
