"""tf.contrib.framework's variable, checkpoint and tensor helpers (collflow/contrib/framework_more.py):
slim's fine-tuning idioms (assign_from_values, assign_from_checkpoint with partitioned
variables, filter_variables), smart_cond, with_shape, the checkpoint aliases and nest."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

F = tf.contrib.framework
pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def test_assign_from_values():
    a = tf.get_variable("net/a", [2, 2])
    tf.get_variable("net/ab", [3])
    op, feed = F.assign_from_values({"net/a": np.arange(4.0), "net/ab": [1.0, 2.0, 3.0]})
    fn = F.assign_from_values_fn({"net/a": np.ones((2, 2))})
    assert sorted(p.name for p in feed) == ["placeholder/net/a:0", "placeholder/net/ab:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(op, feed)
        np.testing.assert_array_equal(s.run(a), [[0, 1], [2, 3]])
        fn(s)
        np.testing.assert_array_equal(s.run(a), np.ones((2, 2)))
    with pytest.raises(ValueError, match="wasn't found"):
        F.assign_from_values({"nope": 1.0})


def test_assign_from_checkpoint(tmp_path):
    path = os.path.join(str(tmp_path), "model.ckpt")
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=np.arange(12.0, dtype=np.float32).reshape(6, 2))
        tf.get_variable("b", initializer=np.float32([1.0, 2.0]))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            tf.train.Saver().save(s, path)
    with tf.Graph().as_default():
        w = tf.get_variable("w", [6, 2])
        b2 = tf.get_variable("b2", [2])
        missing = tf.get_variable("missing", [1])
        op, feed = F.assign_from_checkpoint(path, [w, missing], ignore_missing_vars=True)
        op2, feed2 = F.assign_from_checkpoint(path, {"b": b2})
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(op, feed)
            s.run(op2, feed2)
            np.testing.assert_array_equal(s.run(w), np.arange(12.0).reshape(6, 2))
            np.testing.assert_array_equal(s.run(b2), [1.0, 2.0])
        with pytest.raises(ValueError, match="missing variable \\[missing\\]"):
            F.assign_from_checkpoint(path, [missing])
        with pytest.raises(ValueError, match="Total size of new array must be unchanged for b"):
            F.assign_from_checkpoint(path, {"b": tf.get_variable("b3", [3])})
    assert [n for n, _ in F.list_variables(path)] == ["b", "w"]
    np.testing.assert_array_equal(F.load_variable(path, "b"), [1.0, 2.0])


def test_filter_variables_and_full_names():
    vs = [tf.get_variable(n, [1]) for n in ("conv1/weights", "conv1/biases", "fc/weights", "logits/weights")]
    names = lambda xs: [v.op.name for v in xs]  # noqa: E731
    assert names(F.filter_variables(vs, include_patterns=["weights"])) == ["conv1/weights", "fc/weights",
                                                                             "logits/weights"]
    assert names(F.filter_variables(vs, include_patterns=["weights"], exclude_patterns=["^logits"])) == [
        "conv1/weights", "fc/weights"]
    assert names(F.filter_variables(vs, include_patterns=["weights"], reg_search=False)) == []
    assert F.get_variable_full_name(vs[0]) == "conv1/weights"
    g = F.global_variable(3.0, name="gv")
    assert g in tf.global_variables() and g not in tf.trainable_variables()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(F.zero_initializer(g))
        assert s.run(g) == 0.0


def test_smart_cond_with_shape_and_small_helpers():
    calls = []
    x = tf.placeholder(tf.float32, [None, 3])
    assert F.smart_cond(True, lambda: calls.append(1) or tf.constant(1), lambda: tf.constant(2)) is not None
    assert calls == [1]
    static = F.smart_cond(tf.constant(False), lambda: tf.constant(1), lambda: tf.constant(2))
    p = tf.placeholder(tf.bool, [])
    dyn = F.smart_cond(p, lambda: tf.constant(1), lambda: tf.constant(2))
    shaped = F.with_shape([4, 3], x)
    assert shaped.get_shape().as_list() == [4, 3]
    with pytest.raises(ValueError, match="Invalid shape"):
        F.with_shape([4, 2], tf.placeholder(tf.float32, [None, 3]))
    pred, lab = F.remove_squeezable_dimensions(tf.zeros([2, 1]), tf.zeros([2]))
    assert pred.get_shape().as_list() == [2]
    total = F.reduce_sum_n([tf.ones([2, 2]), tf.ones([3])])
    with tf.name_scope("outer"):
        with tf.name_scope("inner"):
            assert F.get_name_scope() == "outer/inner"
    assert F.get_name_scope() == ""
    with tf.Session() as s:
        assert s.run(static) == 2 and s.run(dyn, {p: True}) == 1 and s.run(total) == 7.0
    with pytest.raises(ValueError, match="Expected integer type"):
        F.assert_scalar_int(tf.constant(1.0))
    assert F.is_tensor(x) and not F.is_tensor(np.ones(2))
    assert F.nest.is_sequence((1, 2)) and F.nest.flatten([1, (2, 3)]) == [1, 2, 3]

    @F.deprecated("2017-01-01", "use g")
    def f():
        return 5
    with pytest.warns(DeprecationWarning, match="use g"):
        assert f() == 5
    gs = F.create_global_step()
    assert F.assert_or_get_global_step() is gs


def test_contrib_keras_util_and_missing_modules():
    assert tf.contrib.keras.layers.Dense is tf.keras.layers.Dense
    np.testing.assert_array_equal(tf.contrib.util.constant_value(tf.constant([1, 2])), [1, 2])
    proto = tf.contrib.util.make_tensor_proto(np.arange(3.0))
    np.testing.assert_array_equal(tf.contrib.util.make_ndarray(proto), [0.0, 1.0, 2.0])
    with pytest.raises(AttributeError, match="tf.contrib.quantize is not implemented"):
        tf.contrib.quantize  # noqa: B018


def test_contrib_stateless_and_framework_sort():
    seed = tf.constant([1, 2], tf.int64)
    pairs = [(tf.contrib.stateless.stateless_random_uniform([3], seed), tf.random.stateless_uniform([3], seed)),
             (tf.contrib.stateless.stateless_random_normal([3], seed), tf.random.stateless_normal([3], seed)),
             (tf.contrib.stateless.stateless_truncated_normal([3], seed),
              tf.random.stateless_truncated_normal([3], seed)),
             (tf.contrib.stateless.stateless_multinomial([[0.0, 1.0]], 4, seed),
              tf.random.stateless_multinomial([[0.0, 1.0]], 4, seed))]
    x = tf.constant([3, 1, 2])
    with tf.Session() as s:
        for a, b in pairs:
            np.testing.assert_array_equal(*s.run([a, b]))
        np.testing.assert_array_equal(s.run(tf.contrib.framework.sort(x, direction="DESCENDING")), [3, 2, 1])
        np.testing.assert_array_equal(s.run(tf.contrib.framework.argsort(x)), [1, 2, 0])
