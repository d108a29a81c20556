"""Differential tests against real TensorFlow 1.x on whole programs built on TF1's file input
paths: a census-style wide-and-deep model (TFRecord files of tf.train.Example written with
TFRecordWriter, TFRecordDataset, parse_example, feature columns with vocabulary, hash,
bucketized and crossed columns, linear_model + input_layer, FTRL + Adagrad), and the CIFAR-10
binary reader (string_input_producer, FixedLengthRecordReader, decode_raw, strided_slice,
train.batch with queue runners under a tf.train.Supervisor, a small convnet with momentum).

Each program is written once against `tf`; the per-step losses, the final value of every
global variable and the data read are compared.  Skipped cleanly without TensorFlow.
"""
import os
import sys
import tempfile
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")

LOSS_RTOL, TOL, ATOL = 1e-4, 1e-4, 1e-6


def _set_vars(tf, sess, seed, scale):
    for v in tf.trainable_variables():
        shape = [int(d) for d in v.get_shape()]
        r = np.random.RandomState((seed * 1000003 + zlib.crc32(v.name.encode())) % 2**31)
        sess.run(v.assign(r.uniform(-scale, scale, shape).astype(np.float32)))


def _values(tf, sess):
    vs = tf.global_variables()
    return {v.name: np.asarray(x) for v, x in zip(vs, sess.run(vs))}


def _census_rows(seed, n):
    rng = np.random.RandomState(seed)
    jobs = ["tech", "sales", "admin", "farming", "unknown-job"]
    return {"age": rng.randint(17, 80, n), "hours": rng.uniform(10, 60, n).astype(np.float32),
            "job": [jobs[i] for i in rng.randint(0, len(jobs), n)],
            "city": [f"city{i}" for i in rng.randint(0, 40, n)],
            "label": rng.randint(0, 2, n)}


def _write_census(tf, path, seed, n):
    rows = _census_rows(seed, n)
    with tf.python_io.TFRecordWriter(path) as w:
        for i in range(n):
            ex = tf.train.Example(features=tf.train.Features(feature={
                "age": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(rows["age"][i])])),
                "hours": tf.train.Feature(float_list=tf.train.FloatList(value=[float(rows["hours"][i])])),
                "job": tf.train.Feature(bytes_list=tf.train.BytesList(value=[rows["job"][i].encode()])),
                "city": tf.train.Feature(bytes_list=tf.train.BytesList(value=[rows["city"][i].encode()])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(rows["label"][i])]))}))
            w.write(ex.SerializeToString())


def census(tf, seed, steps, directory, writer):
    """Wide and deep on census-like records (the TF1 'wide_n_deep' tutorial's shape)."""
    path = os.path.join(directory, "train.tfrecord")
    _write_census(writer, path, seed, 96)   # the file comes from one library, is read by both
    fc = tf.feature_column
    age = fc.numeric_column("age", dtype=tf.int64)
    hours = fc.numeric_column("hours", normalizer_fn=lambda x: (x - 35.0) / 15.0)
    age_b = fc.bucketized_column(age, boundaries=[25, 35, 45, 55, 65])
    job = fc.categorical_column_with_vocabulary_list("job", ["tech", "sales", "admin", "farming"],
                                                     num_oov_buckets=1)
    city = fc.categorical_column_with_hash_bucket("city", hash_bucket_size=16)
    cross = fc.crossed_column([age_b, "job"], hash_bucket_size=32)
    wide = [age_b, job, city, cross]
    deep = [age, hours, fc.indicator_column(job), fc.embedding_column(city, dimension=4)]
    spec = fc.make_parse_example_spec(wide + deep + [fc.numeric_column("label", dtype=tf.int64)])
    ds = tf.data.TFRecordDataset([path]).batch(16).map(lambda s: tf.parse_example(s, spec)).repeat()
    feats = ds.make_one_shot_iterator().get_next()
    label = tf.cast(feats.pop("label"), tf.float32)
    with tf.variable_scope("wide"):
        wide_logit = fc.linear_model(feats, wide)
    with tf.variable_scope("deep"):
        h = fc.input_layer(feats, deep)
        h = tf.layers.dense(h, 8, activation=tf.nn.relu, name="hidden")
        deep_logit = tf.layers.dense(h, 1, name="out")
    logit = wide_logit + deep_logit
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=label, logits=logit))
    wide_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, "wide")
    deep_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, "deep")
    train = tf.group(tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01).minimize(loss, var_list=wide_vars),
                     tf.train.AdagradOptimizer(0.05).minimize(loss, var_list=deep_vars))
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
        _set_vars(tf, sess, seed, 0.2)
        for _ in range(steps):
            out["losses"].append(sess.run([loss, train])[0])
        out["vars"] = _values(tf, sess)
    return out


def _write_cifar(directory, seed, files, per_file, size):
    rng = np.random.RandomState(seed)
    names = []
    for f in range(files):
        labels = rng.randint(0, 10, per_file).astype(np.uint8)
        images = rng.randint(0, 256, (per_file, 3, size, size)).astype(np.uint8)   # depth-major, as CIFAR
        name = os.path.join(directory, f"data_batch_{f}.bin")
        with open(name, "wb") as out:
            for lab, img in zip(labels, images):
                out.write(bytes([lab]) + img.tobytes())
        names.append(name)
    return names


def cifar_reader(tf, seed, steps, directory, writer):
    """The CIFAR-10 tutorial's input path (cifar10_input.py) under a Supervisor."""
    size = 8
    names = _write_cifar(directory, seed, 2, 24, size)
    queue = tf.train.string_input_producer(names, shuffle=False)
    reader = tf.FixedLengthRecordReader(record_bytes=1 + 3 * size * size)
    key, value = reader.read(queue)
    record = tf.decode_raw(value, tf.uint8)
    label = tf.cast(tf.strided_slice(record, [0], [1]), tf.int32)
    depth_major = tf.reshape(tf.strided_slice(record, [1], [1 + 3 * size * size]), [3, size, size])
    image = tf.cast(tf.transpose(depth_major, [1, 2, 0]), tf.float32) / 255.0
    label.set_shape([1])
    images, labels = tf.train.batch([image, label], batch_size=8, num_threads=1, capacity=32)
    labels = tf.reshape(labels, [8])
    h = tf.layers.conv2d(images, 6, 3, padding="same", activation=tf.nn.relu, name="conv")
    h = tf.layers.max_pooling2d(h, 2, 2)
    logits = tf.layers.dense(tf.layers.flatten(h), 10, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    step = tf.train.get_or_create_global_step()
    train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=step)
    out = {"losses": [], "labels": []}
    # the Supervisor finalizes the graph: the ops setting the variables are made first
    setters = []
    for v in tf.trainable_variables():
        r = np.random.RandomState((seed * 1000003 + zlib.crc32(v.name.encode())) % 2**31)
        setters.append(v.assign(r.uniform(-0.2, 0.2, [int(d) for d in v.get_shape()]).astype(np.float32)))
    sv = tf.train.Supervisor(logdir=None, init_fn=lambda s: s.run(setters))
    with sv.managed_session() as sess:
        for _ in range(steps):
            lo, lab, _ = sess.run([loss, labels, train])
            out["losses"].append(lo)
            out["labels"].append(lab)
        out["vars"] = _values(tf, sess)
        out["global_step"] = sess.run(step)
    return out


PROGRAMS = [("census_wide_deep", census, 12), ("cifar10_reader", cifar_reader, 10)]


def _run(tf, program, steps, writer):
    with tf.Graph().as_default(), tempfile.TemporaryDirectory() as d:
        return program(tf, 7, steps, d, writer)


def _compare(key, got, want):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), f"{key}: names differ"
        for name in want:
            _compare(f"{key}[{name}]", got[name], want[name])
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (key, got.shape, want.shape)
    if not np.issubdtype(want.dtype, np.floating):
        np.testing.assert_array_equal(got, want, err_msg=key)
    elif key.startswith("losses"):
        np.testing.assert_allclose(got, want, rtol=LOSS_RTOL, err_msg=key)
    else:
        scale = float(np.abs(want).max()) if want.size else 0.0
        np.testing.assert_allclose(got, want, rtol=0, atol=TOL * scale + ATOL, err_msg=key)


@pytest.mark.parametrize("name,program,steps", PROGRAMS, ids=[p[0] for p in PROGRAMS])
@pytest.mark.parametrize("writer", ["tensorflow", "collflow"])
def test_input_program(name, program, steps, writer):
    """Files written by `writer`'s TFRecordWriter and tf.train.Example; both libraries read them."""
    w = tft if writer == "tensorflow" else cft
    want = _run(tft, program, steps, w)
    got = _run(cft, program, steps, w)
    assert sorted(got) == sorted(want)
    for key in want:
        _compare(key, got[key], want[key])
    assert want["losses"][-1] < want["losses"][0]
