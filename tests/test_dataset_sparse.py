"""SparseTensor components of tf.data elements (what parse_example's VarLenFeatures give a
pipeline): made by map, batched, passed to later functions, read from get_next; against
TensorFlow where installed."""
import numpy as np
import pytest

import collflow.compat.v1 as cf
from tf_peer import run_in_both


def _records(T, n=5):
    out = []
    for i in range(n):
        e = T.train.Example()
        e.features.feature["ids"].int64_list.value.extend(list(range(i)))
        e.features.feature["x"].float_list.value.append(float(i))
        out.append(e.SerializeToString())
    return out


def _spec(T):
    return {"ids": T.VarLenFeature(T.int64), "x": T.FixedLenFeature([], T.float32)}


def _parsed(T, n=5):
    spec = _spec(T)
    return T.data.Dataset.from_tensor_slices(_records(T, n)).map(lambda s: T.parse_single_example(s, spec))


def _all(nxt, count):
    with cf.Session() as s:
        return [s.run(nxt) for _ in range(count)]


def test_batched_sparse_components():
    with cf.Graph().as_default():
        ds = _parsed(cf).batch(2)
        assert ds.output_classes == {"ids": cf.SparseTensor, "x": cf.Tensor}
        assert ds.output_shapes["ids"].as_list() == [None, None] and ds.output_types["ids"] == cf.int64
        nxt = ds.make_one_shot_iterator().get_next()
        assert isinstance(nxt["ids"], cf.SparseTensor)
        got = _all(nxt, 3)
    np.testing.assert_array_equal(got[0]["ids"].indices, [[1, 0]])
    np.testing.assert_array_equal(got[0]["ids"].dense_shape, [2, 1])      # the batch, the longest row
    np.testing.assert_array_equal(got[1]["ids"].indices, [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]])
    np.testing.assert_array_equal(got[1]["ids"].values, [0, 1, 0, 1, 2])
    np.testing.assert_array_equal(got[2]["ids"].dense_shape, [1, 4])
    np.testing.assert_array_equal(got[2]["x"], [4.0])


def test_sparse_into_later_functions_and_transformations():
    with cf.Graph().as_default():
        ds = (_parsed(cf).filter(lambda d: cf.size(d["ids"].values) > 1).repeat(2)
              .map(lambda d: (cf.sparse_tensor_to_dense(d["ids"]), cf.sparse_reduce_sum(d["ids"]))))
        got = _all(ds.make_one_shot_iterator().get_next(), 6)
    assert [list(a) for a, _ in got] == [[0, 1], [0, 1, 2], [0, 1, 2, 3]] * 2
    assert [int(b) for _, b in got] == [1, 3, 6] * 2


def test_reinitializable_and_feedable_iterators_carry_sparse():
    with cf.Graph().as_default():
        ds = _parsed(cf).batch(5)
        it = cf.data.Iterator.from_structure(ds.output_types, ds.output_shapes, output_classes=ds.output_classes)
        init = it.make_initializer(ds)
        nxt = it.get_next()
        handle = cf.placeholder(cf.string, [])
        fed = cf.data.Iterator.from_string_handle(handle, ds.output_types, ds.output_shapes, ds.output_classes)
        other = ds.make_one_shot_iterator()
        with cf.Session() as s:
            s.run(init)
            a = s.run(nxt)
            b = s.run(fed.get_next(), {handle: s.run(other.string_handle())})
        for v in (a, b):
            np.testing.assert_array_equal(v["ids"].dense_shape, [5, 4])
            assert len(v["ids"].values) == 10
        dense = cf.data.Dataset.from_tensors({"ids": np.zeros((1, 1), np.int64), "x": np.zeros(1, np.float32)})
        with pytest.raises(ValueError, match="SparseTensor"):
            it.make_initializer(dense)


def test_batching_sparse_of_different_ranks_is_an_error():
    from collflow.data.sparse_elements import batch_sparse
    a = cf.SparseTensorValue(np.array([[0]]), np.array([1.0]), np.array([2]))
    b = cf.SparseTensorValue(np.array([[0, 1]]), np.array([2.0]), np.array([1, 2]))
    with pytest.raises(cf.errors.InvalidArgumentError, match="different ranks"):
        batch_sparse([a, b], 0)
    both = batch_sparse([a, a], 0)
    np.testing.assert_array_equal(both.indices, [[0, 0], [1, 0]])
    np.testing.assert_array_equal(both.dense_shape, [2, 2])


def test_same_elements_as_tensorflow():
    def program(T):
        nxt = _parsed(T).batch(2).make_one_shot_iterator().get_next()
        return [nxt["ids"].indices, nxt["ids"].values, nxt["ids"].dense_shape, nxt["x"]]
    ours, theirs = run_in_both(program)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
