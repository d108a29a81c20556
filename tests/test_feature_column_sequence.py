"""The sequence feature columns (collflow/nn/feature_column/sequence_columns.py): per-step
embeddings, indicators and numeric values, TF's sequence-length rule, padding, variable names
and collections, gradients, concatenate_context_input and the errors, against NumPy."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

fc = tf.feature_column
cfc = tf.contrib.feature_column


def _run(fetches, feed=None):
    with tf.Session() as s:
        s.run([tf.global_variables_initializer(), tf.tables_initializer()])
        return s.run(fetches, feed)


def _np_lengths(indices, batch, num_elements=1):
    out = np.zeros(batch, np.int64)
    for i in indices:
        out[i[0]] = max(out[i[0]], i[1] + 1)
    return -(-out // num_elements)


def _np_embed(indices, ids, shape, table, combiner="mean"):
    """[batch, T, dim]: the ids of each (row, step) looked up and combined."""
    out = np.zeros(tuple(shape[:2]) + (table.shape[1],), np.float32)
    groups = {}
    for i, v in zip(indices, ids):
        groups.setdefault(tuple(i[:2]), []).append(v)
    for (b, t), vs in groups.items():
        s = table[vs].sum(0)
        out[b, t] = s / {"sum": 1, "mean": len(vs), "sqrtn": np.sqrt(len(vs))}[combiner]
    return out


IDX2 = [[0, 0], [0, 1], [1, 0], [3, 2]]  # row 2 empty in the middle, row 3 has a gap at steps 0-1
IDS2 = [1, 2, 3, 4]


def test_embedding_per_step_lengths_and_variable_name():
    table = np.arange(15, dtype=np.float32).reshape(5, 3) / 7
    with tf.Graph().as_default():
        col = fc.embedding_column(fc.sequence_categorical_column_with_identity("a", 5), 3,
                                  initializer=tf.constant_initializer(table))
        sp = tf.SparseTensor(IDX2, tf.constant(IDS2, tf.int64), [5, 3])  # row 4: no entries (padded 0)
        out, length = cfc.sequence_input_layer({"a": sp}, [col])
        assert out.shape.as_list()[1:] in ([None, 3], [3, 3])
        assert [v.name for v in tf.global_variables()] == ["sequence_input_layer/a_embedding/embedding_weights:0"]
        # TF 1.15's sequence_input_layer hands weight_collections to get_variable as given
        assert tf.model_variables() == []
        got, lens = _run([out, length])
    np.testing.assert_allclose(got, _np_embed(IDX2, IDS2, [5, 3], table), rtol=1e-6)
    np.testing.assert_array_equal(lens, [2, 1, 0, 3, 0])
    assert lens.dtype == np.int64


@pytest.mark.parametrize("combiner", ["mean", "sum", "sqrtn"])
def test_embedding_of_rank3_ids_combines_each_step(combiner):
    # [batch, time, k] ids: the k ids of a step are combined, the length counts steps
    idx = [[0, 0, 0], [0, 0, 1], [0, 2, 0], [1, 1, 0], [1, 1, 1], [1, 1, 2]]
    ids = [0, 3, 1, 2, 2, 4]
    table = np.random.default_rng(0).normal(size=(5, 2)).astype(np.float32)
    with tf.Graph().as_default():
        col = fc.embedding_column(fc.sequence_categorical_column_with_identity("a", 5), 2, combiner=combiner,
                                  initializer=tf.constant_initializer(table))
        out, length = cfc.sequence_input_layer({"a": tf.SparseTensor(idx, tf.constant(ids, tf.int64), [2, 4, 3])},
                                               [col])
        got, lens = _run([out, length])
    np.testing.assert_allclose(got, _np_embed(idx, ids, [2, 4], table, combiner), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(lens, [3, 2])


def test_indicator_multi_hot_per_step_and_vocabulary_columns():
    with tf.Graph().as_default():
        vocab = fc.sequence_categorical_column_with_vocabulary_list("w", ["x", "y", "z"], num_oov_buckets=1)
        ident = fc.sequence_categorical_column_with_identity("i", 3, default_value=0)
        sp_w = tf.SparseTensor([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]], ["z", "z", "q", "x"], [2, 2, 2])
        sp_i = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([2, 7, 1], tf.int64), [2, 2])
        out, length = cfc.sequence_input_layer({"w": sp_w, "i": sp_i},
                                               [fc.indicator_column(vocab), fc.indicator_column(ident)])
        got, lens = _run([out, length])
    # name order: i_indicator (3 slots, 7 -> default 0), then w_indicator (3 + 1 OOV slots)
    want = np.zeros((2, 2, 7), np.float32)
    want[0, 0, [2, 3 + 2]] = [1, 2]  # "z" twice in one step counts twice
    want[0, 1, [0, 3 + 3]] = 1
    want[1, 0, [1, 3 + 0]] = 1
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(lens, [2, 1])


def test_hash_and_vocabulary_file_ids_match_the_non_sequence_columns(tmp_path):
    from collflow.nn.feature_column.columns import _LazyBuilder
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\nc\n")
    pairs = [(fc.sequence_categorical_column_with_hash_bucket("s", 10),
              fc.categorical_column_with_hash_bucket("s", 10)),
             (fc.sequence_categorical_column_with_vocabulary_file("s", str(path), num_oov_buckets=2),
              fc.categorical_column_with_vocabulary_file("s", str(path), num_oov_buckets=2))]
    for seq, plain in pairs:
        with tf.Graph().as_default():
            sp = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], ["b", "zz", "a"], [2, 3])
            a = seq._get_sparse_tensors(_LazyBuilder({"s": sp})).id_tensor
            b = plain._get_sparse_tensors(_LazyBuilder({"s": sp})).id_tensor
            (ia, va, sa), (ib, vb, sb) = _run([[a.indices, a.values, a.dense_shape],
                                              [b.indices, b.values, b.dense_shape]])
        assert seq._num_buckets == plain._num_buckets
        np.testing.assert_array_equal(ia, np.concatenate([ib, np.zeros((3, 1), np.int64)], 1))
        np.testing.assert_array_equal(va, vb)
        np.testing.assert_array_equal(sa, list(sb) + [1])


def test_numeric_padding_normalizer_and_length_rule():
    # shape (2,) over a [batch, n] input: each step takes 2 values; length = ceil((max col + 1) / 2)
    idx = [[0, 0], [0, 1], [0, 2], [1, 0], [2, 4]]
    vals = [1., 2., 3., 4., 5.]
    with tf.Graph().as_default():
        col = fc.sequence_numeric_column("n", shape=(2,), default_value=-1.0, normalizer_fn=lambda x: x * 2.0)
        out, length = cfc.sequence_input_layer({"n": tf.SparseTensor(idx, vals, [3, 6])}, [col])
        got, lens = _run([out, length])
    dense = np.full((3, 6), -1.0, np.float32)
    for i, v in zip(idx, vals):
        dense[tuple(i)] = 2 * v
    np.testing.assert_allclose(got, dense.reshape(3, 3, 2))
    np.testing.assert_array_equal(lens, _np_lengths(idx, 3, 2))
    np.testing.assert_array_equal(lens, [2, 1, 3])


def test_numeric_rank3_input_counts_steps_and_shape_2d():
    idx = [[0, 0, 0], [0, 0, 3], [0, 1, 1], [1, 0, 2]]
    with tf.Graph().as_default():
        col = fc.sequence_numeric_column("n", shape=[2, 2])
        out, length = cfc.sequence_input_layer({"n": tf.SparseTensor(idx, [1., 2., 3., 4.], [2, 3, 4])}, [col])
        got, lens = _run([out, length])
    want = np.zeros((2, 3, 4), np.float32)
    for i, v in zip(idx, [1., 2., 3., 4.]):
        want[tuple(i)] = v
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(lens, [2, 1])


def test_columns_concatenate_in_name_order_and_lengths_must_agree():
    with tf.Graph().as_default():
        emb = fc.embedding_column(fc.sequence_categorical_column_with_identity("b", 3), 2,
                                  initializer=tf.ones_initializer())
        num = fc.sequence_numeric_column("a")
        ids = tf.placeholder(tf.int64, [None, 2])
        feats = {"b": tf.SparseTensor(ids, tf.constant([0, 1], tf.int64), [2, 3]),
                 "a": tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [5., 6., 7.], [2, 3])}
        out, length = cfc.sequence_input_layer(feats, [emb, num])
        assert out.shape.as_list()[-1] == 3
        got, lens = _run([out, length], {ids: [[0, 1], [1, 0]]})
        np.testing.assert_allclose(got[:, :2, 0], [[5., 6.], [7., 0.]])  # "a" first
        np.testing.assert_allclose(got[:, :2, 1:], [[[0, 0], [1, 1]], [[1, 1], [0, 0]]])  # step 0 of row 0: no id
        np.testing.assert_array_equal(lens, [2, 1])
        with pytest.raises(tf.errors.InvalidArgumentError):
            _run(length, {ids: [[0, 0], [1, 0]]})  # "b" gives [1, 1], "a" gives [2, 1]


def test_gradient_of_embedding_counts_each_steps_ids():
    with tf.Graph().as_default():
        col = fc.embedding_column(fc.sequence_categorical_column_with_identity("a", 5), 2, combiner="sum")
        out, _ = cfc.sequence_input_layer({"a": tf.SparseTensor(IDX2, tf.constant(IDS2, tf.int64), [4, 3])}, [col])
        w = np.random.default_rng(1).normal(size=(4, 3, 2)).astype(np.float32)
        var = tf.trainable_variables()[0]
        grad = tf.convert_to_tensor(tf.gradients(tf.reduce_sum(out * w), var)[0])
        g = _run(grad)
    want = np.zeros((5, 2), np.float32)
    for (b, t), i in zip(IDX2, IDS2):
        want[i] += w[b, t]
    np.testing.assert_allclose(g, want, rtol=1e-6)


def test_scopes_collections_trainable_and_shared_embeddings():
    with tf.Graph().as_default():
        a = fc.sequence_categorical_column_with_identity("a", 4)
        b = fc.sequence_categorical_column_with_identity("b", 4)
        shared = fc.shared_embedding_columns([a, b], 2)
        feats = {"a": tf.SparseTensor([[0, 0]], tf.constant([1], tf.int64), [1, 2]),
                 "b": tf.SparseTensor([[0, 0]], tf.constant([3], tf.int64), [1, 2])}
        out, _ = cfc.sequence_input_layer(feats, shared, weight_collections=["mine", tf.GraphKeys.GLOBAL_VARIABLES])
        cfc.sequence_input_layer(feats, [fc.embedding_column(a, 3)], trainable=False)
        names = [v.name for v in tf.global_variables()]
        assert names == ["sequence_input_layer/a_b_shared_embedding/embedding_weights:0",
                         "sequence_input_layer_1/a_embedding/embedding_weights:0"]
        assert [v.name for v in tf.get_collection("mine")] == names[:1]
        assert [v.name for v in tf.trainable_variables()] == names[:1]
        table, got = _run([tf.global_variables()[0], out])
    np.testing.assert_allclose(got[0, 0], np.concatenate([table[1], table[3]]), rtol=1e-6)


def test_parse_spec_and_names():
    cols = [fc.sequence_numeric_column("n", dtype=tf.int64), fc.sequence_categorical_column_with_identity("i", 3)]
    spec = fc.make_parse_example_spec(cols)
    assert spec == {"n": tf.VarLenFeature(tf.int64), "i": tf.VarLenFeature(tf.int64)}
    assert set(cfc.__all__) == {"sequence_categorical_column_with_identity", "sequence_numeric_column",
                                "sequence_categorical_column_with_hash_bucket", "sequence_input_layer",
                                "sequence_categorical_column_with_vocabulary_file", "concatenate_context_input",
                                "sequence_categorical_column_with_vocabulary_list"}
    assert fc.sequence_numeric_column is cfc.sequence_numeric_column


def test_errors():
    seq = fc.sequence_categorical_column_with_identity("a", 3)
    sp = {"a": tf.SparseTensor([[0, 0]], tf.constant([1], tf.int64), [1, 1])}
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must be of type _SequenceDenseColumn"):
            cfc.sequence_input_layer(sp, [fc.numeric_column("a")])
        with pytest.raises(ValueError, match="must be of type _SequenceDenseColumn"):
            cfc.sequence_input_layer(sp, [seq])
        with pytest.raises(ValueError, match="In embedding_column: a_embedding. categorical_column must be of type "
                                             "_SequenceCategoricalColumn to use sequence_input_layer"):
            cfc.sequence_input_layer(sp, [fc.embedding_column(fc.categorical_column_with_identity("a", 3), 2)])
        with pytest.raises(ValueError, match="In indicator_column: a_indicator. categorical_column must not be"):
            fc.input_layer(sp, [fc.indicator_column(seq)])
        with pytest.raises(ValueError, match="use sequence_input_layer instead of input_layer"):
            fc.input_layer(sp, [fc.embedding_column(seq, 2)])
        with pytest.raises(ValueError, match="must be a SparseTensor"):
            cfc.sequence_input_layer({"n": tf.constant([[1.0]])}, [fc.sequence_numeric_column("n")])
    with pytest.raises(ValueError, match="dtype must be convertible to float"):
        fc.sequence_numeric_column("n", dtype=tf.string)
    with pytest.raises(TypeError, match="normalizer_fn must be a callable"):
        fc.sequence_numeric_column("n", normalizer_fn=3)
    with pytest.raises(ValueError, match="shape dimensions must be greater than 0"):
        fc.sequence_numeric_column("n", shape=(0,))
    with pytest.raises(ValueError, match="num_buckets 0 < 1"):
        fc.sequence_categorical_column_with_identity("a", 0)


def test_concatenate_context_input():
    seq = np.random.default_rng(2).normal(size=(2, 3, 4)).astype(np.float32)
    ctx = np.array([[1., 2.], [3., 4.]], np.float32)
    with tf.Graph().as_default():
        s = tf.placeholder(tf.float32, [None, None, 4])
        out = cfc.concatenate_context_input(tf.constant(ctx), s)
        assert out.shape.as_list() == [2, None, 6]
        got = _run(out, {s: seq})
        np.testing.assert_allclose(got, np.concatenate([seq, np.repeat(ctx[:, None], 3, 1)], 2))
        with pytest.raises(ValueError, match="sequence_input must have rank 3"):
            cfc.concatenate_context_input(tf.constant(ctx), tf.constant(ctx))
        with pytest.raises(ValueError, match="context_input must have rank 2"):
            cfc.concatenate_context_input(tf.constant(seq), tf.constant(seq))
        with pytest.raises(TypeError, match="context_input must have dtype float32"):
            cfc.concatenate_context_input(tf.constant([[1, 2]]), tf.constant(seq))


def test_keras_sequence_features_layer_scope_and_outputs():
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    with tf.Graph().as_default():
        col = fc.embedding_column(fc.sequence_categorical_column_with_identity("a", 4), 2,
                                  initializer=tf.constant_initializer(table))
        layer = tf.keras.experimental.SequenceFeatures([fc.sequence_numeric_column("n"), col])  # sorted
        feats = {"a": tf.SparseTensor(IDX2, tf.constant([1, 2, 3, 0], tf.int64), [4, 3]),
                 "n": tf.SparseTensor(IDX2, [1., 2., 3., 4.], [4, 3])}
        out, length = layer(feats)
        again, _ = layer(feats)  # the second call reuses the variables
        assert [v.name for v in layer.weights] == ["sequence_features/a_embedding/embedding_weights:0"]
        assert len(tf.global_variables()) == 1
        got, got2, lens = _run([out, again, length])
    want = np.concatenate([_np_embed(IDX2, [1, 2, 3, 0], [4, 3], table),
                           np.zeros((4, 3, 1), np.float32)], -1)
    for (b, t), v in zip(IDX2, [1., 2., 3., 4.]):
        want[b, t, 2] = v
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got2, want)
    np.testing.assert_array_equal(lens, [2, 1, 0, 3])
    with pytest.raises(ValueError, match="must be of type SequenceDenseColumn"):
        tf.keras.experimental.SequenceFeatures([fc.numeric_column("n")])
