"""TensorFlow 1.x's behaviour of single ops and their gradients, one test per rule; each rule was
found different by a differential run against TensorFlow's compat.v1 graph mode and is stated
here in closed form (no TensorFlow needed)."""
import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as tf
from session_helpers import run as _run


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


# -- cross-entropies --------------------------------------------------------------------------------

def test_sigmoid_cross_entropy_gradient_at_a_zero_logit_is_sigmoid_minus_label(graph):
    logits = tf.constant([0.0, 0.0, 0.0, 2.0, -3.0], tf.float64)
    labels = tf.constant([0.0, 1.0, 0.5, 1.0, 0.0], tf.float64)
    loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    lv, gv = _run([loss, tf.gradients(loss, logits)[0]])
    x, z = np.array([0.0, 0.0, 0.0, 2.0, -3.0]), np.array([0.0, 1.0, 0.5, 1.0, 0.0])
    np.testing.assert_allclose(lv, np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))), rtol=1e-14)
    np.testing.assert_allclose(gv, 1 / (1 + np.exp(-x)) - z, rtol=1e-14)   # [0.5, -0.5, 0, ...]


@pytest.mark.parametrize("v2", [False, True])
def test_softmax_cross_entropy_gradient_is_softmax_minus_labels_for_any_labels(graph, v2):
    """TF1's kernel returns softmax - labels as the logits' gradient even when a label row does
    not sum to 1 (the exact derivative would be softmax * sum(labels) - labels)."""
    lg, lb = np.array([[0.1, 0.5, -0.3], [1.0, -1.0, 0.0]]), np.array([[1.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    logits, labels = tf.constant(lg), tf.constant(lb)
    fn = tf.nn.softmax_cross_entropy_with_logits_v2 if v2 else tf.nn.softmax_cross_entropy_with_logits
    loss = fn(labels=labels, logits=logits)
    lv, gl, gz = _run([loss, tf.gradients(loss, logits)[0], tf.gradients(loss, labels)[0] if v2 else loss])
    p = np.exp(lg - lg.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(lv, -(lb * np.log(p)).sum(1), rtol=1e-13)
    np.testing.assert_allclose(gl, p - lb, rtol=1e-13)        # row 0: not sum(labels) * p - labels
    if v2:
        np.testing.assert_allclose(gz, -np.log(p), rtol=1e-13)


# -- reductions -------------------------------------------------------------------------------------

def test_reduce_logsumexp_of_infinite_rows(graph):
    x = tf.constant([[-np.inf, -np.inf], [np.inf, 1.0], [0.0, np.log(3.0)]])
    np.testing.assert_allclose(_run(tf.reduce_logsumexp(x, 1)), [-np.inf, np.inf, np.log(4.0)], rtol=1e-6)


def test_floating_point_specials_come_back_without_warnings(graph):
    # pytest turns warnings into errors here: a NumPy RuntimeWarning would fail this test
    z = tf.constant([0.0, 1.0])
    lv, dv = _run([tf.log(z), z / z])
    assert lv[0] == -np.inf and np.isnan(dv[0]) and dv[1] == 1.0


# -- one_hot ----------------------------------------------------------------------------------------

def test_one_hot_dtype_follows_python_on_off_values(graph):
    a = tf.one_hot([0, 2], 3, on_value=5, off_value=-1)
    b = tf.one_hot([0, 2], 3, on_value=2.5)
    c = tf.one_hot([1], 2)
    assert a.dtype == tf.int32 and b.dtype == tf.float32 and c.dtype == tf.float32
    np.testing.assert_array_equal(_run(a), [[5, -1, -1], [-1, -1, 5]])
    with pytest.raises(TypeError, match="same dtype"):
        tf.one_hot([0], 2, on_value=1, off_value=0.0)


@pytest.mark.host_only("TF's CPU kernels raise on an integer division by zero; its GPU kernels do not check (a check would synchronize the device)")
def test_integer_floor_division_and_mod_by_zero_are_errors(graph):
    x, zero = tf.constant([1, 2]), tf.constant([1, 0])
    for t in (x // zero, x % zero, tf.truncatediv(x, zero)):
        with pytest.raises(cf.InvalidArgumentError, match="Integer division by zero"):
            _run(t)
    f = tf.constant([1.0, -1.0])
    fv = _run(f // tf.constant([0.0, 0.0]))   # floats: IEEE, no error
    assert fv[0] == np.inf and fv[1] == -np.inf


# -- names that checkpoints and EMA shadows are keyed by ----------------------------------------------

def test_centered_rmsprop_slot_names_in_tf1_order(graph):
    w = tf.get_variable("W", initializer=tf.constant([1.0, 2.0]))
    opt = tf.train.RMSPropOptimizer(0.1, momentum=0.9, centered=True)
    opt.minimize(tf.reduce_sum(w * w))
    assert {k: opt.get_slot(w, k).op.name for k in ("rms", "mg", "momentum")} == {
        "rms": "W/RMSProp", "mg": "W/RMSProp_1", "momentum": "W/RMSProp_2"}


def test_moments_outputs_are_named_as_tf1s(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    m, v = tf.nn.moments(x, [0])
    mk, vk = tf.nn.moments(x, [0], keep_dims=True)
    assert (m.name, v.name) == ("moments/Squeeze:0", "moments/Squeeze_1:0")
    assert (mk.name, vk.name) == ("moments_1/mean:0", "moments_1/variance:0") and mk.shape.as_list() == [1, 3]
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply([m, v])
    assert ema.average(m).op.name == "moments/Squeeze/ExponentialMovingAverage"


def test_layers_kernel_takes_the_variable_scopes_initializer(graph):
    with tf.variable_scope("net", initializer=tf.constant_initializer(0.25)):
        y = tf.layers.dense(tf.ones([1, 2]), 2)
        c = tf.layers.conv2d(tf.ones([1, 3, 3, 1]), 1, 3)
    yv, cv = _run([y, c])
    np.testing.assert_allclose(yv, [[0.5, 0.5]])   # kernel 0.25 everywhere, bias zeros
    np.testing.assert_allclose(cv.ravel(), [2.25])


@pytest.mark.parametrize("axis", [1, 0, None, [0, 1]])
def test_reduce_prod_gradient_with_zeros_is_the_product_of_the_others(graph, axis):
    xv = np.array([[1.0, 0.0, 3.0], [0.0, 2.0, 0.0], [2.0, 5.0, 0.5]])
    x = tf.constant(xv)
    gv = _run(tf.gradients(tf.reduce_sum(tf.reduce_prod(x, axis) * 1.5), x)[0])
    want = np.zeros_like(xv)
    groups = {1: lambda i, j: xv[i, :], 0: lambda i, j: xv[:, j]}
    for i in range(3):
        for j in range(3):
            if axis in (0, 1):
                grp = list(groups[axis](i, j))
                k = j if axis == 1 else i
            else:
                grp, k = list(xv.ravel()), 3 * i + j
            want[i, j] = 1.5 * np.prod(grp[:k] + grp[k + 1:])
    np.testing.assert_allclose(gv, want, rtol=1e-14)   # [[0, 3, 0], [0, 0, 0], ...] for axis=1


# -- second derivatives through max pooling -----------------------------------------------------------

def test_max_pool_second_derivative_goes_through_the_window_maximum(graph):
    x = tf.constant(np.array([[1.0, 2.0], [3.0, 4.0]]).reshape(1, 2, 2, 1))
    y = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    g = tf.gradients(tf.reduce_sum(y * y), x)[0]                  # 2 * max at the max's cell
    h = tf.gradients(tf.reduce_sum(g * x), x)[0]                  # d/dx sum(2 y x_argmax) = 4 y there
    np.testing.assert_allclose(_run(h).ravel(), [0, 0, 0, 16])
    dy = tf.placeholder(tf.float64, [1, 1, 1, 1])
    gp = tf.gradients(tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"), x, grad_ys=dy)[0]
    assert tf.gradients(gp, dy)[0] is not None


# -- while_loop ----------------------------------------------------------------------------------------

def test_variable_reads_in_a_loop_see_earlier_iterations_writes(graph):
    v = tf.Variable(1.0)

    def body(i, acc):
        a = tf.assign(v, v * 2.0)          # reads v in every iteration
        return i + 1, acc + a
    out = tf.while_loop(lambda i, a: i < 4, body, [tf.constant(0), tf.constant(0.0)], parallel_iterations=1)
    w = tf.Variable(0.0)

    def body2(i):
        with tf.control_dependencies([tf.assign_add(w, 1.0)]):
            return i + 1
    out2 = tf.while_loop(lambda i: w < 5.0, body2, [0], parallel_iterations=1)   # the cond reads w
    u = tf.Variable(2.0)
    with tf.control_dependencies([tf.assign(u, 3.0)]):
        mf = tf.map_fn(lambda x: x * u, tf.constant([1.0, 2.0]))          # after the outer assign
    with cf.Session(graph=graph) as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out)[1] == 30.0 and s.run(v) == 16.0                 # 2 + 4 + 8 + 16
        assert s.run(out2) == 5 and s.run(w) == 5.0
        np.testing.assert_array_equal(s.run(mf), [3.0, 6.0])


def test_gradient_of_a_variable_read_in_one_cond_branch_inside_a_loop(graph):
    w = tf.Variable([0.5, -0.25])
    x = tf.constant([1.0, 2.0])

    def body(i, v):
        return i + 1, tf.cond(tf.reduce_sum(v) > 0, lambda: v * w, lambda: v + 1.0)
    _, out = tf.while_loop(lambda i, v: i < 3, body, [0, x])
    gw = tf.gradients(tf.reduce_sum(out), w)[0]
    # v1 = x * w = [0.5, -0.5] (sum 3 > 0); v2 = v1 + 1 (sum 0: the other branch); out = v2 * w,
    # so d sum(out) / dw = v2 + w * x = [1.5, 0.5] + [0.5, -0.5] (TensorFlow gives the same)
    np.testing.assert_allclose(_run(gw), [2.0, 0.0])


def test_one_loop_variable_comes_back_as_the_tensor(graph):
    r = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
    same = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)], return_same_structure=True)
    assert isinstance(r, cf.Tensor) and isinstance(same, list) and len(same) == 1
    assert _run(r) == 3


# -- scalars --------------------------------------------------------------------------------------------

def test_activations_and_their_gradients_take_0d_tensors(graph):
    s = tf.constant(0.6)
    outs = _run([tf.sigmoid(s), tf.nn.leaky_relu(s), tf.gradients(tf.tanh(s), s)[0],
                 tf.gradients(tf.nn.softplus(s), s)[0], tf.gradients(tf.sigmoid(s), s)[0],
                 tf.gradients(tf.nn.leaky_relu(-s), s)[0]])
    sig = 1 / (1 + np.exp(-0.6))
    np.testing.assert_allclose(outs, [sig, 0.6, 1 - np.tanh(0.6) ** 2, sig, sig * (1 - sig), -0.2], rtol=1e-6)
    w = tf.constant(0.5)
    sc = tf.scan(lambda a, x: tf.tanh(a * w + x), tf.constant([0.1, 0.2, 0.3]), initializer=tf.constant(0.0))
    gv = _run(tf.gradients(tf.reduce_sum(sc), w)[0])
    assert np.isfinite(gv) and gv > 0


def test_gradients_and_minimize_inside_a_loop_body(graph):
    x = tf.constant(2.0)
    w = tf.Variable(3.0)

    def body(i, acc):
        g = tf.gradients(x * x, x)[0]                 # 4, w.r.t. a tensor from outside the loop
        gw = tf.gradients(w * w * x, w)[0]            # 12, w.r.t. a variable
        return i + 1, acc + g + gw

    out = tf.while_loop(lambda i, a: i < 3, body, [tf.constant(0), tf.constant(0.0)])

    def body2(i):
        with tf.control_dependencies([tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(w * w))]):
            return i + 1
    out2 = tf.while_loop(lambda i: i < 2, body2, [tf.constant(0)])
    with cf.Session(graph=graph) as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out)[1] == 48.0
        s.run(out2)
        np.testing.assert_allclose(s.run(w), 3.0 * 0.8 * 0.8)   # two SGD steps of w -= 0.1 * 2w


def test_name_scope_takes_tf1s_three_arguments(graph):
    x = tf.constant(1.0)
    with tf.name_scope(None, "my_op", [x]) as scope:
        y = tf.identity(x, name="y")
    with tf.name_scope("given", "my_op", [x]):
        z = tf.identity(x, name="z")
    with tf.name_scope(None, "my_op"):
        w = tf.identity(x, name="w")
    assert scope == "my_op/" and y.op.name == "my_op/y" and z.op.name == "given/z" and w.op.name == "my_op_1/w"
    other = cf.Graph()
    with other.as_default():
        t = tf.constant(2.0)
    with tf.name_scope(None, "in_other", [t]):
        u = tf.identity(t)                       # built in t's graph, which is default inside
    assert u.graph is other and u.op.name == "in_other/Identity"


def test_a_variables_own_name_fetches_and_computes_with_its_value(graph):
    v = tf.Variable([1.0, 2.0], name="myvar")
    t = graph.get_tensor_by_name("myvar:0")
    y = t * 2.0
    with cf.Session(graph=graph) as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(s.run("myvar:0"), [1.0, 2.0])
        np.testing.assert_array_equal(s.run(v.name), [1.0, 2.0])
        np.testing.assert_array_equal(s.run(y), [2.0, 4.0])


# -- where optimizer slots and moving-average shadows are made and how they are named -----------------

def test_slot_and_shadow_names_and_creation_inside_conds_and_loops(graph):
    x = tf.constant([[1.0, 2.0], [1.0, 1.5]])
    is_training = tf.placeholder(tf.bool, [])
    ema = tf.train.ExponentialMovingAverage(0.5)

    def train_branch():                                  # TF1's hand-written batch-norm pattern
        m, v = tf.nn.moments(x, [0])
        with tf.control_dependencies([ema.apply([m, v])]):
            return tf.identity(m), tf.identity(v)
    mm, vv = tf.cond(is_training, train_branch, lambda: (tf.zeros([2]), tf.ones([2])))
    w = tf.Variable(3.0)

    def body(i):                                         # Adam's slots made inside a loop body
        with tf.control_dependencies([tf.train.AdamOptimizer(0.1).minimize(w * w)]):
            return i + 1
    out = tf.while_loop(lambda i: i < 2, body, [0])
    W = tf.get_variable("W", initializer=tf.constant([1.0, 2.0]))
    with tf.variable_scope("train"):
        tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(W * W))
    with tf.name_scope("plain"):
        tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(W * W))
    names = {v.op.name for v in tf.global_variables()}
    assert {"cond/moments/Squeeze/ExponentialMovingAverage", "while/beta1_power", "Variable/Adam",
            "train/beta1_power", "train/W/Adam", "train/W/Adam_1", "plain/beta1_power", "W/Adam"} <= names
    with cf.Session(graph=graph) as s:
        s.run(tf.global_variables_initializer())
        mv, vv_ = s.run([mm, vv], {is_training: True})
        np.testing.assert_allclose(mv, [1.0, 1.75])
        np.testing.assert_allclose(vv_, [0.0, 0.0625])
        s.run(out)
        assert abs(s.run(w) - 2.8001032) < 1e-5                # two Adam steps, as TensorFlow


def test_cond_and_loop_outputs_have_tf1s_op_names(graph):
    x = tf.constant(1.0)
    c = tf.cond(x > 0, lambda: x * 2, lambda: x * 3)
    with tf.name_scope("outer"):
        w = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0], name="myloop")
    assert (c.name, w.name) == ("cond/Merge:0", "outer/myloop/Exit:0")


# -- where and top_k -------------------------------------------------------------------------------------

def test_where_single_argument_and_rank1_condition_over_rows(graph):
    x = tf.constant(np.arange(12.0).reshape(3, 4))
    coords = tf.where(x > 8.0)
    rows = tf.where(tf.constant([True, False, True]), x, -x)
    cv, rv = _run([coords, rows])
    assert coords.dtype == tf.int64 and coords.shape.as_list() == [None, 2]
    np.testing.assert_array_equal(cv, [[2, 1], [2, 2], [2, 3]])
    np.testing.assert_array_equal(rv, np.where(np.array([True, False, True])[:, None], np.arange(12.0).reshape(3, 4),
                                               -np.arange(12.0).reshape(3, 4)))
    g = tf.gradients(tf.reduce_sum(rows * rows), x)[0]
    np.testing.assert_allclose(_run(g), 2 * np.arange(12.0).reshape(3, 4))
    with pytest.raises(ValueError, match="both be non-None"):
        tf.where(x > 1.0, x)


def test_top_k_result_has_values_and_indices(graph):
    r = tf.nn.top_k(tf.constant([[1.0, 3.0, 2.0]]), 2)
    v, i = _run([r.values, r.indices])
    np.testing.assert_array_equal(v, [[3.0, 2.0]])
    np.testing.assert_array_equal(i, [[1, 2]])
    values, indices = r                                  # still unpacks as a pair
    assert values is r.values


# -- slices with run-time bounds --------------------------------------------------------------------------

def test_slices_with_tensor_bounds_follow_pythons_rules(graph):
    xv = np.arange(24.0).reshape(4, 6)
    x = tf.constant(xv)
    i, j = tf.constant(1), tf.constant(-2)
    got = _run([x[i:], x[:, :j], x[i:j, ::2], x[..., i:], x[i:10], x[i, j:], x[::-1, i:],
                tf.slice(x, [i, 2], [2, -1]), tf.slice(x, tf.stack([i, i]), tf.constant([-1, 3]))])
    want = [xv[1:], xv[:, :-2], xv[1:-2, ::2], xv[..., 1:], xv[1:10], xv[1, -2:], xv[::-1, 1:], xv[1:3, 2:],
            xv[1:, 1:4]]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    gv = _run(tf.gradients(tf.reduce_sum(x[i:j, ::2] * 2.0), x)[0])
    w = np.zeros_like(xv)
    w[1:-2, ::2] = 2.0
    np.testing.assert_array_equal(gv, w)


def test_axis_and_shape_arguments_given_as_tensors_the_graph_determines(graph):
    xv = np.arange(12.0).reshape(3, 4)
    x = tf.constant(xv)
    one = tf.constant(1)
    got = _run([tf.reduce_sum(x, axis=one), tf.reduce_mean(x, axis=tf.range(1, tf.rank(x))),
                tf.concat([x, x], axis=one), tf.expand_dims(x, one), tf.argmax(x, one), tf.cumsum(x, one),
                tf.gather(x, [0], axis=one), tf.tile(x, tf.stack([one, 2]))])
    want = [xv.sum(1), xv.mean(1), np.concatenate([xv, xv], 1), xv[:, None], xv.argmax(1), xv.cumsum(1),
            xv[:, [0]], np.tile(xv, (1, 2))]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b)
    p = tf.placeholder(tf.int32, [])
    # TF1 also takes axes computed at run time: reductions read them when the step runs ...
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(tf.reduce_sum(x, axis=p), {p: 1}), xv.sum(1))
    # ... where concat's axis (an attr here) must still be known when the graph is built
    with pytest.raises(TypeError, match="known when the graph is built"):
        tf.concat([x, x], axis=p)


# -- unique, dynamic_partition, dynamic_stitch --------------------------------------------------------------

def test_unique_keeps_first_appearance_order(graph):
    y, idx, cnt = tf.unique_with_counts(tf.constant([4, 1, 4, 2, 1, 7]))
    yv, iv, cv = _run([y, idx, cnt])
    np.testing.assert_array_equal(yv, [4, 1, 2, 7])
    np.testing.assert_array_equal(iv, [0, 1, 0, 2, 1, 3])
    np.testing.assert_array_equal(cv, [2, 2, 1, 1])


def test_dynamic_partition_and_stitch_and_their_gradients(graph):
    d = tf.constant(np.arange(12.0).reshape(6, 2))
    p = tf.dynamic_partition(d, tf.constant([0, 2, 1, 0, 2, 0]), 3)
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    st = tf.dynamic_stitch([[0, 1], [1, 2]], [a, b])                  # a later index wins
    g = tf.gradients(tf.reduce_sum(p[0] * 2.0) + tf.reduce_sum(p[2] * p[2]), d)[0]
    gs = tf.gradients(tf.reduce_sum(st * tf.constant([1.0, 10.0, 100.0])), [a, b])
    pv, sv, gv, gsv = _run([p, st, g, gs])
    np.testing.assert_array_equal(pv[0], [[0, 1], [6, 7], [10, 11]])
    np.testing.assert_array_equal(pv[1], [[4, 5]])
    np.testing.assert_array_equal(sv, [1.0, 3.0, 4.0])
    want = np.zeros((6, 2))
    want[[0, 3, 5]] = 2.0
    want[[1, 4]] = 2 * np.arange(12.0).reshape(6, 2)[[1, 4]]
    np.testing.assert_array_equal(gv, want)
    np.testing.assert_array_equal(gsv[0], [1.0, 10.0])                # TF1: gathered, overwritten or not
    np.testing.assert_array_equal(gsv[1], [10.0, 100.0])


def test_second_derivatives_of_piecewise_linear_activations_are_zeros_not_none(graph):
    x = tf.constant([[-1.0, 0.5, 2.0]])
    for act in (tf.nn.relu, tf.nn.leaky_relu, tf.abs):
        h = tf.gradients(tf.reduce_sum(tf.gradients(tf.reduce_sum(act(x)), x)[0]), x)[0]
        assert h is not None
        np.testing.assert_array_equal(_run(h), [[0.0, 0.0, 0.0]])


def test_a_structure_of_tensors_is_one_feed_key(graph):
    a, b = tf.placeholder(tf.float32, []), tf.placeholder(tf.float32, [])
    cell = tf.nn.rnn_cell.LSTMCell(3)
    state = cell.zero_state(2, tf.float32)                      # an LSTMStateTuple (c, h)
    total = a + b + tf.reduce_sum(state.c) + tf.reduce_sum(state.h)
    with cf.Session(graph=graph) as s:
        c0 = np.ones((2, 3), np.float32)
        v = s.run(total, {(a, b): (1.0, 2.0), state: (c0, 2 * c0)})
        assert v == 3.0 + 6.0 + 12.0
        with pytest.raises(TypeError, match="structure of 2 tensors"):
            s.run(total, {(a, b): 1.0, state: (c0, c0)})
    assert _run(tf.log_sigmoid(tf.constant(0.0))) == pytest.approx(np.log(0.5))


def test_more_elementwise_functions_and_div_no_nan(graph):
    xv = np.array([0.3, -0.5])
    x = tf.constant(xv)
    fns = {"expm1": np.expm1, "tan": np.tan, "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos,
           "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "atanh": np.arctanh}
    got = _run([getattr(tf, n)(x) for n in fns] + [getattr(tf.math, n)(x) for n in fns])
    for v, f in zip(got, list(fns.values()) * 2):
        np.testing.assert_allclose(v, f(xv), rtol=1e-12)
    y = tf.constant([2.0, 0.0], tf.float64)
    q, (gx, gy) = _run([tf.div_no_nan(x, y), tf.gradients(tf.reduce_sum(tf.math.divide_no_nan(x, y)), [x, y])])
    np.testing.assert_allclose(q, [0.15, 0.0])
    np.testing.assert_allclose(gx, [0.5, 0.0])              # finite where y == 0
    np.testing.assert_allclose(gy, [-0.075, 0.0])


# -- checkpoints, queues, csv, datasets --------------------------------------------------------------------

def test_default_saver_restores_its_variables_from_a_bigger_checkpoint(tmp_path):
    g1 = cf.Graph()
    with g1.as_default():
        w = tf.Variable(2.0, name="w")
        extra = tf.Variable([1.0, 2.0], name="extra")           # only in the training graph
        drop = tf.nn.dropout(tf.ones([4]), 0.5, seed=1)         # a random op the eval graph lacks
        saver = tf.train.Saver()
        with cf.Session(graph=g1) as s:
            s.run(tf.global_variables_initializer())
            s.run(drop)
            path = saver.save(s, str(tmp_path / "model.ckpt"), global_step=3, write_meta_graph=False)
    g2 = cf.Graph()
    with g2.as_default():
        w2 = tf.Variable(0.0, name="w")
        with cf.Session(graph=g2) as s:
            tf.train.Saver().restore(s, path)                   # TF1: the extra entries are ignored
            assert s.run(w2) == 2.0
    g3 = cf.Graph()
    with g3.as_default():
        tf.Variable(0.0, name="not_saved")
        with cf.Session(graph=g3) as s, pytest.raises(cf.errors.NotFoundError):
            tf.train.Saver().restore(s, path)                   # a variable the checkpoint lacks


def test_one_column_decode_csv_and_one_tensor_batch_are_tensors(graph):
    (col,) = tf.decode_csv(tf.constant(["2", "3"]), record_defaults=[[0]])
    np.testing.assert_array_equal(_run(col + 1), [3, 4])
    b = tf.train.batch([tf.constant([1.0, 2.0])], batch_size=3)
    assert isinstance(b, cf.Tensor) and b.shape.as_list() == [3, 2]


def test_shuffle_without_reshuffle_keeps_one_order_across_epochs(graph):
    it = tf.data.Dataset.range(10).shuffle(10, reshuffle_each_iteration=False).repeat(2).batch(10) \
        .make_one_shot_iterator().get_next()
    with cf.Session(graph=graph) as s:
        e1, e2 = s.run(it), s.run(it)
    assert sorted(e1) == list(range(10)) and list(e1) == list(e2)


def test_layers_conv2d_transpose_shapes_names_and_kernel_layout(graph):
    x = tf.placeholder(tf.float32, [None, 5, 4, 3])
    a = tf.layers.conv2d_transpose(x, 6, 3, strides=2, padding="same")
    b = tf.layers.conv2d_transpose(x, 2, (3, 2), strides=(2, 1), padding="valid", use_bias=False)
    assert [v.op.name for v in tf.global_variables()] == [
        "conv2d_transpose/kernel", "conv2d_transpose/bias", "conv2d_transpose_1/kernel"]
    assert tf.global_variables()[0].shape.as_list() == [3, 3, 6, 3]        # [kh, kw, filters, in]
    kb = tf.global_variables()[2]
    same = tf.nn.conv2d_transpose(x, kb, tf.stack([tf.shape(x)[0], 11, 5, 2]), [1, 2, 1, 1], "VALID")
    xv = np.random.default_rng(0).normal(size=(2, 5, 4, 3)).astype(np.float32)
    with cf.Session(graph=graph) as s:
        s.run(tf.global_variables_initializer())
        av, bv, sv = s.run([a, b, same], {x: xv})
    assert av.shape == (2, 10, 8, 6) and bv.shape == (2, 11, 5, 2)          # h*s; h*s + max(k-s, 0)
    np.testing.assert_array_equal(bv, sv)


# -- tf.image augmentations ---------------------------------------------------------------------------------

def test_image_flips_crops_pads_and_standardization(graph):
    rng = np.random.default_rng(0)
    im = rng.uniform(0, 255, (6, 5, 3)).astype(np.float32)
    batch = rng.uniform(0, 1, (4, 6, 5, 3)).astype(np.float32)
    x, xb = tf.constant(im), tf.constant(batch)
    r = _run(dict(flip=tf.image.flip_left_right(x), ud=tf.image.flip_up_down(x),
                  rfb=tf.image.random_flip_left_right(xb, seed=2), std=tf.image.per_image_standardization(x),
                  crop=tf.random_crop(x, [4, 3, 3], seed=1), cp=tf.image.resize_image_with_crop_or_pad(x, 4, 7),
                  u8=tf.image.convert_image_dtype(tf.constant(np.array([[[200]]], np.uint8)), tf.float32),
                  back=tf.image.convert_image_dtype(tf.constant([[[0.5]]]), tf.uint8)))
    np.testing.assert_array_equal(r["flip"], im[:, ::-1])
    np.testing.assert_array_equal(r["ud"], im[::-1])
    assert all(np.array_equal(r["rfb"][i], batch[i]) or np.array_equal(r["rfb"][i], batch[i][:, ::-1])
               for i in range(4))                                           # a coin per image
    np.testing.assert_allclose(r["std"], (im - im.mean()) / im.std(), atol=1e-5)
    assert any(np.array_equal(r["crop"], im[i:i + 4, j:j + 3]) for i in range(3) for j in range(3))
    assert r["cp"].shape == (4, 7, 3)                                       # rows 1..4 kept, 1 column of
    np.testing.assert_array_equal(r["cp"][:, 1:6], im[1:5])                 # zeros on either side
    assert not r["cp"][:, 0].any() and not r["cp"][:, 6].any()
    np.testing.assert_allclose(r["u8"].ravel(), [200 / 255])
    assert r["back"].ravel().tolist() == [127]                              # 0.5 * 255.5, truncated


def test_image_contrast_and_bounding_boxes_state_tf1s_rules(graph):
    """(Values against TensorFlow: tests/tf1/test_vs_tensorflow_more.py.)  TF1's errors."""
    x = tf.constant(np.arange(2 * 7 * 9 * 3, dtype=np.float32).reshape(2, 7, 9, 3) / 100)
    r = _run(dict(c=tf.image.random_contrast(x, 0.2, 1.8, seed=3), k=tf.image.central_crop(x, 0.5)))
    xv = np.asarray(_run(x))
    d = xv - xv.mean((1, 2), keepdims=True)
    factor = ((r["c"] - xv.mean((1, 2), keepdims=True)) * d).sum() / (d * d).sum()
    assert 0.2 <= factor < 1.8                                      # one factor in [0.2, 1.8) for the batch
    np.testing.assert_allclose(r["c"], d * factor + xv.mean((1, 2), keepdims=True), rtol=1e-4, atol=1e-5)
    assert r["k"].shape == (2, 5, 5, 3)     # int((7 - 3.5) / 2) = 1 and int((9 - 4.5) / 2) = 2 off each side
    with pytest.raises(ValueError, match="height must be >= target \\+ offset"):
        tf.image.crop_to_bounding_box(x, 3, 0, 5, 2)
    with pytest.raises(ValueError, match="width must be <= target - offset"):
        tf.image.pad_to_bounding_box(x, 0, 2, 8, 10)
    with pytest.raises(ValueError, match="upper must be > lower"):
        tf.image.random_contrast(x, 1.0, 0.5)
    with pytest.raises(ValueError, match="central_fraction"):
        tf.image.central_crop(x, 0.0)
    with pytest.raises(ValueError, match="max_delta must be <= 0.5"):
        tf.image.random_hue(x, 0.6)
    with pytest.raises(ValueError, match="lower must be non-negative"):
        tf.image.random_saturation(x, -0.5, 1.0)


def test_random_hue_and_saturation_keep_value_and_turn_hue(graph):
    """Inception's distort_color: hue turned by one delta in [-max_delta, max_delta], value kept."""
    rng = np.random.default_rng(1)
    im = tf.constant(rng.uniform(0.05, 1, (5, 6, 3)).astype(np.float32))
    hsv, hue, sat = _run([tf.image.rgb_to_hsv(im), tf.image.rgb_to_hsv(tf.image.random_hue(im, 0.2, seed=4)),
                          tf.image.rgb_to_hsv(tf.image.random_saturation(im, 0.5, 1.5, seed=5))])
    np.testing.assert_allclose(hue[..., 1:], hsv[..., 1:], atol=1e-5)      # saturation and value kept
    turn = np.mod(hue[..., 0] - hsv[..., 0] + 0.5, 1.0) - 0.5
    assert np.ptp(turn) < 1e-4 and abs(turn.mean()) <= 0.2
    np.testing.assert_allclose(sat[..., 2], hsv[..., 2], atol=1e-5)       # value kept
    ratio = sat[..., 1] / hsv[..., 1]
    assert np.ptp(ratio[sat[..., 1] < 0.999]) < 1e-3 and 0.5 <= ratio.mean() < 1.5


def test_cond_branches_returning_ops_or_tensorarrays(graph):
    w = tf.Variable(1.0)
    flag = tf.placeholder(tf.bool, [])
    step = tf.cond(flag, lambda: tf.assign_add(w, 1.0).op, lambda: tf.group(tf.assign_add(w, 10.0)))
    ta0 = tf.TensorArray(tf.float32, 2)
    ta = tf.cond(flag, lambda: ta0.write(0, 1.0).write(1, 2.0), lambda: ta0.write(0, 3.0).write(1, 4.0))
    x = tf.placeholder(tf.float32, [])
    assert step.dtype == tf.bool and tf.gradients(tf.cast(x, tf.int32), x) == [None]
    with cf.Session(graph=graph) as s:
        s.run(tf.global_variables_initializer())
        assert s.run(step, {flag: True}) and s.run(w) == 2.0      # TF1: the taken branch's op ran
        s.run(step, {flag: False})
        assert s.run(w) == 12.0
        np.testing.assert_array_equal(s.run(ta.stack(), {flag: False}), [3.0, 4.0])


# -- custom gradients and one-output variadic ops ------------------------------------------------------------

def test_custom_gradient_straight_through_reversal_and_clipping(graph):
    @tf.custom_gradient
    def clip_grad(x):
        return tf.identity(x), lambda dy: tf.clip_by_value(dy, -1.0, 1.0)

    @tf.custom_gradient
    def mixed(x, y):
        return x * y, lambda dz: (-dz, 2.0 * dz)

    @tf.custom_gradient
    def ste_round(x):
        return tf.round(x), lambda dy: dy                      # straight-through estimator

    a, b = tf.constant([0.5, 3.0, -2.0]), tf.constant([1.0, 2.0, 3.0])
    loss = tf.reduce_sum(clip_grad(a) * 5.0) + tf.reduce_sum(mixed(a, b)) + tf.reduce_sum(ste_round(a) * a)
    lv, (ga, gb) = _run([loss, tf.gradients(loss, [a, b])])
    assert lv == 21.0                                           # TensorFlow gives the same numbers
    np.testing.assert_allclose(ga, [0.5, 6.0, -4.0])            # 1 - 1 + (round(a) + a)
    np.testing.assert_allclose(gb, [2.0, 2.0, 2.0])


def test_split_unstack_identity_n_with_one_output_give_the_tensor(graph):
    x = tf.constant(np.arange(6.0).reshape(2, 3))
    outs = _run([tf.split(x, 1)[0] + 0, tf.split(x, [2])[0] + 0, tf.unstack(tf.constant([[1.0, 2.0]]))[0] + 0,
                 tf.identity_n([x])[0] + 0, tf.dynamic_partition(x, tf.constant([0, 0]), 1)[0] + 0])
    assert [o.shape for o in outs] == [(2, 3), (2, 3), (2,), (2, 3), (2, 3)]


# -- tf.metrics.auc ---------------------------------------------------------------------------------------------

def _auc_reference(y, p, w, n, curve):
    ths = np.array([-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7], np.float32)
    pos = p[None, :] > ths[:, None]
    lab = y[None, :].astype(bool)
    tp, fn = (w * (lab & pos)).sum(1), (w * (lab & ~pos)).sum(1)
    tn, fp = (w * (~lab & ~pos)).sum(1), (w * (~lab & pos)).sum(1)
    rec = (tp + 1e-6) / (tp + fn + 1e-6)
    x, yy = ((fp / (fp + tn + 1e-6), rec) if curve == "ROC" else (rec, (tp + 1e-6) / (tp + fp + 1e-6)))
    return float(((x[:-1] - x[1:]) * (yy[:-1] + yy[1:]) / 2).sum())


def test_metrics_auc_streams_tf1s_thresholded_estimate(graph):
    rng = np.random.default_rng(0)
    lab, pr = tf.placeholder(tf.int64, [None]), tf.placeholder(tf.float32, [None])
    w = tf.placeholder(tf.float32, [None])
    roc = tf.metrics.auc(lab, pr)
    prc = tf.metrics.auc(lab, pr, weights=w, curve="PR", num_thresholds=50)
    assert {v.op.name for v in tf.local_variables()} >= {"auc/true_positives", "auc_1/false_positives"}
    ys, ps, ws = [], [], []
    with cf.Session(graph=graph) as s:
        s.run(tf.local_variables_initializer())
        for _ in range(3):                                   # streamed over three batches
            y = rng.integers(0, 2, 64)
            p = np.clip(y * 0.3 + rng.uniform(0, 0.7, 64), 0, 1).astype(np.float32)
            wv = rng.uniform(0, 2, 64).astype(np.float32)
            s.run([roc[1], prc[1]], {lab: y, pr: p, w: wv})
            ys, ps, ws = ys + [y], ps + [p], ws + [wv]
        rv, pv = s.run([roc[0], prc[0]])
    y, p, wv = np.concatenate(ys), np.concatenate(ps), np.concatenate(ws)
    assert rv == pytest.approx(_auc_reference(y, p, np.ones_like(p), 200, "ROC"), rel=1e-5)   # TF: 0.826608
    assert pv == pytest.approx(_auc_reference(y, p, wv, 50, "PR"), rel=1e-5)                  # TF: 0.864623


def test_special_functions_known_values(graph):
    """(Against TensorFlow over a grid: tests/tf1/test_vs_tensorflow_more.py.)"""
    import math
    x = tf.constant([0.5, 1.0, 4.0, -0.5, 0.0, -2.0, 25.0], tf.float64)
    lg, dg, tg, ec, ec32 = _run([tf.lgamma(x), tf.digamma(x), tf.math.polygamma(1, x), tf.erfc(x),
                                  tf.erfc(tf.constant([6.0, -1.0], tf.float32))])
    np.testing.assert_allclose(lg[:4], [0.5 * math.log(math.pi), 0.0, math.log(6.0), math.log(2 * math.sqrt(math.pi))],
                               rtol=1e-12, atol=1e-14)
    assert lg[4] == np.inf and lg[5] == np.inf and lg[6] == pytest.approx(math.lgamma(25.0), rel=1e-13)
    euler = 0.5772156649015329
    np.testing.assert_allclose(dg[[0, 1, 2]], [-euler - 2 * math.log(2), -euler, -euler + 1 + 1 / 2 + 1 / 3],
                               rtol=1e-12)
    assert np.isnan(dg[4]) and np.isnan(dg[5])
    np.testing.assert_allclose(tg[1], math.pi ** 2 / 6, rtol=1e-12)
    assert tg[4] == np.inf
    np.testing.assert_allclose(ec, [math.erfc(v) for v in (0.5, 1.0, 4.0, -0.5, 0.0, -2.0, 25.0)], rtol=1e-13,
                               atol=1e-300)
    assert ec32.dtype == np.float32 and ec32[0] == pytest.approx(math.erfc(6.0), rel=1e-6)  # no 1 - erf cancellation


def test_conv3d_dilation_and_layers(graph):
    """A dilated 3-D convolution is the convolution with the kernel's taps spread apart (zeros
    between); the layers make TF1's variables.  (Against TensorFlow: test_vs_tensorflow_more.py.)"""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 6, 5, 7, 2)).astype(np.float32)
    w = rng.standard_normal((2, 2, 3, 2, 3)).astype(np.float32)
    spread = np.zeros((3, 2, 5, 2, 3), np.float32)
    spread[::2, :, ::2] = w
    a, b = _run([tf.nn.conv3d(x, w, [1, 1, 1, 1, 1], "SAME", dilations=[1, 2, 1, 2, 1]),
                 tf.nn.conv3d(x, spread, [1, 1, 1, 1, 1], "SAME")])
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    y = tf.layers.conv3d(tf.constant(x), 4, [2, 3, 3], strides=(1, 2, 1), padding="same", activation=tf.nn.relu)
    z = tf.layers.max_pooling3d(y, 2, 2)
    assert y.shape.as_list() == [1, 6, 3, 7, 4] and z.shape.as_list() == [1, 3, 1, 3, 4]
    assert [v.name for v in tf.global_variables()] == ["conv3d/kernel:0", "conv3d/bias:0"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="conv3d needs an input of rank >= 5"):
        tf.layers.conv3d(tf.constant(x[0]), 4, 3)


def test_strided_slice_takes_tf1s_begin_end_form():
    """tf.strided_slice(input_, begin, end, strides, masks) (the CIFAR-10 tutorial's
    `tf.strided_slice(record, [0], [1])`), as well as an indexing key."""
    import collflow.compat.v1 as cf
    x = np.arange(60).reshape(3, 4, 5)
    with cf.Graph().as_default():
        t = cf.constant(x)
        b = cf.constant([1, 0, 1])
        outs = [cf.strided_slice(t, [0], [1]),
                cf.strided_slice(t, [1, 0, 4], [3, 4, 0], [1, 2, -2]),
                cf.strided_slice(t, [1, 2, 0], [0, 3, 5], begin_mask=0, end_mask=1, shrink_axis_mask=2),
                cf.strided_slice(t, [0, 1], [0, 3], ellipsis_mask=1),
                cf.strided_slice(t, [0, 0, 0], [1, 1, 1], new_axis_mask=2, shrink_axis_mask=1),
                cf.strided_slice(t, b, [3, 4, 5]),
                cf.strided_slice(t, (slice(0, 2), Ellipsis, 3))]
        with cf.Session() as s:
            got = s.run(outs)
    want = [x[0:1], x[1:3, 0:4:2, 4:0:-2], x[1:, 2, 0:5], x[..., 1:3], x[0, None, 0:1], x[1:3, 0:4, 1:5],
            x[0:2, ..., 3]]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_tf1_keyword_names_and_positional_orders():
    """Programs call TF1's functions with TF's keyword names (tf_upgrade_v2 writes them:
    reduce_sum(input_tensor=), reshape(tensor=), transpose(a=), ...) and rely on TF1's
    positional orders (shape(x, name), pad(t, p, mode, name), assign(ref, v, validate, locking))."""
    import collflow.compat.v1 as cf
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    with cf.Graph().as_default():
        t = cf.constant(x)
        v = cf.Variable(np.zeros(3, np.float32), name="v")
        outs = [cf.reduce_sum(input_tensor=t, axis=1), cf.reduce_mean(input_tensor=t), cf.argmax(input=t, axis=1),
                cf.reshape(tensor=t, shape=[3, 2]), cf.transpose(a=t), cf.expand_dims(input=t, dim=0),
                cf.squeeze(input=cf.reshape(t, [1, 2, 3]), squeeze_dims=[0]), cf.tile(input=t, multiples=[1, 2]),
                cf.zeros_like(tensor=t, optimize=True), cf.ones_like(tensor=t), cf.rank(input=t),
                cf.broadcast_to(input=cf.constant([1.0, 2.0, 3.0]), shape=[2, 3]),
                cf.clip_by_value(t=t, clip_value_min=1.0, clip_value_max=4.0),
                cf.shape(t, "my_shape"), cf.size(t, "my_size", cf.int64),
                cf.pad(t, [[1, 0], [0, 0]], "CONSTANT", "my_pad"),
                cf.gather(t, [1], None, "my_gather", axis=0), cf.arg_max(t, 1, cf.int32, "am"),
                cf.string_to_number(input=cf.constant(["1.5"])), cf.nn.top_k(t, 2, True, cf.int64)[1]]
        ops = [cf.assign(v, [1.0, 2.0, 3.0], True, False, "my_assign"), v.assign_add([1.0, 1.0, 1.0], False, "aa")]
        assert outs[13].op.name == "my_shape" and outs[14].dtype == cf.int64 and outs[15].op.name.startswith("my_pad")
        assert ops[0].op.name == "my_assign" and outs[17].dtype == cf.int32 and outs[19].dtype == cf.int64
        assert isinstance(v.assign([0.0, 0.0, 0.0], read_value=False), cf.Operation)
        assert cf.get_collection(key=cf.GraphKeys.GLOBAL_VARIABLES) == [v]
        # TF1's non-strict cond unpacks a one-item list; strict=True keeps it
        one = cf.cond(cf.constant(True), lambda: [t], lambda: [t * 2])
        kept = cf.cond(cf.constant(True), lambda: [t], lambda: [t * 2], strict=True)
        old = cf.cond(cf.constant(False), fn1=lambda: t, fn2=lambda: t * 2)
        assert isinstance(one, cf.Tensor) and isinstance(kept, list)
        with cf.Session() as s:
            s.run(v.initializer)
            got = s.run(outs + [one, old])
            s.run(ops)
            np.testing.assert_array_equal(s.run(v), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(got[0], x.sum(1))
    np.testing.assert_array_equal(got[3], x.reshape(3, 2))
    np.testing.assert_array_equal(got[4], x.T)
    np.testing.assert_array_equal(got[5].shape, (1, 2, 3))
    np.testing.assert_array_equal(got[15], np.pad(x, [[1, 0], [0, 0]]))
    np.testing.assert_array_equal(got[16], x[[1]])
    np.testing.assert_array_equal(got[-1], x * 2)
    with pytest.raises(TypeError, match="both"):
        cf.reduce_sum(np.ones(2), input_tensor=np.ones(2), x=np.ones(2))
