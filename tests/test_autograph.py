"""tf.autograph.to_graph: each converted construct run in a Session against the same Python
function run on NumPy values; gradients through converted loops and conds against finite
differences (tests/gradcheck.py); conversion and staging errors."""
import os
import sys

import numpy as np
import pytest

import collflow as cf
from collflow import autograph as ag

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gradcheck import Case, check_case  # noqa: E402


def run(fn, args, specs, recursive=True):
    """fn converted, called on placeholders of `specs` ((dtype, shape) each), run on `args`."""
    g = cf.Graph()
    with g.as_default():
        phs = [cf.placeholder(d, s) for d, s in specs]
        out = ag.to_graph(fn, recursive=recursive)(*phs)
        with cf.Session() as sess:
            return sess.run(out, dict(zip(phs, args)))


F32 = (cf.float32, [])
I32 = (cf.int32, [])


# -- functions run both as Python on NumPy values and converted -----------------------------

def abs_if(x):
    if x > 0:
        y = x * 2.0
    else:
        y = -x
    return y


def only_main_branch_temp(x):
    if x > 0:
        t = x * 3.0
        x = t + 1.0
    return x


def collatz_steps(n):
    steps = 0
    while n > 1:
        if n % 2 < 1:  # TF1 tensors compare by identity with ==
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def nested_break_continue(m):
    s = 0
    i = 0
    while i < m:
        j = 0
        while j < m:
            if j > i:
                break
            if (i + j) % 2 > 0:
                j += 1
                continue
            s += i * 10 + j
            j += 1
        i += 1
    return s


def for_over_tensor(v):
    total = 0.0
    for e in v:
        if e > 2.0:
            break
        if e < 0.0:
            continue
        total += e
    return total


def early_return(x):
    if x > 1.0:
        return x * x
    y = x - 1.0
    return y


def return_both_branches(x):
    if x > 0:
        return x + 1
    else:
        return x - 1


def logic(x, y):
    a = (x > 0 and y > 0) or not (x < -5)
    b = x if x > y else y
    return a, b


def sum_range(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def python_loop_inside(x):
    for k in [1.0, 2.0, 3.0]:
        if x > k:
            x = x - k
    return x


def _helper(a):
    if a > 1.0:
        a = a / 2.0
    return a


def calls_helper(x):
    while x > 1.0:
        x = _helper(x) - 0.25
    return x


@pytest.mark.parametrize("fn,args,specs", [
    (abs_if, [3.0], [F32]), (abs_if, [-2.0], [F32]),
    (only_main_branch_temp, [2.0], [F32]), (only_main_branch_temp, [-2.0], [F32]),
    (collatz_steps, [27], [I32]), (collatz_steps, [1], [I32]),
    (nested_break_continue, [5], [I32]), (nested_break_continue, [0], [I32]),
    (early_return, [3.0], [F32]), (early_return, [0.5], [F32]),
    (return_both_branches, [4], [I32]), (return_both_branches, [-4], [I32]),
    (logic, [1.0, 2.0], [F32, F32]), (logic, [-7.0, -8.0], [F32, F32]), (logic, [3.0, -1.0], [F32, F32]),
    (sum_range, [6], [I32]), (sum_range, [0], [I32]),
    (python_loop_inside, [4.5], [F32]), (python_loop_inside, [0.5], [F32]),
    (calls_helper, [9.0], [F32]),
], ids=lambda v: getattr(v, "__name__", None))
def test_matches_python(fn, args, specs):
    expected = fn(*[np.array(a, dtype=d.as_numpy_dtype) for a, (d, _) in zip(args, specs)])
    got = run(fn, args, specs)
    if isinstance(expected, tuple):
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-6)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_for_over_tensor_rows():
    v = np.array([1.0, -1.0, 2.0, 3.0, 1.0], np.float32)
    assert run(for_over_tensor, [v], [(cf.float32, [5])]) == pytest.approx(for_over_tensor(v))
    # unknown length: iterates over tf.shape(v)[0]
    w = np.array([0.5, 0.25, -3.0], np.float32)
    assert run(for_over_tensor, [w], [(cf.float32, [None])]) == pytest.approx(0.75)


def test_builds_graph_control_flow():
    g = cf.Graph()
    with g.as_default():
        n = cf.placeholder(cf.int32, [])
        ag.to_graph(collatz_steps)(n)
        types = {op.type for op in g.get_operations()}
    assert {"Enter", "Exit", "Merge", "Switch", "LoopCond"} <= types


def test_python_conditions_stay_python():
    def f(x, flag):
        if flag:
            y = x + 1.0
        else:
            y = x - 1.0
        while flag:
            flag = False
        return y
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, [])
        y = ag.to_graph(f)(x, True)
        assert not {"Switch", "Merge", "Enter"} & {op.type for op in g.get_operations()}
        with cf.Session() as sess:
            assert sess.run(y, {x: 1.0}) == 2.0


def test_len_and_tensor_range():
    def f(v, n):
        s = cf.constant(0.0)
        for i in range(n):
            s += v[i]
        return s + len(v)
    assert run(f, [np.array([1.0, 2.0, 4.0], np.float32), 2], [(cf.float32, [3]), I32]) == 6.0


def test_len_unknown_first_dimension_is_a_tensor():
    def f(v):
        return len(v)
    assert run(f, [np.zeros(7, np.float32)], [(cf.float32, [None])]) == 7


def test_tensor_range_loop():
    def f(x):
        for i in cf.range(4):
            x = x * 2.0 + cf.cast(i, cf.float32)
        return x
    assert run(f, [1.0], [F32]) == pytest.approx(((((1 * 2 + 0) * 2 + 1) * 2 + 2) * 2 + 3))


def test_and_or_are_lazy():
    calls = []

    def side(v):
        calls.append(v)
        return v > 0

    def f(x):
        return x > 100.0 and side(x)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, [])
        out = ag.to_graph(f)(x)
        assert out.dtype == cf.bool
        with cf.Session() as sess:
            assert not sess.run(out, {x: 1.0})
            assert sess.run(out, {x: 101.0})

    def py(x):
        return x > 0 and side(x)
    calls.clear()
    ag.to_graph(py)(-1)
    assert calls == []  # Python short-circuit kept


def test_print_and_assert(capfd):
    def f(x):
        print("x is", x)
        assert x > 0.0, "x must be positive"
        if x > 5.0:
            print("big", x * 2.0)
        return x + 1.0
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, [])
        y = ag.to_graph(f)(x)
        with cf.Session() as sess:
            assert sess.run(y, {x: 7.0}) == 8.0
            out = capfd.readouterr().out
            assert "x is 7" in out and "big 14" in out
            assert sess.run(y, {x: 2.0}) == 3.0
            out = capfd.readouterr().out
            assert "x is 2" in out and "big" not in out
            with pytest.raises(cf.errors.InvalidArgumentError, match="x must be positive"):
                sess.run(y, {x: -1.0})


def test_python_assert_and_print(capfd):
    def f(x, k):
        assert k > 0, "k must be positive"
        print("k =", k)
        return x * k
    with cf.Graph().as_default():
        ag.to_graph(f)(cf.constant(1.0), 2)
        assert "k = 2" in capfd.readouterr().out
        with pytest.raises(AssertionError, match="k must be positive"):
            ag.to_graph(f)(cf.constant(1.0), -1)


def test_effect_in_branch_runs():
    def f(x, v):
        if x > 0.0:
            v.assign_add(1.0)
        return x
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, [])
        v = cf.Variable(0.0)
        y = ag.to_graph(f)(x, v)
        with cf.Session() as sess:
            sess.run(cf.global_variables_initializer())
            sess.run(y, {x: 1.0})
            sess.run(y, {x: -1.0})
            sess.run(y, {x: 2.0})
            assert sess.run(v) == 2.0


def test_loop_options_shape_invariants_and_maximum_iterations():
    def grow(n):
        v = cf.zeros([1])
        i = cf.constant(0)
        while i < n:
            ag.set_loop_options(shape_invariants=[(v, cf.TensorShape([None]))], maximum_iterations=3)
            v = cf.concat([v, [cf.cast(i, cf.float32)]], 0)
            i += 1
        return v
    np.testing.assert_array_equal(run(grow, [10], [I32]), [0, 0, 1, 2])
    np.testing.assert_array_equal(run(grow, [1], [I32]), [0, 0])


def test_methods_and_callables():
    class Model:
        def __init__(self):
            self.limit = 3.0

        def step(self, x):
            while x < self.limit:
                x = x + 1.0
            return x

        def __call__(self, x):
            return self.step(x) * 2.0
    m = Model()
    assert run(m.step, [0.5], [F32]) == 3.5
    assert run(m, [0.5], [F32]) == 7.0


def test_recursive_false_leaves_callees():
    def f(x):
        return _helper(x)
    with cf.Graph().as_default():
        with pytest.raises(TypeError, match="truth value"):
            ag.to_graph(f, recursive=False)(cf.constant(3.0))
        ag.to_graph(f, recursive=True)(cf.constant(3.0))


def test_do_not_convert():
    @ag.do_not_convert
    def plain(a):
        if a > 1.0:  # would need conversion
            return a
        return a

    def f(x):
        return plain(x)
    with cf.Graph().as_default():
        with pytest.raises(TypeError, match="truth value"):
            ag.to_graph(f)(cf.constant(2.0))
    assert ag.to_graph(plain) is plain


def test_closures_and_defaults():
    scale = 3.0

    def f(x, k=2.0):
        if x > 0:
            x = x * scale * k
        return x
    assert run(f, [1.0], [F32]) == 6.0


def test_to_code_is_python_defining_the_function():
    src = ag.to_code(nested_break_continue)
    ns = {}
    exec(compile(src, "<to_code>", "exec"), ns)
    assert callable(ns["nested_break_continue"])
    assert "ag__.while_stmt" in src and "ag__.if_stmt" in src


def test_is_converted():
    assert ag.is_converted(ag.to_graph(abs_if))
    assert not ag.is_converted(abs_if)


# -- gradients -------------------------------------------------------------------------------

def _grad_loop(x, w):
    i = cf.constant(0)
    while i < 3:
        x = cf.tanh(x * w) + x
        i += 1
    return x


def _grad_cond_in_loop(x):
    for i in cf.range(3):
        if cf.reduce_sum(x) > 0.5:
            x = x * x * 0.5
        else:
            x = cf.sin(x) + 1.0
    return x


def _grad_break(x):
    i = cf.constant(0)
    while i < 10:
        if cf.reduce_sum(x) > 8.0:
            break
        x = x * 1.5 + 0.1
        i += 1
    return x


@pytest.mark.parametrize("case", [
    Case("Exit", lambda x, w: ag.to_graph(_grad_loop)(x, w), [(3,), (3,)], id="while"),
    Case("Merge", lambda x: ag.to_graph(abs_if)(cf.reduce_sum(x)) * x, [(4,)], id="if"),
    Case("Exit", lambda x: ag.to_graph(_grad_cond_in_loop)(x), [(3,)], low=-1.0, high=1.0, id="if_in_for"),
    Case("Exit", lambda x: ag.to_graph(_grad_break)(x), [(2,)], low=0.5, high=1.5, id="break"),
], ids=str)
def test_gradients(case):
    check_case(case)


# -- errors ----------------------------------------------------------------------------------

def test_undefined_in_else_branch():
    def f(x):
        if x > 0:
            y = x
        return y
    with cf.Graph().as_default():
        with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
            ag.to_graph(f)(cf.constant(1.0))


def test_missing_return_in_branch():
    def f(x):
        if x > 0:
            if x > 1:
                return x
        return x * 2.0
    with cf.Graph().as_default():
        with pytest.raises(ValueError, match="must also have a return statement"):
            ag.to_graph(f)(cf.constant(1.0))


def test_branch_dtype_mismatch():
    def f(x):
        if x > 0:
            y = cf.constant(1)
        else:
            y = cf.constant(1.0)
        return y
    with cf.Graph().as_default():
        with pytest.raises(TypeError, match="'y' has dtype int32 in the main branch, but dtype float32"):
            ag.to_graph(f)(cf.constant(1.0))


def test_loop_var_errors():
    def undefined(n):
        i = 0
        while i < n:
            s = i
            i += 1
            t = s + 1
        return t

    def dtype_change(n):
        i = cf.constant(0)
        x = cf.constant(1)
        while i < n:
            x = cf.cast(x, cf.float32)
            i += 1
        return x

    def shape_change(n):
        v = cf.zeros([1])
        while cf.size(v) < n:
            v = cf.concat([v, v], 0)
        return v
    with cf.Graph().as_default():
        n = cf.constant(3)
        with pytest.raises(ValueError, match="'t' must be defined before the loop"):
            ag.to_graph(undefined)(n)
        with pytest.raises(TypeError, match="'x' has dtype int32 before the loop, but dtype float32"):
            ag.to_graph(dtype_change)(n)
        with pytest.raises(ValueError, match="set_loop_options"):
            ag.to_graph(shape_change)(n)


def test_unsupported_constructs_name_file_and_line():
    def gen(x):
        yield x

    def loop_else(x):
        while x > 0:
            x -= 1
        else:
            x = 5
        return x
    line = loop_else.__code__.co_firstlineno + 1
    with pytest.raises(ag.ConversionError, match="generators"):
        ag.to_graph(gen)
    with pytest.raises(ag.ConversionError, match=rf"test_autograph\.py:{line}: while/else"):
        ag.to_graph(loop_else)


def test_runtime_errors_point_at_user_lines():
    def f(x):
        y = x + 1.0
        z = y.no_such_attribute
        return z
    with cf.Graph().as_default():
        with pytest.raises(AttributeError) as ei:
            ag.to_graph(f)(cf.constant(1.0))
    frames = [(fr.filename, fr.lineno) for fr in __import__("traceback").extract_tb(ei.value.__traceback__)]
    assert (__file__, f.__code__.co_firstlineno + 2) in frames


def test_api_names():
    import collflow.compat.v1 as tf
    assert tf.autograph.to_graph is ag.to_graph
    assert set(m.name for m in tf.autograph.experimental.Feature) == {
        "ALL", "AUTO_CONTROL_DEPS", "ASSERT_STATEMENTS", "BUILTIN_FUNCTIONS", "EQUALITY_OPERATORS", "LISTS",
        "NAME_SCOPES"}
    tf.autograph.set_verbosity(3)
    assert ag.get_verbosity() == 3
    tf.autograph.set_verbosity(0)
    with pytest.raises(TypeError):
        ag.to_graph(abs_if, experimental_optional_features="ALL")
    ag.to_graph(abs_if, experimental_optional_features=tf.autograph.experimental.Feature.ALL)


# -- more Python around the converted statements ---------------------------------------------

def _mixed(x, items):
    def g(a):
        for k in range(3):
            if k > 1:
                return a
            a = a * 2.0
        return a
    out = []
    for i, (w, b) in enumerate(zip(items, items[1:])):
        out.append(w * x + b + i)
    t = g(x)
    with cf.name_scope("blk"):
        if t > 5.0:
            t = t - 5.0
    try:
        z = t + 1.0
    finally:
        out.append(z)
    return cf.add_n(out)


def test_nested_def_with_try_enumerate():
    def expect(x):
        t = x * 4.0
        t = t - 5.0 if t > 5.0 else t
        return (x + 2.0) + (2.0 * x + 4.0) + t + 1.0
    for v in (0.5, 3.0):
        assert run(lambda x: _mixed(x, [1.0, 2.0, 3.0]), [v], [F32]) == pytest.approx(expect(v))


def test_prints_in_staged_loops(capfd):
    def count(n):
        i = cf.constant(0)
        while i < n:
            print("iter", i)
            i += 1
        return i

    def rows(v):
        for e in v:
            print("elem", e)
        return v
    assert run(count, [3], [I32]) == 3
    assert capfd.readouterr().out.split("\n")[:3] == ["iter 0", "iter 1", "iter 2"]
    np.testing.assert_array_equal(run(rows, [np.array([1.0, 2.0], np.float32)], [(cf.float32, [2])]), [1, 2])
    assert "elem 1\nelem 2\n" in capfd.readouterr().out


def test_tensor_break_in_python_loop_is_an_error():
    def f(x):
        for k in range(3):
            if x > k:
                break
            x = x + 1.0
        return x
    with cf.Graph().as_default():
        with pytest.raises(NotImplementedError, match="iterate over a tensor"):
            ag.to_graph(f)(cf.constant(1.0))


def test_staging_error_names_the_statement_line():
    def f(x):
        if x > 0:
            y = x
        return y
    with cf.Graph().as_default():
        with pytest.raises(ValueError, match=rf"test_autograph\.py:{f.__code__.co_firstlineno + 1}\)"):
            ag.to_graph(f)(cf.constant(1.0))


def test_class_conversion_and_super():
    class Base:
        def scale(self, x):
            return x * 2.0

    class Net(Base):
        def __init__(self, steps):
            self.steps = steps

        def scale(self, x):
            i = cf.constant(0)
            while i < self.steps:
                x = super().scale(x)
                i += 1
            return x
    Conv = ag.to_graph(Net)
    assert issubclass(Conv, Net)
    assert run(lambda x: Conv(3).scale(x), [1.5], [F32]) == 12.0


# -- composite names, TensorArrays, builtins, threads ---------------------------------------

class _Box(object):
    pass


def _attr_if(x):
    a = _Box()
    a.v = x
    if x > 0:
        a.v = x * 2.0
    return a.v


def _subscript_if(x):
    d = {"k": x, "j": x + 1.0}
    if x > 0:
        d["k"] = x * 2.0
    else:
        d["j"] = x - 1.0
    return d["k"] * 10.0 + d["j"]


def _attr_only_in_branches(x):
    a = _Box()
    if x > 0:
        a.v = x * 2.0
    else:
        a.v = -x
    return a.v


@pytest.mark.parametrize("fn", [_attr_if, _subscript_if, _attr_only_in_branches], ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [3.0, -2.0])
def test_composite_names_in_staged_if(fn, x):
    assert run(fn, [x], [F32]) == pytest.approx(fn(np.float32(x)))


def test_composite_names_in_staged_loops():
    class Acc(object):
        def __init__(self):
            self.total = cf.constant(0)

        def add_up(self, n):
            for i in cf.range(n):
                self.total = self.total + i
            return self.total

    def f(n):
        a = _Box()
        a.b = _Box()
        a.b.i = cf.constant(0)
        d = {"s": cf.constant(1)}
        while a.b.i < n:
            a.b.i += 1
            d["s"] = d["s"] * 2
        return a.b.i, d["s"]

    g = cf.Graph()
    with g.as_default():
        n = cf.placeholder(cf.int32, [])
        acc = Acc()
        total = ag.to_graph(acc.add_up)(n)
        out = ag.to_graph(f)(n)
        with cf.Session() as s:
            assert s.run([total, acc.total], {n: 5}) == [10, 10]  # written back after the loop
            assert s.run(out, {n: 5}) == (5, 32)
            assert s.run(out, {n: 0}) == (0, 1)


def test_composite_undefined_in_one_branch_is_an_error():
    def f(x):
        a = _Box()
        if x > 0:
            a.v = x
        return a.v
    with cf.Graph().as_default():
        with pytest.raises(ValueError, match=r"'a\.v' must also be initialized in the else branch"):
            ag.to_graph(f)(cf.constant(1.0))


def test_python_container_changed_in_staged_code_is_an_error():
    def in_loop(n):
        out = []
        for i in cf.range(n):
            out.append(i)
        return cf.stack(out)

    def in_cond(x):
        d = {}
        if x > 0:
            d.setdefault("k", x * 2)
        return x

    class Acc(object):
        def __init__(self):
            self.total = cf.constant(0)

        def add(self, i):
            self.total = self.total + i

    def through_method(n):
        acc = Acc()
        for i in cf.range(n):
            acc.add(i)
        return acc.total

    def outer_values_only(x):
        seen = []
        if x > 0:
            seen.append("positive")  # no tensor made inside goes in: allowed, as in TF
            seen.append(x)
            x = x * 2.0
        return x, len(seen)

    with cf.Graph().as_default():
        for fn, line in ((in_loop, in_loop.__code__.co_firstlineno + 3),
                         (in_cond, in_cond.__code__.co_firstlineno + 3),
                         (through_method, through_method.__code__.co_firstlineno + 3)):
            with pytest.raises(ValueError, match=rf"test_autograph\.py:{line}: \w+\.\w+\(\.\.\.\) puts a tensor"):
                ag.to_graph(fn)(cf.constant(2))
        y, k = ag.to_graph(outer_values_only)(cf.constant(2.0))
        assert k == 2  # changed once, when the graph was built
        with cf.Session() as s:
            assert s.run(y) == 4.0


def _ta_squares(x):
    ta = cf.TensorArray(x.dtype, size=3)
    for i in cf.range(3):
        ta = ta.write(i, x[i] * x[i])
    return ta.stack()


def test_tensor_array_loop_variable():
    def dynamic(x):
        ta = cf.TensorArray(cf.float32, size=0, dynamic_size=True)
        i = cf.constant(0)
        while i < cf.shape(x)[0]:
            ta = ta.write(i, x[i] + 1.0)
            i += 1
        return ta.stack(), len(ta)

    v = np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_allclose(run(_ta_squares, [v], [(cf.float32, [3])]), v * v)
    stacked, n = run(dynamic, [v], [(cf.float32, [None])])
    np.testing.assert_allclose(stacked, v + 1.0)
    assert n == 3


@pytest.mark.parametrize("case", [
    Case("TensorArrayStackV3", lambda x: ag.to_graph(_ta_squares)(x) * [1.0, 2.0, 3.0], [(3,)], id="ta_loop"),
], ids=str)
def test_tensor_array_loop_gradients(case):
    check_case(case)


def test_int_with_base_and_len_of_tensor_array():
    def f(x, n):
        ta = cf.TensorArray(cf.float32, size=n)
        return x + int("ff", 16) + int("101", base=2) + int(2.7), len(ta)
    y, k = run(f, [1, 4], [I32, I32])
    assert y == 1 + 255 + 5 + 2 and k == 4
    with cf.Graph().as_default():
        with pytest.raises(TypeError, match="explicit base"):
            ag.to_graph(lambda t: int(t, 16))(cf.constant("ff"))


def test_effects_are_per_thread():
    import threading
    errors = []

    def work():
        try:
            for _ in range(15):
                with cf.Graph().as_default():
                    v = cf.Variable(0)

                    def f(x):
                        for i in cf.range(x):
                            if i > 1:
                                v.assign_add(1)
                        return x
                    r = ag.to_graph(f)(cf.constant(4))
                    with cf.Session() as s:
                        s.run(cf.global_variables_initializer())
                        s.run(r)
                        if s.run(v) != 2:
                            errors.append(("wrong count", s.run(v)))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []


def test_get_verbosity_documented():
    assert ag.get_verbosity.__doc__ and "verbosity" in ag.get_verbosity.__doc__
