"""collflow's canned estimators against hand-written TensorFlow 1 graphs computing what TF 1.15's
canned model_fns compute (TF 2.21 ships neither tf.compat.v1.estimator nor tensorflow_estimator).

Each case trains a collflow canned estimator (Linear/DNN/DNNLinearCombined/Baseline, binary,
multi-class or regression, weights, label vocabulary, optimizers by name or instance, loss
reductions) for a few steps on numpy_input_fn batches (shuffle=False) from a known start (zeros,
or a TensorFlow-written checkpoint read by warm_start_from), then compares evaluate() and
predict() with the same model trained in TensorFlow: the logits, the head's loss with
tf.losses.compute_weighted_loss, the optimizer TF1's canned model_fn picks (by name: Linear 0.2,
DNN 0.05, Baseline 0.3, combined DNN 0.001 and linear min(0.005, 1/sqrt(#columns))), and
tf.metrics for the eval metrics."""
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow.compat.v1")

import collflow.compat.v1 as cf  # noqa: E402

E = cf.estimator
N, B, STEPS = 60, 20, 3
RNG = np.random.RandomState(20261128)
X = RNG.randn(N, 2).astype(np.float32)
Z = RNG.randn(N, 3).astype(np.float32)
W = (0.5 + RNG.rand(N)).astype(np.float32)
Y_BIN = (X[:, 0] - X[:, 1] + 0.3 * RNG.randn(N) > 0).astype(np.int64)
Y_MULTI = np.digitize(X[:, 0] + 0.2 * Z[:, 0], [-0.4, 0.4]).astype(np.int64)
Y_SOFT = np.where(RNG.rand(N) < 0.3, 0.5, Y_BIN).astype(np.float32)
Y_REG = (X[:, 0] - 2 * X[:, 1] + Z[:, 1] + 0.5).astype(np.float32)
OPT_CLASSES = {"Adagrad": "AdagradOptimizer", "Adam": "AdamOptimizer", "Ftrl": "FtrlOptimizer",
               "RMSProp": "RMSPropOptimizer", "SGD": "GradientDescentOptimizer"}


def _opt(api, name, lr):
    return getattr(api.train, OPT_CLASSES[name])(lr)


# kind, n_classes (0 = regression, -2 = regression with label_dimension 2), weight? ("norm": a numeric
# column with a normalizer_fn), vocab? ("soft": float binary labels), optimizer spec(s), reduction[, the
# DNN's activation]
CASES = [
    ("linear", 2, False, False, ("name", "Ftrl"), "sum"),
    ("linear", 2, True, "soft", ("name", "Adagrad"), "sum"),
    ("dnn", 2, False, "soft", ("name", "SGD"), "mean"),
    ("linear", 2, True, True, ("name", "SGD"), "sum"),
    ("linear", 3, True, False, ("name", "Adagrad"), "mean"),
    ("linear", 3, False, True, ("inst", "Adam", 0.05), "sum"),
    ("linear", 0, True, False, ("name", "Ftrl"), "sum"),
    ("linear", 0, False, False, ("none",), "sum"),
    ("linear", 0, True, False, ("inst", "Ftrl", 0.1), "sum_by_nonzero"),
    ("linear", -2, True, False, ("name", "Adagrad"), "sum"),
    ("dnn", -2, "norm", False, ("name", "SGD"), "mean"),
    ("baseline", -2, True, False, ("name", "Ftrl"), "sum"),
    ("dnn", 2, True, False, ("name", "Adagrad"), "sum"),
    ("dnn", 2, False, True, ("name", "Adam"), "mean"),
    ("dnn", 4, True, False, ("inst", "SGD", 0.02), "sum"),
    ("dnn", 0, True, False, ("name", "RMSProp"), "sum"),
    ("dnn", 0, False, False, ("call", "Adagrad", 0.1), "sum"),
    ("dnn", 3, "norm", True, ("name", "Adagrad"), "sum", "tanh"),
    ("dnn", 2, "norm", False, ("name", "SGD"), "sum", "sigmoid"),
    ("linear", 2, "norm", False, ("name", "SGD"), "mean"),
    ("combined", 2, True, False, (("name", "Adagrad"), ("name", "Ftrl")), "sum"),
    ("combined", 3, False, False, (("inst", "SGD", 0.05), ("name", "SGD")), "sum"),
    ("combined", 0, True, False, (("name", "Adam"), ("inst", "Adagrad", 0.1)), "mean"),
    ("baseline", 2, True, False, ("name", "Ftrl"), "sum"),
    ("baseline", 3, False, True, ("name", "Adagrad"), "sum"),
    ("baseline", 0, True, False, ("name", "SGD"), "mean"),
]
REDUCTIONS = {"sum": "SUM", "mean": "SUM_OVER_BATCH_SIZE", "sum_by_nonzero": "SUM_BY_NONZERO_WEIGHTS"}
HIDDEN = {"dnn": [4, 3], "combined": [3]}


def _labels(n_classes, vocab):
    if vocab == "soft":  # TF1's binary head trains on float labels in [0, 1] as they are
        return Y_SOFT, Y_SOFT, None
    y = {0: Y_REG, 2: Y_BIN, -2: np.stack([Y_REG, Z[:, 2]], 1)}.get(n_classes, None)
    if y is None:
        y = np.minimum(Y_MULTI, n_classes - 1)
    vocab_list = [f"c{k}" for k in range(n_classes)] if vocab else None
    return y, (np.array(vocab_list)[y] if vocab else y), vocab_list


def _cf_optimizer(spec):
    if spec[0] == "name":
        return spec[1]
    if spec[0] == "none":
        return None
    if spec[0] == "call":
        return lambda: _opt(cf, spec[1], spec[2])
    return _opt(cf, spec[1], spec[2])


def _tf_lr(spec, default_lr):
    return default_lr if spec[0] == "name" else spec[2]


def _initial_dnn(hidden, n_in, units, rng):
    vals, sizes = {}, [n_in] + list(hidden) + [units]
    for i in range(len(sizes) - 1):
        layer = f"dnn/hiddenlayer_{i}" if i < len(hidden) else "dnn/logits"
        vals[f"{layer}/kernel"] = (rng.randn(sizes[i], sizes[i + 1]) * 0.6).astype(np.float32)
        vals[f"{layer}/bias"] = (rng.randn(sizes[i + 1]) * 0.1).astype(np.float32)
    return vals


def _write_tf_checkpoint(vals, path):
    with tf.Graph().as_default():
        vs = [tf.Variable(v, name=n) for n, v in vals.items()]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return tf.train.Saver(vs).save(s, path)


def _act(api, case):
    return getattr(api.nn, case[6]) if len(case) > 6 else api.nn.relu


def _normalize_weights(t):
    return t * 3.0 - 1.0


def _cf_estimator(case, d, warm):
    kind, n_classes, weighted, vocab, opt, red = case[:6]
    _, _, vocab_list = _labels(n_classes, vocab)
    kw = {"model_dir": d, "loss_reduction": getattr(cf.losses.Reduction, REDUCTIONS[red])}
    if weighted:
        kw["weight_column"] = cf.feature_column.numeric_column("w", normalizer_fn=_normalize_weights) \
            if weighted == "norm" else "w"
    if n_classes == -2:
        kw["label_dimension"] = 2
    if n_classes > 0:
        kw["n_classes"] = n_classes
        if vocab_list:
            kw["label_vocabulary"] = vocab_list
    x_col = cf.feature_column.numeric_column("x", shape=[2])
    z_col = cf.feature_column.numeric_column("z", shape=[3])
    suffix = "Classifier" if n_classes > 0 else "Regressor"
    if kind == "linear":
        if opt[0] != "none":
            kw["optimizer"] = _cf_optimizer(opt)
        return getattr(E, "Linear" + suffix)([x_col, z_col], **kw)
    if kind == "dnn":
        return getattr(E, "DNN" + suffix)(HIDDEN[kind], [x_col, z_col], optimizer=_cf_optimizer(opt),
                                          activation_fn=_act(cf, case), warm_start_from=warm, **kw)
    if kind == "combined":
        return getattr(E, "DNNLinearCombined" + suffix)(
            linear_feature_columns=[x_col, z_col], dnn_feature_columns=[x_col], dnn_hidden_units=HIDDEN[kind],
            dnn_optimizer=_cf_optimizer(opt[0]), linear_optimizer=_cf_optimizer(opt[1]), warm_start_from=warm, **kw)
    return getattr(E, "Baseline" + suffix)(optimizer=_cf_optimizer(opt), **kw)


def _run_collflow(case, d, warm):
    kind, n_classes, weighted, vocab, opt, red = case[:6]
    _, labels, _ = _labels(n_classes, vocab)
    feats = {"x": X, "z": Z, "w": W}
    est = _cf_estimator(case, d, warm)
    est.train(E.inputs.numpy_input_fn(feats, labels, batch_size=B, num_epochs=None, shuffle=False), steps=STEPS)
    res = est.evaluate(E.inputs.numpy_input_fn(feats, labels, batch_size=B, num_epochs=1, shuffle=False))
    preds = list(est.predict(E.inputs.numpy_input_fn(feats, batch_size=B, num_epochs=1, shuffle=False)))
    return est, res, preds


def _run_tensorflow(case, dnn_start):
    """The same model, loss, optimizer and metrics written out as a TF1 graph."""
    kind, n_classes, weighted, vocab, opt, red = case[:6]
    y, _, vocab_list = _labels(n_classes, vocab)
    units = {0: 1, 2: 1, -2: 2}.get(n_classes, n_classes)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        z = tf.placeholder(tf.float32, [None, 3])
        w = tf.placeholder(tf.float32, [None])
        lab = tf.placeholder(tf.float32 if n_classes <= 0 or vocab == "soft" else tf.int64,
                             [None, 2] if n_classes == -2 else [None])
        lin_vars, dnn_vars, logits = [], [], 0.0
        if kind in ("linear", "combined"):
            wx, wz = tf.Variable(tf.zeros([2, units])), tf.Variable(tf.zeros([3, units]))
            bias = tf.Variable(tf.zeros([units]))
            lin_vars = [wx, wz, bias]
            logits = logits + tf.matmul(x, wx) + tf.matmul(z, wz) + bias
        if kind in ("dnn", "combined"):
            net = tf.concat([x, z], 1) if kind == "dnn" else x
            n_layers = len(HIDDEN[kind]) + 1
            for i in range(n_layers):
                layer = f"dnn/hiddenlayer_{i}" if i < n_layers - 1 else "dnn/logits"
                k = tf.Variable(dnn_start[f"{layer}/kernel"])
                b = tf.Variable(dnn_start[f"{layer}/bias"])
                dnn_vars += [k, b]
                net = tf.matmul(net, k) + b
                if i < n_layers - 1:
                    net = _act(tf, case)(net)
            logits = logits + net
        if kind == "baseline":
            bias = tf.Variable(tf.zeros([units]))
            lin_vars = [bias]
            logits = bias * tf.ones(tf.stack([tf.shape(x)[0], units]))
        w_norm = _normalize_weights(w) if weighted == "norm" else w
        weights = tf.expand_dims(w_norm, 1) if weighted else 1.0
        if n_classes <= 0:
            labels2 = lab if n_classes == -2 else tf.expand_dims(lab, 1)
            unreduced = tf.square(logits - labels2)
        elif n_classes == 2:
            labels2 = tf.expand_dims(tf.cast(lab, tf.float32), 1)
            unreduced = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels2, logits=logits)
        else:
            labels2 = tf.expand_dims(lab, 1)
            unreduced = tf.expand_dims(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lab, logits=logits), 1)
        loss = tf.losses.compute_weighted_loss(unreduced, weights, reduction=getattr(tf.losses.Reduction,
                                                                                      REDUCTIONS[red]))
        gs = tf.train.get_or_create_global_step()
        if kind == "combined":
            n_cols = 2
            dnn_opt = _opt(tf, opt[0][1], _tf_lr(opt[0], 0.001))
            lin_opt = _opt(tf, opt[1][1], _tf_lr(opt[1], min(0.005, 1 / np.sqrt(n_cols))))
            with tf.control_dependencies([dnn_opt.minimize(loss, var_list=dnn_vars),
                                          lin_opt.minimize(loss, var_list=lin_vars)]):
                train = tf.assign_add(gs, 1)
        else:
            if opt[0] == "none":  # TF1's linear default: Ftrl at min(0.2, 1/sqrt(#columns))
                o = tf.train.FtrlOptimizer(min(0.2, 1 / np.sqrt(2)))
            else:
                o = _opt(tf, opt[1], _tf_lr(opt, {"linear": 0.2, "dnn": 0.05, "baseline": 0.3}[kind]))
            train = o.minimize(loss, var_list=lin_vars + dnn_vars, global_step=gs)
        mw = w_norm if weighted else None
        preds = {}
        metrics = {"loss": tf.metrics.mean(loss), "average_loss": tf.metrics.mean(unreduced, weights=weights)}
        if n_classes <= 0:
            preds["predictions"] = logits
            metrics["prediction/mean"] = tf.metrics.mean(logits, weights=weights)
            metrics["label/mean"] = tf.metrics.mean(labels2, weights=weights)
        elif n_classes == 2:
            p = tf.sigmoid(logits)
            cls = tf.cast(logits > 0, tf.int64)
            preds.update(logits=logits, logistic=p, probabilities=tf.concat([1 - p, p], 1), class_ids=cls)
            lab_f = tf.cast(lab, tf.float32)
            metrics["accuracy"] = tf.metrics.accuracy(lab, cls[:, 0], weights=mw)
            metrics["precision"] = tf.metrics.precision(lab, cls[:, 0], weights=mw)
            metrics["recall"] = tf.metrics.recall(lab, cls[:, 0], weights=mw)
            metrics["prediction/mean"] = tf.metrics.mean(p, weights=weights)
            metrics["label/mean"] = tf.metrics.mean(lab_f, weights=mw)
            metrics["auc"] = tf.metrics.auc(lab, p[:, 0], weights=mw)
            metrics["auc_precision_recall"] = tf.metrics.auc(lab, p[:, 0], weights=mw, curve="PR")
        else:
            cls = tf.argmax(logits, 1)
            preds.update(logits=logits, probabilities=tf.nn.softmax(logits), class_ids=tf.expand_dims(cls, 1))
            metrics["accuracy"] = tf.metrics.accuracy(lab, cls, weights=mw)
        updates = [u for _, u in metrics.values()]
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.local_variables_initializer()])

            def fd(i):
                sl = slice((i * B) % N, (i * B) % N + B)
                return {x: X[sl], z: Z[sl], w: W[sl], lab: y[sl]}
            for i in range(STEPS):
                s.run(train, fd(i))
            for i in range(N // B):
                s.run(updates, fd(i))
            res = {k: s.run(v) for k, (v, _) in metrics.items()}
            out = s.run(preds, {x: X, z: Z})
    res["global_step"] = STEPS
    if n_classes == 2:
        lm = res["label/mean"]
        res["accuracy_baseline"] = max(lm, 1 - lm)
    if n_classes > 0:
        names = vocab_list or [str(k) for k in range(n_classes)]
        out["classes"] = np.array([names[c].encode() for c in out["class_ids"][:, 0]])[:, None]
        out["all_class_ids"] = np.tile(np.arange(n_classes, dtype=np.int32), (N, 1))  # TF1: tf.range, int32
        out["all_classes"] = np.tile(np.array([c.encode() for c in names]), (N, 1))
    return res, out


def _as_bytes(v):
    return v.encode() if isinstance(v, str) else v


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_canned_estimator_matches_a_tf1_graph(tmp_path, case):
    kind, n_classes = case[0], case[1]
    units = {0: 1, 2: 1, -2: 2}.get(n_classes, n_classes)
    warm, start = None, None
    if kind in ("dnn", "combined"):
        start = _initial_dnn(HIDDEN[kind], 5 if kind == "dnn" else 2, units, np.random.RandomState(len(str(case))))
        warm = _write_tf_checkpoint(start, str(tmp_path / "start" / "model.ckpt"))
        # TF1: warm-starting a variable missing from the checkpoint is an error, so name the DNN's
        warm = E.WarmStartSettings(warm, vars_to_warm_start="dnn/")
    est, cres, cpreds = _run_collflow(case, str(tmp_path / "cf"), warm)
    tres, tpreds = _run_tensorflow(case, start)
    assert set(cres) == set(tres), (sorted(cres), sorted(tres))
    for k in tres:
        tol = 0.02 if k.startswith("auc") else 2e-4  # auc: both 200-threshold approximations
        np.testing.assert_allclose(np.float64(cres[k]), np.float64(tres[k]), rtol=tol, atol=tol / 10, err_msg=k)
    assert len(cpreds) == N and set(cpreds[0]) == set(tpreds), (sorted(cpreds[0]), sorted(tpreds))
    for k, tv in tpreds.items():
        cv = np.stack([p[k] for p in cpreds])
        if k in ("classes", "all_classes"):
            assert np.vectorize(_as_bytes, otypes=[object])(cv).tolist() == tv.tolist(), k
        else:
            assert cv.dtype == tv.dtype, (k, cv.dtype, tv.dtype)
            np.testing.assert_allclose(cv, tv, rtol=2e-4, atol=2e-5, err_msg=k)
    # the checkpoints TF1's CheckpointSaverHook writes: at the first and the last step, plus graph.pbtxt
    # (collflow writes its own format, model.ckpt-<step>.h5 and checkpoint.json, which TF cannot read)
    files = set(os.listdir(est.model_dir))
    assert {f"model.ckpt-0.h5", f"model.ckpt-{STEPS}.h5", "checkpoint.json", "graph.pbtxt"} <= files, sorted(files)
    assert cf.train.latest_checkpoint(est.model_dir).endswith(f"model.ckpt-{STEPS}")
    tf_names = dict(cf.train.list_variables(est.model_dir))
    assert list(tf_names["global_step"]) == []
    slot_suffixes = {"Adagrad": ["Adagrad"], "Adam": ["Adam", "Adam_1"], "Ftrl": ["Ftrl", "Ftrl_1"],
                     "RMSProp": ["RMSProp", "RMSProp_1"], "SGD": []}
    model_vars = {n for n in tf_names if n != "global_step" and not n.endswith("_power")
                  and n.split("/")[-1] not in sum(slot_suffixes.values(), [])}
    expect = set()
    if kind in ("linear", "combined"):
        expect |= {"linear/linear_model/x/weights", "linear/linear_model/z/weights", "linear/linear_model/bias_weights"}
    if kind in ("dnn", "combined"):
        expect |= set(start)
    if kind == "baseline":
        expect = {"baseline/bias"}
    assert model_vars == expect
    powers = set()
    # Adam's beta powers: in the head's name scope, which TF1's Linear and DNN models open inside their own
    # ('linear/head/beta1_power', 'dnn/head/beta1_power') and the combined model at the root
    specs = case[4] if kind == "combined" else (case[4],)
    if any(sp[0] != "none" and sp[1] == "Adam" for sp in specs):
        scope = {"linear": "linear/head", "dnn": "dnn/head"}.get(kind, "head")
        powers = {f"{scope}/beta1_power", f"{scope}/beta2_power"}
    assert {n for n in tf_names if n.endswith("_power")} == powers
    # the slots: TF1 names them `<variable>/part_0/<slot>` (Linear), `<variable>/t_0/<slot>` (DNN) and
    # `<variable>/<slot>` (combined: minimize runs outside the models' scopes), by name or instance alike
    slots = set()
    for v in expect:
        part = v.split("/")[0]
        if kind == "combined":
            spec, infix = (case[4][0] if part == "dnn" else case[4][1]), ""
        else:
            spec, infix = case[4], {"linear": "part_0/", "dnn": "t_0/", "baseline": ""}[kind]
        name = "Ftrl" if spec[0] == "none" else spec[1]
        slots |= {f"{v}/{infix}{sfx}" for sfx in slot_suffixes[name]}
    assert set(tf_names) - model_vars - powers - {"global_step"} == slots
