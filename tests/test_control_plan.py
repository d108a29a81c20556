"""Control flow compiled to structured code (runtime/control_plan.py) against the interpreter.

Every control-flow gradient case of the finite-difference table runs both ways and must give
the same values and gradients; plans built by cf.cond / cf.while_loop must be compiled.
"""
import numpy as np
import pytest

import collflow as cf
from collflow.runtime.dynamic_executor import DynamicPlan
import gradtable_control


def _loss_and_grads(case, mode, seed=0):
    rng = np.random.default_rng(seed)
    values = ([np.asarray(v, dtype=np.float64) for v in case.make_inputs(rng)] if case.make_inputs
              else [rng.uniform(case.low, case.high, size=s) for s in case.shapes])
    g = cf.Graph()
    with g.as_default():
        xs = [cf.placeholder(cf.float64, v.shape, name=f"x{i}") for i, v in enumerate(values)]
        outs = case.fn(*xs)
        outs = [o for o in (outs if isinstance(outs, (list, tuple)) else [outs])
                if isinstance(o, cf.Tensor) and o.dtype.is_floating]
        loss = cf.add_n([cf.reduce_sum(o * o) for o in outs])
        grads = [gr for gr in cf.gradients(loss, xs) if gr is not None]
        init = cf.global_variables_initializer()
    with cf.Session(graph=g, config={"control_flow": mode}) as s:
        s.run(init)
        feed = dict(zip(xs, values))
        plan = s.plan_for([loss] + grads, feed)
        return s.run([loss] + grads, feed), plan


@pytest.mark.parametrize("case", gradtable_control.CASES, ids=str)
def test_compiled_matches_interpreted(case):
    got, plan = _loss_and_grads(case, "compile")
    want, ref_plan = _loss_and_grads(case, "interpret")
    assert not isinstance(plan, DynamicPlan), "a cf.cond / cf.while_loop graph must compile"
    assert isinstance(ref_plan, DynamicPlan)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def test_a_loop_is_a_python_while_and_a_cond_is_predicated():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (), name="x")
        v = cf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0), [0, x])[1]
        c = cf.cond(x > 0.0, lambda: v + 1.0, lambda: v - 1.0)
    with cf.Session(graph=g) as s:
        assert s.run(c, {x: 1.0}) == 9.0 and s.run(c, {x: -1.0}) == -9.0
        src = s.plan_for(c, {x: 1.0}).source
    assert "while True:" in src and "break" in src
    assert src.count("while True:") == 1


def test_dead_fetch_is_a_clear_error():
    g = cf.Graph()
    with g.as_default():
        p = cf.placeholder(cf.bool_, (), name="p")
        a = cf.constant(1.0)
        sw_false, sw_true = cf.graph.ops.control_flow_ops.switch(a, p)
    with cf.Session(graph=g) as s:
        assert s.run(sw_true, {p: True}) == 1.0
        with pytest.raises(cf.InvalidArgumentError, match="lies on a branch of a cond that was not taken"):
            s.run(sw_true, {p: False})


def test_errors_inside_a_loop_name_the_op():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None,), name="x")
        idx = cf.placeholder(cf.int32, (), name="idx")
        out = cf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v + cf.gather(x, cf.reshape(idx, [1]))), [0, cf.zeros([1])])[1]
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.InvalidArgumentError, match="Gather"):
            s.run(out, {x: np.ones(3, np.float32), idx: 7})


def test_a_loop_in_an_untaken_branch_does_not_run():
    g = cf.Graph()
    with g.as_default():
        counter = cf.Variable(0, name="counter")
        p = cf.placeholder(cf.bool_, (), name="p")

        def loop():
            def body(i):
                with cf.control_dependencies([cf.assign_add(counter, 1)]):
                    return i + 1
            return cf.cast(cf.while_loop(lambda i: i < 4, body, [0]), cf.float32)
        r = cf.cond(p, loop, lambda: cf.constant(-1.0))
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        assert s.run(r, {p: False}) == -1.0 and s.run(counter) == 0
        assert s.run(r, {p: True}) == 4.0 and s.run(counter) == 4


def test_cancelled_inside_a_loop():
    g = cf.Graph()
    with g.as_default():
        n = cf.placeholder(cf.int32, (), name="n")
        out = cf.while_loop(lambda i: i < n, lambda i: i + 1, [0])
    tok = cf.CancellationToken()
    tok.cancel("test")
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.errors.CancelledError, match="test"):
            s.run(out, {n: 10**9}, cancel_token=tok)
