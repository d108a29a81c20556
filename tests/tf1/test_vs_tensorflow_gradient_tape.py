"""tf.GradientTape in graph mode, tf.TensorSpec & co. and tf.variable_creator_scope against
TensorFlow's compat.v1 graph mode: each case builds the same graph in both, runs it, and
compares the structure of the results, which entries are None (or IndexedSlices), and the
values (rtol/atol 1e-5); error cases compare the exception types.  Skipped cleanly without
TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

_R = np.random.RandomState(3)
X22 = _R.uniform(-1, 1, (2, 2)).astype(np.float32)
X23 = _R.uniform(-1, 1, (2, 3)).astype(np.float32)
W32 = _R.uniform(-1, 1, (3, 2)).astype(np.float32)
EMB = _R.uniform(-1, 1, (4, 3)).astype(np.float32)
X58 = _R.uniform(-1, 1, (5, 8)).astype(np.float32)


def _leaves(out, tf, path=()):
    """(path, leaf) pairs of a nested result; IndexedSlices are marked and densified."""
    if isinstance(out, dict):
        for k in sorted(out):
            yield from _leaves(out[k], tf, path + (k,))
    elif isinstance(out, (list, tuple)):
        yield path + (type(out).__name__, len(out)), "struct"
        for i, o in enumerate(out):
            yield from _leaves(o, tf, path + (i,))
    elif isinstance(out, tf.IndexedSlices):
        yield path + ("IndexedSlices",), tf.convert_to_tensor(out)
    else:
        yield path, out


def _evaluate(tf, build):
    g = tf.Graph()
    with g.as_default():
        out = build(tf)
        items = list(_leaves(out, tf))
        tensors = [v for _, v in items if isinstance(v, (tf.Tensor, tf.Variable))]
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            vals = iter(sess.run(tensors))
    return [(p, next(vals) if isinstance(v, (tf.Tensor, tf.Variable)) else v) for p, v in items]


def _compare(build):
    want, got = _evaluate(tft, build), _evaluate(cft, build)
    assert [p for p, _ in got] == [p for p, _ in want], "result structures differ"
    for (p, w), (_, c) in zip(want, got):
        if w is None or c is None or isinstance(w, str):
            assert c == w, f"{p}: TensorFlow gives {w!r}, collflow {c!r}"
        else:
            np.testing.assert_allclose(np.asarray(c), np.asarray(w), rtol=1e-5, atol=1e-5, err_msg=str(p))
            assert np.shape(c) == np.shape(w), p


# -- the cases: build(tf) -> nested results ----------------------------------------------------

def watch_tensor(tf):
    x, y = tf.constant(X22), tf.constant(X22 * 2)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        z = tf.reduce_sum(tf.sin(x) * y)
    return t.gradient(z, [x, y])


def watch_after_use(tf):
    x = tf.constant(X22)
    with tf.GradientTape(persistent=True) as t:
        w = x * 3.0
        t.watch(x)
        z = w * x
    return [t.gradient(z, x), t.gradient(w, x)]


def variables_auto_watched(tf):
    v = tf.Variable(X23)
    u = tf.Variable(W32, trainable=False)
    with tf.GradientTape() as t:
        z = tf.reduce_sum(tf.tanh(tf.matmul(v, u)))
    gv, gu = t.gradient(z, [v, u])
    return [gv, gu, [w.name for w in t.watched_variables()]]


def no_auto_watch(tf):
    v = tf.Variable(X23)
    u = tf.Variable(X23 * 2, trainable=False)
    with tf.GradientTape(watch_accessed_variables=False, persistent=True) as t:
        t.watch(u)
        z = tf.reduce_sum(v * u * u)
    return [t.gradient(z, [v, u]), [w.name for w in t.watched_variables()]]


def get_variable_in_tape(tf):
    with tf.variable_scope("layer"):
        w = tf.get_variable("w", initializer=tf.constant(W32))
        b = tf.get_variable("b", initializer=tf.constant([0.1, -0.2]))
    x = tf.constant(X23)
    with tf.GradientTape() as t:
        loss = tf.reduce_mean(tf.square(tf.nn.relu(tf.matmul(x, w) + b)))
    return t.gradient(loss, [w, b])


def before_tape(tf):
    x = tf.constant(X22)
    v = tf.Variable(X22)
    pre = v * x
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        z = pre * x + v
    return t.gradient(z, [x, v, pre])


def stop_recording(tf):
    x = tf.constant(X22)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
        with t.stop_recording():
            s = tf.exp(x)
        z = tf.reduce_sum(y * s)
    return t.gradient(z, x)


def persistent_many(tf):
    x = tf.constant(X22)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = y * y
    return [t.gradient(z, x), t.gradient(y, x), t.gradient(z, y)]


def nested_second_order(tf):
    x = tf.constant(X22)
    v = tf.Variable(1.5)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(v * x * x * x)
        dx = inner.gradient(y, x)
    return [dx, outer.gradient(dx, [x, v])]


def nested_third_order(tf):
    x = tf.constant(0.7)
    with tf.GradientTape() as t1:
        t1.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t3:
                t3.watch(x)
                y = tf.sin(x) * x
            d1 = t3.gradient(y, x)
        d2 = t2.gradient(d1, x)
    return [d1, d2, t1.gradient(d2, x)]


def structures(tf):
    a, b = tf.constant(X22), tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch([a, b])
        y1 = a * b
        y2 = tf.reduce_sum(a * a)
    return t.gradient({"p": y1, "q": [y2, (y1,)]}, {"a": a, "bs": (b, [a, b])})


def target_list_sums(tf):
    a = tf.constant(X22)
    with tf.GradientTape() as t:
        t.watch(a)
        ys = [a * 2.0, tf.exp(a), tf.reduce_sum(a)]
    return t.gradient(ys, a)


def output_gradients(tf):
    a = tf.constant(X22)
    with tf.GradientTape() as t:
        t.watch(a)
        y1, y2 = a * a, tf.reduce_sum(a)
    return t.gradient([y1, y2], a, output_gradients=[tf.constant(X22 * 3), tf.constant(0.5)])


def unconnected_zero(tf):
    a, c = tf.constant(X22), tf.constant(X23)
    v = tf.Variable(W32)
    with tf.GradientTape() as t:
        t.watch(a)
        y = a * 2.0
    return t.gradient(y, [a, c, v], unconnected_gradients=tf.UnconnectedGradients.ZERO)


def gather_indexed_slices(tf):
    emb = tf.Variable(EMB)
    with tf.GradientTape() as t:
        rows = tf.gather(emb, [3, 0, 3])
        z = tf.reduce_sum(rows * rows)
    return t.gradient(z, emb)


def jacobian_matrix(tf):
    x = tf.constant(X23)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.tanh(tf.matmul(x, tf.constant(W32)))
    return t.jacobian(y, x)


def jacobian_sources(tf):
    x, c = tf.constant(X22), tf.constant(X22)
    v = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x + tf.reduce_sum(v)
    return [t.jacobian(y, [x, c, v]), t.jacobian(y, {"c": c}, unconnected_gradients="zero")]


def jacobian_gather(tf):
    v = tf.Variable(EMB)
    with tf.GradientTape() as t:
        s = tf.gather(v, [2, 0]) * 2.0
    return t.jacobian(s, v)


def batch_jacobian(tf):
    x = tf.constant(X23)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tf.sin(tf.matmul(x, tf.constant(W32))) * tf.reduce_sum(x, 1, keepdims=True)
        y3 = tf.reshape(tf.concat([y, y * y], 1), [2, 2, 2])
    return [t.batch_jacobian(y, x), t.batch_jacobian(y3, x)]


def jacobians_unknown_batch(tf):
    x = tf.placeholder_with_default(X23, [None, 3])
    v = tf.Variable(W32)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tf.tanh(tf.matmul(x, v)) * x[:, :1]
    return [t.jacobian(y, [x, v]), t.batch_jacobian(y, x), t.batch_jacobian(y, tf.zeros_like(x))]


def jacobian_large(tf):
    x = tf.constant(X58)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.nn.softmax(x * x)
    return t.jacobian(y, x)


def batch_jacobian_unconnected(tf):
    x, c = tf.constant(X23), tf.constant(X23)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
    return [t.batch_jacobian(y, c), t.batch_jacobian(y, c, unconnected_gradients="zero")]


def reset(tf):
    x = tf.constant(X22)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
        t.reset()
        t.watch(x)
        z = y * x
    return t.gradient(z, x)


def gradient_in_context(tf):
    x = tf.constant(X22)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(x * x * x)
        g = t.gradient(y, x)
        after = g * x
    with tf.GradientTape(persistent=True) as p:
        p.watch(x)
        y = tf.reduce_sum(x * x * x)
        g2 = p.gradient(y, x)
    return [g, after, g2, p.gradient(g2, x)]


def cond_in_tape(tf):
    x = tf.constant(X22)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.cond(tf.reduce_sum(x) > -10.0, lambda: x * x, lambda: -x)
    return t.gradient(y, x)


def while_loop_in_tape(tf):
    x = tf.constant(1.3)
    with tf.GradientTape() as t:
        t.watch(x)
        _, a = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x + 0.5), [0, tf.constant(1.0)])
        post = a * 2.0
    # (TensorFlow's control flow v2 gets a loop that shifts values between loop variables
    # wrong, 14.5 instead of 10.27 for tests/test_gradient_tape.py's loop; this one it gets right)
    return t.gradient(post, x)


def watch_through_int(tf):
    x = tf.constant(X22 * 3)
    with tf.GradientTape() as t:
        t.watch(x)
        z = tf.cast(tf.cast(x, tf.int32), tf.float32) * x
    return t.gradient(z, x)


def variable_made_in_tape(tf):
    x = tf.constant(X23)
    with tf.GradientTape() as t:
        v = tf.Variable(W32, name="made_inside")
        y = tf.reduce_sum(tf.matmul(x, v.read_value()) ** 2)
    return [t.gradient(y, v), [w.name for w in t.watched_variables()]]


def custom_and_stop_gradient(tf):
    @tf.custom_gradient
    def clip_grad(a):
        return tf.identity(a), lambda dy: tf.clip_by_value(dy, -0.5, 0.5)

    x = tf.constant(X22)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tf.reduce_sum(clip_grad(x * 3.0) * x)
        z = tf.reduce_sum(tf.stop_gradient(x * x) * x)
    return [t.gradient(y, x), t.gradient(z, x), t.gradient(tf.stop_gradient(y), x)]


def two_tapes(tf):
    x, y = tf.constant(X22), tf.constant(X22 * 2)
    t1, t2 = tf.GradientTape(persistent=True), tf.GradientTape(persistent=True)
    with t1:
        t1.watch(x)
        with t2:
            t2.watch(y)
            z = x * y
        w = z * x
    return [t1.gradient(w, [x, y]), t2.gradient(w, [x, y]), t2.gradient(z, [x, y])]


def int_and_intermediate_sources(tf):
    x = tf.constant(X22)
    k = tf.constant([1, 2])
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, k])
        h = tf.exp(x)
        y = tf.reduce_sum(h * tf.cast(tf.reduce_sum(k), tf.float32))
    return t.gradient(y, [k, h, x])


CASES = [watch_tensor, watch_after_use, variables_auto_watched, no_auto_watch, get_variable_in_tape, before_tape,
         stop_recording, persistent_many, nested_second_order, nested_third_order, structures, target_list_sums,
         output_gradients, unconnected_zero, gather_indexed_slices, jacobian_matrix, jacobian_sources,
         jacobian_gather, batch_jacobian, jacobians_unknown_batch, jacobian_large, batch_jacobian_unconnected, reset,
         gradient_in_context, cond_in_tape, while_loop_in_tape, watch_through_int, variable_made_in_tape,
         custom_and_stop_gradient, two_tapes, int_and_intermediate_sources]


@pytest.mark.parametrize("build", CASES, ids=lambda f: f.__name__)
def test_tape_matches_tensorflow(build):
    _compare(build)


# -- errors: the same call fails in both, with the same exception type ---------------------------

def _spent(tf):
    x = tf.constant(1.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    t.gradient(y, x)
    return t, x, y


def _persistent(tf):
    x = tf.constant([[1.0, 2.0]])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
    return t, x, y


def _exited(tf):
    with tf.GradientTape() as t:
        pass
    return t


def _reenter(tf):
    with tf.GradientTape() as t:
        t.__enter__()


ERRORS = {
    "second_gradient": lambda tf: (lambda t, x, y: t.gradient(y, x))(*_spent(tf)),
    "jacobian_after_spent": lambda tf: (lambda t, x, y: t.jacobian(y, x))(*_spent(tf)),
    "stop_recording_spent": lambda tf: _spent(tf)[0].stop_recording().__enter__(),
    "reset_spent": lambda tf: _spent(tf)[0].reset(),
    "stop_recording_exited": lambda tf: _exited(tf).stop_recording().__enter__(),
    "reset_exited": lambda tf: _exited(tf).reset(),
    "reenter": _reenter,
    "never_entered": lambda tf: tf.GradientTape().gradient(tf.constant(1.0), tf.constant(1.0)),
    "target_none": lambda tf: (lambda t, x, y: t.gradient(None, x))(*_persistent(tf)),
    "bad_unconnected": lambda tf: (lambda t, x, y: t.gradient(y, x, unconnected_gradients="bogus"))(*_persistent(tf)),
    "batch_jacobian_rank": lambda tf: (lambda t, x, y: t.batch_jacobian(y, tf.constant([1.0])))(*_persistent(tf)),
    "batch_jacobian_batch": lambda tf: (lambda t, x, y: t.batch_jacobian(y, tf.constant([[1.0], [2.0]])))(
        *_persistent(tf)),
    "tensor_spec_dtype": lambda tf: tf.TensorSpec([2], "nope"),
    "tensor_spec_shape": lambda tf: tf.TensorSpec("x"),
    "spec_names": lambda tf: tf.TensorSpec([2, 3], name="a").most_specific_compatible_type(tf.TensorSpec([2])),
    "spec_dtypes": lambda tf: tf.TensorSpec([2]).most_specific_compatible_type(tf.TensorSpec([2], tf.int32)),
    "type_spec_object": lambda tf: tf.type_spec_from_value(object()),
}


def _watch_bad(tf):
    with tf.GradientTape() as t:
        t.watch(3.0)


ERRORS["watch_not_tensor"] = _watch_bad
# deliberate differences: TensorFlow's AttributeError from inside its implementation, collflow a
# RuntimeError/TypeError that says what is wrong
DIFFERENT = {"watch_unentered": ("AttributeError", "RuntimeError"), "bad_source": ("AttributeError", "TypeError")}
ERRORS["watch_unentered"] = lambda tf: tf.GradientTape().watch(tf.constant(1.0))
ERRORS["bad_source"] = lambda tf: (lambda t, x, y: t.gradient(y, 3.0))(*_persistent(tf))


def _error_of(tf, fn):
    with tf.Graph().as_default():
        try:
            fn(tf)
        except Exception as e:  # noqa: BLE001  (the type is what is compared)
            return type(e).__name__
    return None


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_tensorflow(name):
    want, got = _error_of(tft, ERRORS[name]), _error_of(cft, ERRORS[name])
    assert want is not None and got is not None, (want, got)
    assert (want, got) == DIFFERENT.get(name, (want, want))


# -- TensorSpec & co. -----------------------------------------------------------------------------

def _spec_facts(tf):
    a = tf.TensorSpec([2, 3], tf.float32, "a")
    b = tf.TensorSpec([2, None], name="a")
    c = tf.TensorSpec(None, tf.int32)
    s1, s2 = tf.SparseTensorSpec([2, 3]), tf.SparseTensorSpec([None, 3], tf.float32)
    r1, r2 = tf.RaggedTensorSpec([2, None]), tf.RaggedTensorSpec([3, None, 2], tf.int32, ragged_rank=1)
    specs = [a, b, c, tf.TensorSpec([]), s1, s2, r1, r2]
    facts = [repr(s) for s in specs]
    facts += [[x == y for y in specs] for x in specs]
    facts += [[x.is_compatible_with(y) for y in specs] for x in specs]
    facts += [hash(a) == hash(tf.TensorSpec([2, 3], name="a")), repr(a.most_specific_compatible_type(b)),
              repr(tf.TensorSpec([2, 3]).most_specific_compatible_type(tf.TensorSpec([2]))),
              repr(r1.most_specific_compatible_type(tf.RaggedTensorSpec([2, None, 3], ragged_rank=1))),
              repr(s1.most_specific_compatible_type(s2)), repr(r1.most_specific_compatible_type(r1)),
              r2.ragged_rank, r1.ragged_rank, repr(r2.row_splits_dtype.name)]
    facts += [a.is_compatible_with(np.zeros((2, 3), np.float32)), a.is_compatible_with(np.zeros((2, 3))),
              a.is_compatible_with(3), b.is_compatible_with(tf.zeros([2, 7]))]
    x = tf.placeholder(tf.float32, [None, 3], name="xx")
    sp = tf.SparseTensor([[0, 1]], [1.0], [2, 3])
    rt = tf.ragged.constant([[1.0, 2.0], [3.0]])
    facts += [repr(tf.TensorSpec.from_tensor(x)), repr(tf.TensorSpec.from_tensor(x, name="n")),
              repr(tf.TensorSpec.from_spec(a)), repr(tf.TensorSpec.from_spec(a, name="q"))]
    facts += [repr(tf.type_spec_from_value(v)) for v in
              (x, sp, rt, np.zeros((2, 3)), np.zeros(4, np.int64), [1, 2], 2.5, [[1.0, 2.0]], "s")]
    facts += [s1.is_compatible_with(sp), a.is_compatible_with(sp), r1.is_compatible_with(rt),
              issubclass(tf.TensorSpec, tf.TypeSpec), isinstance(s1, tf.TypeSpec), isinstance(r1, tf.TypeSpec)]
    return facts


def test_type_specs_match_tensorflow():
    with tft.Graph().as_default():
        want = _spec_facts(tft)
    with cft.Graph().as_default():
        got = _spec_facts(cft)
    assert len(got) == len(want)
    for i, (w, c) in enumerate(zip(want, got)):
        assert c == w, f"fact {i}: TensorFlow {w!r}, collflow {c!r}"


# -- variable_creator_scope --------------------------------------------------------------------------

def _creator_trace(tf):
    seen = []

    def outer(next_creator, **kwargs):
        seen.append(("outer", kwargs["name"], kwargs["trainable"]))
        kwargs["name"] = "renamed"
        return next_creator(**kwargs)

    def inner(next_creator, **kwargs):
        keys = sorted(k for k in kwargs if k != "experimental_enable_variable_lifting")  # TF 2's addition
        dtype = kwargs["dtype"]
        seen.append(("inner", keys, kwargs["trainable"], dtype and dtype.name, kwargs["collections"]))
        if kwargs["name"] == "frozen":
            kwargs["trainable"] = False
        return next_creator(**kwargs)

    with tf.variable_creator_scope(outer):
        with tf.variable_creator_scope(inner):
            v = tf.Variable(1.0, name="a")
            f = tf.Variable(1.0, name="frozen", dtype=tf.float32)
        with tf.variable_scope("s"):
            w = tf.get_variable("w", [2], initializer=tf.zeros_initializer())
    plain = tf.Variable(2.0, name="p")
    return seen, [x.name for x in (v, f, w, plain)], [x.name for x in tf.trainable_variables()]


def test_variable_creator_scope_matches_tensorflow():
    with tft.Graph().as_default():
        want = _creator_trace(tft)
    with cft.Graph().as_default():
        got = _creator_trace(cft)
    assert got == want
