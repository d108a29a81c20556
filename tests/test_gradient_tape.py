"""tf.GradientTape in graph mode, tf.TensorSpec & co., tf.variable_creator_scope (no TensorFlow).

Tape gradients, jacobians and batch_jacobians are compared with central finite differences
(float64, rtol 1e-6) and closed forms; the second-order cases go through tests/gradcheck.py
(cf.gradients of a tape gradient vs finite differences); the recording rules (watching, what
is recorded, persistence, nesting, structures, errors) are checked one by one.
"""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from gradcheck import Case, check_case

R = np.random.default_rng(0)


def _fd(f, x, eps=1e-6):
    """Central differences of the scalar or array function f at x: shape f(x).shape + x.shape."""
    x = np.array(x, np.float64)
    y0 = np.asarray(f(x))
    out = np.zeros(y0.shape + x.shape)
    for idx in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        out[(Ellipsis,) + idx] = (np.asarray(f(xp)) - np.asarray(f(xm))) / (2 * eps)
    return out


def _build(fn, x0):
    """(graph, placeholder, target, tape) with target = fn(x) recorded on a persistent tape."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, x0.shape)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = fn(x)
    return g, x, y, tape


FNS = {
    "poly": (lambda x: tf.reduce_sum(x * x * x - 2.0 * x), (3,)),
    "matmul_tanh": (lambda x: tf.tanh(tf.matmul(x, tf.transpose(x))), (2, 3)),
    "softmax": (lambda x: tf.nn.softmax(x), (2, 4)),
    "exp_log": (lambda x: tf.log(1.0 + tf.exp(x)) * tf.sin(x), (5,)),
}


@pytest.mark.parametrize("name", sorted(FNS))
def test_gradient_and_jacobian_match_finite_differences(name):
    fn, shape = FNS[name]
    x0 = R.uniform(-1, 1, shape)
    g, x, y, tape = _build(fn, x0)
    with g.as_default():
        grad = tape.gradient(y, x)
        jac = tape.jacobian(y, x)
    with tf.Session(graph=g) as sess:
        f = lambda v: sess.run(y, {x: v})  # noqa: E731
        gv, jv = sess.run([grad, jac], {x: x0})
        num = _fd(f, x0)
    assert jv.shape == tuple(y.shape.as_list()) + shape
    np.testing.assert_allclose(jv, num, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gv, num.reshape((-1,) + shape).sum(0), rtol=1e-6, atol=1e-7)


def test_batch_jacobian_matches_finite_differences():
    x0 = R.uniform(-1, 1, (3, 4))
    w0 = R.uniform(-1, 1, (4, 2))
    g, x, y, tape = _build(lambda x: tf.sin(tf.matmul(x, w0)) * tf.reduce_sum(x, 1, keepdims=True), x0)
    with g.as_default():
        bj = tape.batch_jacobian(y, x)
    with tf.Session(graph=g) as sess:
        full = _fd(lambda v: sess.run(y, {x: v}), x0)  # [3, 2, 3, 4]
        bv = sess.run(bj, {x: x0})
    assert bv.shape == (3, 2, 4)
    np.testing.assert_allclose(bv, np.stack([full[i, :, i] for i in range(3)]), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("unroll", [True, False], ids=["unrolled", "while_loop"])
def test_jacobians_of_unknown_shapes(unroll, monkeypatch):
    # a batch of unknown size (and, unroll=False, any size) is differentiated row by row in a while loop
    import collflow.graph.gradient_tape as gt
    if not unroll:
        monkeypatch.setattr(gt, "_UNROLL", 0)
    x0 = R.uniform(-1, 1, (3, 4))
    w0 = R.uniform(-1, 1, (4, 2))
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [None, 4] if unroll else [3, 4])
        v = tf.Variable(w0)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = tf.sin(tf.matmul(x, v)) * tf.reduce_sum(x, 1, keepdims=True)
        jx, jv = t.jacobian(y, [x, v])
        bj = t.batch_jacobian(y, x)
        assert jx.shape.as_list() == ([None, 2, None, 4] if unroll else [3, 2, 3, 4])
        assert bj.shape.as_list() == [None if unroll else 3, 2, 4]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([jx, jv, bj], {x: x0})
            fx = _fd(lambda a: sess.run(y, {x: a}), x0)

            def with_w(w):
                v.load(w, sess)
                return sess.run(y, {x: x0})
            fv = _fd(with_w, w0)
    np.testing.assert_allclose(got[0], fx, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], fv, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[2], np.stack([fx[i, :, i] for i in range(3)]), rtol=1e-6, atol=1e-7)


def _tape_grad_case(op, fn, shapes, id_):
    def build(*xs):
        with tf.GradientTape() as t:
            t.watch(list(xs))
            y = fn(*xs)
        return t.gradient(y, list(xs))
    return Case(op, build, shapes, id=id_, rtol=1e-5, atol=1e-6)


GRADCHECK = [
    _tape_grad_case("Mul", lambda a, b: tf.reduce_sum(a * a * b), [(3,), (3,)], "tape_mul"),
    _tape_grad_case("Tanh", lambda a: tf.reduce_sum(tf.tanh(a) ** 2), [(2, 3)], "tape_tanh"),
    _tape_grad_case("MatMul", lambda a, b: tf.reduce_sum(tf.sigmoid(tf.matmul(a, b))), [(2, 3), (3, 2)],
                    "tape_matmul"),
]


@pytest.mark.parametrize("case", GRADCHECK, ids=str)
def test_tape_gradients_are_differentiable(case):
    # cf.gradients of the tape's gradient ops (second order) against finite differences of them
    check_case(case)


def test_second_order_nested_tapes_and_variables():
    with tf.Graph().as_default():
        v = tf.Variable(1.5, dtype=tf.float64)
        x = tf.constant(0.7, tf.float64)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = v * x * x * x
            dx, dv = inner.gradient(y, [x, v])
        d2x, d2xv = outer.gradient(dx, [x, v])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([dx, dv, d2x, d2xv])
    np.testing.assert_allclose(got, [3 * 1.5 * 0.49, 0.343, 6 * 1.5 * 0.7, 3 * 0.49], rtol=1e-12)


def _run(*ts):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(list(ts))


def test_watching_rules():
    with tf.Graph().as_default():
        x, y = tf.constant(1.5), tf.constant(2.0)
        before = x * 3.0
        v = tf.Variable(2.0)
        u = tf.Variable(3.0, trainable=False)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            z = x * y + before * 2.0 + v * u
            with t.stop_recording():
                s = x * 10.0
            zs = z + s
        gx, gy, gb, gv, gu = t.gradient(z, [x, y, before, v, u])
        assert gy is None and gb is None and gu is None  # unwatched tensor, op before the tape, non-trainable
        assert list(t.watched_variables()) == [v]
        gzs = t.gradient(zs, x)  # the stop_recording product is not differentiated through
        gz = t.gradient(z, z)  # a target w.r.t. itself: ones
        zero = t.gradient(z, y, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        np.testing.assert_allclose(_run(gx, gv, gzs, gz, zero), [2.0, 3.0, 2.0, 1.0, 0.0])
        # a tensor watched after it was used: what was built from it before is not recorded
        with tf.GradientTape() as t2:
            w = x * 4.0
            t2.watch(x)
            w2 = w * x
        assert t2.gradient(w2, x) is not None
        with tf.GradientTape() as t3:
            w = x * 4.0
            t3.watch(x)
        assert t3.gradient(w, x) is None
        # watch_accessed_variables=False: only explicitly watched variables
        with tf.GradientTape(watch_accessed_variables=False, persistent=True) as t4:
            a = v * 2.0
            t4.watch(u)
            b = u * 2.0
        assert t4.gradient(a, v) is None and t4.watched_variables() == (u,)
        assert _run(t4.gradient(b, u)) == [2.0]


def test_persistence_reset_and_recording_state(monkeypatch):
    with tf.Graph().as_default():
        x = tf.constant(3.0)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        t.gradient(y, x)
        with pytest.raises(RuntimeError, match="non-persistent GradientTape can only be used"):
            t.gradient(y, x)
        with pytest.raises(RuntimeError, match="not recording"):
            with t.stop_recording():
                pass
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
            t.reset()
            t.watch(x)
            z = y + x * 5.0
        assert _run(t.gradient(z, x)) == [5.0]  # y's product was forgotten by reset
        with tf.GradientTape() as t:
            with pytest.raises(ValueError, match="re-enter"):
                t.__enter__()
        with pytest.raises(ValueError, match="not recording"):
            t.reset()
        # a non-persistent tape's gradient inside its context stops the recording
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
            gr = t.gradient(y, x)
            after = gr * x
        assert _run(gr) == [6.0] and after is not None
        # a persistent one records its gradient ops (the gradient of the gradient), and warns once
        import collflow.graph.gradient_tape as gt
        warned = []
        monkeypatch.setattr(gt, "_WARNED", {"persistent": False})
        monkeypatch.setattr(gt._logging, "warning", lambda msg, *a: warned.append(msg))
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x * x
            gr = t.gradient(y, x)
            t.gradient(y, x)
        assert _run(gr, t.gradient(gr, x)) == [27.0, 18.0]
        assert len(warned) == 1 and "persistent tape inside its context" in warned[0]


def test_structures_output_gradients_and_indexed_slices():
    with tf.Graph().as_default():
        a, b = tf.constant([1.0, 2.0]), tf.constant(3.0)
        emb = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
        with tf.GradientTape(persistent=True) as t:
            t.watch([a, b])
            y1 = a * b
            y2 = tf.reduce_sum(a * a)
            rows = tf.gather(emb, [2, 0, 2])
            e = tf.reduce_sum(rows * 2.0)
        g = t.gradient({"p": y1, "q": [y2]}, {"a": a, "bs": (b, [a])})
        assert set(g) == {"a", "bs"} and isinstance(g["bs"], tuple) and isinstance(g["bs"][1], list)
        og = t.gradient([y1, y2], [a, b], output_gradients=[tf.constant([1.0, 10.0]), tf.constant(2.0)])
        ge = t.gradient(e, emb)
        assert isinstance(ge, tf.IndexedSlices)
        got = _run(g["a"], g["bs"][0], g["bs"][1][0], og[0], og[1], tf.convert_to_tensor(ge))
    np.testing.assert_allclose(got[0], [5.0, 7.0])  # b + 2a
    assert got[1] == 3.0
    np.testing.assert_allclose(got[3], [3 + 4.0, 30 + 8.0])
    assert got[4] == 21.0
    np.testing.assert_allclose(got[5], [[2, 2], [0, 0], [4, 4]])


def test_jacobian_unconnected_and_variables():
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        y = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        v = tf.Variable([1.0, 2.0, 3.0])
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            z = x * x
            s = tf.gather(v, [0, 2]) * 2.0
        assert t.jacobian(z, y) is None
        jz = t.jacobian(z, y, unconnected_gradients="zero")
        bz = t.batch_jacobian(z, y)  # zeros, as TensorFlow's
        jv = t.jacobian(s, v)
        jx, jn = t.jacobian(z, [x, y])
        assert jn is None
        got = _run(jz, bz, jv, jx)
    assert got[0].shape == (2, 2, 2, 2) and not got[0].any()
    assert got[1].shape == (2, 2, 2) and not got[1].any()
    np.testing.assert_allclose(got[2], [[2, 0, 0], [0, 0, 2]])
    np.testing.assert_allclose(got[3].reshape(4, 4), np.diag([2.0, 4, 6, 8]))


def test_errors():
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0]])
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
            with pytest.raises(ValueError, match="not tf.Tensor or tf.Variable"):
                t.watch(3.0)
        with pytest.raises(TypeError, match="received None"):
            t.gradient(None, x)
        with pytest.raises(TypeError, match="source must be a Tensor or Variable"):
            t.gradient(y, 3.0)
        with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
            t.gradient(y, x, unconnected_gradients="bogus")
        with pytest.raises(ValueError, match="rank at least 2"):
            t.batch_jacobian(y, tf.constant([1.0]))
        with pytest.raises(ValueError, match="Need first dimension"):
            t.batch_jacobian(y, tf.constant([[1.0], [2.0]]))
        with pytest.raises(RuntimeError, match="not active"):
            tf.GradientTape().watch(x)
        with pytest.raises(RuntimeError, match="non-persistent"):
            tf.GradientTape().gradient(y, x)


def test_cond_inside_tape():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.cond(x > 0, lambda: x * x, lambda: -3.0 * x)
        gr = t.gradient(y, x)
        with tf.Session() as sess:
            assert sess.run(gr, {x: 2.0}) == 4.0 and sess.run(gr, {x: -1.0}) == -3.0


def test_while_loop_inside_tape():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [])
        with tf.GradientTape() as t:
            t.watch(x)
            _, a, b = tf.while_loop(lambda i, a, b: i < 3, lambda i, a, b: (i + 1, b, b * x),
                                    [0, tf.constant(1.0, tf.float64), tf.constant(1.0, tf.float64)])
            post = a * 2.0 + b  # 2 x^2 + x^3
        gr = t.gradient(post, x)
        with tf.Session() as sess:
            got = sess.run(gr, {x: 1.3})
            num = _fd(lambda v: sess.run(post, {x: v}), np.array(1.3))
    np.testing.assert_allclose(got, num, rtol=1e-6)
    np.testing.assert_allclose(got, 4 * 1.3 + 3 * 1.3 ** 2, rtol=1e-12)


# -- TensorSpec & co. -----------------------------------------------------------------------------

def test_tensor_spec():
    a = tf.TensorSpec([2, 3], tf.float32, "a")
    b = tf.TensorSpec([2, None], name="a")
    assert a.shape.as_list() == [2, 3] and a.dtype == tf.float32 and a.name == "a"
    assert repr(a) == "TensorSpec(shape=(2, 3), dtype=tf.float32, name='a')"
    assert repr(tf.TensorSpec(None)) == "TensorSpec(shape=<unknown>, dtype=tf.float32, name=None)"
    assert a == tf.TensorSpec([2, 3], tf.float32, "a") and hash(a) == hash(tf.TensorSpec([2, 3], name="a"))
    assert a != tf.TensorSpec([2, 3]) and a != b
    assert b.is_compatible_with(a) and a.is_compatible_with(b)
    assert not a.is_compatible_with(tf.TensorSpec([2, 3], tf.int32))
    assert not a.is_compatible_with(np.zeros((2, 3), np.float32))  # TF: specs and tensors only
    assert a.most_specific_compatible_type(b) == b
    assert a.most_specific_compatible_type(tf.TensorSpec([2], name="a")) == tf.TensorSpec(None, name="a")
    for other in (tf.TensorSpec([2, 3], tf.int32, "a"), tf.TensorSpec([2, 3])):
        with pytest.raises(ValueError, match="No TypeSpec is compatible"):
            a.most_specific_compatible_type(other)
    assert isinstance(a, tf.TypeSpec) and a.value_type is tf.Tensor
    with pytest.raises(TypeError):
        tf.TensorSpec([2], "nope")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="xx")
        assert tf.TensorSpec.from_tensor(x) == tf.TensorSpec([None, 3], name="xx")
        assert tf.TensorSpec.from_spec(a, name="q") == tf.TensorSpec([2, 3], name="q")
        assert tf.type_spec_from_value(x) == tf.TensorSpec([None, 3])
        assert tf.TensorSpec([5, 3]).is_compatible_with(x)


def test_sparse_ragged_specs_and_type_spec_from_value():
    s = tf.SparseTensorSpec([2, 3], tf.float32)
    assert repr(s) == "SparseTensorSpec(TensorShape([2, 3]), tf.float32)"
    assert s == tf.SparseTensorSpec([2, 3]) and s != tf.TensorSpec([2, 3])
    assert s.most_specific_compatible_type(tf.SparseTensorSpec([2, 4])) == tf.SparseTensorSpec([2, None])
    r = tf.RaggedTensorSpec([2, None], tf.float32)
    assert r.ragged_rank == 1 and r.row_splits_dtype == tf.int64
    assert repr(r) == "RaggedTensorSpec(TensorShape([2, None]), tf.float32, 1, tf.int64)"
    with tf.Graph().as_default():
        sp = tf.SparseTensor([[0, 1]], [1.0], [2, 3])
        assert tf.type_spec_from_value(sp) == s and s.is_compatible_with(sp)
        rt = tf.ragged.constant([[1.0, 2.0], [3.0]])
        assert tf.type_spec_from_value(rt) == r
        assert tf.type_spec_from_value(np.zeros((2, 3))) == tf.TensorSpec([2, 3], tf.float64)
        assert tf.type_spec_from_value([1, 2]) == tf.TensorSpec([2], tf.int32)
        with pytest.raises(TypeError, match="Could not build a TypeSpec"):
            tf.type_spec_from_value(object())
        # a dataset's element_spec is made of the same TensorSpecs
        ds = tf.data.Dataset.from_tensor_slices(np.zeros((4, 3), np.float32))
        assert ds.element_spec == tf.TensorSpec([3], tf.float32)


# -- variable_creator_scope ------------------------------------------------------------------------

def test_variable_creator_scope():
    seen = []

    def outer(next_creator, **kwargs):
        seen.append(("outer", kwargs["name"]))
        kwargs["name"] = "renamed"
        return next_creator(**kwargs)

    def inner(next_creator, **kwargs):
        seen.append(("inner", sorted(kwargs), kwargs["trainable"], kwargs["initial_value"]))
        kwargs["trainable"] = False
        return next_creator(**kwargs)

    with tf.Graph().as_default():
        with tf.variable_creator_scope(outer):
            with tf.variable_creator_scope(inner):
                v = tf.Variable(1.0, name="a")
            w = tf.get_variable("w", [2])
        plain = tf.Variable(2.0, name="p")
        assert v.name == "renamed:0" and not v.trainable
        assert w.name == "renamed_1:0" and w.trainable
        assert plain.name == "p:0"
        assert tf.trainable_variables() == [w, plain]
    assert seen[0] == ("inner", ["aggregation", "caching_device", "collections", "constraint", "dtype",
                                 "expected_shape", "import_scope", "initial_value", "name", "shape",
                                 "synchronization", "trainable", "use_resource", "validate_shape", "variable_def"],
                       None, 1.0)
    assert seen[1] == ("outer", "a") and seen[2] == ("outer", "w")

    def replace(next_creator, **kwargs):
        return "not a variable"
    with tf.Graph().as_default(), tf.variable_creator_scope(replace):
        assert tf.Variable(1.0) == "not a variable"
