"""tf.contrib.layers feature columns (collflow/contrib/layers_feature_columns.py and
feature_columns_base.py): each column's ids or values by hand, input_from_feature_columns and
the weighted sums recomputed with NumPy from loaded variable values, TF 1.15's variable names
and column order, gradients, training, parse specs and errors.  (TF 2.x has no contrib, so
there is no differential test.)"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collflow.compat.v1 as tf  # noqa: E402
from collflow.graph.ops.sparse_cross_ops import sparse_cross_hashed  # noqa: E402
from collflow.kernels.farmhash import fingerprint64  # noqa: E402

L = tf.contrib.layers


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default():
        yield


def _session():
    s = tf.Session()
    s.run(tf.global_variables_initializer())
    s.run(tf.tables_initializer())
    return s


def _ids(col, feats):
    """The column's transformed ids as a dense array (-1 where none)."""
    sp = L.transform_features(feats, [col])[col]
    if isinstance(sp, tuple):
        sp = sp[0]
    return tf.sparse_tensor_to_dense(sp, default_value=-1)


def _var(name):
    (v,) = [v for v in tf.global_variables() if v.op.name == name]
    return v


# -- sparse columns: ids ------------------------------------------------------------------------

def test_sparse_column_ids():
    feats = {"k": tf.constant([["b", ""], ["z", "a"]]), "i": tf.constant([[3], [12]], tf.int64),
             "h": tf.SparseTensor([[0, 0], [1, 0], [1, 1]], ["x", "yy", "x"], [2, 2]),
             "hi": tf.constant([7, -1], tf.int64)}
    keys = L.sparse_column_with_keys("k", ["a", "b", "c"])
    integ = L.sparse_column_with_integerized_feature("i", 10)
    hashed = L.sparse_column_with_hash_bucket("h", 20)
    hashed_int = L.sparse_column_with_hash_bucket("hi", 5, dtype=tf.int64)
    fetches = [_ids(c, feats) for c in (keys, integ, hashed, hashed_int)]
    with _session() as s:
        got = s.run(fetches)
    np.testing.assert_array_equal(got[0], [[1, -1], [-1, 0]])        # "" dropped, "z" -> default -1
    np.testing.assert_array_equal(got[1], [[3], [2]])                 # 12 mod 10
    fx, fy = fingerprint64(b"x") % 20, fingerprint64(b"yy") % 20
    np.testing.assert_array_equal(got[2], [[fx, -1], [fy, fx]])
    np.testing.assert_array_equal(got[3], [[fingerprint64(b"7") % 5], [-1]])  # rank 1 made [batch, 1]; -1 dropped
    assert keys.length == 3 and integ.length == 10 and hashed.name == "h"
    assert keys.config == {"k": tf.VarLenFeature(tf.string)}


def test_vocabulary_file_and_oov(tmp_path):
    path = str(tmp_path / "vocab.txt")
    with open(path, "w") as f:
        f.write("red\ngreen\nblue\n")
    col = L.sparse_column_with_vocabulary_file("c", path, num_oov_buckets=2, vocab_size=3)
    assert col.length == 5
    fetch = _ids(col, {"c": tf.constant([["blue", "pink"]])})
    with _session() as s:
        got = s.run(fetch)
    np.testing.assert_array_equal(got, [[2, 3 + fingerprint64(b"pink") % 2]])
    with pytest.raises(ValueError, match="vocab_size"):
        L.sparse_column_with_vocabulary_file("c", path)


def test_weighted_sparse_column_and_one_hot():
    ids = L.sparse_column_with_integerized_feature("ids", 4)
    w = L.weighted_sparse_column(ids, "wt")
    assert w.name == "ids_weighted_by_wt" and w.length == 4
    assert L.create_feature_spec_for_parsing([w]) == {"ids": tf.VarLenFeature(tf.int64),
                                                      "wt": tf.VarLenFeature(tf.float32)}
    feats = {"ids": tf.constant([[1, 3], [2, 2]], tf.int64), "wt": tf.constant([[0.5, 2.0], [1.0, 3.0]])}
    out = L.input_from_feature_columns(feats, [L.one_hot_column(w)])
    plain = L.input_from_feature_columns(feats, [L.one_hot_column(ids)], scope="plain")
    with _session() as s:
        got, got_plain = s.run([out, plain])
    np.testing.assert_allclose(got, [[0, 0.5, 0, 2.0], [0, 0, 4.0, 0]])
    np.testing.assert_allclose(got_plain, [[0, 1, 0, 1], [0, 0, 2, 0]])


# -- real-valued and bucketized -----------------------------------------------------------------

def test_real_valued_and_bucketized_dnn_input():
    x = np.array([[1.0, 7.0], [4.0, -2.0], [10.0, 3.0]], np.float32)
    rv = L.real_valued_column("x", dimension=2, normalizer=lambda t: t * 2.0)
    bk = L.bucketized_column(L.real_valued_column("x", dimension=2), [0.0, 3.0, 3.0, 8.0])
    assert bk.boundaries == (0.0, 3.0, 8.0) and bk.length == 4 and bk.name == "x_bucketized"
    n = L.real_valued_column("n", dtype=tf.int32)
    feats = {"x": x, "n": tf.constant([1, 2, 3])}
    outs = {}
    net = L.input_from_feature_columns(feats, [rv, bk, n], cols_to_outs=outs)
    with _session() as s:
        got, got_outs = s.run([net, outs])
    buckets = np.digitize(x, [0.0, 3.0, 8.0])  # [b_{i-1}, b_i) -> i
    one_hot = np.eye(4)[buckets].reshape(3, 8)
    # TF's order: _BucketizedColumn, then _RealValuedColumn n, then x
    want = np.concatenate([one_hot, [[1], [2], [3]], x * 2.0], 1)
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got_outs[n], [[1], [2], [3]])
    assert net.shape.as_list()[1] == 11


def test_real_valued_column_arguments():
    c = L.real_valued_column("a", dimension=3, default_value=2)
    assert c.default_value == (2.0, 2.0, 2.0)
    assert c.config == {"a": tf.FixedLenFeature([3], tf.float32, [2.0, 2.0, 2.0])}
    assert L.real_valued_column("a", 2, [1, 2], dtype=tf.int64).default_value == (1, 2)
    with pytest.raises(TypeError, match="_real_valued_var_len_column"):
        L.real_valued_column("v", dimension=None)
    with pytest.raises(ValueError, match="greater than 0"):
        L.real_valued_column("a", dimension=0)
    with pytest.raises(TypeError, match="integer"):
        L.real_valued_column("a", dimension=1.5)
    with pytest.raises(ValueError, match="convertible to float"):
        L.real_valued_column("a", dtype=tf.string)
    with pytest.raises(ValueError, match="length of default_value"):
        L.real_valued_column("a", dimension=2, default_value=[1.0])
    with pytest.raises(TypeError, match="compatible with dtype"):
        L.real_valued_column("a", default_value=1.5, dtype=tf.int32)
    with pytest.raises(ValueError, match="sorted"):
        L.bucketized_column(L.real_valued_column("a"), [3.0, 1.0])
    with pytest.raises(TypeError, match="_RealValuedColumn"):
        L.bucketized_column(L.sparse_column_with_hash_bucket("a", 3), [1.0])


# -- embeddings ---------------------------------------------------------------------------------

def _combine(table, rows, weights, combiner):
    out = []
    for r, w in zip(rows, weights):
        e = sum(wi * table[i] for i, wi in zip(r, w))
        if combiner == "mean":
            e = e / sum(w)
        elif combiner == "sqrtn":
            e = e / np.sqrt(sum(wi * wi for wi in w))
        out.append(e)
    return np.array(out)


@pytest.mark.parametrize("combiner", ["mean", "sqrtn", "sum"])
def test_embedding_column_values_and_names(combiner):
    col = L.sparse_column_with_keys("dept", ["a", "b", "c", "d"])
    emb = L.embedding_column(col, 3, combiner=combiner)
    feats = {"dept": tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1], [2, 2]],
                                     ["a", "c", "d", "b", "b", "c"], [3, 3])}
    net = L.input_from_feature_columns(feats, [emb])
    v = _var("input_from_feature_columns/dept_embedding/weights")
    assert v.shape.as_list() == [4, 3]
    assert v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES) and v in tf.trainable_variables()
    table = np.arange(12, dtype=np.float32).reshape(4, 3) / 7.0
    rows = [[0, 2], [3], [1, 1, 2]]
    with _session() as s:
        v.load(table, s)
        got = s.run(net)
    np.testing.assert_allclose(got, _combine(table, rows, [[1.0] * len(r) for r in rows], combiner), rtol=1e-6)


def test_embedding_of_weighted_column_max_norm_and_gradient():
    ids = L.sparse_column_with_integerized_feature("ids", 3)
    emb = L.embedding_column(L.weighted_sparse_column(ids, "w"), 2, combiner="sum", max_norm=1.0)
    feats = {"ids": tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([0, 2, 1], tf.int64), [2, 2]),
             "w": tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [2.0, 0.5, 3.0], [2, 2])}
    net = L.input_from_feature_columns(feats, [emb], scope="deep")
    v = _var("deep/ids_weighted_by_w_embedding/weights")
    (grad,) = tf.gradients(tf.reduce_sum(net * tf.constant([[1.0, 2.0], [3.0, 4.0]])), [v])
    table = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 2.0]], np.float32)
    with _session() as s:
        v.load(table, s)
        got, g = s.run([net, tf.convert_to_tensor(grad)])
    clipped = table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1.0)
    np.testing.assert_allclose(got, [2.0 * clipped[0] + 0.5 * clipped[2], 3.0 * clipped[1]], rtol=1e-6)
    # row 1 has norm 0.5 (not clipped): its gradient is weight x the output's coefficients
    np.testing.assert_allclose(g[1], [9.0, 12.0], rtol=1e-6)


def test_embedding_gradient_finite_difference():
    col = L.embedding_column(L.sparse_column_with_hash_bucket("s", 5), 2, combiner="sqrtn")
    feats = {"s": tf.constant([["p", "q"], ["r", ""]])}
    net = L.input_from_feature_columns(feats, [col])
    v = _var("input_from_feature_columns/s_embedding/weights")
    loss = tf.reduce_sum(tf.square(net))
    (grad,) = tf.gradients(loss, [v])
    rng = np.random.default_rng(0)
    table = rng.normal(size=(5, 2)).astype(np.float32)
    with _session() as s:
        v.load(table, s)
        g = s.run(tf.convert_to_tensor(grad))
        eps, fd = 1e-2, np.zeros_like(table)
        for i in range(5):
            for j in range(2):
                t = table.copy()
                t[i, j] += eps
                v.load(t, s)
                up = s.run(loss)
                t[i, j] -= 2 * eps
                v.load(t, s)
                fd[i, j] = (up - s.run(loss)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=2e-2, atol=2e-3)


def test_embedding_default_initializer_and_arguments():
    col = L.sparse_column_with_hash_bucket("s", 400)
    emb = L.embedding_column(col, 4)
    assert emb.name == "s_embedding" and emb.combiner == "mean"
    net = L.input_from_feature_columns({"s": tf.constant([["a"]])}, [emb])
    with _session() as s:
        table = s.run(_var("input_from_feature_columns/s_embedding/weights"))
    # TF 1.15: truncated normal of stddev 1/sqrt(number of ids), within two stddevs
    assert np.abs(table).max() <= 2 / np.sqrt(400) + 1e-6 and 0.02 < table.std() < 0.06
    assert net.shape.as_list() == [1, 4]
    with pytest.raises(ValueError, match="initializer must be callable"):
        L.embedding_column(col, 2, initializer=3)
    with pytest.raises(ValueError, match="ckpt_to_load_from"):
        L.embedding_column(col, 2, ckpt_to_load_from="x")
    with pytest.raises(ValueError, match="combiner"):
        L.embedding_column(col, 2, combiner="max")
    with pytest.raises(TypeError, match="sparse column"):
        L.embedding_column(L.real_valued_column("r"), 2)


# -- linear models ------------------------------------------------------------------------------

def test_weighted_sum_values_and_names():
    dept = L.sparse_column_with_keys("dept", ["a", "b", "c"], combiner="mean")
    age = L.real_valued_column("age", dimension=2)
    bk = L.bucketized_column(L.real_valued_column("z"), [0.0, 1.0])
    feats = {"dept": tf.constant([["a", "c"], ["b", ""]]), "age": np.array([[1.0, 2.0], [3.0, -1.0]], np.float32),
             "z": tf.constant([[0.5], [7.0]])}
    out, col_vars, bias = L.weighted_sum_from_feature_columns(feats, [dept, age, bk], num_outputs=2)
    names = {v.op.name: v.shape.as_list() for v in tf.global_variables()}
    assert names == {"weighted_sum_from_feature_columns/dept/weights": [3, 2],
                     "weighted_sum_from_feature_columns/age/weight": [2, 2],
                     "weighted_sum_from_feature_columns/z_bucketized/weights": [3, 2],
                     "weighted_sum_from_feature_columns/bias_weight": [2]}
    assert set(col_vars) == {dept, age, bk} and all(len(v) == 1 for v in col_vars.values())
    assert bias.op.name == "weighted_sum_from_feature_columns/bias_weight"
    assert len(tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)) == 4
    rng = np.random.default_rng(1)
    wd, wa, wb, b = (rng.normal(size=s).astype(np.float32) for s in ([3, 2], [2, 2], [3, 2], [2]))
    with _session() as s:
        assert not s.run(out).any()  # zero-initialized
        for v, val in ((col_vars[dept][0], wd), (col_vars[age][0], wa), (col_vars[bk][0], wb), (bias, b)):
            v.load(val, s)
        got = s.run(out)
    want = np.stack([(wd[0] + wd[2]) / 2, wd[1]]) + np.array([[1.0, 2.0], [3.0, -1.0]]) @ wa
    want += wb[[1, 2]] + b
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_crossed_column_in_linear_and_embedding():
    a = L.sparse_column_with_hash_bucket("a", 10)
    bk = L.bucketized_column(L.real_valued_column("x"), [0.0])
    cross = L.crossed_column([bk, a], hash_bucket_size=50, hash_key=123)
    assert cross.name == "a_X_x_bucketized" and cross.length == 50
    assert L.create_feature_spec_for_parsing([cross]) == {"a": tf.VarLenFeature(tf.string),
                                                          "x": tf.FixedLenFeature([1], tf.float32)}
    feats = {"a": tf.SparseTensor([[0, 0], [0, 1], [1, 0]], ["u", "v", "u"], [2, 2]), "x": tf.constant([[-1.0], [2.0]])}
    out, cv, _ = L.weighted_sum_from_feature_columns(feats, [cross], 1, scope="lin")
    assert cv[cross][0].op.name == "lin/a_X_x_bucketized/weights"
    # the raw strings of a sparse column and the bucket ids of a bucketized one are crossed
    want_ids = sparse_cross_hashed([feats["a"], tf.constant([[0], [1]], tf.int64)], num_buckets=50, hash_key=123)
    net = L.input_from_feature_columns(feats, [L.embedding_column(cross, 2, combiner="sum")])
    w = np.arange(50, dtype=np.float32)
    with _session() as s:
        cv[cross][0].load(w[:, None], s)
        got, ids = s.run([out, tf.sparse_tensor_to_dense(want_ids, default_value=-1)])
        emb = s.run(net)
        table = s.run(_var("input_from_feature_columns/a_X_x_bucketized_embedding/weights"))
    np.testing.assert_allclose(got[:, 0], [w[ids[0, 0]] + w[ids[0, 1]], w[ids[1, 0]]])
    np.testing.assert_allclose(emb, [table[ids[0, 0]] + table[ids[0, 1]], table[ids[1, 0]]], rtol=1e-6)
    with pytest.raises(TypeError, match="_SparseColumn"):
        L.crossed_column([a, L.real_valued_column("x")], 10)
    with pytest.raises(ValueError, match="at least 2"):
        L.crossed_column([a], 10)


def test_crossed_column_hash_matches_tf_constant():
    # TF 1.15's sparse_feature_cross_op_test: these three strings crossed with
    # SPARSE_FEATURE_CROSS_DEFAULT_HASH_KEY hash to 1971693436396284976
    cols = [L.sparse_column_with_hash_bucket(k, 10) for k in ("f1", "f2", "f3")]
    n = 2 ** 63 - 1  # TF's test ran with no buckets: the hash modulo the int64 maximum
    cross = L.crossed_column(cols, n, hash_key=L.SPARSE_FEATURE_CROSS_DEFAULT_HASH_KEY)
    feats = {f"f{i}": tf.constant([[f"batch1-FC{i}-F1"]]) for i in (1, 2, 3)}
    fetch = _ids(cross, feats)
    with _session() as s:
        got = s.run(fetch)
    np.testing.assert_array_equal(got, [[1971693436396284976]])


def test_joint_weighted_sum_matches_weighted_sum():
    a = L.sparse_column_with_keys("a", ["x", "y"])
    b = L.sparse_column_with_integerized_feature("b", 3)
    feats = {"a": tf.constant([["x", "y"], ["y", ""]]), "b": tf.constant([[2], [0]], tf.int64)}
    out, (w,), bias = L.joint_weighted_sum_from_feature_columns(feats, [b, a], 2)
    assert w.op.name == "joint_weighted_sum_from_feature_columns/linear_weights/weights"
    assert w.shape.as_list() == [5, 2] and bias.op.name == "joint_weighted_sum_from_feature_columns/bias_weight"
    sep, cv, sb = L.weighted_sum_from_feature_columns(feats, [a, b], 2)
    vals = np.arange(10, dtype=np.float32).reshape(5, 2)
    with _session() as s:
        w.load(vals, s)   # TF's order: _SparseColumnIntegerized b (3 ids), then _SparseColumnKeys a (2)
        cv[b][0].load(vals[:3], s)
        cv[a][0].load(vals[3:], s)
        got, want = s.run([out, sep])
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got, [vals[2] + vals[3] + vals[4], vals[0] + vals[4]])
    with pytest.raises(NotImplementedError, match="Real-valued"):
        L.joint_weighted_sum_from_feature_columns(dict(feats, r=tf.constant([[1.0], [2.0]])),
                                                  [a, L.real_valued_column("r")], 1)
    with pytest.raises(ValueError, match="weighted sparse"):
        L.joint_weighted_sum_from_feature_columns({"b": feats["b"], "w": tf.constant([[1.0], [2.0]])},
                                                  [L.weighted_sparse_column(b, "w")], 1)


# -- errors -------------------------------------------------------------------------------------

def test_wrong_column_kinds():
    sp = L.sparse_column_with_hash_bucket("s", 5)
    feats = {"s": tf.constant([["a"]]), "r": tf.constant([[1.0]])}
    with pytest.raises(ValueError, match="Error creating input layer for column: s"):
        L.input_from_feature_columns(feats, [sp])
    with pytest.raises(ValueError, match="CrossedColumn is not supported in DNN"):
        L.input_from_feature_columns({"s": feats["s"], "t": feats["s"]},
                                     [L.crossed_column([sp, L.sparse_column_with_hash_bucket("t", 3)], 9)])
    with pytest.raises(ValueError, match="not supported in linear models"):
        L.weighted_sum_from_feature_columns(feats, [L.embedding_column(sp, 2)], 1)
    with pytest.raises(ValueError, match="Duplicate feature column"):
        L.input_from_feature_columns(feats, [L.real_valued_column("r"), L.real_valued_column("r")])
    with pytest.raises(ValueError, match="found dict"):
        L.input_from_feature_columns(feats, {"r": L.real_valued_column("r")})
    with pytest.raises(TypeError, match="contrib"):
        L.input_from_feature_columns(feats, [tf.feature_column.numeric_column("r")])
    with pytest.raises(ValueError, match="not in features"):
        L.input_from_feature_columns(feats, [L.real_valued_column("missing")])
    with pytest.raises(ValueError, match="bucket_size must be at least 1"):
        L.sparse_column_with_hash_bucket("s", 0)
    with pytest.raises(ValueError, match="dtype must be an integer"):
        L.sparse_column_with_integerized_feature("s", 3, dtype=tf.string)


# -- parsing, inference and training ------------------------------------------------------------

def test_parse_feature_columns_from_examples():
    dept = L.sparse_column_with_keys("dept", ["a", "b"])
    age = L.real_valued_column("age", default_value=-1.0)
    cols = [L.one_hot_column(dept), age]
    assert L.create_feature_spec_for_parsing(cols) == {"dept": tf.VarLenFeature(tf.string),
                                                       "age": tf.FixedLenFeature([1], tf.float32, [-1.0])}

    def ex(age_v, dept_v):
        f = {"dept": tf.train.Feature(bytes_list=tf.train.BytesList(value=dept_v))}
        if age_v is not None:
            f["age"] = tf.train.Feature(float_list=tf.train.FloatList(value=[age_v]))
        return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()
    serialized = tf.placeholder(tf.string, [None])
    parsed = L.parse_feature_columns_from_examples(serialized, cols)
    assert "dept" in parsed and dept in parsed and age in parsed
    net = L.input_from_feature_columns(parsed, cols)
    with _session() as s:
        got = s.run(net, {serialized: [ex(3.0, [b"b", b"a"]), ex(None, [b"b"])]})
    np.testing.assert_allclose(got, [[1, 1, 3.0], [0, 1, -1.0]])


def test_infer_real_valued_columns():
    (c,) = L.infer_real_valued_columns(np.zeros([4, 3, 2], np.float64))
    assert (c.name, c.dimension, c.dtype) == ("", 6, tf.float64)
    cols = L.infer_real_valued_columns({"a": tf.constant([[1, 2]], tf.int32), "b": tf.zeros([5])})
    assert [(c.name, c.dimension, c.dtype) for c in cols] == [("a", 2, tf.int32), ("b", 1, tf.float32)]
    with pytest.raises(ValueError, match="SparseTensor"):
        L.infer_real_valued_columns({"s": tf.SparseTensor([[0, 0]], [1.0], [1, 1])})
    with pytest.raises(ValueError, match="Non integer"):
        L.infer_real_valued_columns(tf.constant([["x"]]))


def test_linear_and_dnn_training_loss_falls():
    rng = np.random.default_rng(3)
    n = 64
    words = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, size=n)]
    x = rng.normal(size=(n, 1)).astype(np.float32)
    y = ((words == "a") | (words == "c")).astype(np.float32)[:, None] * 2.0 + x
    w = L.sparse_column_with_keys("w", ["a", "b", "c", "d"])
    xc = L.real_valued_column("x")
    feats = {"w": tf.constant(words[:, None]), "x": tf.constant(x)}
    lin, _, _ = L.weighted_sum_from_feature_columns(feats, [w, xc, L.bucketized_column(xc, [0.0])], 1)
    net = L.input_from_feature_columns(feats, [L.embedding_column(w, 3), xc])
    deep = L.fully_connected(L.fully_connected(net, 8), 1, activation_fn=None)
    losses = [tf.reduce_mean(tf.square(lin - y)), tf.reduce_mean(tf.square(lin + deep - y))]
    train = [tf.train.GradientDescentOptimizer(0.1).minimize(loss) for loss in losses]
    with _session() as s:
        for loss, op in zip(losses, train):
            first = s.run(loss)
            for _ in range(60):
                s.run(op)
            assert s.run(loss) < 0.2 * first


def test_bucketized_multi_dimension_ids_in_linear_model():
    bk = L.bucketized_column(L.real_valued_column("q", dimension=2), [0.0])
    feats = {"q": tf.constant([[-1.0, 1.0], [2.0, -3.0], [5.0, 5.0]])}
    out, cv, _ = L.weighted_sum_from_feature_columns(feats, [bk], 1)
    w = cv[bk][0]
    assert w.op.name == "weighted_sum_from_feature_columns/q_bucketized/weights" and w.shape.as_list() == [4, 1]
    vals = np.array([[1.0], [10.0], [100.0], [1000.0]], np.float32)  # dimension j's buckets at 2j, 2j+1
    with _session() as s:
        w.load(vals, s)
        got = s.run(out)
    np.testing.assert_allclose(got[:, 0], [1.0 + 1000.0, 10.0 + 100.0, 10.0 + 1000.0])


def test_shared_embedding_columns():
    a = L.sparse_column_with_integerized_feature("a", 4)
    b = L.sparse_column_with_integerized_feature("b", 4)
    ea, eb = L.shared_embedding_columns([b, a], 2, combiner="sum")
    assert ea.name == "b_shared_embedding" and ea.shared_embedding_name == "a_b_shared_embedding"
    feats = {"a": tf.constant([[1], [3]], tf.int64), "b": tf.constant([[0], [1]], tf.int64)}
    net = L.input_from_feature_columns(feats, [ea, eb])
    (v,) = tf.global_variables()
    assert v.op.name == "input_from_feature_columns/a_shared_embedding/a_b_shared_embedding" and v.shape == [4, 2]
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    with _session() as s:
        v.load(table, s)
        got = s.run(net)
    np.testing.assert_allclose(got, np.concatenate([table[[1, 3]], table[[0, 1]]], 1))
    with pytest.raises(ValueError, match="not compatible"):
        L.shared_embedding_columns([a, L.sparse_column_with_integerized_feature("c", 5)], 2)


def test_weight_collections_trainable_and_scope():
    col = L.sparse_column_with_hash_bucket("s", 7)
    feats = {"s": tf.constant([["a"]])}
    with tf.variable_scope("outer"):
        L.input_from_feature_columns(feats, [L.embedding_column(col, 2)], weight_collections=["mine"],
                                     trainable=False)
        _, cv, bias = L.weighted_sum_from_feature_columns(feats, [col], 1, weight_collections=["lin"], scope="wide")
    emb = _var("outer/input_from_feature_columns/s_embedding/weights")
    assert emb in tf.get_collection("mine") and emb not in tf.trainable_variables()
    assert cv[col][0].op.name == "outer/wide/s/weights" and bias.op.name == "outer/wide/bias_weight"
    assert cv[col][0] in tf.get_collection("lin") and bias in tf.get_collection("lin")
    assert cv[col][0] in tf.trainable_variables()
