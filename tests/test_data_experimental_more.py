"""By-hand tests (no TensorFlow) of collflow/data/csv_dataset.py, cardinality.py,
dataset_experimental_more.py and resampling.py: CSV parsing rules, make_csv_dataset's
inference and pipeline, cardinality, unique, take_while, Counter, RandomDataset,
dense_to_sparse_batch, get_next_as_optional, TFRecordWriter, parse_example_dataset,
make_batched_features_dataset, rejection_resample."""
import collections

import numpy as np
import pytest

import collflow.compat.v1 as tf

E = tf.data.experimental
D = tf.data.Dataset


def elements(ds, limit=100):
    nxt = ds.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as s:
        try:
            for _ in range(limit):
                out.append(s.run(nxt))
        except tf.errors.OutOfRangeError:
            pass
    return out


def first_error(ds):
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as s:
        with pytest.raises(tf.errors.OpError) as e:
            while True:
                s.run(nxt)
    return e.value


@pytest.fixture
def write(tmp_path):
    def w(text, name="f.csv"):
        p = tmp_path / name
        p.write_text(text)
        return str(p)
    return w


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def test_csv_quotes_defaults_and_types(write):
    p = write('1,"a,b",2.5\n2,"x""y",\n,"multi\nline",1e3\n')
    got = elements(E.CsvDataset(p, [[7], tf.string, [0.5]]))
    assert [(int(a), b, float(c)) for a, b, c in got] == [(1, b"a,b", 2.5), (2, b'x"y', 0.5), (7, b"multi\nline", 1000.0)]
    assert got[0][0].dtype == np.int32 and got[0][2].dtype == np.float32


def test_csv_header_select_na_delim(write):
    p = write("h1|h2|h3|h4\n1|NA|3.5|x\n2|b|NA|y\n")
    got = elements(E.CsvDataset(p, [["d"], [9.0]], header=True, field_delim="|", na_value="NA", select_cols=[1, 2]))
    assert [(a, float(b)) for a, b in got] == [(b"d", 3.5), (b"b", 9.0)]


def test_csv_int64_and_dtypes(write):
    p = write("99999999999, -3 ,inf\n")
    (a, b, c), = elements(E.CsvDataset(p, [tf.int64, tf.int32, tf.float64]))
    assert (int(a), int(b), c.dtype) == (99999999999, -3, np.float64) and np.isinf(c)


@pytest.mark.parametrize("text,defaults,kw,msg", [
    ("1,\n", lambda: [tf.int32, tf.string], {}, "Field 1 is required but missing in record 0"),
    ("1,a,3\n", lambda: [tf.int32, tf.string], {}, "Expect 2 fields but have 3 in record 0"),
    ("x,a\n", lambda: [tf.int32, tf.string], {}, "not a valid int32"),
    ("99999999999,a\n", lambda: [tf.int32, tf.string], {}, "not a valid int32"),
    ('1,a"b\n', lambda: [tf.int32, tf.string], {}, "Unquoted fields cannot have quotes"),
    ('1,"ab"c\n', lambda: [tf.int32, tf.string], {}, "has to be escaped"),
    ('1,"ab\n', lambda: [tf.int32, tf.string], {}, "without closing"),
    ("1,b\n", lambda: [["d"], [0.0]], {"select_cols": [1, 2]}, "Expect 3 fields"),
    ("1,b,3\n", lambda: [["d"], [0.0]], {"select_cols": [2, 1]}, "ascending"),
])
def test_csv_errors(write, text, defaults, kw, msg):
    err = first_error(E.CsvDataset(write(text), defaults(), **kw))
    assert isinstance(err, tf.errors.InvalidArgumentError) and msg in str(err)


def test_csv_no_quote_delim(write):
    got = elements(E.CsvDataset(write('1,"ab"c\n'), [tf.int32, tf.string], use_quote_delim=False))
    assert got[0][1] == b'"ab"c'


def test_csv_bad_default_shape():
    with pytest.raises(ValueError):
        E.CsvDataset("x.csv", [[1, 2]])


def test_make_csv_dataset_inference_and_label(write):
    p = write('a,b,c,name\n1,2.5,x,"p,q"\n2,,y,r\n99999999999,4,,s\n')
    ds = E.make_csv_dataset(p, 2, label_name="name", shuffle=False, num_epochs=1)
    assert ds.output_types == (collections.OrderedDict([("a", tf.int64), ("b", tf.float32), ("c", tf.string)]),
                               tf.string)
    (f1, l1), (f2, l2) = elements(ds)
    assert list(f1) == ["a", "b", "c"]
    assert f1["a"].tolist() == [1, 2] and f1["b"].tolist() == [2.5, 0.0] and f1["c"].tolist() == [b"x", b"y"]
    assert l1.tolist() == [b"p,q", b"r"] and f2["c"].tolist() == [b""] and l2.tolist() == [b"s"]


def test_make_csv_dataset_select_epochs_and_shuffle(write):
    p = write("a,b,c\n1,2,3\n4,5,6\n7,8,9\n")
    got = elements(E.make_csv_dataset(p, 2, select_columns=["c", 0], shuffle=False, num_epochs=2))
    assert [g["a"].tolist() for g in got] == [[1, 4], [7, 1], [4, 7]] and list(got[0]) == ["a", "c"]
    # num_epochs None: forever, partial batches dropped; shuffled with a seed: reproducible
    a = elements(E.make_csv_dataset(p, 2, shuffle=True, shuffle_seed=5), limit=6)
    b = elements(E.make_csv_dataset(p, 2, shuffle=True, shuffle_seed=5), limit=6)
    assert len(a) == 6 and all(len(x["a"]) == 2 for x in a)
    assert [x["a"].tolist() for x in a] == [x["a"].tolist() for x in b]
    assert sorted(v for x in a[:3] for v in x["a"].tolist()) == [1, 1, 4, 4, 7, 7]


def test_make_csv_dataset_errors(write):
    p = write("a,b\n1,2\n")
    with pytest.raises(ValueError, match="label_name"):
        E.make_csv_dataset(p, 1, label_name="z")
    with pytest.raises(ValueError, match="duplicate"):
        E.make_csv_dataset(p, 1, column_names=["a", "a"])
    with pytest.raises(ValueError, match="No files match"):
        E.make_csv_dataset(p + ".missing*", 1)
    with pytest.raises(ValueError, match="header"):
        E.make_csv_dataset(p, 1, header=False)


def card(ds):
    with tf.Session() as s:
        return int(s.run(E.cardinality(ds)))


def test_cardinality_rules():
    r = D.range(10)
    assert card(r) == 10 and card(r.batch(3)) == 4 and card(r.batch(3, drop_remainder=True)) == 3
    assert card(r.repeat()) == E.INFINITE_CARDINALITY == -1
    assert card(r.filter(lambda x: x > 2)) == E.UNKNOWN_CARDINALITY == -2
    assert card(r.map(lambda x: x)) == -2  # TF1's map keeps no cardinality
    assert card(r.repeat(3).take(25)) == 25 and card(r.repeat().take(7)) == 7 and card(r.skip(40)) == 0
    assert card(D.zip((r, D.range(3).repeat()))) == 10 and card(r.concatenate(r.repeat())) == -1
    assert card(r.shard(3, 1)) == 3 and card(D.range(0).repeat()) == 0
    assert card(D.from_tensor_slices(np.zeros((7, 2))).shuffle(3).prefetch(2)) == 7
    assert card(r.apply(E.assert_cardinality(10))) == 10 and card(E.Counter()) == -1
    assert r.cardinality is not None and card(r) == 10
    x = tf.placeholder(tf.float32, [None])
    c = E.cardinality(D.from_tensor_slices(x).batch(2))
    with tf.Session() as s:
        assert s.run(c, {x: np.zeros(5)}) == 3


def test_assert_cardinality_errors():
    err = first_error(D.range(3).apply(E.assert_cardinality(5)))
    assert isinstance(err, tf.errors.FailedPreconditionError) and "contained only 3 elements" in str(err)
    err = first_error(D.range(6).apply(E.assert_cardinality(5)))
    assert "at least 6 elements" in str(err)


def test_unique_take_while_counter_random():
    assert [int(v) for v in elements(D.from_tensor_slices([3, 1, 3, 2, 1]).apply(E.unique()))] == [3, 1, 2]
    assert elements(D.from_tensor_slices(["a", "b", "a"]).unique()) == [b"a", b"b"]
    with pytest.raises(TypeError):
        D.from_tensor_slices([1.0]).apply(E.unique())
    assert [int(v) for v in elements(D.range(10).apply(E.take_while(lambda x: x < 3)))] == [0, 1, 2]
    assert [int(v) for v in elements(E.Counter(5, -2, tf.int32), limit=3)] == [5, 3, 1]
    a, b = elements(E.RandomDataset(7), 5), elements(E.RandomDataset(7), 5)
    assert a == b and len(set(int(v) for v in a)) == 5 and a[0].dtype == np.int64


def test_dense_to_sparse_batch():
    ds = D.range(4).map(lambda x: tf.fill([x], x)).apply(E.dense_to_sparse_batch(3, [5]))
    s1, s2 = elements(ds)
    assert s1.dense_shape.tolist() == [3, 5] and s1.indices.tolist() == [[1, 0], [2, 0], [2, 1]]
    assert s1.values.tolist() == [1, 2, 2] and s2.dense_shape.tolist() == [1, 5] and s2.values.tolist() == [3] * 3
    err = first_error(D.range(4).map(lambda x: tf.fill([x], x)).apply(E.dense_to_sparse_batch(2, [2])))
    assert isinstance(err, tf.errors.DataLossError)


def test_get_next_as_optional_and_optional():
    it = D.range(2).map(lambda x: (x, x * 10)).make_initializable_iterator()
    opt = E.get_next_as_optional(it)
    h, v = opt.has_value(), opt.get_value()
    o2 = E.Optional.from_value(tf.constant(3.0))
    with tf.Session() as s:
        s.run(it.initializer)
        assert s.run([h, v]) == [True, (0, 0)] and s.run([h, v]) == [True, (1, 10)]
        assert not s.run(h)
        with pytest.raises(tf.errors.InvalidArgumentError):
            s.run(v)
        assert s.run([o2.has_value(), o2.get_value()]) == [True, 3.0]


def test_device_identity_and_constants():
    assert [int(v) for v in elements(D.range(3).apply(E.copy_to_device("/gpu:0")).apply(
        E.prefetch_to_device("/gpu:0")))] == [0, 1, 2]
    assert (tf.data.AUTOTUNE, tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY) == (-1, -1, -2)


def _example(i):
    f = tf.train.Feature
    return tf.train.Example(features=tf.train.Features(feature={
        "x": f(float_list=tf.train.FloatList(value=[float(i)])),
        "ids": f(int64_list=tf.train.Int64List(value=list(range(i % 3)))),
        "y": f(int64_list=tf.train.Int64List(value=[i % 2]))})).SerializeToString()


def test_tfrecord_writer_and_batched_features(tmp_path):
    for k in range(2):
        recs = np.array([_example(i + 10 * k) for i in range(3)], dtype=object)
        w = E.TFRecordWriter(str(tmp_path / f"r{k}.tfrecord"), "GZIP" if k else None).write(
            D.from_tensor_slices(recs))
        with tf.Session() as s:
            s.run(w)
    with pytest.raises(TypeError):
        E.TFRecordWriter(str(tmp_path / "z")).write(D.range(3))
    feats = {"x": tf.FixedLenFeature([], tf.float32), "ids": tf.VarLenFeature(tf.int64),
             "y": tf.FixedLenFeature([], tf.int64)}
    got = elements(tf.data.TFRecordDataset(str(tmp_path / "r1.tfrecord"), "GZIP").batch(2).apply(
        E.parse_example_dataset(feats)))
    assert got[0]["x"].tolist() == [10.0, 11.0] and got[0]["ids"].values.tolist() == [0, 0, 1]
    got = elements(E.make_batched_features_dataset(str(tmp_path / "r0.tfrecord"), 2, feats, label_key="y",
                                                   shuffle=False, num_epochs=1))
    assert [(f["x"].tolist(), y.tolist()) for f, y in got] == [([0.0, 1.0], [0, 1]), ([2.0], [0])]
    with pytest.raises(ValueError):
        E.make_batched_features_dataset(str(tmp_path / "r0.tfrecord"), 2, feats, label_key="nope")


def test_rejection_resample():
    labels = np.array([0] * 90 + [1] * 10, dtype=np.int32)
    ds = D.from_tensor_slices(labels).repeat()

    def draw(**kw):
        out = ds.apply(E.rejection_resample(lambda x: x, [0.5, 0.5], seed=3, **kw)).take(2000)
        return elements(out, limit=3000)
    a, b = draw(initial_dist=[0.9, 0.1]), draw(initial_dist=[0.9, 0.1])
    assert [(int(c), int(x)) for c, x in a] == [(int(c), int(x)) for c, x in b]  # deterministic given seeds
    assert all(int(c) == int(x) for c, x in a)
    assert abs(np.mean([int(c) for c, _ in a]) - 0.5) < 0.05
    est = draw()  # initial distribution estimated as it goes
    assert abs(np.mean([int(c) for c, _ in est]) - 0.5) < 0.08
    # the same initial and target distributions: the input unchanged
    same = elements(D.from_tensor_slices(labels[:5]).apply(
        E.rejection_resample(lambda x: x, [0.9, 0.1], initial_dist=[0.9, 0.1], seed=1)))
    assert [int(c) for c, _ in same] == [0] * 5


def test_stats_and_shard_aliases():
    ds = D.range(7).apply(E.filter_for_shard(3, 1)).apply(E.latency_stats("x")).apply(E.bytes_produced_stats("y"))
    assert [int(v) for v in elements(ds)] == [1, 4]
    got = elements(D.range(5).apply(E.map_and_batch_with_legacy_function(lambda x: x * 2, 2)))
    assert [g.tolist() for g in got] == [[0, 2], [4, 6], [8]]


def test_sql_dataset(tmp_path):
    import sqlite3
    p = str(tmp_path / "t.db")
    c = sqlite3.connect(p)
    c.execute("create table t(a int, b real, c text)")
    c.executemany("insert into t values (?,?,?)", [(1, 2.5, "x"), (300, None, "12ab")])
    c.commit()
    c.close()
    got = elements(E.SqlDataset("sqlite", p, "SELECT a, b, c, c FROM t", (tf.int8, tf.float64, tf.string, tf.int64)))
    assert [tuple(np.asarray(v).item() for v in r) for r in got] == [(1, 2.5, b"x", 0), (44, 0.0, b"12ab", 12)]
    assert got[1][0].dtype == np.int8
    err = first_error(E.SqlDataset("sqlite", p, "SELECT a FROM t", (tf.int64, tf.int64)))
    assert isinstance(err, tf.errors.InvalidArgumentError)
    assert isinstance(first_error(E.SqlDataset("sqlite", p, "SELECT z FROM t", (tf.int64,))), tf.errors.UnknownError)
    assert isinstance(first_error(E.SqlDataset("sqlite", p, "SELECT a FROM t", (tf.float32,))),
                      tf.errors.InvalidArgumentError)
