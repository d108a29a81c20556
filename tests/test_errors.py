"""Errors a user can act on: every one is a collflow error whose message names the op or
placeholder, what was expected, what was given, and where the op was created (this file)."""
import sys

import numpy as np
import pytest

import collflow as cf
from collflow.graph.ops.op_util import single, same_shape_fn
from collflow.graph.registry import register_op, not_differentiable
from collflow.kernels.registry import register_kernel

register_op("TestErr_GpuOnly", same_shape_fn)
not_differentiable("TestErr_GpuOnly")
register_kernel("TestErr_GpuOnly", device="GPU")(lambda op, ctx: (lambda x: x))


def line():
    """The line number of the caller (put it on the line that creates the op)."""
    return sys._getframe(1).f_lineno


def site(lineno):
    return f"{__file__}:{lineno}"


def assert_message(err, *parts):
    msg = str(err)
    for p in parts:
        assert p in msg, f"{p!r} not in the message:\n{msg}"


def test_every_error_type_is_a_collflow_error():
    for name in cf.errors.__all__:
        assert issubclass(getattr(cf.errors, name), cf.errors.CollflowError)
    # and the Python base a caller would naturally catch
    assert issubclass(cf.errors.InvalidArgumentError, ValueError)
    assert issubclass(cf.errors.NotFoundError, KeyError)
    assert issubclass(cf.errors.DeadlineExceededError, TimeoutError)
    assert str(cf.errors.NotFoundError("no such thing")) == "no such thing"


def test_unfed_placeholder():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="images"); at = line()  # noqa: E702
        y = cf.reduce_sum(x)
    with cf.Session(graph=g) as s, pytest.raises(cf.errors.InvalidArgumentError) as ei:
        s.run(y)
    assert_message(ei.value, "You must feed a value for placeholder 'images'", "float32", "(?, 3)", site(at))
    assert ei.value.op is x.op


def test_wrong_feed_shape():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="images"); at = line()  # noqa: E702
    # TF1 raises a plain ValueError here (checked in Session.run before anything runs)
    with cf.Session(graph=g) as s, pytest.raises(ValueError) as ei:
        s.run(x, {x: np.zeros((2, 4), np.float32)})
    assert_message(ei.value, "Tensor images:0", "shape (2, 4)", "has shape (None, 3)", site(at))


def test_wrong_feed_rank_and_fed_intermediate():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (3,), name="x")
        y = cf.exp(x, name="activation"); at = line()  # noqa: E702
    with cf.Session(graph=g) as s:
        with pytest.raises(ValueError) as ei:  # TF1's type, as for a placeholder
            s.run(y, {x: np.zeros((), np.float32)})
        assert_message(ei.value, "shape ()", "(3,)")
        with pytest.raises(ValueError) as ei:
            s.run(y, {y: np.zeros(4, np.float32)})
        assert_message(ei.value, "Tensor activation:0", "shape (4,)", "(3,)", site(at))


def test_wrong_feed_dtype():
    g = cf.Graph()
    with g.as_default():
        labels = cf.placeholder(cf.int32, (None,), name="labels"); at = line()  # noqa: E702
    with cf.Session(graph=g) as s:
        # TF1 converts every feed with np.asarray(value, dtype): floats fed to an integer
        # placeholder are truncated, not refused (tests/test_session_tf1_rules.py has the rest)
        got = s.run(labels, {labels: np.array([0.5, 1.5])})
        assert got.dtype == np.int32 and got.tolist() == [0, 1]
        assert s.run(labels, {labels: [0.5, 1.5]}).tolist() == [0, 1]  # from a Python list, too
        assert s.run(labels, {labels: np.array([1, 2], np.int16)}).dtype == np.int32
        # what cannot be converted is NumPy's error (TF1's too)
        with pytest.raises(ValueError, match="invalid literal"):
            s.run(labels, {labels: ["a", "b"]})
    assert at


def test_fetch_from_another_graph():
    g1, g2 = cf.Graph(), cf.Graph()
    with g1.as_default():
        stray = cf.placeholder(cf.float32, (), name="stray"); at = line()  # noqa: E702
    with g2.as_default():
        cf.placeholder(cf.float32, (), name="mine")
    with cf.Session(graph=g2) as s, pytest.raises(ValueError) as ei:  # TF1's type
        s.run(stray)
    assert_message(ei.value, "stray:0", "not an element of this graph", site(at))


def test_feed_key_from_another_graph():
    g1, g2 = cf.Graph(), cf.Graph()
    with g1.as_default():
        stray = cf.placeholder(cf.float32, (), name="stray")
    with g2.as_default():
        mine = cf.placeholder(cf.float32, (), name="mine")
    with cf.Session(graph=g2) as s, pytest.raises(TypeError, match="stray:0"):
        s.run(mine, {stray: 1.0, mine: 2.0})


def test_missing_kernel_for_the_device():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2,), name="x")
        y = single("TestErr_GpuOnly", [x], name="gpu_only"); at = line()  # noqa: E702
    with cf.Session(graph=g, config={"device": "/cpu:0"}) as s:
        with pytest.raises(cf.errors.UnimplementedError) as ei:
            s.run(y, {x: [1, 2]})
    assert_message(ei.value, "no kernel for op type TestErr_GpuOnly on device CPU", "registered for: GPU",
                   "'gpu_only'", site(at))


def test_op_pinned_to_an_absent_device():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2,), name="x")
        with cf.device("/gpu:7"):
            y = cf.negative(x, name="on_gpu7"); at = line()  # noqa: E702
    with cf.Session(graph=g) as s, pytest.raises(cf.errors.InvalidArgumentError) as ei:
        s.run(y, {x: [1, 2]})
    assert_message(ei.value, "'on_gpu7'", "pinned to /gpu:7", "available: /cpu:0", "allow_soft_placement",
                   site(at))
    with cf.Session(graph=g, config={"allow_soft_placement": True}) as s:
        np.testing.assert_array_equal(s.run(y, {x: [1, 2]}), [-1, -2])


def test_session_on_an_absent_device():
    with pytest.raises(cf.errors.InvalidArgumentError, match="device /gpu:7 is not available"):
        cf.Session(graph=cf.Graph(), config={"device": "/gpu:7"})


def test_uninitialized_variable():
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.zeros(3, np.float32), name="weights"); at = line()  # noqa: E702
        y = w * np.float32(2)
    with cf.Session(graph=g) as s, pytest.raises(cf.errors.FailedPreconditionError) as ei:
        s.run(y)
    assert_message(ei.value, "uninitialized variable 'weights'", "global_variables_initializer", site(at))


def test_kernel_failing_at_run_time():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, (None, None), name="a")
        b = cf.placeholder(cf.float32, (None, None), name="b")
        c = cf.matmul(a, b, name="logits"); at = line()  # noqa: E702
    with cf.Session(graph=g) as s, pytest.raises(cf.errors.InvalidArgumentError) as ei:
        s.run(c, {a: np.zeros((2, 3), np.float32), b: np.zeros((4, 5), np.float32)})
    assert_message(ei.value, "MatMul op 'logits' failed", "(2, 3) float32", "(4, 5) float32", site(at))
    assert ei.value.op is c.op


def test_static_shape_error_at_construction():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, (2, 3), name="a")
        b = cf.placeholder(cf.float32, (4, 5), name="b")
        with pytest.raises(cf.errors.InvalidArgumentError) as ei:
            at = line() + 1
            cf.matmul(a, b, name="bad")
    assert_message(ei.value, "MatMul op 'bad'", "3", "4", site(at))


def test_binary_op_dtype_mismatch_at_construction():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, (2,), name="a")
        i = cf.placeholder(cf.int32, (2,), name="i")
        with pytest.raises(cf.errors.InvalidArgumentError) as ei:
            at = line() + 1
            cf.add(a, i, name="mixed")
    assert_message(ei.value, "'mixed'", "float32", "int32", site(at))


def test_assign_of_the_wrong_shape():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.zeros(3, np.float32), name="v")
        p = cf.placeholder(cf.float32, None, name="p")
        a = v.assign(p); at = line()  # noqa: E702
        with pytest.raises(cf.errors.InvalidArgumentError, match=r"shape \(4,\) to variable 'v'"):
            v.assign(np.zeros(4, np.float32))
    with cf.Session(graph=g) as s, pytest.raises(cf.errors.InvalidArgumentError) as ei:
        s.run(a, {p: np.zeros(5, np.float32)})
    assert_message(ei.value, "shape (5,)", "variable 'v'", "(3,)", site(at))


def test_tf1_error_codes_classes_and_lookups():
    import collflow.compat.v1 as tf
    assert tf.errors.OpError is tf.errors.InvalidArgumentError.__mro__[1] or issubclass(
        tf.errors.InvalidArgumentError, tf.errors.OpError)
    table = {"CANCELLED": (1, "CancelledError"), "UNKNOWN": (2, "UnknownError"),
             "INVALID_ARGUMENT": (3, "InvalidArgumentError"), "DEADLINE_EXCEEDED": (4, "DeadlineExceededError"),
             "NOT_FOUND": (5, "NotFoundError"), "ALREADY_EXISTS": (6, "AlreadyExistsError"),
             "PERMISSION_DENIED": (7, "PermissionDeniedError"), "RESOURCE_EXHAUSTED": (8, "ResourceExhaustedError"),
             "FAILED_PRECONDITION": (9, "FailedPreconditionError"), "ABORTED": (10, "AbortedError"),
             "OUT_OF_RANGE": (11, "OutOfRangeError"), "UNIMPLEMENTED": (12, "UnimplementedError"),
             "INTERNAL": (13, "InternalError"), "UNAVAILABLE": (14, "UnavailableError"),
             "DATA_LOSS": (15, "DataLossError"), "UNAUTHENTICATED": (16, "UnauthenticatedError")}
    assert tf.errors.OK == 0
    for const, (code, cls_name) in table.items():
        cls = getattr(tf.errors, cls_name)
        assert getattr(tf.errors, const) == code == cls.error_code == tf.errors.error_code_from_exception_type(cls)
        assert tf.errors.exception_type_from_error_code(code) is cls
        e = cls("boom")
        assert isinstance(e, tf.errors.OpError) and e.error_code == code and e.message == "boom" and e.node_def is None
    # collflow's refinements keep their family's code
    assert tf.errors.PeerFailedError("x").error_code == tf.errors.ABORTED
    assert tf.errors.error_code_from_exception_type(tf.errors.UnsafeCheckpointError) == tf.errors.DATA_LOSS
