"""Differential tests of tf.serialize_sparse / serialize_many_sparse / deserialize_many_sparse
(bytes compared with TF's) and of the dense tf.ConditionalAccumulator against TensorFlow's
graph mode.  Skipped cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tf_peer import run_in_both, tensorflow_v1  # noqa: E402


def _raw(x):
    """A fetched string element as bytes (collflow's are str with surrogates; TF's bytes)."""
    return x if isinstance(x, bytes) else x.encode("utf-8", "surrogateescape")


def _bytes(arr):
    a = np.asarray(arr, object)
    return [_raw(x) for x in a.reshape(-1)], a.shape


def _same_sparse(got, want):
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.dense_shape, want.dense_shape)
    g, w = np.asarray(got.values), np.asarray(want.values)
    if w.dtype == object:
        assert [_raw(x) for x in g] == list(w)
    else:
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


VALUE_CASES = [("float32", [1.5, -2.25, 3.]), ("float64", [1e300, -0.5, 2.]), ("int32", [7, -1, 2 ** 31 - 1]),
               ("int64", [-(2 ** 63), 5, 0]), ("bool", [True, False, True]), ("float16", [0.5, -1., 65504.]),
               ("uint8", [0, 255, 7]), ("int8", [-128, 127, 0]), ("uint16", [1, 65535, 2]),
               ("string", [b"ab", b"", b"\xff\x00z" * 50])]


@pytest.mark.parametrize("dtype,values", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_serialize_sparse_bytes_equal_tfs(dtype, values):
    idx = [[0, 1, 0], [0, 2, 1], [3, 0, 4]]

    def prog(T):
        sp = T.SparseTensor(idx, T.constant(values, getattr(T, dtype)), [4, 3, 5])
        empty = T.SparseTensor(np.zeros((0, 3), np.int64), T.constant([], getattr(T, dtype)), [4, 0, 5])
        return [T.serialize_sparse(sp), T.io.serialize_sparse(empty), T.serialize_many_sparse(sp),
                T.io.serialize_many_sparse(empty)]
    got, want = run_in_both(prog)
    for g, w in zip(got, want):
        assert _bytes(g) == _bytes(w)


def test_deserialize_many_sparse_matches_tf_and_reads_tfs_bytes():
    tft = tensorflow_v1()
    import collflow.compat.v1 as cf
    vals = np.array([1., 2., 3., 4.], np.float32)
    idx = [[0, 1], [2, 0], [2, 3], [3, 4]]
    with tft.Graph().as_default(), tft.Session() as s:
        rows = s.run(tft.serialize_many_sparse(tft.SparseTensor(idx, vals, [4, 5])))
        one = s.run(tft.serialize_sparse(tft.SparseTensor([[0], [3]], [b"x", b"yz"], [9])))
        two = s.run(tft.serialize_sparse(tft.SparseTensor([[1]], [b"w"], [2])))
    res = []
    for T, feed_rows, strs in ((cf, rows, np.stack([one, two])), (tft, rows, np.stack([one, two]))):
        with T.Graph().as_default(), T.Session() as s:
            d = T.deserialize_many_sparse(T.constant(feed_rows), T.float32, rank=2)
            d_unknown = T.deserialize_many_sparse(T.constant(feed_rows), T.float32)
            ds = T.deserialize_many_sparse(T.constant(strs), T.string)
            assert d.indices.shape.as_list() == [None, 2] and d.dense_shape.shape.as_list() == [2]
            assert d_unknown.indices.shape.as_list() == [None, None]
            res.append(s.run([d, ds]))
    for g, w in zip(*res):
        _same_sparse(g, w)
    np.testing.assert_array_equal(res[1][1].dense_shape, [2, 9])  # each dimension's largest


def test_round_trip_collflow_bytes_through_tf():
    """collflow's serialized rows deserialized by TF (and TF's by collflow) give the same tensor."""
    tft = tensorflow_v1()
    import collflow.compat.v1 as cf
    idx = [[0, 0, 1], [1, 2, 0], [1, 2, 3]]
    with cf.Graph().as_default(), cf.Session() as s:
        rows = s.run(cf.serialize_many_sparse(cf.SparseTensor(idx, cf.constant([1, 2, 3], cf.int64), [3, 4, 5])))
    with tft.Graph().as_default(), tft.Session() as s:
        back = s.run(tft.deserialize_many_sparse(np.vectorize(_raw, otypes=[object])(rows), tft.int64))
    np.testing.assert_array_equal(back.indices, idx)
    np.testing.assert_array_equal(back.values, [1, 2, 3])
    np.testing.assert_array_equal(back.dense_shape, [3, 4, 5])


ERROR_CASES = [
    ("unsorted", lambda T: T.serialize_many_sparse(T.SparseTensor([[2, 1], [0, 0]], [1., 2.], [4, 5])),
     "indices[1] = [0,0] is out of order"),
    ("repeated", lambda T: T.serialize_many_sparse(T.SparseTensor([[0, 1], [0, 1]], [1., 2.], [4, 5])),
     "indices[1] = [0,1] is repeated"),
    ("bounds", lambda T: T.serialize_many_sparse(T.SparseTensor([[5, 1]], [1.], [4, 5])),
     "indices[0] = [5,1] is out of bounds: need 0 <= index < [4,5]"),
    ("rank 1", lambda T: T.serialize_many_sparse(T.SparseTensor([[2]], [1.], [4])),
     "Rank of input SparseTensor should be > 1, but saw rank: 1"),
    ("dtype", lambda T: T.deserialize_many_sparse(T.serialize_many_sparse(T.SparseTensor([[0, 0]], [1.], [1, 2])),
                                                  T.int32),
     "Requested SparseTensor of type int32 but SparseTensor[0].values.dtype() == float"),
    ("no rows", lambda T: T.deserialize_many_sparse(T.zeros([0, 3], T.string), T.float32),
     "Serialized sparse should have at least 1 serialized tensor, but has a zero dimension [0,3]"),
    ("garbage", lambda T: T.deserialize_many_sparse(T.constant([["x", "y", "z"]]), T.float32),
     "Could not parse serialized proto"),
    ("ranks", lambda T: T.deserialize_many_sparse(T.stack([
        T.serialize_sparse(T.SparseTensor([[0]], [1.], [2])),
        T.serialize_sparse(T.SparseTensor([[0, 0]], [1.], [2, 2]))]), T.float32),
     "Inconsistent shape across SparseTensors: rank prior to SparseTensor[1] was: 1 but rank of SparseTensor[1] "
     "is: 2"),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_run_time_errors_match_tfs(case):
    _, build, msg = case
    tft = tensorflow_v1()
    import collflow.compat.v1 as cf
    for T in (cf, tft):
        with T.Graph().as_default(), T.Session() as s:
            t = build(T)
            with pytest.raises(T.errors.InvalidArgumentError) as e:
                s.run(t)
            assert msg in str(e.value), (T.__name__, str(e.value))


def test_graph_build_errors_match_tfs():
    tft = tensorflow_v1()
    import collflow.compat.v1 as cf
    for T in (cf, tft):
        with T.Graph().as_default():
            with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
                T.deserialize_many_sparse(T.constant(["a", "b", "c"]), T.float32)
            with pytest.raises(ValueError, match="Dimension must be 3 but is 2"):
                T.deserialize_many_sparse(T.zeros([2, 2], T.string), T.float32)


# -- the dense ConditionalAccumulator ------------------------------------------------------------------------

def _accumulate(T, dtype, shape, reduction, steps):
    """Runs the steps on one accumulator: ("apply", grad, local_step), ("take", n), ("num",),
    ("step", s); each result (None for applies), an error's message where one is raised."""
    acc = T.ConditionalAccumulator(dtype, shape=shape, reduction_type=reduction)
    grad = T.placeholder(dtype)  # shape unknown: the kernel's shape checks are what is compared
    out = []
    with T.Session() as s:
        for st in steps:
            feed = {}
            if st[0] == "apply":
                op, feed = acc.apply_grad(grad, local_step=st[2]), {grad: st[1]}
            elif st[0] == "take":
                op = acc.take_grad(st[1])
            elif st[0] == "num":
                op = acc.num_accumulated()
            else:
                op = acc.set_global_step(st[1])
            try:
                out.append(s.run(op, feed))
            except T.errors.InvalidArgumentError as e:
                out.append(str(e))
    return out


STEPS = [("apply", [[1., 2.]], 0), ("apply", [[3., 5.]], 0), ("num",), ("take", 2), ("num",),
         ("apply", [[9., 9.]], 0), ("apply", [[1., -1.]], 1), ("apply", [[2., 3.], [1., 1.]], 1), ("take", 1),
         ("step", 5), ("apply", [[3., 3.]], 4), ("apply", [[3., 4.]], 5), ("apply", [[1., 2.]], 6), ("num",),
         ("take", 2), ("take", 0)]


@pytest.mark.parametrize("reduction", ["MEAN", "SUM"])
@pytest.mark.parametrize("shape", [None, [None, 2], [1, 2]], ids=str)
def test_conditional_accumulator_matches_tf(reduction, shape):
    tft = tensorflow_v1()
    import collflow.compat.v1 as cf
    res = []
    for T in (cf, tft):
        with T.Graph().as_default():
            res.append(_accumulate(T, T.float32, shape, reduction, STEPS))
    got, want = res
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, str):
            msg = g.split("\n")[0].split(": ", 1)[-1]
            assert isinstance(g, str) and msg.split(" (")[0] in w, (i, g, w)
        elif w is None:
            assert g is None, (i, g)
        else:
            g, w = np.asarray(g), np.asarray(w)
            assert g.dtype == w.dtype and g.shape == w.shape, (i, g, w)
            np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=str(i))


def test_conditional_accumulator_static_shapes_and_int_refused():
    tft = tensorflow_v1()
    import collflow.compat.v1 as cf
    for T in (cf, tft):
        with T.Graph().as_default():
            acc = T.ConditionalAccumulator(T.float64, shape=[2, None])
            assert acc.take_grad(1).shape.as_list() == [2, None]
            assert acc.name == "conditional_accumulator"
            assert acc.num_accumulated().name == "conditional_accumulator_NumAccumulated:0"
            with pytest.raises(ValueError, match="are incompatible"):
                acc.apply_grad([1., 2.])
        with T.Graph().as_default():
            errs = _accumulate(T, T.int32, None, "MEAN", [("num",)])
            assert "No OpKernel was registered to support Op" in errs[0]
