"""tf.profiler by hand (no TensorFlow): parameter counts of trainable variables, FLOPs by
TensorFlow's per-op statistics in closed form (MatMul 2*M*N*K, Conv2D 2*kh*kw*cin per output
element, elementwise ops one per element), the scope and op views, options, output and the
Profiler class."""
import json
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf

P = tf.profiler.ProfileOptionBuilder


def _quiet(opts):
    return P(opts).with_empty_output().build()


def _model(batch=4):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [batch, 6, 6, 2], name="x")
        with tf.variable_scope("conv"):
            k = tf.get_variable("k", [3, 3, 2, 5])
            h = tf.nn.conv2d(x, k, [1, 1, 1, 1], "SAME")                 # 4*6*6*5 outputs
        h = tf.reshape(h, [batch, 180])
        with tf.variable_scope("fc"):
            w = tf.get_variable("w", [180, 7])
            b = tf.get_variable("b", [7])
            y = tf.nn.bias_add(tf.matmul(h, w), b)
        tf.nn.softmax(y, name="probs")
        tf.Variable(np.zeros((100,), np.float32), trainable=False, name="counter")
    return g


def test_parameters():
    r = tf.profiler.profile(_model(), options=_quiet(P.trainable_variables_parameter()))
    assert r.name == "_TFProfRoot" and r.total_parameters == 3 * 3 * 2 * 5 + 180 * 7 + 7
    by = {c.name: c for c in r.children}
    assert set(by) == {"conv", "fc"} and by["conv"].parameters == 0 and by["conv"].total_parameters == 90
    assert [(c.name, c.parameters) for c in by["fc"].children] == [("fc/b", 7), ("fc/w", 1260)]


def test_flops_closed_form():
    g = _model()
    r = tf.profiler.profile(g, options=_quiet(P.float_operation()))
    conv = 4 * 6 * 6 * 5 * (3 * 3 * 2) * 2
    matmul = 2 * 4 * 7 * 180
    bias = 4 * 7
    softmax = 5 * 4 * 7
    assert r.total_float_ops == conv + matmul + bias + softmax
    by = {c.name: c.float_ops for c in r.children}
    assert by == {"conv/Conv2D": conv, "fc/MatMul": matmul, "fc/BiasAdd": bias, "probs": softmax}
    # ordered by FLOPs, largest first
    assert [c.name for c in r.children] == ["conv/Conv2D", "fc/MatMul", "probs", "fc/BiasAdd"]
    op = tf.profiler.profile(g, cmd="op", options=_quiet(P.float_operation()))
    assert op.total_float_ops == r.total_float_ops and op.children[0].name == "Conv2D"
    assert op.children[0].total_float_ops == r.total_float_ops
    assert op.children[0].children[0].name == "MatMul" and op.children[0].children[0].float_ops == matmul


def test_per_element_ops_and_unknown_shapes():
    with tf.Graph().as_default() as g:
        a = tf.placeholder(tf.float32, [3, 4])
        u = tf.placeholder(tf.float32, [None, 4])
        tf.add(a, a, name="add")                                   # 12
        tf.reduce_mean(a, axis=0, name="mean")                     # 12 + 4 * 0
        tf.reduce_sum(a, name="sum")                               # 12 - 1
        tf.squared_difference(a, a, name="sqd")                    # 24
        tf.add_n([a, a, a], name="addn")                           # 24
        tf.nn.l2_loss(a, name="l2")                                # 35
        tf.rsqrt(a, name="rsqrt")                                  # 24
        tf.add(u, u, name="unknown")                               # shape not known: nothing
        tf.exp(a, name="exp")                                      # no statistics: nothing
    r = tf.profiler.profile(g, options=_quiet(P.float_operation()))
    by = {c.name: c.float_ops for c in r.children}
    assert by == {"add": 12, "mean": 12, "sum": 11, "sqd": 24, "addn": 24, "l2": 35, "rsqrt": 24}


def test_options_output_and_profiler(tmp_path, capsys):
    g = _model()
    tf.profiler.profile(g, options=P.trainable_variables_parameter())
    out = capsys.readouterr().out
    assert "_TFProfRoot" in out and "fc/w" in out and "params" in out
    tf.profiler.profile(g, options=_quiet(P.trainable_variables_parameter()))
    assert capsys.readouterr().out == ""
    path = str(tmp_path / "report.txt")
    tf.profiler.profile(g, options=P(P.float_operation()).with_file_output(path).build())
    with open(path) as f:
        assert "conv/Conv2D" in f.read()
    shallow = tf.profiler.profile(g, options=P(P.trainable_variables_parameter()).with_max_depth(1)
                                  .with_empty_output().build())
    assert shallow.total_parameters == 90 + 1267 and all(not c.children for c in shallow.children)
    only_fc = tf.profiler.profile(g, options=P(P.float_operation()).with_node_names(show_name_regexes=["fc/.*"])
                                  .with_empty_output().build())
    assert only_fc.total_float_ops == 2 * 4 * 7 * 180 + 28
    with pytest.raises(ValueError):
        tf.profiler.profile(g, cmd="nope", options=_quiet(P.float_operation()))
    prof = tf.profiler.Profiler(g)
    prof.add_step(1, None)
    assert prof.profile_name_scope(_quiet(P.trainable_variables_parameter())).total_parameters == 1357
    assert prof.profile_operations(_quiet(P.float_operation())).total_float_ops > 0
    assert prof.profile_graph(_quiet(P.float_operation())).total_float_ops > 0
    assert tf.profiler.advise(g).checkers == {} and prof.advise(None).checkers == {}
    tf.profiler.write_op_log(g, str(tmp_path / "log"))
    with open(os.path.join(str(tmp_path / "log"), "tfprof_log")) as f:
        entries = {e["name"]: e for e in json.load(f)["log_entries"]}
    assert entries["fc/w"]["parameters"] == 1260 and entries["conv/Conv2D"]["float_ops"] == 25920
    with g.as_default():
        assert tf.profiler.profile(options=_quiet(P.trainable_variables_parameter())).total_parameters == 1357
