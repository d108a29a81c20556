"""Differential tests against TensorFlow: checkpoints in TensorFlow's own format (V2) go both
ways.  TensorFlow trains and saves, collflow restores (tf.train.latest_checkpoint on TF's
directory) and trains on to the same losses; collflow saves with
Saver(checkpoint_format="tensorflow"), TensorFlow restores (its latest_checkpoint reads the
state file collflow wrote) and trains on to the same losses; TF's V1 files (one table per
checkpoint, TF before 1.0) restore likewise; every dtype a variable can have,
a 4 MB tensor, and TF's partitioned variables read whole.  Skipped cleanly without TensorFlow
(tests/test_tf_checkpoint.py checks the format by hand with bytes TensorFlow wrote).
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning"), pytest.mark.timeout(300)]

R = np.random.default_rng(0)
X = R.normal(size=(32, 6)).astype(np.float32)
Y = R.integers(0, 4, 32).astype(np.int64)


def _build(tf):
    x = tf.placeholder(tf.float32, [None, 6])
    y = tf.placeholder(tf.int64, [None])
    w1 = tf.get_variable("layer1/w", [6, 16], initializer=tf.random_uniform_initializer(-0.5, 0.5, seed=1))
    b1 = tf.get_variable("layer1/b", [16], initializer=tf.zeros_initializer())
    w2 = tf.get_variable("layer2/w", [16, 4], initializer=tf.random_uniform_initializer(-0.5, 0.5, seed=2))
    big = tf.get_variable("big", [1000, 1000], initializer=tf.random_uniform_initializer(-1, 1, seed=3))
    h = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.matmul(h, w2) + tf.reduce_mean(big) * 0.0
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    gs = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=gs)
    return x, y, loss, train


def _steps(tf, s, ops, n):
    x, y, loss, train = ops
    return [float(s.run([loss, train], {x: X, y: Y})[0]) for _ in range(n)]


@pytest.mark.parametrize("version", ["V2", "V1"])
def test_tensorflow_saves_collflow_restores_and_trains_on(tmp_path, version):
    d = str(tmp_path)
    with tft.Graph().as_default():
        ops = _build(tft)
        saver = tft.train.Saver(write_version=getattr(tft.train.SaverDef, version))
        with tft.Session() as s:
            s.run(tft.global_variables_initializer())
            _steps(tft, s, ops, 4)
            saver.save(s, os.path.join(d, "model.ckpt"), global_step=tft.train.get_global_step())
            want_vars = {v.op.name: s.run(v) for v in tft.global_variables()}
            want = _steps(tft, s, ops, 4)
    with cft.Graph().as_default():
        ops = _build(cft)
        saver = cft.train.Saver()
        with cft.Session() as s:
            path = cft.train.latest_checkpoint(d)
            assert path == os.path.join(d, "model.ckpt-4")
            res = saver.restore(s, path)
            assert res.global_step == 4 and not res.missing and not res.mismatched
            for v in cft.global_variables():
                np.testing.assert_array_equal(s.run(v), want_vars[v.op.name], err_msg=v.op.name)
            got = _steps(cft, s, ops, 4)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_collflow_saves_tensorflow_restores_and_trains_on(tmp_path):
    d = str(tmp_path)
    with cft.Graph().as_default():
        ops = _build(cft)
        saver = cft.train.Saver(checkpoint_format="tensorflow")
        with cft.Session() as s:
            s.run(cft.global_variables_initializer())
            _steps(cft, s, ops, 3)
            saver.save(s, os.path.join(d, "model.ckpt"), global_step=cft.train.get_global_step())
            _steps(cft, s, ops, 2)
            path = saver.save(s, os.path.join(d, "model.ckpt"), global_step=cft.train.get_global_step())
            want_vars = {v.op.name: s.run(v) for v in cft.global_variables()}
            want = _steps(cft, s, ops, 4)
    assert tft.train.latest_checkpoint(d) == path
    state = tft.train.get_checkpoint_state(d)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == ["model.ckpt-3", "model.ckpt-5"]
    with tft.Graph().as_default():
        ops = _build(tft)
        saver = tft.train.Saver()
        with tft.Session() as s:
            saver.restore(s, tft.train.latest_checkpoint(d))
            for v in tft.global_variables():
                np.testing.assert_array_equal(s.run(v), want_vars[v.op.name], err_msg=v.op.name)
            got = _steps(tft, s, ops, 4)
    np.testing.assert_allclose(got, want, rtol=1e-5)


VALUES = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 3, "f64": np.array([np.pi, -np.inf]),
          "f16": np.array([0.5, -2], np.float16), "i32": np.array([[-7, 1 << 30]], np.int32),
          "i64": np.array(-(1 << 40)), "i8": np.array([-128, 5], np.int8), "u8": np.array([0, 255], np.uint8),
          "flags": np.array([True, False]), "strs": np.array([b"ab", b"", "\u00e9".encode() * 300], dtype=object),
          "empty": np.zeros((0, 4), np.float32)}


def _variables(tf):
    return [tf.Variable(v, name=k) for k, v in VALUES.items()]


@pytest.mark.parametrize("writer", ["tensorflow", "tensorflow-v1", "collflow"])
def test_every_dtype_both_ways(tmp_path, writer):
    prefix = os.path.join(str(tmp_path), "all")
    lib = cft if writer == "collflow" else tft
    with lib.Graph().as_default():
        vs = _variables(lib)
        kw = {"checkpoint_format": "tensorflow"} if lib is cft else {}
        if writer == "tensorflow-v1":
            kw = {"write_version": tft.train.SaverDef.V1}
        saver = lib.train.Saver(vs, **kw)
        with lib.Session() as s:
            s.run(lib.global_variables_initializer())
            saver.save(s, prefix, write_meta_graph=False)
    # TF's own V1 reader fails on some of these dtypes ("Data type not supported"): collflow's only
    for lib in (cft,) if writer == "tensorflow-v1" else (tft, cft):
        r = lib.train.NewCheckpointReader(prefix)
        shapes = r.get_variable_to_shape_map()
        for k, v in VALUES.items():
            got = r.get_tensor(k)
            assert list(shapes[k]) == list(np.shape(v)), (lib.__name__, k)
            if k == "strs":
                assert list(got) == list(v)
            else:
                assert np.asarray(got).dtype == np.asarray(v).dtype, (lib.__name__, k)
                np.testing.assert_array_equal(got, v)


def test_partitioned_variables_read_whole(tmp_path):
    prefix = os.path.join(str(tmp_path), "part")
    with tft.Graph().as_default():
        emb = tft.get_variable("emb", [11, 3], initializer=tft.random_normal_initializer(seed=1),
                               partitioner=tft.fixed_size_partitioner(3))
        w = tft.get_variable("w", [4, 6], initializer=tft.random_normal_initializer(seed=2),
                             partitioner=tft.fixed_size_partitioner(2, axis=1))
        with tft.Session() as s:
            s.run(tft.global_variables_initializer())
            full_emb, full_w = s.run([tft.concat(list(emb), 0), tft.concat(list(w), 1)])
            tft.train.Saver().save(s, prefix)
    r = cft.train.NewCheckpointReader(prefix)
    assert r.get_variable_to_shape_map() == {"emb": [11, 3], "w": [4, 6]}
    np.testing.assert_array_equal(r.get_tensor("emb"), full_emb)
    np.testing.assert_array_equal(r.get_tensor("w"), full_w)
    # restored into collflow's (unpartitioned) variables of the whole shape
    with cft.Graph().as_default():
        e = cft.get_variable("emb", [11, 3])
        with cft.Session() as s:
            cft.train.Saver([e]).restore(s, prefix)
            np.testing.assert_array_equal(s.run(e), full_emb)
