"""Differential tests against TensorFlow 1.x on the programs that save a model and load it back
without its code: Saver.save's .meta + tf.train.import_meta_graph (restore, fetch by name, go
on training with the train_op from a collection, fine-tune with a new optimizer) and
tf.saved_model.simple_save + loader.load.  Each library reads the files it wrote; the program
is written once against `tf`, and every fetched number is compared.  Skipped cleanly without
TensorFlow (tests/test_meta_graph.py checks the same behaviour by hand).
"""
import os
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning"), pytest.mark.timeout(300)]


def _program(tf, workdir):
    r = np.random.RandomState(0)
    X = r.rand(32, 6).astype(np.float32)
    Y = r.randint(0, 4, 32)
    init = {"w1": r.uniform(-0.5, 0.5, (6, 16)).astype(np.float32),
            "w2": r.uniform(-0.5, 0.5, (16, 4)).astype(np.float32)}
    out = {}
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        w1 = tf.Variable(init["w1"], name="w1")
        b1 = tf.Variable(tf.zeros([16]), name="b1")
        w2 = tf.Variable(init["w2"], name="w2")
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        # a data-dependent loop and a cond, so the loaded graph carries control flow
        steps = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 0.5 + tf.reduce_mean(h)),
                              [tf.constant(0), tf.constant(0.0)])[1]
        h = tf.cond(steps > 0.1, lambda: h * 1.5, lambda: h)
        logits = tf.identity(tf.matmul(h, w2), name="logits")
        loss = tf.identity(tf.losses.sparse_softmax_cross_entropy(y, logits), name="loss")
        gs = tf.train.get_or_create_global_step()
        train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss, global_step=gs)
        tf.add_to_collection("train_op", train)
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out["losses_before"] = [s.run([loss, train], {x: X, y: Y})[0] for _ in range(4)]
            prefix = saver.save(s, os.path.join(workdir, "model.ckpt"), global_step=gs)
            out["logits_at_save"] = s.run(logits, {x: X})
            out["losses_went_on"] = [s.run([loss, train], {x: X, y: Y})[0] for _ in range(3)]
            tf.saved_model.simple_save(s, os.path.join(workdir, "served"), {"x": x}, {"logits": logits})
            out["logits_served"] = s.run(logits, {x: X})
    with tf.Graph().as_default() as g:
        saver = tf.train.import_meta_graph(prefix + ".meta")
        train = tf.get_collection("train_op")[0]
        with tf.Session() as s:
            saver.restore(s, prefix)
            out["step_restored"] = s.run(tf.train.get_global_step())
            out["logits_restored"] = s.run("logits:0", {"x:0": X})
            out["losses_after_import"] = [s.run(["loss:0", train], {"x:0": X, "y:0": Y})[0] for _ in range(3)]
            out["vars_after"] = {v.op.name: s.run(v) for v in tf.global_variables()}
    with tf.Graph().as_default() as g:
        saver = tf.train.import_meta_graph(prefix + ".meta", import_scope="ft")
        # fine-tuning the last layer only: the new optimizer's gradient avoids the loop and cond
        w2 = [v for v in tf.trainable_variables() if v.op.name == "ft/w2"][0]
        tune = tf.train.GradientDescentOptimizer(0.2, name="tune").minimize(
            g.get_tensor_by_name("ft/loss:0"), var_list=[w2])
        with tf.Session() as s:
            saver.restore(s, prefix)
            out["fine_tune"] = [s.run(["ft/loss:0", tune], {"ft/x:0": X, "ft/y:0": Y})[0] for _ in range(3)]
    with tf.Graph().as_default() as g, tf.Session() as s:
        meta = tf.saved_model.loader.load(s, [tf.saved_model.tag_constants.SERVING], os.path.join(workdir, "served"))
        sig = meta.signature_def["serving_default"]
        out["logits_loaded"] = s.run(sig.outputs["logits"].name, {sig.inputs["x"].name: X})
        out["signature"] = (sig.method_name, sig.inputs["x"].name, sig.outputs["logits"].name)
    return out


def test_save_import_meta_graph_and_saved_model_agree_with_tensorflow():
    results = []
    for tf in (tft, cft):
        d = tempfile.mkdtemp()
        results.append(_program(tf, d))
    want, got = results
    assert sorted(want) == sorted(got)
    assert want["signature"] == got["signature"]
    assert int(want["step_restored"]) == int(got["step_restored"]) == 4
    for k in ("losses_before", "logits_at_save", "losses_went_on", "logits_served", "logits_restored",
              "losses_after_import", "fine_tune", "logits_loaded"):
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=2e-5, atol=1e-6, err_msg=k)
    # the loaded graph continued exactly where the saved one did
    np.testing.assert_allclose(got["losses_after_import"], got["losses_went_on"], rtol=0, atol=0)
    assert sorted(want["vars_after"]) == sorted(got["vars_after"])
    for k in want["vars_after"]:
        np.testing.assert_allclose(got["vars_after"][k], want["vars_after"][k], rtol=2e-5, atol=1e-6, err_msg=k)
