"""TensorFlow 1.x's behaviour of single ops and their gradients, one test per rule; each rule was
found different by a differential run against TensorFlow's compat.v1 graph mode and is stated
here in closed form (no TensorFlow needed)."""
import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as tf


@pytest.fixture
def graph():
    g = cf.Graph()
    with g.as_default():
        yield g


def _run(fetches, feed=None):
    with cf.Session(graph=cf.get_default_graph()) as s:
        s.run(cf.global_variables_initializer())
        return s.run(fetches, feed)


# -- true division of integers --------------------------------------------------------------------

def test_integer_true_division_casts_to_float_first(graph):
    a, b = tf.constant([7, -7]), tf.constant([2, 2])
    small = tf.constant(np.array([7, -7], np.int16))
    outs = _run([a / b, tf.divide(a, b), tf.truediv(a, 2), 7 / b, small / small])
    for v, want in zip(outs[:4], ([3.5, -3.5], [3.5, -3.5], [3.5, -3.5], [3.5, 3.5])):
        assert v.dtype == np.float64                       # int32 / int32 -> float64
        np.testing.assert_array_equal(v, want)
    assert outs[4].dtype == np.float32                     # int8/int16/uint8 -> float32
    with pytest.raises(TypeError, match="same dtype"):
        tf.truediv(tf.constant([1]), tf.constant([1], tf.int64))


def test_operator_ops_are_named_by_the_operator(graph):
    x, y = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    names = [t.op.name for t in (x + y, x - y, x * y, x / y, x // y, x % y, x ** y, x + y, 2.0 % x)]
    assert names == ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "add_1", "mod_1"]
    # tf.add keeps the op type as its name; uniquifying ignores case, as TF1 does
    assert tf.add(x, y).op.name == "Add_2" and tf.multiply(x, y).op.name == "Mul_1"
    assert graph.get_tensor_by_name("add:0") is not None
    np.testing.assert_allclose(_run(2.0 % x), [0.0, 0.0])
