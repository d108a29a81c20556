"""Differential tests of tf.keras's Loss and Metric classes against tf_keras in TF1 graph mode:
standalone losses (every reduction, sample weights), standalone metrics over several
update_state calls with sample weights and a reset, and models compiled with Loss and Metric
objects (fit / evaluate histories, train_on_batch's reset_metrics, save / load_model).
Skipped cleanly without TensorFlow."""
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

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.timeout(600)]

R = np.random.RandomState(11)
PROBS = R.dirichlet(np.ones(4), size=6).astype(np.float32)          # [6, 4] rows summing to 1
ONEHOT = np.eye(4, dtype=np.float32)[[0, 2, 1, 3, 3, 0]]
SPARSE = np.array([0, 2, 1, 3, 3, 0], np.int64)
BIN = (R.rand(6, 3) > 0.5).astype(np.float32)
SCORES = R.uniform(0.02, 0.98, (6, 3)).astype(np.float32)
REG_T = R.uniform(0.5, 2.0, (6, 3)).astype(np.float32)
REG_P = R.uniform(0.5, 2.0, (6, 3)).astype(np.float32)
LOGITS = R.uniform(-2, 2, (6, 4)).astype(np.float32)
SW = np.array([1.0, 0.0, 2.0, 0.5, 1.0, 3.0], np.float32)

LOSSES = [
    ("MeanSquaredError", {}, REG_T, REG_P), ("MeanAbsoluteError", {}, REG_T, REG_P),
    ("MeanAbsolutePercentageError", {}, REG_T, REG_P), ("MeanSquaredLogarithmicError", {}, REG_T, REG_P),
    ("BinaryCrossentropy", {}, BIN, SCORES), ("BinaryCrossentropy", {"label_smoothing": 0.2}, BIN, SCORES),
    ("BinaryCrossentropy", {"from_logits": True}, BIN, LOGITS[:, :3]),
    ("CategoricalCrossentropy", {}, ONEHOT, PROBS),
    ("CategoricalCrossentropy", {"from_logits": True, "label_smoothing": 0.1}, ONEHOT, LOGITS),
    ("SparseCategoricalCrossentropy", {}, SPARSE, PROBS),
    ("SparseCategoricalCrossentropy", {"from_logits": True}, SPARSE, LOGITS),
    ("Hinge", {}, BIN, LOGITS[:, :3]), ("SquaredHinge", {}, 2 * BIN - 1, LOGITS[:, :3]),
    ("CategoricalHinge", {}, ONEHOT, LOGITS), ("Poisson", {}, REG_T, REG_P), ("LogCosh", {}, REG_T, REG_P),
    ("KLDivergence", {}, PROBS[::-1].copy(), PROBS), ("Huber", {"delta": 0.7}, REG_T, REG_P),
    ("CosineSimilarity", {"axis": -1}, REG_T, LOGITS[:, :3]),
]


def _loss_values(tf, name, kw, yt, yp):
    with tf.Graph().as_default(), tf.Session() as sess:
        outs = []
        for red in ("auto", "sum", "sum_over_batch_size", "none"):
            loss = getattr(tf.keras.losses, name)(reduction=red, **kw)
            outs.append(loss(yt, yp))
            outs.append(loss(yt, yp, sample_weight=SW))
        outs.append(getattr(tf.keras.losses, name)(**kw)(yt, yp, sample_weight=2.5))
        return sess.run(outs)


@pytest.mark.parametrize("case", LOSSES, ids=lambda c: c[0] + "".join(f"-{k}" for k in c[1]))
def test_loss_classes(case):
    name, kw, yt, yp = case
    want = _loss_values(tft, name, kw, yt, yp)
    got = _loss_values(cft, name, kw, yt, yp)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("fn", ["categorical_hinge", "cosine_similarity", "cosine", "cosine_proximity", "log_cosh",
                                "kld", "KLD", "kl_divergence", "MSE", "MAE", "MAPE", "MSLE", "mape", "msle",
                                "hinge", "squared_hinge"])
def test_loss_functions(fn):
    def run(tf):
        with tf.Graph().as_default(), tf.Session() as sess:
            yt, yp = ((PROBS[::-1].copy(), PROBS) if fn.lower().startswith("k") else (BIN, SCORES - 0.5)
                      if "hinge" in fn else (REG_T, REG_P))
            return sess.run(getattr(tf.keras.losses, fn)(yt, yp))
    np.testing.assert_allclose(run(cft), run(tft), rtol=2e-5, atol=2e-6)


def test_loss_config_round_trip():
    for tf in (cft, tft):
        loss = tf.keras.losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1, reduction="sum")
        cfg = tf.keras.losses.serialize(loss)
        assert cfg["class_name"] == "BinaryCrossentropy"
        back = tf.keras.losses.deserialize(cfg)
        assert back.get_config() == loss.get_config()
    got = cft.keras.losses.Huber(0.3).get_config()
    want = tft.keras.losses.Huber(0.3).get_config()
    want.pop("fn", None)  # tf_keras 2.x adds the function's name
    assert got == want
    # a tf_keras config (with "fn") loads in collflow
    cfg = tft.keras.losses.serialize(tft.keras.losses.MeanSquaredError(reduction="sum"))
    assert cft.keras.losses.deserialize(cfg).reduction == "sum"


# -- metrics ---------------------------------------------------------------------------------

def _batches(kind, r):
    """Three (y_true, y_pred, sample_weight) batches of the kind a metric takes."""
    out = []
    for n, w in ((5, None), (3, "w"), (4, "w")):
        sw = r.uniform(0, 2, n).astype(np.float32) if w else None
        if kind == "prob":
            yt, yp = (r.rand(n, 3) > 0.5).astype(np.float32), r.rand(n, 3).astype(np.float32)
        elif kind == "cat":
            yt = np.eye(4, dtype=np.float32)[r.randint(0, 4, n)]
            yp = r.dirichlet(np.ones(4), size=n).astype(np.float32)
        elif kind == "sparse":
            yt, yp = r.randint(0, 4, (n, 1)).astype(np.float32), r.dirichlet(np.ones(4), size=n).astype(np.float32)
        elif kind == "reg":
            yt, yp = r.uniform(0.5, 2, (n, 3)).astype(np.float32), r.uniform(0.5, 2, (n, 3)).astype(np.float32)
        elif kind == "int":
            yt, yp = r.randint(0, 3, (n, 2)).astype(np.float32), r.randint(0, 3, (n, 2)).astype(np.float32)
        elif kind == "ids":
            yt, yp = r.randint(0, 3, n), r.randint(0, 3, n)
        else:  # "bin1": one score per sample
            yt, yp = (r.rand(n) > 0.4).astype(np.float32), r.rand(n).astype(np.float32)
        out.append((yt, yp, sw))
    return out


METRICS = [
    ("Accuracy", {}, "int"), ("BinaryAccuracy", {"threshold": 0.3}, "prob"), ("CategoricalAccuracy", {}, "cat"),
    ("SparseCategoricalAccuracy", {}, "sparse"), ("TopKCategoricalAccuracy", {"k": 2}, "cat"),
    ("SparseTopKCategoricalAccuracy", {"k": 2}, "sparse"), ("MeanSquaredError", {}, "reg"),
    ("MeanAbsoluteError", {}, "reg"), ("MeanAbsolutePercentageError", {}, "reg"),
    ("MeanSquaredLogarithmicError", {}, "reg"), ("RootMeanSquaredError", {}, "reg"),
    ("MeanRelativeError", {"normalizer": [1.0, 2.0, 0.5]}, "reg"), ("BinaryCrossentropy", {}, "prob"),
    ("BinaryCrossentropy", {"label_smoothing": 0.1}, "prob"), ("CategoricalCrossentropy", {}, "cat"),
    ("SparseCategoricalCrossentropy", {}, "sparse"), ("Hinge", {}, "prob"), ("SquaredHinge", {}, "prob"),
    ("CategoricalHinge", {}, "cat"), ("Poisson", {}, "reg"), ("KLDivergence", {}, "cat"),
    ("LogCoshError", {}, "reg"), ("CosineSimilarity", {}, "reg"),
    ("TruePositives", {}, "prob"), ("FalsePositives", {"thresholds": [0.2, 0.6]}, "prob"),
    ("TrueNegatives", {}, "bin1"), ("FalseNegatives", {"thresholds": 0.7}, "bin1"),
    ("Precision", {}, "prob"), ("Precision", {"thresholds": [0.3, 0.8]}, "prob"),
    ("Precision", {"top_k": 2}, "prob"), ("Recall", {"class_id": 1}, "prob"), ("Recall", {}, "bin1"),
    ("AUC", {}, "bin1"), ("AUC", {"num_thresholds": 17}, "prob"), ("AUC", {"curve": "PR"}, "bin1"),
    ("AUC", {"curve": "PR", "summation_method": "minoring"}, "prob"),
    ("AUC", {"summation_method": "majoring", "num_thresholds": 9}, "bin1"),
    ("AUC", {"thresholds": [0.1, 0.5, 0.7]}, "prob"),
    ("PrecisionAtRecall", {"recall": 0.6}, "prob"), ("RecallAtPrecision", {"precision": 0.5}, "prob"),
    ("MeanIoU", {"num_classes": 3}, "ids"),
]


def _metric_run(tf, name, kw, kind):
    batches = _batches(kind, np.random.RandomState(5))
    with tf.Graph().as_default(), tf.Session() as sess:
        m = getattr(tf.keras.metrics, name)(**kw)
        ops = [m.update_state(*b) if b[2] is not None else m.update_state(b[0], b[1]) for b in batches]
        call = m(batches[0][0], batches[0][1])
        res = m.result()
        sess.run(tf.variables_initializer(m.variables))
        out = []
        for op in ops:
            sess.run(op)
            out.append(sess.run(res))
        m.reset_states()
        out.append(sess.run(res))
        out.append(sess.run(call))
        return out, m.name, sorted(m.get_config().items(), key=str)


@pytest.mark.parametrize("case", METRICS, ids=lambda c: c[0] + "".join(f"-{k}" for k in c[1]))
def test_metric_classes(case):
    name, kw, kind = case
    want, wname, wcfg = _metric_run(tft, name, kw, kind)
    got, gname, gcfg = _metric_run(cft, name, kw, kind)
    assert gname == wname
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", ["Mean", "Sum"])
def test_reduce_metrics(name):
    def run(tf):
        with tf.Graph().as_default(), tf.Session() as sess:
            m = getattr(tf.keras.metrics, name)()
            x = np.arange(12, dtype=np.float32).reshape(3, 4)
            ops = [m.update_state(x), m.update_state(x, sample_weight=[1.0, 0.0, 2.0]),
                   m.update_state(x, sample_weight=np.full((3, 4), 0.5, np.float32)), m.update_state(7.0, 3.0)]
            sess.run(tf.variables_initializer(m.variables))
            res = m.result()
            return [(sess.run(op), sess.run(res))[1] for op in ops]
    np.testing.assert_allclose(run(cft), run(tft), rtol=1e-6)


def test_mean_tensor():
    def run(tf):
        with tf.Graph().as_default(), tf.Session() as sess:
            m = tf.keras.metrics.MeanTensor()
            a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
            op1 = m.update_state(a)
            op2 = m.update_state(a * 3, sample_weight=[[1.0, 0.0], [2.0, 1.0]])
            sess.run(tf.variables_initializer(m.variables))
            res = m.result()
            return [(sess.run(op), sess.run(res))[1] for op in (op1, op2)]
    np.testing.assert_allclose(run(cft), run(tft), rtol=1e-6)


# -- models ----------------------------------------------------------------------------------

def _model_run(tf, weights=None, save_to=None):
    r = np.random.RandomState(2)
    x = r.rand(50, 5).astype(np.float32)
    y = r.randint(0, 3, 50)
    w = r.uniform(0, 2, 50).astype(np.float32)
    w[::7] = 0.0
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(5,)),
                                 tf.keras.layers.Dense(3)])
        if weights is not None:
            m.set_weights(weights)
        w0 = m.get_weights()
        m.compile(tf.keras.optimizers.SGD(0.2),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[tf.keras.metrics.SparseCategoricalAccuracy(),
                           tf.keras.metrics.SparseTopKCategoricalAccuracy(k=2, name="top2"),
                           tf.keras.metrics.SparseCategoricalCrossentropy(from_logits=True, name="xent")])
        hist = m.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0, sample_weight=w,
                     validation_data=(x[:20], y[:20])).history
        ev = m.evaluate(x, y, batch_size=12, verbose=0, sample_weight=w)
        tb = [m.train_on_batch(x[:10], y[:10], reset_metrics=False), m.train_on_batch(x[10:20], y[10:20],
                                                                                       reset_metrics=False),
              m.train_on_batch(x[20:30], y[20:30]), m.train_on_batch(x[30:40], y[30:40])]
        tob = m.test_on_batch(x[:10], y[:10])
        names = list(m.metrics_names)
        metric_names = [mm.name for mm in m.metrics]
        if save_to is not None:
            m.save(save_to)
        return dict(w0=w0, hist=hist, ev=ev, tb=tb, tob=tob, names=names, metric_names=metric_names,
                    w=m.get_weights())


def test_model_with_loss_and_metric_objects(tmp_path):
    want = _model_run(tft, save_to=str(tmp_path / "tf.h5"))
    got = _model_run(cft, want["w0"], save_to=str(tmp_path / "cf.h5"))
    assert got["names"] == want["names"]
    assert sorted(got["hist"]) == sorted(want["hist"])
    for k in want["hist"]:
        np.testing.assert_allclose(got["hist"][k], want["hist"][k], rtol=2e-4, atol=1e-5, err_msg=k)
    np.testing.assert_allclose(got["ev"], want["ev"], rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(got["tb"], want["tb"], rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(got["tob"], want["tob"], rtol=2e-4, atol=1e-5)
    for a, b in zip(got["w"], want["w"]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
    # either library's file loads compiled in collflow, its loss and metrics objects again
    r = np.random.RandomState(2)
    x = r.rand(50, 5).astype(np.float32)
    y = r.randint(0, 3, 50)
    for path in ("cf.h5", "tf.h5"):
        with cft.Graph().as_default():
            m = cft.keras.models.load_model(str(tmp_path / path))
            assert isinstance(m.loss, cft.keras.losses.SparseCategoricalCrossentropy)
            assert m.metrics_names == want["names"]
            np.testing.assert_allclose(m.evaluate(x, y, batch_size=50, verbose=0)[0],
                                       _eval_tf(tmp_path / "tf.h5", x, y)[0], rtol=1e-4)


def _eval_tf(path, x, y):
    with tft.Graph().as_default():
        m = tft.keras.models.load_model(str(path))
        return m.evaluate(x, y, batch_size=50, verbose=0)


@pytest.mark.parametrize("reduction", ["sum", "sum_over_batch_size"])
def test_loss_reduction_in_compile(reduction):
    def run(tf, weights=None):
        r = np.random.RandomState(4)
        x = r.rand(30, 4).astype(np.float32)
        y = r.rand(30, 2).astype(np.float32)
        w = r.uniform(0, 2, 30).astype(np.float32)
        with tf.Graph().as_default():
            m = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(4,))])
            if weights is not None:
                m.set_weights(weights)
            w0 = m.get_weights()
            m.compile(tf.keras.optimizers.SGD(0.05), loss=tf.keras.losses.Huber(0.5, reduction=reduction),
                      metrics=[tf.keras.metrics.RootMeanSquaredError(), tf.keras.metrics.MeanAbsoluteError()])
            h = m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, sample_weight=w).history
            return w0, h, m.evaluate(x, y, batch_size=7, verbose=0, sample_weight=w)
    w0, want_h, want_e = run(tft)
    _, got_h, got_e = run(cft, w0)
    assert sorted(got_h) == sorted(want_h)
    for k in want_h:
        np.testing.assert_allclose(got_h[k], want_h[k], rtol=2e-4, atol=1e-5, err_msg=k)
    np.testing.assert_allclose(got_e, want_e, rtol=2e-4, atol=1e-5)


def test_accuracy_string_with_loss_object():
    """compile(metrics=["accuracy"]) picks the accuracy by a Loss object's function."""
    def run(tf):
        r = np.random.RandomState(6)
        x = r.rand(20, 3).astype(np.float32)
        y = (r.rand(20, 2) > 0.5).astype(np.float32)
        with tf.Graph().as_default():
            m = tf.keras.Sequential([tf.keras.layers.Dense(2, activation="sigmoid", input_shape=(3,),
                                                           kernel_initializer="ones")])
            m.compile("sgd", loss=tf.keras.losses.BinaryCrossentropy(), metrics=["accuracy"])
            return m.evaluate(x, y, verbose=0)
    np.testing.assert_allclose(run(cft), run(tft), rtol=1e-5)


def test_weighted_metrics():
    """weighted_metrics: the values equal tf_keras's (their names are TF 1.15's weighted_<name>,
    tf_keras 2.x de-duplicates instead: acc, acc_1)."""
    def run(tf, weights=None):
        r = np.random.RandomState(8)
        x = r.rand(40, 5).astype(np.float32)
        y = r.randint(0, 2, 40)
        w = r.uniform(0, 2, 40).astype(np.float32)
        w[::5] = 0.0
        with tf.Graph().as_default():
            a = tf.keras.Input((5,))
            o1 = tf.keras.layers.Dense(2, activation="softmax", name="o1")(a)
            o2 = tf.keras.layers.Dense(1, activation="sigmoid", name="o2")(a)
            m = tf.keras.Model(a, [o1, o2])
            if weights is not None:
                m.set_weights(weights)
            w0 = m.get_weights()
            m.compile(tf.keras.optimizers.SGD(0.1), ["sparse_categorical_crossentropy", "binary_crossentropy"],
                      metrics=["acc", tf.keras.metrics.MeanAbsoluteError()],
                      weighted_metrics=["acc", tf.keras.metrics.MeanSquaredError(), "mse"])
            h = m.fit(x, [y, y], sample_weight=[w, w], batch_size=16, epochs=2, shuffle=False, verbose=0).history
            ev = m.evaluate(x, [y, y], sample_weight=[w, w], batch_size=12, verbose=0)
            return w0, m.metrics_names, [h[k] for k in m.metrics_names], ev
    w0, want_names, want_h, want_e = run(tft)
    _, got_names, got_h, got_e = run(cft, w0)
    assert got_names == ["loss", "o1_loss", "o2_loss", "o1_acc", "o1_mean_absolute_error", "o1_weighted_acc",
                         "o1_weighted_mean_squared_error", "o1_weighted_mean_squared_error", "o2_acc",
                         "o2_mean_absolute_error", "o2_weighted_acc", "o2_weighted_mean_squared_error",
                         "o2_weighted_mean_squared_error"]
    assert len(want_names) == len(got_names)
    np.testing.assert_allclose(got_h, want_h, rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(got_e, want_e, rtol=2e-4, atol=1e-5)


FOCAL = [
    ("BinaryFocalCrossentropy", {}, BIN, SCORES),
    ("BinaryFocalCrossentropy", {"apply_class_balancing": True, "alpha": 0.4, "gamma": 1.5,
                                 "label_smoothing": 0.1}, BIN, SCORES),
    ("BinaryFocalCrossentropy", {"from_logits": True}, BIN, LOGITS[:, :3]),
    ("CategoricalFocalCrossentropy", {}, ONEHOT, PROBS),
    ("CategoricalFocalCrossentropy", {"from_logits": True, "alpha": 0.5, "gamma": 1.0, "label_smoothing": 0.2},
     ONEHOT, LOGITS),
]


@pytest.mark.parametrize("case", FOCAL, ids=lambda c: c[0] + "".join(f"-{k}" for k in c[1]))
def test_focal_losses(case):
    """tf_keras 2.x's focal cross-entropies (not in TF 1.15): classes and functions."""
    name, kw, yt, yp = case
    want = _loss_values(tft, name, kw, yt, yp)
    got = _loss_values(cft, name, kw, yt, yp)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
    fn = "binary_focal_crossentropy" if name.startswith("Binary") else "categorical_focal_crossentropy"

    def run(tf):
        with tf.Graph().as_default(), tf.Session() as sess:
            return sess.run(getattr(tf.keras.metrics, fn)(yt, yp, **kw))
    np.testing.assert_allclose(run(cft), run(tft), rtol=2e-5, atol=2e-6)


IOUS = [
    ("IoU", {"num_classes": 3, "target_class_ids": [0, 2]}, "ids"),
    ("IoU", {"num_classes": 3, "target_class_ids": [1], "ignore_class": 2}, "ids"),
    ("BinaryIoU", {"target_class_ids": [1], "threshold": 0.4}, "bin1"),
    ("BinaryIoU", {"name": "biou"}, "bin1"),
    ("OneHotIoU", {"num_classes": 4, "target_class_ids": [0, 3]}, "cat"),
    ("OneHotMeanIoU", {"num_classes": 4}, "cat"),
]


@pytest.mark.parametrize("case", IOUS, ids=lambda c: c[0] + "".join(f"-{k}" for k in c[1]))
def test_iou_metrics(case):
    """tf_keras 2.x's IoU family (not in TF 1.15)."""
    name, kw, kind = case
    want, wname, wcfg = _metric_run(tft, name, kw, kind)
    got, gname, gcfg = _metric_run(cft, name, kw, kind)
    assert gname == wname
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)

