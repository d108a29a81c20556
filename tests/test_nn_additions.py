"""tf.nn.ctc_greedy_decoder (graph/ops/ctc_ops.py) and the 1-d / v2 pools (conv_dispatch_ops.py).

The decoder: best-path decoding with TF's rules -
repeats merged before blanks are dropped (so a blank separates two equal labels), the
blank the last class unless blank_index says, log_probability minus the sum of each
step's largest logit - stated by hand and checked against TensorFlow where installed."""

import numpy as np
import pytest

import collflow.compat.v1 as tf
from tf_peer import run_in_both


def _inputs():
    x = np.random.default_rng(0).standard_normal((6, 3, 4)).astype(np.float32)
    # entry 0's best path: 2 2 (blank 3) 3 0 2 -> 2 0 2 merged, 2 2 0 2 not
    best0 = [2, 2, 3, 3, 0, 2]
    for t, c in enumerate(best0):
        x[t, 0, c] = 5.0 + t
    return x, np.array([6, 4, 0], np.int32)


def _program(T):
    x, seq = _inputs()
    out = []
    for kw in ({}, {"merge_repeated": False}, {"blank_index": 0}, {"blank_index": -1}):
        (d,), lp = T.nn.ctc_greedy_decoder(T.constant(x), seq, **kw)
        out.append((d, lp))
    return out


def test_greedy_decoding_by_hand():
    x, seq = _inputs()
    with tf.Graph().as_default(), tf.Session() as s:
        r = s.run(_program(tf))
    (d, lp), (dn, _), (db, _), (dl, _) = r
    rows = [d.values[d.indices[:, 0] == b].tolist() for b in range(3)]
    assert rows[0] == [2, 0, 2] and rows[2] == []
    assert dn.values[dn.indices[:, 0] == 0].tolist() == [2, 2, 0, 2]
    assert db.values[db.indices[:, 0] == 0].tolist() == [2, 3, 2]  # class 0 the blank: 3 is a label
    np.testing.assert_array_equal(dl.values, d.values)            # -1: the last class
    np.testing.assert_array_equal(d.dense_shape, [3, max(len(r_) for r_ in rows)])
    np.testing.assert_allclose(lp[:, 0], [-x[:6, 0].max(1).sum(), -x[:4, 1].max(1).sum(), 0.0], rtol=1e-6)
    with tf.Graph().as_default():
        (bad,), _ = tf.nn.ctc_greedy_decoder(tf.constant(x), [7, 1, 1])
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError, match="sequence_length"):
            s.run(bad)


def test_greedy_decoding_matches_tensorflow():
    ours, theirs = run_in_both(_program)
    for (d, lp), (e, lq) in zip(ours, theirs):
        for a, b in ((d.indices, e.indices), (d.values, e.values), (d.dense_shape, e.dense_shape)):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(lp, lq, rtol=1e-6)


def _pools(T):
    x = np.random.default_rng(1).standard_normal((2, 9, 3)).astype(np.float32)
    x3 = np.random.default_rng(2).standard_normal((2, 5, 6, 7, 3)).astype(np.float32)
    p = T.constant(x)
    out = [T.nn.max_pool1d(p, 3, 2, "VALID"), T.nn.avg_pool1d(p, [2], [1, 2, 1], "SAME"),
           T.nn.max_pool_v2(p, 2, 2, "SAME"), T.nn.avg_pool_v2(T.constant(x3), [2, 2, 3], 2, "VALID"),
           T.nn.max_pool_v2(T.constant(x3[:, 0]), [1, 3, 2, 1], [1, 2, 2, 1], "SAME")]
    out.append(T.gradients(T.reduce_sum(out[0] * out[0]) + T.reduce_sum(out[1]), p)[0])
    return out


def test_pool1d_and_pool_v2():
    """1-d pools by hand; every form against TensorFlow where installed."""
    with tf.Graph().as_default(), tf.Session() as s:
        r = s.run(_pools(tf))
    x = np.random.default_rng(1).standard_normal((2, 9, 3)).astype(np.float32)
    want = np.stack([x[:, i:i + 3].max(1) for i in range(0, 7, 2)], 1)
    np.testing.assert_allclose(r[0], want)
    assert r[1].shape == (2, 5, 3) and r[3].shape == (2, 2, 3, 3, 3)
    _, theirs = run_in_both(_pools)
    for a, b in zip(r, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
