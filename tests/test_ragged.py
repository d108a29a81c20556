"""tf.RaggedTensor and tf.ragged by hand (no TensorFlow): factories, queries, conversions,
Session fetch/feed of RaggedTensorValue, math, reductions, gather and gradients, checked
against values worked out from the definitions."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default():
        yield


def run(x, feed=None):
    with tf.Session() as s:
        return s.run(x, feed)


def test_from_row_splits_value_and_attributes():
    rt = tf.RaggedTensor.from_row_splits([3, 1, 4, 1, 5, 9, 2], [0, 4, 4, 7])
    assert rt.shape.as_list() == [3, None] and rt.ragged_rank == 1 and rt.dtype == tf.int32
    v = run(rt)
    assert isinstance(v, tf.ragged.RaggedTensorValue)
    assert v.to_list() == [[3, 1, 4, 1], [], [5, 9, 2]]
    assert v.row_splits.tolist() == [0, 4, 4, 7] and v.row_splits.dtype == np.int64
    assert v.values.tolist() == [3, 1, 4, 1, 5, 9, 2] and v.flat_values.tolist() == v.values.tolist()
    assert v.ragged_rank == 1 and v.shape == (3, None) and len(v.nested_row_splits) == 1
    assert rt.eval(session=tf.Session()).to_list() == v.to_list()


def test_other_factories():
    vals = [1, 2, 3, 4, 5]
    cases = [
        (tf.RaggedTensor.from_row_lengths(vals, [2, 0, 3]), [[1, 2], [], [3, 4, 5]]),
        (tf.RaggedTensor.from_value_rowids(vals, [0, 0, 2, 2, 2], nrows=4), [[1, 2], [], [3, 4, 5], []]),
        (tf.RaggedTensor.from_value_rowids(vals, [1, 1, 1, 2, 2]), [[], [1, 2, 3], [4, 5]]),
        (tf.RaggedTensor.from_row_starts(vals, [0, 1, 1]), [[1], [], [2, 3, 4, 5]]),
        (tf.RaggedTensor.from_row_limits(vals, [1, 1, 5]), [[1], [], [2, 3, 4, 5]]),
        (tf.RaggedTensor.from_nested_row_splits(vals, [[0, 1, 3], [0, 2, 2, 5]]), [[[1, 2]], [[], [3, 4, 5]]]),
        (tf.RaggedTensor.from_nested_row_lengths(vals, [[1, 2], [2, 0, 3]]), [[[1, 2]], [[], [3, 4, 5]]]),
        (tf.RaggedTensor.from_tensor([[1, 2, 0], [0, 0, 0], [3, 0, 4]], padding=0), [[1, 2], [], [3, 0, 4]]),
        (tf.RaggedTensor.from_tensor([[1, 2, 0], [0, 0, 0], [3, 0, 4]], lengths=[1, 3, 0]), [[1], [0, 0, 0], []]),
        (tf.RaggedTensor.from_tensor([[1, 2], [3, 4]]), [[1, 2], [3, 4]]),
        (tf.RaggedTensor.from_sparse(tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [7, 8, 9], [3, 4])), [[7, 8], [], [9]]),
        (tf.ragged.constant([[1, 2], [], [3]]), [[1, 2], [], [3]]),
        (tf.ragged.range([0, 2, 5], [3, 2, 9], 2), [[0, 2], [], [5, 7]]),
    ]
    for rt, want in cases:
        assert run(rt).to_list() == want


def test_constant_inner_shape_and_strings():
    rt = tf.ragged.constant([[[1, 2], [3, 4]], [], [[5, 6]]], ragged_rank=1)
    assert rt.shape.as_list() == [3, None, 2] and rt.flat_values.shape.as_list() == [3, 2]
    assert run(rt.to_tensor()).tolist() == [[[1, 2], [3, 4]], [[0, 0], [0, 0]], [[5, 6], [0, 0]]]
    s = tf.ragged.constant([["a", "bc"], [], ["d"]])
    assert s.dtype == tf.string
    assert run(s.to_tensor()).tolist() == [[b"a", b"bc"], [b"", b""], [b"d", b""]]
    assert run(s.to_tensor(default_value="?")).tolist() == [[b"a", b"bc"], [b"?", b"?"], [b"d", b"?"]]
    assert tf.ragged.constant([[1.0], []], dtype=tf.float64).dtype == tf.float64
    with pytest.raises(ValueError):
        tf.ragged.constant(3)


def test_queries():
    rt = tf.ragged.constant([[1.0, 2.0, 3.0], [], [4.0, 5.0]])
    got = run([rt.row_lengths(), rt.row_starts(), rt.row_limits(), rt.value_rowids(), rt.nrows(),
               rt.to_tensor(), rt.to_tensor(-1.0)])
    assert [np.asarray(g).tolist() for g in got] == [
        [3, 0, 2], [0, 3, 3], [3, 3, 5], [0, 0, 0, 2, 2], 3,
        [[1, 2, 3], [0, 0, 0], [4, 5, 0]], [[1, 2, 3], [-1, -1, -1], [4, 5, -1]]]
    sp = run(rt.to_sparse())
    assert sp.indices.tolist() == [[0, 0], [0, 1], [0, 2], [2, 0], [2, 1]] and sp.dense_shape.tolist() == [3, 3]


def test_nested():
    n = tf.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]]])
    assert n.ragged_rank == 2 and n.shape.as_list() == [3, None, None]
    v = run(n)
    assert v.to_list() == [[[1, 2], [3]], [], [[4, 5, 6]]] and isinstance(v.values, tf.ragged.RaggedTensorValue)
    assert [s.tolist() for s in v.nested_row_splits] == [[0, 2, 2, 3], [0, 2, 3, 6]]
    assert run(n.to_tensor()).tolist() == [[[1, 2, 0], [3, 0, 0]], [[0, 0, 0], [0, 0, 0]], [[4, 5, 6], [0, 0, 0]]]
    assert run(n.row_lengths(axis=2)).to_list() == [[2, 1], [], [3]]
    assert run(n.to_sparse()).indices.tolist() == [[0, 0, 0], [0, 0, 1], [0, 1, 0], [2, 0, 0], [2, 0, 1], [2, 0, 2]]
    assert run(n.with_flat_values(tf.constant([6, 5, 4, 3, 2, 1]))).to_list() == [[[6, 5], [4]], [], [[3, 2, 1]]]
    assert run(tf.RaggedTensor.from_tensor(np.arange(8).reshape(2, 2, 2), ragged_rank=2)).to_list() == \
        [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]


def test_segment_id_helpers():
    assert run(tf.ragged.row_splits_to_segment_ids([0, 2, 2, 5])).tolist() == [0, 0, 2, 2, 2]
    assert run(tf.ragged.segment_ids_to_row_splits([0, 0, 2])).tolist() == [0, 2, 2, 3]
    assert run(tf.ragged.segment_ids_to_row_splits([1], num_segments=3)).tolist() == [0, 0, 1, 1]


def test_math_and_map_flat_values():
    a = tf.ragged.constant([[1.0, -2.0], [], [3.0]])
    b = tf.ragged.constant([[2.0, 2.0], [], [4.0]])
    got = run([a + b, a * 3.0, 1.0 - a, -a, abs(a), a / b, a > 0.0,
               tf.ragged.map_flat_values(tf.square, a), tf.ragged.map_flat_values(tf.maximum, a, b)])
    assert [g.to_list() for g in got] == [
        [[3, 0], [], [7]], [[3, -6], [], [9]], [[0, 3], [], [-2]], [[-1, 2], [], [-3]], [[1, 2], [], [3]],
        [[0.5, -1], [], [0.75]], [[True, False], [], [True]], [[1, 4], [], [9]], [[2, 2], [], [4]]]
    c = tf.ragged.constant([[1.0], [2.0, 3.0], []])
    with pytest.raises(InvalidArgumentError):
        run(a + c)       # the rows differ: TF's "identical ragged splits" error
    with pytest.raises(ValueError):
        a + tf.constant([1.0, 2.0, 3.0])   # a dense operand must broadcast against the inner dims


def test_reductions():
    rt = tf.ragged.constant([[1.0, 2.0, 3.0], [], [4.0, 5.0]])
    s, mx, mn, mean, col, total = run([tf.reduce_sum(rt, axis=1), tf.reduce_max(rt, axis=1),
                                        tf.reduce_min(rt, 1), tf.reduce_mean(rt, axis=1),
                                        tf.reduce_sum(rt, axis=0), tf.reduce_sum(rt)])
    assert s.tolist() == [6, 0, 9] and col.tolist() == [5, 7, 3] and total == 15
    assert mx[0] == 3 and mx[2] == 5 and mx[1] == np.finfo(np.float32).min   # an empty row: the lowest
    assert mn[1] == np.finfo(np.float32).max
    assert mean[0] == 2 and np.isnan(mean[1]) and mean[2] == 4.5
    n = tf.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]]])
    assert run(tf.reduce_sum(n, axis=2)).to_list() == [[3, 3], [], [15]]
    inner = tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1)
    assert run(tf.reduce_sum(inner, axis=2)).to_list() == [[3, 7], [11]]
    assert run(tf.reduce_sum(inner, axis=1)).tolist() == [[4, 6], [5, 6]]


def test_gather_and_indexing():
    rt = tf.ragged.constant([[1, 2], [], [3, 4, 5]])
    assert run(tf.gather(rt, [2, 0, 2])).to_list() == [[3, 4, 5], [1, 2], [3, 4, 5]]
    assert run(rt[2]).tolist() == [3, 4, 5] and run(rt[-3]).tolist() == [1, 2]
    assert run(rt[1:]).to_list() == [[], [3, 4, 5]] and run(rt[:1]).to_list() == [[1, 2]]
    n = tf.ragged.constant([[[1], [2, 3]], [[4]]])
    assert run(n[0]).to_list() == [[1], [2, 3]]
    bm = tf.ragged.boolean_mask([[1, 2], [3, 4]], [[False, True], [True, True]])
    assert run(bm).to_list() == [[2], [3, 4]]


def test_placeholder_feed_and_errors():
    ph = tf.ragged.placeholder(tf.float32, ragged_rank=1)
    val = tf.ragged.RaggedTensorValue(np.array([1.0, 2.0, 3.0], np.float32), np.array([0, 1, 3], np.int64))
    out = run([ph * 2.0, tf.reduce_sum(ph, axis=1)], {ph: val})
    assert out[0].to_list() == [[2.0], [4.0, 6.0]] and out[1].tolist() == [1.0, 5.0]
    assert run(ph, {ph: tf.ragged.constant_value([[1.0], []])}).to_list() == [[1.0], []]
    with pytest.raises(TypeError):
        run(ph, {ph: [[1.0]]})


def test_validation_errors():
    with pytest.raises(InvalidArgumentError):
        run(tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 4]))      # last split != nvals
    with pytest.raises(InvalidArgumentError):
        run(tf.RaggedTensor.from_row_splits([1, 2, 3], [1, 2, 3]))      # must start at 0
    with pytest.raises(InvalidArgumentError):
        run(tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 1, 3]))   # decreasing
    with pytest.raises(InvalidArgumentError):
        run(tf.RaggedTensor.from_value_rowids([1, 2], [1, 0]))
    with pytest.raises(ValueError):
        tf.RaggedTensor([1], [0, 1])                 # the constructor is private, as TF's
    with pytest.raises(TypeError):
        tf.convert_to_tensor(tf.ragged.constant([[1]]))
    with pytest.raises(ValueError):
        tf.RaggedTensor.from_tensor([[1, 2]], lengths=[1], padding=0)


def test_gradients_flow_to_flat_values():
    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    rt = tf.RaggedTensor.from_row_splits(x, [0, 3, 3, 4])
    loss = (tf.reduce_sum(tf.reduce_sum(rt * rt, axis=1) * tf.constant([1.0, 5.0, 2.0]))
            + tf.reduce_sum(tf.reduce_max(rt, axis=1) * 10.0)
            + tf.reduce_sum(rt.to_tensor(7.0) * tf.constant([[1.0, 1, 1], [1, 1, 1], [3, 1, 1]])))
    g = run(tf.gradients(loss, x)[0])
    # d/dx of sum_row w_r x^2 (w = 1,1,1,2) + 10 * max per row (x3, x4) + to_tensor weights (1,1,1,3)
    assert np.allclose(g, [2 * 1 + 1, 2 * 2 + 1, 2 * 3 + 10 + 1, 2 * 2 * 4 + 10 + 3])
    d = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    fd = tf.RaggedTensor.from_tensor(d, lengths=[2, 1])
    gd = run(tf.gradients(tf.reduce_sum(tf.reduce_mean(fd, axis=1)), d)[0])
    assert np.allclose(gd, [[0.5, 0.5, 0], [1, 0, 0]])


def test_stack_and_bounding_shape():
    a = tf.ragged.constant([[1, 2], [], [3]])
    b = tf.ragged.constant([[4], [5, 6], []])
    assert run(tf.ragged.stack([a, b])).to_list() == [[[1, 2], [], [3]], [[4], [5, 6], []]]
    assert run(tf.ragged.stack([a, b], axis=1)).to_list() == [[[1, 2], [4]], [[], [5, 6]], [[3], []]]
    assert run(a.bounding_shape()).tolist() == [3, 2]
    assert run(tf.ragged.constant([[[1], [2, 3, 4]]]).bounding_shape()).tolist() == [1, 2, 3]
