"""Gradient-check cases for control flow (cond's Switch/Merge; while loops as a whole)."""
import collflow as cf
from gradcheck import Case

CASES = [
    Case("Merge", lambda a, b: cf.cond(cf.reduce_sum(a) > 0.0, lambda: a * b, lambda: a - b), [(3,), (3,)],
         make_inputs=lambda r: [r.uniform(0.5, 2, 3), r.uniform(-2, 2, 3)], id="cond-true"),
    Case("Switch", lambda a, b: cf.cond(cf.reduce_sum(a) > 0.0, lambda: a * b, lambda: cf.exp(a) - b), [(3,), (3,)],
         make_inputs=lambda r: [r.uniform(-2, -0.5, 3), r.uniform(-2, 2, 3)], id="cond-false"),
    Case("Exit", lambda a, w: cf.while_loop(lambda i, v: i < 4, lambda i, v: (i + 1, cf.tanh(cf.matmul(v, w)) if hasattr(cf, "tanh") else cf.sin(cf.matmul(v, w))),
                                           [cf.constant(0), a])[1], [(2, 3), (3, 3)], id="while-matmul-tanh"),
]
