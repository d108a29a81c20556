"""tf.contrib.training.rejection_sample / stratified_sample (TF 1.x's queue samplers): the
acceptance rule, the target class proportions (statistically, with wide bounds), the
running estimate of the data's proportions, enqueue_many, and TF's checks."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError

pytestmark = pytest.mark.timeout(120)


def _take(fetches, n):
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            return [sess.run(fetches) for _ in range(n)]
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)


def test_rejection_sample_keeps_what_the_function_accepts():
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(1000, shuffle=False).dequeue()
        x = tf.cast(i, tf.float32) * 2.0
        xb, ib = tf.contrib.training.rejection_sample([x, i], lambda t: tf.cast(tf.equal(t[1] % 3, 0), tf.float32), 8)
        assert xb.shape.as_list() == [8] and ib.shape.as_list() == [8]
        got = _take([xb, ib], 5)
    ids = np.concatenate([b for _, b in got])
    assert (ids % 3 == 0).all() and list(ids) == sorted(ids)
    np.testing.assert_array_equal(np.concatenate([a for a, _ in got]), 2.0 * ids)


def test_rejection_sample_enqueue_many_and_half_acceptance():
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(100000, shuffle=False).dequeue()
        block = tf.range(4) + 4 * i
        [b] = tf.contrib.training.rejection_sample([block], lambda t: tf.constant(0.5), 50, enqueue_many=True,
                                                   runtime_checks=True)
        got = np.concatenate(_take(b, 8))
    assert len(np.unique(got)) == len(got) and list(got) == sorted(got)
    # 400 kept of about 800 read: the last id read is near 800 (binomial: 4 sigma ~ 57)
    assert 800 - 120 < got[-1] < 800 + 120


@pytest.mark.parametrize("given", [True, False])
def test_stratified_sample_reaches_the_target_proportions(given):
    rng = np.random.RandomState(0)
    labels_np = (rng.rand(4000) < 0.2).astype(np.int32)      # data: 80% class 0, 20% class 1
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(4000, shuffle=False).dequeue()
        label = tf.gather(tf.constant(labels_np), i)
        [xb], lb = tf.contrib.training.stratified_sample([tf.cast(i, tf.float32)], label, [0.5, 0.5], 64,
                                                         init_probs=[0.8, 0.2] if given else None)
        assert xb.shape.as_list() == [64] and lb.shape.as_list() == [64]
        got = _take([xb, lb], 12)
    xs = np.concatenate([x for x, _ in got]).astype(int)
    ls = np.concatenate([lab for _, lab in got])
    np.testing.assert_array_equal(labels_np[xs], ls)          # each example keeps its label
    assert abs(ls.mean() - 0.5) < 0.1                          # 768 draws: 4 sigma ~ 0.07


def test_stratified_sample_checks():
    with tf.Graph().as_default():
        x, label = tf.constant(1.0), tf.constant(0)
        with pytest.raises(ValueError, match="same length"):
            tf.contrib.training.stratified_sample([x], label, [0.5, 0.5], 4, init_probs=[0.2, 0.3, 0.5])
        with pytest.raises(ValueError, match="static shape"):
            tf.contrib.training.stratified_sample([x], label, tf.placeholder(tf.float32, [None]), 4)
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(10, shuffle=False).dequeue()
        [xb], _ = tf.contrib.training.stratified_sample([i], i % 2, [0.5, 0.5], 2, init_probs=[1.0, 0.0])
        with pytest.raises(InvalidArgumentError, match="zero initial probability"):
            _take(xb, 1)
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(10, shuffle=False).dequeue()
        [xb], _ = tf.contrib.training.stratified_sample([i], i % 2, [0.7, 0.7], 2, init_probs=[0.5, 0.5])
        with pytest.raises(InvalidArgumentError):
            _take(xb, 1)
