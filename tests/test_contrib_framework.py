"""tf.contrib.framework's arg_scope and variable helpers, and tf.contrib.slim's layers: by
TF1's documented rules and, where TensorFlow and tf_slim are installed, against tf_slim
(TF1's contrib.slim, kept alive for TF2's compat.v1 graph mode)."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as cf

slim = cf.contrib.slim
arg_scope = cf.contrib.framework.arg_scope
add_arg_scope = cf.contrib.framework.add_arg_scope


@add_arg_scope
def _f(a, b=1, c=2):
    return a, b, c


def _g(a, b=1):
    return a, b


def test_arg_scope_rules():
    assert _f(0) == (0, 1, 2)
    with arg_scope([_f], b=10, c=20):
        assert _f(0) == (0, 10, 20)
        assert _f(0, c=5) == (0, 10, 5)                 # the call's arguments win
        with arg_scope([_f], c=30) as inner:           # nested: adds to / overrides the outer scope
            assert _f(0) == (0, 10, 30)
        assert _f(0) == (0, 10, 20)
    assert _f(0) == (0, 1, 2)
    with arg_scope(inner):                             # a saved scope re-entered
        assert _f(0) == (0, 10, 30)
    with pytest.raises(ValueError, match="not decorated with @add_arg_scope"):
        with arg_scope([_g], b=3):
            pass
    with pytest.raises(ValueError, match="kwargs must be empty"):
        with arg_scope(inner, b=3):
            pass
    with pytest.raises(TypeError, match="list/tuple or reused scope"):
        with arg_scope(_f, b=3):
            pass
    assert cf.contrib.framework.has_arg_scope(_f) and not cf.contrib.framework.has_arg_scope(_g)
    assert cf.contrib.framework.arg_scoped_arguments(_f) == ["a", "b", "c"]
    assert _f.__name__ == "_f"


@pytest.fixture(autouse=True)
def _fresh_graph():
    with cf.Graph().as_default():
        yield


def test_aliases_share_a_scope():
    x = cf.placeholder(cf.float32, [None, 6, 6, 2])
    with arg_scope([slim.conv2d], padding="VALID", activation_fn=None):
        y = slim.convolution2d(x, 3, [3, 3])
    assert y.shape.as_list() == [None, 4, 4, 3]


def _net(T, s, images):
    """A small slim network, weights from constant initializers so both libraries agree."""
    init = T.constant_initializer(0.05)
    with s.arg_scope([s.conv2d, s.fully_connected], weights_initializer=init,
                     weights_regularizer=s.l2_regularizer(0.01), biases_initializer=T.constant_initializer(0.1)):
        with s.arg_scope([s.conv2d], padding="SAME", activation_fn=T.nn.relu):
            net = s.repeat(images, 2, s.conv2d, 4, [3, 3], scope="conv1")
            net = s.max_pool2d(net, [2, 2], scope="pool1")
            net = s.stack(net, s.conv2d, [(6, [1, 1]), (5, [3, 3])], scope="conv2")
            up = s.conv2d_transpose(net, 3, [3, 3], stride=2, scope="up", weights_initializer=init)
            sep = s.separable_conv2d(up, 4, [3, 3], depth_multiplier=2, scope="sep", weights_initializer=init)
            net = s.flatten(sep)
            net = s.fully_connected(net, 7, scope="fc", activation_fn=None)
            net = s.bias_add(net, scope="extra_bias")
    return net


def test_slim_network_names_and_shapes():
    images = cf.constant(np.linspace(0, 1, 2 * 8 * 8 * 3, dtype=np.float32).reshape(2, 8, 8, 3))
    out = _net(cf, slim, images)
    names = [v.op.name for v in cf.global_variables()]
    assert names == ["conv1/conv1_1/weights", "conv1/conv1_1/biases", "conv1/conv1_2/weights", "conv1/conv1_2/biases",
                     "conv2/conv2_1/weights", "conv2/conv2_1/biases", "conv2/conv2_2/weights", "conv2/conv2_2/biases",
                     "up/weights", "up/biases", "sep/depthwise_weights", "sep/pointwise_weights", "sep/biases",
                     "fc/weights", "fc/biases", "extra_bias/biases"]
    assert [v.op.name for v in slim.get_model_variables()] == names
    assert out.shape.as_list() == [2, 7]
    assert len(cf.get_collection(cf.GraphKeys.REGULARIZATION_LOSSES)) == 5   # the conv2d and fc weights


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_slim_network_matches_tf_slim():
    tf_slim = pytest.importorskip("tf_slim", reason="tf_slim is not installed (TF1's contrib.slim for TF2)")
    from tf_peer import tensorflow_v1
    tf = tensorflow_v1()
    results = []
    for T, s in ((cf, slim), (tf, tf_slim)):
        with T.Graph().as_default():
            images = T.constant(np.linspace(0, 1, 2 * 8 * 8 * 3, dtype=np.float32).reshape(2, 8, 8, 3))
            out = _net(T, s, images)
            reg = T.add_n(T.get_collection(T.GraphKeys.REGULARIZATION_LOSSES))
            names = [(v.op.name, tuple(v.shape.as_list())) for v in T.global_variables()]
            restore = [v.op.name for v in s.get_variables_to_restore(exclude=["conv2", "fc"])]
            with T.Session() as sess:
                sess.run(T.global_variables_initializer())
                results.append((names, restore) + tuple(sess.run([out, reg])))
    assert results[0][0] == results[1][0] and results[0][1] == results[1][1]
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-4)
    np.testing.assert_allclose(results[0][3], results[1][3], rtol=1e-5)


def test_variable_helpers():
    with cf.variable_scope("a"):
        w = slim.model_variable("w", [2], initializer=cf.zeros_initializer())
        v = slim.variable("v", [3], initializer=cf.ones_initializer(), trainable=False)
    with cf.variable_scope("b"):
        w2 = slim.model_variable("w", [2])
    loc = slim.local_variable([1.0, 2.0], name="loc")
    assert slim.get_model_variables() == [w, w2]
    assert slim.get_variables("a") == [w, v] and slim.get_variables_by_name("w") == [w, w2]
    assert slim.get_variables(suffix="v") == [v] and slim.get_trainable_variables("a") == [w]
    assert slim.get_unique_variable("a/v") is v and slim.get_local_variables() == [loc]
    with pytest.raises(ValueError, match="Couldn't find variable a/zz"):
        slim.get_unique_variable("a/zz")
    assert slim.get_variables_to_restore(include=["a"], exclude=["a/v"]) == [w]
    assert slim.get_variables_to_restore(exclude=["b"]) == [w, v]
    with cf.variable_scope("c"), arg_scope([slim.model_variable], initializer=cf.constant_initializer(7.0)):
        c = slim.model_variable("c", [1])
    with cf.Session() as s:
        s.run(cf.global_variables_initializer())
        assert s.run(c)[0] == 7.0


def test_assign_from_checkpoint_fn(tmp_path):
    path = os.path.join(str(tmp_path), "model.ckpt")
    g = cf.Graph()
    with g.as_default():
        a = cf.Variable([1.0, 2.0], name="a")
        cf.Variable([3.0], name="b")
        saver = cf.train.Saver()
        with cf.Session() as s:
            s.run(cf.global_variables_initializer())
            saver.save(s, path)
    with cf.Graph().as_default():
        a2 = cf.Variable([0.0, 0.0], name="a")
        extra = cf.Variable([5.0], name="extra")      # not in the checkpoint
        with pytest.raises(Exception):
            fn = slim.assign_from_checkpoint_fn(path, [a2, extra])
            with cf.Session() as s:
                fn(s)
        fn = slim.assign_from_checkpoint_fn(path, [a2, extra], ignore_missing_vars=True)
        with cf.Session() as s:
            s.run(cf.global_variables_initializer())
            fn(s)
            np.testing.assert_array_equal(s.run(a2), [1.0, 2.0])
            assert s.run(extra)[0] == 5.0
    assert a is not None
