"""tf.RegisterGradient + Graph.gradient_override_map (a py_func's gradient, a straight-through
estimator), tf.NotDifferentiable / tf.no_gradient, tf.py_function / tf.numpy_function."""
import itertools

import numpy as np
import pytest

import collflow.compat.v1 as cf
from tf_peer import run_in_both

_names = itertools.count()


def _fresh(prefix):
    return f"{prefix}{next(_names)}"


def test_straight_through_round_and_py_func_gradient():
    ste, pyg = _fresh("STE"), _fresh("PyFuncGrad")
    cf.RegisterGradient(ste)(lambda op, grad: [grad])
    cf.RegisterGradient(pyg)(lambda op, grad: [grad * cf.cos(op.inputs[0])])
    with cf.Graph().as_default() as g:
        x = cf.constant(np.array([0.3, 1.7, -2.4], np.float32))
        with g.gradient_override_map({"Round": ste}):
            r = cf.round(x)
        with g.gradient_override_map({"PyFunc": pyg, "PyFuncStateless": pyg}):
            p = cf.py_func(np.sin, [x], cf.float32)
        plain = cf.round(x)                   # outside the block: Round's own gradient (none, as TF)
        grads = cf.gradients(cf.reduce_sum(r * 3.0) + cf.reduce_sum(p), x)[0]
        assert cf.gradients(cf.reduce_sum(plain), x)[0] is None
        with cf.Session() as s:
            gv = s.run(grads)
    np.testing.assert_allclose(gv, 3.0 + np.cos([0.3, 1.7, -2.4]), rtol=1e-6)


def test_registration_errors_and_not_differentiable():
    name = _fresh("G")
    cf.RegisterGradient(name)(lambda op, g: [g])
    with pytest.raises(KeyError, match="Registering two gradient"):
        cf.RegisterGradient(name)(lambda op, g: [g])
    with pytest.raises(KeyError, match="Registering two gradient with name 'MatMul'"):
        cf.RegisterGradient("MatMul")(lambda op, g: [g, g])
    with pytest.raises(TypeError):
        cf.RegisterGradient(3)
    none = _fresh("NoGrad")
    cf.NotDifferentiable(none)
    with cf.Graph().as_default() as g:
        x = cf.constant([1.0, 2.0])
        with g.gradient_override_map({"Square": none}):
            y = cf.square(x)
        with g.gradient_override_map({"Square": "NeverRegistered"}):
            z = cf.square(x)
        assert cf.gradients(cf.reduce_sum(y) + cf.reduce_sum(x), x)[0] is not None
        with pytest.raises(LookupError, match="No gradient defined for operation"):
            cf.gradients(cf.reduce_sum(z), x)
        with pytest.raises(TypeError):
            with g.gradient_override_map({"Square": 3}):
                pass


def test_py_function_and_numpy_function():
    with cf.Graph().as_default():
        x = cf.constant([1.0, 4.0])
        a = cf.py_function(lambda t: t.numpy() * 2, [x], cf.float32)
        b = cf.numpy_function(np.sqrt, [x], cf.float32)
        with cf.Session() as s:
            av, bv = s.run([a, b])
    np.testing.assert_array_equal(av, [2.0, 8.0])
    np.testing.assert_array_equal(bv, [1.0, 2.0])


def test_same_gradients_as_tensorflow():
    def program(T):
        x = T.constant(np.array([0.3, 1.7, -2.4], np.float32))
        g = T.get_default_graph()
        name = _fresh("Ste")
        T.RegisterGradient(name)(lambda op, grad: [grad * 2.0])
        with g.gradient_override_map({"Round": name}):
            r = T.round(x)
        return [r, T.gradients(T.reduce_sum(r * r), x)[0]]
    ours, theirs = run_in_both(program)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b)


def test_an_op_without_a_gradient_raises_tf1s_lookup_error():
    """tf.gradients through an op type with no registered gradient: TF1's LookupError."""
    import collflow as cf
    from collflow.graph.registry import register_op
    from collflow.graph.shape import TensorShape
    register_op("NoGradForTest", lambda op: [(op.inputs[0].dtype, TensorShape(op.inputs[0].shape))])
    with cf.Graph().as_default() as g:
        x = cf.constant([1.0, 2.0])
        y = g.create_op("NoGradForTest", [x], {}, name="nograd").outputs[0]
        with pytest.raises(LookupError, match=r"No gradient defined for operation 'nograd' \(op type: NoGradForTest\)"):
            cf.gradients(cf.reduce_sum(y), x)
