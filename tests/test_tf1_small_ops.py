"""Small TF1 names: searchsorted, batch_gather, switch_case, uniform_unit_scaling_initializer,
logical_xor, train.checkpoints_iterator (by hand; against TF where installed)."""
import os
import threading
import time

import numpy as np
import pytest

import collflow.compat.v1 as cf
from tf_peer import run_in_both


def _run(fetches, feed=None):
    with cf.Session() as s:
        s.run(cf.global_variables_initializer())
        return s.run(fetches, feed)


def test_searchsorted():
    seq = np.array([[0, 3, 9, 9, 10], [1, 2, 3, 4, 5]], np.float32)
    vals = np.array([[2, 4, 9, 12], [0, 3, 5, 6]], np.float32)
    with cf.Graph().as_default():
        left, right, wide = _run([cf.searchsorted(seq, vals), cf.searchsorted(seq, vals, side="right"),
                                  cf.searchsorted(seq, vals, out_type=cf.int64)])
    np.testing.assert_array_equal(left, [[1, 2, 2, 5], [0, 2, 4, 5]])
    np.testing.assert_array_equal(right, [[1, 2, 4, 5], [0, 3, 5, 5]])
    assert wide.dtype == np.int64
    with pytest.raises(ValueError, match="side must be"):
        cf.searchsorted(seq, vals, side="middle")


def test_batch_gather_and_switch_case_and_xor():
    params = np.arange(24).reshape(2, 3, 4)
    idx = np.array([[2, 0], [1, 1]])
    with cf.Graph().as_default():
        i = cf.placeholder(cf.int32, [])
        sc = cf.switch_case(i, [lambda: cf.constant(10), lambda: cf.constant(20)], default=lambda: cf.constant(-1))
        last = cf.switch_case(i, {0: lambda: cf.constant(1.0), 3: lambda: cf.constant(3.0)})
        bg = cf.batch_gather(params, idx)
        x = cf.logical_xor([True, True, False], [True, False, False])
        with cf.Session() as s:
            got = [s.run([sc, last], {i: k}) for k in (0, 1, 3, 7)]
            bgv, xv = s.run([bg, x])
    assert [g[0] for g in got] == [10, 20, -1, -1] and [g[1] for g in got] == [1.0, 3.0, 3.0, 3.0]
    np.testing.assert_array_equal(bgv, [params[0, [2, 0]], params[1, [1, 1]]])
    np.testing.assert_array_equal(xv, [False, True, False])


def test_uniform_unit_scaling_initializer():
    with cf.Graph().as_default():
        v = cf.get_variable("w", [300, 50], initializer=cf.uniform_unit_scaling_initializer(factor=2.0, seed=3))
        w = _run(v)
    limit = 2.0 * np.sqrt(3.0 / 300)
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.9 * limit


def test_checkpoints_iterator(tmp_path):
    d = str(tmp_path)
    seen = []

    def saver_thread():
        g = cf.Graph()
        with g.as_default():
            v = cf.Variable(1.0, name="v")
            saver = cf.train.Saver()
            with cf.Session() as s:
                s.run(v.initializer)
                for step in (1, 2):
                    saver.save(s, os.path.join(d, "model.ckpt"), global_step=step)
                    time.sleep(0.4)
    t = threading.Thread(target=saver_thread)
    t.start()
    for path in cf.train.checkpoints_iterator(d, timeout=3):
        seen.append(os.path.basename(path))
        if len(seen) == 2:
            break
    t.join()
    assert seen == ["model.ckpt-1", "model.ckpt-2"]
    assert list(cf.train.checkpoints_iterator(str(tmp_path / "nothing"), timeout=0.2)) == []


def test_same_values_as_tensorflow():
    seq = np.sort(np.random.default_rng(0).integers(0, 20, (3, 8)), axis=1).astype(np.int32)
    vals = np.random.default_rng(1).integers(-2, 22, (3, 5)).astype(np.int32)
    params = np.arange(60.0).reshape(3, 4, 5)
    idx = np.array([[3, 0], [1, 1], [2, 0]])

    def program(T):
        i = T.constant(2)
        return [T.searchsorted(seq, vals), T.searchsorted(seq, vals, side="right"), T.batch_gather(params, idx),
                T.switch_case(i, [lambda: T.constant(1), lambda: T.constant(2)]),
                T.logical_xor([True, False], [True, True])]
    ours, theirs = run_in_both(program)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
