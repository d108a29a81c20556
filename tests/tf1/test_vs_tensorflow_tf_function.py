"""tf.function / tf.wrap_function against TensorFlow's tf.compat.v1 in graph mode (eager
disabled): each program is written once against a `tf` module and run on both; the fetched
values, the tracing counts, the error types, the variable names and the output structures
are compared.  Skipped cleanly without TensorFlow."""
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
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _both(prog, feed=None):
    """prog(tf) -> (fetches, facts), in a fresh graph of each library; the fetched values
    (after the global initializer) and the facts, TensorFlow's first."""
    res = []
    for tf in (tft, cft):
        g = tf.Graph()
        with g.as_default():
            fetches, facts = prog(tf)
            with tf.Session(graph=g) as s:
                s.run(tf.global_variables_initializer())
                vals = s.run(fetches, feed(tf, g) if feed else None) if fetches is not None else None
        res.append((vals, facts))
    return res


def _same(a, b):
    if isinstance(a, dict):
        assert sorted(a) == sorted(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                                   rtol=1e-5, atol=1e-6)


def _compare(prog, feed=None):
    (tv, tfacts), (cv, cfacts) = _both(prog, feed)
    assert tfacts == cfacts
    if tv is not None:
        _same(tv, cv)


def _outcome(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    return "ok"


def test_cache_keys_and_counts():
    def prog(tf):
        @tf.function
        def f(x, k=2):
            return x * k
        outs, counts = [], []
        for args in [(tf.constant([1., 2.]),), (tf.constant([3., 4.]),), (tf.constant([1., 2.]), 3),
                     (tf.constant([1., 2., 3.]),), (tf.constant([1, 2]),), (np.array([1., 2.]),),
                     (np.array([5., 6.]),), (1.0,), (2.0,), (1.0,), (tf.constant([1., 2.]), 3)]:
            outs.append(f(*args))
            counts.append(f.experimental_get_tracing_count())
        outs.append(f(tf.constant([1., 2.]), k=3))
        counts.append(f.experimental_get_tracing_count())
        return outs, counts
    _compare(prog)


def test_cache_keys_variables_lists_keywords():
    def prog(tf):
        v, w = tf.Variable(1.0), tf.Variable(2.0)

        @tf.function
        def f(x, *, k=1, **kw):
            return x * k
        outs, counts = [], []
        for a, kw in [((v,), {}), ((w,), {}), (([1., 2.],), {}), (([1., 2.],), {}), (([1., 3.],), {}),
                      ((tf.placeholder_with_default([1., 2.], [None]),), {}), ((tf.constant([1., 2.]),), {}),
                      ((tf.constant([1., 2.]),), {"k": 2}), ((tf.constant([1., 2.]),), {"z": 2})]:
            outs.append(f(*a, **kw))
            counts.append(f.experimental_get_tracing_count())

        @tf.function
        def returns_op():
            return tf.no_op()
        return outs, (counts, _outcome(returns_op))
    _compare(prog)


def test_relax_shapes_counts():
    def prog(tf):
        @tf.function(experimental_relax_shapes=True)
        def f(x):
            return x * 2
        outs, counts = [], []
        for shp in [[2], [3], [4], [2], [2, 2], [3, 3], [5]]:
            outs.append(f(tf.ones(shp)))
            counts.append(f.experimental_get_tracing_count())
        return outs, counts
    _compare(prog)


def test_structures_and_python_results():
    def prog(tf):
        @tf.function
        def f(d, pair):
            x, y = pair
            return {"sum": d["a"] + x, "rest": (y * 2, 3, None, 2.5)}
        out = f({"a": tf.constant([1., 2.])}, (tf.constant([3., 4.]), tf.constant(5.)))
        facts = (out["rest"][2] is None, out["rest"][1].dtype.name, out["rest"][3].dtype.name,
                 tf.function(lambda x: None)(tf.constant(1.)) is None)
        return [out["sum"], out["rest"][0], out["rest"][1], out["rest"][3]], facts
    _compare(prog)


def test_input_signature():
    def prog(tf):
        shapes = []

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.float32)])
        def f(x, y):
            shapes.append(x.shape.as_list())
            return x + y
        good = [f(tf.constant([1., 2.]), tf.constant(1.)), f([1., 2., 3.], 3.0), f(np.array([1., 2.]), 3),
                f(tf.constant([1., 2.]), y=tf.constant(1.))]
        bad = [_outcome(lambda: f(tf.constant([1, 2]), tf.constant(1.))),
               _outcome(lambda: f(tf.constant([[1., 2.]]), tf.constant(1.))),
               _outcome(lambda: f(tf.constant([1., 2.]))),
               _outcome(lambda: f(tf.constant([1., 2.]), tf.constant(1.), tf.constant(1.))),
               _outcome(lambda: tf.function(lambda x: x, input_signature=[1])),
               _outcome(lambda: tf.function(lambda x: x, input_signature=tf.TensorSpec([], tf.float32)))]
        nested = tf.function(lambda p: p[0] + 1.0,
                             input_signature=[(tf.TensorSpec([], tf.float32), tf.TensorSpec([2], tf.int32))])
        good.append(nested((tf.constant(1.), tf.constant([1, 2]))))
        bad += [_outcome(lambda: nested([tf.constant(1.), tf.constant([1, 2])])),
                _outcome(lambda: nested((tf.constant(1.),)))]
        return good, (bad, shapes[0], f.experimental_get_tracing_count())
    _compare(prog)


def test_variables_singleton_and_rules():
    def prog(tf):
        class Scale:
            def __init__(self):
                self.w = None
                self.runs = 0

            @tf.function
            def __call__(self, x):
                self.runs += 1
                if self.w is None:
                    self.w = tf.Variable(2.0, name="w")
                tf.add_to_collection("inside", x)
                return self.w * x

        m, m2 = Scale(), Scale()
        with tf.name_scope("outer"):
            outs = [m(tf.constant(3.))]
        first = (m.runs, m.__call__.experimental_get_tracing_count(), m.__call__ is m.__call__)
        outs += [m(tf.constant(4.)), m(tf.constant([1., 2.])), m2(tf.constant(1.))]

        @tf.function
        def every_time(x):
            return tf.Variable(1.0, name="e") * x

        @tf.function
        def reuse(x):
            with tf.variable_scope("sc", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", shape=[], initializer=tf.ones_initializer())
            return w * x

        @tf.function
        def no_reuse(x):
            return tf.get_variable("g", shape=[]) * x
        outs.append(reuse(tf.constant(5.)))
        errs = [_outcome(lambda: every_time(tf.constant(1.))), _outcome(lambda: no_reuse(tf.constant(1.)))]
        names = sorted(v.name for v in tf.global_variables() if not v.name.startswith(("e", "g")))
        return outs, (first, m.__call__.experimental_get_tracing_count(), errs, names,
                      tf.get_collection("inside"))
    _compare(prog)


def test_automatic_control_dependencies():
    def prog(tf):
        v = tf.Variable(0.0, name="v")

        @tf.function
        def side(x):
            v.assign_add(1.0)
            return x * 2

        @tf.function
        def order(x):
            v.assign(5.0)
            r = v.read_value()
            v.assign_add(1.0)
            return r + x, v * 1.0

        @tf.function
        def rnd():
            u = tf.random_uniform([3])
            return u, u * 2
        return (side(tf.constant(1.0)), order(tf.constant(1.0)), rnd()), None

    def run(tf):
        g = tf.Graph()
        with g.as_default():
            (side, order, rnd), _ = prog(tf)
            v = tf.global_variables()[0]
            with tf.Session(graph=g) as s:
                s.run(tf.global_variables_initializer())
                got = [s.run(side), s.run(v), s.run(side), s.run(v), s.run(order), s.run(v)]
                a, b = s.run(rnd)
                got.append(np.allclose(b, 2 * a))
        return got
    _same(run(tft), run(cft))


def test_gradients_and_autograph():
    def prog(tf):
        w = tf.Variable([1., 2.], name="gw")

        @tf.function
        def loss(x):
            return tf.reduce_sum(w * tf.tanh(x) * x)

        @tf.function
        def branchy(x):
            if x > 0:
                y = x * x
            else:
                y = -x
            i = tf.constant(0)
            while i < 3:
                y = y * 1.5
                i += 1
            return y
        x = tf.constant([0.3, -0.7])
        p = tf.placeholder(tf.float32, [], name="p")
        yb = branchy(p)
        return [tf.gradients(loss(x), [x, w]), yb, tf.gradients(yb, p)], None
    for val in (2.0, -1.0):
        _compare(prog, lambda tf, g: {g.get_tensor_by_name("p:0"): val})


def test_concrete_function():
    def prog(tf):
        @tf.function
        def f(x, y, scale=1.0):
            return {"s": (x + y) * scale}
        cf = f.get_concrete_function(tf.TensorSpec([None], tf.float32, name="xx"), tf.TensorSpec([None], tf.float32))
        same = f.get_concrete_function(tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.float32)) is cf
        out = cf(tf.constant([1., 2.]), tf.constant([3., 4.]))
        facts = ([t.name for t in cf.inputs], [t.shape.as_list() for t in cf.outputs],
                 sorted(cf.structured_outputs), cf.structured_input_signature[0][2], same,
                 f.experimental_get_tracing_count(),
                 _outcome(lambda: cf(tf.constant([1., 2.]), tf.constant([1., 2.]), 3.0)),
                 _outcome(lambda: cf(tf.constant([1., 2.]))))
        return out, facts
    _compare(prog)


def test_wrap_function():
    def prog(tf):
        def tf1(x):
            w = tf.get_variable("ww", shape=[], initializer=tf.ones_initializer())
            v = tf.Variable(3.0, name="v2")
            return x * w * v
        wf = tf.wrap_function(tf1, [tf.TensorSpec([], tf.float32)])
        outs = [wf(tf.constant(3.)), wf(tf.constant(4.))]
        return outs, (sorted(v.name for v in tf.global_variables()), len(wf.outputs))
    _compare(prog)


def test_run_functions_eagerly():
    def prog(tf):
        runs = []

        @tf.function
        def f(x):
            runs.append(1)
            return x + 1
        flags = [tf.config.experimental_functions_run_eagerly()]
        tf.config.experimental_run_functions_eagerly(True)
        try:
            flags.append(tf.config.experimental_functions_run_eagerly())
            out = [f(tf.constant(1.)), f(tf.constant(2.))]
        finally:
            tf.config.experimental_run_functions_eagerly(False)
        return out, (flags, len(runs), out[0].op.type in ("Add", "AddV2"))
    _compare(prog)


def test_numpy_arrays_key_by_dtype_and_shape():
    # (NumPy scalars: collflow keeps TF 1.15's rule, Python values keyed by value, where TF 2.21
    # traces them as tensors; tests/test_tf_function.py checks collflow's)
    def prog(tf):
        @tf.function
        def f(x):
            return x * 2
        outs, counts = [], []
        for a in [np.array(1.5, np.float32), np.array(2.5, np.float32), np.array(3, np.int64),
                  np.array([1.5, 2.], np.float32), np.array([0.5, 1.], np.float32), np.array(7, np.int64)]:
            outs.append(f(a))
            counts.append(f.experimental_get_tracing_count())
        return outs, (counts, [o.dtype.name for o in outs])
    _compare(prog)
