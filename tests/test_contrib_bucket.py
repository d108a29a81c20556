"""tf.contrib.training.bucket / bucket_by_sequence_length (TF 1.x's queue-based bucketing):
every batch from one bucket, every kept example delivered once (the remainders as smaller
final batches when asked), padding, static shapes, keep_input, per-bucket batch sizes and
TF 1.15's argument errors."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError

pytestmark = pytest.mark.timeout(120)


def _drain(fetches, extra_init=()):
    """Runs the queue runners and fetches until OutOfRange; returns the list of results."""
    got = []
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer(), *extra_init])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            while True:
                got.append(sess.run(fetches))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads)
    return got


def _examples(lengths):
    """An input of one example per run: index i, a sequence of lengths[i] values i+1."""
    n = len(lengths)
    i = tf.train.range_input_producer(n, num_epochs=1, shuffle=False).dequeue()
    length = tf.gather(tf.constant(lengths, tf.int32), i)
    return i, length, tf.fill([length], i + 1)


@pytest.mark.parametrize("seed,bs,bounds,threads", [(0, 3, [3, 6], 1), (1, 4, [2, 5, 9], 2), (2, 2, [4], 1)])
def test_every_example_once_one_bucket_per_batch(seed, bs, bounds, threads):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(1, 12, size=23).tolist()
    with tf.Graph().as_default():
        i, length, seq = _examples(lengths)
        out_len, (s, idx) = tf.contrib.training.bucket_by_sequence_length(
            length, [seq, i], bs, bounds, num_threads=threads, dynamic_pad=True, allow_smaller_final_batch=True)
        assert out_len.shape.as_list() == [None] and s.shape.as_list() == [None, None]
        got = _drain([out_len, s, idx])
    edges = [-np.inf] + bounds + [np.inf]
    seen = []
    small = {}
    for lens, seqs, ids in got:
        assert 1 <= len(ids) <= bs
        b = {int(np.searchsorted(bounds, L, side="right")) for L in lens}
        assert len(b) == 1, f"a batch mixes buckets: lengths {lens}"
        b = b.pop()
        assert all(edges[b] <= L < edges[b + 1] for L in lens)
        if len(ids) < bs:
            assert b not in small, "only one smaller (final) batch per bucket"
            small[b] = len(ids)
        assert seqs.shape == (len(ids), max(lens))
        for row, L, k in zip(seqs, lens, ids):
            assert L == lengths[k]
            np.testing.assert_array_equal(row[:L], k + 1)
            np.testing.assert_array_equal(row[L:], 0)
        seen.extend(ids.tolist())
    assert sorted(seen) == list(range(len(lengths)))


def test_without_smaller_batches_the_remainders_are_dropped():
    lengths = [1, 5, 2, 6, 1, 7, 2, 1, 8, 5, 1]  # bucket 0 (<3): 6 examples, bucket 1: 5
    with tf.Graph().as_default():
        i, length, seq = _examples(lengths)
        out_len, (s, idx) = tf.contrib.training.bucket_by_sequence_length(length, [seq, i], 4, [3],
                                                                         dynamic_pad=True)
        assert out_len.shape.as_list() == [4] and idx.shape.as_list() == [4]
        got = _drain([out_len, idx])
    assert len(got) == 2 and all(len(ids) == 4 for _, ids in got)
    by_bucket = sorted(tuple(ids) for _, ids in got)
    # FIFO within each bucket: the first four of each arrive, the rest (2 and 1) stay behind
    assert by_bucket == sorted([(0, 2, 4, 6), (1, 3, 5, 8)])


def test_bucket_dict_keep_input_and_per_bucket_sizes():
    n = 30
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(n, num_epochs=1, shuffle=False).dequeue()
        feats = {"x": tf.cast(i, tf.float32) * tf.ones([2]), "id": i}
        which = tf.mod(i, 3)
        b, out = tf.contrib.training.bucket(feats, which, [2, 3, 4], 3, keep_input=tf.not_equal(tf.mod(i, 5), 0),
                                            allow_smaller_final_batch=True, capacity=8, bucket_capacities=[5, 6, 7])
        assert set(out) == {"x", "id"} and out["x"].shape.as_list() == [None, 2]
        got = _drain([b, out])
    seen = []
    for bk, o in got:
        ids = o["id"]
        assert len(ids) <= [2, 3, 4][bk]
        assert all(k % 3 == bk for k in ids)
        np.testing.assert_array_equal(o["x"], np.repeat(ids[:, None], 2, 1).astype(np.float32))
        seen.extend(ids.tolist())
    assert sorted(seen) == [k for k in range(n) if k % 5]


def test_static_batch_size_and_explicit_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        b, (y,) = tf.contrib.training.bucket([x], 0, 5, 2, shapes=[[3]])
        assert b.shape.as_list() == [] and b.dtype == tf.int32
        assert y.shape.as_list() == [5, 3]
        names = {op.name for op in tf.get_default_graph().get_operations()}
        assert {"bucket/bucket_queue_0", "bucket/bucket_queue_1", "bucket/top_queue", "bucket/dequeue_top"} <= names


def test_which_bucket_out_of_range_is_an_error():
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
        _, (y,) = tf.contrib.training.bucket([i], i, 1, 2)
        with pytest.raises(InvalidArgumentError, match="which_bucket must be in"):
            _drain(y)


def test_argument_errors():
    with tf.Graph().as_default():
        x = tf.zeros([2])
        L = tf.constant(3)
        fn = tf.contrib.training.bucket_by_sequence_length
        with pytest.raises(ValueError, match="must not be empty"):
            fn(L, [x], 2, [])
        with pytest.raises(ValueError, match="sequential increasing"):
            fn(L, [x], 2, [3, 3])
        with pytest.raises(TypeError, match="must be integers"):
            fn(L, [x], 2, [1.5, 3])
        with pytest.raises(TypeError, match="list or tuple"):
            fn(L, [x], 2, 4)
        with pytest.raises(ValueError, match="num_buckets elements"):
            fn(L, [x], [2, 2], [4, 8])
        with pytest.raises(ValueError, match="bucket_capacities"):
            tf.contrib.training.bucket([x], 0, 2, 2, bucket_capacities=[4])
        with pytest.raises(TypeError, match="list, tuple or dict"):
            tf.contrib.training.bucket(x, 0, 2, 2)
        with pytest.raises(ValueError, match="at least one tensor"):
            tf.contrib.training.bucket([], 0, 2, 2)
