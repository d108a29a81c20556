"""Gradient-check cases for control flow: cond (Switch/Merge) and while loops as a whole.

Every construct is checked against central finite differences: loops nested to depth 3 with
captures at each depth (a placeholder, a Variable, an op output of an enclosing body), cond
inside while and while inside cond, stateful ops in branches and bodies, random draws in a
body, maximum_iterations and parallel_iterations.
"""
import collflow as cf
from gradcheck import Case


def _i(v):
    return cf.cast(v, cf.float64)


def _while(cond, body, init, **kw):
    return cf.while_loop(cond, body, [cf.constant(0)] + list(init), **kw)


def nested2_capture_outer_and_inner(x):
    # sum_i [ x * sum_{j<i} x*j ]: x used in the outer body and only inside the inner loop
    def outer(i, acc):
        s = _while(lambda j, a: j < i, lambda j, a: (j + 1, a + x * _i(j)), [cf.zeros_like(x)])[1]
        return i + 1, acc + s * x
    return _while(lambda i, a: i < 4, outer, [cf.zeros_like(x)])[1]


def nested2_inner_only(x):
    def outer(i, acc):
        s = _while(lambda j, a: j < i, lambda j, a: (j + 1, a + cf.sin(x) * _i(j + 1)), [cf.zeros_like(x)])[1]
        return i + 1, acc + s
    return _while(lambda i, a: i < 3, outer, [cf.zeros_like(x)])[1]


def nested2_variable(w):
    # acc * W twice per outer iteration, 3 outer iterations: W**6, d/dW = 6 W**5
    def outer(i, acc):
        return i + 1, _while(lambda j, a: j < 2, lambda j, a: (j + 1, a * w), [acc])[1]
    return _while(lambda i, a: i < 3, outer, [cf.ones_like(w)])[1]


def nested3_captures_at_each_depth(x, y, z):
    # x captured at depth 3, y (an op output of depth 1) at depth 2 and 3, z at depth 1
    def d1(i, a):
        h = cf.tanh(y * _i(i + 1))             # an op output of the depth-1 body

        def d2(j, b):
            def d3(k, c):
                return k + 1, c * 0.5 + cf.sin(x * h) + y * _i(k)
            c = _while(lambda k, c: k < 2, d3, [b])[1]
            return j + 1, c + h * b
        b = _while(lambda j, b: j < 2, d2, [a])[1]
        return i + 1, b * 0.3 + z
    return _while(lambda i, a: i < 2, d1, [x])[1]


def cond_in_while(v, w):
    def body(i, u):
        return i + 1, cf.cond(cf.equal(i % 2, 0), lambda: u * w, lambda: cf.sin(u) + w)
    return _while(lambda i, u: i < 4, body, [v])[1]


def while_in_cond(a, b):
    def taken():
        return _while(lambda i, u: i < 3, lambda i, u: (i + 1, u * cf.cos(b)), [a])[1]
    return cf.cond(cf.reduce_sum(a) > -100.0, taken, lambda: a * 0.0)


def while_in_untaken_cond(a, b):
    def untaken():
        return _while(lambda i, u: i < 3, lambda i, u: (i + 1, u * cf.cos(b)), [a])[1]
    return cf.cond(cf.reduce_sum(a) < -100.0, untaken, lambda: a * b)


def stateful_branch_in_while(a):
    counter = cf.Variable(0.0, dtype=cf.float64, name="counter")

    def body(i, u):
        def with_side_effect():
            with cf.control_dependencies([cf.assign_add(counter, cf.constant(1.0, cf.float64))]):
                return u * u * 0.5
        return i + 1, cf.cond(i < 2, with_side_effect, lambda: cf.exp(u * 0.1))
    return _while(lambda i, u: i < 4, body, [a])[1]


def random_in_body(a):
    # the backward loop must see the same draws as the forward loop
    def body(i, u):
        r = cf.random_uniform(cf.shape(u), 0.5, 1.5, dtype=cf.float64, seed=7)
        return i + 1, u * r
    return _while(lambda i, u: i < 3, body, [a])[1]


def max_iterations(a, w):
    return _while(lambda i, u: i < 100, lambda i, u: (i + 1, cf.sin(u) * w), [a], maximum_iterations=3)[1]


def parallel_iterations(a, w):
    def body(i, u, s):
        return i + 1, u * w, s + cf.reduce_sum(u * u)
    return _while(lambda i, u, s: i < 5, body, [a, cf.reduce_sum(a) * 0.0], parallel_iterations=1)[1:]


def loop_returns_capture(a, b):
    # a loop variable replaced by an outside tensor, another untouched
    return _while(lambda i, u, v: i < 2, lambda i, u, v: (i + 1, b, v * u), [a, a])[1:]


CASES = [
    Case("Merge", lambda a, b: cf.cond(cf.reduce_sum(a) > 0.0, lambda: a * b, lambda: a - b), [(3,), (3,)],
         make_inputs=lambda r: [r.uniform(0.5, 2, 3), r.uniform(-2, 2, 3)], id="cond-true"),
    Case("Switch", lambda a, b: cf.cond(cf.reduce_sum(a) > 0.0, lambda: a * b, lambda: cf.exp(a) - b), [(3,), (3,)],
         make_inputs=lambda r: [r.uniform(-2, -0.5, 3), r.uniform(-2, 2, 3)], id="cond-false"),
    Case("Exit", lambda a, w: cf.while_loop(lambda i, v: i < 4, lambda i, v: (i + 1, cf.tanh(cf.matmul(v, w))),
                                           [cf.constant(0), a])[1], [(2, 3), (3, 3)], id="while-matmul-tanh"),
    Case("Exit", nested2_capture_outer_and_inner, [(3,)], id="nested2-capture-outer-and-inner"),
    Case("Exit", nested2_inner_only, [(3,)], id="nested2-capture-inner-only"),
    Case("Exit", nested2_variable, [(2,)], low=0.5, high=1.2, as_variables=True, id="nested2-variable"),
    Case("Exit", nested3_captures_at_each_depth, [(3,), (3,), (3,)], id="nested3-captures"),
    Case("Exit", nested3_captures_at_each_depth, [(3,), (3,), (3,)], as_variables=True, id="nested3-variables"),
    Case("Exit", cond_in_while, [(3,), (3,)], id="cond-in-while"),
    Case("Exit", while_in_cond, [(3,), (3,)], id="while-in-cond"),
    Case("Merge", while_in_untaken_cond, [(3,), (3,)], id="while-in-untaken-cond"),
    Case("Exit", stateful_branch_in_while, [(3,)], low=0.2, high=1.5, id="stateful-branch-in-while"),
    Case("Exit", max_iterations, [(3,), (3,)], id="maximum-iterations"),
    Case("Exit", parallel_iterations, [(3,), (3,)], low=-1.0, high=1.0, id="parallel-iterations-1"),
    Case("Exit", loop_returns_capture, [(3,), (3,)], id="loop-returns-capture"),
]
