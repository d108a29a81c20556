"""tf.contrib.data (collflow/contrib/data.py): tf.data.experimental under the contrib names,
and the helpers TF deprecated before the move, with the outputs TF 1.x documented."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from session_helpers import drain

C = tf.contrib.data
D = tf.data.Dataset
pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def _drain(make_ds):
    """Every element of the dataset make_ds() builds (in a graph of its own)."""
    return drain(tf, lambda _: make_ds())


def test_contrib_names_are_the_experimental_functions():
    for name in ("map_and_batch", "shuffle_and_repeat", "parallel_interleave", "group_by_window", "unbatch",
                 "bucket_by_sequence_length", "make_csv_dataset", "ignore_errors", "Reducer", "scan"):
        assert getattr(C, name) is getattr(tf.data.experimental, name)
    got = _drain(lambda: D.range(7).apply(C.map_and_batch(lambda x: x * 2, 3)))
    assert [a.tolist() for a in got] == [[0, 2, 4], [6, 8, 10], [12]]


def test_deprecated_helpers():
    windows = _drain(lambda: D.range(9).apply(C.sliding_window_batch(4, window_shift=2)))
    assert [w.tolist() for w in windows] == [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7]]
    strided = _drain(lambda: D.range(9).apply(C.sliding_window_batch(2, stride=3, window_stride=2)))
    assert [w.tolist() for w in strided] == [[0, 2], [3, 5], [6, 8]]
    pairs = _drain(lambda: D.from_tensor_slices((np.arange(4), -np.arange(4))).apply(C.sliding_window_batch(3)))
    assert [(a.tolist(), b.tolist()) for a, b in pairs] == [([0, 1, 2], [0, -1, -2]), ([1, 2, 3], [-1, -2, -3])]
    full = _drain(lambda: D.range(7).apply(C.batch_and_drop_remainder(3)))
    assert [b.tolist() for b in full] == [[0, 1, 2], [3, 4, 5]]
    padded = _drain(lambda: D.range(1, 6).map(lambda n: tf.fill([n], n))
                    .apply(C.padded_batch_and_drop_remainder(2, [None])))
    assert [p.tolist() for p in padded] == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    with pytest.raises(ValueError, match="both `stride` and `window_shift`"):
        C.sliding_window_batch(2, stride=1, window_shift=1)


def test_assert_element_shape_and_reduce_dataset():
    def checked():
        unknown = D.range(6).batch(2).map(lambda x: tf.reshape(x, [-1]))
        return unknown.apply(C.assert_element_shape(tf.TensorShape([2])))
    assert checked().output_shapes.as_list() == [2]
    assert [b.tolist() for b in _drain(checked)] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(ValueError, match="not compatible"):
        D.range(4).batch(2).apply(C.assert_element_shape(tf.TensorShape([2, 1])))
    with pytest.raises(tf.errors.InvalidArgumentError):  # the last batch holds one element
        _drain(lambda: D.range(5).batch(2).apply(C.assert_element_shape(tf.TensorShape([2]))))
    total = C.reduce_dataset(D.range(1, 5), C.Reducer(lambda k: np.int64(0), lambda s, x: s + x, lambda s: s))
    with tf.Session() as s:
        assert s.run(total) == 10
