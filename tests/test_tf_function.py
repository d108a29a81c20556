"""tf.function / tf.wrap_function in graph mode (collflow/autograph/function.py): values, the
trace cache and its counts, input_signature checks, the variables rule, automatic control
dependencies, gradients (finite differences), concrete functions, methods, AutoGraph."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.autograph.function import Function, function
from gradcheck import Case, check_case


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.config.experimental_run_functions_eagerly(False)


def _run(fetches, feed=None, init=True):
    with tf.Session() as s:
        if init:
            s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


# -- decorating, values, structures ---------------------------------------------------------------
def test_decorator_forms_and_values():
    @tf.function
    def a(x, k=2):
        return x * k

    @tf.function()
    def b(x):
        return x + 1

    c = tf.function(lambda x: x - 1, input_signature=[tf.TensorSpec([None], tf.float32)])
    assert isinstance(a, Function) and isinstance(b, Function) and isinstance(c, Function)
    assert a.__name__ == "a" and a.python_function.__name__ == "a" and a.input_signature is None
    x = tf.constant([1., 2.])
    np.testing.assert_allclose(_run([a(x), a(x, 3), b(x), c(x)]), [[2, 4], [3, 6], [2, 3], [0, 1]])
    with pytest.raises(TypeError, match="not a callable"):
        tf.function(3)


def test_nested_structures_python_results_and_none():
    @tf.function
    def f(d, pair):
        x, y = pair
        return {"sum": d["a"] + x, "rest": (y * 2, 3, None, "s")}

    out = f({"a": tf.constant([1., 2.])}, (tf.constant([3., 4.]), tf.constant(5.)))
    assert out["rest"][2] is None
    assert out["rest"][1].dtype == tf.int32 and out["rest"][3].dtype == tf.string
    v = _run(out["sum"]), _run(list(out["rest"][:2]))
    np.testing.assert_allclose(v[0], [4, 6])
    assert v[1][0] == 10 and v[1][1] == 3
    assert tf.function(lambda x: None)(tf.constant(1.)) is None

    @tf.function
    def bad(x):
        return object()
    with pytest.raises(TypeError, match="must return zero or more Tensors"):
        bad(tf.constant(1.))


# -- the trace cache --------------------------------------------------------------------------------
def test_cache_keys_and_tracing_count():
    runs = []

    @tf.function
    def f(x, k=2):
        runs.append(1)
        return x * k

    x, y = tf.constant([1., 2.]), tf.constant([3., 4.])
    f(x); f(y)                                  # same dtype and shape: one trace
    assert f.experimental_get_tracing_count() == 1
    f(x, 3); f(x, k=3)                          # a Python value keys by value, keywords canonicalized
    assert f.experimental_get_tracing_count() == 2
    f(tf.constant([1., 2., 3.])); f(tf.constant([1, 2]))  # another shape, another dtype
    assert f.experimental_get_tracing_count() == 4
    f(np.array([1., 2.])); f(np.array([5., 6.]))  # NumPy arrays key by dtype and shape
    assert f.experimental_get_tracing_count() == 5
    f(1.0); f(2.0); f(1.0)                      # Python numbers by value
    assert f.experimental_get_tracing_count() == 7
    # the documented difference: the body runs at every call (TF: once per trace)
    assert len(runs) == 11


def test_relax_shapes_generalizes():
    seen = []

    @tf.function(experimental_relax_shapes=True)
    def f(x):
        seen.append(x.shape.as_list() if x.shape.rank is not None else None)
        return x + 1

    counts = []
    for shp in [[2], [3], [4], [2], [2, 2], [3, 3]]:
        f(tf.zeros(shp))
        counts.append(f.experimental_get_tracing_count())
    assert counts == [1, 2, 2, 2, 3, 3]
    assert seen == [[2], [None], [None], [2], None, None]


# -- input_signature --------------------------------------------------------------------------------
def test_input_signature_conversion_and_errors():
    shapes = []

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.float32)])
    def f(x, y):
        shapes.append(x.shape.as_list())
        return x + y

    out = f([1., 2.], 3)                        # converted to the signature's dtypes
    assert shapes == [[None]] and out.shape.as_list() == [None]
    np.testing.assert_allclose(_run(out), [4, 5])
    f(tf.constant([1., 2., 3.]), tf.constant(1.))
    assert f.experimental_get_tracing_count() == 1
    for args, msg in [((tf.constant([1, 2]), tf.constant(1.)), "int32"),
                      ((tf.constant([[1., 2.]]), tf.constant(1.)), "shape"),
                      ((tf.constant([1., 2.]),), "missing"),
                      ((tf.constant([1., 2.]), tf.constant(1.), tf.constant(1.)), "too many"),
                      ((["a"], 1.0), "convert")]:
        with pytest.raises(TypeError, match=msg):
            f(*args)
    nested = tf.function(lambda p: p[0], input_signature=[(tf.TensorSpec([], tf.float32),
                                                           tf.TensorSpec([2], tf.int32))])
    nested((tf.constant(1.), tf.constant([1, 2])))
    with pytest.raises(TypeError, match="tuple"):
        nested([tf.constant(1.), tf.constant([1, 2])])
    with pytest.raises(TypeError, match="length"):
        nested((tf.constant(1.),))
    with pytest.raises(TypeError, match="TensorSpec objects"):
        tf.function(lambda x: x, input_signature=[1])
    with pytest.raises(TypeError, match="tuple or a list"):
        tf.function(lambda x: x, input_signature=tf.TensorSpec([], tf.float32))


# -- variables --------------------------------------------------------------------------------------
class _Scale:
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


def test_singleton_variables_per_instance():
    m = _Scale()
    with tf.name_scope("outer"):
        r1 = m(tf.constant(3.))
    assert m.runs == 2 and m.__call__.experimental_get_tracing_count() == 2  # TF traces a creating call twice
    assert m.__call__ is m.__call__ and _Scale.__call__ is _Scale.__call__
    r2 = m(tf.constant(4.))
    r3 = m(tf.constant([1., 2.]))
    assert m.__call__.experimental_get_tracing_count() == 3
    m2 = _Scale()
    r4 = m2(tf.constant(1.))
    # lifted names (no function or outer scope), one variable per instance; collections stay inside
    assert [v.name for v in tf.global_variables()] == ["w:0", "w_1:0"]
    assert tf.get_collection("inside") == []
    assert [v.name for v in tf.trainable_variables()] == ["w:0", "w_1:0"]
    v = _run([r1, r2, r3, r4])
    assert v[0] == 6 and v[1] == 8 and v[3] == 2
    np.testing.assert_allclose(v[2], [2, 4])
    with tf.Session() as s:  # the outputs do not wait on (re-run) the variable's initializer
        s.run(tf.global_variables_initializer())
        s.run(m.w.assign(7.0))
        assert s.run(r2) == 28


def test_variable_creation_rules():
    @tf.function
    def every_time(x):
        return tf.Variable(1.0) * x
    with pytest.raises(ValueError, match="non-first call"):
        every_time(tf.constant(1.))

    state = {"n": 0}

    @tf.function
    def on_retrace(x):  # creates nothing on the first trace, one variable on the second
        state["n"] += 1
        if state["n"] == 2:
            tf.Variable(0.0)
        return x
    on_retrace(tf.constant(1.))
    with pytest.raises(ValueError, match="non-first call"):
        on_retrace(tf.constant([1.]))

    @tf.function
    def reuse(x):
        with tf.variable_scope("sc", reuse=tf.AUTO_REUSE):
            w = tf.get_variable("w", shape=[], initializer=tf.ones_initializer())
        return w * x
    out = reuse(tf.constant(2.))
    assert [v.name for v in tf.global_variables()] == ["Variable:0", "sc/w:0"]  # the first kept
    assert _run(out) == 2

    @tf.function
    def twice(x):
        return tf.get_variable("g", shape=[]) * x
    with pytest.raises(ValueError, match="already exists"):
        twice(tf.constant(2.))


# -- stateful ops: automatic control dependencies ---------------------------------------------------------
def test_stateful_ops_run_with_outputs_in_program_order():
    v = tf.Variable(0.0, name="v")

    @tf.function
    def side(x):
        v.assign_add(1.0)   # not returned: runs when the output is fetched
        return x * 2

    @tf.function
    def order(x):
        v.assign(5.0)
        r = v.read_value()
        v.assign_add(1.0)
        return r + x, v * 1.0

    out = side(tf.constant(1.0))
    n0 = len(tf.get_default_graph().get_operations())
    o = order(tf.constant(1.0))
    # the ordering edges themselves: each op on v waits for the previous one, in program order
    ops = tf.get_default_graph().get_operations()[n0:]
    on_v = [op for op in ops if op.type in ("AssignVariable", "ReadVariable", "AssignAddVariable")]
    assert [op.type for op in on_v] == ["AssignVariable", "ReadVariable", "AssignAddVariable", "ReadVariable"]
    for prev, op in zip(on_v, on_v[1:]):
        assert prev in op.control_inputs
    assert all(op in o[0].op.control_inputs for op in on_v)
    with tf.Session() as s:
        s.run(v.initializer)
        assert s.run(out) == 2 and s.run(v) == 1
        assert s.run(out) == 2 and s.run(v) == 2
        assert s.run(o) == (6.0, 6.0) and s.run(v) == 6

    @tf.function
    def rnd():
        u = tf.random_uniform([3])
        return u, u * 2
    a, b = _run(rnd(), init=False)
    np.testing.assert_allclose(b, 2 * a)


def test_in_while_loop_and_nested_functions():
    v = tf.Variable(0.0)

    @tf.function
    def step(i):
        v.assign_add(1.0)
        return i + 1

    @tf.function
    def inner(x):
        v.assign_add(10.0)
        return x * 2

    @tf.function
    def outer(x):
        return inner(x) + 1

    r = tf.while_loop(lambda i: i < 3, step, [tf.constant(0)])
    o = outer(tf.constant(1.0))
    with tf.Session() as s:
        s.run(v.initializer)
        assert s.run(r) == 3 and s.run(v) == 3
        assert s.run(o) == 3 and s.run(v) == 13


# -- gradients --------------------------------------------------------------------------------------
def test_gradients_finite_differences():
    @function
    def f(a, b):
        return tf.tanh(tf.matmul(a, b)) * a[:, :1]

    check_case(Case("Tanh", lambda a, b: f(a, b), [(2, 3), (3, 2)], id="tf.function inputs"))
    check_case(Case("Tanh", lambda a, b: f(a, b), [(2, 3), (3, 2)], as_variables=True,
                    id="tf.function variables"))

    @function(experimental_relax_shapes=True)
    def g(x):
        return tf.sin(x) * x

    check_case(Case("Sin", lambda x: [g(x[:2]), g(x[1:]), g(x)], [(4,)], id="relaxed traces"))


def test_gradients_to_variables_read_inside():
    w = tf.Variable([1., 2.], name="gw")

    @tf.function
    def loss(x):
        return tf.reduce_sum(w * x * x)
    x = tf.constant([3., 4.])
    g = tf.gradients(loss(x), [x, w])
    gx, gw = _run(g)
    np.testing.assert_allclose(gx, [6, 16])
    np.testing.assert_allclose(gw, [9, 16])


# -- concrete functions, wrap_function, eager switch, AutoGraph ---------------------------------------------
def test_get_concrete_function():
    @tf.function
    def f(x, y, scale=1.0):
        return {"s": (x + y) * scale}

    cf = f.get_concrete_function(tf.TensorSpec([None], tf.float32, name="xx"), tf.TensorSpec([None], tf.float32))
    assert [t.name for t in cf.inputs] == ["xx:0", "y:0"]
    assert cf.outputs == [cf.structured_outputs["s"]] and cf.outputs[0].shape.as_list() == [None]
    assert cf.structured_input_signature[0][2] == 1.0 and cf.graph is tf.get_default_graph()
    assert f.get_concrete_function(tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.float32)) is cf
    o = cf(tf.constant([1., 2.]), tf.constant([3., 4.]))
    assert f.experimental_get_tracing_count() == 1  # the call fits the trace
    fed = _run(cf.outputs, {cf.inputs[0]: [1., 1.], cf.inputs[1]: [2., 2.]})
    np.testing.assert_allclose(fed[0], [3, 3])
    np.testing.assert_allclose(_run(o)["s"], [4, 6])
    with pytest.raises(TypeError):
        cf(tf.constant([1, 2]), tf.constant([1, 2]))
    with pytest.raises(TypeError):
        cf(tf.constant([1., 2.]), tf.constant([1., 2.]), 3.0)
    sig = tf.function(lambda x: x * 2, input_signature=[tf.TensorSpec([2], tf.float32)])
    assert sig.get_concrete_function().inputs[0].shape.as_list() == [2]


def test_wrap_function():
    def tf1(x):
        w = tf.get_variable("ww", shape=[], initializer=tf.ones_initializer())
        v = tf.Variable(3.0, name="v2")
        return x * w * v

    wf = tf.wrap_function(tf1, [tf.TensorSpec([], tf.float32)])
    a = wf(tf.constant(3.))
    b = wf(tf.constant(4.))
    assert [v.name for v in tf.global_variables()] == ["ww:0", "v2:0"]
    assert _run([a, b]) == [9, 12]
    assert _run(wf.outputs, {wf.inputs[0]: 2.}) == [6]
    with pytest.raises(TypeError):
        wf()
    with pytest.raises(NotImplementedError):
        wf.prune([], [])


def test_run_functions_eagerly():
    runs = []

    @tf.function
    def f(x):
        runs.append(1)
        return x + 1
    assert not tf.config.experimental_functions_run_eagerly()
    tf.config.experimental_run_functions_eagerly(True)
    assert tf.config.experimental_functions_run_eagerly()
    out = f(tf.constant(1.))
    assert f.experimental_get_tracing_count() == 0 and out.op.type == "Add" and _run(out) == 2


def test_autograph_python_control_flow_on_tensors():
    @tf.function
    def f(x):
        if x > 0:
            y = x * 2
        else:
            y = -x
        i = tf.constant(0)
        while i < 3:
            y = y + 1.0
            i += 1
        return y

    p = tf.placeholder(tf.float32, [])
    y = f(p)
    g = tf.gradients(y, p)[0]
    assert _run([y, g], {p: 5.}) == [13, 2]
    assert _run([y, g], {p: -1.}) == [4, -1]

    @tf.function(autograph=False)
    def plain(x):
        if x > 0:  # a Tensor in a Python `if`: TF1's error without AutoGraph
            return x
        return -x
    with pytest.raises(TypeError):
        plain(tf.constant(1.))


def test_methods_bind_per_instance_without_keeping_it():
    import gc

    class Unhashable:
        __hash__ = None

        def __eq__(self, other):
            return True

        @tf.function
        def m(self, x):
            return x * 2

    a, b = Unhashable(), Unhashable()
    assert a.m is a.m and a.m is not b.m
    assert _run(a.m(tf.constant(2.))) == 4
    held = Unhashable.__dict__["m"]._bound
    n = len(held)
    del a
    gc.collect()
    assert len(held) == n - 1


def test_a_new_graph_is_a_new_trace():
    f = tf.function(lambda x: x + 1)
    with tf.Graph().as_default():
        f(tf.constant(1.))
        f(tf.constant(2.))
    with tf.Graph().as_default():
        assert _run(f(tf.constant(1.))) == 2
    assert f.experimental_get_tracing_count() == 2


def test_numpy_scalars_key_by_value_arrays_by_dtype_and_shape():
    """TF 1.15's rule: only np.ndarray arguments become tensors; a NumPy scalar is a Python
    value of the trace key (TF 2.x traces scalars as tensors too: a deliberate difference)."""
    @tf.function
    def f(x):
        assert not isinstance(x, tf.Tensor) or x.shape.rank == 1
        return x + x  # (x * 2 of an np.float32 is float64 under NumPy 1.x's value-based casting)

    a, b, c, d = f(np.float32(1.5)), f(np.float32(2.5)), f(np.float32(1.5)), f(np.int64(3))
    assert f.experimental_get_tracing_count() == 3
    assert a.dtype == tf.float32 and d.dtype == tf.int64
    e, g = f(np.array([1., 2.], np.float32)), f(np.array([3., 4.], np.float32))
    assert f.experimental_get_tracing_count() == 4
    assert _run([a, b, c, d]) == [3.0, 5.0, 3.0, 6]
    np.testing.assert_array_equal(_run(g), [6., 8.])


def test_traces_go_with_their_graph():
    import gc
    import weakref

    class Arg:
        __hash__ = None  # keyed by identity: the trace holds it

    @tf.function
    def f(x, arg):
        return x + 1

    g = tf.Graph()
    arg = Arg()
    with g.as_default():
        f.get_concrete_function(tf.TensorSpec([], tf.float32), arg)
        f(tf.constant(1.0), arg)
    assert f.experimental_get_tracing_count() == 1
    g_ref, arg_ref = weakref.ref(g), weakref.ref(arg)
    del g, arg
    gc.collect()
    assert g_ref() is None and arg_ref() is None


def test_converted_code_cache_does_not_keep_functions(tmp_path):
    import gc
    import importlib
    import sys
    import weakref
    from collflow.autograph import converter

    (tmp_path / "ag_cache_probe_mod.py").write_text("def h(x):\n    if x > 0:\n        x = x * 2\n    return x\n")
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("ag_cache_probe_mod")
        converted = tf.autograph.to_graph(mod.h)
        assert _run(converted(tf.constant(3))) == 6
        code_ref = weakref.ref(mod.h.__code__)
        assert mod.h.__code__ in converter._cache
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("ag_cache_probe_mod", None)
    del mod, converted
    gc.collect()
    assert code_ref() is None


def test_threads_share_a_function():
    import sys
    import threading
    errors, outs = [], []
    shared = tf.function(lambda x: x * 3)

    def work():
        try:
            for _ in range(10):
                with tf.Graph().as_default():
                    v = tf.Variable(0)

                    @tf.function
                    def f(x):
                        for i in tf.range(x):
                            if i > 1:
                                v.assign_add(1)
                        return shared(x)
                    r = f(tf.constant(4))
                    with tf.Session() as s:
                        s.run(tf.global_variables_initializer())
                        outs.append((s.run(r), s.run(v)))
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
    assert errors == [] and outs == [(12, 2)] * 30
    assert shared.experimental_get_tracing_count() == 30  # one trace per graph


def test_input_signature_documented():
    assert Function.input_signature.__doc__
