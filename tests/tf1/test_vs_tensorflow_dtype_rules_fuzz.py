"""Randomised differential checks against TensorFlow of TF1's dtype rules: a tensor of each
dtype beside Python int/float/bool/complex values, NumPy scalars and arrays and Python lists,
under every operator (both sides) and the tf.math functions.  Where TF builds a result,
collflow must give its dtype and value; where TF raises TypeError/ValueError when building,
collflow must raise the same kind.  Kept differences: collflow accepts bool Add/Mul/Maximum/
Minimum/RealDiv (docs/tf1_compat.md), and where TF's Python layer fails oddly
(AttributeError/NotImplementedError, e.g. `x | 0.5`) any build error is accepted.  List inputs
(stack, concat, add_n, convert_to_tensor of a list, where, tuple) mixing tensors, NumPy arrays
and Python lists are checked likewise, keeping the differences in docs/tf1_compat.md: a Python
or NumPy first argument of `where` takes the tensor's dtype, bool `add_n`, and lists holding
NumPy arrays (TF's convert_to_tensor refuses them: "Expected values ... to be a dense tensor")."""
import os
import warnings

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow.compat.v1")
import collflow.compat.v1 as cf  # noqa: E402

from dtype_rules_fuzz import (make_case, run_case, describe, make_list_case, run_list_case,  # noqa: E402
                             describe_list)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf.disable_eager_execution()
pytestmark = pytest.mark.timeout(600)

_BOOL_OK = {"+", "*", "/", "add", "multiply", "truediv", "maximum", "minimum"}


def _kept_difference(case, a, b):
    if a[0] == "build" and a[1] in ("AttributeError", "NotImplementedError") and b[0] == "build":
        return True
    if a[0] == "run" and b[0] in ("build", "run"):
        return True  # both refuse; collflow sooner
    if case["dt"] == "bool" and case["name"] in _BOOL_OK and b[0] == "ok":
        return True
    if case["dt"] == "bool" and case["name"] == "*" and a[0] == "ok" and b[0] == "build":
        return True  # TF's bool * float quirk
    return False


@pytest.mark.parametrize("seed", range(4))
def test_operands_and_operators(seed):
    rng = np.random.default_rng(1000 + seed)
    bad = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TF's own NumPy warnings
        for _ in range(400):
            case = make_case(rng)
            a, b = run_case(tf, case), run_case(cf, case)
            if _kept_difference(case, a, b):
                continue
            if a[0] == "ok":
                if b[0] != "ok" or a[1] != b[1]:
                    bad.append(f"{describe(case)}: TF {a[:2]}, collflow {b[:2]}")
                    continue
                va, vb = np.asarray(a[2]), np.asarray(b[2])
                if va.dtype.kind in "fc":
                    ok = np.allclose(va, vb, rtol=1e-2, atol=1e-2, equal_nan=True)
                else:
                    ok = np.array_equal(va, vb)
                if not ok:
                    bad.append(f"{describe(case)}: TF {va!r}, collflow {vb!r}")
            elif a[0] == "build" and a[:2] != b[:2]:
                bad.append(f"{describe(case)}: TF {a[:2]}, collflow {b[:2]}")
    assert not bad, "\n".join(bad[:20])


CONVERSIONS = [
    lambda t: t.constant(300, t.uint8), lambda t: t.constant(-1, t.uint8), lambda t: t.constant(1.5, t.int32),
    lambda t: t.constant(2.0, t.int32), lambda t: t.constant(2 ** 40, t.int32),
    lambda t: t.constant(np.array([1.5, -2.5]), t.int32), lambda t: t.constant(np.int64(2 ** 40), t.int32),
    lambda t: t.constant(True, t.int32), lambda t: t.constant(1, t.bool), lambda t: t.constant([1, 0], t.bool),
    lambda t: t.constant(1j, t.float32), lambda t: t.constant("a", t.int32), lambda t: t.constant(1, t.string),
    lambda t: t.constant([1, 2.5], t.int32), lambda t: t.constant([np.float32(1.5)], t.int32),
    lambda t: t.constant(2 ** 63), lambda t: t.constant(2 ** 64), lambda t: t.constant([1, "a"]),
    lambda t: t.constant(np.array([1, 2]), t.string), lambda t: t.constant(3, t.complex64),
    lambda t: t.convert_to_tensor(t.constant([1.0]), t.int32),
    lambda t: t.stack([t.constant([1, 2], t.int64), [3, 4]]), lambda t: t.stack([[3, 4], t.constant([1, 2], t.int64)]),
    lambda t: t.stack([t.constant([1, 2], t.int64), [3.5, 4]]),
    lambda t: t.concat([t.constant([1, 2], t.int64), [3, 4]], 0),
    lambda t: t.concat([t.constant([1.0]), t.constant([1.0], t.float64)], 0),
    lambda t: t.add_n([t.constant([1, 2], t.int64), [3, 4]]),
    lambda t: t.add_n([t.constant([1, 2], t.int64), np.array([3, 4])]),
    lambda t: t.convert_to_tensor([t.constant(1, t.int64), 2]),
    lambda t: t.convert_to_tensor([t.constant(1, t.int64), 2.5]),
    lambda t: t.tuple([t.constant([1, 2], t.int64), 2])[1],
    lambda t: t.fill([2], t.constant(3, t.int64)), lambda t: t.fill(t.constant([2], t.int64), 2.5),
    lambda t: t.range(1, 5.5), lambda t: t.range(1, t.constant(4, t.int64)), lambda t: t.range(1.5, 5, dtype=t.int32),
    lambda t: t.zeros(t.constant([2, 3], t.int64), t.int32),
    lambda t: t.cast(t.constant([1 + 2j]), t.float32), lambda t: t.cast(t.constant([True]), t.complex64),
    lambda t: t.constant([5, 6], t.int64) & 3, lambda t: 3 | t.constant([5, 6], t.int64),
    lambda t: t.constant([5, 6], t.int32) ^ t.constant([3, 3]), lambda t: ~t.constant([5, 6], t.uint8),
    lambda t: t.constant([True, False]) ^ True, lambda t: t.constant([True]) | 1,
    lambda t: t.math.logical_and(t.constant([True]), 1),
    lambda t: t.constant([7, 8], t.int16) / 2, lambda t: t.constant([7, 8], t.int64) / 3.0,
    lambda t: t.constant([7.5, -8.5]) // 2, lambda t: t.constant([7, 8], t.uint8) ** 2,
    lambda t: t.constant([1 + 1j]) < 1, lambda t: t.constant(["a"]) * 2, lambda t: t.constant(["a"]) + "b",
]


def _conv(mod, i):
    g = mod.Graph()
    with g.as_default():
        try:
            out = CONVERSIONS[i](mod)
        except (TypeError, ValueError) as e:
            return "build", "TypeError" if isinstance(e, TypeError) else "ValueError"
        with mod.Session(graph=g) as s:
            return "ok", out.dtype.name, s.run(out)


@pytest.mark.parametrize("i", range(len(CONVERSIONS)))
def test_conversions(i):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = _conv(tf, i), _conv(cf, i)
    assert a[:2] == b[:2], (i, a, b)
    if a[0] == "ok":
        want = np.asarray(a[2])  # strings: bytes in both, as TF fetches them
        np.testing.assert_array_equal(np.asarray(b[2]), want)


def _kept_list_difference(case, a, b):
    if b[0] != "ok" or a[0] != "build":
        return False
    holds_array = any(isinstance(it, np.ndarray) for it in case["items"])
    return ((case["op"] in ("convert", "stack") and holds_array) or case["op"] == "where"
            or (case["op"] == "add_n" and b[1] == "bool"))


@pytest.mark.parametrize("seed", range(3))
def test_list_inputs(seed):
    rng = np.random.default_rng(2000 + seed)
    bad = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(200):
            case = make_list_case(rng)
            a, b = run_list_case(tf, case), run_list_case(cf, case)
            if _kept_list_difference(case, a, b) or a[0] == "run":
                continue
            if a[:2] != b[:2]:
                bad.append(f"{describe_list(case)}: TF {a[:2]}, collflow {b[:2]}")
            elif a[0] == "ok":
                va, vb = np.asarray(a[2]), np.asarray(b[2])
                if not (va.shape == vb.shape and np.array_equal(va, vb)):
                    bad.append(f"{describe_list(case)}: TF {va!r}, collflow {vb!r}")
    assert not bad, "\n".join(bad[:20])
