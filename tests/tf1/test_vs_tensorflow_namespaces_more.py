"""Differential tests against TensorFlow for tf.sets, tf.test (compute_gradient and TestCase's
assertions), tf.nest, tf.compat and the tf.debugging extras: the same inputs in
`tensorflow.compat.v1` and `collflow.compat.v1`, the same results (and the same error
classes).  Skipped cleanly without TensorFlow."""
import collections
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


def _both(fn):
    """fn(tf) run in each library's own graph and session: (TF's value, collflow's)."""
    out = []
    for tf in (tft, cft):
        g = tf.Graph()
        with g.as_default():
            fetch = fn(tf)
        with tf.Session(graph=g) as s:
            out.append(s.run(fetch))
    return out


def _text(v):
    v = np.asarray(v)
    if v.dtype == object or v.dtype.kind == "S":
        return np.array([x.decode() if isinstance(x, bytes) else x for x in v.ravel()], object).reshape(v.shape)
    return v


def _same_sparse(want, got):
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(_text(got.values), _text(want.values))
    np.testing.assert_array_equal(got.dense_shape, want.dense_shape)
    assert np.asarray(got.indices).dtype == np.asarray(want.indices).dtype
    if np.asarray(want.values).dtype != object:
        assert np.asarray(got.values).dtype == np.asarray(want.values).dtype


_R = np.random.RandomState(11)
_A2 = _R.randint(0, 7, [4, 5]).astype(np.int32)
_B2 = _R.randint(0, 7, [4, 3]).astype(np.int32)
_A3 = _R.randint(0, 5, [2, 3, 4]).astype(np.int64)
_B3 = _R.randint(0, 5, [2, 3, 2]).astype(np.int64)


def _sparse(tf, idx, vals, shape, dtype):
    return tf.SparseTensor(np.array(idx, np.int64), tf.constant(vals, dtype), np.array(shape, np.int64))


_SA = ([[0, 0, 1], [0, 2, 0], [0, 2, 3], [1, 0, 0], [1, 1, 2]], [4, 1, 9, 1, 3], [2, 3, 5])
_SB = ([[0, 0, 0], [0, 2, 1], [1, 1, 0], [1, 1, 1]], [4, 9, 3, 8], [2, 3, 2])

SET_CASES = [
    ("dense2", lambda tf: (tf.constant(_A2), tf.constant(_B2))),
    ("dense3", lambda tf: (tf.constant(_A3), tf.constant(_B3))),
    ("sparse_sparse", lambda tf: (_sparse(tf, *_SA, tf.int64), _sparse(tf, *_SB, tf.int64))),
    ("dense_sparse", lambda tf: (tf.constant(_A3[:, :, :2]), _sparse(tf, *_SB, tf.int64))),
    ("sparse_dense", lambda tf: (_sparse(tf, *_SA, tf.int64), tf.constant(_B3))),
    ("strings", lambda tf: (tf.constant([["b", "a", "c"], ["x", "x", "y"]]),
                            tf.constant([["a", "d"], ["y", "z"]]))),
    ("disjoint", lambda tf: (tf.constant([[1, 2], [3, 4]]), tf.constant([[5, 6], [7, 8]]))),
    ("int8", lambda tf: (tf.constant([[1, -2, 3]], tf.int8), tf.constant([[3, 5]], tf.int8))),
]


@pytest.mark.parametrize("case", SET_CASES, ids=[c[0] for c in SET_CASES])
@pytest.mark.parametrize("op", ["set_intersection", "set_union", "difference_ab", "difference_ba"])
def test_sets_match_tensorflow(case, op):
    def fn(tf):
        a, b = case[1](tf)
        if op == "difference_ab":
            return tf.sets.set_difference(a, b)
        if op == "difference_ba":
            return tf.sets.difference(a, b, aminusb=False)
        return getattr(tf.sets, op)(a, b)
    want, got = _both(fn)
    _same_sparse(want, got)


def test_set_size_matches_tensorflow():
    def fn(tf):
        return [tf.sets.set_size(_sparse(tf, *_SA, tf.int64)), tf.sets.size(tf.sets.union(tf.constant(_A2),
                                                                                      tf.constant(_B2)))]
    want, got = _both(fn)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype


def test_sets_static_shapes_match():
    for tf in (tft, cft):
        st = tf.sets.union(tf.constant(_A3), tf.constant(_B3))
        assert st.indices.shape.as_list() == [None, 3]
        assert st.dense_shape.shape.as_list() == [3]


GRAD_CASES = [
    ("square", lambda tf, x: tf.square(x), [2, 3], np.float64),
    ("tanh_f32", lambda tf, x: tf.tanh(x), [4], np.float32),
    ("reduce", lambda tf, x: tf.reduce_sum(x * x, axis=0), [3, 2], np.float64),
    ("matmul", lambda tf, x: tf.matmul(x, tf.constant([[1.0, 2.0], [0.5, -1.0]], tf.float64)), [3, 2],
     np.float64),
    ("softmax", lambda tf, x: tf.nn.softmax(x), [2, 3], np.float64),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_compute_gradient_matches_tensorflow(case):
    name, fn, shape, dt = case
    x0 = np.random.RandomState(5).uniform(-1, 1, shape).astype(dt)
    res = []
    for tf in (tft, cft):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.as_dtype(dt), shape)
            y = fn(tf, x)
            y_shape = y.shape.as_list()
            with tf.Session(graph=g) as s, s.as_default():
                jt, jn = tf.test.compute_gradient(x, shape, y, y_shape, x_init_value=x0)
                err = tf.test.compute_gradient_error(x, shape, y, y_shape, x_init_value=x0)
        res.append((jt, jn, err))
    (tj, tn, terr), (cj, cn, cerr) = res
    assert cj.shape == tj.shape and cj.dtype == tj.dtype and cn.dtype == tn.dtype
    tol = 1e-5 if dt == np.float32 else 1e-10
    np.testing.assert_allclose(cj, tj, rtol=tol, atol=tol)
    np.testing.assert_allclose(cn, tn, rtol=1e-3 if dt == np.float32 else 1e-8, atol=tol * 10)
    assert abs(cerr - terr) <= (1e-3 if dt == np.float32 else 1e-8)


def test_compute_gradient_list_matches_tensorflow():
    a0 = np.arange(6.0).reshape(2, 3)
    b0 = np.arange(3.0).reshape(3, 1) - 1
    res = []
    for tf in (tft, cft):
        g = tf.Graph()
        with g.as_default():
            a = tf.constant(a0)
            b = tf.constant(b0)
            y = tf.matmul(a, b) * 2.0
            with tf.Session(graph=g) as s, s.as_default():
                res.append(tf.test.compute_gradient([a, b], [[2, 3], [3, 1]], y, [2, 1], x_init_value=[a0, b0]))
    for (wt, wn), (gt, gn) in zip(*res):
        np.testing.assert_allclose(gt, wt, rtol=1e-10)
        np.testing.assert_allclose(gn, wn, rtol=1e-7, atol=1e-9)


def _outcome(fn):
    try:
        fn()
        return "ok"
    except AssertionError:
        return "fail"


ASSERT_CASES = [
    ("close", lambda t: t.assertAllClose([1.0, 2.0], [1.0, 2.0 + 1e-7])),
    ("not_close", lambda t: t.assertAllClose([1.0, 2.0], [1.0, 2.0 + 1e-4])),
    ("close_rtol", lambda t: t.assertAllClose(1.0, 1.0 + 1e-4, rtol=1e-3)),
    ("close_nested", lambda t: t.assertAllClose({"a": [1.0, (2.0,)]}, {"a": [1.0, (2.0,)]})),
    ("close_keys", lambda t: t.assertAllClose({"a": 1.0}, {"b": 1.0})),
    ("close_shape", lambda t: t.assertAllClose([[1.0]], [1.0])),
    ("close_nan", lambda t: t.assertAllClose([np.nan], [np.nan])),
    ("equal", lambda t: t.assertAllEqual([1, 2], [1, 2])),
    ("not_equal", lambda t: t.assertAllEqual([1, 2], [2, 2])),
    ("equal_shape", lambda t: t.assertAllEqual([1, 2], [[1, 2]])),
    ("equal_scalar", lambda t: t.assertAllEqual(3, [3])),
    ("equal_nan", lambda t: t.assertAllEqual([np.nan, 1.0], [np.nan, 1.0])),
    ("equal_str", lambda t: t.assertAllEqual([b"a"], [b"a"])),
    ("close_scalar", lambda t: t.assertAllClose(3.0, [3.0])),
    ("close_bool", lambda t: t.assertAllClose([True, False], [True, False])),
    ("close_namedtuple", lambda t: t.assertAllClose(P(1.0, 2.0), P(1.0, 2.0 + 1e-3))),
    ("close_tuple_list", lambda t: t.assertAllClose((1.0, [2.0, 3.0]), [1.0, (2.0, 3.0)])),
    ("shape_equal", lambda t: t.assertShapeEqual(np.zeros([2, 3]), t._lib.zeros([2, 3]))),
    ("shape_unequal", lambda t: t.assertShapeEqual(np.zeros([2, 3]), t._lib.zeros([3, 2]))),
    ("in_set", lambda t: t.assertAllInSet([1, 2], [1, 2, 3])),
    ("in_set_bad", lambda t: t.assertAllInSet([1, 4], [1, 2, 3])),
    ("by_type_half", lambda t: t.assertAllCloseAccordingToType(np.float16([1.0]), np.float16([1.0005]))),
    ("by_type_double", lambda t: t.assertAllCloseAccordingToType(np.float64([1.0]), np.float64([1.0005]))),
    ("near", lambda t: t.assertNear(1.0, 1.05, 0.1)),
    ("not_near", lambda t: t.assertNear(1.0, 1.2, 0.1)),
    ("array_near", lambda t: t.assertArrayNear([1.0, 2.0], [1.01, 2.0], 0.02)),
    ("ndarray_near", lambda t: t.assertNDArrayNear(np.ones(2), np.ones(2) + 0.01, 0.01)),
    ("in_range", lambda t: t.assertAllInRange(np.array([0.0, 1.0]), 0.0, 1.0)),
    ("in_range_open", lambda t: t.assertAllInRange(np.array([0.0, 1.0]), 0.0, 1.0, open_lower_bound=True)),
    ("greater", lambda t: t.assertAllGreater(np.array([1, 2]), 1)),
    ("less_equal", lambda t: t.assertAllLessEqual(np.array([1, 2]), 2)),
    ("device", lambda t: t.assertDeviceEqual("/cpu:0", "/device:CPU:0")),
    ("device_diff", lambda t: t.assertDeviceEqual("/cpu:0", "/device:GPU:0")),
]


@pytest.mark.parametrize("case", ASSERT_CASES, ids=[c[0] for c in ASSERT_CASES])
def test_testcase_assertions_agree(case):
    class T1(tft.test.TestCase):
        _lib = tft

        def runTest(self):
            pass

    class T2(cft.test.TestCase):
        _lib = cft

        def runTest(self):
            pass
    outcomes = []
    for cls in (T1, T2):
        t = cls()
        t.setUp()
        outcomes.append(_outcome(lambda: case[1](t)))
        t.tearDown()
    assert outcomes[1] == outcomes[0]


P = collections.namedtuple("P", "b a")
NEST = [{"z": [1, (2, 3)], "a": P(4, {"y": 5, "x": 6}), "n": None},
        (1, [2, [3, (4,)]], "s"), collections.OrderedDict([("b", 1), ("a", [2, 3])]), 7, [], {"k": ()}]


@pytest.mark.parametrize("s", NEST, ids=[str(i) for i in range(len(NEST))])
def test_nest_matches_tensorflow(s):
    flat_t, flat_c = tft.nest.flatten(s), cft.nest.flatten(s)
    assert flat_c == flat_t
    repl = [f"v{i}" for i in range(len(flat_t))]
    packed_t = tft.nest.pack_sequence_as(s, repl)
    packed_c = cft.nest.pack_sequence_as(s, repl)
    assert packed_c == packed_t and type(packed_c) is type(packed_t)
    if isinstance(s, dict):
        assert list(packed_c) == list(packed_t)
    assert cft.nest.map_structure(str, s) == tft.nest.map_structure(str, s)
    assert cft.nest.is_nested(s) == tft.nest.is_nested(s)


@pytest.mark.parametrize("a,b,kw", [((1, 2), [1, 2], {}), ((1, 2), [1, 2], {"check_types": False}),
                                    ((1, 2), (1, (2,)), {}), ({"a": 1}, {"b": 1}, {}), ((1,), (1, 2), {}),
                                    (P(1, 2), P(3, 4), {}), ([1, [2]], [3, [4]], {})])
def test_nest_assert_same_structure_agrees(a, b, kw):
    def outcome(lib):
        try:
            lib.nest.assert_same_structure(a, b, **kw)
            return None
        except (ValueError, TypeError) as e:
            return type(e)
    assert outcome(cft) == outcome(tft)


def test_compat_matches_tensorflow():
    import pathlib
    for name, args in [("as_bytes", ("é",)), ("as_bytes", (b"x",)), ("as_text", (b"ab",)), ("as_str", ("q",)),
                       ("as_str_any", (3,)), ("as_str_any", (b"z",)), ("path_to_str", (pathlib.Path("/a/b"),)),
                       ("path_to_str", (5,))]:
        assert getattr(cft.compat, name)(*args) == getattr(tft.compat, name)(*args)
    for name in ("as_bytes", "as_text"):
        for lib in (tft, cft):
            with pytest.raises(TypeError):
                getattr(lib.compat, name)(3)
    for v in (1, np.int8(1), 1.5, np.float32(1), 1j, True):
        for name in ("integral_types", "real_types", "complex_types"):
            assert isinstance(v, getattr(cft.compat, name)) == isinstance(v, getattr(tft.compat, name))
    for lib in (tft, cft):
        with lib.compat.forward_compatibility_horizon(2031, 5, 6):
            assert lib.compat.forward_compatible(2031, 5, 5) and not lib.compat.forward_compatible(2031, 5, 6)
    for d in (3, None):
        assert cft.compat.dimension_value(cft.TensorShape([d])[0]) == tft.compat.dimension_value(
            tft.TensorShape([d])[0])


def test_debugging_extras_match_tensorflow():
    for lib in (tft, cft):
        g = lib.Graph()
        with g.as_default():
            f32, f64 = lib.constant(1.0), lib.constant(1.0, lib.float64)
            assert lib.debugging.assert_same_float_dtype([f32, f32]) == lib.float32
            assert lib.assert_same_float_dtype(None, lib.float64) == lib.float64
            assert lib.debugging.assert_same_float_dtype() == lib.float32
            for bad in ([f32, f64], [lib.constant(1)]):
                with pytest.raises(ValueError):
                    lib.debugging.assert_same_float_dtype(bad)
            for bad in ("ab", np.ones(2), f32, 3):
                with pytest.raises(TypeError):
                    lib.debugging.assert_proper_iterable(bad)
            lib.debugging.assert_proper_iterable([1])
            assert lib.debugging.is_numeric_tensor(f32) and not lib.debugging.is_numeric_tensor(lib.constant("s"))


SHAPE_CASES = [
    ("ok", [([10, 3], ("N", "Q")), ([10, 7], ("N", "D")), ([3], ("Q",)), ([], ())]),
    ("ellipsis", [([2, 10, 3], (Ellipsis, "N", 3)), ([10], ("*", "N"))]),
    ("scalar_as_one", [([], (1,)), ([1], ())]),
    ("bad_symbol", [([10, 3], ("N", "Q")), ([9, 3], ("N", "Q"))]),
    ("bad_explicit", [([10, 3], ("N", 4))]),
    ("bad_rank", [([10, 3], ("N",))]),
    ("any_size", [([10, 3], (None, ".")), ([4], ("N",))]),
]


@pytest.mark.parametrize("case", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
@pytest.mark.parametrize("dynamic", [False, True])
def test_assert_shapes_agrees(case, dynamic):
    def outcome(lib):
        g = lib.Graph()
        with g.as_default():
            pairs, feed = [], {}
            for shape, spec in case[1]:
                if dynamic:
                    p = lib.placeholder(lib.float32, [None] * len(shape))
                    feed[p] = np.zeros(shape, np.float32)
                else:
                    p = lib.zeros(shape)
                pairs.append((p, spec))
            try:
                chk = lib.debugging.assert_shapes(pairs)
            except ValueError:
                return "ValueError"
            with lib.Session(graph=g) as s:
                try:
                    s.run(chk, feed)
                except lib.errors.InvalidArgumentError:
                    return "InvalidArgumentError"
        return "ok"
    assert outcome(cft) == outcome(tft)


CPLX_CASES = [
    ("abs", lambda tf, x: tf.abs(x), np.complex128),
    ("square", lambda tf, x: x * x, np.complex128),
    ("conj_mul", lambda tf, x: tf.conj(x) * tf.constant([1 + 2j, 3 - 1j], tf.complex128), np.complex128),
    ("to_complex", lambda tf, x: tf.complex(x, 2.0 * x), np.float64),
]


@pytest.mark.parametrize("case", CPLX_CASES, ids=[c[0] for c in CPLX_CASES])
def test_compute_gradient_complex_matches_tensorflow(case):
    name, fn, dt = case
    r = np.random.RandomState(2)
    x0 = r.uniform(-1, 1, [2]).astype(dt)
    if np.iscomplexobj(x0):
        x0 = x0 + 1j * r.uniform(-1, 1, [2])
    res = []
    for tf in (tft, cft):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.as_dtype(dt), [2])
            y = fn(tf, x)
            with tf.Session(graph=g) as s, s.as_default():
                res.append(tf.test.compute_gradient(x, [2], y, [2], x_init_value=x0))
    (tj, tn), (cj, cn) = res
    assert cj.shape == tj.shape and cj.dtype == tj.dtype
    np.testing.assert_allclose(cj, tj, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cn, tn, rtol=1e-8, atol=1e-10)


SET_ERROR_CASES = [
    ("float", lambda tf: tf.sets.union(tf.constant([[1.0]]), tf.constant([[1.0]]))),
    ("dtype_mismatch", lambda tf: tf.sets.union(tf.constant([[1]]), tf.constant([[1]], tf.int64))),
    ("rank1", lambda tf: tf.sets.union(tf.constant([1]), tf.constant([1]))),
    ("groups", lambda tf: tf.sets.union(tf.constant([[1], [2]]), tf.constant([[1]]))),
    ("unsorted", lambda tf: tf.sets.size(_sparse(tf, [[0, 1], [0, 0]], [1, 2], [1, 2], tf.int64))),
    ("out_of_bounds", lambda tf: tf.sets.size(_sparse(tf, [[0, 5]], [1], [1, 2], tf.int64))),
    ("unsorted_unchecked", lambda tf: tf.sets.size(_sparse(tf, [[0, 1], [0, 0]], [1, 2], [1, 2], tf.int64),
                                                   validate_indices=False)),
    ("size_of_dense", lambda tf: tf.sets.size(tf.constant([[1]]))),
]


@pytest.mark.parametrize("case", SET_ERROR_CASES, ids=[c[0] for c in SET_ERROR_CASES])
def test_set_errors_agree(case):
    def outcome(lib):
        g = lib.Graph()
        with g.as_default():
            try:
                out = case[1](lib)
            except (TypeError, ValueError) as e:
                return "build:" + ("TypeError" if isinstance(e, TypeError) else "ValueError")
            with lib.Session(graph=g) as s:
                try:
                    return str(np.asarray(s.run(out)).tolist()) if not hasattr(out, "indices") else "ok"
                except lib.errors.InvalidArgumentError:
                    return "run:InvalidArgumentError"
    assert outcome(cft) == outcome(tft)


def _tf1_style_tests(tf):
    """A TF1 op test module's TestCase, written once against library `tf`."""

    class OpTest(tf.test.TestCase):

        def testSquareGrad(self):
            with self.test_session():
                x = tf.constant([[0.5, -1.0], [2.0, 0.25]], tf.float64)
                y = tf.square(x) * 3.0
                err = tf.test.compute_gradient_error(x, [2, 2], y, [2, 2])
            self.assertLess(err, 1e-6)

        def testVariablesAndEvaluate(self):
            v = tf.Variable([1.0, 2.0])
            inc = tf.assign_add(v, [1.0, 1.0])
            with self.cached_session() as sess:
                sess.run(tf.global_variables_initializer())
                self.evaluate(inc)
                self.assertAllClose(v.eval(), [2.0, 3.0])
                self.assertAllEqual(self.evaluate(tf.shape(v)), [2])

        def testCheckNumerics(self):
            x = tf.placeholder(tf.float32)
            with self.session() as sess:
                with self.assertRaisesOpError("must be finite"):
                    sess.run(tf.check_numerics(x, "must be finite"), {x: float("nan")})

        def testSets(self):
            r = self.evaluate(tf.sets.set_intersection([[1, 2, 3]], [[3, 1]]))
            self.assertAllEqual(r.values, [1, 3])
            self.assertAllEqual(r.dense_shape, [1, 2])

        def testFreshGraph(self):
            self.assertEmpty(tf.get_default_graph().get_operations())

    return OpTest


def test_a_tf1_test_module_passes_in_both():
    import unittest
    results = []
    for lib in (tft, cft):
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(_tf1_style_tests(lib))
        res = unittest.TestResult()
        suite.run(res)
        results.append((res.testsRun, [str(e[1])[-300:] for e in res.errors + res.failures], len(res.skipped)))
    assert results[0][1] == [] and results[1][1] == [], results
    assert results[0] == results[1]
