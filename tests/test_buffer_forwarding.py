"""Buffer forwarding: in-place kernels reuse a dying input, never an array someone holds."""
import numpy as np

import collflow as cf


def _graph():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="x")
        a = x * 2.0
        b = cf.nn.relu(a - 1.0)
    return g, x, a, b


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
