"""Strings at the user boundary (docs/tf1_compat.md, "Strings"): collflow holds str inside and
hands bytes out where TF1 does (Session.run, eval, make_callable, py_func arguments,
from_generator args, get_static_value, make_ndarray), while its own consumers of fetched
strings (Keras's initialisation, Supervisor, FileWriter.add_summary, iterator state, freezing)
keep working."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.dtypes import user_strings

RAW = b"a\xff\x00\x80"  # not UTF-8: kept as surrogates inside, the same bytes outside


def test_fetches_are_bytes_scalars_and_object_arrays():
    with tf.Graph().as_default():
        c = tf.constant([[RAW, b"x"], [b"", "\u00e9"]])
        s = tf.constant("ab")
        n = tf.constant([1.5, 2.0])
        with tf.Session() as sess:
            got_c, got_s, got_n = sess.run([c, s, n])
            assert got_c.dtype == object and got_c.shape == (2, 2)
            assert got_c.tolist() == [[RAW, b"x"], [b"", "\u00e9".encode()]]
            assert type(got_s) is bytes and got_s == b"ab"
            assert got_n.dtype == np.float32  # non-strings as before
            assert s.eval() == b"ab" and sess.make_callable(c)().tolist() == got_c.tolist()
            assert tf.strings.join([c[0, 0], "!"]).eval() == RAW + b"!"
            empty = sess.run(tf.constant(np.zeros((0, 3), object), tf.string))
            assert empty.shape == (0, 3) and empty.dtype == object
            # a fed string tensor fetched: the fed strings as bytes, a scalar a 0-d array
            p = tf.placeholder(tf.string, [None])
            q = tf.placeholder(tf.string, [])
            got_p, got_q = sess.run([p, q], {p: [RAW, "y"], q: "z"})
            assert got_p.tolist() == [RAW, b"y"] and got_q.shape == () and got_q.item() == b"z"


def test_user_strings_converts_a_new_array_and_leaves_others():
    a = np.array(["q", "\udcff"], dtype=object)
    out = user_strings(a)
    assert out.tolist() == [b"q", b"\xff"] and a.tolist() == ["q", "\udcff"]  # the input untouched
    h = np.empty(2, object)
    h[0], h[1] = (1, 2), "s"  # non-strings (a handle, say) pass through, nothing broadcast
    assert user_strings(h).tolist() == [(1, 2), b"s"]
    f = np.ones(3)
    assert user_strings(f) is f and user_strings(5) == 5


def test_py_func_gets_bytes_and_may_return_str_or_bytes():
    seen = []

    def f(x, y):
        seen.append((x, y))
        return x, "z"

    with tf.Graph().as_default():
        a, b = tf.py_func(f, [tf.constant([RAW, b"k"]), tf.constant("s")], [tf.string, tf.string])
        n = tf.numpy_function(lambda x: x + b"?", [tf.constant("v")], tf.string)
        joined = tf.strings.join([a, b])  # the returned values are ordinary strings inside
        with tf.Session() as sess:
            got_a, got_b, got_j, got_n = sess.run([a, b, joined, n])
    x, y = seen[0]
    assert isinstance(x, np.ndarray) and x.tolist() == [RAW, b"k"] and y == b"s"
    assert got_a.tolist() == [RAW, b"k"] and got_b == b"z" and got_n == b"v?"
    assert got_j.tolist() == [RAW + b"z", b"kz"]


def test_from_generator_yields_str_or_bytes_and_gets_bytes_args():
    args = []

    def gen(name):
        args.append(name)
        yield RAW
        yield "t"

    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_generator(gen, tf.string, tf.TensorShape([]), args=["file"])
        ds = ds.map(lambda s: tf.strings.join([s, tf.strings.substr(s, 0, 1)]))
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        with tf.Session() as sess:
            assert [sess.run(nxt), sess.run(nxt)] == [RAW + b"a", b"tt"]
    assert args == [b"file"]


def test_static_values_are_bytes():
    with tf.Graph().as_default():
        v = tf.get_static_value(tf.constant(["a", "b"]))
        assert v.dtype == object and v.tolist() == [b"a", b"b"]
        assert tf.get_static_value(tf.constant("q")).item() == b"q"
        assert tf.make_ndarray(tf.make_tensor_proto(["a"])).tolist() == [b"a"]


def test_collflow_consumers_of_fetched_strings(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable(1.0, name="w")
        merged = tf.summary.scalar("loss", tf.constant(2.0))
        with tf.Session() as sess:
            names = sess.run(tf.report_uninitialized_variables())
            assert names.tolist() == [b"w"]
            serialized = sess.run(merged)
            assert isinstance(serialized, bytes)
            writer = tf.summary.FileWriter(str(tmp_path))
            writer.add_summary(serialized, 1)  # the bytes a summary op returns
            writer.add_summary(serialized.decode("utf-8", "surrogateescape"), 2)  # and collflow's str
            writer.close()
            sess.run(w.initializer)
    from collflow.keras import backend as K
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="kv")
        with tf.Session().as_default():
            assert K.get_value(v).tolist() == [1.0, 2.0]  # initialised by Keras from the names


def test_supervisor_reports_names_as_text():
    from collflow.data.supervisor import SessionManager
    with tf.Graph().as_default():
        tf.Variable(1.0, name="unset")
        with tf.Session() as sess:
            msg = SessionManager()._not_ready(sess, tf.report_uninitialized_variables())
    assert msg == "Variables not initialized: unset"


def test_freezing_a_string_variable_keeps_its_bytes():
    from collflow.train import graph_util
    with tf.Graph().as_default() as g:
        v = tf.Variable(tf.constant([RAW, b"x"]), name="sv")
        out = tf.identity(v, name="out")
        with tf.Session() as sess:
            sess.run(v.initializer)
            frozen = graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["out"])
    with tf.Graph().as_default():
        (t,) = tf.import_graph_def(frozen, return_elements=["out:0"])
        with tf.Session() as sess:
            assert sess.run(t).tolist() == [RAW, b"x"]
    assert out is not None


@pytest.mark.parametrize("n", [1, 100000])
def test_large_string_fetches(n):
    with tf.Graph().as_default():
        c = tf.tile(tf.constant(["ab"]), [n])
        with tf.Session() as sess:
            got = sess.run(c)
    assert got.shape == (n,) and got[0] == b"ab" and got[-1] == b"ab"
