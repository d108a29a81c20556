"""The symbolic layer: names and name scopes, device scopes, control dependencies,
collections, finalize, fingerprints, default graphs, tensors and constants."""
import os
import threading

import numpy as np
import pytest

import collflow as cf
from collflow.graph.graph import canonical_device

HERE = os.path.basename(__file__)


# -- names ------------------------------------------------------------------------------------


def test_unique_names_and_nested_scopes():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, (), name="x")
        b = cf.placeholder(cf.float32, (), name="x")
        c = cf.placeholder(cf.float32, (), name="x")
        with cf.name_scope("layer") as scope:
            assert scope == "layer/"
            d = cf.add(a, b, name="sum")
            with cf.name_scope("inner"):
                e = cf.identity(d)
        with cf.name_scope("layer"):   # the same name again: a new, uniquified scope
            f = cf.identity(d)
        with cf.name_scope("layer/"):  # a trailing '/' re-enters the first one
            h = cf.identity(d)
        with cf.name_scope(None):
            i = cf.identity(d, name="top")
    assert [t.op.name for t in (a, b, c)] == ["x", "x_1", "x_2"]
    assert d.name == "layer/sum:0" and e.op.name == "layer/inner/Identity"
    assert f.op.name == "layer_1/Identity"
    assert h.op.name == "layer/Identity"
    assert i.op.name == "top"
    assert g.get_operation_by_name("layer/sum") is d.op
    assert g.get_tensor_by_name("layer/sum:0") is d


def test_default_op_names_and_lookup_errors():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, ())
        b = a + a
        c = a + a
    assert a.op.name == "Placeholder" and b.op.type == "Add"
    assert b.op.name != c.op.name
    with pytest.raises(cf.errors.NotFoundError, match="no operation named 'nope'"):
        g.get_operation_by_name("nope")
    with pytest.raises(cf.errors.NotFoundError, match="has no output 3"):
        g.get_tensor_by_name(f"{b.op.name}:3")
    with pytest.raises(cf.errors.InvalidArgumentError, match="op_name:0"):
        g.get_tensor_by_name("Placeholder")


def test_invalid_scope_name():
    g = cf.Graph()
    with g.as_default(), pytest.raises(cf.errors.InvalidArgumentError, match="is not a valid scope name"):
        with cf.name_scope("bad name!"):
            pass


# -- devices -------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec,canon", [
    ("/gpu:0", "/gpu:0"), ("/device:GPU:1", "/gpu:1"), ("gpu", "/gpu:0"), ("/CPU:0", "/cpu:0"),
    ("cpu", "/cpu:0"), ("/job:worker/replica:0/task:1/device:GPU:2", "/gpu:2"), (None, None), ("", None),
])
def test_canonical_device_names(spec, canon):
    assert canonical_device(spec) == canon


def test_device_scopes_nest_and_reset():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, ())
        with cf.device("/device:GPU:1"):
            b = cf.identity(a)
            with cf.device("/cpu:0"):
                c = cf.identity(a)
            with cf.device(None):
                d = cf.identity(a)
        e = cf.identity(a)
        with pytest.raises(cf.errors.InvalidArgumentError, match="cannot parse device"):
            with cf.device("/tpu:0"):
                pass
    assert a.device is None and b.device == "/gpu:1" and c.device == "/cpu:0"
    assert d.device is None and e.device is None


# -- control dependencies ------------------------------------------------------------------------


def test_control_dependencies_accumulate_and_none_clears():
    g = cf.Graph()
    with g.as_default():
        a = cf.no_op(name="a")
        b = cf.placeholder(cf.float32, (), name="b")
        with cf.control_dependencies([a]):
            x = cf.identity(b, name="x")
            with cf.control_dependencies([b]):   # a Tensor means its op
                y = cf.identity(b, name="y")
            with cf.control_dependencies(None):
                z = cf.identity(b, name="z")
        w = cf.identity(b, name="w")
    assert x.op.control_inputs == [a]
    assert y.op.control_inputs == [a, b.op]
    assert z.op.control_inputs == [] and w.op.control_inputs == []


def test_control_dependencies_of_another_graph_are_refused():
    g1, g2 = cf.Graph(), cf.Graph()
    with g1.as_default():
        a = cf.no_op()
    with g2.as_default(), pytest.raises(cf.errors.InvalidArgumentError, match="not an element of this graph"):
        with cf.control_dependencies([a]):
            pass


# -- collections ------------------------------------------------------------------------------


def test_collections():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, (), name="scope1/a")
        b = cf.placeholder(cf.float32, (), name="scope2/b")
        cf.add_to_collection("mine", a)
        cf.add_to_collection("mine", b)
        cf.add_to_collection(cf.GraphKeys.LOSSES, b)
        assert cf.get_collection("mine") == [a, b]
        assert cf.get_collection("mine", scope="scope2") == [b]
        assert cf.get_collection("absent") == []
    ref = g.get_collection_ref("mine")
    ref.append("x")
    assert g.get_collection("mine")[-1] == "x"
    got = g.get_collection("mine")
    got.clear()  # a copy: the collection stays
    assert len(g.get_collection("mine")) == 3
    assert set(g.get_all_collection_keys()) >= {"mine", cf.GraphKeys.LOSSES}


# -- finalize and fingerprint ----------------------------------------------------------------------


def test_finalize_forbids_new_ops_but_runs_fine():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2,), name="x")
        y = x * np.float32(3)
    g.finalize()
    assert g.finalized
    with g.as_default(), pytest.raises(RuntimeError, match="finalized"):
        cf.identity(x)
    with pytest.raises(RuntimeError, match="finalized"):
        with g.as_default():
            cf.Variable(np.zeros(2, np.float32))
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(y, {x: [1, 2]}), [3, 6])


def _build(scale=2.0, extra=False):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="x")
        w = cf.Variable(np.ones((3, 2), np.float32), name="w")
        y = cf.matmul(x, w) * np.float32(scale)
        if extra:
            cf.identity(y)
    return g


def test_fingerprint_is_stable_and_sensitive():
    fp = _build().fingerprint()
    assert fp == _build().fingerprint(), "the same construction gives the same fingerprint"
    assert len(fp) == 64
    assert _build(scale=3.0).fingerprint() != fp, "a constant's value is part of it"
    assert _build(extra=True).fingerprint() != fp
    g = _build()
    v0 = g.version
    with g.as_default():
        cf.no_op()
    assert g.fingerprint() != fp and g.version == v0 + 1


# -- default graphs -------------------------------------------------------------------------------


def test_default_graph_stack_is_per_thread():
    g = cf.Graph()
    seen = {}
    with g.as_default():
        assert cf.get_default_graph() is g
        t = threading.Thread(target=lambda: seen.setdefault("g", cf.get_default_graph()))
        t.start(), t.join()
    assert seen["g"] is not g
    assert cf.get_default_graph() is not g


def test_reset_default_graph():
    before = cf.get_default_graph()
    cf.reset_default_graph()
    assert cf.get_default_graph() is not before
    g = cf.Graph()
    with g.as_default(), pytest.raises(RuntimeError, match="reset_default_graph"):
        cf.reset_default_graph()


def test_inputs_from_another_graph_are_refused():
    g1, g2 = cf.Graph(), cf.Graph()
    with g1.as_default():
        a = cf.placeholder(cf.float32, ())
    with g2.as_default():
        b = cf.placeholder(cf.float32, ())
        with pytest.raises(cf.errors.InvalidArgumentError, match="another graph"):
            g2.create_op("Add", [a, b])


# -- tensors and operations ------------------------------------------------------------------------


def test_tensor_properties_consumers_and_set_shape():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="x")
        y = cf.exp(x)
        z = x + y
    assert x.graph is g and x.dtype == cf.float32 and x.shape == (None, 3) and x.get_shape().rank == 2
    assert x.consumers() == [y.op, z.op]
    assert y.op.inputs == [x] and y.op.outputs == [y] and z.op.type == "Add"
    x.set_shape((4, None))
    assert x.shape == (4, 3)
    with pytest.raises(cf.errors.InvalidArgumentError, match="incompatible"):
        x.set_shape((5, 3))
    with pytest.raises(TypeError, match="truth value"):
        bool(x)
    assert len(x) == 4
    assert "x:0" in repr(x) and "Placeholder" in repr(x.op)


def test_creation_site_is_the_user_code():
    g = cf.Graph()
    with g.as_default():
        line = _lineno() + 1
        t = cf.reduce_mean(cf.square(cf.placeholder(cf.float32, (3,))))
    site = t.op.creation_site()
    assert site.startswith(__file__) and f":{line} in test_creation_site_is_the_user_code" in site


def _lineno():
    import sys
    return sys._getframe(1).f_lineno


# -- constants --------------------------------------------------------------------------------------


def test_scalar_constants_are_scalars():
    g = cf.Graph()
    with g.as_default():
        a = cf.constant(7)
        b = cf.constant(np.float64(2.5))
        c = cf.constant(np.zeros((), np.int64))
        d = cf.convert_to_tensor(3.0)
    assert a.shape == () and a.dtype == cf.int32
    assert b.shape == () and b.dtype == cf.float64
    assert c.shape == () and d.shape == () and d.dtype == cf.float32
    with cf.Session(graph=g) as s:
        va, vd = s.run([a, d])
    assert va.shape == () and va == 7 and vd.shape == ()


def test_constant_does_not_freeze_the_callers_array():
    g = cf.Graph()
    arr = np.arange(3, dtype=np.float32)
    with g.as_default():
        c = cf.constant(arr)
    arr[0] = 100  # the caller's array stays theirs, and the constant keeps its value
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(c), [0, 1, 2])


def test_constant_dtypes_and_shapes():
    g = cf.Graph()
    with g.as_default():
        assert cf.constant([1.5, 2]).dtype == cf.float32           # Python floats: float32
        assert cf.constant([1, 2]).dtype == cf.int32               # Python ints: int32
        assert cf.constant(np.arange(3)).dtype == cf.int64         # NumPy keeps its dtype
        assert cf.constant(0.0, shape=(2, 3)).shape == (2, 3)      # a scalar broadcast
        assert cf.constant([1, 2, 3, 4], shape=(2, 2)).shape == (2, 2)
        with pytest.raises(TypeError, match="Expected int32, but got 1.5"):  # TF's TypeError
            cf.constant(1.5, dtype=cf.int32)
        with pytest.raises(cf.errors.InvalidArgumentError, match="cannot have shape"):
            cf.constant([1, 2, 3], shape=(2, 2))
