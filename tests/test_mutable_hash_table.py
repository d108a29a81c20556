"""Mutable lookup tables (tf.contrib.lookup.MutableHashTable / MutableDenseHashTable,
tf.lookup.experimental.MutableHashTable / DenseHashTable): values by hand, TF's errors, the
dense table's bucket layout, control dependencies, Dataset.map, and Saver round trips."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

E = tf.lookup.experimental


def _i64(x):
    return tf.constant(x, tf.int64)


def test_mutable_hash_table_basics():
    with tf.Graph().as_default():
        t = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, -1)
        assert t.name == "MutableHashTable" and t.key_dtype == tf.string and t.value_dtype == tf.int64
        assert t.resource_handle.op.type == "MutableHashTableV2"
        ins = t.insert(["a", "b", "c"], _i64([1, 2, 3]))
        assert ins.name == "MutableHashTable_lookup_table_insert/LookupTableInsertV2"
        with tf.control_dependencies([ins]):
            out = t.lookup(tf.constant([["a", "z"], ["c", "b"]]))
        assert out.shape.as_list() == [2, 2]
        with tf.Session() as s:
            assert s.run(out).tolist() == [[1, -1], [3, 2]]
            assert s.run(t.size()) == 3
            s.run(t.remove(tf.constant(["b", "nope"])))
            s.run(t.insert("a", _i64(10)))  # a scalar key
            k, v = s.run(t.export())
            assert sorted(zip(k.tolist(), v.tolist())) == [(b"a", 10), (b"c", 3)]
            assert s.run(t.size()) == 2
        with tf.Session() as s:  # per-Session state: a new Session starts empty
            assert s.run(t.size()) == 0


def test_vector_values_and_int_keys():
    with tf.Graph().as_default():
        t = E.MutableHashTable(tf.int64, tf.float32, [0.0, -1.0], name="emb")
        assert t.resource_handle.op.type == "MutableHashTableOfTensorsV2"
        out = t.lookup(_i64([[1, 2, 3]]))
        assert out.shape.as_list() == [1, 3, 2]
        with tf.Session() as s:
            s.run(t.insert(_i64([1, 3]), [[1.0, 2.0], [3.0, 4.0]]))
            np.testing.assert_array_equal(s.run(out), [[[1, 2], [0, -1], [3, 4]]])
            np.testing.assert_array_equal(s.run(t.lookup(_i64(3))), [3, 4])
            k, v = s.run(t.export())
            assert k.tolist() == [1, 3] and v.shape == (2, 2)


def test_mutable_hash_table_errors():
    with tf.Graph().as_default():
        t = E.MutableHashTable(tf.string, tf.int64, -1)
        vec = E.MutableHashTable(tf.int64, tf.float32, [0.0, 1.0], name="vec")
        bad_default = E.MutableHashTable(tf.int64, tf.float32, [[0.0, 1.0]], name="mat")
        bad_types = E.MutableHashTable(tf.int64, tf.bool, False, name="ib")
        with pytest.raises(ValueError, match="Tensor conversion requested dtype string"):
            t.insert(tf.constant([1]), _i64([1]))
        with pytest.raises(ValueError, match="requested dtype int64"):
            t.insert(["a"], tf.constant([1], tf.int32))
        with pytest.raises(TypeError):
            t.remove(tf.constant([1]))
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected shape \[2\] for value, got \[3\]"):
                s.run(t.insert(["a", "b"], _i64([1, 2, 3])))
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected shape \[1,2\] for value, got \[1,3\]"):
                s.run(vec.insert(_i64([1]), [[1.0, 2.0, 3.0]]))
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"Default value must be a vector, got shape \[1,2\]"):
                s.run(bad_default.size())
            with pytest.raises(tf.errors.InvalidArgumentError, match="No OpKernel was registered"):
                s.run(bad_types.size())
            assert s.run(t.size()) == 0  # the failed insert changed nothing


def test_dense_hash_table_buckets_as_tf():
    # TF's layout: bucket = key & (n - 1), triangular probing, doubling past 80% load
    with tf.Graph().as_default():
        d = tf.contrib.lookup.MutableDenseHashTable(tf.int64, tf.int64, -1, empty_key=0, deleted_key=-1,
                                                   initial_num_buckets=4)
        assert d.name == "MutableDenseHashTable" and d.resource_handle.op.type == "MutableDenseHashTableV2"
        with tf.Session() as s:
            s.run(d.insert(_i64([4, 8, 12]), _i64([1, 2, 3])))
            k, v = s.run(d.export())
            assert k.tolist() == [[4], [8], [0], [12]] and v.tolist() == [[1], [2], [0], [3]]
            s.run(d.insert(_i64([4]), _i64([9])))  # 3 + 1 > 0.8 * 4: 8 buckets
            k, v = s.run(d.export())
            assert k.reshape(-1).tolist() == [8, 0, 0, 0, 4, 12, 0, 0]
            assert v.reshape(-1).tolist() == [2, 0, 0, 0, 9, 3, 0, 0]
            s.run(d.remove(_i64([4, 99])))
            assert s.run(d.size()) == 2
            assert s.run(d.export())[0].reshape(-1).tolist() == [8, 0, 0, 0, -1, 12, 0, 0]
            assert s.run(d.lookup(_i64([8, 4, 12, 5]))).tolist() == [2, -1, 3, -1]
            assert s.run(d.lookup(_i64(12))) == 3


def test_dense_string_and_vector_keys():
    with tf.Graph().as_default():
        ds = E.DenseHashTable(tf.string, tf.int64, -1, empty_key="", deleted_key="$", initial_num_buckets=16)
        dv = E.DenseHashTable(tf.int64, tf.float32, [0.0, 0.0], empty_key=[0, 0], deleted_key=[-1, -1],
                              initial_num_buckets=8)
        out = dv.lookup(_i64([[1, 2], [3, 5]]))
        assert out.shape.as_list() == [2, 2]
        with tf.Session() as s:
            s.run(ds.insert(["x", "y", "zz", "hello world!", "abcdefgh", "q"], _i64([1, 2, 3, 4, 5, 6])))
            k, v = s.run(ds.export())
            # TF's Hash64 places the strings
            assert k[:5, 0].tolist() == [b"x", b"", b"abcdefgh", b"y", b"q"] and k[15, 0] == b"hello world!"
            assert v[:5, 0].tolist() == [1, 0, 5, 2, 6]
            s.run(dv.insert(_i64([[1, 2], [3, 4], [5, 6]]), [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
            k, v = s.run(dv.export())
            assert k.tolist() == [[0, 0]] * 3 + [[1, 2], [5, 6], [0, 0], [0, 0], [3, 4]]
            np.testing.assert_array_equal(s.run(out), [[1, 2], [0, 0]])


def test_dense_errors():
    with tf.Graph().as_default():
        d = E.DenseHashTable(tf.int64, tf.int64, -1, empty_key=0, deleted_key=-1, initial_num_buckets=8)
        same = E.DenseHashTable(tf.int64, tf.int64, -1, empty_key=0, deleted_key=0, name="same")
        odd = E.DenseHashTable(tf.int64, tf.int64, -1, empty_key=0, deleted_key=1, initial_num_buckets=6, name="odd")
        with tf.Session() as s:
            for op, msg in [(d.insert(_i64([0]), _i64([1])), "Using the empty_key as a table key is not allowed"),
                            (d.insert(_i64([-1]), _i64([1])), "Using the deleted_key as a table key is not allowed"),
                            (d.lookup(_i64([0])), "empty_key"), (d.remove(_i64([-1])), "deleted_key"),
                            (d.lookup(_i64([[1, 2]])), r"Expected key shape \[1\] got \[1,2\]"),
                            (d.insert(_i64([1, 2]), _i64([1, 2, 3])), r"Expected shape \[2\] for value, got \[3\]"),
                            (same.size(), "Empty and deleted keys cannot be equal"),
                            (odd.size(), "Number of buckets must be at least 4 and a power of 2, got: 6")]:
                with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
                    s.run(op)
            assert s.run(d.size()) == 0
            assert s.run(d.export())[0].shape == (8, 1)


def test_default_bucket_count():
    with tf.Graph().as_default():
        d = E.DenseHashTable(tf.int64, tf.float32, 0.0, empty_key=0, deleted_key=-1)
        with tf.Session() as s:
            k, v = s.run(d.export())
    assert k.shape == (131072, 1) and v.shape == (131072, 1)


def test_table_in_dataset_map():
    with tf.Graph().as_default():
        t = E.MutableHashTable(tf.string, tf.int64, -1)
        ds = tf.data.Dataset.from_tensor_slices(["a", "b", "c"]).map(lambda x: t.lookup(x))
        it = ds.make_initializable_iterator()
        nxt = it.get_next()
        with tf.Session() as s:
            s.run(t.insert(["a", "c"], _i64([1, 3])))
            s.run(it.initializer)
            assert [int(s.run(nxt)) for _ in range(3)] == [1, -1, 3]


def test_saver_round_trip(tmp_path):
    def build():
        v = tf.Variable(3.0, name="v")
        t = E.MutableHashTable(tf.string, tf.float32, [0.0, 0.0], name="emb")
        d = E.DenseHashTable(tf.string, tf.int64, -1, "", "$", 8, name="dense")
        n = E.MutableHashTable(tf.int64, tf.int64, 0, name="nockpt", checkpoint=False)
        return v, t, d, n
    with tf.Graph().as_default():
        v, t, d, n = build()
        assert [x.name for x in tf.get_collection(tf.GraphKeys.SAVEABLE_OBJECTS if hasattr(
            tf.GraphKeys, "SAVEABLE_OBJECTS") else "saveable_objects")] == ["emb", "dense"]
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run([t.insert(["a", "b"], [[1.0, 2.0], [3.0, 4.0]]), d.insert(["x", "yé"], _i64([5, 6])),
                   n.insert(_i64([1]), _i64([2]))])
            s.run(d.remove(["x"]))
            want_d = s.run(d.export())
            path = saver.save(s, str(tmp_path / "m"))
    names = dict(tf.train.list_variables(path))
    assert {"emb-keys", "emb-values", "dense-keys", "dense-values", "v"} <= set(names)
    assert names["emb-values"] == [2, 2] and "nockpt-keys" not in names
    with tf.Graph().as_default():
        v, t, d, n = build()
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(d.insert(["junk"], _i64([1])))  # replaced by the restore
            r = saver.restore(s, path)
            assert sorted(r.restored) == ["dense", "emb", "v"] and not r.unexpected and not r.missing
            k, vals = s.run(t.export())
            assert sorted(zip(k.tolist(), vals.tolist())) == [(b"a", [1.0, 2.0]), (b"b", [3.0, 4.0])]
            got_d = s.run(d.export())
            assert got_d[0].tolist() == want_d[0].tolist() and got_d[1].tolist() == want_d[1].tolist()
            assert s.run(d.lookup(["x", "yé", "junk"])).tolist() == [-1, 6, -1]
            assert s.run([d.size(), n.size(), v]) == [1, 0, 3.0]


def test_saver_var_list_and_missing(tmp_path):
    with tf.Graph().as_default():
        t = E.MutableHashTable(tf.int64, tf.int64, -1, name="only")
        saver = tf.train.Saver([t])  # a table alone: no variables needed
        with tf.Session() as s:
            s.run(t.insert(_i64([7]), _i64([8])))
            path = saver.save(s, str(tmp_path / "t"))
    with tf.Graph().as_default():
        t = E.MutableHashTable(tf.int64, tf.int64, -1, name="only")
        other = E.MutableHashTable(tf.int64, tf.int64, -1, name="other")
        with tf.Session() as s:
            tf.train.Saver({"only": t}).restore(s, path)
            assert s.run(t.lookup(_i64([7, 1]))).tolist() == [8, -1]
            with pytest.raises(tf.errors.NotFoundError, match="other"):
                tf.train.Saver([other]).restore(s, path)


def test_tensorflow_format_checkpoint(tmp_path):
    with tf.Graph().as_default():
        t = E.MutableHashTable(tf.string, tf.int64, -1, name="tbl")
        saver = tf.train.Saver(checkpoint_format="tensorflow")
        with tf.Session() as s:
            s.run(t.insert(["p", "q"], _i64([1, 2])))
            path = saver.save(s, str(tmp_path / "tfm"))
        with tf.Session() as s:
            saver.restore(s, path)
            assert s.run(t.lookup(["q", "p", "r"])).tolist() == [2, 1, -1]
