"""Dataset.padded_batch, flat_map, interleave and cache (collflow/data/dataset_more.py):
TF's element orders, paddings and static shapes, captured tensors, and - where TensorFlow
is installed - the same pipelines against TF."""
import os

import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as v1
from test_dataset import drain

Dataset = cf.data.Dataset


def _pipelines(tf):
    """Pipelines written once against TF1's API; the last one takes a fed scale."""
    scale = tf.placeholder(tf.int64, [])
    counts = tf.data.Dataset.range(1, 8).map(lambda x: tf.fill([x], x))
    return scale, [
        counts.padded_batch(3, padded_shapes=[None]),
        tf.data.Dataset.range(1, 6).map(lambda x: (tf.fill([x, 2], x), tf.cast(x, tf.float32)))
        .padded_batch(2, padded_shapes=([6, None], []), padding_values=(np.int64(-1), 0.5), drop_remainder=True),
        tf.data.Dataset.range(4).flat_map(lambda x: tf.data.Dataset.range(x).map(lambda y: y * 10 + x)),
        tf.data.Dataset.range(1, 6).interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(x),
                                               cycle_length=2, block_length=2),
        tf.data.Dataset.range(1, 7).interleave(lambda x: tf.data.Dataset.range(x * scale), cycle_length=3),
        tf.data.Dataset.range(3).interleave(lambda x: tf.data.Dataset.range(x, 9, 3), cycle_length=4,
                                            block_length=3),
        tf.data.Dataset.range(5).map(lambda x: x * scale).cache().repeat(2),
        tf.data.Dataset.from_tensor_slices({"a": np.arange(6), "b": np.arange(6.0)}).flat_map(
            lambda d: tf.data.Dataset.from_tensors(d).repeat(2)).padded_batch(4, {"a": [], "b": []}),
    ]


def _run(tf, feed_scale=2):
    with tf.Graph().as_default():
        scale, dss = _pipelines(tf)
        its = [tf.data.make_initializable_iterator(d) for d in dss]
        nexts = [it.get_next() for it in its]
        shapes = [str(tf.data.get_output_shapes(d)) for d in dss]
        out = []
        with tf.Session() as s:
            for it, nx in zip(its, nexts):
                s.run(it.initializer, {scale: feed_scale})
                got = []
                while True:
                    try:
                        got.append(s.run(nx))
                    except tf.errors.OutOfRangeError:
                        break
                out.append(got)
    return out, shapes


def _plain(x):
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in sorted(x.items())}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return np.asarray(x).tolist()


def test_pipelines_give_tfs_elements():
    """The expected elements, written out (runs without TensorFlow)."""
    got, shapes = _run(v1)
    assert _plain(got[0]) == [[[1, 0, 0], [2, 2, 0], [3, 3, 3]], [[4, 4, 4, 4, 0, 0], [5] * 5 + [0], [6] * 6],
                              [[7] * 7]]
    first = _plain(got[1][0])
    assert first[1] == [1.0, 2.0] and np.shape(first[0]) == (2, 6, 2) and first[0][0][1] == [-1, -1]
    assert len(got[1]) == 2  # drop_remainder: the fifth element is dropped
    assert _plain(got[2]) == [1, 2, 12, 3, 13, 23]
    assert _plain(got[3]) == [1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 4, 4, 5, 5, 5]
    assert _plain(got[5]) == [0, 3, 6, 1, 4, 7, 2, 5, 8]
    assert _plain(got[6]) == [0, 2, 4, 6, 8] * 2
    assert _plain(got[7])[0] == {"a": [0, 0, 1, 1], "b": [0.0, 0.0, 1.0, 1.0]}
    assert shapes[0] == "(?, ?)" and shapes[1] == "((2, 6, ?), (2,))"


def test_pipelines_match_tensorflow():
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    ours, _ = _run(v1)
    theirs, _ = _run(tft)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert _plain(a) == _plain(b), k


def test_static_shapes_and_errors():
    with cf.Graph().as_default():
        ds = Dataset.range(1, 4).map(lambda x: cf.fill([x], x))
        assert ds.padded_batch(2, [5]).output_shapes.as_list() == [None, 5]
        assert ds.padded_batch(2, [5], drop_remainder=True).output_shapes.as_list() == [2, 5]
        with pytest.raises(cf.errors.InvalidArgumentError, match="does not match the rank"):
            ds.padded_batch(2, [5, 5])
        with pytest.raises(TypeError, match="must return a Dataset"):
            ds.flat_map(lambda x: x)
        small = ds.padded_batch(3, [2]).make_one_shot_iterator().get_next()
        with cf.Session() as s:
            with pytest.raises(cf.errors.InvalidArgumentError, match="pad to a smaller size"):
                s.run(small)


def test_cache_reads_its_input_once_per_initialization():
    """A cache after a random map replays the first pass's values; initializing the iterator
    again reads the input again."""
    with cf.Graph().as_default():
        ds = Dataset.range(4).map(lambda x: x + cf.random_uniform([], 0, 1000, cf.int64)).cache().repeat(3)
        it = ds.make_initializable_iterator()
        nxt = it.get_next()
        with cf.Session() as s:
            s.run(it.initializer)
            a = drain(nxt, s)
            s.run(it.initializer)
            b = drain(nxt, s)
    assert a[:4] == a[4:8] == a[8:] and b[:4] == b[4:8]
    assert a[:4] != b[:4]


def test_interleave_autotune_uses_the_schedulable_cores():
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with cf.Graph().as_default():
        ds = Dataset.range(n + 1).interleave(lambda x: Dataset.from_tensors(x).repeat(2))
        got = drain(ds.make_one_shot_iterator().get_next())
    # the first n inputs open together, one element from each in turn, then the last one
    assert got == list(range(n)) * 2 + [n, n]


def _feedable(tf):
    """TF1's feedable-iterator loop: one get_next, switched between a training iterator
    (one-shot, repeating) and a validation iterator (initializable) by the fed handle."""
    train = tf.data.Dataset.range(100).map(lambda x: (x, x * 2)).batch(3).repeat()
    val = tf.data.Dataset.range(1000, 1007).map(lambda x: (x, x * 2)).batch(3)
    handle = tf.placeholder(tf.string, shape=[])
    it = tf.data.Iterator.from_string_handle(handle, tf.data.get_output_types(train),
                                             tf.data.get_output_shapes(train))
    nxt = it.get_next()
    tr_it = tf.data.make_one_shot_iterator(train)
    va_it = tf.data.make_initializable_iterator(val)
    out = []
    with tf.Session() as s:
        th, vh = s.run([tr_it.string_handle(), va_it.string_handle()])
        for epoch in range(2):
            out.append(s.run(nxt, {handle: th}))
            out.append(s.run(nxt, {handle: th}))
            s.run(va_it.initializer)
            while True:
                try:
                    out.append(s.run(nxt, {handle: vh}))
                except tf.errors.OutOfRangeError:
                    break
    return out


def test_feedable_iterators_switch_by_handle():
    got = _feedable(v1)
    assert [_plain(x)[0] for x in got[:2]] == [[0, 1, 2], [3, 4, 5]]
    assert [_plain(x)[0] for x in got[2:5]] == [[1000, 1001, 1002], [1003, 1004, 1005], [1006]]
    assert _plain(got[5])[0] == [6, 7, 8]  # the training iterator went on where it was
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    assert _plain(got) == _plain(_feedable(tft))


def test_a_wrong_string_handle_is_a_clear_error():
    with cf.Graph().as_default():
        ints = Dataset.range(3)
        floats = Dataset.from_tensor_slices(np.arange(3.0))
        handle = cf.placeholder(cf.string, [])
        nxt = cf.data.Iterator.from_string_handle(handle, ints.output_types, ints.output_shapes).get_next()
        fh = floats.make_one_shot_iterator().string_handle()
        with cf.Session() as s:
            with pytest.raises(cf.errors.InvalidArgumentError, match="not the string handle of an iterator"):
                s.run(nxt, {handle: "nonsense"})
            with pytest.raises(cf.errors.InvalidArgumentError, match="this handle expects"):
                s.run(nxt, {handle: s.run(fh)})
