"""Dataset.window (TF 1.15): windows cut as TF's WindowDataset cuts them, taken apart by
flat_map; tests/tf1/test_vs_tensorflow_dataset_window.py compares with TensorFlow."""
import pytest

import collflow.compat.v1 as tf
from session_helpers import drain

pytestmark = pytest.mark.timeout(120)


def _all(ds):
    return drain(tf, lambda _: ds())


def _reference(n, size, shift, stride, drop):
    shift = size if shift is None else shift
    out, start = [], 0
    while start < n:
        w = list(range(start, min(start + (size - 1) * stride + 1, n), stride))
        if len(w) < size and drop:
            break
        out.append(w)
        start += shift
    return out


@pytest.mark.parametrize("n", [0, 1, 5, 8])
@pytest.mark.parametrize("size, shift, stride", [(1, None, 1), (3, None, 1), (3, 1, 1), (2, 3, 1), (3, 2, 2),
                                                 (2, 1, 3)])
@pytest.mark.parametrize("drop", [False, True])
def test_windows_of_a_range(n, size, shift, stride, drop):
    got = _all(lambda: tf.data.Dataset.range(n).window(size, shift, stride, drop).flat_map(lambda w: w.batch(size)))
    assert [g.tolist() for g in got] == _reference(n, size, shift, stride, drop)


def test_windows_of_tuples_and_dicts_reach_the_function_in_the_input_structure():
    got = _all(lambda: tf.data.Dataset.zip((tf.data.Dataset.range(5), tf.data.Dataset.range(5).map(lambda x: x * 10)))
               .window(2, 1, drop_remainder=True)
               .flat_map(lambda a, b: tf.data.Dataset.zip((a.batch(2), b.batch(2)))))
    assert [(a.tolist(), b.tolist()) for a, b in got] == [([i, i + 1], [10 * i, 10 * i + 10]) for i in range(4)]
    got = _all(lambda: tf.data.Dataset.range(4).map(lambda x: {"a": x, "b": tf.cast(x, tf.float32) * 0.5})
               .window(3).flat_map(lambda d: d["b"].batch(3)))
    assert [g.tolist() for g in got] == [[0.0, 0.5, 1.0], [1.5]]


def test_window_checks_its_arguments_and_supports_flat_map_only():
    ds = tf.data.Dataset.range(4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="size must be greater than zero"):
        ds.window(0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="shift must be greater than zero"):
        ds.window(2, 0)
    with pytest.raises(NotImplementedError, match="flat_map only"):
        ds.window(2).batch(2)
