"""Gradient-check cases for cf.scan, cf.map_fn and TensorArrays as while_loop variables
(collflow/graph/functional_ops.py, collflow/graph/control_flow.py): each builds one while
loop over TensorArrays, so the cases name the TensorArray ops they exercise."""
import collflow as cf
from gradcheck import Case


def _scan_captures_placeholder(x, w, b):
    # fn captures w and b from outside the loop: they get gradients accumulated over the steps
    return cf.scan(lambda a, e: cf.tanh(cf.matmul(a, w) + e * b), x, initializer=cf.zeros([2, 3], cf.float64))


def _scan_captures_variable(x, w):
    # as_variables: x and w are cf.Variables, read inside the loop
    return cf.scan(lambda a, e: a * cf.sin(e) + cf.reduce_sum(w * e), x)


def _scan_reverse_nested(x, y):
    # tuple elems, dict accumulator, walked from the end
    def fn(acc, e):
        xe, ye = e
        return {"s": acc["s"] * 0.5 + xe * ye, "p": acc["p"] * cf.cos(xe)}
    r = cf.scan(fn, (x, y), initializer={"s": cf.zeros([2], cf.float64), "p": cf.ones([2], cf.float64)},
                reverse=True)
    return [r["s"], r["p"]]


def _scan_no_initializer_reverse(x):
    return cf.scan(lambda a, e: a * e + cf.sin(a), x, reverse=True)


def _map_fn_nested(x, w):
    out = cf.map_fn(lambda e: (cf.reduce_sum(e[0] * w), cf.exp(e[1]) * e[0]), (x, x * x),
                    dtype=(cf.float64, cf.float64))
    return list(out)


def _map_fn_in_scan(x, w):
    # nested loops: map_fn inside scan's body
    return cf.scan(lambda a, e: a + cf.map_fn(lambda r: cf.sin(r * w), e), x, initializer=cf.zeros([2, 3], cf.float64))


def _ta_loop_variable(x):
    # TF1's way: the TensorArray itself is a loop variable, written in the body, stacked after
    ta = cf.TensorArray(cf.float64, size=0, dynamic_size=True)

    def body(i, acc, ta):
        acc = acc * x[i] + 1.0
        return i + 1, acc, ta.write(i, cf.square(acc))
    _, acc, ta = cf.while_loop(lambda i, acc, ta: i < 4, body, [cf.constant(0), cf.ones([3], cf.float64), ta])
    return [ta.stack(), acc]


CASES = [
    Case("TensorArrayReadV3", _scan_captures_placeholder, [(4, 2, 3), (3, 3), (3,)], low=-1.0, high=1.0,
         id="scan-captures-placeholders"),
    Case("TensorArrayWriteV3", _scan_captures_variable, [(5, 3), (3,)], low=-1.0, high=1.0, as_variables=True,
         id="scan-captures-variable"),
    Case("TensorArrayStackV3", _scan_reverse_nested, [(4, 2), (4, 2)], id="scan-reverse-nested"),
    Case("TensorArrayUnstackV3", _scan_no_initializer_reverse, [(4, 2)], low=0.2, high=1.0,
         id="scan-no-initializer-reverse"),
    Case("TensorArrayReadV3", _map_fn_nested, [(3, 4), (4,)], low=-1.0, high=1.0, id="map_fn-nested"),
    Case("TensorArrayReadV3", _map_fn_in_scan, [(3, 2, 3), (3,)], low=-1.0, high=1.0, id="map_fn-in-scan"),
    Case("TensorArrayWriteV3", _ta_loop_variable, [(4, 3)], low=0.5, high=1.2, id="tensor-array-loop-variable"),
    # gather with a repeated index (its gradient rows add) and scatter out of order
    Case("TensorArrayGatherV3", lambda x: cf.TensorArray(cf.float64, size=4).unstack(x).gather([1, 1, 3]) * x[:3],
         [(4, 3)], id="tensor-array-gather"),
    Case("TensorArrayScatterV3", lambda x: cf.sin(cf.TensorArray(cf.float64, size=4).scatter([2, 0, 3, 1], x).stack()),
         [(4, 3)], id="tensor-array-scatter"),
]
