"""cond and while_loop: values against NumPy, gradients against unrolled graphs, deadness."""
import numpy as np
import pytest

import collflow as cf


def _run(g, fetches, feed=None):
    with cf.Session(graph=g) as s:
        s.run(cf.global_variables_initializer()) if g.get_collection(cf.GraphKeys.GLOBAL_VARIABLES) else None
        return s.run(fetches, feed)


def test_cond_values_and_structures():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2,), name="x")
        p = cf.placeholder(cf.bool_, (), name="p")
        out = cf.cond(p, lambda: {"a": x * 2.0, "b": (x, x + 1.0)}, lambda: {"a": -x, "b": (x * 0.0, x)})
    with cf.Session(graph=g) as s:
        xv = np.array([1.0, -2.0], np.float32)
        r = s.run(out, {x: xv, p: True})
        np.testing.assert_allclose(r["a"], xv * 2)
        np.testing.assert_allclose(r["b"][1], xv + 1)
        r = s.run(out, {x: xv, p: False})
        np.testing.assert_allclose(r["a"], -xv)
        np.testing.assert_allclose(r["b"][0], 0 * xv)


def test_untaken_branch_does_not_run_stateful_ops():
    g = cf.Graph()
    with g.as_default():
        counter_t = cf.Variable(0, name="count_true")
        counter_f = cf.Variable(0, name="count_false")
        p = cf.placeholder(cf.bool_, (), name="p")
        r = cf.cond(p, lambda: cf.assign_add(counter_t, 1), lambda: cf.assign_add(counter_f, 1))
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        for pv in (True, True, False, True):
            s.run(r, {p: pv})
        assert s.run([counter_t, counter_f]) == [3, 1]


def test_fetching_a_dead_tensor_is_a_clear_error():
    g = cf.Graph()
    with g.as_default():
        p = cf.placeholder(cf.bool_, (), name="p")
        x = cf.constant(1.0)
        from collflow.graph.ops import control_flow_ops as cfo
        f, t = cfo.switch(x, p)
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.errors.InvalidArgumentError, match="branch"):
            s.run(t, {p: False})
        assert s.run(t, {p: True}) == 1.0


def test_while_loop_values_and_data_dependent_trip_count():
    g = cf.Graph()
    with g.as_default():
        n = cf.placeholder(cf.int32, (), name="n")
        i, acc = cf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a + cf.cast(i, cf.float32)),
                               [cf.constant(0), cf.constant(0.0)])
        # Collatz steps: trip count decided by the data
        x0 = cf.placeholder(cf.int32, (), name="x0")
        steps = cf.while_loop(lambda x, k: x > 1,
                              lambda x, k: (cf.where(cf.equal(x % 2, 0), x // 2, 3 * x + 1), k + 1),
                              [x0, cf.constant(0)])[1]
    with cf.Session(graph=g) as s:
        for nv in (0, 1, 7):
            iv, av = s.run([i, acc], {n: nv})
            assert iv == nv and av == sum(range(nv))
        assert s.run(steps, {x0: 27}) == 111


def test_maximum_iterations_and_shape_invariants():
    g = cf.Graph()
    with g.as_default():
        i = cf.while_loop(lambda i: i < 100, lambda i: i + 1, [cf.constant(0)], maximum_iterations=5)  # one variable: the tensor (TF1)
        grow = cf.while_loop(lambda k, v: k < 3, lambda k, v: (k + 1, cf.concat([v, v], 0)),
                             [cf.constant(0), cf.constant([1.0])],
                             shape_invariants=[cf.TensorShape(()), cf.TensorShape([None])])[1]
    with cf.Session(graph=g) as s:
        assert s.run(i) == 5
        assert s.run(grow).shape == (8,)
    with g.as_default():
        with pytest.raises(cf.errors.InvalidArgumentError, match="shape_invariants"):
            cf.while_loop(lambda k, v: k < 3, lambda k, v: (k + 1, cf.concat([v, v], 0)),
                          [cf.constant(0), cf.constant([1.0])])


def test_nested_loops_and_cond_inside_loop():
    g = cf.Graph()
    with g.as_default():
        def outer_body(i, total):
            inner = cf.while_loop(lambda j, s: j < i, lambda j, s: (j + 1, s + 1.0), [cf.constant(0), cf.constant(0.0)])[1]
            bonus = cf.cond(cf.equal(i % 2, 0), lambda: cf.constant(100.0), lambda: cf.constant(0.0))
            return i + 1, total + inner + bonus
        res = cf.while_loop(lambda i, t: i < 4, outer_body, [cf.constant(0), cf.constant(0.0)])[1]
    # inner sums 0+1+2+3 = 6; bonus for i = 0, 2
    assert _run(g, res) == 206.0


def test_stateful_op_in_loop_body_runs_once_per_iteration():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(0.0, name="v")
        one = cf.constant(1.0)

        def body(i):
            with cf.control_dependencies([cf.assign_add(v, one)]):
                return i + 1
        r = cf.while_loop(lambda i: i < 7, body, [cf.constant(0)])
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        assert s.run(r) == 7
        assert s.run(v) == 7.0


def _unrolled_rnn(x, w, steps):
    h = x
    for _ in range(steps):
        h = cf.sin(cf.matmul(h, w)) + h
    return h


def test_while_gradient_matches_hand_unrolled():
    rng = np.random.default_rng(0)
    xv, wv = rng.normal(size=(2, 3)), rng.normal(size=(3, 3)) * 0.5
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (2, 3), name="x")
        w = cf.Variable(wv, name="w")
        n = cf.placeholder(cf.int32, (), name="n")
        h = cf.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, cf.sin(cf.matmul(h, w)) + h),
                          [cf.constant(0), x])[1]
        loss = cf.reduce_sum(h * h)
        gx, gw = cf.gradients(loss, [x, w])
        hu = _unrolled_rnn(x, w, 3)
        loss_u = cf.reduce_sum(hu * hu)
        gxu, gwu = cf.gradients(loss_u, [x, w])
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        a = s.run([loss, gx, gw], {x: xv, n: 3})
        b = s.run([loss_u, gxu, gwu], {x: xv})
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
        # zero iterations: gradient passes straight through
        l0, gx0, gw0 = s.run([loss, gx, gw], {x: xv, n: 0})
        np.testing.assert_allclose(gx0, 2 * xv)
        np.testing.assert_allclose(gw0, 0 * wv)


def test_nested_while_gradient_matches_finite_differences():
    from gradcheck import Case, check_case

    def f(a):
        def outer(i, v):
            inner = cf.while_loop(lambda j, u: j < 2, lambda j, u: (j + 1, cf.sin(u) * v), [cf.constant(0), v])[1]
            return i + 1, inner + 0.5 * v
        return cf.while_loop(lambda i, v: i < 2, outer, [cf.constant(0), a])[1]
    check_case(Case("Exit", f, [(3,)], id="nested-while"))


def test_cond_gradient_inside_while():
    from gradcheck import Case, check_case

    def f(a):
        def body(i, v):
            return i + 1, cf.cond(cf.equal(i % 2, 0), lambda: v * v, lambda: cf.sin(v))
        return cf.while_loop(lambda i, v: i < 3, body, [cf.constant(0), a])[1]
    check_case(Case("Exit", f, [(4,)], low=0.2, high=1.2, id="cond-in-while"))


def test_control_dependency_on_an_untaken_noop_is_dead():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(0, name="v")
        p = cf.placeholder(cf.bool_, (), name="p")

        def true_fn():
            marker = cf.no_op(name="marker")
            with cf.control_dependencies([marker]):
                return cf.assign_add(v, 1)
        r = cf.cond(p, true_fn, lambda: cf.identity(v.value()))
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        s.run(r, {p: False})
        s.run(r, {p: False})
        assert s.run(v) == 0
        s.run(r, {p: True})
        assert s.run(v) == 1


# -- gradients of loops: closed forms, side effects, saved values --------------------------

def _grad_run(build, feed=None):
    g = cf.Graph()
    with g.as_default():
        fetches = build()
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        return s.run(fetches, feed or {})


def test_nested_loop_gradients_closed_forms():
    # out = sum_{i<4} x * sum_{j<i} x*j = 4 x^2 (sum_{i<4} sum_{j<i} j = 4): d/dx = 8x
    def build():
        x = cf.constant(2.5, cf.float64)

        def outer(i, acc, only_inner):
            s = cf.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + x * cf.cast(j, cf.float64)),
                              [0, cf.constant(0.0, cf.float64)])[1]
            return i + 1, acc + s * x, only_inner + s
        _, out, inner_only = cf.while_loop(lambda i, a, b: i < 4, outer,
                                           [0, cf.constant(0.0, cf.float64), cf.constant(0.0, cf.float64)])
        w = cf.Variable(cf.constant(1.5, cf.float64), name="W")

        def outer_w(i, acc):
            # a fresh read of W inside the inner loop (its handle is captured, not a value)
            return i + 1, cf.while_loop(lambda j, a: j < 2, lambda j, a: (j + 1, a * w.read_value()), [0, acc])[1]
        out_w = cf.while_loop(lambda i, a: i < 3, outer_w, [0, cf.constant(1.0, cf.float64)])[1]
        return [out, cf.gradients(out, x)[0], cf.gradients(inner_only, x)[0], out_w, cf.gradients(out_w, w)[0]]
    out, gx, gx_inner, out_w, gw = _grad_run(build)
    assert out == pytest.approx(4 * 2.5 ** 2)
    assert gx == pytest.approx(8 * 2.5)
    assert gx_inner == pytest.approx(4.0)
    assert out_w == pytest.approx(1.5 ** 6)
    assert gw == pytest.approx(6 * 1.5 ** 5)


def test_gradient_of_a_loop_runs_its_body_once():
    # side effects and random draws happen once per forward iteration, and the backward
    # loop sees the forward draws (TensorFlow saves forward values; it never re-runs them)
    def build():
        c = cf.Variable(cf.constant(0.0, cf.float64), name="c")
        v0 = cf.constant(1.0, cf.float64)

        def body(i, v):
            with cf.control_dependencies([cf.assign_add(c, 1.0)]):
                r = cf.random_uniform((), 0.5, 1.5, dtype=cf.float64)
                return i + 1, v * r
        out = cf.while_loop(lambda i, v: i < 5, body, [0, v0])[1]
        gv = cf.gradients(out, v0)[0]
        with cf.control_dependencies([out, gv]):
            count = c.read_value()
        return [out, gv, count]
    out, gv, count = _grad_run(build)
    assert gv == pytest.approx(out)      # d(v0 * prod r)/dv0 at v0 = 1 is the same product
    assert count == 5.0


def test_cond_gradient_with_a_stateful_branch_takes_the_taken_branch():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, (), name="a")
        p = cf.placeholder(cf.bool_, (), name="p")
        c = cf.Variable(0.0, name="c")

        def true_fn():
            with cf.control_dependencies([cf.assign_add(c, 1.0)]):
                return a * a * 3
        out = cf.cond(p, true_fn, lambda: a * 2)
        ga = cf.gradients(out, a)[0]
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        assert s.run([out, ga], {a: 2.0, p: True}) == [12.0, 12.0]
        assert s.run([out, ga], {a: 2.0, p: False}) == [4.0, 2.0]
        assert s.run(c) == 1.0


def test_a_loop_saves_only_what_its_gradient_reads():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (4,), name="x")
        out = cf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, cf.sin(v) * 2.0 + 1.0), [0, x])[1]
        assert not [op for op in g.get_operations() if op.type == "StackPush"]
        gx = cf.gradients(out, x)[0]
        pushes = [op for op in g.get_operations() if op.type == "StackPush"]
        # the gradient of sin(v) * 2 + 1 reads v only (the constant 2 is made again)
        assert [p.inputs[2].op.type for p in pushes] == ["Identity"]
    with cf.Session(graph=g) as s:
        xv = np.linspace(-1, 1, 4)
        o, gv = s.run([out, gx], {x: xv})
        v, d = xv.copy(), np.ones(4)
        for _ in range(3):
            d = d * 2 * np.cos(v)
            v = np.sin(v) * 2 + 1
        np.testing.assert_allclose(o, v)
        np.testing.assert_allclose(gv, d)


def test_second_order_through_a_while_loop_is_a_clear_error():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (), name="x")
        out = cf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), [0, x])[1]
        gx = cf.gradients(out, x)[0]
        with pytest.raises(cf.errors.UnimplementedError, match="second-order gradients through a while loop"):
            cf.gradients(gx, x)


def test_gradient_inside_a_loop_body():
    # cf.gradients called inside a body differentiates that iteration's ops
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (), name="x")

        def body(i, acc):
            xc = x * cf.cast(i + 1, cf.float64)
            return i + 1, acc + cf.gradients(xc * xc, xc)[0]
        out = cf.while_loop(lambda i, a: i < 3, body, [0, cf.constant(0.0, cf.float64)])[1]
    with cf.Session(graph=g) as s:
        assert s.run(out, {x: 2.0}) == pytest.approx(2 * 2.0 * (1 + 2 + 3))


def test_a_branch_using_the_predicate_itself_is_gated_like_any_other():
    """A branch that returns the predicate, or computes from it alone, gives the taken
    branch's value: the predicate is read through the branch's Switch, so its uses in the
    branch not taken are dead and the Merge cannot take them (AutoGraph's lazy `and`/`or`
    build exactly such conds)."""
    with cf.Graph().as_default():
        p = cf.placeholder(cf.bool_, [])
        q = cf.placeholder(cf.bool_, [])
        outs = [cf.cond(p, lambda: q, lambda: p),
                cf.cond(p, lambda: q, lambda: cf.logical_not(p)),
                cf.cond(p, lambda: cf.logical_and(p, q), lambda: cf.logical_or(p, q)),
                cf.cond(p, lambda: cf.cond(q, lambda: p, lambda: q), lambda: p)]
        with cf.Session() as s:
            for pv in (True, False):
                for qv in (True, False):
                    want = [qv if pv else pv, qv if pv else not pv, pv and qv if pv else pv or qv,
                            (pv if qv else qv) if pv else pv]
                    assert [bool(v) for v in s.run(outs, {p: pv, q: qv})] == want, (pv, qv)
