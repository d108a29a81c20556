"""tf.feature_column (collflow/nn/feature_column/) and tf.sparse.cross / cross_hashed
(graph/ops/sparse_cross_ops.py): each column's output by hand, input_layer and linear_model
outputs and variable names, training through them, parse specs end to end, and the same
programs in TensorFlow (tests/tf_peer.py; skipped without TF)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collflow.compat.v1 as tf  # noqa: E402
from collflow.graph.ops.sparse_cross_ops import sparse_cross, sparse_cross_hashed  # noqa: E402
from collflow.kernels.farmhash import fingerprint64  # noqa: E402
from tf_peer import run_in_both  # noqa: E402

fc = tf.feature_column


def _run(fetches, init=True, feed=None):
    with tf.Session() as s:
        if init:
            s.run(tf.global_variables_initializer())
            s.run(tf.tables_initializer())
        return s.run(fetches, feed)


def _dense(col, features):
    return fc.input_layer(features, [col])


def _ids(col, features):
    """The categorical column's ids as a dense [batch, k] array (-1 where there is none)."""
    from collflow.nn.feature_column.columns import _LazyBuilder
    sp = col._get_sparse_tensors(_LazyBuilder(features)).id_tensor
    return tf.sparse_tensor_to_dense(sp, default_value=-1)


# -- numeric and bucketized ------------------------------------------------------------------

def test_numeric_column_rank1_expanded_normalized_and_cast():
    with tf.Graph().as_default():
        col = fc.numeric_column("x", normalizer_fn=lambda t: t * 2)
        out = _dense(col, {"x": tf.constant([1, 2, 3], tf.int64)})
        assert out.shape.as_list() == [3, 1]
        np.testing.assert_allclose(_run(out), [[2.], [4.], [6.]])
        two = fc.numeric_column("y", shape=[2, 2], default_value=1.0)
        assert two.default_value == ((1.0, 1.0), (1.0, 1.0))
        out = _dense(two, {"y": tf.reshape(tf.range(8, dtype=tf.float32), [2, 2, 2])})
        np.testing.assert_allclose(_run(out), np.arange(8).reshape(2, 4))
    with pytest.raises(ValueError):
        fc.numeric_column("z", dtype=tf.string)
    with pytest.raises(ValueError):
        fc.numeric_column("z", shape=[2], default_value=[1.0, 2.0, 3.0])


def test_bucketized_column_dense_and_ids():
    with tf.Graph().as_default():
        col = fc.bucketized_column(fc.numeric_column("x", shape=[2]), [0.0, 1.0, 5.0])
        x = tf.constant([[-1.0, 0.0], [1.0, 7.0], [4.99, 5.0]])
        assert col.name == "x_bucketized" and col._num_buckets == 8
        dense = _dense(col, {"x": x})
        ids = _ids(col, {"x": x})
        d, i = _run([dense, ids])
        want = [[0, 1], [2, 3], [2, 3]]
        np.testing.assert_array_equal(d.reshape(3, 2, 4).argmax(-1), want)
        np.testing.assert_array_equal(i, np.asarray(want) + [0, 4])  # dimension j offset by 4 j
    with pytest.raises(ValueError):
        fc.bucketized_column(fc.numeric_column("x"), [1.0, 1.0])
    with pytest.raises(ValueError):
        fc.bucketized_column(fc.numeric_column("x", shape=[2, 2]), [1.0])


# -- categorical --------------------------------------------------------------------------------

def test_identity_column_drops_minus_one_and_defaults():
    with tf.Graph().as_default():
        col = fc.categorical_column_with_identity("x", 4)
        feats = {"x": tf.constant([[1, -1], [3, 0]])}
        np.testing.assert_array_equal(_run(_ids(col, feats)), [[1, -1], [3, 0]])
        ind = _run(_dense(fc.indicator_column(col), feats))
        np.testing.assert_array_equal(ind, [[0, 1, 0, 0], [1, 0, 0, 1]])
        d = fc.categorical_column_with_identity("y", 4, default_value=0)
        np.testing.assert_array_equal(_run(_ids(d, {"y": tf.constant([[7], [2]])})), [[0], [2]])
        with pytest.raises(tf.errors.InvalidArgumentError):
            _run(_ids(col, {"x": tf.constant([[9]])}))
    with pytest.raises(ValueError):
        fc.categorical_column_with_identity("x", 4, default_value=4)


def test_hash_bucket_column_matches_fingerprint_and_converts_ints():
    with tf.Graph().as_default():
        col = fc.categorical_column_with_hash_bucket("s", 10)
        got = _run(_ids(col, {"s": tf.constant([["apple", ""], ["kiwi", "fig"]])}))
        want = [[fingerprint64(b"apple") % 10, -1], [fingerprint64(b"kiwi") % 10, fingerprint64(b"fig") % 10]]
        np.testing.assert_array_equal(got, want)
        icol = fc.categorical_column_with_hash_bucket("i", 7, dtype=tf.int64)
        got = _run(_ids(icol, {"i": tf.constant([[12], [-1]], tf.int64)}))
        np.testing.assert_array_equal(got, [[fingerprint64(b"12") % 7], [-1]])
        with pytest.raises(ValueError):
            _ids(icol, {"i": tf.constant([["a"]])})


def test_vocabulary_list_column():
    with tf.Graph().as_default():
        col = fc.categorical_column_with_vocabulary_list("s", ["a", "b", "c"])
        assert col.dtype == tf.string and col._num_buckets == 3
        got = _run(_ids(col, {"s": tf.constant([["b", "zz"], ["", "a"]])}))
        np.testing.assert_array_equal(got, [[1, -1], [-1, 0]])  # "" dropped, "zz" -> default -1
        oov = fc.categorical_column_with_vocabulary_list("s", ["a", "b"], num_oov_buckets=3)
        got = _run(_ids(oov, {"s": tf.constant([["zz"]])}))
        np.testing.assert_array_equal(got, [[2 + fingerprint64(b"zz") % 3]])
        ints = fc.categorical_column_with_vocabulary_list("n", [10, 20, 30], default_value=2)
        got = _run(_ids(ints, {"n": tf.constant([[20], [99]], tf.int32)}))
        np.testing.assert_array_equal(got, [[1], [2]])
    with pytest.raises(ValueError):
        fc.categorical_column_with_vocabulary_list("s", ["a", "a"])
    with pytest.raises(ValueError):
        fc.categorical_column_with_vocabulary_list("s", ["a"], num_oov_buckets=2, default_value=0)


def test_vocabulary_file_column(tmp_path):
    path = str(tmp_path / "vocab.txt")
    with open(path, "w") as f:
        f.write("red\ngreen\nblue\n")
    with tf.Graph().as_default():
        col = fc.categorical_column_with_vocabulary_file("c", path)
        assert col.vocabulary_size == 3 and col._num_buckets == 3
        got = _run(_ids(col, {"c": tf.constant([["blue"], ["pink"]])}))
        np.testing.assert_array_equal(got, [[2], [-1]])
        two = fc.categorical_column_with_vocabulary_file("c", path, vocabulary_size=2, num_oov_buckets=1)
        got = _run(_ids(two, {"c": tf.constant([["green"], ["blue"]])}))
        np.testing.assert_array_equal(got, [[1], [2]])  # only the first 2 lines; blue is OOV


def test_sparse_input_and_weighted_column():
    with tf.Graph().as_default():
        ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], tf.constant([1, 3, 1], tf.int64), [3, 2])
        w = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [0.5, 2.0, 4.0], [3, 2])
        col = fc.weighted_categorical_column(fc.categorical_column_with_identity("ids", 4), "w")
        assert col.name == "ids_weighted_by_w"
        ind = _run(_dense(fc.indicator_column(col), {"ids": ids, "w": w}))
        np.testing.assert_allclose(ind, [[0, 0.5, 0, 2.0], [0, 0, 0, 0], [0, 4.0, 0, 0]])
        emb = fc.embedding_column(col, 2, combiner="sum",
                                  initializer=tf.constant_initializer(np.arange(8).reshape(4, 2)))
        got = _run(_dense(emb, {"ids": ids, "w": w}))
        np.testing.assert_allclose(got, [[0.5 * 2 + 2 * 6, 0.5 * 3 + 2 * 7], [0, 0], [8, 12]])


# -- crosses -------------------------------------------------------------------------------------

def test_sparse_cross_hashed_known_ids():
    # ids TensorFlow 2.21's tf.sparse.cross_hashed gives for these inputs
    with tf.Graph().as_default():
        a = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0]], ["x", "yy", "zzzzzzzzzzzzzzzzzzzz", "q"], [3, 2])
        b = tf.constant([[1, 7], [2, -3], [5, 6]], tf.int64)
        c = tf.SparseTensor([[0, 0], [2, 0], [2, 1]], tf.constant([3, 4, 5], tf.int64), [3, 2])
        h = sparse_cross_hashed([a, b, c], num_buckets=1000)
        s = sparse_cross([a, b, c])
        hv, hi, hs, sv = _run([h.values, h.indices, h.dense_shape, s.values], init=False)
        np.testing.assert_array_equal(hv, [953, 330, 787, 901, 671, 340, 436, 797])
        np.testing.assert_array_equal(hi, [[0, 0], [0, 1], [0, 2], [0, 3], [2, 0], [2, 1], [2, 2], [2, 3]])
        np.testing.assert_array_equal(hs, [3, 4])
        # sparse inputs cross before dense ones, the last varying fastest, as TF's kernel
        assert list(sv) == [b"x_X_3_X_1", b"x_X_3_X_7", b"yy_X_3_X_1", b"yy_X_3_X_7", b"q_X_4_X_5", b"q_X_4_X_6",
                            b"q_X_5_X_5", b"q_X_5_X_6"]


def test_crossed_column_name_spec_and_ids():
    with tf.Graph().as_default():
        b = fc.categorical_column_with_identity("b", 5)
        col = fc.crossed_column(["c", b], 10)
        assert col.name == "b_X_c" and col._num_buckets == 10
        assert fc.make_parse_example_spec([col]) == {"b": tf.VarLenFeature(tf.int64), "c": tf.VarLenFeature(tf.string)}
        nested = fc.crossed_column([col, "d"], 100)
        assert nested.name == "b_X_c_X_d"
        feats = {"b": tf.constant([[1], [3]], tf.int64), "c": tf.constant([["x"], ["y"]]),
                 "d": tf.constant([["u"], ["v"]])}
        direct = sparse_cross_hashed([tf.constant([["x"], ["y"]]), tf.SparseTensor([[0, 0], [1, 0]],
                                      tf.constant([1, 3], tf.int64), [2, 1])], num_buckets=10)
        got, want = _run([_ids(col, feats), tf.sparse_tensor_to_dense(direct)])
        np.testing.assert_array_equal(got, want)
        assert _run(_ids(nested, feats)).shape == (2, 1)
    with pytest.raises(ValueError):
        fc.crossed_column(["a", fc.categorical_column_with_hash_bucket("h", 4)], 10)
    with pytest.raises(ValueError):
        fc.crossed_column(["a"], 10)


# -- input_layer and linear_model ---------------------------------------------------------------

def _census_features():
    return {"age": tf.constant([[25.0], [61.0], [40.0]]),
            "edu": tf.constant([["bachelors"], ["phd"], ["hs"]]),
            "occ": tf.SparseTensor([[0, 0], [2, 0], [2, 1]], ["tech", "sales", "tech"], [3, 2])}


def _census_columns():
    age = fc.numeric_column("age")
    edu = fc.categorical_column_with_vocabulary_list("edu", ["hs", "bachelors", "phd"])
    occ = fc.categorical_column_with_vocabulary_list("occ", ["sales", "tech"])
    return age, edu, occ


def test_input_layer_order_names_and_values():
    with tf.Graph().as_default():
        age, edu, occ = _census_columns()
        cols = [fc.embedding_column(occ, 2, initializer=tf.ones_initializer()), age, fc.indicator_column(edu),
                fc.bucketized_column(age, [30.0, 50.0])]
        cols_to_vars = {}
        out = fc.input_layer(_census_features(), cols, cols_to_vars=cols_to_vars)
        assert out.shape.as_list() == [3, 1 + 3 + 3 + 2]
        assert [v.name for v in tf.global_variables()] == ["input_layer/occ_embedding/embedding_weights:0"]
        assert tf.get_collection(tf.GraphKeys.MODEL_VARIABLES) == tf.global_variables()
        assert [v.name for v in cols_to_vars[cols[0]]] == ["input_layer/occ_embedding/embedding_weights:0"]
        assert cols_to_vars[age] == []
        got = _run(out)
        # age | age_bucketized | edu_indicator | occ_embedding (sorted by name)
        np.testing.assert_allclose(got, [[25, 1, 0, 0, 0, 1, 0, 1, 1], [61, 0, 0, 1, 0, 0, 1, 0, 0],
                                         [40, 0, 1, 0, 1, 0, 0, 1, 1]])
        with pytest.raises(ValueError):
            fc.input_layer(_census_features(), [edu])
        with pytest.raises(ValueError):
            fc.input_layer(_census_features(), [age, fc.numeric_column("age")])


def test_shared_embedding_columns_share_one_variable():
    with tf.Graph().as_default():
        a = fc.categorical_column_with_identity("a", 3)
        b = fc.categorical_column_with_identity("b", 3)
        ea, eb = fc.shared_embedding_columns([b, a], 2, initializer=tf.constant_initializer([[1, 2], [3, 4], [5, 6]]))
        assert ea.name == "b_shared_embedding" and ea.shared_embedding_collection_name == "a_b_shared_embedding"
        out = fc.input_layer({"a": tf.constant([[0], [2]]), "b": tf.constant([[1], [-1]])}, [ea, eb])
        assert [v.name for v in tf.global_variables()] == ["input_layer/a_b_shared_embedding/embedding_weights:0"]
        np.testing.assert_allclose(_run(out), [[1, 2, 3, 4], [5, 6, 0, 0]])
        with pytest.raises(ValueError):
            fc.shared_embedding_columns([a, fc.categorical_column_with_identity("c", 4)], 2)


def test_linear_model_names_values_and_combiners():
    with tf.Graph().as_default():
        age, edu, occ = _census_columns()
        cross = fc.crossed_column(["edu", "occ"], 5)
        cols_to_vars = {}
        out = fc.linear_model(_census_features(), [occ, age, edu, cross], units=2, cols_to_vars=cols_to_vars)
        names = [v.name for v in tf.global_variables()]
        assert names == ["linear_model/age/weights:0", "linear_model/edu/weights:0", "linear_model/edu_X_occ/weights:0",
                         "linear_model/occ/weights:0", "linear_model/bias_weights:0"]
        assert [v.name for v in cols_to_vars[occ]] == ["linear_model/occ/weights:0"]
        assert out.shape.as_list() == [3, 2]
        w = {v.name: v for v in tf.global_variables()}
        sets = [w["linear_model/age/weights:0"].assign([[1.0, 0.0]]),
                w["linear_model/edu/weights:0"].assign([[10.0, 0], [20, 0], [30, 0]]),
                w["linear_model/occ/weights:0"].assign([[0, 100.0], [0, 200.0]]),
                w["linear_model/bias_weights:0"].assign([0.5, -0.5])]
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.tables_initializer()])
            s.run(sets)
            got = s.run(out)
        # rows: age + edu weight (+ bias); occ weights summed (sparse_combiner="sum")
        np.testing.assert_allclose(got, [[25 + 20 + 0.5, 200 - 0.5], [61 + 30 + 0.5, -0.5], [40 + 10 + 0.5, 300 - 0.5]])
        again = fc.linear_model(_census_features(), [age], sparse_combiner="mean")
        assert [v.name for v in tf.global_variables()][-2:] == ["linear_model_1/age_1/weights:0",
                                                                 "linear_model_1/bias_weights:0"]
        assert again.shape.as_list() == [3, 1]


def test_training_reduces_loss_through_embedding_and_linear_weights():
    with tf.Graph().as_default():
        age, edu, occ = _census_columns()
        feats = _census_features()
        labels = tf.constant([[1.0], [0.0], [1.0]])
        deep = fc.input_layer(feats, [fc.embedding_column(edu, 3, initializer=tf.ones_initializer()), age])
        logits = fc.linear_model(feats, [edu, occ, fc.crossed_column(["edu", "occ"], 7)]) + \
            tf.layers.dense(deep / 50.0, 1, kernel_initializer=tf.ones_initializer())
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
        emb = [v for v in tf.global_variables() if "embedding_weights" in v.name][0]
        grads = tf.gradients(loss, [emb] + tf.trainable_variables())
        assert all(g is not None for g in grads)
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.tables_initializer()])
            e0, first = s.run([emb, loss])
            for _ in range(20):
                s.run(step)
            e1, last = s.run([emb, loss])
        assert last < first * 0.5
        assert not np.allclose(e0, e1)


def test_make_parse_example_spec_and_parse_example():
    age, edu, occ = _census_columns()
    w = fc.weighted_categorical_column(fc.categorical_column_with_identity("ids", 5), "wt")
    cols = [fc.bucketized_column(age, [30.0]), fc.embedding_column(edu, 2), fc.indicator_column(occ), w]
    spec = fc.make_parse_example_spec(cols)
    assert spec == {"age": tf.FixedLenFeature((1,), tf.float32), "edu": tf.VarLenFeature(tf.string),
                    "occ": tf.VarLenFeature(tf.string), "ids": tf.VarLenFeature(tf.int64),
                    "wt": tf.VarLenFeature(tf.float32)}
    with pytest.raises(ValueError):
        fc.make_parse_example_spec([fc.numeric_column("edu")] + cols)

    def ex(age_v, edu_v, occ_v):
        f = {"age": tf.train.Feature(float_list=tf.train.FloatList(value=[age_v])),
             "edu": tf.train.Feature(bytes_list=tf.train.BytesList(value=edu_v)),
             "occ": tf.train.Feature(bytes_list=tf.train.BytesList(value=occ_v))}
        return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()
    with tf.Graph().as_default():
        serialized = tf.placeholder(tf.string, [None])
        small = [fc.numeric_column("age"), fc.indicator_column(edu), fc.indicator_column(occ)]
        feats = tf.parse_example(serialized, fc.make_parse_example_spec(small))
        out = fc.input_layer(feats, small)
        got = _run(out, feed={serialized: [ex(20.0, [b"phd"], [b"tech", b"sales"]), ex(35.0, [], [b"sales"])]})
        np.testing.assert_allclose(got, [[20, 0, 0, 1, 1, 1], [35, 0, 0, 0, 1, 0]])


# -- against TensorFlow ---------------------------------------------------------------------------

def _wide_deep(T):
    f = T.feature_column
    feats = {"age": T.constant([25.0, 61.0, 40.0, 33.0]),
             "edu": T.constant([["bachelors", ""], ["phd", "hs"], ["hs", "x"], ["", ""]]),
             "occ": T.SparseTensor([[0, 0], [2, 0], [2, 1], [3, 0]], ["tech", "sales", "tech", "nurse"], [4, 2]),
             "zip": T.constant([[94110], [10001], [-1], [94110]], T.int64),
             "n": T.constant([[3], [1], [0], [4]]),
             "w": T.constant([[2.0], [0.5], [1.0], [3.0]]),
             "h": T.constant([["a"], ["bb"], [""], ["ccc"]])}
    age = f.numeric_column("age")
    edu = f.categorical_column_with_vocabulary_list("edu", ["hs", "bachelors", "phd"], num_oov_buckets=2)
    occ = f.categorical_column_with_vocabulary_list("occ", ["sales", "tech"])
    zipc = f.categorical_column_with_hash_bucket("zip", 13, dtype=T.int64)
    n = f.categorical_column_with_identity("n", 5)
    nw = f.weighted_categorical_column(n, "w")
    h = f.categorical_column_with_hash_bucket("h", 11)
    ab = f.bucketized_column(age, [30.0, 40.0, 50.0])
    cross = f.crossed_column([ab, "edu", "occ"], 97)
    cross2 = f.crossed_column(["zip", n], 31, hash_key=12345)
    one = T.ones_initializer()
    init = T.constant_initializer(np.linspace(-1, 1, 5 * 3).reshape(5, 3))
    deep = f.input_layer(feats, [age, ab, f.indicator_column(edu), f.indicator_column(nw), f.indicator_column(h),
                                 f.embedding_column(occ, 3, combiner="sqrtn", initializer=one),
                                 f.embedding_column(edu, 3, initializer=init),
                                 f.embedding_column(nw, 3, combiner="sum", initializer=init),
                                 f.indicator_column(cross2)])
    wide = f.linear_model(feats, [ab, edu, occ, zipc, cross, cross2, nw, h], units=3, sparse_combiner="mean")
    idsx = f.input_layer(feats, [f.indicator_column(cross), f.indicator_column(zipc)])
    names = [v.name for v in T.global_variables()]
    return [deep, wide, idsx, T.constant(names)]


@pytest.mark.filterwarnings("ignore::UserWarning")  # TF's deprecated Keras internals
def test_wide_and_deep_matches_tensorflow():
    got, want = run_in_both(_wide_deep, init=True)
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    assert got[3].tolist() == want[3].tolist()


def _trained(T):
    f = T.feature_column
    feats = {"x": T.constant([["a", "b"], ["c", ""], ["a", "c"]]), "y": T.constant([[1.0], [2.0], [3.0]])}
    x = f.categorical_column_with_vocabulary_list("x", ["a", "b", "c"])
    logits = f.linear_model(feats, [x, f.numeric_column("y")]) + f.input_layer(
        feats, [f.embedding_column(x, 1, initializer=T.constant_initializer(0.1))])
    loss = T.reduce_mean(T.square(logits - T.constant([[1.0], [-1.0], [0.5]])))
    step = T.train.GradientDescentOptimizer(0.1).minimize(loss)
    with T.control_dependencies([step]):
        after = T.identity(loss)
    return [loss, after, T.trainable_variables()[0]]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gradients_match_tensorflow():
    got, want = run_in_both(_trained, init=True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _edges(T, vocab_path):
    f = T.feature_column
    feats = {"s1": T.SparseTensor([[0], [2]], ["b", "zz"], [3]),          # rank-1 SparseTensor
             "d1": T.constant([0.5, 1.5, 9.0]),                          # rank-1 dense
             "v": T.constant([[1.0, 2.0], [3.0, -4.0], [0.0, 0.0]]),
             "c": T.constant([["red"], ["teal"], ["blue"]]),
             "i32": T.constant([[7, 8], [-1, 3], [2, 2]], T.int32),
             "sid": T.SparseTensor([[0, 0], [1, 0], [1, 1]], T.constant([9, 1, 2], T.int64), [3, 2]),
             "sw": T.SparseTensor([[0, 0], [1, 0], [1, 1]], [1.0, 2.0, 3.0], [3, 2])}
    s1 = f.categorical_column_with_vocabulary_list("s1", ["a", "b"], num_oov_buckets=1)
    d1 = f.numeric_column("d1")
    v = f.numeric_column("v", shape=[2])
    vb = f.bucketized_column(v, [0.0, 2.0])
    c = f.categorical_column_with_vocabulary_file("c", vocab_path, num_oov_buckets=2)
    ch = f.categorical_column_with_vocabulary_file("c", vocab_path, vocabulary_size=2, default_value=1)
    i32 = f.categorical_column_with_hash_bucket("i32", 6, dtype=T.int32)
    sid = f.weighted_categorical_column(f.categorical_column_with_identity("sid", 4, default_value=3), "sw")
    cross = f.crossed_column([vb, c, "i32"], 50)
    def init(shape, dtype=None, partition_info=None):  # row r of the table: (2r, 2r + 1) / 10
        n, d = int(shape[0]), int(shape[1])
        return T.constant(np.arange(n * d, dtype=np.float32).reshape(n, d) / 10.0)
    dense = f.input_layer(feats, [d1, v, vb, f.indicator_column(s1), f.indicator_column(c),
                                  f.indicator_column(i32), f.indicator_column(sid), f.indicator_column(cross),
                                  f.embedding_column(vb, 2, initializer=init, max_norm=0.5),
                                  f.embedding_column(sid, 2, combiner="sqrtn", initializer=init)])
    wide = f.linear_model(feats, [s1, vb, c, i32, sid, cross, d1, v], units=2, sparse_combiner="sqrtn")
    wide2 = f.linear_model({"c": feats["c"]}, [f.embedding_column(ch, 2, initializer=init)])
    return [dense, wide, wide2, T.constant([x.name for x in T.global_variables()])]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_edge_inputs_match_tensorflow(tmp_path):
    path = str(tmp_path / "colors.txt")
    with open(path, "w") as fh:
        fh.write("red\ngreen\nblue\n")
    got, want = run_in_both(lambda T: _edges(T, path), init=True)
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    assert got[3].tolist() == want[3].tolist()


def test_embedding_column_max_norm_and_checkpoint(tmp_path):
    with tf.Graph().as_default():
        table = tf.get_variable("old/table", initializer=tf.constant([[3.0, 4.0], [0.3, 0.4], [1.0, 0.0]]))
        saver = tf.train.Saver([table])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            path = saver.save(s, str(tmp_path / "ckpt"))
    with tf.Graph().as_default():
        ids = fc.categorical_column_with_identity("i", 3)
        col = fc.embedding_column(ids, 2, ckpt_to_load_from=path, tensor_name_in_ckpt="old/table", max_norm=1.0)
        out = _dense(col, {"i": tf.constant([[0], [1], [2]])})
        np.testing.assert_allclose(_run(out), [[0.6, 0.8], [0.3, 0.4], [1.0, 0.0]], rtol=1e-6)
    with pytest.raises(ValueError):
        fc.embedding_column(ids, 2, ckpt_to_load_from=path)


def test_invalid_inputs():
    with tf.Graph().as_default():
        with pytest.raises(ValueError):
            _dense(fc.numeric_column("x"), {"x": tf.SparseTensor([[0, 0]], [1.0], [1, 1])})
        with pytest.raises(ValueError):
            _ids(fc.categorical_column_with_identity("x", 3), {"x": tf.constant([["a"]])})
        with pytest.raises(ValueError):
            _dense(fc.numeric_column("x"), {"x": tf.constant(1.0)})
        with pytest.raises(ValueError):
            _dense(fc.numeric_column("x"), {"y": tf.constant([1.0])})
        with pytest.raises(ValueError):
            fc.linear_model({"x": tf.constant([1.0])}, [fc.numeric_column("x")], sparse_combiner="max")


def _shared(T):
    f = T.feature_column
    a = f.categorical_column_with_identity("a", 3)
    b = f.categorical_column_with_identity("b", 3)
    sh = f.shared_embedding_columns([b, a], 2, initializer=T.ones_initializer(), combiner="sum")
    feats = {"a": T.constant([[0, 1], [2, -1]]), "b": T.SparseTensor([[0, 0], [1, 0], [1, 1]],
                                                                      T.constant([2, 0, 1], T.int64), [2, 3])}
    c2v = {}
    outs = [f.input_layer(feats, sh), f.input_layer(feats, sh), f.linear_model(feats, sh + [a], cols_to_vars=c2v)]
    return outs + [T.constant([v.name for v in T.global_variables()]),
                   T.constant(sorted(v.name for vs in c2v.values() for v in vs))]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_shared_embeddings_match_tensorflow():
    got, want = run_in_both(_shared, init=True)
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_allclose(g, w)
    for g, w in zip(got[3:], want[3:]):
        assert g.tolist() == w.tolist()


def test_embedding_lookup_max_norm_clips_each_row():
    with tf.Graph().as_default():
        params = tf.constant([[3.0, 4.0], [0.3, 0.4]])
        out = tf.nn.embedding_lookup(params, tf.constant([[0, 1], [1, 0]]), max_norm=2.0)
        np.testing.assert_allclose(_run(out, init=False), [[[1.2, 1.6], [0.3, 0.4]], [[0.3, 0.4], [1.2, 1.6]]],
                                   rtol=1e-6)
