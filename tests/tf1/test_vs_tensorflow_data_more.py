"""Differential tests against real TensorFlow 1.x for the tf.data.experimental names of
collflow/data/csv_dataset.py, cardinality.py and dataset_experimental_more.py: the same
pipeline in both libraries over the same files, compared element by element (CSV edge cases:
quoted fields with delimiters and newlines, empty fields with defaults, a missing required
field, header, select_columns, na_value; make_csv_dataset's inference), cardinality of a
dozen pipeline shapes, unique, take_while, dense_to_sparse_batch, get_next_as_optional,
TFRecordWriter, parse_example_dataset and make_batched_features_dataset.  Skipped cleanly
without TensorFlow.
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

pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")


def _norm(v):
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, (tuple, list)):
        return tuple(_norm(x) for x in v)
    if hasattr(v, "dense_shape") and hasattr(v, "indices"):
        return ("sparse", _norm(v.indices), _norm(v.values), _norm(v.dense_shape))
    a = np.asarray(v)
    if a.dtype == object or a.dtype.kind in "SU":
        return ("str", a.shape, [x.decode() if isinstance(x, bytes) else str(x) for x in a.ravel().tolist()])
    return ("num", a.dtype.name, a.shape, a.tolist())


def collect(tf, build, limit=50):
    """The elements of build(tf)'s dataset (or of its tensors), with the error that ends them."""
    g = tf.Graph()
    with g.as_default():
        ds = build(tf)
        nxt = tf.data.make_one_shot_iterator(ds).get_next() if tf is tft else ds.make_one_shot_iterator().get_next()
        out = []
        with tf.Session() as s:
            try:
                for _ in range(limit):
                    out.append(_norm(s.run(nxt)))
            except tf.errors.OutOfRangeError:
                out.append("end")
            except tf.errors.OpError as e:
                out.append(("error", type(e).__name__))
    return out


def both(build, limit=50):
    a, b = collect(tft, build, limit), collect(cft, build, limit)
    assert b == a
    return a


@pytest.fixture
def csvfile(tmp_path):
    def write(text, name="f.csv"):
        p = tmp_path / name
        p.write_bytes(text.encode())
        return str(p)
    return write


CSV_CASES = [
    ("quoted", '1,"a,b"\n2,"x""y"\n', lambda tf: [tf.int32, tf.string], {}),
    ("quoted_newline", '1,"a\nb"\n2,c\n', lambda tf: [tf.int32, tf.string], {}),
    ("crlf_no_final_newline", "1,a\r\n2,b", lambda tf: [tf.int64, tf.string], {}),
    ("defaults", "1,\n,b\n", lambda tf: [[7], ["d"]], {}),
    ("required_missing", "1,\n", lambda tf: [tf.int32, tf.string], {}),
    ("required_missing_int", "1,a\n,b\n", lambda tf: [tf.int32, tf.string], {}),
    ("too_many_fields", "1,a,3\n", lambda tf: [tf.int32, tf.string], {}),
    ("too_few_fields", "1\n", lambda tf: [tf.int32, tf.string], {}),
    ("bad_int", "x,a\n", lambda tf: [tf.int32, tf.string], {}),
    ("float_for_int", "1.5,a\n", lambda tf: [tf.int32, tf.string], {}),
    ("int32_overflow", "99999999999,b\n", lambda tf: [tf.int32, tf.string], {}),
    ("int64", "99999999999,+5\n", lambda tf: [tf.int64, tf.int64], {}),
    ("spaces", " 1 ,a\n", lambda tf: [tf.int32, tf.string], {}),
    ("quote_in_unquoted", '1,a"b\n', lambda tf: [tf.int32, tf.string], {}),
    ("text_after_quote", '1,"ab"c\n', lambda tf: [tf.int32, tf.string], {}),
    ("no_quote_delim", '1,"ab"c\n', lambda tf: [tf.int32, tf.string], {"use_quote_delim": False}),
    ("na_value", "NA,b\n3,NA\n", lambda tf: [[5], ["d"]], {"na_value": "NA"}),
    ("header", "h1,h2\n1,b\n2,c\n", lambda tf: [[5], ["d"]], {"header": True}),
    ("delim", "1;b;2.5\n", lambda tf: [[5], ["d"], [0.0]], {"field_delim": ";"}),
    ("select_cols", "1,b,2.5,7\n3,\"c,d\",,8\n", lambda tf: [["d"], [0.5]], {"select_cols": [1, 2]}),
    ("select_cols_short", "1,b\n", lambda tf: [["d"], [0.0]], {"select_cols": [1, 2]}),
    ("floats", "1e3,inf,-2.5,.5\n", lambda tf: [tf.float32, tf.float64, tf.float32, tf.float64], {}),
    ("quoted_empty", '"",b\n', lambda tf: [[3], tf.string], {}),
    ("empty_line", "1,a\n\n2,b\n", lambda tf: [tf.int32, tf.string], {}),
    ("float64_default", "1,\n", lambda tf: [[1], tf.constant([2.5], tf.float64)], {}),
]


@pytest.mark.parametrize("name,text,defaults,kw", CSV_CASES, ids=[c[0] for c in CSV_CASES])
def test_csv_dataset(csvfile, name, text, defaults, kw):
    path = csvfile(text)
    both(lambda tf: tf.data.experimental.CsvDataset(path, defaults(tf), **kw))


def test_csv_dataset_two_files_and_header(csvfile):
    a = csvfile("x,y\n1,2\n3,4\n", "a.csv")
    b = csvfile("x,y\n5,6\n", "b.csv")
    both(lambda tf: tf.data.experimental.CsvDataset([a, b], [tf.int32, [0]], header=True))


MAKE_CSV = 'a,b,c,name,big\n1,2.5,x,"p,q",1\n2,,y,r,99999999999\n3,4,,s,3\n4,1e3,z,t,\n'
MAKE_CASES = [
    ("label", dict(label_name="a")),
    ("select_names", dict(select_columns=["c", "a"])),
    ("select_ints", dict(select_columns=[4, 1], label_name="big")),
    ("epochs2", dict(num_epochs=2)),
    ("column_names", dict(column_names=["A", "B", "C", "N", "G"], header=True)),
    ("column_defaults", dict(column_defaults=[0, 0.0, "-", "-", tensorflow.int64.name], label_name="name")),
    ("na_value", dict(na_value="z")),
    ("rows_for_inference", dict(num_rows_for_inference=1)),
]


@pytest.mark.parametrize("name,kw", MAKE_CASES, ids=[c[0] for c in MAKE_CASES])
def test_make_csv_dataset(csvfile, name, kw):
    path = csvfile(MAKE_CSV)
    kw = dict(kw)

    def build(tf):
        k = dict(kw)
        if "column_defaults" in k:
            k["column_defaults"] = [getattr(tf, d) if isinstance(d, str) and hasattr(tf, d) else d
                                    for d in k["column_defaults"]]
        k.setdefault("num_epochs", 1)
        return tf.data.experimental.make_csv_dataset(path, 3, shuffle=False, **k)
    both(build)


def test_make_csv_dataset_infinite_drops_remainder(csvfile):
    path = csvfile(MAKE_CSV)
    both(lambda tf: tf.data.experimental.make_csv_dataset(path, 3, shuffle=False, num_epochs=None), limit=4)


def test_make_csv_dataset_files_and_quotes(csvfile):
    a = csvfile('k,v\n1,"a,b"\n2,"c ""d"""\n', "a.csv")
    b = csvfile("k,v\n3,e\n", "b.csv")
    both(lambda tf: tf.data.experimental.make_csv_dataset([b, a], 2, shuffle=False, num_epochs=1, label_name="k"))


def test_make_csv_dataset_errors(csvfile):
    path = csvfile(MAKE_CSV)
    for kw in [dict(label_name="nope"), dict(select_columns=["nope"]), dict(column_names=["a", "a", "b", "c", "d"])]:
        for tf in (tft, cft):
            with tf.Graph().as_default(), pytest.raises(ValueError):
                tf.data.experimental.make_csv_dataset(path, 2, **kw)


CARD = [
    lambda tf: tf.data.Dataset.range(10),
    lambda tf: tf.data.Dataset.range(10).batch(3),
    lambda tf: tf.data.Dataset.range(10).batch(3, drop_remainder=True),
    lambda tf: tf.data.Dataset.range(10).map(lambda x: x * 2).take(4),
    lambda tf: tf.data.Dataset.range(10).skip(4),
    lambda tf: tf.data.Dataset.range(10).skip(40),
    lambda tf: tf.data.Dataset.range(10).repeat(),
    lambda tf: tf.data.Dataset.range(10).repeat(3).take(25),
    lambda tf: tf.data.Dataset.range(10).repeat().take(7),
    lambda tf: tf.data.Dataset.range(10).filter(lambda x: x > 3),
    lambda tf: tf.data.Dataset.range(10).filter(lambda x: x > 3).take(2),
    lambda tf: tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.range(5))),
    lambda tf: tf.data.Dataset.zip((tf.data.Dataset.range(3).repeat(), tf.data.Dataset.range(5))),
    lambda tf: tf.data.Dataset.range(3).concatenate(tf.data.Dataset.range(4)),
    lambda tf: tf.data.Dataset.range(3).concatenate(tf.data.Dataset.range(4).repeat()),
    lambda tf: tf.data.Dataset.from_tensor_slices(np.zeros((7, 2))).shuffle(3).batch(2).prefetch(1),
    lambda tf: tf.data.Dataset.from_tensor_slices(np.zeros((7, 2))).enumerate().cache().shard(2, 0),
    lambda tf: tf.data.Dataset.range(10).apply(tf.data.experimental.take_while(lambda x: x < 3)),
    lambda tf: tf.data.Dataset.range(10).apply(tf.data.experimental.unique()),
    lambda tf: tf.data.Dataset.range(10).padded_batch(4, padded_shapes=[]),
    lambda tf: tf.data.experimental.RandomDataset(1),
    lambda tf: tf.data.Dataset.from_tensors(np.zeros(3)).repeat(4),
    lambda tf: tf.data.Dataset.range(2, 20, 3).shard(3, 1),
    lambda tf: tf.data.Dataset.range(0).repeat(),
    lambda tf: tf.data.Dataset.range(10).filter(lambda x: x > 3).repeat(),
    lambda tf: tf.data.Dataset.range(10).filter(lambda x: x > 3).repeat(0),
    lambda tf: tf.data.Dataset.range(10).filter(lambda x: x > 3).skip(2),
    lambda tf: tf.data.Dataset.range(10).filter(lambda x: x > 3).take(0),
    lambda tf: tf.data.Dataset.range(10).repeat().skip(3),
    lambda tf: tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.range(5).filter(lambda x: x > 1))),
    lambda tf: tf.data.Dataset.range(3).filter(lambda x: x > 1).concatenate(tf.data.Dataset.range(2).repeat()),
    lambda tf: tf.data.Dataset.range(10).batch(4).repeat(2).apply(tf.data.experimental.unbatch()),
    lambda tf: tf.data.Dataset.range(10).apply(tf.data.experimental.ignore_errors()),
    lambda tf: tf.data.Dataset.range(10).apply(tf.data.experimental.enumerate_dataset()),
    lambda tf: tf.data.Dataset.range(1, 10, 4).repeat(2),
    lambda tf: tf.data.Dataset.range(10).apply(tf.data.experimental.assert_cardinality(10)),
    lambda tf: tf.data.Dataset.range(10).flat_map(lambda x: tf.data.Dataset.range(x)),
]


@pytest.mark.parametrize("k", range(len(CARD)))
def test_cardinality(k):
    vals = []
    for tf in (tft, cft):
        with tf.Graph().as_default():
            c = tf.data.experimental.cardinality(CARD[k](tf))
            with tf.Session() as s:
                vals.append(int(s.run(c)))
    assert vals[1] == vals[0]


def test_cardinality_constants():
    for n in ("INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"):
        assert getattr(cft.data.experimental, n) == getattr(tft.data.experimental, n)
        assert getattr(cft.data, n) == getattr(tensorflow.data, n)
    assert cft.data.AUTOTUNE == tensorflow.data.AUTOTUNE


def test_assert_cardinality_failure():
    both(lambda tf: tf.data.Dataset.range(3).apply(tf.data.experimental.assert_cardinality(5)))
    both(lambda tf: tf.data.Dataset.range(6).apply(tf.data.experimental.assert_cardinality(5)))


def test_unique_take_while_dense_to_sparse():
    E = "experimental"
    both(lambda tf: tf.data.Dataset.from_tensor_slices([1, 2, 1, 3, 2, 5]).apply(getattr(tf.data, E).unique()))
    both(lambda tf: tf.data.Dataset.from_tensor_slices(["a", "b", "a"]).apply(getattr(tf.data, E).unique()))
    both(lambda tf: tf.data.Dataset.range(10).apply(getattr(tf.data, E).take_while(lambda x: x < 4)))
    both(lambda tf: tf.data.Dataset.range(5).map(lambda x: tf.fill([x], x)).apply(
        getattr(tf.data, E).dense_to_sparse_batch(2, [6])))
    for tf in (tft, cft):
        with tf.Graph().as_default(), pytest.raises(ValueError):
            tf.data.Dataset.range(5).map(lambda x: tf.fill([x], x)).apply(
                tf.data.experimental.dense_to_sparse_batch(2, [-1]))
    both(lambda tf: tf.data.Dataset.range(5).map(lambda x: tf.fill([x], x)).apply(
        getattr(tf.data, E).dense_to_sparse_batch(2, [2])))
    both(lambda tf: tf.data.experimental.Counter(3, 2), limit=4)
    both(lambda tf: tf.data.Dataset.range(4).apply(tf.data.experimental.copy_to_device("/cpu:0")))


def test_get_next_as_optional():
    res = []
    for tf in (tft, cft):
        with tf.Graph().as_default():
            ds = tf.data.Dataset.range(2).map(lambda x: (x, tf.cast(x, tf.float32) * 2))
            it = tf.data.make_initializable_iterator(ds) if tf is tft else ds.make_initializable_iterator()
            opt = tf.data.experimental.get_next_as_optional(it)
            h, v = opt.has_value(), opt.get_value()
            out = []
            with tf.Session() as s:
                s.run(it.initializer)
                out.append(_norm(s.run([h, v])))
                out.append(_norm(s.run([h, v])))
                out.append(_norm(s.run(h)))
                with pytest.raises(tf.errors.InvalidArgumentError):
                    s.run(v)
        res.append(out)
    assert res[1] == res[0]


def _example(tf, i):
    f = tf.train.Feature
    return tf.train.Example(features=tf.train.Features(feature={
        "x": f(float_list=tf.train.FloatList(value=[i * 0.5, i + 1.0])),
        "ids": f(int64_list=tf.train.Int64List(value=list(range(i % 3)))),
        "label": f(int64_list=tf.train.Int64List(value=[i % 2]))})).SerializeToString()


def test_tfrecord_writer_parse_example_dataset_and_batched_features(tmp_path):
    for tf, tag in ((tft, "t"), (cft, "c")):
        with tf.Graph().as_default():
            for k in range(2):
                recs = [_example(tensorflow.compat.v1, i + 5 * k) for i in range(5)]
                ds = tf.data.Dataset.from_tensor_slices(np.array(recs, dtype=object))
                w = tf.data.experimental.TFRecordWriter(str(tmp_path / f"{tag}{k}.tfrecord")).write(ds)
                with tf.Session() as s:
                    s.run(w)
    for k in range(2):  # the files are byte for byte the same
        assert (tmp_path / f"t{k}.tfrecord").read_bytes() == (tmp_path / f"c{k}.tfrecord").read_bytes()

    def feats(tf):
        return {"x": tf.FixedLenFeature([2], tf.float32), "ids": tf.VarLenFeature(tf.int64),
                "label": tf.FixedLenFeature([], tf.int64)}
    pattern = str(tmp_path / "t*.tfrecord")
    both(lambda tf: tf.data.TFRecordDataset(pattern.replace("*", "0")).batch(3).apply(
        tf.data.experimental.parse_example_dataset(feats(tf))))
    both(lambda tf: tf.data.experimental.make_batched_features_dataset(
        pattern, 4, feats(tf), label_key="label", shuffle=False, num_epochs=1))
    both(lambda tf: tf.data.experimental.make_batched_features_dataset(
        pattern, 3, feats(tf), shuffle=False, num_epochs=None, reader_num_threads=2), limit=5)


def test_rejection_resample_deterministic_cases():
    labels = np.array([0, 1, 1, 0, 2, 0, 1], dtype=np.int64)

    def build(target, initial):
        return lambda tf: tf.data.Dataset.from_tensor_slices(labels).map(lambda x: x * 10).apply(
            tf.data.experimental.rejection_resample(lambda x: x // 10, target, initial_dist=initial, seed=4))
    both(build([0.5, 0.25, 0.25], [0.5, 0.25, 0.25]))  # m == 1: the input, with its classes
    both(build([1.0, 0.0, 0.0], [0.4, 0.3, 0.3]))  # m == 0, acceptance 1 or 0: class 0 only
    both(build([0.0, 0.5, 0.5], [0.4, 0.3, 0.3]))  # m == 0, acceptance (0, 1, 1): classes 1 and 2


@pytest.fixture
def sqlite_db(tmp_path):
    import sqlite3
    p = str(tmp_path / "t.db")
    c = sqlite3.connect(p)
    c.execute("create table t(a int, b real, c text, d int)")
    c.executemany("insert into t values (?,?,?,?)", [(1, 2.5, "x", None), (2, 3.0, "12yy", 7), (-3, -0.5, "", 300)])
    c.commit()
    c.close()
    return p


SQL_TYPES = [
    ("int32", "float64", "string", "int64"),
    ("int64", "float64", "string", "bool"),
    ("string", "string", "string", "string"),
    ("int8", "int16", "int64", "uint8"),
    ("int64", "float32", "string", "int64"),
    ("int64",),
]


@pytest.mark.parametrize("types", SQL_TYPES, ids=["-".join(t) for t in SQL_TYPES])
def test_sql_dataset(sqlite_db, types):
    both(lambda tf: tf.data.experimental.SqlDataset("sqlite", sqlite_db, "SELECT a, b, c, d FROM t ORDER BY a",
                                                    tuple(getattr(tf, t) for t in types)))


def test_sql_dataset_errors(sqlite_db):
    both(lambda tf: tf.data.experimental.SqlDataset("sqlite", sqlite_db, "SELECT x FROM t", (tf.int64,)))
    both(lambda tf: tf.data.experimental.SqlDataset("sqlite", sqlite_db, "SELECT a FROM nope", (tf.int64,)))


def test_map_and_batch_with_legacy_function():
    both(lambda tf: tf.data.Dataset.range(7).apply(tf.data.experimental.map_and_batch_with_legacy_function(
        lambda x: x * 2, 3)))
