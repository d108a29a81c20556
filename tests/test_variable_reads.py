"""Variable reads: a compiled plan binds each variable's handle once, every read is a view of
one cached read-only view of the value, and the copy-on-write checks discount that cache
(an update in place copies only when someone really holds the value)."""
import gc
import weakref

import numpy as np
import pytest

import collflow as cf
from collflow.kernels.resources import VariableState


def _state(sess, v):
    return sess.resources.variable(v.handle.op.attrs["shared_name"], v.dtype, v.shape)


def _model():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.arange(4, dtype=np.float32), name="v")
        read = v.value()
        total = cf.reduce_sum(read)
        with cf.control_dependencies([total]):
            add = v.assign_add(np.ones(4, np.float32))
        init = cf.global_variables_initializer()
    return g, v, read, total, add, init


@pytest.mark.host_only("read-only snapshots of host variables")
def test_reads_then_in_place_updates_keep_the_storage():
    """A step that reads a variable and then updates it in place copies nothing: the cached
    read-only view is not a holder."""
    g, v, read, total, add, init = _model()
    with cf.Session(graph=g) as s:
        s.run(init)
        s.run([total, add])
        st = _state(s, v)
        storage = id(st.value)  # not a reference: that would be a holder
        for _ in range(5):
            s.run([total, add])
        assert id(st.value) == storage, "an in-place update copied the variable with nobody holding it"
        assert st.ro is not None and st.ro.base is st.value
        np.testing.assert_array_equal(s.run(v), [6, 7, 8, 9])


@pytest.mark.host_only("read-only snapshots of host variables")
def test_a_held_read_is_a_snapshot_and_the_update_copies():
    g, v, read, total, add, init = _model()
    with cf.Session(graph=g) as s:
        s.run(init)
        r, _ = s.run([read, add])  # the read runs before the update in the same step
        np.testing.assert_array_equal(r, [0, 1, 2, 3])
        st = _state(s, v)
        held = st.snapshot()  # a reader that keeps its view (as a consumer kernel may)
        assert not held.flags.writeable
        s.run(add)
        np.testing.assert_array_equal(held, [1, 2, 3, 4])
        assert held.base is not st.value  # copied: `held` still sees the old array
        del held
        after = id(st.value)
        s.run(add)
        assert id(st.value) == after  # nobody holds it any more: in place again
        np.testing.assert_array_equal(s.run(v), [3, 4, 5, 6])


def test_snapshots_are_read_only_views_of_the_value():
    st = VariableState("x", cf.float32, None)
    st.set_value(np.zeros(3, np.float32))
    a, b = st.snapshot(), st.snapshot()
    assert a is not b and a.base is st.value and b.base is st.value
    with pytest.raises(ValueError):
        a[0] = 1.0
    st.writable()  # views are held: a copy
    assert a.base is not st.value and b.base is a.base
    copied = id(st.value)
    del a, b
    st.writable()  # no holder left (the cache is of the new array): in place
    assert id(st.value) == copied
    st.snapshot()  # the cache alone is not a holder either
    st.writable()
    assert id(st.value) == copied


def test_replacing_the_value_drops_the_cache_and_frees_the_old_array():
    st = VariableState("x", cf.float32, None)
    st.set_value(np.zeros(1000, np.float32))
    st.snapshot()
    old = weakref.ref(st.value)
    st.set_value(np.ones(1000, np.float32))
    assert st.ro is None
    gc.collect()
    assert old() is None, "the cached view kept a replaced value alive"
    np.testing.assert_array_equal(st.snapshot(), np.ones(1000, np.float32))


def test_a_cache_of_another_array_is_not_used():
    """Code that sets `value` directly (not through set_value) still gets reads of the new
    array: the cache is checked against the value it was made of."""
    st = VariableState("x", cf.float32, None)
    st.set_value(np.zeros(3, np.float32))
    st.snapshot()
    st.value = np.full(3, 7, np.float32)
    np.testing.assert_array_equal(st.snapshot(), [7, 7, 7])


def test_a_value_that_is_a_view_of_another_array_is_copied_before_an_update():
    """Reads of such a value reference the array that owns the memory, not the value, so its
    reference count cannot tell whether a read is held: the first update copies."""
    st = VariableState("x", cf.float32, None)
    st.value = np.arange(6, dtype=np.float32)[2:5]
    held = st.snapshot()
    np.testing.assert_array_equal(held, [2, 3, 4])
    st.writable()[...] += 100
    np.testing.assert_array_equal(held, [2, 3, 4])
    np.testing.assert_array_equal(st.snapshot(), [102, 103, 104])
    assert st.value.base is None  # owns its memory from now on: later updates are in place


def test_the_plan_binds_variable_handles_once():
    g, v, read, total, add, init = _model()
    with cf.Session(graph=g) as s:
        s.run(init)
        s.run(total)
        plan = s.plan_for(total)
        handles = [i for i, op in enumerate(plan.ops) if op.type == "VarHandle"]
        assert handles
        for i in handles:  # no call of the handle's kernel per run
            assert f"k{i}(" not in plan.source
            assert f"c{i}" in plan.source
        assert s.run(total) == 6.0


def test_an_error_in_a_read_of_a_bound_handle_names_the_variable():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.zeros(2, np.float32), name="never_initialized")
        y = v.value() + 1.0
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.errors.FailedPreconditionError, match="never_initialized"):
            s.run(y)
