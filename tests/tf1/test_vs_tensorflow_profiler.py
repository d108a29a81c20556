"""Differential tests against TensorFlow for tf.profiler's model analysis: the same MLP and
conv net built in both libraries give the same trainable-parameter counts (per variable and
per scope) and the same FLOPs (per op, per op type, in total; nothing for ops whose shapes
are not fully known).  Initializers are constants so that no initializer op adds FLOPs that
differ by construction."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()


def _convnet(tf, batch=8):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [batch, 28, 28, 3], name="x")
        z = tf.zeros_initializer()
        with tf.variable_scope("conv"):
            k = tf.get_variable("k", [3, 3, 3, 4], initializer=z)
            b = tf.get_variable("b", [4], initializer=z)
            h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k, [1, 1, 1, 1], "SAME"), b))
        with tf.variable_scope("conv2"):
            k2 = tf.get_variable("k", [5, 5, 4, 6], initializer=z)
            h = tf.nn.conv2d(h, k2, [1, 2, 2, 1], "VALID")
        h = tf.nn.avg_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = tf.reshape(h, [batch or -1, 6 * 6 * 6])
        with tf.variable_scope("fc"):
            w = tf.get_variable("w", [216, 10], initializer=z)
            bb = tf.get_variable("b", [10], initializer=z)
            y = tf.matmul(h, w) + bb
        tf.reduce_mean(tf.square(tf.nn.softmax(y)))
        tf.Variable(3.0, trainable=False, name="not_trainable")
    return g


def _mlp(tf, batch=16):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [batch, 20], name="x")
        h = x
        for i, n in enumerate([32, 16, 4]):
            with tf.variable_scope(f"layer{i}"):
                w = tf.get_variable("w", [h.shape[-1], n], initializer=tf.ones_initializer())
                b = tf.get_variable("b", [n], initializer=tf.zeros_initializer())
                h = tf.nn.relu(tf.nn.bias_add(tf.matmul(h, w), b))
        lbl = tf.placeholder(tf.float32, [batch, 4])
        d = tf.squared_difference(h, lbl)
        tf.reduce_sum(d, axis=1)
        tf.argmax(h, axis=1)
        tf.add_n([h, h, h])
        tf.nn.l2_loss(h)
        tf.matmul(h, h, transpose_a=True)
        tf.rsqrt(tf.abs(h) + 1.0)
    return g


def _params(tf, g):
    P = tf.profiler.ProfileOptionBuilder
    r = tf.profiler.profile(g, options=P(P.trainable_variables_parameter()).with_empty_output().build())

    def walk(n):
        return (n.name, n.parameters, n.total_parameters, [walk(c) for c in n.children])
    return walk(r)


def _flops(tf, g):
    P = tf.profiler.ProfileOptionBuilder
    r = tf.profiler.profile(g, options=P(P.float_operation()).with_empty_output().build())
    scope = [(c.name, c.float_ops, c.total_float_ops) for c in r.children]
    o = tf.profiler.profile(g, cmd="op", options=P(P.float_operation()).with_empty_output().build())
    chain, p = [], o
    while p.children:
        p = p.children[0]
        chain.append(({"AddV2": "Add"}.get(p.name, p.name), p.float_ops, p.total_float_ops))
    return r.total_float_ops, scope, o.total_float_ops, chain


@pytest.mark.parametrize("build", [_convnet, _mlp], ids=["convnet", "mlp"])
def test_parameters_and_flops_equal_tensorflow(build):
    assert _params(cft, build(cft)) == _params(tft, build(tft))
    assert _flops(cft, build(cft)) == _flops(tft, build(tft))


def test_unknown_batch_counts_no_flops_for_those_ops():
    for build in (_convnet, _mlp):
        assert _flops(cft, build(cft, None))[0] == _flops(tft, build(tft, None))[0]
        assert _params(cft, build(cft, None)) == _params(tft, build(tft, None))


def test_option_builder_dicts_equal_tensorflow():
    PT, PC = tft.profiler.ProfileOptionBuilder, cft.profiler.ProfileOptionBuilder
    assert PC.trainable_variables_parameter() == PT.trainable_variables_parameter()
    assert PC.float_operation() == PT.float_operation()
    assert PC.time_and_memory() == PT.time_and_memory()
    assert PC.time_and_memory(min_micros=5, min_bytes=2) == PT.time_and_memory(min_micros=5, min_bytes=2)
    assert PC().build() == PT().build()

    def chain(P):
        return (P(P.float_operation()).with_empty_output().with_max_depth(3).order_by("name")
                .select(["params", "float_ops"]).with_min_parameters(2).with_min_float_operations(5)
                .with_accounted_types(["MatMul"]).with_node_names(show_name_regexes=["fc.*"])
                .account_displayed_op_only(False).with_step(3).with_min_occurrence(1).build())
    assert chain(PC) == chain(PT)
    assert PC().with_file_output("/x").build()["output"] == PT().with_file_output("/x").build()["output"]
    assert PC().with_timeline_output("/t").build()["output"] == PT().with_timeline_output("/t").build()["output"]
