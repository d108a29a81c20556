"""Randomised differential checks against TensorFlow of the sequence feature columns
(collflow/nn/feature_column/sequence_columns.py).

TF 2.21 keeps the columns (tf.compat.v1.feature_column.sequence_*) and the columns' TF1 methods
(_get_sequence_dense_tensor over a _LazyBuilder) but not TF 1.15's
tf.contrib.feature_column.sequence_input_layer; the reference layer here rebuilds that
function's few lines around TF's own column methods (columns in name order, a variable scope
per column under "sequence_input_layer", each output reshaped to [batch, T, n], concatenated),
and is itself checked against tf.keras.experimental.SequenceFeatures.

Each seed draws per-example lengths (0 included) and 1-4 columns: embedding_column (mean / sum
/ sqrtn, [batch, T] or [batch, T, k] ids) or indicator_column over sequence columns with
identity (with default_value), vocabulary list (OOV buckets), vocabulary file and int hash
ids, and sequence_numeric_column (shape (1,), (3,), (2, 2); default_value; normalizer_fn;
[batch, n] or [batch, T, k] input).  Every variable gets the same values by name; compared:
the output, the sequence lengths, the gradients of sum(output * W) w.r.t. the variables, the
variables' names and the TRAINABLE / GLOBAL / MODEL collections.  Also the errors for wrong
columns (same message up to the class names; the non-sequence column passed to
sequence_input_layer is TF 1.15's own check, in the serial tests), concatenate_context_input,
and tf.keras.experimental.SequenceFeatures against tf_keras's (outputs, lengths, gradients,
variable names and collections).  Skipped cleanly without TensorFlow.
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

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.timeout(600)]

SEEDS = list(range(40))
VOCAB = ["v0", "v1", "v2", "v3"]


def _tf_sequence_input_layer(features, columns):
    """TF 1.15's contrib sequence_input_layer around TF's own column methods."""
    from tensorflow.python.feature_column import feature_column as fc_old
    from tensorflow.python.feature_column import feature_column_v2 as fc2
    with tft.variable_scope(None, default_name="sequence_input_layer", values=list(features.values())):
        builder = fc_old._LazyBuilder(features)
        cache = fc2.FeatureTransformationCache(features)
        outs, lens = [], []
        for c in sorted(columns, key=lambda x: x.name):
            if hasattr(c, "_var_scope_name"):
                with tft.variable_scope(None, default_name=c._var_scope_name):
                    dense, length = c._get_sequence_dense_tensor(builder)
            else:  # sequence_numeric_column is a v2 column only (it makes no variables)
                dense, length = c.get_sequence_dense_tensor(cache, None)
            n = int(np.prod(c.variable_shape if hasattr(c, "variable_shape") else c._variable_shape))
            shape = tft.shape(dense)
            outs.append(tft.reshape(dense, tft.concat([shape[:2], [n]], 0)))
            lens.append(length)
        checks = [tft.assert_equal(lens[0], x) for x in lens[1:]]
        with tft.control_dependencies(checks):
            return tft.concat(outs, -1), tft.identity(lens[0])


def _draw(seed, vocab_file):
    """The case: a list of column specs and the lengths, as plain data for both libraries."""
    r = np.random.default_rng(seed)
    batch = int(r.integers(1, 5))
    lengths = r.integers(0, 5, batch)
    if seed % 4 == 0:
        lengths[-1] = 0  # trailing empty rows are padded with zero lengths
    steps = int(lengths.max()) + int(r.integers(0, 2))  # dense T may exceed every length
    steps = max(steps, 1)
    specs = []
    for j in range(int(r.integers(1, 5))):
        kind = r.choice(["identity", "vocab_list", "vocab_file", "hash", "numeric"])
        wrap = r.choice(["embedding", "indicator"])
        spec = dict(key=f"f{j}", kind=kind, wrap=wrap, combiner=r.choice(["mean", "sum", "sqrtn"]),
                    rank3=bool(r.integers(0, 2)), k=int(r.integers(1, 4)))
        if kind == "numeric":
            spec["shape"] = [(1,), (3,), (2, 2)][int(r.integers(0, 3))]
            spec["default"] = float(r.choice([0.0, -1.0, 2.5]))
            spec["normalize"] = bool(r.integers(0, 2))
        spec["data"] = _sparse_data(r, spec, lengths, steps)
        specs.append(spec)
    return specs, steps, lengths


def _sparse_data(r, spec, lengths, steps):
    """(indices, values, dense_shape): each row's last step is present, others at random."""
    idx, vals = [], []
    numeric = spec["kind"] == "numeric"
    n = int(np.prod(spec["shape"])) if numeric else 1
    for b, length in enumerate(lengths):
        for t in range(int(length)):
            if t != length - 1 and r.random() < 0.3:
                continue
            if spec["rank3"]:
                inner = sorted(r.choice(n if numeric else spec["k"],
                                        size=int(r.integers(1, (n if numeric else spec["k"]) + 1)), replace=False))
                if t == length - 1 and not numeric:
                    inner = inner or [0]
                idx += [[b, t, int(i)] for i in inner]
            elif numeric:
                cols = sorted(set(r.choice(n, size=int(r.integers(1, n + 1)))) | ({n - 1} if t == length - 1 else set()))
                idx += [[b, t * n + int(c)] for c in cols]
            else:
                idx.append([b, t])
    count = len(idx)
    if numeric:
        vals = r.normal(size=count).astype(np.float32)
        shape = [len(lengths), steps, n] if spec["rank3"] else [len(lengths), steps * n]
    else:
        kind = spec["kind"]
        if kind == "identity":
            vals = r.integers(0, 7, count).astype(np.int64)  # >= 5: out of range, default_value 1
        elif kind == "hash":
            vals = r.integers(-50, 50, count).astype(np.int64)
        else:
            vals = np.array([r.choice(VOCAB + ["oov", "zz"]) for _ in range(count)], dtype=object)
        shape = [len(lengths), steps, spec["k"]] if spec["rank3"] else [len(lengths), steps]
    return np.array(idx, np.int64).reshape(-1, len(shape)), vals, shape


def _build(tf, spec, vocab_file):
    fc = tf.feature_column
    key, kind = spec["key"], spec["kind"]
    if kind == "numeric":
        # normalizer_fn gets the SparseTensor, as TF's
        norm = ((lambda x: tf.SparseTensor(x.indices, x.values * 2.0 - 0.5, x.dense_shape))
                if spec["normalize"] else None)
        return fc.sequence_numeric_column(key, shape=spec["shape"], default_value=spec["default"], normalizer_fn=norm)
    if kind == "identity":
        cat = fc.sequence_categorical_column_with_identity(key, 5, default_value=1)
    elif kind == "vocab_list":
        cat = fc.sequence_categorical_column_with_vocabulary_list(key, VOCAB, num_oov_buckets=2)
    elif kind == "vocab_file":
        cat = fc.sequence_categorical_column_with_vocabulary_file(key, vocab_file, default_value=0)
    else:
        cat = fc.sequence_categorical_column_with_hash_bucket(key, 6, dtype=tf.int64)
    if spec["wrap"] == "indicator":
        return fc.indicator_column(cat)
    return fc.embedding_column(cat, 3, combiner=spec["combiner"])


def _evaluate(tf, specs, vocab_file, seed, layer):
    g = tf.Graph()
    with g.as_default():
        feats = {}
        for s in specs:
            idx, vals, shape = s["data"]
            dtype = tf.float32 if s["kind"] == "numeric" else tf.string if vals.dtype == object else tf.int64
            vals = vals.astype(str) if vals.dtype == object else vals
            feats[s["key"]] = tf.SparseTensor(idx, tf.constant(vals, dtype), shape)
        cols = [_build(tf, s, vocab_file) for s in specs][::-1]  # the layers sort them by name
        out, length = layer(feats, cols)
        r = np.random.default_rng(seed + 1000)
        variables = sorted(tf.global_variables(), key=lambda v: v.name)
        assigns = [v.assign(r.normal(size=v.shape.as_list()).astype(np.float32)) for v in variables]
        w = tf.constant(r.normal(size=(4, 8, 64)).astype(np.float32))
        shape = tf.shape(out)
        loss = tf.reduce_sum(out * w[:shape[0], :shape[1], :shape[2]])
        grads = [tf.convert_to_tensor(x) for x in tf.gradients(loss, variables)] if variables else []
        names = {k: [v.name for v in tf.get_collection(getattr(tf.GraphKeys, k))]
                 for k in ("GLOBAL_VARIABLES", "TRAINABLE_VARIABLES", "MODEL_VARIABLES")}
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            sess.run(assigns)
            vals = sess.run([out, length] + grads)
    return vals, names


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("seqvocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB[::-1]) + "\n")
    return str(path)


@pytest.mark.parametrize("seed", SEEDS)
def test_sequence_input_layer_vs_tensorflow(seed, vocab_file):
    specs, steps, lengths = _draw(seed, vocab_file)
    want, want_names = _evaluate(tft, specs, vocab_file, seed, _tf_sequence_input_layer)
    got, got_names = _evaluate(cft, specs, vocab_file, seed, cft.contrib.feature_column.sequence_input_layer)
    assert got_names == want_names
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[1], lengths)
    assert got[0].shape == want[0].shape
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_reference_layer_matches_keras_sequence_features(seed, vocab_file):
    import tf_keras
    specs, _, _ = _draw(seed, vocab_file)

    def keras_layer(features, columns):
        return tf_keras.experimental.SequenceFeatures(columns, name="sequence_input_layer")(features)
    want, _ = _evaluate(tft, specs, vocab_file, seed, _tf_sequence_input_layer)
    got, _ = _evaluate(tft, specs, vocab_file, seed, keras_layer)
    for a, b in zip(got[:2], want[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("seed", [3, 4, 6, 7, 9])
def test_keras_sequence_features_vs_tf_keras(seed, vocab_file):
    import tf_keras
    specs, _, _ = _draw(seed, vocab_file)

    def layer(lib):
        return lambda features, columns: lib.experimental.SequenceFeatures(columns)(features)
    want, want_names = _evaluate(tft, specs, vocab_file, seed, layer(tf_keras))
    got, got_names = _evaluate(cft, specs, vocab_file, seed, layer(cft.keras))
    assert got_names == want_names
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def _message(tf, fn):
    with tf.Graph().as_default():
        with pytest.raises(ValueError) as e:
            fn(tf)
    # TF 2.21's columns are its v2 classes, whose messages name SequenceFeatures, DenseFeatures
    # and SequenceCategoricalColumn where TF 1.15's (and collflow's) name sequence_input_layer,
    # input_layer and _SequenceCategoricalColumn; the rest of the message must agree
    msg = str(e.value).split(" Given")[0]
    for tf1_name, tf2_name in (("_SequenceCategoricalColumn", "SequenceCategoricalColumn"),
                               ("sequence_input_layer", "SequenceFeatures"), ("input_layer", "DenseFeatures")):
        msg = msg.replace(tf1_name, tf2_name)
    return msg


@pytest.mark.parametrize("case", ["plain_embedding_in_sequence_layer",
                                  "plain_indicator_in_sequence_layer", "sequence_embedding_in_input_layer",
                                  "sequence_indicator_in_input_layer"])
def test_errors_match_tensorflow(case):
    def fn(tf):
        fc = tf.feature_column
        feats = {"a": tf.SparseTensor([[0, 0]], tf.constant([1], tf.int64), [1, 1])}
        seq = fc.sequence_categorical_column_with_identity("a", 3)
        plain = fc.categorical_column_with_identity("a", 3)
        layer = (_tf_sequence_input_layer if tf is tft else cft.contrib.feature_column.sequence_input_layer)
        if case == "plain_embedding_in_sequence_layer":
            return layer(feats, [fc.embedding_column(plain, 2)])
        if case == "plain_indicator_in_sequence_layer":
            return layer(feats, [fc.indicator_column(plain)])
        if case == "sequence_embedding_in_input_layer":
            return fc.input_layer(feats, [fc.embedding_column(seq, 2)])
        return fc.input_layer(feats, [fc.indicator_column(seq)])
    assert _message(cft, fn) == _message(tft, fn)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_concatenate_context_input_vs_tensorflow(seed):
    from tensorflow.python.feature_column import sequence_feature_column as tf_seq
    r = np.random.default_rng(seed)
    b, t, d0, d1 = (int(x) for x in r.integers(1, 5, 4))
    seq = r.normal(size=(b, t, d0)).astype(np.float32)
    ctx = r.normal(size=(b, d1)).astype(np.float32)
    outs = []
    for tf, f in ((tft, tf_seq.concatenate_context_input), (cft, cft.contrib.feature_column.concatenate_context_input)):
        with tf.Graph().as_default():
            s = tf.placeholder(tf.float32, [None, None, d0])
            out = f(tf.constant(ctx), s)
            with tf.Session() as sess:
                outs.append(sess.run(out, {s: seq}))
    np.testing.assert_array_equal(outs[0], outs[1])


def test_dense_inputs_sparse_placeholder_and_linear_model_vs_tensorflow():
    # dense id inputs (-1 and "" are the missing entries), a sparse_placeholder of unknown
    # dense shape, and linear_model over a sequence categorical column (its ids flattened)
    def run(tf, layer):
        with tf.Graph().as_default():
            fc = tf.feature_column
            a = fc.sequence_categorical_column_with_identity("a", 5)
            v = fc.sequence_categorical_column_with_vocabulary_list("s", ["x", "y"])
            p = fc.sequence_categorical_column_with_identity("p", 5)
            sp = tf.sparse_placeholder(tf.int64, shape=[None, None])
            feats = {"a": tf.constant([[1, 2, -1], [3, -1, -1], [-1, -1, -1]], tf.int64),
                     "s": tf.constant([["x", "y", ""], ["q", "", ""], ["", "", ""]]), "p": sp}
            init = tf.constant_initializer(np.arange(10.0).reshape(5, 2))
            out, length = layer(feats, [fc.embedding_column(a, 2, initializer=init), fc.indicator_column(v),
                                        fc.embedding_column(p, 2, combiner="sum", initializer=init)])
            lm = fc.linear_model(feats, [a], units=2)
            with tf.Session() as sess:
                sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
                sess.run([x.assign(x + 0.5) for x in tf.global_variables()])
                feed = {sp: tf.SparseTensorValue(np.array([[0, 0], [0, 1], [1, 0]], np.int64),
                                                 np.array([1, 4, 2], np.int64), np.array([3, 3], np.int64))}
                return sess.run([out, length, lm], feed)
    want = run(tft, _tf_sequence_input_layer)
    got = run(cft, cft.contrib.feature_column.sequence_input_layer)
    np.testing.assert_array_equal(got[1], [2, 1, 0])
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-6)
