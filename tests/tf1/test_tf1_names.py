"""By hand (no TensorFlow): the TF1 names collflow gives the ops and variables a TF1 program
fetches by name.  Each rule is TF 1.x's (checked against TensorFlow by
tests/tf1/test_vs_tensorflow_names_fuzz.py where TensorFlow is installed)."""
import os
import tempfile

import numpy as np
import pytest

import collflow.compat.v1 as tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def test_graph_keys_has_tf1s_train_op_and_other_keys():
    # TF1's GraphKeys: the string values programs and tf.train helpers store under
    assert tf.GraphKeys.TRAIN_OP == "train_op"
    assert tf.GraphKeys.SUMMARY_OP == "summary_op"
    assert tf.GraphKeys.SAVERS == "savers"
    assert tf.GraphKeys.EVAL_STEP == "eval_step"
    assert tf.GraphKeys.READY_FOR_LOCAL_INIT_OP == "ready_for_local_init_op"
    assert tf.GraphKeys.TRAINABLE_RESOURCE_VARIABLES == "trainable_resource_variables"


def _model():
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    y = tf.layers.dense(x, 2, name="fc")
    return tf.reduce_sum(y * y)


@pytest.mark.parametrize("make", [lambda: tf.train.AdamOptimizer(0.1), lambda: tf.train.GradientDescentOptimizer(0.1),
                                  lambda: tf.train.MomentumOptimizer(0.1, 0.9)])
def test_train_op_takes_the_optimizer_scope_name(graph, make):
    # TF1: apply_gradients returns the op named by its name scope itself: "Adam" (the group of
    # the updates), or with a global_step the increment "Adam" that runs after them
    loss = _model()
    opt = make()
    op = opt.minimize(loss)
    assert op.name == opt.get_name()
    gs = tf.train.get_or_create_global_step()
    op2 = make().minimize(loss, global_step=gs, name="train")
    assert op2.name == "train"
    assert [o.name for o in tf.get_collection(tf.GraphKeys.TRAIN_OP)] == [opt.get_name(), "train"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(op2, {"x:0": np.ones([2, 3], np.float32)})
        assert s.run(gs) == 1  # the op named "train" is still the global-step increment


def test_single_loss_total_loss_is_named_total_loss(graph):
    # TF1's add_n of one tensor with a name is an Identity of that name
    x = tf.constant([1.0, 2.0])
    tf.losses.absolute_difference(tf.zeros([2]), x)
    total = tf.losses.get_total_loss()
    assert total.name == "total_loss:0"
    assert tf.add_n([x], name="s").name == "s:0"
    assert tf.add_n([x]) is x
    with tf.Session() as s:
        assert s.run(total) == pytest.approx(1.5)


def test_contrib_regularizer_output_takes_its_scope_name(graph):
    # TF1 contrib: scale * l2_loss(w) named by its scope: "<var>/Regularizer/l2_regularizer:0"
    w = tf.get_variable("w", [2], initializer=tf.constant_initializer([3.0, 4.0]),
                        regularizer=tf.contrib.layers.l2_regularizer(0.1))
    l1 = tf.contrib.layers.l1_regularizer(0.5)(w)
    both = tf.contrib.layers.sum_regularizer([tf.contrib.layers.l2_regularizer(0.1),
                                              tf.contrib.layers.l1_regularizer(0.5)])(w)
    reg = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [r.name for r in reg] == ["w/Regularizer/l2_regularizer:0"]
    assert l1.name == "l1_regularizer:0"
    assert both.name == "sum_regularizer:0"
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        # 0.1 * (9 + 16) / 2, 0.5 * (3 + 4)
        np.testing.assert_allclose(s.run([reg[0], l1, both]), [1.25, 3.5, 4.75], rtol=1e-6)


def test_gradient_scopes_keep_the_op_names_slashes(graph):
    # TF1: "gradients/<op name>_grad/...", the op's own scope kept (not flattened with '_')
    x = tf.placeholder(tf.float32, [2, 3])
    with tf.variable_scope("a"):
        y = tf.layers.dense(x, 3)
    loss = tf.reduce_sum(y * y)
    gx, gk, gb = tf.gradients(loss, [x] + tf.trainable_variables())
    assert gx.name == "gradients/a/dense/MatMul_grad/MatMul:0"
    assert gk.name == "gradients/a/dense/MatMul_grad/MatMul_1:0"
    assert gb.name == "gradients/a/dense/BiasAdd_grad/BiasAddGrad:0"
    # the second call's scope is gradients_1
    assert tf.gradients(loss, [x])[0].name == "gradients_1/a/dense/MatMul_grad/MatMul:0"


def test_mul_gradient_products_are_named_mul(graph):
    # TF1's _MulGrad: gen_math_ops.mul -> "Mul", "Mul_1" in the op's gradient scope
    a = tf.placeholder(tf.float32, [3])
    b = tf.placeholder(tf.float32, [3])
    ga, gb = tf.gradients(a * b, [a, b])
    assert ga.name == "gradients/mul_grad/Mul:0"
    assert gb.name == "gradients/mul_grad/Mul_1:0"
    with tf.Session() as s:
        va, vb = s.run([ga, gb], {a: [1.0, 2.0, 3.0], b: [4.0, 5.0, 6.0]})
    np.testing.assert_allclose(va, [4.0, 5.0, 6.0])
    np.testing.assert_allclose(vb, [1.0, 2.0, 3.0])


def test_compute_gradients_gates_each_op_with_a_tuple(graph):
    # TF1: GATE_OP (compute_gradients' default) gates an op's input gradients together with a
    # tf.tuple in its gradient scope; GATE_NONE does not; GATE_GRAPH one tuple at the end
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    y = tf.layers.dense(x, 2, name="fc")
    loss = tf.reduce_sum(y)
    opt = tf.train.GradientDescentOptimizer(0.1)
    names = [g.name for g, _ in opt.compute_gradients(loss)]
    assert names == ["gradients/fc/MatMul_grad/tuple/control_dependency_1:0",
                     "gradients/fc/BiasAdd_grad/tuple/control_dependency_1:0"]
    names = [g.name for g, _ in opt.compute_gradients(loss, gate_gradients=opt.GATE_NONE)]
    assert names == ["gradients_1/fc/MatMul_grad/MatMul_1:0", "gradients_1/fc/BiasAdd_grad/BiasAddGrad:0"]
    names = [g.name for g, _ in opt.compute_gradients(loss, gate_gradients=opt.GATE_GRAPH)]
    assert names == ["tuple/control_dependency:0", "tuple/control_dependency_1:0"]
    kernel_grad = opt.compute_gradients(loss)[0][0]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        xv = np.arange(6, dtype=np.float32).reshape(2, 3)
        # d sum(x @ k + b) / dk = x^T @ ones
        np.testing.assert_allclose(s.run(kernel_grad, {x: xv}), xv.T @ np.ones([2, 2], np.float32))


def test_tuple_names(graph):
    a, b = tf.constant(1.0), tf.constant(2.0)
    t = tf.tuple([a, b])
    assert [x.name for x in t] == ["tuple/control_dependency:0", "tuple/control_dependency_1:0"]
    assert tf.get_default_graph().get_operation_by_name("tuple/group_deps").type == "NoOp"


def test_moving_average_op_names(graph):
    # TF1: ema.apply is the group named by the EMA's scope ("ExponentialMovingAverage"); each
    # shadow's update is its "AssignMovingAvg" scope's name; tf.layers batch norm's updates
    # are "<layer>/AssignMovingAvg", "<layer>/AssignMovingAvg_1"
    w = tf.Variable([1.0, 2.0], name="w")
    ema = tf.train.ExponentialMovingAverage(0.5)
    op = ema.apply([w])
    assert op.name == "ExponentialMovingAverage"
    assert ema.average(w).name == "w/ExponentialMovingAverage:0"
    g = tf.get_default_graph()
    assert g.get_operation_by_name("ExponentialMovingAverage/AssignMovingAvg") is not None
    x = tf.placeholder(tf.float32, [4, 2])
    tf.layers.batch_normalization(x, training=True, name="bn")
    tf.layers.batch_normalization(x, training=False, name="bn2")  # no update ops
    assert [u.name for u in tf.get_collection(tf.GraphKeys.UPDATE_OPS)] == ["bn/AssignMovingAvg:0",
                                                                          "bn/AssignMovingAvg_1:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(w.assign([3.0, 6.0]))
        s.run(op)
        np.testing.assert_allclose(s.run(ema.average(w)), [2.0, 4.0])  # 0.5 * 1 + 0.5 * 3, ...


def test_unnamed_layer_with_reuse_shares_its_default_name(graph):
    # TF1: an unnamed tf.layers layer asked to reuse takes its base name itself, not a unique
    # one: the second AUTO_REUSE dense shares s/dense/kernel (its ops go under s/dense_2/)
    x = tf.placeholder(tf.float32, [2, 3])
    with tf.variable_scope("s"):
        tf.layers.dense(x, 3, reuse=tf.AUTO_REUSE)
        y1 = tf.layers.dense(x, 3)
        y2 = tf.layers.dense(x, 3, reuse=tf.AUTO_REUSE)
        y3 = tf.layers.dense(x, 3, reuse=True)
        tf.layers.batch_normalization(x, training=True, reuse=tf.AUTO_REUSE)
        tf.layers.batch_normalization(x, training=True, reuse=tf.AUTO_REUSE)
    assert [y1.name, y2.name, y3.name] == ["s/dense_1/BiasAdd:0", "s/dense_2/BiasAdd:0", "s/dense_3/BiasAdd:0"]
    assert [v.name for v in tf.global_variables()] == [
        "s/dense/kernel:0", "s/dense/bias:0", "s/dense_1/kernel:0", "s/dense_1/bias:0",
        "s/batch_normalization/gamma:0", "s/batch_normalization/beta:0",
        "s/batch_normalization/moving_mean:0", "s/batch_normalization/moving_variance:0"]


def test_reuse_inheritance_is_reuse_or_the_enclosing_scopes(graph):
    # TF1: a named sub-scope's reuse is `reuse or <enclosing reuse>`: AUTO_REUSE inside a
    # reuse=True scope is AUTO_REUSE (get_variable may create there); reuse=False inside it is
    # still True; a scope object re-entered keeps its own reuse
    with tf.variable_scope("a") as sa:
        pass
    with tf.variable_scope("o", reuse=True):
        with tf.variable_scope("i", reuse=tf.AUTO_REUSE):
            assert tf.get_variable_scope().reuse == tf.AUTO_REUSE
            with tf.variable_scope("k"):
                assert tf.get_variable_scope().reuse == tf.AUTO_REUSE
                v = tf.get_variable("v", [2])
        with tf.variable_scope("j", reuse=False):
            assert tf.get_variable_scope().reuse is True
        with tf.variable_scope(sa):
            assert not tf.get_variable_scope().reuse
            w = tf.get_variable("w", [1])
    assert [v.name, w.name] == ["o/i/k/v:0", "a/w:0"]


def test_saver_checkpoint_keys_are_the_variable_names(graph):
    _model()
    tf.train.AdamOptimizer(0.1).minimize(tf.get_default_graph().get_tensor_by_name("Sum:0"))
    saver = tf.train.Saver()
    with tempfile.TemporaryDirectory() as d:
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            path = saver.save(s, os.path.join(d, "ckpt"))
        keys = [k for k, _ in tf.train.list_variables(path)]
    assert keys == sorted(["beta1_power", "beta2_power", "fc/bias", "fc/bias/Adam", "fc/bias/Adam_1", "fc/kernel",
                           "fc/kernel/Adam", "fc/kernel/Adam_1"])


def test_layer_regularizer_is_built_in_the_layers_name_scope(graph):
    # TF1's tf.layers: a weight's regularizer runs in the layer's own name scope (where its
    # ops go), once, when the layer makes the weight; get_variable's regularizer runs in the
    # variable's ("<var>/Regularizer/")
    x = tf.placeholder(tf.float32, [2, 3])
    reg = tf.contrib.layers.l2_regularizer(0.5)
    with tf.variable_scope("s"):
        with tf.name_scope("n"):
            tf.layers.dense(x, 3, reuse=tf.AUTO_REUSE)  # variable scope s/dense, ops s/n/dense/
        y = tf.layers.dense(x, 3, kernel_regularizer=reg)  # variable scope s/dense_1, ops s/dense/
        tf.layers.dense(x, 3, kernel_regularizer=reg, name="fc")
        tf.layers.dense(x, 3, kernel_regularizer=reg, name="fc", reuse=True)  # shared: no new loss
        tf.layers.batch_normalization(x, gamma_regularizer=reg, training=True, name="bn")
    assert y.name == "s/dense/BiasAdd:0"
    assert [v.name for v in tf.trainable_variables()][2:4] == ["s/dense_1/kernel:0", "s/dense_1/bias:0"]
    assert [r.name for r in tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)] == [
        "s/dense/kernel/Regularizer/l2_regularizer:0", "s/fc/kernel/Regularizer/l2_regularizer:0",
        "s/bn/gamma/Regularizer/l2_regularizer:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        k = s.run(tf.trainable_variables()[2])
        # 0.5 * sum(k^2) / 2
        assert s.run(tf.losses.get_regularization_losses()[0]) == pytest.approx(0.25 * float((k ** 2).sum()), rel=1e-5)


def test_layer_object_calls_share_the_original_name_scope(graph):
    # TF1's tf.layers objects: every call builds its ops in the layer's original name scope
    # (dense/BiasAdd, dense/BiasAdd_1) and shares its variables
    x = tf.placeholder(tf.float32, [2, 3])
    layer = tf.layers.Dense(3)
    a, b = layer(x), layer(x)
    fc = tf.layers.Dense(3, name="fc")
    c, d = fc(x), fc(x)
    assert [t.name for t in (a, b, c, d)] == ["dense/BiasAdd:0", "dense/BiasAdd_1:0", "fc/BiasAdd:0",
                                               "fc/BiasAdd_1:0"]
    assert [v.name for v in tf.global_variables()] == ["dense/kernel:0", "dense/bias:0", "fc/kernel:0", "fc/bias:0"]


def test_unnamed_sub_scope_numbering(graph):
    # TF1: leaving a scope opened by name restarts the numbering of the unnamed scopes in it;
    # a scope object re-entered continues its numbering, and leaving it undoes what was
    # opened inside
    def unnamed():
        with tf.variable_scope(None, default_name="d") as sc:
            return sc.name
    out = []
    with tf.variable_scope("s") as s:
        out.append(unnamed())
        with tf.variable_scope(s):
            out += [unnamed(), unnamed()]
        out.append(unnamed())
        for _ in range(2):
            with tf.variable_scope("s2"):
                out.append(unnamed())
        out.append(unnamed())
    with tf.variable_scope("s"):
        out.append(unnamed())
    with tf.variable_scope(s):
        out.append(unnamed())
    out.append(unnamed())
    assert out == ["s/d", "s/d_1", "s/d_2", "s/d_1", "s/s2/d", "s/s2/d", "s/d_2", "s/d", "s/d", "d"]
