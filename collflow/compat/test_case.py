"""TF1's `tf.test.TestCase`: a unittest.TestCase with TensorFlow's test helpers.

Each test starts on a fresh default graph with TF's default graph seed set;
`session()`/`cached_session()`/`test_session()` give a collflow Session on it (made the
default session and its graph the default graph inside the `with`), `evaluate` runs tensors
in it, and the assertion helpers compare nested structures of arrays and tensors with TF's
tolerances (1e-6 relative and absolute unless given).
"""
from __future__ import annotations

import contextlib
import math
import os
import re
import tempfile
import threading
import unittest
from typing import Any, Callable, Iterator, List, Optional

import numpy as np

from collflow import errors as _errors
from collflow.graph import graph as _g
from collflow.graph.device_spec import DeviceSpec
from collflow.graph.ops.random_ops import set_random_seed
from collflow.graph.sparse_tensor import SparseTensor
from collflow.graph.variables import Variable
from collflow.runtime.session import Session, get_default_session

__all__ = ["TestCase"]

DEFAULT_GRAPH_SEED = 87654321  # TF's random_seed.DEFAULT_GRAPH_SEED, set for every test


class _CheckedThread:
    """A thread whose exception is re-raised (as a test failure) by join()."""

    def __init__(self, testcase: unittest.TestCase, target: Callable, args: Any = None, kwargs: Any = None):
        self._testcase = testcase
        self._target = target
        self._args = () if args is None else args
        self._kwargs = {} if kwargs is None else kwargs
        self._exception: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run)
        self._is_thread_joined = False

    def _run(self) -> None:
        try:
            self._target(*self._args, **self._kwargs)
        except Exception as e:  # noqa: BLE001  (re-raised by join())
            self._exception = e

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join()
        self._is_thread_joined = True
        if self._exception is not None:
            self._testcase.fail(f"Error in checkedThread: {self._exception}")

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def check_termination(self) -> None:
        if self._is_thread_joined:
            return
        if self.is_alive():
            self._testcase.fail("A checked thread was not joined.")
        self.join()


def _is_tensorish(x: Any) -> bool:
    return isinstance(x, (_g.Tensor, Variable, SparseTensor, _g.Operation))


def _has_tensor(x: Any) -> bool:
    if isinstance(x, dict):
        return any(_has_tensor(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(_has_tensor(v) for v in x)
    return _is_tensorish(x)


class TestCase(unittest.TestCase):
    """Base class of TF1 unit tests (tf.test.TestCase)."""

    def __init__(self, methodName: str = "runTest"):
        super().__init__(methodName)
        self._threads: List[_CheckedThread] = []
        self._tempdir: Optional[str] = None
        self._cached_session: Optional[Session] = None
        self._cached_graph: Optional[_g.Graph] = None

    def setUp(self) -> None:
        self._clear_cached_session()
        np.random.seed(DEFAULT_GRAPH_SEED)
        _g.reset_default_graph()
        set_random_seed(DEFAULT_GRAPH_SEED)

    def tearDown(self) -> None:
        for t in self._threads:
            t.check_termination()
        self._clear_cached_session()

    def _clear_cached_session(self) -> None:
        if self._cached_session is not None:
            self._cached_session.close()
        self._cached_session = None
        self._cached_graph = None

    # --- sessions -----------------------------------------------------------------------
    @contextlib.contextmanager
    def _as_default(self, sess: Session) -> Iterator[Session]:
        with sess.graph.as_default(), sess.as_default():
            yield sess

    @contextlib.contextmanager
    def session(self, graph: Optional[_g.Graph] = None, config: Any = None, use_gpu: bool = True,
                force_gpu: bool = False) -> Iterator[Session]:
        """A new Session on `graph` (the default graph if None), closed at the end."""
        sess = Session(graph=graph if graph is not None else _g.get_default_graph(), config=config)
        try:
            with self._as_default(sess):
                yield sess
        finally:
            sess.close()

    @contextlib.contextmanager
    def cached_session(self, graph: Optional[_g.Graph] = None, config: Any = None, use_gpu: bool = True,
                       force_gpu: bool = False) -> Iterator[Session]:
        """The test's one Session (made on first use, closed at tearDown)."""
        if self._cached_session is None:
            g = graph if graph is not None else _g.get_default_graph()
            self._cached_session = Session(graph=g, config=config)
            self._cached_graph = g
        elif graph is not None and graph is not self._cached_graph:
            raise ValueError("The graph used to get the cached session is different than the one that was used "
                             "to create the session. Maybe create a new session with self.session()")
        with self._as_default(self._cached_session) as sess:
            yield sess

    def test_session(self, graph: Optional[_g.Graph] = None, config: Any = None, use_gpu: bool = True,
                     force_gpu: bool = False) -> Any:
        """TF1's deprecated form: the cached session, or a new one for an explicit graph.  The
        test runner collects this name as a test too: that "test" is skipped, as TF does."""
        if self.id().endswith(".test_session"):
            self.skipTest("Tests that have the name \"test_session\" are automatically skipped: the name is "
                          "reserved for creating sessions within tests")
        return self._test_session(graph, config, use_gpu, force_gpu)

    @contextlib.contextmanager
    def _test_session(self, graph: Optional[_g.Graph], config: Any, use_gpu: bool,
                      force_gpu: bool) -> Iterator[Session]:
        if graph is None:
            with self.cached_session(config=config, use_gpu=use_gpu, force_gpu=force_gpu) as sess:
                yield sess
        else:
            with self.session(graph, config, use_gpu, force_gpu) as sess:
                yield sess

    def evaluate(self, tensors: Any) -> Any:
        """The values of (a nested structure of) tensors, run in the default session, else in
        the cached one."""
        sess = get_default_session()
        if sess is not None:
            return sess.run(tensors)
        with self.test_session() as sess:
            return sess.run(tensors)

    def get_temp_dir(self) -> str:
        """A directory of this test's own (the same for every call in one test)."""
        if self._tempdir is None:
            self._tempdir = tempfile.mkdtemp(prefix="collflow_test_", dir=get_temp_dir())
        return self._tempdir

    def checkedThread(self, target: Callable, args: Any = None, kwargs: Any = None) -> _CheckedThread:
        """A thread whose errors fail the test at join(); every one must be joined by tearDown."""
        t = _CheckedThread(self, target, args, kwargs)
        self._threads.append(t)
        return t

    # --- values ---------------------------------------------------------------------------
    def _GetNdArray(self, a: Any) -> np.ndarray:
        if _is_tensorish(a):
            a = self.evaluate(a)
        return a if isinstance(a, np.ndarray) else np.array(a)

    def _evaluate_if_tensors(self, a: Any, b: Any) -> tuple:
        if _has_tensor(a) or _has_tensor(b):
            return self.evaluate(a) if _has_tensor(a) else a, self.evaluate(b) if _has_tensor(b) else b
        return a, b

    def _assert_array_close(self, a: Any, b: Any, rtol: float, atol: float, msg: Optional[str]) -> None:
        a, b = self._GetNdArray(a), self._GetNdArray(b)
        self.assertEqual(a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}. {msg or ''}")
        if a.dtype == object or b.dtype == object:
            self.assertAllEqual(a, b, msg)
            return
        if a.dtype.kind == "b":
            a = a.astype(np.int8)
        if b.dtype.kind == "b":
            b = b.astype(np.int8)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=msg or "", equal_nan=True)

    def _assert_close_rec(self, a: Any, b: Any, rtol: float, atol: float, path: List[str],
                          msg: Optional[str]) -> None:
        where = "[" + "][".join(path) + "]" if path else ""
        if isinstance(a, dict) or isinstance(b, dict):
            if not (isinstance(a, dict) and isinstance(b, dict)):
                raise AssertionError(f"{where}: one is a dict, the other is not: {a!r} vs {b!r}. {msg or ''}")
            self.assertEqual(set(a), set(b), f"{where}: mismatched keys. {msg or ''}")
            for k in a:
                self._assert_close_rec(a[k], b[k], rtol, atol, path + [repr(k)], msg)
            return
        a_seq = isinstance(a, (list, tuple)) and not _is_numeric_list(a)
        b_seq = isinstance(b, (list, tuple)) and not _is_numeric_list(b)
        if a_seq or b_seq:
            a_list = list(a) if isinstance(a, (list, tuple)) else None
            b_list = list(b) if isinstance(b, (list, tuple)) else None
            if a_list is None or b_list is None or len(a_list) != len(b_list):
                raise AssertionError(f"{where}: structures differ: {a!r} vs {b!r}. {msg or ''}")
            for i, (x, y) in enumerate(zip(a_list, b_list)):
                self._assert_close_rec(x, y, rtol, atol, path + [str(i)], msg)
            return
        try:
            self._assert_array_close(a, b, rtol, atol, f"{msg or ''} {'at ' + where if where else ''}".strip())
        except (ValueError, TypeError) as e:
            raise AssertionError(f"{where}: cannot compare {a!r} and {b!r}: {e}") from e

    def assertAllClose(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,
                       msg: Optional[str] = None) -> None:
        """a and b (arrays, tensors, or nested dicts/lists/tuples/namedtuples of them) are
        elementwise close: |a - b| <= atol + rtol * |b|, NaN matching NaN."""
        a, b = self._evaluate_if_tensors(a, b)
        self._assert_close_rec(a, b, rtol, atol, [], msg)

    def assertNotAllClose(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,
                          msg: Optional[str] = None) -> None:
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)
        except AssertionError:
            return
        raise AssertionError(f"The two values are close at all elements. {msg or ''}")

    def assertAllCloseAccordingToType(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,
                                      float_rtol: float = 1e-6, float_atol: float = 1e-6,
                                      half_rtol: float = 1e-3, half_atol: float = 1e-3,
                                      bfloat16_rtol: float = 1e-2, bfloat16_atol: float = 1e-2,
                                      msg: Optional[str] = None) -> None:
        """assertAllClose with the tolerances raised to those of the lowest float precision seen."""
        a, b = self._evaluate_if_tensors(a, b)
        a, b = self._GetNdArray(a), self._GetNdArray(b)
        dts = (a.dtype, b.dtype)
        if np.float32 in dts or np.complex64 in dts:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.float16 in dts:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        if any(getattr(d, "name", "") == "bfloat16" for d in dts):
            rtol, atol = max(rtol, bfloat16_rtol), max(atol, bfloat16_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertAllEqual(self, a: Any, b: Any, msg: Optional[str] = None) -> None:
        """Same shape and equal elements (NaN equal to NaN)."""
        a, b = self._evaluate_if_tensors(a, b)
        a, b = self._GetNdArray(a), self._GetNdArray(b)
        if a.shape != b.shape:
            raise AssertionError(f"Shape mismatch: expected {a.shape}, got {b.shape} with contents {b}. {msg or ''}")
        same = np.asarray(a == b)
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if not np.all(same):
            diff = np.logical_not(same)
            raise AssertionError(f"Arrays differ at {np.argwhere(diff).tolist()[:10]}: not equal\nx: {a}\ny: {b}. "
                                 f"{msg or ''}")

    def assertNotAllEqual(self, a: Any, b: Any, msg: Optional[str] = None) -> None:
        try:
            self.assertAllEqual(a, b)
        except AssertionError:
            return
        raise AssertionError(f"The two values are equal at all elements. {msg or ''}")

    def _assert_all(self, a: Any, cond: Callable[[np.ndarray], np.ndarray], what: str) -> None:
        arr = self._GetNdArray(a)
        if not np.all(cond(arr)):
            raise AssertionError(f"{arr} is not all {what}")

    def assertAllGreater(self, a: Any, comparison_target: Any) -> None:
        self._assert_all(a, lambda x: x > comparison_target, f"> {comparison_target}")

    def assertAllGreaterEqual(self, a: Any, comparison_target: Any) -> None:
        self._assert_all(a, lambda x: x >= comparison_target, f">= {comparison_target}")

    def assertAllLess(self, a: Any, comparison_target: Any) -> None:
        self._assert_all(a, lambda x: x < comparison_target, f"< {comparison_target}")

    def assertAllLessEqual(self, a: Any, comparison_target: Any) -> None:
        self._assert_all(a, lambda x: x <= comparison_target, f"<= {comparison_target}")

    def assertAllInRange(self, target: Any, lower_bound: Any, upper_bound: Any, open_lower_bound: bool = False,
                         open_upper_bound: bool = False) -> None:
        """Every element in [lower_bound, upper_bound] (open ends as asked); numeric dtypes only."""
        arr = self._GetNdArray(target)
        if arr.dtype.kind not in "iuf":
            raise AssertionError(f"The value of {target} does not have an ordered numeric type, instead it has type "
                                 f"{arr.dtype}")
        lo = arr > lower_bound if open_lower_bound else arr >= lower_bound
        hi = arr < upper_bound if open_upper_bound else arr <= upper_bound
        bad = np.logical_not(np.logical_and(lo, hi))
        if np.any(bad):
            rng = f"{'(' if open_lower_bound else '['}{lower_bound}, {upper_bound}{')' if open_upper_bound else ']'}"
            raise AssertionError(f"{int(bad.sum())} of the {arr.size} element(s) are outside the range {rng}: "
                                 f"{arr[bad].tolist()[:10]}")

    def assertAllInSet(self, target: Any, expected_set: Any) -> None:
        arr = self._GetNdArray(target)
        diff = set(arr.ravel().tolist()) - set(expected_set)
        if diff:
            raise AssertionError(f"{sorted(diff, key=repr)} unexpected values not in {expected_set}")

    def assertNear(self, f1: float, f2: float, err: float, msg: Optional[str] = None) -> None:
        """|f1 - f2| <= err (or f1 == f2, for infinities)."""
        self.assertTrue(f1 == f2 or math.fabs(f1 - f2) <= err,
                        f"{f1:f} != {f2:f} +/- {err:f}{' (' + msg + ')' if msg else ''}")

    def assertArrayNear(self, farray1: Any, farray2: Any, err: float, msg: Optional[str] = None) -> None:
        """Two float lists of one length, each pair within err."""
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertNDArrayNear(self, ndarray1: Any, ndarray2: Any, err: float, msg: Optional[str] = None) -> None:
        """The L2 norm of the difference below err."""
        self.assertTrue(float(np.linalg.norm(np.asarray(ndarray1) - np.asarray(ndarray2))) < err, msg=msg)

    def assertShapeEqual(self, np_array: Any, tf_tensor: Any, msg: Optional[str] = None) -> None:
        """A NumPy array's shape equals a tensor's static shape (TF1's argument order)."""
        if not isinstance(np_array, (np.ndarray, np.generic)):
            raise TypeError(f"np_array must be a Numpy ndarray or Numpy scalar, got {type(np_array)}")
        if not isinstance(tf_tensor, _g.Tensor):
            raise TypeError(f"tf_tensor must be a Tensor, got {type(tf_tensor)}")
        self.assertAllEqual(np.shape(np_array), tf_tensor.shape.as_list(), msg=msg)

    def assertDeviceEqual(self, device1: Any, device2: Any, msg: Optional[str] = None) -> None:
        """Two device strings name the same device (after canonicalizing both)."""
        d1 = DeviceSpec.from_string(str(device1 or "")).to_string()
        d2 = DeviceSpec.from_string(str(device2 or "")).to_string()
        self.assertEqual(d1, d2, f"Devices {d1} and {d2} are not equal. {msg or ''}")

    def assertProtoEquals(self, expected_message_maybe_ascii: Any, message: Any, msg: Optional[str] = None) -> None:
        raise NotImplementedError("assertProtoEquals: collflow has no protocol buffer messages to compare")

    def assertProtoEqualsVersion(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("assertProtoEqualsVersion: collflow has no protocol buffer messages to compare")

    def assertStartsWith(self, actual: str, expected_start: str, msg: Optional[str] = None) -> None:
        if not actual.startswith(expected_start):
            self.fail(f"Did not start with {expected_start!r}: {actual!r}{' : ' + msg if msg else ''}")

    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type: Any, expected_err_re_or_predicate: Any) -> Iterator[None]:
        """The block raises `exception_type`, and the predicate holds for it (or the regular
        expression is found in its message, the failing op's name appended as TF does)."""
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            def predicate(e: BaseException) -> Any:
                text = getattr(e, "message", None) if isinstance(e, _errors.OpError) else None
                text = str(e) if text is None else str(text)
                op = getattr(e, "op", None) if isinstance(e, _errors.OpError) else None
                if op is not None and getattr(op, "name", None):
                    text += "\nCaused by: " + op.name
                return re.search(expected_err_re_or_predicate, text)
        try:
            yield
        except Exception as e:  # noqa: BLE001  (checked below)
            if not isinstance(e, exception_type) or not predicate(e):
                raise AssertionError(f"Exception of type {type(e)}: {e}") from e
            return
        self.fail(exception_type.__name__ + " not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate: Any) -> Any:
        """assertRaisesWithPredicateMatch for TF's OpError (collflow's error classes)."""
        return self.assertRaisesWithPredicateMatch(_errors.OpError, expected_err_re_or_predicate)

    def assertDTypeEqual(self, target: Any, expected_dtype: Any) -> None:
        """The array's (or tensor's value's) dtype is expected_dtype (a DType or NumPy type)."""
        arr = self._GetNdArray(target)
        want = getattr(expected_dtype, "as_numpy_dtype", expected_dtype)
        if not isinstance(target, list):
            arrays = [arr]
        else:
            arrays = [self._GetNdArray(t) for t in target]
        for a in arrays:
            self.assertEqual(a.dtype, np.dtype(want))

    # absl's TestCase helpers that TF1 tests use through tf.test.TestCase
    def assertLen(self, container: Any, expected_len: int, msg: Optional[str] = None) -> None:
        if len(container) != expected_len:
            self.fail(f"{container!r} has length of {len(container)}, expected {expected_len}. {msg or ''}")

    def assertEmpty(self, container: Any, msg: Optional[str] = None) -> None:
        if len(container):
            self.fail(f"{container!r} has length of {len(container)}. {msg or ''}")

    def assertNotEmpty(self, container: Any, msg: Optional[str] = None) -> None:
        if not len(container):
            self.fail(f"{container!r} has length of 0. {msg or ''}")

    def assertBetween(self, value: Any, minv: Any, maxv: Any, msg: Optional[str] = None) -> None:
        if not minv <= value <= maxv:
            self.fail(f"{value!r} is not between {minv!r} and {maxv!r}. {msg or ''}")

    def assertSameElements(self, expected_seq: Any, actual_seq: Any, msg: Optional[str] = None) -> None:
        """The same set of elements, counts ignored."""
        self.assertEqual(set(expected_seq), set(actual_seq), msg)

    def assertContainsSubset(self, expected_subset: Any, actual_set: Any, msg: Optional[str] = None) -> None:
        missing = set(expected_subset) - set(actual_set)
        if missing:
            self.fail(f"Missing elements {sorted(missing, key=repr)}. {msg or ''}")

    def assertNoCommonElements(self, expected_seq: Any, actual_seq: Any, msg: Optional[str] = None) -> None:
        common = set(expected_seq) & set(actual_seq)
        if common:
            self.fail(f"Common elements {sorted(common, key=repr)}. {msg or ''}")

    def assertEndsWith(self, actual: str, expected_end: str, msg: Optional[str] = None) -> None:
        if not actual.endswith(expected_end):
            self.fail(f"Did not end with {expected_end!r}: {actual!r}{' : ' + msg if msg else ''}")

    assertItemsEqual = unittest.TestCase.assertCountEqual  # TF1's (Python 2) spelling
    assertRaisesRegexp = unittest.TestCase.assertRaisesRegex  # TF1's (Python 2) spelling


def _is_numeric_list(x: Any) -> bool:
    """A list/tuple of numbers (or nested such lists) compared as one array, not element by
    element (namedtuples stay structures)."""
    if hasattr(x, "_fields"):
        return False
    try:
        arr = np.asarray(x)
    except Exception:  # noqa: BLE001  (ragged or mixed: a structure)
        return False
    return arr.dtype != object or all(isinstance(v, (bytes, str)) for v in arr.ravel())


def get_temp_dir() -> str:
    """tf.test.get_temp_dir: a directory for the whole test run (made once)."""
    global _TEMP_DIR
    if _TEMP_DIR is None:
        _TEMP_DIR = tempfile.mkdtemp(prefix="collflow_tests_")
    return _TEMP_DIR


_TEMP_DIR: Optional[str] = os.environ.get("TEST_TMPDIR") or None
