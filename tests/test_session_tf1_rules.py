"""TF1's Session rules, checked by hand (tests/tf1/test_vs_tensorflow_session_fuzz.py compares
them with TensorFlow where it is installed): how feeds are converted and checked, which errors
bad feeds and fetches raise, make_callable's calling convention, partial_run's, list_devices,
eval() with another graph's session."""
import collections

import numpy as np
import pytest

import collflow.compat.v1 as cf


def _graph(shape=(2,), dtype=None):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(dtype or cf.float32, shape, name="x")
        y = cf.identity(x, name="y")
    return g, x, y


# -- feed values: np.asarray(value, dtype) then the static shape, before anything runs -------------


@pytest.mark.parametrize("dtype, value, want", [
    ("int32", np.float32([1.5, -2.7]), np.int32([1, -2])),          # truncation toward zero
    ("int32", [1.9, 2.0], np.int32([1, 2])),                          # a Python list of floats too
    ("uint8", np.int32([1, 300]), np.uint8([1, 44])),                 # 300 mod 256
    ("uint8", [1, -1], np.uint8([1, 255])),                           # Python ints wrap in a list
    ("bool", np.float32([1.0, 0.0]), np.array([True, False])),
    ("float32", np.complex64([1 + 2j, 3]), np.float32([1, 3])),       # the real part
    ("float32", ["1.5", "2"], np.float32([1.5, 2.0])),                # NumPy parses strings
    ("float16", np.float64([1.0, 0.1]), np.float16([1.0, 0.1])),
])
def test_fed_values_are_cast_as_numpy_casts(dtype, value, want):
    g, x, y = _graph(dtype=getattr(cf, dtype))
    with cf.Session(graph=g) as s:
        got = s.run(y, {x: value})
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_nan_fed_to_an_integer_placeholder_casts_without_a_warning():
    g, x, y = _graph(dtype=cf.int32)
    with cf.Session(graph=g) as s:   # (this suite turns warnings into errors)
        got = s.run(y, {x: np.float32([np.nan, 7.9])})
    assert got.dtype == np.int32 and got[1] == 7   # NaN's value is NumPy's (platform) cast


def test_a_python_int_out_of_range_is_a_type_error():
    g, x, y = _graph((), cf.int32)
    with cf.Session(graph=g) as s:
        assert s.run(y, {x: 2 ** 31 - 1}) == 2 ** 31 - 1
        with pytest.raises(TypeError, match="larger type"):
            s.run(y, {x: 2 ** 40})


def test_wrong_shapes_are_value_errors_before_anything_runs():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 2), name="x")
        v = cf.Variable(0.0, name="v")
        with cf.control_dependencies([v.assign_add(1.0)]):
            y = cf.identity(x)
        pwd = cf.placeholder_with_default([1.0], [None], name="pwd")
    with cf.Session(graph=g) as s:
        s.run(v.initializer)
        with pytest.raises(ValueError, match=r"^Cannot feed value of shape \(3,\) for Tensor x:0, which has "
                                             r"shape \(None, 2\)\n  \[op 'x' of type Placeholder, created at ") as e:
            s.run(y, {x: np.zeros(3, np.float32)})
        assert not isinstance(e.value, cf.errors.InvalidArgumentError)  # TF1: a plain ValueError
        with pytest.raises(ValueError, match=r"shape \(\) for Tensor x:0"):
            s.run(y, {x: None})                    # np.asarray(None, float32) is a 0-d nan
        with pytest.raises(ValueError, match=r"shape \(1, 1\) for Tensor pwd:0, which has shape \(None,\)"):
            s.run(pwd, {pwd: [[1.0]]})
        assert s.run(v) == 0.0                     # the assign_add never ran


def test_bad_feed_keys_and_values_are_type_errors():
    g, x, y = _graph()
    with cf.Session(graph=g) as s:
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
            s.run(y, {"nope:0": [1.0, 2.0]})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
            s.run(y, {x.op: [1.0, 2.0]})
        with g.as_default():
            c = cf.constant([1.0, 2.0])
        with pytest.raises(TypeError, match="cannot be a tf.Tensor"):
            s.run(y, {x: c})
        with pytest.raises(TypeError, match="feed_dict must be a dictionary"):
            s.run(y, [(x, [1.0, 2.0])])
        # feeds are checked before fetches, as in TF1
        with pytest.raises(TypeError, match="feed_dict key"):
            s.run("nope:0", {"nope:0": 1.0})


def test_prevent_feeding_and_fetching():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, [2], name="x")
        y = cf.multiply(x, 2.0, name="y")
        z = cf.add(y, 1.0, name="z")
    assert g.is_feedable(y) and g.is_fetchable(y) and g.is_fetchable(y.op)
    g.prevent_feeding(y)
    g.prevent_fetching(z.op)
    assert not g.is_feedable(y) and g.is_feedable(x)
    assert not g.is_fetchable(z) and not g.is_fetchable(z.op)
    with cf.Session(graph=g) as s:
        with pytest.raises(ValueError, match="Tensor y:0 may not be fed"):
            s.run(x, {y: [1.0, 2.0], x: [0.0, 0.0]})
        with pytest.raises(ValueError, match="'z' has been marked as not fetchable"):
            s.run([y, z], {x: [1.0, 2.0]})
        np.testing.assert_array_equal(s.run(y, {x: [1.0, 2.0]}), [2, 4])


def test_fetching_a_fed_tensor_gives_the_converted_feed():
    g, x, y = _graph(())
    with g.as_default():
        z = y + 1.0
    a = np.array(3.0, np.float32)
    with cf.Session(graph=g) as s:
        xv, zv = s.run([x, z], {x: a})
        assert xv is a                               # TF1: the fed array itself, a 0-d array
        assert isinstance(zv, np.float32) and zv == 4.0
        xv = s.run(x, {x: 2})                        # converted: np.asarray(2, float32)
        assert isinstance(xv, np.ndarray) and xv.shape == () and xv.dtype == np.float32
        yv, zv = s.run([y, z], {y: 10.0})            # a fed intermediate
        assert isinstance(yv, np.ndarray) and yv == 10.0 and zv == 11.0


def test_feeding_a_variable_by_its_name_feeds_its_value():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable([1.0, 2.0], name="v")
        y = v * 2.0
    with cf.Session(graph=g) as s:
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(y, {"v:0": [5.0, 6.0]}), [10, 12])
        np.testing.assert_array_equal(s.run(y, {v: [5.0, 6.0]}), [10, 12])
        np.testing.assert_array_equal(s.run(v), [1, 2])   # a feed does not assign


def test_sparse_feeds_pair_parts_as_zip():
    g = cf.Graph()
    with g.as_default():
        sp = cf.sparse_placeholder(cf.float32)
        d = cf.sparse_tensor_to_dense(sp)
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(d, {sp: ([[0, 1]], [3.0], [1, 2])}), [[0, 3]])
        with pytest.raises(cf.errors.InvalidArgumentError, match="must feed a value"):
            s.run(d, {sp: ([[0, 1]], [3.0])})      # dense_shape left unfed
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2,\)"):
            s.run(d, {sp: np.zeros((2, 2), np.float32)})   # rows fed as indices, values
        with pytest.raises(TypeError, match="SparseTensorValue"):
            s.run(d, {sp: 3.0})


# -- fetches ---------------------------------------------------------------------------------------


def test_fetches_the_graph_cannot_resolve_are_value_errors():
    g, x, y = _graph()
    with cf.Graph().as_default():
        other = cf.constant(1.0)
        other_op = cf.no_op()
    with cf.Session(graph=g) as s:
        for bad in ("nope", "nope:0", "x:3", "x:y", other, other_op):
            with pytest.raises(ValueError, match="cannot be interpreted as a Tensor") as e:
                s.run([y, bad], {x: [1.0, 2.0]})
            assert not isinstance(e.value, cf.errors.CollflowError), bad
        with pytest.raises(TypeError, match="invalid type"):
            s.run([y, 3], {x: [1.0, 2.0]})


def test_an_empty_graph_cannot_run():
    with cf.Session(graph=cf.Graph()) as s:
        with pytest.raises(RuntimeError, match="graph is empty"):
            s.run([])


def test_mapping_fetches_come_back_as_their_own_type():
    g, x, y = _graph()
    d = collections.defaultdict(list)
    d["a"] = y
    with g.as_default():
        nothing = cf.no_op()
    od = collections.OrderedDict([("z", y), ("a", nothing)])
    with cf.Session(graph=g) as s:
        out, out2 = s.run([d, od], {x: [1.0, 2.0]})
    assert type(out) is collections.defaultdict and out.default_factory is list
    np.testing.assert_array_equal(out["a"], [1, 2])
    assert out["missing"] == []
    assert type(out2) is collections.OrderedDict and list(out2) == ["z", "a"] and out2["a"] is None


def test_eval_and_run_with_a_session_of_another_graph():
    g, x, y = _graph(())
    with cf.Session(graph=cf.Graph()) as s:
        with pytest.raises(ValueError, match="given session") as e:
            y.eval({x: 1.0}, session=s)
        assert not isinstance(e.value, cf.errors.CollflowError)
        with pytest.raises(ValueError, match="given session"):
            y.op.run({x: 1.0}, session=s)
        with s.as_default():
            with pytest.raises(ValueError, match="default session"):
                y.eval({x: 1.0})


def test_gather_gradient_dense_shape_is_int32():
    g = cf.Graph()
    with g.as_default():
        p = cf.constant([[1.0, 2.0], [3.0, 4.0]])
        q = cf.placeholder(cf.float32, [None, 2])
        grads = cf.gradients(cf.reduce_sum(cf.gather(p, [1])) + cf.reduce_sum(cf.gather(q, [0])), [p, q])
    with cf.Session(graph=g) as s:
        gp, gq = s.run(grads, {q: np.zeros((3, 2), np.float32)})
    assert type(gp).__name__ == "IndexedSlicesValue"
    assert gp.dense_shape.dtype == np.int32 and gp.dense_shape.tolist() == [2, 2]
    assert gq.dense_shape.dtype == np.int32 and gq.dense_shape.tolist() == [3, 2]
    np.testing.assert_array_equal(gp.values, [[1, 1]])


# -- make_callable --------------------------------------------------------------------------------


def test_make_callable_with_a_feed_list_zips_its_arguments():
    g, x, y = _graph()
    with g.as_default():
        nothing = cf.no_op()
    with cf.Session(graph=g) as s:
        f = s.make_callable([y, {"k": (y, nothing)}], feed_list=["x:0"])
        a, d = f(np.float64([1.5, 2.5]))
        assert a.dtype == np.float32 and d["k"][1] is None
        np.testing.assert_array_equal(f([1, 2], [9, 9])[0], [1, 2])   # extra arguments are ignored
        with pytest.raises(cf.errors.InvalidArgumentError, match="must feed a value for placeholder 'x'"):
            f()
        md = cf.RunMetadata()
        out = f([1, 2], options=cf.RunOptions(trace_level=cf.RunOptions.FULL_TRACE), run_metadata=md)
        assert len(md.step_stats.dev_stats) > 0 and out[0].tolist() == [1, 2]
        with pytest.raises(TypeError, match="must be a list or tuple"):
            s.make_callable(y, x)
        with g.as_default():
            sp = cf.sparse_placeholder(cf.float32)
            dense = cf.sparse_tensor_to_dense(sp)
        np.testing.assert_array_equal(s.make_callable(dense, [sp])(([[0, 0]], [2.0], [1, 2])), [[2, 0]])


def test_make_callable_without_a_feed_list():
    g, x, y = _graph()
    with g.as_default():
        c = cf.constant(2.0)
    with cf.Session(graph=g) as s:
        f = s.make_callable(c)
        assert f() == 2.0 and isinstance(f(), np.float32)
        with pytest.raises(TypeError):
            f(1)                                         # it takes no arguments
        with pytest.raises(TypeError):
            f(options=cf.RunOptions())
        fo = s.make_callable(c, accept_options=True)
        assert fo(options=cf.RunOptions(), run_metadata=cf.RunMetadata()) == 2.0
        unfed = s.make_callable(y)                       # made fine; each call reports the feed
        with pytest.raises(cf.errors.InvalidArgumentError, match="must feed a value for placeholder 'x'"):
            unfed()
        with pytest.raises(cf.errors.InvalidArgumentError, match="at least one target"):
            s.make_callable([])()
        later = s.make_callable(c)
        with_feeds = s.make_callable(y, [x])
    later_made = s.make_callable(c)                      # making one on a closed session is fine
    for fn in (later, later_made):
        with pytest.raises(cf.errors.CancelledError, match="Session has been closed"):
            fn()
    with pytest.raises(RuntimeError, match="closed Session"):
        with_feeds([1.0, 2.0])                           # with a feed_list it is run()


def test_list_devices():
    with cf.Session(graph=cf.Graph()) as s:
        ds = s.list_devices()
    cpu = [d for d in ds if d.device_type == "CPU"]
    assert cpu[0].name == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert cpu[0].memory_limit_bytes > 0


# -- partial_run ----------------------------------------------------------------------------------


def test_partial_run_fetches_tensors_only_and_gives_scalars():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, [], name="a")
        c = cf.placeholder(cf.float32, [], name="c")
        r1 = a * 2.0
        r2 = r1 + 1.0
        r3 = r2 * c
        v = cf.Variable(0.0)
        asg = v.assign(a).op
    with cf.Session(graph=g) as s:
        s.run(v.initializer)
        h = s.partial_run_setup([r1, r2, r3, asg], [a, c])
        with pytest.raises(RuntimeError, match="requires empty target_list"):
            s.partial_run(h, asg, {a: 1.0})
        got1 = s.partial_run(h, [r1], {a: 1.0})
        got3 = s.partial_run(h, r3, {c: 3.0})
        got2 = s.partial_run(h, {"r2": r2})       # computed by the piece before: still a scalar
    assert got1 == [2.0] and got3 == 9.0 and isinstance(got3, np.float32)
    assert isinstance(got2["r2"], np.float32) and got2["r2"] == 3.0


def test_partial_run_fetch_structures_and_errors_follow_run():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, [], name="a")
        r1 = cf.add(a, 1.0, name="r1")
        sp = cf.SparseTensor([[0]], cf.reshape(r1, [1]), [2])
    with cf.Session(graph=g) as s:
        h = s.partial_run_setup([sp, r1], [a])
        got = s.partial_run(h, {"sp": sp}, {a: 1.0})
        assert type(got["sp"]).__name__ == "SparseTensorValue" and got["sp"].values.tolist() == [2.0]
        assert s.partial_run(h, b"r1:0") == 2.0                  # a name as bytes, as run()
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
            s.partial_run_setup(["nope:0"], [a])
        with pytest.raises(TypeError, match="Cannot interpret feed_list key"):
            s.partial_run_setup([r1], ["nope:0"])


def test_a_tensor_fetched_twice_is_one_value():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant([1.0, 2.0])
    with cf.Session(graph=g) as s:
        r = s.run({"a": x, "b": [x]})
    assert r["a"] is r["b"][0]   # TF1 fetches each tensor once


def test_tensors_inside_cond_branches_and_loops_are_not_fetchable_or_feedable():
    """TF1's cond and while_loop mark every op they build inside a branch or the loop body."""
    g = cf.Graph()
    with g.as_default():
        p = cf.placeholder(cf.bool, [], name="p")
        x = cf.placeholder(cf.float32, [], name="x")
        inside = {}

        def true_fn():
            inside["branch"] = x * 2.0
            return inside["branch"]

        def body(i):
            inside["body"] = i + x
            return inside["body"]
        c = cf.cond(p, true_fn, lambda: x - 1.0)
        r = cf.while_loop(lambda i: i < 3.0, body, [x])
    assert g.is_fetchable(c) and g.is_fetchable(r) and g.is_feedable(c)
    assert not g.is_fetchable(inside["branch"]) and not g.is_feedable(inside["body"])
    with cf.Session(graph=g) as s:
        assert s.run([c, r], {p: True, x: 0.5}) == [1.0, 3.0]   # 0.5*2; 0.5 + 0.5 until >= 3
        with pytest.raises(ValueError, match="has been marked as not fetchable"):
            s.run(inside["branch"], {p: True, x: 0.5})
        with pytest.raises(ValueError, match="has been marked as not fetchable"):
            s.run(inside["body"], {x: 0.5})
        with pytest.raises(ValueError, match="may not be fed"):
            s.run(r, {x: 0.5, inside["body"]: 1.0})


def test_control_dependency_on_a_fed_placeholder_waits_for_the_feed():
    """TF's feed rewrite: a fed Placeholder's control edges come from the feed (tf_slim's
    metrics.count puts one on its values), so the run needs no value for the op itself;
    a control dependency on an unfed one still asks for its feed."""
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, [2], name="x")
        v = cf.Variable(0.0)
        with cf.control_dependencies([x]):
            up = v.assign_add(1.0)
        with cf.control_dependencies([x.op]):
            also = cf.identity(cf.constant(3.0))
    with cf.Session(graph=g) as s:
        s.run(v.initializer)
        assert s.run(up, {x: [1.0, 2.0]}) == 1.0 and s.run(also, {x: [0.0, 0.0]}) == 3.0
        with pytest.raises(cf.errors.InvalidArgumentError, match="must feed a value for placeholder 'x'"):
            s.run(up)
