"""Lookup tables (tf.contrib.lookup / tf.lookup): values by hand, errors, file vocabularies,
SparseTensor keys, tables in Dataset.map and MonitoredTrainingSession, and differential
tests against TensorFlow's lookup_ops when it is installed."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.kernels.farmhash import fingerprint64
from tests.tf_peer import run_in_both, tensorflow_v1

L = tf.contrib.lookup


def _oov(key: str, vocab: int, buckets: int) -> int:
    return vocab + fingerprint64(key.encode()) % buckets


def _vocab(tmp_path, text: str, name: str = "vocab.txt") -> str:
    p = tmp_path / name
    p.write_bytes(text.encode())
    return str(p)


def _lib(T):
    """The module with TF1's contrib.lookup names: collflow's, or TF's lookup_ops."""
    if hasattr(T, "contrib"):
        return T.contrib.lookup
    tensorflow_v1()
    from tensorflow.python.ops import lookup_ops
    return lookup_ops


def test_hash_table_strings_and_ints():
    with tf.Graph().as_default():
        t = L.HashTable(L.KeyValueTensorInitializer(["a", "b", "c"], [1, 2, 3]), -1)
        ti = L.HashTable(L.KeyValueTensorInitializer(tf.constant([10, 20], tf.int64), ["x", "y"]), "UNK")
        tf_ = tf.lookup.StaticHashTable(L.KeyValueTensorInitializer(["p"], [1.5]), 0.25)
        assert t.key_dtype == tf.string and t.value_dtype == tf.int32 and t.name == "hash_table"
        assert t.init is t.initializer and t.initializer in tf.get_collection(tf.GraphKeys.TABLE_INITIALIZERS)
        out = t.lookup(tf.constant([["a", "z"], ["c", "b"]]))
        assert out.dtype == tf.int32 and out.shape.as_list() == [2, 2]
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            got, gi, gf, n = s.run([out, ti.lookup(tf.constant([20, 5, 10], tf.int64)),
                                    tf_.lookup(["p", "q"]), t.size()])
            assert s.run(t.default_value) == -1
    np.testing.assert_array_equal(got, [[1, -1], [3, 2]])
    assert gi.tolist() == [b"y", b"UNK", b"x"] and gf.tolist() == [1.5, 0.25] and n == 3


def test_uninitialized_and_duplicates():
    with tf.Graph().as_default():
        t = L.HashTable(L.KeyValueTensorInitializer(["a", "b"], [1, 2]), -1)
        dup = L.HashTable(L.KeyValueTensorInitializer(["a", "a"], [1, 2]), -1)
        same = L.HashTable(L.KeyValueTensorInitializer(["a", "a", "b"], [1, 1, 2]), -1)
        with tf.Session() as s:
            assert s.run(t.size()) == 0  # TF's size of an uninitialized table
            with pytest.raises(tf.errors.FailedPreconditionError, match="Table not initialized"):
                s.run(t.lookup(tf.constant(["a"])))
            with pytest.raises(tf.errors.FailedPreconditionError,
                               match="different value for same key. Key a has 1 and trying to add value 2"):
                s.run(dup.initializer)
            s.run([t.initializer, same.initializer])
            s.run(t.initializer)  # again, the same data: allowed, as in TF
            assert s.run(same.size()) == 2 and s.run(same.lookup(tf.constant("a"))) == 1
        with pytest.raises(TypeError, match="Dtype of argument `keys`"):
            t.lookup(tf.constant([1, 2]))


def test_reinitialize_keeps_first_data():
    """As TF 2.21 (checked against it): a second initialization, even with other data, does nothing."""
    with tf.Graph().as_default():
        keys = tf.placeholder(tf.string, [None])
        t = L.HashTable(L.KeyValueTensorInitializer(keys, tf.constant([1, 2], tf.int64)), -1)
        with tf.Session() as s:
            s.run(t.initializer, {keys: ["a", "b"]})
            s.run(t.initializer, {keys: ["a", "b"]})
            s.run(t.initializer, {keys: ["a", "c"]})
            assert s.run(t.lookup(tf.constant(["a", "b", "c"]))).tolist() == [1, 2, -1]


def test_tables_are_per_session():
    with tf.Graph().as_default():
        t = L.index_table_from_tensor(["a", "b"])
        q = t.lookup(tf.constant("b"))
        with tf.Session() as s1, tf.Session() as s2:
            s1.run(tf.tables_initializer())
            assert s1.run(q) == 1
            with pytest.raises(tf.errors.FailedPreconditionError):
                s2.run(q)


def test_index_table_from_tensor_oov_buckets():
    with tf.Graph().as_default():
        t = L.index_table_from_tensor(["a", "b", "c"], num_oov_buckets=4)
        ti = L.index_table_from_tensor(tf.constant([5, 7], tf.int64), num_oov_buckets=3, dtype=tf.int64)
        ti32 = L.index_table_from_tensor([5, 7], num_oov_buckets=3, dtype=tf.int32)
        t0 = L.index_table_from_tensor(["a", "b"], default_value=-7)
        sv = tf.lookup.StaticVocabularyTable(
            L.KeyValueTensorInitializer(["x"], tf.constant([0], tf.int64)), num_oov_buckets=2)
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            got = s.run([t.lookup(["a", "c", "zz", "q"]), t.size(), ti.lookup(tf.constant([7, 8, -3], tf.int64)),
                         ti32.lookup(tf.constant([5, 100])), t0.lookup(["b", "zz"]), sv.lookup(["x", "y"]), sv.size()])
    assert got[0].tolist() == [0, 2, _oov("zz", 3, 4), _oov("q", 3, 4)] and got[1] == 7
    # integer keys are hashed in their decimal form (and int32 keys go to an int64 table)
    assert got[2].tolist() == [1, _oov("8", 2, 3), _oov("-3", 2, 3)] and got[3].tolist() == [0, _oov("100", 2, 3)]
    assert got[4].tolist() == [1, -7] and got[5].tolist() == [0, _oov("y", 1, 2)] and got[6] == 3
    with pytest.raises(ValueError):
        tf.lookup.StaticVocabularyTable(L.KeyValueTensorInitializer(["x"], tf.constant([0], tf.int64)), 0)
    with pytest.raises(ValueError):
        L.index_table_from_tensor(["a"], num_oov_buckets=-1)


def test_id_table_with_hash_buckets_strong_and_tableless():
    with tf.Graph().as_default():
        only = L.IdTableWithHashBuckets(None, 5)
        strong = L.IdTableWithHashBuckets(L.index_table_from_tensor(["a"]), 3, hasher_spec=L.StrongHashSpec([1, 2]))
        want_strong = tf.strings.to_hash_bucket_strong(["zz"], 3, [1, 2])
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            a, b, ws, n = s.run([only.lookup(["k"]), strong.lookup(["a", "zz"]), want_strong, only.size()])
    assert a.tolist() == [fingerprint64(b"k") % 5] and b.tolist() == [0, 1 + ws[0]] and n == 5


def test_index_to_string():
    with tf.Graph().as_default():
        t = L.index_to_string_table_from_tensor(["x", "y", "z"], default_value="Q")
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            got = s.run(t.lookup(tf.constant([[2, 0], [3, -1]], tf.int64)))
    assert got.tolist() == [[b"z", b"x"], [b"Q", b"Q"]]


def test_sparse_lookup():
    with tf.Graph().as_default():
        t = L.index_table_from_tensor(["a", "b"], num_oov_buckets=1)
        sp = tf.SparseTensor([[0, 0], [1, 2]], ["b", "x"], [2, 3])
        out = t.lookup(sp)
        assert isinstance(out, tf.SparseTensor)
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            v = s.run(out)
    assert v.indices.tolist() == [[0, 0], [1, 2]] and v.values.tolist() == [1, 2] and v.dense_shape.tolist() == [2, 3]


def test_file_vocabularies(tmp_path):
    words = _vocab(tmp_path, "apple\nbanana\ncherry\r\ndate")  # CRLF and no final newline, as TF reads them
    cols = _vocab(tmp_path, "k1\t10\t1.5\nk2\t20\t2.5\n", "cols.txt")
    nums = _vocab(tmp_path, "7\n-3\n42\n", "nums.txt")
    with tf.Graph().as_default():
        t = L.index_table_from_file(words)
        toov = L.index_table_from_file(words, num_oov_buckets=2)
        tsz = L.index_table_from_file(words, vocab_size=2, default_value=-5)
        tcol = L.HashTable(L.TextFileInitializer(cols, tf.string, 0, tf.int64, 1), -1)
        tflt = L.HashTable(L.TextFileInitializer(cols, tf.string, 0, tf.float32, 2), 0.0)
        tnum = L.index_table_from_file(nums, key_dtype=tf.int64)
        back = L.index_to_string_table_from_file(words)
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            q = tf.constant(["banana", "date", "fig", "cherry"])
            got = s.run([t.lookup(q), toov.lookup(q), tsz.lookup(q), tsz.size(), tcol.lookup(["k2", "k3"]),
                         tflt.lookup(["k1"]), tnum.lookup(tf.constant([42, 7, 8], tf.int64)),
                         back.lookup(tf.constant([3, 0, 4], tf.int64)), toov.size()])
    assert got[0].tolist() == [1, 3, -1, 2] and got[1].tolist() == [1, 3, _oov("fig", 4, 2), 2]
    assert got[2].tolist() == [1, -5, -5, -5] and got[3] == 2
    assert got[4].tolist() == [20, -1] and got[5].tolist() == [1.5] and got[6].tolist() == [2, 0, -1]
    assert got[7].tolist() == [b"date", b"apple", b"UNK"] and got[8] == 6


@pytest.mark.parametrize("text,kwargs,match", [
    ("a\nb\n\nc\n", {}, "empty line found at position 5"),
    ("a\nb\n", {"vocab_size": 3}, "Invalid vocab_size .*: expected 3 but got 2"),
    ("a\nb\na\n", {}, "different value for same key"),
])
def test_file_vocabulary_errors(tmp_path, text, kwargs, match):
    path = _vocab(tmp_path, text)
    with tf.Graph().as_default():
        t = L.index_table_from_file(path, **kwargs)
        with tf.Session() as s:
            with pytest.raises((tf.errors.InvalidArgumentError, tf.errors.FailedPreconditionError), match=match):
                s.run(t.initializer)


def test_file_column_errors(tmp_path):
    path = _vocab(tmp_path, "x\t1\ny\tzz\n")
    with tf.Graph().as_default():
        bad_int = L.HashTable(L.TextFileInitializer(path, tf.string, 0, tf.int64, 1), -1)
        bad_col = L.HashTable(L.TextFileInitializer(path, tf.string, 0, tf.int64, 3), -1)
        missing = L.index_table_from_file(str(tmp_path / "nope.txt"))
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Field zz in line 1 is not a valid int64"):
                s.run(bad_int.initializer)
            with pytest.raises(tf.errors.InvalidArgumentError, match="expected at least 4 got 2"):
                s.run(bad_col.initializer)
            with pytest.raises(tf.errors.NotFoundError):
                s.run(missing.initializer)
    with pytest.raises(ValueError):
        L.TextFileInitializer(path, tf.string, 0, tf.string, L.TextFileIndex.LINE_NUMBER)


def test_table_in_dataset_map():
    with tf.Graph().as_default():
        outer = L.index_table_from_tensor(["a", "b"], num_oov_buckets=1)

        def inner(x):  # a table made inside the function is initialized with it, as in TF
            return outer.lookup(x), L.index_table_from_tensor(tf.constant(["b"])).lookup(x)
        ds = tf.data.Dataset.from_tensor_slices(["a", "b", "c"]).map(inner)
        it = ds.make_initializable_iterator()
        nxt = it.get_next()
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            s.run(it.initializer)
            got = [s.run(nxt) for _ in range(3)]
    assert [(int(a), int(b)) for a, b in got] == [(0, -1), (1, 0), (2, -1)]


def test_monitored_training_session_initializes_tables():
    with tf.Graph().as_default():
        t = L.index_table_from_tensor(["a", "b"])
        tf.train.get_or_create_global_step()
        out = t.lookup(tf.constant(["b", "x"]))
        with tf.train.MonitoredTrainingSession() as s:
            assert s.run(out).tolist() == [1, -1]


def test_namespaces():
    for n in ("StaticHashTable", "StaticVocabularyTable", "KeyValueTensorInitializer", "TextFileInitializer",
              "TextFileIndex", "index_table_from_tensor", "index_table_from_file",
              "index_to_string_table_from_tensor", "index_to_string_table_from_file"):
        assert getattr(tf.lookup, n) is getattr(L, n)
    assert L.TextFileIndex.WHOLE_LINE == -2 and L.TextFileIndex.LINE_NUMBER == -1
    assert tf.initialize_all_tables is tf.tables_initializer


# -- differential tests against TensorFlow ------------------------------------------------------------


def test_tf_hash_and_vocabulary_tables():
    def program(T):
        lk = _lib(T)
        t = lk.HashTable(lk.KeyValueTensorInitializer(["a", "b", "c"], [1, 2, 3]), -1)
        ti = lk.HashTable(lk.KeyValueTensorInitializer(T.constant([10, 20], T.int64), ["x", "y"]), "UNK")
        v = lk.index_table_from_tensor(["a", "b", "c"], num_oov_buckets=5)
        vi = lk.index_table_from_tensor(T.constant([5, 7], T.int64), num_oov_buckets=3, dtype=T.int64)
        sv = T.lookup.StaticVocabularyTable(T.lookup.KeyValueTensorInitializer(["x"], T.constant([0], T.int64)), 7)
        back = lk.index_to_string_table_from_tensor(["x", "y"], default_value="Q")
        keys = T.constant([["a", "zz"], ["c", "hello world"], ["", "b"]])
        sp = T.SparseTensor([[0, 0], [1, 2], [2, 1]], ["b", "x", "nope"], [3, 3])
        return [t.lookup(keys), t.size(), ti.lookup(T.constant([20, 5, 10], T.int64)), v.lookup(keys), v.size(),
                vi.lookup(T.constant([5, 7, 8, 9, 100, -3, 123456789012], T.int64)), sv.lookup(keys), sv.size(),
                back.lookup(T.constant([1, 2, -1, 0], T.int64)), v.lookup(sp).values, t.lookup(sp).values]
    mine, theirs = run_in_both(program, init=True)
    for a, b in zip(mine, theirs):  # strings: bytes in both
        np.testing.assert_array_equal(a, b)


def test_tf_file_tables(tmp_path):
    words = _vocab(tmp_path, "apple\nbanana\ncherry\r\ndate")
    cols = _vocab(tmp_path, "k1\t10\nk2\t20\n", "cols.txt")

    def program(T):
        lk = _lib(T)
        q = T.constant(["banana", "date", "fig", "cherry", "apple"])
        tabs = [lk.index_table_from_file(words), lk.index_table_from_file(words, num_oov_buckets=3),
                lk.index_table_from_file(words, vocab_size=3, default_value=-9),
                lk.HashTable(lk.TextFileInitializer(cols, T.string, 0, T.int64, 1), -1)]
        back = lk.index_to_string_table_from_file(words, default_value="none")
        return ([x.lookup(q) for x in tabs] + [x.size() for x in tabs] +
                [back.lookup(T.constant([3, 0, 9], T.int64)), back.size()])
    mine, theirs = run_in_both(program, init=True)
    for a, b in zip(mine, theirs):  # strings: bytes in both
        np.testing.assert_array_equal(a, b)


def test_tf_errors_match():
    """The same errors (type and message) as TF for the uninitialized lookup and duplicate keys."""
    T = tensorflow_v1()
    from tensorflow.python.ops import lookup_ops
    for mod, lib in ((tf, L), (T, lookup_ops)):
        with mod.Graph().as_default():
            t = lib.HashTable(lib.KeyValueTensorInitializer(["a", "a"], [1, 2]), -1)
            with mod.Session() as s:
                with pytest.raises(Exception, match="Table not initialized") as e1:
                    s.run(t.lookup(mod.constant(["a"])))
                with pytest.raises(Exception, match="Key a has 1 and trying to add value 2") as e2:
                    s.run(t.initializer)
        assert type(e1.value).__name__ == type(e2.value).__name__ == "FailedPreconditionError"
