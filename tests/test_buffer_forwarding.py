"""Buffer forwarding: in-place kernels reuse a dying input, never an array someone holds."""
import numpy as np
import pytest

import collflow as cf


def _graph():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="x")
        a = x * 2.0
        b = cf.nn.relu(a - 1.0)
    return g, x, a, b


@pytest.mark.host_only("buffer forwarding uses the CPU kernels' in-place variants")
def test_dying_input_is_reused_and_results_are_right():
    g, x, a, b = _graph()
    xv = np.array([[0.0, 1.0, -2.0]], np.float32)
    with cf.Session(graph=g) as s:
        out = s.run(b, {x: xv})
        plan = s.plan_for(b, {x: xv})
    np.testing.assert_array_equal(out, np.maximum(xv * 2 - 1, 0))
    np.testing.assert_array_equal(xv, [[0.0, 1.0, -2.0]])  # the feed is never written
    assert any("inplace_kernels" in getattr(k, "__module__", "") for k in plan.kernels)


def test_alias_held_elsewhere_is_not_overwritten():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (3,), name="x")
        a = x - 1.0
        alias = cf.identity(a)      # the same array object, fetched
        b = cf.nn.relu(a)           # a dies here, but its alias is alive
    xv = np.array([0.0, 1.0, 3.0], np.float32)
    with cf.Session(graph=g) as s:
        bv, av = s.run([b, alias], {x: xv})
    np.testing.assert_array_equal(av, xv - 1)
    np.testing.assert_array_equal(bv, np.maximum(xv - 1, 0))


def test_variable_values_are_never_overwritten():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.array([-1.0, 2.0], np.float32))
        r = cf.nn.relu(v.value())
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        np.testing.assert_array_equal(s.run(r), [0.0, 2.0])
        np.testing.assert_array_equal(s.run(v), [-1.0, 2.0])


def test_forwarding_can_be_turned_off():
    g, x, a, b = _graph()
    xv = np.ones((2, 3), np.float32)
    with cf.Session(graph=g, config={"buffer_forwarding": False}) as s:
        plan = s.plan_for(b, {x: xv})
        assert not any("inplace_kernels" in getattr(k, "__module__", "") for k in plan.kernels)
        np.testing.assert_array_equal(s.run(b, {x: xv}), np.ones((2, 3)))


# -- plans with loops and conds (runtime/control_plan.py): the same pass -------------------------

N = 5000  # over the in-place kernels' minimum size


def _loop_graph(iters=6):
    """A while loop whose body chains elementwise ops, reading an outside value every
    iteration, with conds inside, and the gradient of it all."""
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, [N], name="x")
        w = x * 0.25 + 0.5                         # computed outside, read by every iteration

        def body(i, v):
            a = v * 0.9
            b = w - a                              # w is read again next iteration: never overwritten
            c = cf.nn.relu(b) - 0.1
            c = cf.cond(i % 2 < 1, lambda: c * 1.1, lambda: c + 0.2)
            return i + 1, c * 1.0
        v = cf.while_loop(lambda i, v: i < iters, body, [cf.constant(0), x])[1]
        loss = cf.reduce_sum(v * v)
        grad = cf.gradients(loss, x)[0]
    return g, x, w, v, grad


def _run(forwarding, fetch_names, xv):
    g, x, w, v, grad = _loop_graph()
    fetches = {"v": v, "grad": grad, "w": w}
    with cf.Session(graph=g, config={"buffer_forwarding": forwarding}) as s:
        got = s.run([fetches[k] for k in fetch_names], {x: xv})
        plan = s.plan_for([fetches[k] for k in fetch_names], {x: xv})
    return got, plan


@pytest.mark.host_only("buffer forwarding uses the CPU kernels' in-place variants")
def test_loop_bodies_forward_buffers_and_values_equal_the_unforwarded_plan():
    xv = np.random.default_rng(3).uniform(-1, 1, N).astype(np.float32)
    keep = xv.copy()
    names = ["v", "grad", "w"]
    (v1, g1, w1), plan = _run(True, names, xv)
    (v0, g0, w0), plan0 = _run(False, names, xv)
    assert plan0.forwarded == []
    # the body's and the backward loop's dying temporaries are reused
    assert any(n.startswith("while/") for n in plan.forwarded), plan.forwarded
    assert any("while_grad" in n for n in plan.forwarded), plan.forwarded
    np.testing.assert_array_equal(v1, v0)
    np.testing.assert_array_equal(g1, g0)           # saved forward values were not overwritten
    np.testing.assert_array_equal(w1, xv * 0.25 + 0.5)  # the outside value survived every iteration
    np.testing.assert_array_equal(xv, keep)          # the feed is never written


def test_loop_results_match_numpy():
    xv = np.random.default_rng(4).uniform(-1, 1, N).astype(np.float32)
    (v,), _ = _run(True, ["v"], xv)
    w = xv * np.float32(0.25) + np.float32(0.5)
    want = xv.copy()
    for i in range(6):
        c = np.maximum(w - want * np.float32(0.9), 0) - np.float32(0.1)
        want = (c * np.float32(1.1) if i % 2 < 1 else c + np.float32(0.2)) * np.float32(1.0)
    np.testing.assert_allclose(v, want, rtol=1e-6)


@pytest.mark.host_only("buffer forwarding uses the CPU kernels' in-place variants")
def test_static_plans_report_what_they_forward():
    g, x, a, b = _graph()
    with cf.Session(graph=g) as s:
        plan = s.plan_for(b, {x: np.zeros((1, 3), np.float32)})
    assert "Relu" in plan.forwarded
