"""Session: nested fetches, feeds, make_callable, default sessions, variables and their
snapshot semantics, lifecycle."""
import collections
import threading

import numpy as np
import pytest

import collflow as cf

Pair = collections.namedtuple("Pair", ["first", "second"])


def _graph():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2,), name="x")
        y = cf.multiply(x, np.float32(2), name="y")
        z = cf.add(y, np.float32(1), name="z")
        op = cf.no_op(name="nothing")
    return g, x, y, z, op


# -- fetches --------------------------------------------------------------------------------


def test_nested_fetch_structures_come_back_with_the_same_structure():
    g, x, y, z, op = _graph()
    feed = {x: np.array([1, 2], np.float32)}
    with cf.Session(graph=g) as s:
        out = s.run({"a": [y, (z, op)], "b": Pair(first=y, second={"deep": [z]}), "c": op}, feed)
    assert set(out) == {"a", "b", "c"}
    assert isinstance(out["a"], list) and isinstance(out["a"][1], tuple)
    np.testing.assert_array_equal(out["a"][0], [2, 4])
    np.testing.assert_array_equal(out["a"][1][0], [3, 5])
    assert out["a"][1][1] is None and out["c"] is None  # ops fetch as None
    assert isinstance(out["b"], Pair)
    np.testing.assert_array_equal(out["b"].first, [2, 4])
    np.testing.assert_array_equal(out["b"].second["deep"][0], [3, 5])


def test_fetch_single_elements_names_and_duplicates():
    g, x, y, z, op = _graph()
    feed = {"x:0": [1.0, 2.0]}  # feed by name, from a Python list
    with cf.Session(graph=g) as s:
        v = s.run(z, feed)
        assert isinstance(v, np.ndarray) and v.dtype == np.float32
        np.testing.assert_array_equal(s.run("z:0", feed), [3, 5])
        assert s.run("nothing", feed) is None      # an op name
        a, b = s.run([z, z], feed)                  # the same tensor twice
        np.testing.assert_array_equal(a, b)
        assert s.run([], feed) == [] and s.run((), feed) == ()
        assert s.run({}, feed) == {}


def test_bad_fetches_are_type_errors():
    g, x, y, z, op = _graph()
    with cf.Session(graph=g) as s:
        with pytest.raises(TypeError, match="None"):
            s.run([z, None], {x: [1, 2]})
        with pytest.raises(TypeError, match="invalid type"):
            s.run(3.5)
        # TF1: a name not in the graph is a ValueError ("cannot be interpreted as a Tensor")
        with pytest.raises(ValueError, match="no operation named 'nope'") as e:
            s.run("nope")
        assert not isinstance(e.value, cf.errors.NotFoundError)


def test_make_callable_positional_feeds():
    g, x, y, z, op = _graph()
    with cf.Session(graph=g) as s:
        f = s.make_callable([y, {"z": z}], [x])
        a, d = f(np.array([1, 1], np.float32))
        np.testing.assert_array_equal(a, [2, 2])
        np.testing.assert_array_equal(d["z"], [3, 3])
        # TF1: the callable zips feed_list with its arguments, so a missing one leaves its
        # placeholder unfed; a wrong shape is run()'s ValueError
        with pytest.raises(cf.errors.InvalidArgumentError, match="must feed a value for placeholder"):
            f()
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor x:0"):
            f(np.zeros(3, np.float32))


# -- default session, eval, InteractiveSession -------------------------------------------------


def test_default_session_eval_and_run():
    g, x, y, z, op = _graph()
    with cf.Session(graph=g) as s:
        assert cf.get_default_session() is s
        assert cf.get_default_graph() is g
        np.testing.assert_array_equal(z.eval({x: [0, 1]}), [1, 3])
        assert op.run({x: [0, 1]}) is None
    assert cf.get_default_session() is None
    with pytest.raises(ValueError, match="needs a session"):
        z.eval({x: [0, 1]})


def test_default_session_is_per_thread():
    g, x, y, z, op = _graph()
    seen = {}
    with cf.Session(graph=g):
        t = threading.Thread(target=lambda: seen.setdefault("s", cf.get_default_session()))
        t.start(), t.join()
    assert seen["s"] is None


def test_interactive_session_installs_itself():
    g, x, y, z, op = _graph()
    s = cf.InteractiveSession(graph=g)
    try:
        assert cf.get_default_session() is s
        np.testing.assert_array_equal(y.eval({x: [1, 1]}), [2, 2])
        with g.as_default():
            v = cf.Variable(np.ones(2, np.float32), name="v")
        v.initializer.run()
        np.testing.assert_array_equal(v.eval(), [1, 1])
    finally:
        s.close()
    assert cf.get_default_session() is None


def test_closed_session_refuses_to_run():
    g, x, y, z, op = _graph()
    s = cf.Session(graph=g)
    s.close()
    s.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed Session"):
        s.run(z, {x: [1, 2]})


def test_session_uses_the_default_graph_when_none_is_given():
    g, x, y, z, op = _graph()
    with g.as_default():
        s = cf.Session()
    assert s.graph is g
    s.close()


# -- variables --------------------------------------------------------------------------------


def _vars():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.arange(4, dtype=np.float32), name="v")
        w = cf.Variable(np.zeros((3, 2), np.float32), name="w")
        init = cf.global_variables_initializer()
    return g, v, w, init


def test_initialize_assign_assign_add_assign_sub():
    g, v, w, init = _vars()
    with g.as_default():
        a = v.assign(np.full(4, 10, np.float32))
        add = v.assign_add(np.ones(4, np.float32))
        sub = cf.assign_sub(v, np.full(4, 3, np.float32))
        inited = cf.is_variable_initialized(v)
    with cf.Session(graph=g) as s:
        assert not s.run(inited)
        s.run(init)
        assert s.run(inited)
        np.testing.assert_array_equal(s.run(v), [0, 1, 2, 3])
        np.testing.assert_array_equal(s.run(a), [10] * 4)       # the output is the new value
        np.testing.assert_array_equal(s.run(add), [11] * 4)
        np.testing.assert_array_equal(s.run(sub), [8] * 4)
        np.testing.assert_array_equal(s.run(v), [8] * 4)
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(v), [0, 1, 2, 3])


def test_scatter_ops_touch_only_their_rows():
    g, v, w, init = _vars()
    with g.as_default():
        idx = cf.placeholder(cf.int32, (None,), name="idx")
        upd = cf.placeholder(cf.float32, (None, 2), name="upd")
        sadd = cf.scatter_add(w, idx, upd)
        ssub = cf.scatter_sub(w, idx, upd)
        supd = cf.scatter_update(w, idx, upd)
    with cf.Session(graph=g) as s:
        s.run(init)
        ones = np.ones((3, 2), np.float32)
        out = s.run(sadd, {idx: [0, 2, 0], upd: ones})           # duplicates accumulate
        np.testing.assert_array_equal(out, [[2, 2], [0, 0], [1, 1]])
        s.run(ssub, {idx: [2], upd: ones[:1]})
        np.testing.assert_array_equal(s.run(w), [[2, 2], [0, 0], [0, 0]])
        s.run(supd, {idx: [1], upd: [[7, 8]]})
        np.testing.assert_array_equal(s.run(w), [[2, 2], [7, 8], [0, 0]])
        with pytest.raises(cf.errors.InvalidArgumentError, match=r"index 3 is out of range \[0, 3\)"):
            s.run(sadd, {idx: [3], upd: ones[:1]})


def test_fetched_values_are_snapshots():
    g, v, w, init = _vars()
    with g.as_default():
        add = v.assign_add(np.ones(4, np.float32))
        sadd = cf.scatter_add(v, np.array([0], np.int32), np.ones(1, np.float32))
    with cf.Session(graph=g) as s:
        s.run(init)
        before = s.run(v)
        out_add = s.run(add)
        s.run(add)
        s.run(sadd)
        np.testing.assert_array_equal(before, [0, 1, 2, 3])       # fetched before: unchanged
        np.testing.assert_array_equal(out_add, [1, 2, 3, 4])
        np.testing.assert_array_equal(s.run(v), [3, 3, 4, 5])
        before[:] = -1                                             # scribbling on a fetch...
        np.testing.assert_array_equal(s.run(v), [3, 3, 4, 5])     # ...does not reach the variable


def test_a_read_in_the_same_run_as_an_update_is_a_snapshot():
    g, v, w, init = _vars()
    with g.as_default():
        read = v.value()
        doubled = read * np.float32(2)
        with cf.control_dependencies([doubled]):
            add = v.assign_add(np.full(4, 100, np.float32))
    with cf.Session(graph=g) as s:
        s.run(init)
        r, d, a = s.run([read, doubled, add])
        np.testing.assert_array_equal(r, [0, 1, 2, 3])
        np.testing.assert_array_equal(d, [0, 2, 4, 6])
        np.testing.assert_array_equal(a, [100, 101, 102, 103])


def test_variable_load_and_separate_sessions():
    g, v, w, init = _vars()
    with cf.Session(graph=g) as s1, cf.Session(graph=g) as s2:
        s1.run(init)
        s2.run(init)
        v.load(np.full(4, 9, np.float32), session=s1)
        np.testing.assert_array_equal(s1.run(v), [9] * 4)
        np.testing.assert_array_equal(s2.run(v), [0, 1, 2, 3])    # each session has its own state
        with s2.as_default():
            v.load([5, 5, 5, 5])
        np.testing.assert_array_equal(s2.run(v), [5] * 4)
        assert s2.run(v).dtype == np.float32


def test_variable_collections_and_properties():
    g = cf.Graph()
    with g.as_default():
        a = cf.Variable(np.zeros(2, np.float32), name="a")
        b = cf.Variable(np.zeros(2, np.float32), name="b", trainable=False)
        with cf.name_scope("layer"):
            c = cf.Variable(np.zeros((2, 3), np.float32), name="kernel")
        assert cf.global_variables() == [a, b, c]
        assert cf.trainable_variables() == [a, c]
        assert cf.trainable_variables(scope="layer") == [c]
    assert c.name == "layer/kernel:0" and c.shape == (2, 3) and c.dtype == cf.float32
    assert not b.trainable and a.initializer.type == "AssignVariable"


def test_variable_from_a_callable_and_a_tensor():
    g = cf.Graph()
    with g.as_default():
        a = cf.Variable(lambda: np.full(3, 2, np.float32), name="a")
        b = cf.Variable(a.initial_value * np.float32(3), name="b")
        init = cf.global_variables_initializer()
    with cf.Session(graph=g) as s:
        s.run(init)
        np.testing.assert_array_equal(s.run(b), [6, 6, 6])


def test_writing_into_a_fetched_value_changes_nothing_in_the_session():
    """A fetch is the user's array: writable, and not the variable's (or constant's) storage."""
    g, v, w, init = _vars()
    with g.as_default():
        a = v.assign(np.full(4, 2, np.float32))
        c = cf.constant(np.arange(3, dtype=np.float32))
    with cf.Session(graph=g) as s:
        s.run(init)
        for fetch in (v, a):
            r = s.run(fetch)
            r[:] = -1
            assert (s.run(v) >= 0).all(), f"writing into the fetch of {fetch} changed the variable"
        r = s.run(c)
        r[:] = -1  # a fetched constant is writable too, and the constant stays
        np.testing.assert_array_equal(s.run(c), [0, 1, 2])
