"""cf.scan, cf.map_fn (collflow/graph/functional_ops.py) and TensorArrays as while_loop
variables (collflow/graph/control_flow.py, collflow/graph/tensor_array.py): values against
NumPy, TF1's structures and shapes, run-time lengths, gradients, and clear errors."""
import numpy as np
import pytest

import collflow as cf
from gradcheck import check_case
import gradtable_functional
from session_helpers import run as _run


# -- scan ------------------------------------------------------------------------------------

def test_scan_running_sum_and_product_match_numpy(graph):
    x = cf.placeholder(cf.float64, (None, 3))
    csum = cf.scan(lambda a, e: a + e, x)                                   # a[0] = x[0]
    cprod = cf.scan(lambda a, e: a * e, x, initializer=cf.ones([3], cf.float64), reverse=True,
                    parallel_iterations=1, swap_memory=True)  # TF1's knobs are accepted
    # one graph, any length, fed at run time; one while loop each, not unrolled
    assert csum.shape.as_list() == [None, 3]
    assert sum(op.type == "LoopCond" for op in graph.get_operations()) == 2
    for n in (1, 4, 7):
        xv = np.random.default_rng(n).uniform(0.5, 1.5, size=(n, 3))
        a, b = _run([csum, cprod], {x: xv})
        np.testing.assert_allclose(a, np.cumsum(xv, 0), rtol=1e-12)
        np.testing.assert_allclose(b, np.cumprod(xv[::-1], 0)[::-1], rtol=1e-12)


def test_scan_nested_elems_and_initializer(graph):
    """TF1's docstring example: Fibonacci with a tuple accumulator, and dict/namedtuple structures."""
    elems = cf.constant(np.ones(6, np.int64))
    fib = cf.scan(lambda a, _: (a[1], a[0] + a[1]), elems,
                  initializer=(cf.constant(0, cf.int64), cf.constant(1, cf.int64)))
    x = cf.placeholder(cf.float64, (4, 2))
    d = cf.scan(lambda acc, e: {"lo": cf.minimum(acc["lo"], e["v"] * e["w"]), "n": acc["n"] + 1.0},
                {"v": x, "w": 2.0 * x}, initializer={"lo": cf.zeros([2], cf.float64) + 99.0,
                                                    "n": cf.constant(0.0, cf.float64)})
    assert isinstance(fib, tuple) and len(fib) == 2 and set(d) == {"lo", "n"}
    xv = np.array([[3.0, 1.0], [2.0, 5.0], [4.0, 0.5], [1.0, 2.0]])
    (f0, f1), dv = _run([fib, d], {x: xv})
    np.testing.assert_array_equal(f0, [1, 1, 2, 3, 5, 8])
    np.testing.assert_array_equal(f1, [1, 2, 3, 5, 8, 13])
    np.testing.assert_allclose(dv["lo"], np.minimum.accumulate(2 * xv * xv, 0))
    np.testing.assert_allclose(dv["n"], [1, 2, 3, 4])


def test_scan_with_an_rnn_cell_matches_dynamic_rnn(graph):
    x = cf.placeholder(cf.float64, (5, 2, 3))  # time-major
    cell = cf.nn.rnn_cell.GRUCell(4)
    outs = cf.scan(lambda h, xt: cell(xt, h)[0], x, initializer=cell.zero_state(2, cf.float64))
    ref, _ = cf.nn.dynamic_rnn(cell, x, time_major=True)
    xv = np.random.default_rng(1).normal(size=(5, 2, 3))
    a, b = _run([outs, ref], {x: xv})
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_scan_gradient_of_captured_variable_and_placeholder(graph):
    """d/dw and d/dp of sum(scan(a * w + p * e)) against the closed form of the recurrence."""
    x = cf.placeholder(cf.float64, (4,))
    w = cf.Variable(0.5, dtype=cf.float64)
    p = cf.placeholder(cf.float64, ())
    y = cf.scan(lambda a, e: a * w + p * e, x, initializer=cf.constant(0.0, cf.float64))
    gw, gp, gx = cf.gradients(cf.reduce_sum(y), [w, p, x])
    xv, pv = np.array([1.0, 2.0, 3.0, 4.0]), 1.5
    # a_t = sum_{s<=t} w^(t-s) p x_s
    a = [sum(0.5 ** (t - s) * pv * xv[s] for s in range(t + 1)) for t in range(4)]
    da_dw = [sum((t - s) * 0.5 ** (t - s - 1) * pv * xv[s] for s in range(t)) for t in range(4)]
    da_dx = [sum(0.5 ** (t - s) * pv for t in range(s, 4)) for s in range(4)]
    yv, gwv, gpv, gxv = _run([y, gw, gp, gx], {x: xv, p: pv})
    np.testing.assert_allclose(yv, a, rtol=1e-12)
    np.testing.assert_allclose(gwv, sum(da_dw), rtol=1e-12)
    np.testing.assert_allclose(gpv, sum(a) / pv, rtol=1e-12)
    np.testing.assert_allclose(gxv, da_dx, rtol=1e-12)


def test_back_prop_false_stops_gradients(graph):
    x = cf.placeholder(cf.float64, (3, 2))
    y = cf.scan(lambda a, e: a * e, x, back_prop=False)
    z = cf.map_fn(lambda e: e * e, x, back_prop=False)
    assert cf.gradients(cf.reduce_sum(y), x) == [None]
    assert cf.gradients(cf.reduce_sum(z), x) == [None]
    np.testing.assert_allclose(_run(z, {x: np.ones((3, 2)) * 2}), np.full((3, 2), 4.0))


@pytest.mark.parametrize("case", gradtable_functional.CASES, ids=str)
def test_gradients_match_finite_differences(case):
    check_case(case)


# -- map_fn ----------------------------------------------------------------------------------

def test_map_fn_values_dtypes_and_structures(graph):
    x = cf.placeholder(cf.float64, (None, 3))
    sq = cf.map_fn(lambda r: cf.reduce_sum(r * r), x)
    both = cf.map_fn(lambda e: (cf.argmax(e[0], output_type=cf.int32), e[1] * 2.0), (x, x + 1.0),
                     dtype=(cf.int32, cf.float64))
    assert sq.shape.as_list() == [None] and both[0].dtype == cf.int32
    xv = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]])
    s, (am, tw) = _run([sq, both], {x: xv})
    np.testing.assert_allclose(s, (xv * xv).sum(1))
    np.testing.assert_array_equal(am, [1, 0])
    np.testing.assert_allclose(tw, 2 * (xv + 1.0))
    empty = _run(sq, {x: np.zeros((0, 3))})   # zero elements: a [0] result (fn's output shape is static)
    assert empty.shape == (0,)


def test_map_fn_static_length_sets_the_result_shape(graph):
    x = cf.constant(np.arange(12.0).reshape(4, 3))
    y = cf.map_fn(lambda r: cf.stack([r[0], r[2]]), x)
    assert y.shape.as_list() == [4, 2]
    np.testing.assert_allclose(_run(y), np.arange(12.0).reshape(4, 3)[:, [0, 2]])


# -- foldl / foldr ---------------------------------------------------------------------------

def test_foldl_foldr_match_python_folds(graph):
    x = cf.placeholder(cf.float64, (None,))
    left = cf.foldl(lambda a, e: a * 2.0 + e, x)                    # starts from x[0]
    right = cf.foldr(lambda a, e: a * 2.0 + e, x, initializer=cf.constant(1.0, cf.float64))
    pair = cf.foldl(lambda a, e: (a[0] + e, a[1] * e), x,
                    initializer=(cf.constant(0.0, cf.float64), cf.constant(1.0, cf.float64)))
    gl = cf.gradients(left, x)[0]
    xv = np.array([1.0, 3.0, -2.0, 0.5])
    lv, rv, (s, p), g = _run([left, right, pair, gl], {x: xv})
    acc = xv[0]
    for e in xv[1:]:
        acc = acc * 2 + e
    racc = 1.0
    for e in xv[::-1]:
        racc = racc * 2 + e
    assert lv == pytest.approx(acc) and rv == pytest.approx(racc)
    assert s == pytest.approx(xv.sum()) and p == pytest.approx(xv.prod())
    np.testing.assert_allclose(g, [8.0, 4.0, 2.0, 1.0])            # d/dx_i of the left fold: 2^(n-1-i)


# -- TensorArray as a loop variable ----------------------------------------------------------

def test_tensor_array_as_loop_variable(graph):
    n = cf.placeholder(cf.int32, ())
    ta = cf.TensorArray(cf.float32, size=n, element_shape=[2])

    def body(i, ta):
        fi = cf.cast(i, cf.float32)
        return i + 1, ta.write(i, cf.stack([fi, fi * fi]))
    _, out = cf.while_loop(lambda i, ta: i < n, body, [cf.constant(0), ta])
    assert isinstance(out, cf.TensorArray)
    st, size = out.stack(), out.size()
    assert st.shape.as_list() == [None, 2]
    for nv in (0, 1, 5):
        v, sz = _run([st, size], {n: nv})
        r = np.arange(nv, dtype=np.float32)
        np.testing.assert_array_equal(v, np.stack([r, r * r], 1).reshape(nv, 2))
        assert sz == nv


def test_dynamic_size_tensor_array_grows(graph):
    limit = cf.placeholder(cf.float32, ())
    ta = cf.TensorArray(cf.float32, size=0, dynamic_size=True, clear_after_read=False)

    def body(i, x, ta):
        return i + 1, x * 2.0, ta.write(i, x)
    _, _, ta = cf.while_loop(lambda i, x, ta: x < limit, body, [cf.constant(0), cf.constant(1.0), ta])
    st, size = ta.stack(), ta.size()
    v, sz = _run([st, size], {limit: 100.0})
    np.testing.assert_array_equal(v, [1, 2, 4, 8, 16, 32, 64])
    assert sz == 7


def test_tensor_array_split_lengths_and_identity(graph):
    v = cf.constant(np.arange(6.0))
    ta = cf.TensorArray(cf.float64, 3).split(v, lengths=[2, 2, 2])
    r = ta.identity().read(1)
    np.testing.assert_array_equal(_run(r), [2.0, 3.0])
    with pytest.raises(cf.errors.UnimplementedError, match="equal"):
        cf.TensorArray(cf.float64, 2).split(v, lengths=[2, 4])
    with pytest.raises(cf.InvalidArgumentError, match="size must be given"):
        cf.TensorArray(cf.float64)


# -- errors ----------------------------------------------------------------------------------

def test_bad_arguments_are_clear_errors(graph):
    x = cf.placeholder(cf.float32, (3, 2))
    with pytest.raises(cf.InvalidArgumentError, match="rank >= 1"):
        cf.map_fn(lambda e: e, cf.constant(1.0))
    with pytest.raises(cf.InvalidArgumentError, match="same first dimension"):
        cf.scan(lambda a, e: a, (x, cf.zeros([4, 2])), initializer=cf.zeros([2]))
    with pytest.raises(cf.InvalidArgumentError, match="structure of the initializer"):
        cf.scan(lambda a, e: (a, a), x, initializer=cf.zeros([2]))
    with pytest.raises(cf.InvalidArgumentError, match="pass dtype="):
        cf.map_fn(lambda e: (e, e), x)
    with pytest.raises(cf.InvalidArgumentError, match="dtype int32, expected float32"):
        cf.map_fn(lambda e: cf.cast(e, cf.int32), x)
    with pytest.raises(cf.InvalidArgumentError, match="element shape"):   # the accumulator's shape changes
        cf.scan(lambda a, e: cf.concat([a, e], 0), x, initializer=cf.zeros([2]))
    with pytest.raises(cf.InvalidArgumentError, match="loop variable 1 has shape"):
        cf.scan(lambda a, e: cf.concat([a, e], 0), x, initializer=cf.zeros([2]), infer_shape=False)
    ta = cf.TensorArray(cf.float32, 3)
    with pytest.raises(cf.InvalidArgumentError, match="enters the loop as a TensorArray"):
        cf.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t.flow), [cf.constant(0), ta])
    with pytest.raises(cf.InvalidArgumentError, match="not another one"):
        cf.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, cf.TensorArray(cf.float32, 3)), [cf.constant(0), ta])
    with pytest.raises(cf.InvalidArgumentError, match="must be a tensor or a non-empty"):
        cf.map_fn(lambda e: e, [])
