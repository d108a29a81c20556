"""tf.autograph.to_graph against TensorFlow's (tensorflow.compat.v1, graph mode): the same
function source, reading the module-level name `tf`, converted by each library and run in a
Session on the same inputs; values compared.  to_code is checked for being Python that
defines the function (its text differs from TensorFlow's).  Skipped cleanly without
TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

tf = None  # the library the functions below use; set by _run


# -- the functions, written once for both libraries -----------------------------------------

def abs_if(x):
    if x > 0:
        y = x * 2.0
    else:
        y = -x
    return y


def collatz(n):
    steps = 0
    while n > 1:
        if n % 2 < 1:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def nested_jumps(m):
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


def for_rows(v):
    total = tf.constant(0.0)
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


def logic(x, y):
    a = (x > 0 and y > 0) or not (x < -5)
    b = x if x > y else y
    return tf.cast(a, tf.float32) + b


def tensor_range(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def grow(n):
    v = tf.zeros([1])
    i = tf.constant(0)
    while i < n:
        tf.autograph.experimental.set_loop_options(shape_invariants=[(v, tf.TensorShape([None]))])
        v = tf.concat([v, [tf.cast(i, tf.float32)]], 0)
        i += 1
    return tf.reduce_sum(v) + tf.cast(tf.size(v), tf.float32)


def _halve(a):
    if a > 1.0:
        a = a / 2.0
    return a


def calls_user_function(x):
    while x > 1.0:
        x = _halve(x) - 0.25
    return x


def python_loop(x):
    for k in [1.0, 2.0, 3.0]:
        if x > k:
            x = x - k
    return x


def matrix_loop(m):
    acc = tf.zeros([3])
    for row in m:
        if tf.reduce_sum(row) > 0.0:
            acc = acc + row * 2.0
        else:
            acc = acc - row
    return acc


CASES = [
    (abs_if, [np.float32(3.0)]), (abs_if, [np.float32(-2.0)]),
    (collatz, [np.int32(27)]), (collatz, [np.int32(1)]),
    (nested_jumps, [np.int32(6)]),
    (for_rows, [np.array([1.0, -1.0, 2.0, 3.0, 1.0], np.float32)]),
    (early_return, [np.float32(3.0)]), (early_return, [np.float32(0.5)]),
    (logic, [np.float32(1.0), np.float32(2.0)]), (logic, [np.float32(-7.0), np.float32(-8.0)]),
    (tensor_range, [np.int32(7)]),
    (grow, [np.int32(4)]),
    (calls_user_function, [np.float32(9.0)]),
    (python_loop, [np.float32(4.5)]),
    (matrix_loop, [np.array([[1, 2, 3], [-4, 0, 1], [0.5, 0.5, -2]], np.float32)]),
]


def _run(lib, fn, args):
    global tf
    tf = lib
    try:
        g = lib.Graph()
        with g.as_default():
            phs = [lib.placeholder(lib.as_dtype(a.dtype), a.shape) for a in args]
            out = lib.autograph.to_graph(fn)(*phs)
            with lib.Session(graph=g) as sess:
                return sess.run(out, dict(zip(phs, args)))
    finally:
        tf = None


@pytest.mark.parametrize("fn,args", CASES, ids=[c[0].__name__ for c in CASES])
def test_same_values(fn, args):
    want = _run(tft, fn, args)
    got = _run(cft, fn, args)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)


def test_undefined_in_branch_is_an_error_in_both():
    def f(x):
        if x > 0:
            y = x
        return y
    for lib in (tft, cft):
        with lib.Graph().as_default():
            with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
                lib.autograph.to_graph(f)(lib.constant(1.0))


def test_loop_dtype_change_is_an_error_in_both():
    def f(n):
        i = tf.constant(0)
        x = tf.constant(1)
        while i < n:
            x = tf.cast(x, tf.float32)
            i += 1
        return x
    global tf
    for lib in (tft, cft):
        tf = lib
        try:
            with lib.Graph().as_default():
                with pytest.raises(TypeError, match="'x' has dtype int32 before the loop, but dtype float32"):
                    lib.autograph.to_graph(f)(lib.constant(3))
        finally:
            tf = None


@pytest.mark.parametrize("fn", [nested_jumps, early_return, grow], ids=lambda f: f.__name__)
def test_to_code_defines_the_function(fn):
    for lib in (tft, cft):
        src = lib.autograph.to_code(fn)
        compile(src, "<to_code>", "exec")
    ns = {}
    exec(compile(cft.autograph.to_code(fn), "<to_code>", "exec"), ns)
    assert callable(ns[fn.__name__])


def test_namespace_matches():
    assert {n for n in dir(tft.autograph) if not n.startswith("_")} <= {
        n for n in dir(cft.autograph) if not n.startswith("_")}
    assert {m.name for m in tft.autograph.experimental.Feature} == {m.name for m in cft.autograph.experimental.Feature}
    for n in ("do_not_convert", "set_loop_options", "Feature"):
        assert hasattr(cft.autograph.experimental, n)


# -- composite names, TensorArrays and builtins, as tf.function bodies -----------------------

def _fetch(prog):
    """prog(tf) -> fetches, in a fresh graph of each library; the values, TensorFlow's first."""
    out = []
    for lib in (tft, cft):
        g = lib.Graph()
        with g.as_default():
            fetches = prog(lib)
            with lib.Session(graph=g) as s:
                out.append(s.run(fetches))
    return out


def _assert_same(prog):
    want, got = _fetch(prog)
    for w, o in zip(want, got):
        np.testing.assert_allclose(np.asarray(o), np.asarray(w), rtol=1e-6, atol=1e-6)


class _Box(object):
    pass


def _attr_if(tf):
    @tf.function
    def f(x):
        a = _Box()
        a.v = x
        if x > 0:
            a.v = x * 2
        return a.v
    return [f(tf.constant(3)), f(tf.constant(-3))]


def _subscript_if(tf):
    @tf.function
    def f(x):
        d = {"k": x, "j": x + 1}
        if x > 0:
            d["k"] = x * 2
        else:
            d["j"] = x - 1
        return d["k"], d["j"]
    return [f(tf.constant(3)), f(tf.constant(-3))]


def _attr_new_in_both_branches(tf):
    @tf.function
    def f(x):
        a = _Box()
        if x > 0:
            a.v = x * 2
        else:
            a.v = x
        return a.v
    return [f(tf.constant(3)), f(tf.constant(-3))]


def _self_attr_for(tf):
    class Acc(object):
        def __init__(self):
            self.total = tf.constant(0)

        @tf.function
        def run(self, n):
            for i in tf.range(n):
                self.total = self.total + i
            return self.total
    acc = Acc()  # kept alive: TF's bound tf.function holds its instance weakly
    return [acc.run(tf.constant(5))]


def _nested_attr_and_subscript_loop(tf):
    @tf.function
    def f(n):
        a = _Box()
        a.b = _Box()
        a.b.c = tf.constant(0)
        d = {"s": tf.constant(1)}
        lst = [tf.constant(0), tf.constant(1)]
        for i in tf.range(n):
            a.b.c += i
            d["s"] = d["s"] * 2
            lst[0] = lst[0] + i
        return a.b.c, d["s"], lst[0]
    return f(tf.constant(5))


def _attr_while(tf):
    @tf.function
    def f(n):
        a = _Box()
        a.i = tf.constant(0)
        a.s = tf.constant(0.0)
        while a.i < n:
            a.i += 1
            a.s = a.s + tf.cast(a.i, tf.float32)
        return a.i, a.s
    return f(tf.constant(5))


def _tensor_array_accumulate(tf):
    x = tf.constant([1.0, 2.0, 3.0])

    @tf.function
    def f(x):
        ta = tf.TensorArray(tf.float32, size=3)
        for i in tf.range(3):
            ta = ta.write(i, x[i] * x[i])
        return ta.stack()
    y = f(x)
    return [y, tf.gradients(tf.reduce_sum(y * [1.0, 2.0, 3.0]), x)[0]]


def _tensor_array_dynamic_while(tf):
    @tf.function
    def f(x):
        n = tf.shape(x)[0]
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        i = tf.constant(0)
        while i < n:
            ta = ta.write(i, tf.reduce_sum(x[i]) * 2.0)
            i += 1
        return ta.stack(), len(ta)
    return f(tf.ones([4, 3]))


def _int_with_base(tf):
    @tf.function
    def f(x):
        return x + int("ff", 16) + int("11", base=2)
    return [f(tf.constant(1))]


def _and_all_signs(tf):
    @tf.function
    def f(x, y):
        return x > 0 and y > 0, x > 0 or y > 0
    return [f(tf.constant(a), tf.constant(b)) for a in (2, -2) for b in (3, -3)]


COMPOSITE = [_attr_if, _subscript_if, _attr_new_in_both_branches, _self_attr_for, _nested_attr_and_subscript_loop,
             _attr_while, _tensor_array_accumulate, _tensor_array_dynamic_while, _int_with_base, _and_all_signs]


@pytest.mark.parametrize("prog", COMPOSITE, ids=lambda p: p.__name__.strip("_"))
def test_composites_tensor_arrays_builtins(prog):
    _assert_same(prog)


def test_list_append_in_staged_code_is_an_error_in_both():
    def in_loop(tf):
        @tf.function
        def f(n):
            lst = []
            for i in tf.range(n):
                lst.append(i)
            return tf.stack(lst)
        return f(tf.constant(3))

    def in_cond(tf):
        @tf.function
        def f(x):
            d = {"k": x}
            if x > 0:
                d.update(k=x * 2)
            return d["k"]
        return f(tf.constant(3))

    for prog in (in_loop, in_cond):
        for lib in (tft, cft):
            with lib.Graph().as_default():
                with pytest.raises(Exception) as e:
                    prog(lib)
            if lib is cft:  # TF: InaccessibleTensorError where the tensor is used; here at the statement
                assert e.type is ValueError
                assert "test_vs_tensorflow_autograph.py:" in str(e.value) and "Python" in str(e.value)
