"""TF1 names real programs use beyond the ops: tf.gfile / tf.io.gfile, shape dimensions with
`.value`, tf.gradients' full signature, the initialization helpers, tf.VERSION - each with
TF1's documented behaviour stated."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf


# -- tf.gfile ----------------------------------------------------------------------------------


def test_gfile_round_trip_and_listing(tmp_path):
    d = str(tmp_path / "a" / "b")
    tf.gfile.MakeDirs(d)
    tf.gfile.MakeDirs(d)  # an existing directory is fine
    assert tf.gfile.IsDirectory(d) and tf.gfile.Exists(d)
    f = os.path.join(d, "x.txt")
    with tf.gfile.GFile(f, "w") as fh:
        fh.write("one\n")
        fh.write(b"two\n")  # TF's GFile writes bytes too
    with tf.gfile.GFile(f) as fh:
        assert fh.read() == "one\ntwo\n"
    with tf.gfile.Open(f, "rb") as fh:
        assert fh.readline() == b"one\n"
        assert fh.tell() == 4
        fh.seek(0)
        assert list(fh) == [b"one\n", b"two\n"]
        assert fh.size() == 8
    assert tf.gfile.FastGFile(f, "r").readlines() == ["one\n", "two\n"]
    assert tf.gfile.ListDirectory(d) == ["x.txt"]
    assert tf.gfile.Glob(os.path.join(d, "*.txt")) == [f]
    st = tf.gfile.Stat(f)
    assert st.length == 8 and not st.is_directory and st.mtime_nsec > 0
    tf.gfile.Copy(f, f + ".bak")
    tf.gfile.Rename(f + ".bak", f + ".old")
    assert sorted(tf.gfile.ListDirectory(d)) == ["x.txt", "x.txt.old"]
    walked = list(tf.gfile.Walk(str(tmp_path)))
    assert walked[0][0] == str(tmp_path) and walked[0][1] == ["a"]
    # tf.io.gfile: TF2's names for the same
    assert tf.io.gfile.exists(f) and tf.io.gfile.isdir(d) and tf.io.gfile.listdir(d)
    tf.gfile.DeleteRecursively(str(tmp_path / "a"))
    assert not tf.gfile.Exists(d)


def test_gfile_errors_are_tensorflows(tmp_path):
    f = str(tmp_path / "f")
    open(f, "w").close()
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Remove(f + "-missing")
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.GFile(f + "-missing")
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.ListDirectory(str(tmp_path / "nope"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Stat(f + "-missing")
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.MkDir(str(tmp_path))
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.MkDir(str(tmp_path / "no" / "parent"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Copy(f, f)  # overwrite=False
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Rename(f, f)
    with pytest.raises(tf.errors.UnimplementedError, match="only local files"):
        tf.gfile.Exists("gs://bucket/x")
    with pytest.raises(tf.errors.InvalidArgumentError, match="mode"):  # TF: InvalidArgumentError
        tf.gfile.GFile(f, "x")


def test_io_gfile_walk_and_join(tmp_path):
    os.makedirs(tmp_path / "a" / "b")
    (tmp_path / "a" / "f.txt").write_text("x")
    top = str(tmp_path)
    down = [d for d, _, _ in tf.io.gfile.walk(top)]
    up = [d for d, _, _ in tf.io.gfile.walk(top, topdown=False)]
    assert down == [top, os.path.join(top, "a"), os.path.join(top, "a", "b")] and up == down[::-1]
    assert [d for d, _, _ in tf.gfile.Walk(top, in_order=False)] == up  # TF1's name for topdown
    errors = []
    assert list(tf.io.gfile.walk(str(tmp_path / "missing"), onerror=errors.append)) == [] and len(errors) == 1
    assert tf.io.gfile.join("a", "b", "c.txt") == os.path.join("a", "b", "c.txt")


# -- shapes: TF1's Dimension ---------------------------------------------------------------


def test_known_dimensions_have_value_and_stay_ints():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3, 4])
        d = x.get_shape()[1]
        assert d.value == 3 and d == 3 and d + 1 == 4 and isinstance(d, int)
        assert x.shape[-1].value * 2 == 8
        assert np.zeros(d).shape == (3,)
        u = x.shape[0]  # unknown: TF1's Dimension(None)
        assert u.value is None and (u == 3) is None and (u + 1).value is None and str(u) == "?"
        with pytest.raises(TypeError):
            int(u)
        assert tf.placeholder(tf.float32, [x.shape[0], x.shape[1]]).shape.as_list() == [None, 3]
        assert x.shape.as_list() == [None, 3, 4] and list(x.shape)[0] is None  # plain ints and None there
        assert tf.dimension_value(x.shape[0]) is None and tf.dimension_value(x.shape[2]) == 4
        assert tf.dimension_at_index(x.shape, 0).value is None and tf.dimension_at_index(x.shape, 1) == 3
        assert tf.Dimension(5).value == 5 and tf.Dimension(None).value is None
        with pytest.raises(ValueError):
            tf.Dimension(-2)
        # TF1's Dimension methods: an unknown size is compatible with, and merges into, any
        assert d.is_compatible_with(3) and d.is_compatible_with(u) and not d.is_compatible_with(4)
        assert u.is_compatible_with(7) and d.merge_with(None) == 3 and d.merge_with(u).value == 3
        assert u.merge_with(4).value == 4 and u.merge_with(u).value is None
        with pytest.raises(ValueError, match="not compatible"):
            d.merge_with(4)
        with pytest.raises(ValueError, match="not compatible"):
            d.assert_is_compatible_with(tf.Dimension(5))
        assert repr(d) == "Dimension(3)" and str(d) == "3" and f"conv{d}" == "conv3"  # names built from dims


# -- tf.gradients' signature -------------------------------------------------------------------


def test_gradients_takes_tf1s_keywords():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        y = tf.placeholder(tf.float32, [2])
        v = tf.Variable([1.0, 2.0])
        loss = tf.reduce_sum(x * x)
        gx, gy, gv = tf.gradients(loss, [x, y, v], colocate_gradients_with_ops=True, gate_gradients=True,
                                  aggregation_method=tf.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N,
                                  unconnected_gradients=tf.UnconnectedGradients.ZERO)
        assert tf.gradients(loss, [y])[0] is None  # the default: None
        with pytest.raises(tf.errors.InvalidArgumentError, match="aggregation_method"):
            tf.gradients(loss, [x], aggregation_method=7)
        with pytest.raises(tf.errors.InvalidArgumentError, match="unconnected_gradients"):
            tf.gradients(loss, [x], unconnected_gradients="nan")
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            a, b, c = s.run([gx, gy, gv], {x: [1.0, 3.0]})
    np.testing.assert_allclose(a, [2.0, 6.0])
    np.testing.assert_array_equal(b, [0.0, 0.0])
    np.testing.assert_array_equal(c, [0.0, 0.0])


def test_unconnected_zero_gradients_for_ints_and_unread_variables():
    """TF: zeros_like(x) for every x, integers included (int zeros), and zeros of a variable's
    static shape need no value of it, so they run before the variable is initialized."""
    with tf.Graph().as_default():
        i = tf.placeholder(tf.int32, [3])
        v = tf.Variable([1.0, 2.0])
        w = tf.get_variable("w", [2, 2], tf.float64)
        gi, gv, gw = tf.gradients(tf.constant(2.0) * 3.0, [i, v, w], unconnected_gradients="zero")
        with tf.Session() as s:  # no initializer run
            a, b, c = s.run([gi, gv, gw], {i: [1, 2, 3]})
    assert a.dtype == np.int32 and b.dtype == np.float32 and c.dtype == np.float64
    np.testing.assert_array_equal(a, [0, 0, 0])
    np.testing.assert_array_equal(b, [0.0, 0.0])
    np.testing.assert_array_equal(c, np.zeros((2, 2)))


# -- initialization helpers --------------------------------------------------------------------


def test_uninitialized_reports_and_assertion():
    with tf.Graph().as_default():
        a = tf.Variable(1.0, name="a")
        b = tf.get_variable("b", [2])
        report = tf.report_uninitialized_variables()
        check = tf.assert_variables_initialized()
        tables = tf.tables_initializer()
        assert tf.initialize_all_tables is tf.tables_initializer
        with tf.Session() as s:
            assert list(s.run(report)) == [b"a", b"b"]
            s.run(tf.initialize_variables([a]))
            assert list(s.run(report)) == [b"b"]
            with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized variable 'b'"):
                s.run(check)
            s.run(b.initializer)
            s.run([check, tables])
            assert s.run(report).shape == (0,)


def test_small_helpers_and_version():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        assert tf.is_tensor(x) and tf.is_tensor(tf.Variable(1.0)) and not tf.is_tensor(np.ones(3))
        emb = tf.Variable(np.ones((4, 2), np.float32))
        (g,) = tf.gradients(tf.reduce_sum(tf.nn.embedding_lookup(emb, [1, 3])), [emb])
        scaled = tf.scalar_mul(3.0, g)
        assert isinstance(scaled, tf.IndexedSlices)  # stays sparse
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be 0-d"):
            tf.scalar_mul(tf.constant([1.0, 2.0]), x)
        assert tf.no_regularizer(x) is None
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            np.testing.assert_allclose(s.run(tf.scalar_mul(2, x), {x: [1, 2, 3]}), [2, 4, 6])
            np.testing.assert_allclose(s.run(scaled.values), np.full((2, 2), 3.0))
    assert tf.VERSION == tf.__version__ == "1.15.0"


def test_review_fixes_roll_by_a_full_turn_gfile_iteration_unknown_dimension_falsy(tmp_path):
    f = str(tmp_path / "t.txt")
    with tf.gfile.GFile(f, "w") as fh:
        fh.write("a\nb\n")
    assert [line for line in tf.gfile.GFile(f)] == ["a\n", "b\n"]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        assert not x.shape[0]
        b = x.shape[0] or tf.shape(x)[0]
        r = tf.reshape(x, [b, 3])
        rolled = tf.roll(tf.constant([1.0, 2.0, 3.0]), 3, 0)
        with tf.Session() as s:
            assert s.run(r, {x: np.ones((2, 3))}).shape == (2, 3)
            assert s.run(rolled).tolist() == [1.0, 2.0, 3.0]


def test_get_local_variable_and_autotune():
    with tf.Graph().as_default():
        v = tf.get_local_variable("counter", [2], initializer=tf.ones_initializer())
        assert tf.local_variables() == [v] and tf.global_variables() == [] and tf.trainable_variables() == []
        ds = tf.data.Dataset.range(4).map(lambda x: x * 2, num_parallel_calls=tf.data.experimental.AUTOTUNE)
        nxt = ds.prefetch(tf.data.experimental.AUTOTUNE).make_one_shot_iterator().get_next()
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            assert s.run(v).tolist() == [1.0, 1.0]
            assert [s.run(nxt) for _ in range(4)] == [0, 2, 4, 6]
    assert tf.data.experimental.AUTOTUNE == -1


def _warm_start_program(tf, ckpt_dir):
    """A BERT-style fine-tuning start: a pretrained scope restored under a new name, one tensor
    into a variable object, the new head left to its initializer."""
    with tf.Graph().as_default():
        with tf.variable_scope("bert"):
            tf.get_variable("w", [3, 2], initializer=tf.constant_initializer(np.arange(6.0).reshape(3, 2)))
            with tf.variable_scope("enc"):
                tf.get_variable("b", [2], initializer=tf.constant_initializer([7.0, 8.0]))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(s, os.path.join(ckpt_dir, "model"))
    with tf.Graph().as_default():
        with tf.variable_scope("student"):
            w = tf.get_variable("w", [3, 2])
            with tf.variable_scope("enc"):
                b = tf.get_variable("b", [2])
        x = tf.get_variable("x", [3, 2])
        head = tf.get_variable("head", [2], initializer=tf.constant_initializer(-1.0))
        tf.train.init_from_checkpoint(ckpt_dir, {"bert/": "student/"})
        tf.train.init_from_checkpoint(path, {"bert/w": x})
        errors = []
        for bad in ({"bert/nope": "head"}, {"bert/enc/b": "student/w"}, {"bert": "student/"}):
            try:
                tf.train.init_from_checkpoint(path, bad)
            except ValueError as e:
                errors.append(str(e).split(" ")[0])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return s.run([w, b, x, head]), errors


def test_init_from_checkpoint_maps_scopes_and_variables(tmp_path):
    (w, b, x, head), errors = _warm_start_program(tf, str(tmp_path))
    np.testing.assert_array_equal(w, np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(b, [7.0, 8.0])
    np.testing.assert_array_equal(x, w)
    np.testing.assert_array_equal(head, [-1.0, -1.0])
    assert errors == ["Tensor", "Shape", "Assignment"]  # TF's three ValueErrors, in TF's words
    try:
        import tensorflow
    except ImportError:
        return
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    os.makedirs(tmp_path / "tf")
    want, want_errors = _warm_start_program(tft, str(tmp_path / "tf"))
    for a, c in zip([w, b, x, head], want):
        np.testing.assert_array_equal(a, c)
    assert errors == want_errors


def _template_program(tf):
    def layer(x, units, act=None):
        w = tf.get_variable("w", [x.shape[-1], units], initializer=tf.constant_initializer(0.5))
        b = tf.get_variable("b", [units], initializer=tf.zeros_initializer())
        y = tf.matmul(x, w) + b
        return act(y) if act else y
    t1 = tf.make_template("dense", layer, units=3, act=tf.nn.relu)
    t2 = tf.make_template("dense", layer, units=2)
    with tf.variable_scope("outer"):
        t3 = tf.make_template("made_now", layer, create_scope_now_=True, units=4)
    x = tf.constant(np.ones((2, 5), np.float32))
    outs = [t1(x), t1(x * 2.0)]
    outs += [t2(outs[0]), t3(x), t3(x)]
    bad = tf.make_template("bad", lambda v: v * tf.Variable(1.0))
    bad(x)
    with pytest.raises(ValueError, match="Trainable variable created when calling a template after the first time"):
        bad(x)
    with tf.variable_scope("foo") as vs:
        a = tf.constant(1.0)
    with tf.variable_scope(vs):
        b = tf.constant(1.0)
    with tf.variable_scope("outer"):
        with tf.variable_scope(vs, reuse=True):
            c = tf.constant(1.0)
    names = ([v.name for v in tf.global_variables()], [o.name for o in outs] + [a.name, b.name, c.name],
             t1.variable_scope.name, [v.name for v in t1.trainable_variables])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return names, s.run(outs)


def test_make_template_shares_variables_and_names_ops_as_tf1():
    with tf.Graph().as_default():
        (var_names, op_names, scope, t1_vars), vals = _template_program(tf)
    assert var_names == ["dense/w:0", "dense/b:0", "dense_1/w:0", "dense_1/b:0", "outer/made_now/w:0",
                         "outer/made_now/b:0", "bad/Variable:0", "bad_1/Variable:0"]
    # a re-entered variable scope opens a new name scope of its last name, as TF1
    assert op_names == ["dense/Relu:0", "dense_1/Relu:0", "dense_2/add:0", "made_now/add:0", "made_now_1/add:0",
                        "foo/Const:0", "foo_1/Const:0", "outer_1/foo/Const:0"]
    assert scope == "dense" and t1_vars == ["dense/w:0", "dense/b:0"]
    np.testing.assert_allclose(vals[1], 2 * vals[0])  # the second call used the first call's variables
    try:
        import tensorflow
    except ImportError:
        return
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    with tft.Graph().as_default():
        want_names, want_vals = _template_program(tft)
    assert (var_names, op_names, scope, t1_vars) == want_names
    for a, b in zip(vals, want_vals):
        np.testing.assert_array_equal(a, b)
