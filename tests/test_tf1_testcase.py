"""tf.test by hand (no TensorFlow): TestCase's sessions, evaluate and assertions, the
gradient checker against closed-form Jacobians, the GPU queries, Benchmark."""
import collections
import os
import unittest

import numpy as np
import pytest

import collflow.compat.v1 as tf


class SessionsTest(tf.test.TestCase):

    def test_fresh_default_graph_per_test(self):
        self.assertEqual(tf.get_default_graph().get_operations(), [])
        tf.constant(1.0, name="only")
        self.assertEqual(len(tf.get_default_graph().get_operations()), 1)

    def test_fresh_default_graph_per_test_again(self):
        self.assertEqual(tf.get_default_graph().get_operations(), [])

    def test_session_and_cached_session(self):
        x = tf.constant([1.0, 2.0])
        with self.session() as sess:
            self.assertIs(tf.get_default_session(), sess)
            self.assertAllEqual(sess.run(x), [1.0, 2.0])
        with self.cached_session() as s1:
            pass
        with self.cached_session() as s2:
            self.assertIs(s1, s2)
            self.assertIs(s2.graph, x.graph)
        with self.test_session() as s3:
            self.assertIs(s3, s1)
        with self.assertRaises(ValueError):
            with self.cached_session(graph=tf.Graph()):
                pass

    def test_session_on_other_graph(self):
        g = tf.Graph()
        with g.as_default():
            c = tf.constant(3)
        with self.session(graph=g) as sess:
            self.assertIs(tf.get_default_graph(), g)
            self.assertEqual(sess.run(c), 3)

    def test_evaluate_nested(self):
        a = tf.constant([1, 2])
        out = self.evaluate({"a": a, "b": [a * 2, a + 1]})
        self.assertAllEqual(out["a"], [1, 2])
        self.assertAllEqual(out["b"][0], [2, 4])
        self.assertAllEqual(self.evaluate(a + 10), [11, 12])

    def test_variables_in_cached_session(self):
        v = tf.Variable(2.0)
        with self.cached_session():
            self.evaluate(tf.global_variables_initializer())
            self.assertAllClose(self.evaluate(v * 3.0), 6.0)
            self.assertAllClose(v.eval(), 2.0)

    def test_random_is_seeded_per_test(self):
        with self.session() as sess:
            a = sess.run(tf.random_uniform([3]))
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(87654321)
            r = tf.random_uniform([3])
        with self.session(graph=g) as sess:
            b = sess.run(r)
        self.assertAllEqual(a, b)

    def test_temp_dir(self):
        d = self.get_temp_dir()
        self.assertTrue(os.path.isdir(d))
        self.assertEqual(d, self.get_temp_dir())
        self.assertTrue(os.path.isdir(tf.test.get_temp_dir()))


class AssertionsTest(tf.test.TestCase):

    def test_all_close_defaults_and_nested(self):
        self.assertAllClose(1.0, 1.0 + 5e-7)
        with self.assertRaises(AssertionError):
            self.assertAllClose(1.0, 1.0 + 1e-5)
        self.assertAllClose(1.0, 1.0 + 1e-5, rtol=1e-4)
        P = collections.namedtuple("P", "x y")
        self.assertAllClose({"a": [1.0, (2.0, 3.0)], "p": P(1, np.array([2.0]))},
                            {"a": [1.0, (2.0, 3.0)], "p": P(1, np.array([2.0]))})
        with self.assertRaises(AssertionError):
            self.assertAllClose({"a": 1.0}, {"b": 1.0})
        with self.assertRaises(AssertionError):
            self.assertAllClose([[1.0, 2.0]], [1.0, 2.0])  # shapes differ
        self.assertAllClose([np.nan, 1.0], [np.nan, 1.0])
        self.assertAllClose(tf.constant([1.0, 2.0]), [1.0, 2.0])
        self.assertNotAllClose([1.0], [2.0])

    def test_all_equal(self):
        self.assertAllEqual([1, 2], np.array([1, 2]))
        self.assertAllEqual([b"a", b"b"], np.array([b"a", b"b"], object))
        self.assertAllEqual(tf.constant([[1, 2]]), [[1, 2]])
        with self.assertRaises(AssertionError):
            self.assertAllEqual([1, 2], [1, 3])
        with self.assertRaises(AssertionError):
            self.assertAllEqual([1, 2], [[1, 2]])
        self.assertNotAllEqual([1], [2])

    def test_according_to_type(self):
        a = np.array([1.0], np.float16)
        self.assertAllCloseAccordingToType(a, a + np.float16(5e-4))
        with self.assertRaises(AssertionError):
            self.assertAllCloseAccordingToType(np.array([1.0]), np.array([1.0 + 5e-4]))

    def test_near(self):
        self.assertNear(1.0, 1.05, 0.1)
        with self.assertRaises(AssertionError):
            self.assertNear(1.0, 1.2, 0.1)
        self.assertArrayNear([1.0, 2.0], [1.01, 2.01], 0.02)
        with self.assertRaises(AssertionError):
            self.assertArrayNear([1.0, 2.0], [1.0], 0.02)
        self.assertNDArrayNear(np.ones([2, 2]), np.ones([2, 2]) + 0.01, 0.03)
        with self.assertRaises(AssertionError):
            self.assertNDArrayNear(np.ones([2, 2]), np.ones([2, 2]) + 0.01, 0.01)

    def test_ranges_and_orders(self):
        x = np.array([0.0, 0.5, 1.0])
        self.assertAllInRange(x, 0.0, 1.0)
        with self.assertRaises(AssertionError):
            self.assertAllInRange(x, 0.0, 1.0, open_upper_bound=True)
        with self.assertRaises(AssertionError):
            self.assertAllInRange(np.array([b"a"]), 0, 1)
        self.assertAllGreater(x, -0.1)
        self.assertAllGreaterEqual(x, 0.0)
        self.assertAllLess(x, 1.1)
        self.assertAllLessEqual(x, 1.0)
        with self.assertRaises(AssertionError):
            self.assertAllGreater(x, 0.0)
        self.assertAllInSet([1, 2, 1], {1, 2})

    def test_shape_device_proto(self):
        self.assertShapeEqual(np.zeros([2, 3]), tf.zeros([2, 3]))
        with self.assertRaises(AssertionError):
            self.assertShapeEqual(np.zeros([2, 3]), tf.zeros([3, 2]))
        with self.assertRaises(TypeError):
            self.assertShapeEqual([1], tf.zeros([1]))
        self.assertDeviceEqual("/cpu:0", "/device:CPU:0")
        with self.assertRaises(AssertionError):
            self.assertDeviceEqual("/cpu:0", "/gpu:0")
        with self.assertRaisesRegex(NotImplementedError, "assertProtoEquals"):
            self.assertProtoEquals("a: 1", None)

    def test_raises_op_error(self):
        x = tf.placeholder(tf.float32)
        chk = tf.check_numerics(x, "bad value")
        with self.cached_session() as sess:
            with self.assertRaisesOpError("bad value"):
                sess.run(chk, {x: np.inf})
            with self.assertRaisesWithPredicateMatch(tf.errors.InvalidArgumentError, lambda e: "bad" in str(e)):
                sess.run(chk, {x: np.nan})
        with self.assertRaises(AssertionError):
            with self.assertRaisesOpError("something else"):
                raise tf.errors.InvalidArgumentError(None, None, "not it")
        with self.assertRaises(AssertionError):
            with self.assertRaisesOpError("x"):
                pass

    def test_checked_thread(self):
        out = []
        t = self.checkedThread(target=lambda v: out.append(v), args=(3,))
        t.start()
        t.join()
        self.assertEqual(out, [3])

        def boom():
            raise RuntimeError("boom")
        bad = self.checkedThread(boom)
        bad.start()
        with self.assertRaises(AssertionError):
            bad.join()


class GradientCheckerTest(tf.test.TestCase):

    def test_square_jacobians(self):
        x = tf.placeholder(tf.float64, [2, 2])
        y = x * x
        x0 = np.array([[1.0, 2.0], [3.0, -1.0]])
        with self.cached_session():
            jt, jn = tf.test.compute_gradient(x, [2, 2], y, [2, 2], x_init_value=x0)
        self.assertAllClose(jt, np.diag(2 * x0.ravel()))
        self.assertAllClose(jn, np.diag(2 * x0.ravel()), atol=1e-6)

    def test_matmul_list_and_error(self):
        a = tf.constant(np.arange(6.0).reshape(2, 3))
        b = tf.constant(np.arange(3.0).reshape(3, 1) + 1)
        y = tf.matmul(a, b)
        with self.cached_session():
            (ja_t, ja_n), (jb_t, jb_n) = tf.test.compute_gradient([a, b], [[2, 3], [3, 1]], y, [2, 1])
            err = tf.test.compute_gradient_error([a, b], [[2, 3], [3, 1]], y, [2, 1])
        self.assertEqual(ja_t.shape, (6, 2))
        self.assertEqual(jb_t.shape, (3, 2))
        self.assertAllClose(ja_t, ja_n, atol=1e-6)
        self.assertAllClose(jb_t, jb_n, atol=1e-6)
        self.assertLess(err, 1e-6)

    def test_extra_feed_and_unconnected(self):
        x = tf.placeholder(tf.float64, [3])
        s = tf.placeholder(tf.float64, [])
        y = x * s
        z = tf.constant([1.0, 2.0], tf.float64) + 0.0
        with self.cached_session():
            jt, jn = tf.test.compute_gradient(x, [3], y, [3], x_init_value=np.ones(3), extra_feed_dict={s: 2.5})
            self.assertAllClose(jt, 2.5 * np.eye(3))
            self.assertAllClose(jn, 2.5 * np.eye(3))
            jt, jn = tf.test.compute_gradient(x, [3], z, [2], x_init_value=np.ones(3))
            self.assertAllEqual(jt, np.zeros([3, 2]))
            self.assertAllEqual(jn, np.zeros([3, 2]))

    def test_needs_default_session(self):
        x = tf.placeholder(tf.float64, [1])
        with self.assertRaisesRegex(ValueError, "default session"):
            tf.test.compute_gradient(x, [1], x * 2.0, [1])


class BenchAndQueriesTest(tf.test.TestCase):

    def test_gpu_queries(self):
        self.assertIsInstance(tf.test.is_gpu_available(), bool)
        self.assertEqual(tf.test.gpu_device_name() != "", tf.test.is_gpu_available())
        self.assertIsInstance(tf.test.is_built_with_cuda(), bool)
        self.assertIs(tf.test.mock, unittest.mock)
        self.assertTrue(os.path.isdir(tf.test.test_src_dir_path("collflow")))

    def test_benchmark(self):
        class B(tf.test.Benchmark):
            def benchmark_x(self):
                self.report_benchmark(iters=3, wall_time=0.5, extras={"k": 1})

        b = B()
        b.benchmark_x()
        self.assertEqual(b.reports[0]["name"], "B.benchmark_x")
        self.assertEqual(b.reports[0]["iters"], 3)
        with tf.Session() as sess:
            out = b.run_op_benchmark(sess, tf.constant(1) + 1, min_iters=2, name="add")
        self.assertEqual(out["iters"], 2)
        self.assertEqual(b.reports[-1]["name"], "add")


def test_testcase_is_unittest():
    assert issubclass(tf.test.TestCase, unittest.TestCase)
    assert callable(tf.test.main)


def test_unknown_name_is_clear():
    with pytest.raises(AttributeError, match="tf.test.nope"):
        tf.test.nope


class AbslStyleTest(tf.test.TestCase):

    def test_container_helpers(self):
        self.assertLen([1, 2], 2)
        self.assertEmpty([])
        self.assertNotEmpty([0])
        self.assertBetween(2, 1, 3)
        self.assertSameElements([1, 1, 2], [2, 1])
        self.assertContainsSubset([1], [1, 2])
        self.assertNoCommonElements([1], [2])
        self.assertItemsEqual([2, 1, 1], [1, 1, 2])
        self.assertStartsWith("abc", "ab")
        self.assertEndsWith("abc", "bc")
        for bad in (lambda: self.assertLen([1], 2), lambda: self.assertEmpty([1]),
                    lambda: self.assertNotEmpty([]), lambda: self.assertBetween(5, 1, 3),
                    lambda: self.assertContainsSubset([3], [1]), lambda: self.assertEndsWith("abc", "x")):
            with self.assertRaises(AssertionError):
                bad()

    def test_dtype_equal(self):
        self.assertDTypeEqual(np.zeros(2, np.float32), tf.float32)
        self.assertDTypeEqual(tf.constant([1]), np.int32)
        with self.assertRaises(AssertionError):
            self.assertDTypeEqual(np.zeros(2), tf.float32)


class MainTest(unittest.TestCase):

    def test_main_runs_unittest(self):
        from unittest import mock
        with mock.patch("unittest.main") as m:
            tf.test.main(argv=["prog"])
        m.assert_called_once()
